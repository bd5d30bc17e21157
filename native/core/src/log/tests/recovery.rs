//! Reopening: with and without a checkpoint, torn and corrupt tails, bad headers, versions, locks.

use super::*;
use crate::log::{CheckpointState, LogError};
use std::fs;

/// Every queue's (name, min, next, records read back), sorted by name.
type Snapshot = Vec<(Vec<u8>, u64, u64, Vec<(u64, u64, Vec<u8>)>)>;

fn snapshot(log: &LogHandle) -> Snapshot {
    let names = log.lock().list_lmqs(b"", None, usize::MAX).expect("list").names;
    names
        .iter()
        .map(|name| {
            let text = std::str::from_utf8(name).expect("utf-8");
            let guard = log.lock();
            let (min, max) = (
                guard.min_offset(name).expect("min"),
                guard.max_offset(name).expect("max"),
            );
            drop(guard);
            (name.to_vec(), min, max, read_all(log, text))
        })
        .collect()
}

fn workload(i: usize) -> Vec<u8> {
    let name = format!("lmq-{}", i % 7);
    message(&[&name, "all"], format!("message {i}").as_bytes())
}

#[test]
fn reopening_with_or_without_a_checkpoint_gives_the_same_queues() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    append_all(&log, &(0..200).map(workload).collect::<Vec<_>>(), 10);
    log.checkpoint(11).expect("checkpoint");
    append_all(&log, &(200..260).map(workload).collect::<Vec<_>>(), 12);
    append_all(&log, &[deletion("lmq-3")], 12);
    let before = snapshot(&log);
    log.close().expect("close");

    let log = open(&dir.0);
    let recovery = log.lock().stats().expect("stats").recovery;
    assert_eq!(recovery.checkpoint, CheckpointState::Loaded);
    assert!(
        recovery.replayed_records < 100,
        "replayed {} records",
        recovery.replayed_records
    );
    assert_eq!(recovery.cut_position, None);
    assert_eq!(snapshot(&log), before);
    log.close().expect("close");

    fs::remove_file(dir.0.join("checkpoint")).expect("remove checkpoint");
    let log = open(&dir.0);
    let recovery = log.lock().stats().expect("stats").recovery;
    assert_eq!(
        (recovery.checkpoint, recovery.replayed_records),
        (CheckpointState::None, 261)
    );
    assert_eq!(snapshot(&log), before);
    log.close().expect("close");

    fs::write(dir.0.join("checkpoint"), b"LTCKPT01 but torn").expect("write");
    let log = open(&dir.0);
    assert_eq!(
        log.lock().stats().expect("stats").recovery.checkpoint,
        CheckpointState::Invalid
    );
    assert_eq!(snapshot(&log), before);
}

/// Appends 100 records, closes, damages the file with `damage`, reopens; returns the log, the
/// positions written and what the first open saw.
fn damaged(dir: &TempDir, damage: impl Fn(&Written)) -> (LogHandle, Written) {
    let log = open(&dir.0);
    let written = append_all(&log, &(0..100).map(workload).collect::<Vec<_>>(), 10);
    log.close().expect("close");
    damage(&written);
    (open(&dir.0), written)
}

fn segment_of(dir: &TempDir, position: u64) -> (std::path::PathBuf, usize) {
    let base = position / SMALL_SEGMENT_BYTES * SMALL_SEGMENT_BYTES;
    (
        dir.0
            .join("segments")
            .join(crate::log::segment::segment_file_name(base)),
        (position - base) as usize,
    )
}

#[test]
fn a_torn_tail_is_cut_at_the_torn_record() {
    let dir = TempDir::new();
    let (log, written) = damaged(&dir, |written| {
        let (path, at) = segment_of(&dir, written[99].0);
        let mut bytes = fs::read(&path).expect("read");
        bytes[at + 20..].fill(0);
        fs::write(&path, bytes).expect("write");
    });
    let stats = log.lock().stats().expect("stats");
    assert_eq!(stats.recovery.cut_position, Some(written[99].0));
    assert_eq!(stats.write_position, written[99].0);
    assert_eq!(read_all(&log, "all").len(), 99);
    // Writing goes on where the log was cut.
    let more = append_all(&log, &[workload(100)], 20);
    assert_eq!(more[0], (written[99].0, vec![14, 99]));
}

