//! The trie's unit cases; model.rs holds the random operation sequences against a brute-force model.

mod model;
mod pending;

use super::list::compare_segments;
use super::plan::Plan;
use super::*;
use crate::limits::MAX_LITE_TOPIC_BYTES;
use crate::pattern::Pattern;
use std::cmp::Ordering;

fn lite() -> TopicTrie {
    TopicTrie::new(Dialect::Lite, MAX_LITE_TOPIC_BYTES)
}

/// The names `pattern` matches, sorted; checks on the way that the names written during the walk
/// are those of the ids, in the same order.
pub(super) fn expand(trie: &mut TopicTrie, pattern: &str) -> Vec<String> {
    let mut names = expand_in_walk_order(trie, pattern);
    names.sort();
    names
}

pub(super) fn expand_in_walk_order(trie: &mut TopicTrie, pattern: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let count = trie.expand_into(pattern, &mut ids).unwrap();
    assert_eq!(ids.len(), count);
    let names: Vec<String> = ids.iter().map(|&id| trie.name_of(id).unwrap()).collect();
    // A reader that starts with nothing, so every list and name crosses in this plan.
    trie.forget_plans();
    let mut reader = PlanReader::default();
    assert_eq!(reader.expand(trie, pattern), names, "{pattern}: plan");
    names
}

/// The caller's side of plans (snapshot.rs), as the native adapter keeps it: names by id and a copy
/// of every list it was handed.
#[derive(Default)]
pub(super) struct PlanReader {
    names: std::collections::HashMap<u32, String>,
    lists: std::collections::HashMap<u32, Vec<String>>,
    /// Whether the last plan gave its answer by id (`PLAN_NAMES_BY_ID`).
    by_id: bool,
}

impl PlanReader {
    /// Forgets the names of ids a trie no longer holds (the adapter does so on `remove`).
    pub(super) fn forget(&mut self, id: u32) {
        self.names.remove(&id);
    }

    /// The names of `pattern` from a plan replayed on what this reader holds.
    pub(super) fn expand(&mut self, trie: &mut TopicTrie, pattern: &str) -> Vec<String> {
        let mut plan = Plan::default();
        let count = trie.expand_plan(pattern, &mut plan).unwrap();
        let utf16: Vec<u16> = plan.text.encode_utf16().collect();
        let mut text_start = 0;
        let mut answer = Vec::new();
        let mut building: Option<(u32, Vec<String>)> = None;
        let mut at = 0;
        self.by_id = false;
        let ops = &plan.ops;
        while at < ops.len() {
            let out = match building.as_mut() {
                Some((_, list)) => list,
                None => &mut answer,
            };
            match ops[at] {
                PLAN_NAME => {
                    out.push(self.names[&ops[at + 1]].clone());
                    at += 2;
                }
                PLAN_NEW_NAME => {
                    let end = ops[at + 2] as usize;
                    let name = String::from_utf16(&utf16[text_start..end]).unwrap();
                    text_start = end + 1;
                    self.names.insert(ops[at + 1], name.clone());
                    out.push(name);
                    at += 3;
                }
                PLAN_COPY => {
                    let (list, offset, count) = (ops[at + 1], ops[at + 2] as usize, ops[at + 3] as usize);
                    out.extend_from_slice(&self.lists[&list][offset..offset + count]);
                    at += 4;
                }
                PLAN_LIST_START => {
                    assert!(building.is_none(), "lists do not nest");
                    building = Some((ops[at + 1], Vec::with_capacity(ops[at + 2] as usize)));
                    at += 3;
                }
                PLAN_LIST_END => {
                    let (list, names) = building.take().expect("a list to end");
                    self.lists.insert(list, names);
                    at += 1;
                }
                PLAN_FREE => {
                    assert!(
                        self.lists.remove(&ops[at + 1]).is_some(),
                        "freeing a list it holds"
                    );
                    at += 2;
                }
                PLAN_NAMES_BY_ID => {
                    assert!(building.is_none(), "names by id are a whole answer");
                    self.by_id = true;
                    let count = ops[at + 1] as usize;
                    let mut names = vec![None; count];
                    for pair in ops[at + 2..at + 2 + 2 * count].chunks(2) {
                        assert!(names[pair[1] as usize]
                            .replace(self.names[&pair[0]].clone())
                            .is_none());
                    }
                    answer.extend(names.into_iter().map(|name| name.expect("every place once")));
                    at += 2 + 2 * count;
                }
                op => panic!("unknown plan operation {op}"),
            }
        }
        assert!(building.is_none());
        assert_eq!(answer.len(), count, "{pattern}: plan count");
        answer
    }
}

