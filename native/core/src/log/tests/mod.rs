//! Tests of the commit log against real files in a temporary directory.

mod bodies;
mod checkpoint;
mod durability;
mod faults;
mod fuzz;
mod memory;
mod model;
mod power;
mod power_model;
mod record;
mod recovery;
mod roll;

use super::record::{deletion_record, RecordBuilder, TYPE_MESSAGE};
use super::storage::{RealStorage, Storage};
use super::{LogError, LogHandle, LogOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

pub const SMALL_SEGMENT_BYTES: u64 = 4096;

/// A directory removed when the test ends.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new() -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let path = std::env::temp_dir().join(format!("litetopic-log-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        TempDir(path)
    }

    pub fn segments(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(self.0.join("segments"))
            .expect("segments dir")
            .map(|e| e.expect("entry").path())
            .collect();
        paths.sort();
        paths
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn open_with(dir: &Path, storage: Arc<dyn Storage>) -> Result<LogHandle, LogError> {
    LogHandle::open(dir, LogOptions::new(SMALL_SEGMENT_BYTES, 1), storage)
}

/// Opens with the read-only and repair options of [`LogOptions`].
pub fn open_as(dir: &Path, read_only: bool, repair: bool) -> Result<LogHandle, LogError> {
    LogHandle::open(
        dir,
        LogOptions {
            read_only,
            repair,
            ..LogOptions::new(SMALL_SEGMENT_BYTES, 1)
        },
        Arc::new(RealStorage),
    )
}

/// Every file under `dir` with a checksum of its bytes, sorted: what a test compares to show that
/// an open changed nothing.
pub fn files_of(dir: &Path) -> Vec<(PathBuf, u32)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).expect("read");
                out.push((path, crate::hash::crc32c(&bytes)));
            }
        }
    }
    out.sort();
    out
}

pub fn open(dir: &Path) -> LogHandle {
    open_with(dir, Arc::new(RealStorage)).expect("open")
}

/// A message record to `lmqs` with `body`.
pub fn message(lmqs: &[&str], body: &[u8]) -> Vec<u8> {
    RecordBuilder {
        kind: TYPE_MESSAGE,
        lmqs: lmqs.iter().map(|l| l.as_bytes()).collect(),
        body,
        born_timestamp_ms: 5,
        ..RecordBuilder::default()
    }
    .encode()
}

pub fn deletion(lmq: &str) -> Vec<u8> {
    deletion_record(lmq.as_bytes(), 0, 5)
}

/// What an append gave each record: its position and its offsets.
pub type Written = Vec<(u64, Vec<u64>)>;

/// Appends every record, preparing segments as needed, as ts/log.ts does.
pub fn append_all(log: &LogHandle, records: &[Vec<u8>], store_ms: u64) -> Written {
    let mut written = Vec::new();
    let mut from = 0;
    while from < records.len() {
        let mut batch: Vec<u8> = records[from..].concat();
        let lmq_counts: Vec<usize> = records[from..]
            .iter()
            .map(|r| usize::from(u16::from_le_bytes([r[14], r[15]])))
            .collect();
        let mut positions = vec![0.0; records.len() - from];
        let mut offsets = vec![0.0; lmq_counts.iter().sum()];
        let done = log
            .lock()
            .append(
                &mut batch,
                records.len() - from,
                store_ms,
                &mut positions,
                &mut offsets,
            )
            .expect("append");
        let mut slot = 0;
        for i in 0..done {
            let record_offsets = offsets[slot..slot + lmq_counts[i]]
                .iter()
                .map(|&o| o as u64)
                .collect();
            slot += lmq_counts[i];
            written.push((positions[i] as u64, record_offsets));
        }
        from += done;
        if from < records.len() {
            log.prepare_segment(1).expect("prepare");
        }
    }
    written
}

/// Every record of `lmq` from its minimum: (offset, position, body).
pub fn read_all(log: &LogHandle, lmq: &str) -> Vec<(u64, u64, Vec<u8>)> {
    let result = log.lock().read(lmq.as_bytes(), 0, usize::MAX).expect("read");
    let mut out = Vec::new();
    let mut at = 0;
    for (i, &position) in result.positions.iter().enumerate() {
        let size = u32::from_le_bytes(result.bytes[at + 4..at + 8].try_into().expect("size")) as usize;
        let record = &result.bytes[at..at + size];
        let body = record[size - body_length(record)..].to_vec();
        out.push((result.first_offset + i as u64, position as u64, body));
        at += size;
    }
    out
}

/// The body length of a record built by `message` (no key, tag or properties): the bytes after
/// the property count.
fn body_length(record: &[u8]) -> usize {
    let n = usize::from(u16::from_le_bytes([record[14], record[15]]));
    let mut at = 32 + 8 * n;
    for _ in 0..n {
        at += 2 + usize::from(u16::from_le_bytes([record[at], record[at + 1]]));
    }
    at += 2 + 2 + 2;
    record.len() - at - 4
}
