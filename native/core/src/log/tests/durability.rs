//! Sync, injected faults, retention.

use super::*;
use crate::log::storage::FaultyStorage;
use crate::log::LogError;
use std::sync::atomic::Ordering;

#[test]
fn sync_makes_the_write_position_durable() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    append_all(
        &log,
        &(0..50)
            .map(|i| message(&["q"], &[i as u8; 200]))
            .collect::<Vec<_>>(),
        1,
    );
    let write_position = log.lock().write_position().expect("position");
    assert!(log.lock().durable_position() < write_position);
    assert_eq!(log.sync(), Ok(write_position));
    assert_eq!(
        log.lock().stats().expect("stats").durable_position,
        write_position
    );
}

/// A log on storage that can fail, holding one record ("one" in LMQ `q`).
fn faulty_log_with_one_record(dir: &TempDir) -> (LogHandle, Arc<FaultyStorage>) {
    let storage = Arc::new(FaultyStorage::default());
    let log = open_with(&dir.0, storage.clone()).expect("open");
    append_all(&log, &[message(&["q"], b"one")], 1);
    (log, storage)
}

fn assert_eio<T: std::fmt::Debug>(result: &Result<T, LogError>) {
    assert!(
        matches!(result, Err(LogError::Io { errno: Some(errno), .. }) if errno == "EIO"),
        "{result:?}"
    );
}

/// Reopens a failed log's directory as the next process would (this one's lock is still there).
fn reopen_after_failure(dir: &TempDir, log: LogHandle) -> LogHandle {
    drop(log);
    std::fs::remove_file(dir.0.join("LOCK")).expect("unlock");
    open(&dir.0)
}

#[test]
fn a_failed_sync_fails_the_log_until_reopened() {
    let dir = TempDir::new();
    let (log, storage) = faulty_log_with_one_record(&dir);
    storage.fail_syncs.store(true, Ordering::SeqCst);
    let failed = log.sync();
    assert_eio(&failed);
    assert_eq!(
        log.lock().durable_position(),
        64,
        "nothing claims durability it lacks"
    );
    storage.fail_syncs.store(false, Ordering::SeqCst);
    let (mut positions, mut offsets) = (vec![0.0], vec![0.0]);
    let later = log
        .lock()
        .append(&mut message(&["q"], b"two"), 1, 1, &mut positions, &mut offsets);
    assert_eq!(later.err(), failed.clone().err());
    assert_eq!(log.lock().read(b"q", 0, 1).err(), failed.err());
    let log = reopen_after_failure(&dir, log);
    assert_eq!(read_all(&log, "q").len(), 1);
}

#[test]
fn a_torn_write_fails_the_append_and_the_log_and_the_reopen_cuts_the_torn_record() {
    let dir = TempDir::new();
    let (log, storage) = faulty_log_with_one_record(&dir);
    storage.tear_writes.store(true, Ordering::SeqCst);
    let mut batch = [message(&["q"], &[7; 300]), message(&["q"], &[8; 300])].concat();
    let (mut positions, mut offsets) = (vec![0.0; 2], vec![0.0; 2]);
    let failed = log.lock().append(&mut batch, 2, 1, &mut positions, &mut offsets);
    assert_eio(&failed);
    storage.tear_writes.store(false, Ordering::SeqCst);
    // The index already named the torn records: the log refuses everything until reopened.
    assert_eq!(log.lock().read(b"q", 0, 1).err(), failed.clone().err());
    assert_eq!(log.sync().err(), failed.err());
    let log = reopen_after_failure(&dir, log);
    let records = read_all(&log, "q");
    assert_eq!(records.len(), 1, "the torn record is cut");
    assert_eq!(records[0].2, b"one");
    let one_ends = records[0].1 + message(&["q"], b"one").len() as u64;
    assert_eq!(
        log.lock().stats().expect("stats").recovery.cut_position,
        Some(one_ends)
    );
}