#[test]
fn design_reference_rows() {
    let mut trie = lite();
    for name in [
        "pay__refund",
        "pay__success",
        "notify__refund",
        "pay__refund__notify",
        "pay__success__notify",
        "pay",
    ] {
        trie.add(name, None).unwrap();
    }
    assert_eq!(expand(&mut trie, "pay__refund"), ["pay__refund"]);
    assert_eq!(expand(&mut trie, "pay__*"), ["pay__refund", "pay__success"]);
    assert_eq!(expand(&mut trie, "*__refund"), ["notify__refund", "pay__refund"]);
    assert_eq!(
        expand(&mut trie, "pay__*__notify"),
        ["pay__refund__notify", "pay__success__notify"]
    );
    assert_eq!(expand(&mut trie, "**").len(), 6);
    assert_eq!(
        expand(&mut trie, "pay__**"),
        [
            "pay__refund",
            "pay__refund__notify",
            "pay__success",
            "pay__success__notify"
        ]
    );
    assert_eq!(trie.count("pay__**").unwrap(), 4);
    assert_eq!(trie.count("**").unwrap(), 6);
    assert!(trie.count("pay__").is_err());
}

#[test]
fn mqtt_hash_includes_the_parent_and_skips_dollar_topics() {
    let mut trie = TopicTrie::new(Dialect::Mqtt, 0);
    for name in ["a", "a/b", "$SYS/x", "/", "b"] {
        trie.add(name, None).unwrap();
    }
    assert_eq!(expand(&mut trie, "a/#"), ["a", "a/b"]);
    assert_eq!(expand(&mut trie, "#"), ["/", "a", "a/b", "b"]);
    assert_eq!(expand(&mut trie, "+"), ["a", "b"]);
    assert_eq!(expand(&mut trie, "$SYS/#"), ["$SYS/x"]);
    assert_eq!(expand(&mut trie, "+/+"), ["/", "a/b"]);
    assert_eq!(trie.count("#").unwrap(), 4);
    assert_eq!(trie.add("a/+", None), Err(ErrorCode::InvalidTopic));
}

#[test]
fn ids_are_stable_and_reused_only_after_removal() {
    let mut trie = lite();
    let a = trie.add("t__a", Some(5)).unwrap();
    assert_eq!(trie.add("t__a", None), Ok(a));
    assert_eq!(trie.last_active_ms("t__a"), Some(5));
    let b = trie.add("t__b", None).unwrap();
    assert_ne!(a, b);
    assert_eq!(trie.name_of(a).as_deref(), Some("t__a"));
    assert_eq!(trie.name_of(b + 1), None, "an id never handed out");
    assert_eq!(trie.name_of(NONE), None);
    assert!(trie.remove("t__a"));
    assert!(!trie.remove("t__a"));
    assert_eq!(trie.name_of(a), None);
    assert_eq!(trie.add("t__c", None), Ok(a), "the freed id is reused");
    assert_eq!(trie.add("t__d__", None).map(|_| ()), Ok(()));
    assert_eq!(trie.add("t d", None), Err(ErrorCode::InvalidLiteTopic));
    assert_eq!(trie.add(&"x".repeat(65), None), Err(ErrorCode::InvalidLiteTopic));
    assert_eq!(trie.len(), 3);
}