#[test]
fn a_flipped_byte_before_valid_records_is_refused_and_a_repair_cuts_there() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    let written = append_all(&log, &(0..100).map(workload).collect::<Vec<_>>(), 10);
    // Dropped without a close: no checkpoint vouches for the records, as after a crash.
    drop(log);
    fs::remove_file(dir.0.join("LOCK")).expect("unlock");
    let (path, at) = segment_of(&dir, written[30].0);
    let mut bytes = fs::read(&path).expect("read");
    bytes[at + 40] ^= 0x10;
    fs::write(&path, bytes).expect("write");
    let before = files_of(&dir.0);
    let refused = open_as(&dir.0, false, false).err();
    match &refused {
        Some(LogError::Corrupt {
            file: Some(file),
            position: Some(position),
            ..
        }) => assert_eq!(
            (file.as_str(), *position),
            (path.to_str().expect("utf-8"), written[30].0)
        ),
        other => panic!("expected LOG_CORRUPT, got {other:?}"),
    }
    assert_eq!(files_of(&dir.0), before, "a refused open changes nothing");

    let read_only = open_as(&dir.0, true, false).expect("read-only open");
    let recovery = read_only.lock().stats().expect("stats").recovery;
    assert!(recovery.read_only);
    assert_eq!(recovery.corruption.map(|c| c.position), Some(written[30].0));
    assert_eq!(recovery.cut_position, None);
    assert_eq!(read_all(&read_only, "all").len(), 30);
    assert!(matches!(
        read_only
            .lock()
            .append(&mut message(&["x"], b"x"), 1, 1, &mut [0.0], &mut [0.0]),
        Err(LogError::ReadOnly)
    ));
    assert!(matches!(read_only.checkpoint(2), Err(LogError::ReadOnly)));
    assert!(matches!(read_only.prepare_segment(2), Err(LogError::ReadOnly)));
    assert!(matches!(
        read_only.retain(Some(u64::MAX), None),
        Err(LogError::ReadOnly)
    ));
    read_only.close().expect("close");
    assert_eq!(files_of(&dir.0), before, "a read-only open changes nothing");

    let segments_before = dir.segments().len() as u32;
    let repaired = open_as(&dir.0, false, true).expect("repair");
    let recovery = repaired.lock().stats().expect("stats").recovery;
    let cut_segment = (written[30].0 / SMALL_SEGMENT_BYTES) as u32;
    assert_eq!(recovery.cut_position, Some(written[30].0));
    assert_eq!(recovery.corruption.map(|c| c.position), Some(written[30].0));
    assert_eq!(recovery.removed_segments, segments_before - cut_segment - 1);
    assert_eq!(recovery.removed_files.len() as u32, recovery.removed_segments);
    assert_eq!(dir.segments().len() as u32, cut_segment + 1);
    let all = read_all(&repaired, "all");
    assert_eq!(all.len(), 30);
    assert!(all.iter().zip(&written).all(|(read, w)| read.1 == w.0));
}

#[test]
fn a_torn_tail_after_a_lost_sector_is_cut_even_with_valid_records_after_it() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    let written = append_all(&log, &(0..40).map(workload).collect::<Vec<_>>(), 10);
    drop(log);
    fs::remove_file(dir.0.join("LOCK")).expect("unlock");
    // A power loss with pages written back out of order: the sector holding the end of one record
    // never reached the disk (zeros), the sectors after it did.
    let victim = (5..15)
        .find(|&i| {
            let (start, end) = (written[i].0, written[i + 1].0);
            start / 512 != (end - 1) / 512 && start / SMALL_SEGMENT_BYTES == (end + 600) / SMALL_SEGMENT_BYTES
        })
        .expect("a record crossing a sector boundary");
    let (path, at) = segment_of(&dir, written[victim].0);
    let mut bytes = fs::read(&path).expect("read");
    let sector = (at / 512 + 1) * 512;
    bytes[sector..sector + 512].fill(0);
    fs::write(&path, bytes).expect("write");
    let log = open(&dir.0);
    assert_eq!(
        log.lock().stats().expect("stats").recovery.cut_position,
        Some(written[victim].0)
    );
    assert_eq!(read_all(&log, "all").len(), victim);
}

