//! Body-only appends (`Log::append_bodies`): the records are the ones `append` would store for the
//! same LMQ and body, queues looked up through handles follow deletions, bad batches store nothing,
//! and a batch that fills the segment stops at a record and goes on from there; reads of bodies
//! (`Log::read_bodies_into`) and reads by handle (`Log::read_span_of`).

use super::{append_all, message, open, TempDir};
use crate::log::record::{check_stored, seal, seal_run};
use crate::log::{BodyBatch, LogError};

/// Appends `records` (handle, body) in one call from record 0; returns what `append_bodies` did.
fn append_bodies(
    log: &crate::log::LogHandle,
    records: &[(u32, &[u8])],
    store_ms: u64,
) -> (Result<usize, LogError>, Vec<f64>, Vec<f64>) {
    let handles: Vec<u32> = records.iter().map(|&(h, _)| h).collect();
    let bodies: Vec<u8> = records.iter().flat_map(|&(_, b)| b.iter().copied()).collect();
    let mut end = 0u32;
    let ends: Vec<u32> = records
        .iter()
        .map(|&(_, b)| {
            end += b.len() as u32;
            end
        })
        .collect();
    let mut positions = vec![0.0; records.len()];
    let mut offsets = vec![0.0; records.len()];
    let batch = BodyBatch {
        handles: &handles,
        bodies: &bodies,
        body_ends: &ends,
    };
    let result = log
        .lock()
        .append_bodies(batch, 0..records.len(), store_ms, &mut positions, &mut offsets);
    (result, positions, offsets)
}

#[test]
fn stores_what_append_stores_for_the_same_lmq_and_body() {
    let (by_bodies, by_append) = (TempDir::new(), TempDir::new());
    let log = open(&by_bodies.0);
    let first = log
        .lock()
        .register_lmqs(&[b"a", "ü".as_bytes()])
        .expect("register");
    assert_eq!(first, 0);
    let records: [(u32, &[u8]); 3] = [(0, b"one"), (1, b""), (0, b"three")];
    let (done, positions, offsets) = append_bodies(&log, &records, 5);
    assert_eq!(done.expect("append"), 3);
    assert_eq!(offsets, [0.0, 0.0, 1.0]);
    // `message` is born at 5, the store time used here, as a body-only record is.
    let other = open(&by_append.0);
    append_all(
        &other,
        &[
            message(&["a"], b"one"),
            message(&["ü"], b""),
            message(&["a"], b"three"),
        ],
        5,
    );
    for (i, name) in [(0usize, "a"), (1, "ü"), (2, "a")] {
        let offset = offsets[i] as u64;
        let mine = log.lock().read(name.as_bytes(), offset, 1).expect("read");
        let theirs = other.lock().read(name.as_bytes(), offset, 1).expect("read");
        assert_eq!(mine.bytes, theirs.bytes, "record {i}");
        assert_eq!(mine.positions, [positions[i]]);
    }
}

#[test]
fn a_deleted_lmq_starts_again_through_its_handle() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    log.lock().register_lmqs(&[b"a", b"b"]).expect("register");
    let (_, _, offsets) = append_bodies(&log, &[(0, b"x"), (0, b"y"), (1, b"z")], 5);
    assert_eq!(offsets, [0.0, 1.0, 0.0]);
    // Deleting `a` frees its queue id; a new LMQ then takes it, and `a`'s handle must not follow.
    append_all(&log, &[super::deletion("a"), message(&["c"], b"c")], 6);
    let (_, _, offsets) = append_bodies(&log, &[(0, b"again"), (1, b"b1")], 7);
    assert_eq!(offsets, [0.0, 1.0]);
    assert_eq!(log.lock().max_offset(b"c").expect("c"), 1);
    assert_eq!(log.lock().max_offset(b"a").expect("a"), 1);
}

/// `Log::read_span_of` and `read_into` by handle: what `read` returns by name.
fn read_by_handle(log: &crate::log::LogHandle, handle: u32, from: u64, max: usize) -> Vec<u8> {
    let mut log = log.lock();
    let span = log.read_span_of(handle, from, max).expect("span");
    let mut out = vec![0u8; span.bytes];
    let name = log.handle_lmq(handle).expect("registered").to_vec();
    log.read_into(&name, &span, &mut out, |_, _| ()).expect("read");
    out
}