#[test]
fn touch_keeps_the_latest_activity_and_idle_is_oldest_first() {
    let mut trie = lite();
    let ids: Vec<u32> = ["a", "b", "c", "d"]
        .iter()
        .map(|n| trie.add(n, Some(10)).unwrap())
        .collect();
    assert!(trie.touch("b", 30));
    assert!(trie.touch("c", 20));
    assert!(
        trie.touch("c", 15),
        "an older touch is accepted but changes nothing"
    );
    assert!(!trie.touch("zz", 1));
    let mut out = Vec::new();
    trie.idle_since(25, usize::MAX, &mut out);
    assert_eq!(out, [ids[0], ids[3], ids[2]]);
    out.clear();
    trie.idle_since(25, 2, &mut out);
    assert_eq!(out, [ids[0], ids[3]]);
    out.clear();
    trie.idle_since(10, usize::MAX, &mut out);
    assert!(out.is_empty());
}

#[test]
fn list_pages_in_segment_order_from_any_cursor() {
    let mut trie = lite();
    for name in ["b", "a__c", "ab", "a", "a__b__x", "a__b", "B"] {
        trie.add(name, None).unwrap();
    }
    let page = |trie: &TopicTrie, prefix: &str, limit: usize, after: Option<&str>| {
        let mut ids = Vec::new();
        let more = trie.list(prefix, limit, after, &mut ids);
        let names: Vec<String> = ids.iter().map(|&id| trie.name_of(id).unwrap()).collect();
        (names, more)
    };
    let all = ["B", "a", "a__b", "a__b__x", "a__c", "ab", "b"];
    assert_eq!(
        page(&trie, "", usize::MAX, None),
        (all.map(String::from).to_vec(), false)
    );
    assert_eq!(page(&trie, "", 2, None), (vec!["B".into(), "a".into()], true));
    assert_eq!(
        page(&trie, "", 2, Some("a")),
        (vec!["a__b".into(), "a__b__x".into()], true)
    );
    assert_eq!(
        page(&trie, "", 9, Some("a__bb")),
        (vec!["a__c".into(), "ab".into(), "b".into()], false)
    );
    assert_eq!(page(&trie, "a", 9, None).0, ["a", "a__b", "a__b__x", "a__c"]);
    assert_eq!(page(&trie, "a", 9, Some("a__b")).0, ["a__b__x", "a__c"]);
    assert_eq!(page(&trie, "a", 9, Some("A")).0.len(), 4);
    assert_eq!(page(&trie, "a", 9, Some("ab")).0.len(), 0);
    assert_eq!(page(&trie, "zz", 9, None).0.len(), 0);
    assert_eq!(page(&trie, "", 9, Some("b")), (vec![], false));
}

#[test]
fn utf16_order_differs_from_utf8_past_the_bmp() {
    assert_eq!(compare_segments("\u{FFFD}", "\u{1F600}"), Ordering::Greater);
    assert_eq!("\u{FFFD}".cmp("\u{1F600}"), Ordering::Less);
    assert_eq!(compare_segments("a", "ab"), Ordering::Less);
}

#[test]
fn deep_names_round_trip() {
    let mut trie = TopicTrie::new(Dialect::Nats, 0);
    let name = (0..40).map(|i| format!("s{i}")).collect::<Vec<_>>().join(".");
    let id = trie.add(&name, None).unwrap();
    assert_eq!(trie.name_of(id).as_deref(), Some(name.as_str()));
    assert_eq!(trie.count("s0.>").unwrap(), 1);
}

