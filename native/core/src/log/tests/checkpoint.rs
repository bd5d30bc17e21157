//! The checkpoint: LMQs stay in the checkpoint file until used, blocks are copied into the next
//! checkpoint, a bad block fails its LMQ only (or, met during replay, the checkpoint), replay
//! appends after blocks it does not read, and a version 1 file is refused.

use super::*;
use crate::log::checkpoint::{self, CHECKPOINT_FILE};
use crate::log::{CheckpointState, LogError};
use crate::queue::CheckpointFile;
use std::fs;

fn workload(i: usize) -> Vec<u8> {
    let name = format!("lmq-{}", i % 7);
    message(&[&name, "all"], format!("message {i}").as_bytes())
}

/// Every LMQ's (min, max, records read back as (offset, position, body)).
type Contents = Vec<(u64, u64, Vec<(u64, u64, Vec<u8>)>)>;

fn names() -> Vec<String> {
    let mut names: Vec<String> = (0..7).map(|i| format!("lmq-{i}")).collect();
    names.push("all".into());
    names
}

fn contents(log: &LogHandle) -> Contents {
    names()
        .iter()
        .map(|name| {
            let (min, max) = {
                let guard = log.lock();
                (
                    guard.min_offset(name.as_bytes()).expect("min"),
                    guard.max_offset(name.as_bytes()).expect("max"),
                )
            };
            (min, max, read_all(log, name))
        })
        .collect()
}

fn stored(log: &LogHandle, name: &str) -> bool {
    stored_file(log, name).is_some()
}

/// The checkpoint file holding `name`'s entries, while they are still there.
fn stored_file(log: &LogHandle, name: &str) -> Option<*const CheckpointFile> {
    log.lock()
        .queues
        .get(name.as_bytes())
        .and_then(|q| q.stored().map(|s| Arc::as_ptr(&s.file)))
}

/// A log of 200 records with a checkpoint of them, closed; returns what it held.
fn checkpointed(dir: &TempDir) -> Contents {
    let log = open(&dir.0);
    append_all(&log, &(0..200).map(workload).collect::<Vec<_>>(), 10);
    log.checkpoint(11).expect("checkpoint");
    let before = contents(&log);
    log.close().expect("close");
    before
}

/// Where the entry block of `name` starts in the checkpoint file.
fn block_at(dir: &TempDir, name: &str) -> usize {
    let path = dir.0.join(CHECKPOINT_FILE);
    let file = fs::File::open(&path).expect("open");
    // SAFETY: the test owns the directory; nothing changes the file while it is mapped.
    let map = unsafe { memmap2::Mmap::map(&file) }.expect("map");
    let mapped = Arc::new(CheckpointFile { path, map });
    let decoded = checkpoint::decode(&mapped).expect("decode");
    decoded
        .queues
        .get(name.as_bytes())
        .and_then(|q| q.stored())
        .expect("stored")
        .at
}

fn flip(dir: &TempDir, at: usize) {
    let path = dir.0.join(CHECKPOINT_FILE);
    let mut bytes = fs::read(&path).expect("read");
    bytes[at] ^= 0x40;
    fs::write(&path, &bytes).expect("write");
}

#[test]
fn a_reopen_leaves_queues_in_the_checkpoint_until_they_are_used() {
    let dir = TempDir::new();
    let before = checkpointed(&dir);
    let log = open(&dir.0);
    let stats = log.lock().stats().expect("stats");
    assert_eq!(
        (stats.recovery.checkpoint, stats.recovery.replayed_records),
        (CheckpointState::Loaded, 0)
    );
    assert_eq!(stats.index_entries, 400);
    assert!(names().iter().all(|name| stored(&log, name)));
    // Offsets and summaries come from the directory, without reading any block.
    let summaries = log.lock().lmq_summaries(b"lmq-").expect("summaries");
    assert_eq!(summaries.len(), 7);
    let counts: Vec<u64> = summaries.iter().map(|s| s.next_offset - s.min_offset).collect();
    assert_eq!(counts, [29, 29, 29, 29, 28, 28, 28]);
    assert!(names().iter().all(|name| stored(&log, name)));
    assert_eq!(read_all(&log, "lmq-4").len(), 28);
    assert!(!stored(&log, "lmq-4") && stored(&log, "lmq-5"));
    assert_eq!(contents(&log), before);
}

#[test]
fn a_checkpoint_copies_the_blocks_of_stored_queues_and_moves_them_to_the_new_file() {
    let dir = TempDir::new();
    let before = checkpointed(&dir);
    let log = open(&dir.0);
    let file_before = stored_file(&log, "lmq-1");
    append_all(&log, &[message(&["lmq-0"], b"after")], 20);
    log.checkpoint(21).expect("checkpoint");
    let moved = stored_file(&log, "lmq-1");
    assert!(
        moved.is_some() && moved != file_before,
        "still in the replaced file"
    );
    assert!(!stored(&log, "lmq-0"));
    assert_eq!(read_all(&log, "lmq-1"), before[1].2);
    log.close().expect("close");

    let log = open(&dir.0);
    assert_eq!(log.lock().stats().expect("stats").recovery.replayed_records, 0);
    let mut expected = before.clone();
    let last = expected[0].2.last().map(|r| r.1).expect("record");
    let read = read_all(&log, "lmq-0");
    assert!(read.last().is_some_and(|r| r.1 > last && r.2 == b"after"));
    expected[0].1 += 1;
    expected[0].2.push(read.last().cloned().expect("record"));
    assert_eq!(contents(&log), expected);
}