#[test]
fn reads_by_handle_follow_deletions_and_lmqs_made_after() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    log.lock().register_lmqs(&[b"a", b"later"]).expect("register");
    append_all(&log, &[message(&["a"], b"a0"), message(&["a"], b"a1")], 5);
    let by_name = |name: &str| log.lock().read(name.as_bytes(), 0, 10).expect("read").bytes;
    assert_eq!(read_by_handle(&log, 0, 0, 10), by_name("a"));
    // Read before its LMQ exists: nothing, and found once written.
    assert!(read_by_handle(&log, 1, 0, 10).is_empty());
    append_all(&log, &[message(&["later"], b"l0")], 6);
    assert_eq!(read_by_handle(&log, 1, 0, 10), by_name("later"));
    // `a` deleted, its queue id taken by `c`: `a`'s handle must not read `c`.
    append_all(&log, &[super::deletion("a"), message(&["c"], b"c0")], 7);
    assert!(read_by_handle(&log, 0, 0, 10).is_empty());
    append_all(&log, &[message(&["a"], b"again")], 8);
    assert_eq!(read_by_handle(&log, 0, 0, 10), by_name("a"));
    assert_eq!(log.lock().read(b"a", 0, 10).expect("read").positions.len(), 1);
    let unregistered = log.lock().read_span_of(2, 0, 10);
    assert!(
        matches!(unregistered, Err(LogError::InvalidArgument(_))),
        "{unregistered:?}"
    );
}

#[test]
fn a_bad_batch_stores_nothing() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    log.lock().register_lmqs(&[b"a"]).expect("register");
    let big = vec![0u8; 5000];
    for records in [
        vec![(0u32, &b"ok"[..]), (1, &b"unregistered"[..])],
        vec![(0, &b"ok"[..]), (0, &big[..])],
    ] {
        let (result, _, _) = append_bodies(&log, &records, 5);
        assert!(matches!(result, Err(LogError::InvalidArgument(_))), "{result:?}");
        assert_eq!(log.lock().lmq_count().expect("count"), 0);
    }
    for names in [&[&b""[..]][..], &[b"ok", b"a\0b"], &[&[0xff, 0xfe][..]]] {
        let result = log.lock().register_lmqs(names);
        assert!(matches!(result, Err(LogError::InvalidArgument(_))), "{names:?}");
    }
    // Nothing was registered by the refused calls: the next handle is 1.
    assert_eq!(log.lock().register_lmqs(&[b"next"]).expect("register"), 1);
}

#[test]
fn a_full_segment_stops_the_batch_at_a_record_and_it_goes_on_from_there() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    log.lock().register_lmqs(&[b"q"]).expect("register");
    let body = [7u8; 100];
    let records: Vec<(u32, &[u8])> = (0..100).map(|_| (0, &body[..])).collect();
    let bodies: Vec<u8> = records.iter().flat_map(|&(_, b)| b.iter().copied()).collect();
    let ends: Vec<u32> = (1..=100).map(|i| i * 100).collect();
    let handles = vec![0u32; 100];
    let (mut positions, mut offsets) = (vec![0.0; 100], vec![0.0; 100]);
    let mut from = 0;
    while from < 100 {
        let done = log
            .lock()
            .append_bodies(
                BodyBatch {
                    handles: &handles,
                    bodies: &bodies,
                    body_ends: &ends,
                },
                from..100,
                5,
                &mut positions,
                &mut offsets,
            )
            .expect("append");
        assert!(done > from || from == 0, "no progress from {from}");
        from = done;
        if from < 100 {
            log.prepare_segment(1).expect("prepare");
        }
    }
    assert_eq!(offsets, (0..100).map(f64::from).collect::<Vec<_>>());
    let read = log.lock().read(b"q", 0, 1000).expect("read");
    assert_eq!(read.positions, positions);
    assert!(log.lock().stats().expect("stats").segments > 2);
}

#[test]
fn sealing_a_run_gives_each_record_the_checksum_seal_gives_it() {
    let mut one_by_one = Vec::new();
    for (i, name) in ["a", "bb", "a-longer-name-for-the-lanes", "d", "e", "f", "g"]
        .iter()
        .enumerate()
    {
        let body = vec![i as u8; i * 37];
        one_by_one.extend(message(&[name], &body));
    }
    let mut run = one_by_one.clone();
    let mut at = 0;
    while at < one_by_one.len() {
        let size = u32::from_le_bytes(one_by_one[at + 4..at + 8].try_into().expect("size")) as usize;
        // `message` leaves the store time zero, as `seal_run` expects it set already.
        seal(&mut one_by_one[at..at + size], 0);
        at += size;
    }
    seal_run(&mut run);
    assert_eq!(run, one_by_one);
    assert!(check_stored(&run).is_ok());
}