/// Names written during the walk equal the names of the ids, in order, on a multi-level tree with
/// names at several depths, empty MQTT levels and non-ASCII segments.
#[test]
fn expand_writes_names_in_walk_order() {
    let cases: [(Dialect, &[&str], &[&str]); 3] = [
        (
            Dialect::Lite,
            &[
                "t1__a__s1",
                "t1__a__s1__x",
                "t1__a__s1__x__y",
                "t1__b__s2",
                "t1",
                "t2__a__s1__x",
                "t1__a___s",
                "t1__a__s1__z",
                "t10__a",
            ],
            &[
                "**",
                "t1__**",
                "t1__*__*__x",
                "*__a__**",
                "t1__a__s1__*",
                "t1",
                "*",
                "t9__**",
            ],
        ),
        (
            Dialect::Mqtt,
            &["a/b/c", "a//c", "/", "a", "a/b", "$sys/x", "a/é/𝄞", "a/b/c/d/e/f"],
            &["#", "a/#", "+/+/#", "+", "a/+/c", "/#", "$sys/#", "a/é/+"],
        ),
        (
            Dialect::Nats,
            &["a.b.c", "a.b", "a.b.c.d", "x.y", "a.ü.c"],
            &[">", "a.>", "*.b.*", "a.*.c", "*.*"],
        ),
    ];
    for (dialect, names, patterns) in cases {
        let mut trie = TopicTrie::new(dialect, MAX_LITE_TOPIC_BYTES);
        for name in names {
            trie.add(name, None).unwrap();
        }
        trie.remove(names[1]);
        trie.add(names[1], None).unwrap();
        for pattern in patterns {
            let walked = expand_in_walk_order(&mut trie, pattern);
            let compiled = Pattern::compile(pattern, dialect).unwrap();
            let mut expected: Vec<String> = names
                .iter()
                .filter(|n| compiled.matches(n))
                .map(|n| n.to_string())
                .collect();
            expected.sort();
            let mut got = walked.clone();
            got.sort();
            assert_eq!(got, expected, "{} {pattern}", dialect.name());
        }
    }
}

/// Kept lists under changes: names removed and added inside and beside subtrees laid down by
/// earlier walks, whole subtrees emptied, a prefix that stays as a node for its children, explicit
/// compactions between them; one plan reader follows along throughout, as the native adapter does.
/// A walk remembered by pattern (remembered.rs) follows every change of nodes: a child placed or
/// freed below the nodes it reached, a literal that had no node, and nodes moved by compaction.
#[test]
fn remembered_walks_follow_node_changes() {
    let mut trie = lite();
    for name in ["a__b__c", "a__b__d", "z__b__c"] {
        trie.add(name, None).unwrap();
    }
    let count = |trie: &mut TopicTrie, pattern: &str| trie.count(pattern).unwrap();
    assert_eq!(expand(&mut trie, "a__b__*"), ["a__b__c", "a__b__d"]);
    assert_eq!(expand(&mut trie, "a__x__*"), Vec::<String>::new());
    assert_eq!(count(&mut trie, "*__b__c"), 2);
    // A child placed below a remembered frontier, and a literal that now has a node.
    trie.add("a__b__e", None).unwrap();
    trie.add("a__x__y", None).unwrap();
    trie.add("m__b__c", None).unwrap();
    assert_eq!(expand(&mut trie, "a__b__*"), ["a__b__c", "a__b__d", "a__b__e"]);
    assert_eq!(expand(&mut trie, "a__x__*"), ["a__x__y"]);
    assert_eq!(count(&mut trie, "*__b__c"), 3);
    // Freed nodes.
    assert!(trie.remove("a__b__c"));
    assert!(trie.remove("m__b__c"));
    assert_eq!(expand(&mut trie, "a__b__*"), ["a__b__d", "a__b__e"]);
    assert_eq!(count(&mut trie, "*__b__c"), 1);
    // A name at a node that stays (no node change): the remembered walk reads the node afresh.
    trie.add("a__b", None).unwrap();
    assert_eq!(expand(&mut trie, "a__*"), ["a__b"]);
    // Nodes moved: names added out of walk order, then laid out again.
    for i in 0..200 {
        trie.add(&format!("t{}__s{}", i % 7, i), None).unwrap();
    }
    let before = expand(&mut trie, "t3__*");
    let first = expand(&mut trie, "t3__*").len();
    trie.compact();
    assert!(trie.is_laid_out_depth_first());
    assert_eq!(expand(&mut trie, "t3__*"), before);
    assert_eq!(first, before.len());
    assert_eq!(expand(&mut trie, "a__b__*"), ["a__b__d", "a__b__e"]);
    // A long pattern is walked every time, not remembered.
    let long = format!("a__{}__*", "x".repeat(300));
    let remembered = trie.remembered_walks();
    assert_eq!(trie.count(&long).unwrap(), 0);
    assert_eq!(trie.remembered_walks(), remembered);
    assert_eq!(trie.count("z__*__c").unwrap(), 1);
    assert_eq!(trie.remembered_walks(), remembered + 1);
}