#[test]
fn a_failed_segment_creation_is_an_error_and_leaves_the_log_usable() {
    let dir = TempDir::new();
    let storage = Arc::new(FaultyStorage::default());
    let log = open_with(&dir.0, storage.clone()).expect("open");
    storage.fail_creates.store(true, Ordering::SeqCst);
    assert!(matches!(log.prepare_segment(1), Err(LogError::Io { .. })));
    assert!(!log.lock().stats().expect("stats").spare_ready);
    storage.fail_creates.store(false, Ordering::SeqCst);
    log.prepare_segment(1).expect("prepare");
    append_all(&log, &[message(&["q"], b"one")], 1);
    assert_eq!(dir.segments().len(), 2);
}

#[test]
fn a_failed_checkpoint_sync_fails_the_log() {
    let dir = TempDir::new();
    let storage = Arc::new(FaultyStorage::default());
    let log = open_with(&dir.0, storage.clone()).expect("open");
    append_all(&log, &[message(&["q"], b"one")], 1);
    storage.fail_syncs.store(true, Ordering::SeqCst);
    assert!(matches!(log.checkpoint(2), Err(LogError::Io { .. })));
    assert!(matches!(log.lock().lmq_count(), Err(LogError::Io { .. })));
}

#[test]
fn a_checkpoint_that_cannot_be_written_leaves_the_log_usable() {
    let dir = TempDir::new();
    let storage = Arc::new(FaultyStorage::default());
    let log = open_with(&dir.0, storage.clone()).expect("open");
    append_all(&log, &[message(&["q"], b"one")], 1);
    storage.fail_creates.store(true, Ordering::SeqCst);
    assert!(matches!(log.checkpoint(2), Err(LogError::Io { .. })));
    storage.fail_creates.store(false, Ordering::SeqCst);
    append_all(&log, &[message(&["q"], b"two")], 3);
    assert_eq!(log.lock().lmq_count().expect("usable"), 1);
    log.checkpoint(4).expect("checkpoint");
}

#[test]
fn retention_by_age_and_size_moves_minimum_offsets_and_keeps_the_active_segment() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    let batch = |from: u64| {
        (from..from + 20)
            .map(|i| message(&["q"], &[i as u8; 300]))
            .collect::<Vec<_>>()
    };
    let old = append_all(&log, &batch(0), 1_000);
    let new = append_all(&log, &batch(20), 2_000);
    let segments = dir.segments().len();
    // By age: the segments holding only the first batch.
    let (removed, bytes) = log.retain(Some(1_500), None).expect("retain");
    let first_new_segment = new[0].0 / SMALL_SEGMENT_BYTES;
    assert_eq!(removed as u64, first_new_segment);
    assert_eq!(bytes, removed as u64 * SMALL_SEGMENT_BYTES);
    assert_eq!(dir.segments().len(), segments - removed);
    let min = log.lock().min_offset(b"q").expect("min");
    let kept_old = old
        .iter()
        .filter(|w| w.0 >= first_new_segment * SMALL_SEGMENT_BYTES)
        .count() as u64;
    assert_eq!(min, 20 - kept_old);
    assert_eq!(read_all(&log, "q").first().map(|r| r.0), Some(min));
    // By size: down to one segment, never the active one.
    log.retain(None, Some(0)).expect("retain");
    assert_eq!(dir.segments().len(), 1);
    let write_position = log.lock().write_position().expect("position");
    assert_eq!(
        dir.segments()[0],
        dir.0
            .join("segments")
            .join(crate::log::segment::segment_file_name(
                write_position / SMALL_SEGMENT_BYTES * SMALL_SEGMENT_BYTES
            ))
    );
    assert_eq!(log.lock().max_offset(b"q"), Ok(40));
    log.close().expect("close");
    // The retained state survives a reopen: offsets continue.
    let log = open(&dir.0);
    let min = log.lock().min_offset(b"q").expect("min");
    assert!(min > 20, "{min}");
    assert_eq!(log.lock().max_offset(b"q"), Ok(40));
}
