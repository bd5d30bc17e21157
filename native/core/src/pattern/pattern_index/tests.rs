use super::*;
use crate::pattern::Pattern;
use crate::test_rng::Rng;

fn random_pattern(rng: &mut Rng, dialect: Dialect) -> String {
    let words = ["a", "b", "c", "", "$s"];
    let count = 1 + rng.below(4);
    let mut parts = Vec::new();
    for i in 0..count {
        let pick = rng.below(8);
        let part = match pick {
            0 => dialect.one_wildcard(),
            1 if i == count - 1 => dialect.rest_wildcard(),
            _ => words[rng.below(words.len())],
        };
        parts.push(part.to_string());
    }
    parts.join(dialect.separator())
}

fn random_topic(rng: &mut Rng, dialect: Dialect) -> String {
    let words = ["a", "b", "c", "", "$s", "d"];
    let count = 1 + rng.below(5);
    (0..count)
        .map(|_| words[rng.below(words.len())])
        .collect::<Vec<_>>()
        .join(dialect.separator())
}

/// Runs the comparison with small ids (the stamp-based dedup) and with some ids near `u32::MAX` (the
/// sort-based dedup).
#[test]
fn matches_brute_force_under_random_adds_and_removes() {
    for dialect in Dialect::ALL {
        compare_with_brute_force(dialect, false);
        compare_with_brute_force(dialect, true);
    }
}

fn compare_with_brute_force(dialect: Dialect, sparse_ids: bool) {
    {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ u64::from(dialect.id()) ^ u64::from(sparse_ids));
        let mut index = PatternIndex::new(dialect);
        let mut live: Vec<(String, u32)> = Vec::new();
        for step in 0..2000 {
            let pattern = random_pattern(&mut rng, dialect);
            let id = if sparse_ids && rng.below(4) == 0 {
                u32::MAX - rng.below(5) as u32
            } else {
                rng.below(20) as u32
            };
            if rng.below(3) == 0 && !live.is_empty() {
                let (p, i) = live.swap_remove(rng.below(live.len()));
                assert!(index.remove(&p, i), "step {step}: remove {p} {i}");
            } else {
                let valid = dialect.validate_pattern(&pattern).is_ok();
                let fresh = !live.contains(&(pattern.clone(), id));
                match index.add(&pattern, id) {
                    Ok(added) => {
                        assert!(valid);
                        assert_eq!(added, fresh, "step {step}: add {pattern} {id}");
                        if added {
                            live.push((pattern, id));
                        }
                    }
                    Err(_) => assert!(!valid),
                }
            }
            assert_eq!(index.len(), live.len());
            let topic = random_topic(&mut rng, dialect);
            let mut expected: Vec<u32> = live
                .iter()
                .filter(|(p, _)| Pattern::compile(p, dialect).unwrap().matches(&topic))
                .map(|&(_, i)| i)
                .collect();
            expected.sort_unstable();
            expected.dedup();
            let mut got = Vec::new();
            index.match_into(&topic, &mut got);
            assert_eq!(got, expected, "step {step}: {} topic {topic:?}", dialect.name());
            assert_eq!(index.match_count(&topic), expected.len(), "step {step}: count");
        }
        while let Some((p, i)) = live.pop() {
            assert!(index.remove(&p, i));
        }
        let stats = index.stats();
        assert_eq!(
            (stats.entries, stats.nodes, stats.segments),
            (0, 1, 0),
            "memory is given back"
        );
    }
}

#[test]
fn removing_unknown_entries_changes_nothing() {
    let mut index = PatternIndex::new(Dialect::Lite);
    assert!(index.add("a__*", 1).unwrap());
    assert!(!index.add("a__*", 1).unwrap());
    assert!(!index.remove("a__*", 2));
    assert!(!index.remove("a__b", 1));
    assert!(!index.remove("a__", 1));
    assert!(index.add("a__", 1).is_err());
    assert_eq!(index.len(), 1);
    let mut out = Vec::new();
    assert_eq!(index.match_into("a__x", &mut out), 1);
    assert_eq!(out, [1]);
}

#[test]
fn one_id_under_several_patterns_is_reported_once() {
    let mut index = PatternIndex::new(Dialect::Lite);
    for pattern in ["t__**", "t__a__*", "t__a__s", "**"] {
        index.add(pattern, 7).unwrap();
    }
    index.add("t__a__s", 3).unwrap();
    let mut out = Vec::new();
    index.match_into("t__a__s", &mut out);
    assert_eq!(out, [3, 7]);
}

#[test]
fn an_invalid_topic_reached_by_wildcards_matches_nothing() {
    let mut index = PatternIndex::new(Dialect::Lite);
    index.add("a__*", 1).unwrap();
    index.add("**", 2).unwrap();
    index.add("a__b", 3).unwrap();
    let mut out = Vec::new();
    assert_eq!(index.match_into("a__b c", &mut out), 0);
    assert_eq!(index.match_count("a__b c"), 0);
    assert_eq!(index.match_count("a__b"), 3);
    assert_eq!(index.match_count("a__c"), 2);
}

#[test]
fn literal_and_wildcard_entries_are_freed_separately() {
    let mut index = PatternIndex::new(Dialect::Lite);
    index.add("a__b", 1).unwrap();
    index.add("a__*", 1).unwrap();
    assert!(index.remove("a__*", 1));
    assert_eq!(index.stats().nodes, 1, "the automaton holds no literal pattern");
    assert_eq!(index.match_count("a__b"), 1);
    assert!(!index.remove("a__*", 1));
    assert!(index.remove("a__b", 1));
    assert_eq!(index.match_count("a__b"), 0);
    assert!(index.is_empty());
}

#[test]
fn a_literal_pattern_keeps_its_ids_ascending_through_adds_and_removes() {
    let mut index = PatternIndex::new(Dialect::Lite);
    let mut out = Vec::new();
    for id in [5, 2, 9, 2] {
        index.add("a__b", id).unwrap();
    }
    index.match_into("a__b", &mut out);
    assert_eq!(out, [2, 5, 9]);
    assert!(index.remove("a__b", 5));
    assert!(index.remove("a__b", 9));
    assert!(!index.remove("a__b", 9));
    out.clear();
    index.match_into("a__b", &mut out);
    assert_eq!(out, [2]);
    assert!(index.add("a__b", 1).unwrap());
    assert_eq!(index.match_count("a__b"), 2);
}

#[test]
fn split_segments_agrees_with_the_dialect_split() {
    let mut rng = Rng(0x5eed_5717);
    let alphabet = ["a", "_", "__", "/", ".", "bc", "é"];
    for _ in 0..5000 {
        let length = rng.below(40);
        let topic: String = (0..length).map(|_| alphabet[rng.below(alphabet.len())]).collect();
        for dialect in Dialect::ALL {
            let mut segments = Vec::new();
            split_segments(topic.as_bytes(), dialect.separator().as_bytes(), &mut segments);
            let got: Vec<&str> = segments
                .iter()
                .map(|s| &topic[s.start as usize..s.end as usize])
                .collect();
            let expected: Vec<&str> = dialect.split(&topic).collect();
            assert_eq!(got, expected, "{} {topic:?}", dialect.name());
        }
    }
}