#[test]
fn kept_lists_follow_changes() {
    let mut trie = lite();
    let mut reader = PlanReader::default();
    let mut live: Vec<String> = Vec::new();
    for t in 0..4 {
        for a in 0..5 {
            for s in 0..3 {
                live.push(format!("t{t}__a{a}__s{s}"));
            }
            live.push(format!("t{t}__a{a}"));
        }
    }
    for name in &live {
        trie.add(name, None).unwrap();
    }
    let patterns = [
        "**",
        "t0__**",
        "t1__**",
        "t2__**",
        "t3__**",
        "t3__a2__**",
        "*__a1__**",
        "t0__a2__**",
        "t0__a2",
        "*__*__s1",
    ];
    let check = |trie: &mut TopicTrie, reader: &mut PlanReader, live: &[String]| {
        for pattern in patterns {
            let compiled = Pattern::compile(pattern, Dialect::Lite).unwrap();
            let mut expected: Vec<String> = live.iter().filter(|n| compiled.matches(n)).cloned().collect();
            expected.sort();
            let mut ids = Vec::new();
            trie.expand_into(pattern, &mut ids).unwrap();
            let walked: Vec<String> = ids.iter().map(|&id| trie.name_of(id).unwrap()).collect();
            let mut sorted = walked.clone();
            sorted.sort();
            assert_eq!(sorted, expected, "{pattern}");
            trie.check_blocks().unwrap();
            assert_eq!(
                reader.expand(trie, pattern),
                walked,
                "{pattern}: the reader's copies"
            );
        }
    };
    check(&mut trie, &mut reader, &live);
    for round in 0..6 {
        let removed: Vec<String> = live
            .iter()
            .filter(|n| match round {
                0 => n.starts_with("t1__a4") || n.as_str() == "t0__a1__s1" || n.as_str() == "t0__a2",
                1 => n.starts_with("t2__a0") || n.starts_with("t0__a3__"),
                2 => n.starts_with("t3__") && n.as_str() != "t3__a2__s1",
                _ => n.ends_with(&format!("s{}", round % 3)),
            })
            .cloned()
            .collect();
        for name in &removed {
            let id = trie.id_of(name).unwrap();
            assert_eq!(trie.remove_id(name), Some(id));
            reader.forget(id);
        }
        assert_eq!(trie.remove_id("t3__a2__s0__x"), None);
        live.retain(|n| !removed.contains(n));
        for extra in 0..3 {
            let name = format!("t{}__a{}__n{round}x{extra}", round % 4, extra);
            trie.add(&name, None).unwrap();
            live.push(name);
        }
        if round % 2 == 1 {
            trie.compact();
        }
        check(&mut trie, &mut reader, &live);
    }
}

