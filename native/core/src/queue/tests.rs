use super::*;

fn entry(position: u64) -> IndexEntry {
    IndexEntry {
        position,
        size: 40,
        tag_hash: 0,
        key_hash: 0,
    }
}

#[test]
fn append_assigns_consecutive_offsets_per_queue() {
    let mut queues = Queues::default();
    assert_eq!(queues.append(b"a", entry(64), 1), 0);
    assert_eq!(queues.append(b"a", entry(104), 2), 1);
    assert_eq!(queues.append(b"b", entry(144), 3), 0);
    let a = queues.get(b"a").expect("queue a");
    assert_eq!((a.min_offset(), a.next_offset(), a.last_write_ms()), (0, 2, 2));
    assert_eq!(queues.entry_count(), 3);
    let (first, entries) = a.range(1, 10);
    assert_eq!(first, 1);
    assert_eq!(entries.map(|e| e.position).collect::<Vec<_>>(), vec![104]);
    let (first, mut entries) = a.range(5, 10);
    assert_eq!(first, 5);
    assert!(entries.next().is_none());
}

#[test]
fn replay_starts_appends_restarts_and_refuses_going_back() {
    let mut queues = Queues::default();
    queues.replay(b"q", 7, entry(64), 1).expect("start");
    queues.replay(b"q", 8, entry(104), 1).expect("next");
    queues.replay(b"q", 12, entry(144), 1).expect("restart");
    let q = queues.get(b"q").expect("queue");
    assert_eq!((q.min_offset(), q.next_offset()), (12, 13));
    assert_eq!(queues.entry_count(), 1);
    assert_eq!(
        queues.replay(b"q", 3, entry(184), 1),
        Err(ReplayError::WentBack(OffsetWentBack {
            expected: 13,
            found: 3
        }))
    );
}

#[test]
fn drop_below_moves_minimum_offsets() {
    let mut queues = Queues::default();
    for i in 0..5 {
        queues.append(b"a", entry(100 * i), 0);
    }
    queues.drop_below(250);
    let a = queues.get(b"a").expect("queue a");
    assert_eq!((a.min_offset(), a.next_offset()), (3, 5));
    queues.drop_below(1000);
    let a = queues.get(b"a").expect("queue a");
    assert_eq!((a.min_offset(), a.next_offset()), (5, 5));
    assert_eq!(queues.entry_count(), 0);
    assert_eq!(queues.append(b"a", entry(2000), 0), 5);
}

#[test]
fn list_pages_in_byte_order() {
    let mut queues = Queues::default();
    for name in ["b/2", "a", "b/1", "b/10", "c", "é"] {
        queues.append(name.as_bytes(), entry(0), 0);
    }
    let names = |page: NamePage| -> (Vec<String>, bool) {
        let list = page
            .names
            .iter()
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .collect();
        (list, page.more)
    };
    assert_eq!(
        names(queues.list(b"b/", None, 2)),
        (vec!["b/1".into(), "b/10".into()], true)
    );
    assert_eq!(
        names(queues.list(b"b/", Some(b"b/10"), 2)),
        (vec!["b/2".into()], false)
    );
    assert_eq!(names(queues.list(b"", Some(b"c"), 5)), (vec!["é".into()], false));
    queues.remove(b"b/1");
    assert_eq!(names(queues.list(b"b", None, 5)).0, vec!["b/10", "b/2"]);
}

#[test]
fn names_survive_removals_reuse_and_compaction() {
    let mut queues = Queues::default();
    let name = |i: usize| format!("%LMQ%$t{}__a{i}", i % 7).into_bytes();
    for i in 0..5_000 {
        assert_eq!(queues.append(&name(i), entry(64 * i as u64), 1), 0);
    }
    // Removing most names frees their ids and leaves their bytes as garbage, compacted on the way.
    for i in (0..5_000).filter(|i| i % 5 != 0) {
        assert!(queues.remove(&name(i)).is_some(), "remove {i}");
        assert!(queues.remove(&name(i)).is_none(), "remove {i} twice");
    }
    assert_eq!(queues.len(), 1_000);
    for i in 0..5_000 {
        assert_eq!(queues.get(&name(i)).is_some(), i % 5 == 0, "lookup {i}");
    }
    // Names come back with fresh queues (reused ids), the kept ones keep theirs.
    for i in (0..5_000).filter(|i| i % 5 == 1) {
        assert_eq!(queues.append(&name(i), entry(1), 2), 0);
    }
    assert_eq!(queues.append(&name(0), entry(9_999_999), 3), 1);
    assert_eq!(queues.len(), 2_000);
    let listed = queues.list(b"", None, usize::MAX).names;
    let mut expected: Vec<Vec<u8>> = (0..5_000).filter(|i| i % 5 <= 1).map(name).collect();
    expected.sort();
    assert_eq!(listed.iter().map(|n| n.to_vec()).collect::<Vec<_>>(), expected);
    assert_eq!(queues.iter().count(), 2_000);
    assert_eq!(queues.entry_count(), 2_001);
}

