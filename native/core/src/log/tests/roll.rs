//! Appends and reads across segment rolls, end markers, stopping without a spare, deletions.

use super::*;
use crate::log::record::END_MARKER;
use crate::log::LogError;

#[test]
fn offsets_and_reads_follow_appends_across_rolls() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    let mut records = Vec::new();
    for i in 0..300u32 {
        let body = format!("body {i} {}", "x".repeat((i % 50) as usize));
        records.push(message(
            &["even-or-odd", if i % 2 == 0 { "even" } else { "odd" }],
            body.as_bytes(),
        ));
    }
    let written = append_all(&log, &records, 100);
    assert!(dir.segments().len() > 5, "4 KiB segments rolled");
    for (i, (_, offsets)) in written.iter().enumerate() {
        assert_eq!(offsets, &vec![i as u64, (i / 2) as u64]);
    }
    let all = read_all(&log, "even-or-odd");
    assert_eq!(all.len(), 300);
    for (i, (offset, position, body)) in all.iter().enumerate() {
        assert_eq!((*offset, *position), (i as u64, written[i].0));
        assert!(body.starts_with(format!("body {i} ").as_bytes()));
    }
    let mut guard = log.lock();
    assert_eq!(guard.max_offset(b"odd"), Ok(150));
    assert_eq!(guard.min_offset(b"odd"), Ok(0));
    assert_eq!(guard.last_write_timestamp(b"odd"), Ok(Some(100)));
    assert_eq!(guard.last_write_timestamp(b"none"), Ok(None));
    let page = guard.read(b"odd", 149, 10).expect("read");
    assert_eq!((page.first_offset, page.positions.len()), (149, 1));
    assert!(guard.read(b"odd", 150, 10).expect("read").positions.is_empty());
    assert!(guard.read(b"none", 0, 10).expect("read").positions.is_empty());
}

#[test]
fn a_full_segment_without_spare_stops_at_a_record_boundary_after_an_end_marker() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    let records: Vec<Vec<u8>> = (0..20).map(|_| message(&["q"], &[1; 500])).collect();
    let mut batch = records.concat();
    let mut positions = vec![0.0; 20];
    let mut offsets = vec![0.0; 20];
    let done = log
        .lock()
        .append(&mut batch, 20, 1, &mut positions, &mut offsets)
        .expect("append");
    let record_bytes = records[0].len() as u64;
    assert_eq!(done as u64, (4096 - 64) / record_bytes);
    let end = 64 + done as u64 * record_bytes;
    let segment = std::fs::read(&dir.segments()[0]).expect("segment");
    assert_eq!(segment[end as usize..end as usize + 4], END_MARKER);
    // Nothing more fits until a spare is ready, then writing continues after its header.
    let mut rest = records[done..].concat();
    assert_eq!(
        log.lock()
            .append(&mut rest, 20 - done, 1, &mut positions, &mut offsets),
        Ok(0)
    );
    log.prepare_segment(1).expect("prepare");
    assert!(log.lock().stats().expect("stats").spare_ready);
    assert_eq!(
        log.lock().append(
            &mut rest[..record_bytes as usize],
            1,
            1,
            &mut positions,
            &mut offsets
        ),
        Ok(1)
    );
    assert_eq!(positions[0] as u64, 4096 + 64);
    assert_eq!(offsets[0] as usize, done);
}

#[test]
fn a_malformed_batch_writes_nothing() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    let mut batch = message(&["q"], b"fine");
    let mut bad = message(&["q"], b"bad");
    bad[12] = 9;
    batch.extend_from_slice(&bad);
    let (mut positions, mut offsets) = (vec![0.0; 2], vec![0.0; 2]);
    let result = log.lock().append(&mut batch, 2, 1, &mut positions, &mut offsets);
    assert!(matches!(result, Err(LogError::InvalidArgument(_))), "{result:?}");
    assert_eq!(log.lock().max_offset(b"q"), Ok(0));
    assert_eq!(log.lock().write_position(), Ok(64));
    let mut huge = message(&["q"], &[0; 4096]);
    let result = log.lock().append(&mut huge, 1, 1, &mut positions, &mut offsets);
    assert!(matches!(result, Err(LogError::InvalidArgument(_))), "{result:?}");
}