#[test]
fn reading_bodies_gives_the_bodies_of_the_records_read_gives() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    append_all(
        &log,
        &[
            message(&["x", "q"], b"shared body"),
            message(&["q"], b""),
            message(&["q"], b"third"),
        ],
        5,
    );
    let read = log.lock().read(b"q", 0, 10).expect("read");
    let span = log.lock().read_span(b"q", 0, 10).expect("span");
    let mut bodies = vec![0u8; span.bytes];
    let mut seen = Vec::new();
    let used = log
        .lock()
        .read_bodies_into(b"q", &span, &mut bodies, |i, position, end| {
            seen.push((i, position as f64, end))
        })
        .expect("bodies");
    assert_eq!(&bodies[..used], b"shared bodythird");
    assert_eq!(
        seen,
        [
            (0, read.positions[0], 11),
            (1, read.positions[1], 11),
            (2, read.positions[2], 16)
        ]
    );
}

#[test]
fn a_batch_larger_than_a_write_part_is_stored_whole_across_a_roll_and_a_reopen() {
    let dir = TempDir::new();
    let segment_bytes = 1024 * 1024;
    let reopen = || {
        crate::log::LogHandle::open(
            &dir.0,
            crate::log::LogOptions::new(segment_bytes, 1),
            std::sync::Arc::new(crate::log::RealStorage),
        )
        .expect("open")
    };
    let log = reopen();
    log.lock().register_lmqs(&[b"a", b"b"]).expect("register");
    // 1,500 records of 1 KiB each: more than a segment, several times the bytes written at once.
    let bodies: Vec<Vec<u8>> = (0..1500u32)
        .map(|i| (0..1024).map(|k| (i * 7 + k) as u8).collect())
        .collect();
    let records: Vec<(u32, &[u8])> = bodies
        .iter()
        .enumerate()
        .map(|(i, body)| (u32::from(i % 3 == 0), &body[..]))
        .collect();
    let handles: Vec<u32> = records.iter().map(|&(h, _)| h).collect();
    let flat: Vec<u8> = bodies.concat();
    let ends: Vec<u32> = (1..=1500).map(|i| i * 1024).collect();
    let (mut positions, mut offsets) = (vec![0.0; 1500], vec![0.0; 1500]);
    let mut from = 0;
    while from < 1500 {
        let batch = BodyBatch {
            handles: &handles,
            bodies: &flat,
            body_ends: &ends,
        };
        from = log
            .lock()
            .append_bodies(batch, from..1500, 5, &mut positions, &mut offsets)
            .expect("append");
        if from < 1500 {
            log.prepare_segment(1).expect("prepare");
        }
    }
    let expect = |log: &crate::log::LogHandle| {
        for (handle, name) in [(0u32, "a"), (1, "b")] {
            let mine: Vec<usize> = (0..1500).filter(|&i| handles[i] == handle).collect();
            let read = super::read_all(log, name);
            assert_eq!(read.len(), mine.len(), "{name}");
            for (k, (&i, (offset, position, body))) in mine.iter().zip(read).enumerate() {
                assert_eq!(offset, k as u64);
                assert_eq!(offsets[i], k as f64);
                assert_eq!(position as f64, positions[i]);
                assert_eq!(body, bodies[i], "record {i}");
            }
        }
    };
    expect(&log);
    assert!(log.lock().stats().expect("stats").segments >= 2);
    log.close().expect("close");
    expect(&reopen());
}

#[test]
fn a_record_far_larger_than_a_write_part_leaves_no_buffer_of_its_size_behind() {
    let dir = TempDir::new();
    let log = crate::log::LogHandle::open(
        &dir.0,
        crate::log::LogOptions::new(8 * 1024 * 1024, 1),
        std::sync::Arc::new(crate::log::RealStorage),
    )
    .expect("open");
    log.lock().register_lmqs(&[b"a"]).expect("register");
    let big = vec![7u8; 3 * 1024 * 1024];
    let (result, _, _) = append_bodies(&log, &[(0, b"small"), (0, &big), (0, b"after")], 5);
    assert_eq!(result.expect("append"), 3);
    // The 3 MiB record was framed in the write buffer; the buffer is not kept at that size.
    assert!(
        log.lock().framed.capacity() <= 1024 * 1024,
        "{}",
        log.lock().framed.capacity()
    );
    // Batches of parts' size keep theirs: the buffer is reused, not made again per call.
    let bodies: Vec<Vec<u8>> = (0..600u32).map(|i| vec![i as u8; 1024]).collect();
    let records: Vec<(u32, &[u8])> = bodies.iter().map(|b| (0, &b[..])).collect();
    let (result, _, _) = append_bodies(&log, &records, 5);
    assert_eq!(result.expect("append"), 600);
    let kept = log.lock().framed.capacity();
    assert!(kept >= 256 * 1024, "{kept}");
    let read = super::read_all(&log, "a");
    assert_eq!(read.len(), 603);
    assert_eq!(read[1].2, big);
    assert_eq!(read[602].2, vec![87u8; 1024]);
}