#[test]
fn a_bad_record_before_the_checkpoint_position_is_refused_and_the_checkpoint_kept() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    let written = append_all(&log, &(0..100).map(workload).collect::<Vec<_>>(), 10);
    log.checkpoint(11).expect("checkpoint");
    log.close().expect("close");
    // The checkpoint's directory fails its check (the full log is replayed), and the last record
    // before its position is torn as a crash would leave a tail: the position shows it was durable.
    let checkpoint = dir.0.join("checkpoint");
    let mut bytes = fs::read(&checkpoint).expect("read");
    bytes[70] ^= 0x01;
    fs::write(&checkpoint, bytes).expect("write");
    let (path, at) = segment_of(&dir, written[99].0);
    let mut bytes = fs::read(&path).expect("read");
    bytes[at + 20..at + 40].fill(0);
    fs::write(&path, bytes).expect("write");
    let before = files_of(&dir.0);
    assert!(matches!(
        open_as(&dir.0, false, false),
        Err(LogError::Corrupt { position: Some(p), .. }) if p == written[99].0
    ));
    assert_eq!(files_of(&dir.0), before);
    let repaired = open_as(&dir.0, false, true).expect("repair");
    let recovery = repaired.lock().stats().expect("stats").recovery;
    assert_eq!(recovery.checkpoint, CheckpointState::Invalid);
    assert_eq!(recovery.cut_position, Some(written[99].0));
    assert!(
        !checkpoint.exists(),
        "the unusable checkpoint goes once recovery succeeded"
    );
    assert_eq!(read_all(&repaired, "all").len(), 99);
}

#[test]
fn an_invalid_header_on_a_segment_with_records_is_refused_and_kept() {
    for which in ["last", "first"] {
        let dir = TempDir::new();
        let log = open(&dir.0);
        let written = append_all(&log, &(0..100).map(workload).collect::<Vec<_>>(), 10);
        drop(log);
        fs::remove_file(dir.0.join("LOCK")).expect("unlock");
        let segments = dir.segments();
        let target = if which == "last" {
            segment_of(&dir, written[99].0).0
        } else {
            segments[0].clone()
        };
        let mut bytes = fs::read(&target).expect("read");
        bytes[20] ^= 1;
        fs::write(&target, &bytes).expect("write");
        let before = files_of(&dir.0);
        match open_as(&dir.0, false, false) {
            Err(LogError::Corrupt { file: Some(file), .. }) => {
                assert_eq!(file, target.display().to_string(), "{which}")
            }
            other => panic!("{which}: expected LOG_CORRUPT, got {:?}", other.err()),
        }
        assert_eq!(files_of(&dir.0), before, "{which}: nothing deleted");
        let repaired = open_as(&dir.0, false, true).expect("repair");
        let recovery = repaired.lock().stats().expect("stats").recovery;
        assert!(recovery.removed_files.contains(&target.display().to_string()));
        let kept = written
            .iter()
            .filter(|w| segment_of(&dir, w.0).0 < target)
            .count();
        assert_eq!(read_all(&repaired, "all").len(), kept, "{which}");
    }
}

#[test]
fn an_invalid_last_header_is_removed_and_an_earlier_one_is_corrupt() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    append_all(&log, &(0..100).map(workload).collect::<Vec<_>>(), 10);
    log.prepare_segment(1)
        .expect("prepare a spare that the close leaves behind");
    drop(log);
    let segments = dir.segments();
    let last = segments.last().expect("segments").clone();
    let mut bytes = fs::read(&last).expect("read");
    bytes[20] ^= 1;
    fs::write(&last, &bytes).expect("write");
    fs::remove_file(dir.0.join("LOCK")).expect("unlock");
    let log = open(&dir.0);
    assert_eq!(log.lock().stats().expect("stats").recovery.removed_segments, 1);
    assert_eq!(read_all(&log, "all").len(), 100);
    log.close().expect("close");

    let first = &dir.segments()[0];
    let mut bytes = fs::read(first).expect("read");
    bytes[20] ^= 1;
    fs::write(first, &bytes).expect("write");
    assert!(matches!(
        open_with(&dir.0, Arc::new(RealStorage)),
        Err(LogError::Corrupt { .. })
    ));
}

