//! A log on `MemoryStorage`: the same appends, rolls, reads and retention as on disk, nothing on
//! any file system, no lock, and each storage its own.

use super::*;
use crate::log::MemoryStorage;

fn open_in_memory(name: &Path) -> LogHandle {
    open_with(name, Arc::new(MemoryStorage::new())).expect("open in memory")
}

#[test]
fn a_log_in_memory_appends_rolls_reads_and_retains_without_touching_the_file_system() {
    // A path that names a real, empty directory: nothing may appear in it.
    let dir = TempDir::new();
    std::fs::create_dir_all(&dir.0).expect("dir");
    let log = open_in_memory(&dir.0);
    let records: Vec<Vec<u8>> = (0..300u32)
        .map(|i| {
            message(
                &["q", if i % 3 == 0 { "third" } else { "rest" }],
                format!("m{i}").as_bytes(),
            )
        })
        .collect();
    let written = append_all(&log, &records, 100);
    for (i, (_, offsets)) in written.iter().enumerate() {
        assert_eq!(offsets[0], i as u64);
    }
    let all = read_all(&log, "q");
    assert_eq!(all.len(), 300);
    for (i, (offset, position, body)) in all.iter().enumerate() {
        assert_eq!((*offset, *position), (i as u64, written[i].0));
        assert_eq!(body, format!("m{i}").as_bytes());
    }
    assert_eq!(read_all(&log, "third").len(), 100);
    let stats = log.lock().stats().expect("stats");
    assert!(stats.segments > 5, "4 KiB segments rolled: {}", stats.segments);
    // Every segment but the active one is older than this cutoff.
    let (retired, _) = log.retain(Some(101), None).expect("retain");
    assert_eq!(retired, stats.segments - 1 - usize::from(stats.spare_ready));
    let left = read_all(&log, "q");
    assert!(!left.is_empty() && left.len() < 300);
    assert_eq!(left.last().map(|m| m.0), Some(299));
    // A second log on its own storage under the same name neither sees nor blocks the first.
    let other = open_in_memory(&dir.0);
    assert!(read_all(&other, "q").is_empty());
    other.close().expect("close other");
    log.sync().expect("sync");
    log.close().expect("close");
    assert_eq!(
        files_of(&dir.0),
        Vec::new(),
        "nothing was written to the directory"
    );
}

/// Appends `count` records of 500 bytes to `lmq` (several to a 4 KiB segment).
fn fill(log: &LogHandle, lmq: &str, count: usize) -> Written {
    let records: Vec<Vec<u8>> = (0..count).map(|_| message(&[lmq], &[7; 500])).collect();
    append_all(log, &records, 100)
}

#[test]
fn a_log_in_memory_gives_back_the_segments_of_deleted_lmqs_and_only_those() {
    let log = open_in_memory(Path::new("/memory"));
    // Segments holding only `gone`, then some shared with `kept`, then only `gone` again, then
    // `kept` alone.
    fill(&log, "gone", 40);
    fill(&log, "kept", 3);
    fill(&log, "gone", 40);
    fill(&log, "kept", 20);
    let before = log.lock().stats().expect("stats").segments;
    // Nothing is unused yet: a retention without rules detaches nothing.
    assert_eq!(log.retain(None, None).expect("retain").0, 0);
    append_all(&log, &[deletion("gone")], 100);
    let (given_back, bytes) = log.retain(None, None).expect("retain");
    assert!(given_back >= 8, "segments given back: {given_back} of {before}");
    assert_eq!(bytes, given_back as u64 * SMALL_SEGMENT_BYTES);
    let after = log.lock().stats().expect("stats").segments;
    // The leading segments of `gone` alone left the log; those after `kept`'s first records stay
    // in place, their memory given back.
    assert!(
        after < before && after > before - given_back,
        "{before} -> {after}"
    );
    let kept = read_all(&log, "kept");
    assert_eq!(kept.len(), 23);
    assert!(kept.iter().all(|(_, _, body)| body == &vec![7; 500]));
    assert!(read_all(&log, "gone").is_empty());
    // Given back once: a second pass has nothing to do.
    assert_eq!(log.retain(None, None).expect("retain").0, 0);
    // Once `kept` goes too, every segment but the active one leaves.
    append_all(&log, &[deletion("kept")], 100);
    log.retain(None, None).expect("retain");
    let stats = log.lock().stats().expect("stats");
    assert_eq!(stats.segments, 1 + usize::from(stats.spare_ready));
    fill(&log, "again", 30);
    assert_eq!(read_all(&log, "again").len(), 30);
    log.close().expect("close");
}

#[test]
fn a_log_on_disk_keeps_the_segments_of_deleted_lmqs_until_retention_rules_drop_them() {
    let dir = TempDir::new();
    let log = open(&dir.0);
    fill(&log, "gone", 40);
    fill(&log, "kept", 3);
    append_all(&log, &[deletion("gone")], 100);
    let before = dir.segments().len();
    assert_eq!(log.retain(None, None).expect("retain").0, 0);
    assert_eq!(dir.segments().len(), before);
    log.close().expect("close");
}