/// Names written in batches (level by level, see `write_names_joined`) are those of `name_of`, in
/// order, over more than one batch, at several depths, with a freed id giving an empty name.
#[test]
fn names_joined_in_batches_match_name_of() {
    let mut trie = lite();
    let names: Vec<String> = (0..100)
        .map(|i| match i % 3 {
            0 => format!("t{}", i % 7),
            1 => format!("t{}__a{i}", i % 7),
            _ => format!("t{}__a{}__s{i}__x", i % 7, i % 5),
        })
        .collect();
    let mut ids: Vec<u32> = names.iter().map(|n| trie.add(n, None).unwrap()).collect();
    let gone = ids[10];
    trie.remove(&names[10]);
    ids.reverse();
    let mut joined = String::from("x");
    trie.write_names_joined(&ids, &mut joined);
    let expected: Vec<String> = ids
        .iter()
        .map(|&id| trie.name_of(id).unwrap_or_default())
        .collect();
    assert_eq!(joined, format!("x{}", expected.join("\0")));
    assert!(expected.iter().any(String::is_empty) && trie.name_of(gone).is_none());
}

/// A compaction of a large scattered trie is done in steps, one after each walk in proportion to
/// the nodes it visited, so no walk pays for a visit of every node and a walk that visits one
/// places at most one; names added and removed between the steps are laid out with the rest,
/// and the pass ends with the trie depth first and answers unchanged.
#[test]
fn compaction_runs_in_steps_across_walks() {
    let mut trie = lite();
    // Sessions added round-robin over the agents: every subtree scattered over the node array.
    let names: Vec<String> = (0..40_000)
        .map(|i| format!("t{}__a{}__s{}", i % 7, i % 97, i))
        .collect();
    for name in &names {
        trie.add(name, None).unwrap();
    }
    let pattern = "*__*__*";
    let mut walks = 0;
    while !trie.is_compacting() {
        let mut out = Vec::new();
        assert_eq!(trie.expand_into(pattern, &mut out).unwrap(), names.len());
        walks += 1;
        assert!(walks < 100, "walks over every node start a compaction");
    }
    let mut steps = 0;
    let mut extra = 0;
    while trie.is_compacting() {
        trie.add(&format!("t{}__late__s{extra}", extra % 3), None)
            .unwrap();
        trie.remove(&names[extra * 13]);
        extra += 1;
        trie.check_links().unwrap();
        let placed = trie.compaction.map_or(0, |cursor| cursor.next);
        trie.expand_into("t3__**", &mut Vec::new()).unwrap();
        let after = trie.compaction.map_or(placed, |cursor| cursor.next);
        assert!(
            after <= placed + 1,
            "a walk that visited one node placed {}",
            after - placed
        );
        trie.count(pattern).unwrap();
        steps += 1;
    }
    assert!(steps > 1, "the pass took {steps} walks");
    trie.check_links().unwrap();
    let mut expected: Vec<&str> = names.iter().map(String::as_str).collect();
    for removed in 0..extra {
        expected.retain(|n| *n != names[removed * 13]);
    }
    let mut got = expand(&mut trie, pattern);
    got.sort();
    let mut added: Vec<String> = (0..extra).map(|e| format!("t{}__late__s{e}", e % 3)).collect();
    let mut want: Vec<String> = expected.iter().map(|n| n.to_string()).collect();
    want.append(&mut added);
    want.sort();
    assert_eq!(got, want);
    trie.compact();
    assert!(trie.is_laid_out_depth_first());
}

