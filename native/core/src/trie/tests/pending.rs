//! Expands of changed subtrees below a kept list's holder, answered by merging the holder's old list
//! with its pending edits (pending.rs): the answer must be the subtree in walk order, the order a
//! lay-down gives, under random adds and removes (a name added and removed again before an expand,
//! names at prefixes, new subtrees), compaction between them, lay-downs that drop the edits, and
//! lists that outgrow their edits.

use super::PlanReader;
use crate::dialect::Dialect;
use crate::limits::MAX_LITE_TOPIC_BYTES;
use crate::test_rng::Rng;
use crate::trie::pending::MAX_PENDING_EDITS;
use crate::trie::{TopicTrie, NONE};

fn random_name(rng: &mut Rng) -> String {
    let count = 1 + rng.below(4);
    (0..count)
        .map(|level| format!("{}{}", ["t", "a", "s", "x"][level], rng.below(4)))
        .collect::<Vec<_>>()
        .join("__")
}

/// The names of `node`'s subtree in walk order (its own name first), from the links.
fn walk_order(trie: &TopicTrie, node: u32) -> Vec<String> {
    let mut ids = Vec::new();
    trie.naive_block(node, &mut ids);
    ids.iter().map(|&id| trie.name_of(id).unwrap()).collect()
}

fn node_of(trie: &TopicTrie, prefix: &str) -> u32 {
    let mut node = super::ROOT;
    for segment in prefix.split("__") {
        node = trie.child(node, segment);
        if node == NONE {
            return NONE;
        }
    }
    node
}

/// Expands `prefix__**` by ids and by plan; both must be the subtree in walk order. Returns whether
/// the answer was merged (the subtree is still changed after it: nothing was laid down).
fn check_subtree(trie: &mut TopicTrie, reader: &mut PlanReader, prefix: &str) -> bool {
    let node = node_of(trie, prefix);
    let pattern = format!("{prefix}__**");
    let expected: Vec<String> = if node == NONE {
        Vec::new()
    } else {
        let mut names = walk_order(trie, node);
        if trie.nodes[node as usize].is_name() {
            names.remove(0);
        }
        names
    };
    let changed = node != NONE && trie.is_changed(node);
    let mut ids = Vec::new();
    trie.expand_into(&pattern, &mut ids).unwrap();
    let walked: Vec<String> = ids.iter().map(|&id| trie.name_of(id).unwrap()).collect();
    assert_eq!(walked, expected, "{pattern}: ids");
    let merged = changed && trie.is_changed(node);
    assert_eq!(reader.expand(trie, &pattern), expected, "{pattern}: plan");
    trie.check_blocks().unwrap();
    assert!(trie.pending_sorted(), "{pattern}: edits out of order");
    merged
}

#[test]
fn merged_blocks_are_subtrees_in_walk_order() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut trie = TopicTrie::new(Dialect::Lite, MAX_LITE_TOPIC_BYTES);
    let mut reader = PlanReader::default();
    let mut live: Vec<String> = Vec::new();
    let mut merges = 0;
    for step in 0..4000 {
        let name = random_name(&mut rng);
        match rng.below(5) {
            // Added and removed again before any expand.
            0 if !trie.has(&name) => {
                trie.add(&name, None).unwrap();
                let id = trie.remove_id(&name).unwrap();
                reader.forget(id);
            }
            0..=2 => {
                if !trie.has(&name) {
                    live.push(name.clone());
                }
                trie.add(&name, None).unwrap();
            }
            _ => {
                if let Some(at) = live.iter().position(|n| *n == name) {
                    live.swap_remove(at);
                    let id = trie.remove_id(&name).unwrap();
                    reader.forget(id);
                }
            }
        }
        if step % 7 == 0 {
            let t = format!("t{}", rng.below(4));
            let a = format!("{t}__a{}", rng.below(4));
            let s = format!("{a}__s{}", rng.below(4));
            // Below the holder first (merged while its edits allow), then sometimes the holder.
            for prefix in [&s, &a] {
                if check_subtree(&mut trie, &mut reader, prefix) {
                    merges += 1;
                }
            }
            if rng.below(3) == 0 {
                check_subtree(&mut trie, &mut reader, &t);
            }
        }
        match step % 500 {
            100 => trie.compact(),
            // A reader holding nothing: lists are handed over or laid down below their holders,
            // which drops the edits of the lists above.
            300 => {
                trie.forget_plans();
                reader = PlanReader::default();
            }
            _ => {}
        }
    }
    assert!(merges > 100, "only {merges} expands were merged");
}