#[test]
fn unknown_versions_are_refused() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    append_all(&log, &[workload(0)], 1);
    log.checkpoint(2).expect("checkpoint");
    log.close().expect("close");
    let path = dir.0.join("checkpoint");
    let mut bytes = fs::read(&path).expect("read");
    bytes[8] = 3;
    fs::write(&path, &bytes).expect("write");
    let refused = open_with(&dir.0, Arc::new(RealStorage));
    assert!(
        matches!(refused, Err(LogError::UnsupportedFormat { version: 3, .. })),
        "{:?}",
        refused.err()
    );
    fs::remove_file(&path).expect("remove");

    let first = &dir.segments()[0];
    let mut bytes = fs::read(first).expect("read");
    bytes[8] = 9;
    fs::write(first, &bytes).expect("write");
    let refused = open_with(&dir.0, Arc::new(RealStorage));
    assert!(
        matches!(refused, Err(LogError::UnsupportedFormat { version: 9, .. })),
        "{:?}",
        refused.err()
    );
}

#[test]
fn a_held_lock_refuses_and_a_stale_one_is_taken_over() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    let second = open_with(&dir.0, Arc::new(RealStorage));
    assert!(matches!(second, Err(LogError::Locked { pid: Some(pid), .. }) if pid == std::process::id()));
    log.close().expect("close");
    assert!(!dir.0.join("LOCK").exists());

    let mut child = std::process::Command::new("true").spawn().expect("spawn");
    let dead = child.id();
    child.wait().expect("wait");
    fs::write(
        dir.0.join("LOCK"),
        format!("{{\"pid\":{dead},\"engine\":\"js\",\"createdMs\":1}}\n"),
    )
    .expect("write");
    let log = open(&dir.0);
    let lock = fs::read_to_string(dir.0.join("LOCK")).expect("read");
    assert!(
        lock.contains(&format!("\"pid\":{}", std::process::id())),
        "{lock}"
    );
    log.close().expect("close");
}

#[test]
fn a_read_only_open_beside_a_live_writer_reads_and_takes_nothing() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    append_all(&log, &(0..50).map(workload).collect::<Vec<_>>(), 10);
    let lock = fs::read(dir.0.join("LOCK")).expect("lock");
    let reader = open_as(&dir.0, true, false).expect("read-only open beside the writer");
    assert_eq!(read_all(&reader, "all").len(), 50);
    reader.close().expect("close");
    assert_eq!(fs::read(dir.0.join("LOCK")).expect("lock"), lock);
    append_all(&log, &[workload(50)], 11);
    assert_eq!(read_all(&log, "all").len(), 51);
    log.close().expect("close");
}

#[test]
fn an_empty_segment_the_checkpoint_points_into_is_not_taken_for_a_half_prepared_one() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    let written = append_all(&log, &(0..100).map(workload).collect::<Vec<_>>(), 10);
    log.checkpoint(11).expect("checkpoint");
    log.close().expect("close");
    // The last segment loses its header and records: zeros after an invalid header, as a segment
    // being prepared would be, but the checkpoint's position is inside it.
    let (path, _) = segment_of(&dir, written[99].0);
    let mut bytes = fs::read(&path).expect("read");
    bytes[64..].fill(0);
    bytes[20] ^= 1;
    fs::write(&path, &bytes).expect("write");
    let before = files_of(&dir.0);
    assert!(matches!(
        open_as(&dir.0, false, false),
        Err(LogError::Corrupt { file: Some(file), .. }) if file == path.display().to_string()
    ));
    assert_eq!(files_of(&dir.0), before);
}