/// A long answer of single names the reader holds goes by id (`PLAN_NAMES_BY_ID`) and still comes
/// out in walk order; one holding a name the reader lacks goes name by name, as before.
#[test]
fn long_answers_of_known_names_go_by_id() {
    let mut trie = lite();
    let mut reader = PlanReader::default();
    // Added in an order unlike the walk's, so that ids lie scattered over the answer.
    let mut live: Vec<String> = (0..1500u32)
        .map(|i| {
            let scattered = (i * 7919) % 1500;
            format!("t{}__a{}", scattered % 37, scattered / 37)
        })
        .collect();
    for name in &live {
        trie.add(name, None).unwrap();
    }
    let pattern = "*__*";
    let check = |trie: &mut TopicTrie, reader: &mut PlanReader, by_id: bool| {
        let mut ids = Vec::new();
        trie.expand_into(pattern, &mut ids).unwrap();
        let walked: Vec<String> = ids.iter().map(|&id| trie.name_of(id).unwrap()).collect();
        assert_eq!(reader.expand(trie, pattern), walked, "the reader's answer");
        assert_eq!(reader.by_id, by_id, "the plan's form");
    };
    // The first answer hands every name out by text; the next ones go by id.
    check(&mut trie, &mut reader, false);
    check(&mut trie, &mut reader, true);
    for (i, name) in live.iter_mut().enumerate().filter(|(i, _)| i % 5 == 0) {
        let id = trie.id_of(name).unwrap();
        trie.remove(name);
        reader.forget(id);
        *name = format!("t{}__b{i}", i % 37);
        trie.add(name, None).unwrap();
    }
    check(&mut trie, &mut reader, false);
    check(&mut trie, &mut reader, true);
}

#[test]
fn fresh_lay_down_leaves_what_the_general_one_does() {
    // Names added out of order, so that nodes lie scattered as on a live broker.
    let mut names = Vec::new();
    for t in 0..3 {
        for a in 0..7 {
            for s in 0..11 {
                names.push(format!("t{t}__a{a}__s{s}"));
                if s % 3 == 0 {
                    names.push(format!("t{t}__a{a}__s{s}__tool{}", s % 4));
                }
            }
            names.push(format!("t{t}__a{a}"));
        }
    }
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by_key(|&i| (i * 7919) % names.len());
    let build = || {
        let mut trie = lite();
        for &i in &order {
            trie.add(&names[i], None).unwrap();
        }
        trie
    };
    // `fresh` lays `t1` down from nothing (fresh.rs); in `general` a session below it was laid
    // down first, so the gathering meets it, puts back what it wrote and leaves `t1` to the
    // general lay-down, which absorbs the session's list.
    let mut fresh = build();
    let mut general = build();
    let walk = |trie: &mut TopicTrie, pattern: &str| {
        let mut ids = Vec::new();
        trie.expand_into(pattern, &mut ids).unwrap();
        ids.iter()
            .map(|&id| trie.name_of(id).unwrap())
            .collect::<Vec<_>>()
    };
    walk(&mut general, "t1__a3__s6__**");
    // The plan of the fresh lay-down hands every name with its path.
    let mut reader = PlanReader::default();
    let walked = reader.expand(&mut fresh, "t1__**");
    assert_eq!(walk(&mut fresh, "t1__**"), walked);
    assert_eq!(walk(&mut general, "t1__**"), walked);
    let kept = |trie: &TopicTrie| trie.nodes.iter().map(|n| n.kept).collect::<Vec<_>>();
    assert_eq!(kept(&fresh), kept(&general), "keys and flags");
    for trie in [&fresh, &general] {
        trie.check_blocks().unwrap();
    }
    // Changes after a fresh lay-down are laid down from its records like any others.
    for (round, name) in ["t1__a3__s6__new", "t1__a9", "t1__a0__s2__x__y"]
        .into_iter()
        .enumerate()
    {
        let gone = &names[round * 5 + 40];
        let gone_id = fresh.id_of(gone).unwrap();
        for trie in [&mut fresh, &mut general] {
            trie.add(name, None).unwrap();
            assert_eq!(trie.remove_id(gone), Some(gone_id));
        }
        reader.forget(gone_id);
        let walked = walk(&mut fresh, "t1__**");
        assert_eq!(walk(&mut general, "t1__**"), walked, "round {round}");
        assert_eq!(
            reader.expand(&mut fresh, "t1__**"),
            walked,
            "round {round}: the reader's copies"
        );
        fresh.check_blocks().unwrap();
    }
}