/// A list's edits go once they outnumber an eighth of its names: the expand below it then lays
/// its block down, with the same answer.
#[test]
fn lists_drop_edits_they_outgrow() {
    let mut trie = TopicTrie::new(Dialect::Lite, MAX_LITE_TOPIC_BYTES);
    let mut reader = PlanReader::default();
    for s in 0..40 {
        for x in 0..10 {
            trie.add(&format!("t__a__s{s}__x{x}"), None).unwrap();
        }
    }
    check_subtree(&mut trie, &mut reader, "t");
    trie.add("t__a__s0__y", None).unwrap();
    assert!(
        check_subtree(&mut trie, &mut reader, "t__a"),
        "a few edits are merged"
    );
    for s in 0..40 {
        for x in 0..3 {
            trie.add(&format!("t__a__s{s}__y{x}"), None).unwrap();
        }
    }
    assert!(
        !check_subtree(&mut trie, &mut reader, "t__a"),
        "many edits are laid down"
    );
    // The block below now lies in the list laid down, whose edits start afresh.
    trie.add("t__a__s1__z", None).unwrap();
    assert!(
        check_subtree(&mut trie, &mut reader, "t__a__s1"),
        "merged from the new list"
    );
}

/// New children of blocks ending at one place come deepest first, before the names of nodes
/// starting there (the js engine's test/trie-pending.test.ts holds both engines to the same case).
#[test]
fn edits_at_one_place_merge_in_walk_order() {
    let mut trie = TopicTrie::new(Dialect::Lite, MAX_LITE_TOPIC_BYTES);
    let mut reader = PlanReader::default();
    for name in ["t__a__s1__x", "t__a__s1__y", "t__a__s2__x", "t__b__s1__x", "u__x"] {
        trie.add(name, None).unwrap();
    }
    // The root holds the list (handed to the reader, so plans merge from it too).
    reader.expand(&mut trie, "**");
    for name in [
        "t__a__s2",
        "t__a__s1__z",
        "t__b",
        "t__c__x",
        "t__a__s3__x",
        "t__a__s2__w",
        "t__a",
    ] {
        trie.add(name, None).unwrap();
    }
    trie.add("t__a__s1", None).unwrap();
    reader.forget(trie.remove_id("t__a__s1").unwrap());
    reader.forget(trie.remove_id("t__a__s1__x").unwrap());
    for prefix in ["t__a__s1", "t__a", "t"] {
        assert!(check_subtree(&mut trie, &mut reader, prefix), "{prefix}: merged");
    }
}

/// However large a list, it keeps at most `MAX_PENDING_EDITS` edits: past them, a subtree below it
/// is laid down, not merged (an insert moves the edits after it, a removal looks among them).
#[test]
fn large_lists_keep_a_bounded_number_of_edits() {
    let mut trie = TopicTrie::new(Dialect::Lite, MAX_LITE_TOPIC_BYTES);
    let mut reader = PlanReader::default();
    for s in 0..200 {
        for x in 0..200 {
            trie.add(&format!("t__a__s{s}__x{x}"), None).unwrap();
        }
    }
    reader.expand(&mut trie, "t__**");
    for y in 0..MAX_PENDING_EDITS {
        trie.add(&format!("t__a__s{}__y{y}", y % 200), None).unwrap();
    }
    assert!(
        check_subtree(&mut trie, &mut reader, "t__a"),
        "as many edits as a list keeps"
    );
    trie.add("t__a__s0__z", None).unwrap();
    assert!(!check_subtree(&mut trie, &mut reader, "t__a"), "one more");
}