#[test]
fn a_version_1_checkpoint_is_refused_and_left_as_it_is() {
    let dir = TempDir::new();
    checkpointed(&dir);
    // Version 1 was never released: its magic and version, whatever follows, are refused.
    let path = dir.0.join(CHECKPOINT_FILE);
    let mut bytes = fs::read(&path).expect("read");
    bytes[..12].copy_from_slice(b"LTCKPT01\x01\0\0\0");
    fs::write(&path, &bytes).expect("write");
    let before = files_of(&dir.0);
    let refused = open_with(&dir.0, Arc::new(RealStorage));
    assert!(
        matches!(refused, Err(LogError::UnsupportedFormat { version: 1, .. })),
        "{:?}",
        refused.err()
    );
    assert_eq!(files_of(&dir.0), before);
}

#[test]
fn a_bad_block_fails_the_reads_and_appends_of_its_lmq_only() {
    let dir = TempDir::new();
    let before = checkpointed(&dir);
    flip(&dir, block_at(&dir, "lmq-2") + 9);
    let log = open(&dir.0);
    assert_eq!(
        log.lock().stats().expect("stats").recovery.checkpoint,
        CheckpointState::Loaded
    );
    assert!(matches!(
        log.lock().read(b"lmq-2", 0, 10),
        Err(LogError::Corrupt { .. })
    ));
    let end = log.lock().write_position().expect("position");
    let mut positions = [0.0];
    let mut offsets = [0.0];
    let mut record = message(&["lmq-2"], b"x");
    let failed = log
        .lock()
        .append(&mut record, 1, 30, &mut positions, &mut offsets);
    assert!(matches!(failed, Err(LogError::Corrupt { .. })), "{failed:?}");
    assert_eq!(
        log.lock().write_position(),
        Ok(end),
        "nothing of the batch is written"
    );
    assert_eq!(read_all(&log, "lmq-3"), before[3].2);
    append_all(&log, &[message(&["lmq-3"], b"y")], 30);
}

#[test]
fn a_bad_block_met_while_replaying_the_log_drops_the_checkpoint() {
    let dir = TempDir::new();
    let mut before = checkpointed(&dir);
    // A record after the checkpoint's position for lmq-2: replaying it needs lmq-2's block.
    let log = open(&dir.0);
    append_all(&log, &[message(&["lmq-2"], b"z")], 40);
    let expected_tail = read_all(&log, "lmq-2");
    log.close().expect("close");
    flip(&dir, block_at(&dir, "lmq-2") + 9);
    let log = open(&dir.0);
    let recovery = log.lock().stats().expect("stats").recovery;
    assert_eq!(
        (recovery.checkpoint, recovery.replayed_records),
        (CheckpointState::Invalid, 201)
    );
    assert!(!dir.0.join(CHECKPOINT_FILE).exists());
    before[2].1 += 1;
    before[2].2 = expected_tail;
    assert_eq!(contents(&log), before);
}

#[test]
fn replay_leaves_queues_in_the_checkpoint_and_a_checkpoint_keeps_what_was_replayed() {
    let dir = TempDir::new();
    checkpointed(&dir);
    // Records after the checkpoint's position for lmq-2 and lmq-3, never checkpointed.
    let log = open(&dir.0);
    append_all(
        &log,
        &[message(&["lmq-2", "lmq-3"], b"y"), message(&["lmq-2"], b"z")],
        40,
    );
    let expected = contents(&log);
    log.close().expect("close");
    let log = open(&dir.0);
    let recovery = log.lock().stats().expect("stats").recovery;
    assert_eq!(
        (recovery.checkpoint, recovery.replayed_records),
        (CheckpointState::Loaded, 2)
    );
    // Replay appended after their blocks without reading them; the offsets are already right.
    assert!(stored(&log, "lmq-2") && stored(&log, "lmq-3"));
    assert_eq!(log.lock().max_offset(b"lmq-2").expect("max"), expected[2].1);
    // A checkpoint now writes each block with the entries replayed after it.
    log.checkpoint(50).expect("checkpoint");
    assert_eq!(contents(&log), expected);
    log.close().expect("close");
    let log = open(&dir.0);
    let recovery = log.lock().stats().expect("stats").recovery;
    assert_eq!(
        (recovery.checkpoint, recovery.replayed_records),
        (CheckpointState::Loaded, 0)
    );
    assert_eq!(contents(&log), expected);
}

#[test]
fn a_damaged_directory_makes_the_checkpoint_invalid() {
    let dir = TempDir::new();
    let before = checkpointed(&dir);
    flip(&dir, checkpoint::HEADER_BYTES + 40);
    let log = open(&dir.0);
    let recovery = log.lock().stats().expect("stats").recovery;
    assert_eq!(
        (recovery.checkpoint, recovery.replayed_records),
        (CheckpointState::Invalid, 200)
    );
    assert_eq!(contents(&log), before);
}