#[test]
fn deletion_drops_the_queue_and_a_later_message_starts_again() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    let written = append_all(
        &log,
        &[message(&["q"], b"1"), message(&["q"], b"2"), deletion("q")],
        1,
    );
    assert_eq!(
        written[2].1,
        vec![2],
        "the deletion carries the offset the LMQ had reached"
    );
    assert_eq!(log.lock().lmq_count(), Ok(0));
    append_all(&log, &[message(&["q"], b"3")], 1);
    assert_eq!(
        read_all(&log, "q").iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![0]
    );
    log.close().expect("close");
    let log = open(&dir.0);
    assert_eq!(
        read_all(&log, "q")
            .iter()
            .map(|r| r.2.clone())
            .collect::<Vec<_>>(),
        vec![b"3".to_vec()]
    );
}

#[test]
fn lists_lmqs_by_prefix() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    append_all(&log, &[message(&["b", "a/1", "a/2", "c"], b"")], 1);
    let page = log.lock().list_lmqs(b"a/", None, 1).expect("list");
    assert_eq!(
        (page.names.len(), &page.names[0][..], page.more),
        (1, &b"a/1"[..], true)
    );
}

#[test]
fn a_read_refuses_an_index_entry_that_names_another_intact_record() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    let written = append_all(&log, &[message(&["a"], b"first"), message(&["b"], b"second")], 3);
    let (b_position, _) = &written[1];
    let b_size = {
        let guard = log.lock();
        let queue = guard.queues.get(b"b").expect("queue b");
        queue.entries().front().expect("an entry").size
    };
    // Point offset 1 of "a" at the record of "b": intact bytes, but not what the index claims.
    let fake = crate::queue::IndexEntry {
        position: *b_position,
        size: b_size,
        tag_hash: 0,
        key_hash: 0,
    };
    log.lock().queues.append(b"a", fake, 3);
    let mut guard = log.lock();
    assert_eq!(
        guard
            .read(b"a", 0, 1)
            .expect("offset 0 is intact")
            .positions
            .len(),
        1
    );
    assert!(matches!(guard.read(b"a", 0, 2), Err(LogError::Corrupt { .. })));
    assert!(matches!(guard.read(b"a", 1, 1), Err(LogError::Corrupt { .. })));
}

#[test]
fn a_read_fails_at_the_first_damaged_record_wherever_it_lies_among_those_checked_together() {
    // Seven records: reads check their checksums a few at a time, so the damaged one is tried in
    // every place of a full group and of the shorter last one.
    for damaged in 0..7usize {
        let dir = TempDir::new();
        let log = open(&dir.0);
        let records: Vec<Vec<u8>> = (0..7)
            .map(|i| message(&["q"], format!("body {i}").as_bytes()))
            .collect();
        let written = append_all(&log, &records, 3);
        let segment = &dir.segments()[0];
        let base = crate::log::segment::parse_segment_file_name(
            segment.file_name().and_then(|n| n.to_str()).expect("name"),
        )
        .expect("a segment");
        // The last byte of the record's body, changed through the file: the mapping shares it.
        let at = written[damaged].0 - base + records[damaged].len() as u64 - 1;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(segment)
            .expect("open");
        std::os::unix::fs::FileExt::write_at(&file, b"!", at).expect("damage");
        let mut guard = log.lock();
        let error = guard
            .read(b"q", 0, 7)
            .expect_err("the damaged record fails the read");
        assert!(
            matches!(&error, LogError::Corrupt { position: Some(p), message, .. }
                if *p == written[damaged].0 && message == "checksum mismatch"),
            "record {damaged}: {error:?}"
        );
        let before = guard.read(b"q", 0, damaged).expect("the records before it");
        assert_eq!(before.positions.len(), damaged);
        let after = guard
            .read(b"q", damaged as u64 + 1, 7)
            .expect("the records after it");
        assert_eq!(after.positions.len(), 6 - damaged);
    }
}