#[test]
fn entries_read_across_the_ring_and_shrink_back_to_one() {
    let mut queues = Queues::default();
    for i in 0..10u64 {
        queues.append(b"q", entry(100 * i), 1);
    }
    // Dropping from the front and appending again wraps the ring buffer.
    queues.drop_below(300);
    for i in 10..13u64 {
        queues.append(b"q", entry(100 * i), 1);
    }
    let q = queues.get(b"q").expect("queue");
    assert_eq!((q.min_offset(), q.next_offset()), (3, 13));
    for from in 0..14 {
        for max in 0..12 {
            let (first, got) = q.range(from, max);
            let want: Vec<u64> = (first.max(3)..13).take(max).map(|o| 100 * o).collect();
            assert_eq!(
                got.map(|e| e.position).collect::<Vec<_>>(),
                want,
                "range({from}, {max})"
            );
        }
    }
    assert_eq!(q.entries().back().map(|e| e.position), Some(1200));
    queues.drop_below(1200);
    let q = queues.get(b"q").expect("queue");
    assert!(matches!(q.entries(), Entries::One(_)));
    assert_eq!(
        (q.min_offset(), q.next_offset(), queues.entry_count()),
        (12, 13, 1)
    );
    queues.drop_below(5000);
    let q = queues.get(b"q").expect("queue");
    assert!(matches!(q.entries(), Entries::Empty));
    assert_eq!(
        (q.min_offset(), q.next_offset(), queues.entry_count()),
        (13, 13, 0)
    );
}

#[test]
fn an_idle_queue_is_a_few_words() {
    // The slot of a queue: offsets, last write time and its entries (one held in place).
    assert!(
        std::mem::size_of::<ConsumeQueue>() <= 56,
        "{}",
        std::mem::size_of::<ConsumeQueue>()
    );
}

/// The name table against a map, through growth, removals that leave many ids free (a small table
/// then holds large ids, so fewer bits are left for the hash tag) and reuse: every lookup, of names
/// there and not, agrees.
#[test]
fn name_table_agrees_with_a_map_through_growth_and_removals() {
    use super::names::NameTable;
    use crate::test_rng::Rng;
    use std::collections::HashMap;
    let mut rng = Rng(0x5eed_7a61);
    let mut table = NameTable::default();
    let mut model: HashMap<Vec<u8>, u32> = HashMap::new();
    let name = |i: usize| format!("%LMQ%$agents$tenant{}__session{i}", i % 13).into_bytes();
    for round in 0..6 {
        // Grow to a few thousand names, then remove nearly all of them.
        for _ in 0..4_000 {
            let n = name(rng.below(20_000));
            if !model.contains_key(&n) {
                let id = table.insert(&n);
                assert!(model.values().all(|&other| other != id), "id {id} given twice");
                model.insert(n, id);
            }
        }
        let keep = if round % 2 == 0 { 10 } else { 500 };
        let mut names: Vec<Vec<u8>> = model.keys().cloned().collect();
        names.sort();
        for n in names.iter().skip(keep) {
            assert_eq!(
                table.remove(n),
                model.remove(n),
                "remove {}",
                String::from_utf8_lossy(n)
            );
        }
        assert_eq!(table.len(), model.len());
        for i in 0..20_000 {
            let n = name(i);
            assert_eq!(
                table.get(&n),
                model.get(&n).copied(),
                "lookup {i} in round {round}"
            );
        }
        for (n, &id) in &model {
            assert_eq!(table.name(id), n.as_slice());
        }
    }
}
