//! Random operation sequences against a brute-force model (a list of names and last activities),
//! with compaction interleaved (whole, and a pass in small steps with operations between them):
//! results, ids and walk order must not depend on the node layout.

use super::{expand, expand_in_walk_order};
use crate::dialect::Dialect;
use crate::pattern::Pattern;
use crate::test_rng::Rng;
use crate::trie::list::compare_segments;
use crate::trie::TopicTrie;
use std::cmp::Ordering;

fn random_name(rng: &mut Rng, dialect: Dialect) -> String {
    let words = ["a", "b", "c", "", "$s", "_b"];
    let count = 1 + rng.below(4);
    (0..count)
        .map(|_| words[rng.below(words.len())])
        .collect::<Vec<_>>()
        .join(dialect.separator())
}

fn random_pattern(rng: &mut Rng, dialect: Dialect) -> String {
    let words = ["a", "b", "c", "$s"];
    let count = 1 + rng.below(4);
    let mut parts = Vec::new();
    for i in 0..count {
        let part = match rng.below(6) {
            0 | 1 => dialect.one_wildcard(),
            2 if i == count - 1 => dialect.rest_wildcard(),
            _ => words[rng.below(words.len())],
        };
        parts.push(part.to_string());
    }
    parts.join(dialect.separator())
}

fn sorted_by_segments(names: &mut [String], dialect: Dialect) {
    names.sort_by(|a, b| {
        let a: Vec<&str> = dialect.split(a).collect();
        let b: Vec<&str> = dialect.split(b).collect();
        for (x, y) in a.iter().zip(&b) {
            match compare_segments(x, y) {
                Ordering::Equal => {}
                other => return other,
            }
        }
        a.len().cmp(&b.len())
    });
}

/// Random adds, removes and touches against a brute-force model: a list of (name, last activity).
#[test]
fn matches_brute_force_under_random_operations() {
    for dialect in Dialect::ALL {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ u64::from(dialect.id()));
        let mut trie = TopicTrie::new(dialect, 12);
        let mut live: Vec<(String, u64)> = Vec::new();
        for step in 0..3000 {
            let name = random_name(&mut rng, dialect);
            let timestamp = rng.below(50) as u64;
            match rng.below(4) {
                0 if !live.is_empty() => {
                    let (n, _) = live.swap_remove(rng.below(live.len()));
                    assert!(trie.remove(&n), "step {step}: remove {n}");
                }
                1 => {
                    let known = live.iter_mut().find(|(n, _)| *n == name);
                    let touched = trie.touch(&name, timestamp);
                    assert_eq!(touched, known.is_some());
                    if let Some((_, last)) = known {
                        *last = (*last).max(timestamp);
                    }
                }
                _ => match trie.add(&name, Some(timestamp)) {
                    Ok(id) => {
                        assert_eq!(trie.name_of(id).as_deref(), Some(name.as_str()));
                        match live.iter_mut().find(|(n, _)| *n == name) {
                            Some((_, last)) => *last = (*last).max(timestamp),
                            None => live.push((name.clone(), timestamp)),
                        }
                    }
                    Err(_) => {
                        assert!(trie.check_name(&name).is_err() && !live.iter().any(|(n, _)| *n == name))
                    }
                },
            }
            assert_eq!(trie.len(), live.len());
            if rng.below(3) == 0 {
                // A few nodes of a compaction pass, which the next operations then run across.
                trie.compact_partly(1 + rng.below(6));
            }
            trie.check_links()
                .unwrap_or_else(|e| panic!("step {step} links: {e}"));
            trie.check_blocks()
                .unwrap_or_else(|e| panic!("step {step} before expand: {e}"));
            let pattern = random_pattern(&mut rng, dialect);
            let Ok(compiled) = Pattern::compile(&pattern, dialect) else {
                assert!(
                    trie.count(&pattern).is_err() && trie.expand_into(&pattern, &mut Vec::new()).is_err()
                );
                continue;
            };
            let mut expected: Vec<String> = live
                .iter()
                .filter(|(n, _)| compiled.matches(n))
                .map(|(n, _)| n.clone())
                .collect();
            expected.sort();
            assert_eq!(
                expand(&mut trie, &pattern),
                expected,
                "step {step}: {} {pattern}",
                dialect.name()
            );
            trie.check_blocks()
                .unwrap_or_else(|e| panic!("step {step} after {pattern}: {e}"));
            assert_eq!(
                trie.count(&pattern).unwrap(),
                expected.len(),
                "step {step}: count {pattern}"
            );
            let cutoff = rng.below(50) as u64;
            let mut idle: Vec<(u64, u32)> = live
                .iter()
                .filter(|&&(_, t)| t < cutoff)
                .map(|(n, t)| (*t, trie.id_of(n).unwrap()))
                .collect();
            idle.sort_unstable();
            let mut got = Vec::new();
            trie.idle_since(cutoff, usize::MAX, &mut got);
            assert_eq!(
                got,
                idle.iter().map(|&(_, id)| id).collect::<Vec<_>>(),
                "step {step}: idle"
            );
            if step % 50 == 0 {
                check_list(&trie, &live, dialect, &mut rng);
            }
            if step % 7 == 0 {
                check_compaction(&mut trie, &live, &pattern);
            }
        }
        while let Some((n, _)) = live.pop() {
            assert!(trie.remove(&n));
        }
        let stats = trie.stats();
        assert_eq!(
            (stats.names, stats.nodes, stats.segments),
            (0, 1, 0),
            "memory is given back"
        );
        assert_eq!(stats, TopicTrie::new(dialect, 12).stats());
    }
}

fn check_list(trie: &TopicTrie, live: &[(String, u64)], dialect: Dialect, rng: &mut Rng) {
    let mut expected: Vec<String> = live.iter().map(|(n, _)| n.clone()).collect();
    sorted_by_segments(&mut expected, dialect);
    let limit = 1 + rng.below(4);
    let mut got = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut ids = Vec::new();
        let more = trie.list("", limit, after.as_deref(), &mut ids);
        got.extend(ids.iter().map(|&id| trie.name_of(id).unwrap()));
        if !more {
            break;
        }
        after = got.last().cloned();
    }
    assert_eq!(got, expected, "{} list", dialect.name());
}

/// An explicit compaction between operations changes no id, no result and no result order, and
/// leaves every subtree in one run of nodes. (Walks also compact on their own, see compact.rs, so
/// the operations above already run on tries compacted at arbitrary points.)
fn check_compaction(trie: &mut TopicTrie, live: &[(String, u64)], pattern: &str) {
    let ids: Vec<Option<u32>> = live.iter().map(|(n, _)| trie.id_of(n)).collect();
    let before = expand_in_walk_order(trie, pattern);
    trie.compact();
    assert!(
        trie.is_laid_out_depth_first(),
        "compaction lays nodes out depth first"
    );
    assert_eq!(live.iter().map(|(n, _)| trie.id_of(n)).collect::<Vec<_>>(), ids);
    assert_eq!(
        expand_in_walk_order(trie, pattern),
        before,
        "{pattern}: order after compaction"
    );
}
