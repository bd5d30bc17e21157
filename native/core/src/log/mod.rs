//! The commit log: append-only memory-mapped segment files holding self-describing records, and the
//! consume queues (`crate::queue`) indexing them per LMQ. docs/FORMAT.md is the contract with the js
//! engine; this module follows it byte for byte.
//!
//! [`Log`] is the state; every call on it is short (an append is one positional write into the page
//! cache, a read copies out of the segment's mapping). [`LogHandle`] shares a `Log` between the JavaScript thread and background
//! tasks and runs the slow parts (file creation, sync, checkpoint, file removal) without holding
//! the lock while the disk works.

mod append;
mod bodies;
pub mod checkpoint;
pub mod error;
mod handle;
pub mod lock;
mod memory;
mod read;
pub mod record;
mod recovery;
mod retain;
pub mod segment;
pub mod storage;

#[cfg(test)]
mod tests;

pub use bodies::{BodyBatch, BODY_RECORD_FRAME_BYTES};
pub use error::LogError;
pub use handle::LogHandle;
pub use memory::MemoryStorage;
pub use read::ReadSpan;
pub use recovery::{CheckpointState, Corruption, RecoveryStats};
pub use retain::Retired;
pub use storage::{FaultyStorage, RealStorage, Storage};

use crate::queue::Queues;
use lock::DirLock;
use record::Layout;
use segment::Segment;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;

/// One LMQ as `Log::lmq_summaries` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LmqSummary {
    pub name: std::sync::Arc<[u8]>,
    pub min_offset: u64,
    pub next_offset: u64,
    pub last_write_ms: u64,
}

/// How a log is opened.
#[derive(Clone, Copy, Debug)]
pub struct LogOptions {
    /// Size of new segments (MIN_SEGMENT_BYTES..=MAX_SEGMENT_BYTES).
    pub segment_bytes: u64,
    /// Time stamped into new segment headers and the lock file.
    pub now_ms: u64,
    /// Open without writing anything: no lock, no cut, no removal, no new segment, read-only maps.
    /// Recovery reports what a writable open would do instead of doing it; writes fail with
    /// [`LogError::ReadOnly`].
    pub read_only: bool,
    /// Cut the log at the first corrupt record (or segment header) instead of refusing to open,
    /// reporting what was removed in the recovery stats.
    pub repair: bool,
}

impl LogOptions {
    /// A writable open that refuses corruption: what every open is unless asked otherwise.
    pub fn new(segment_bytes: u64, now_ms: u64) -> LogOptions {
        LogOptions {
            segment_bytes,
            now_ms,
            read_only: false,
            repair: false,
        }
    }
}

/// Figures about a log (`LogCoreStats` in ts/engine/contract.ts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogStats {
    pub segments: usize,
    pub segment_bytes_on_disk: u64,
    pub write_position: u64,
    pub durable_position: u64,
    pub lmqs: usize,
    pub index_entries: usize,
    pub index_bytes: usize,
    pub files_open: usize,
    pub spare_ready: bool,
    pub recovery: RecoveryStats,
}

/// An open commit log.
pub struct Log {
    segments_dir: PathBuf,
    segment_bytes: u64,
    lock: Option<DirLock>,
    /// Oldest first; the last is the active segment. Never empty while open.
    segments: VecDeque<Segment>,
    /// The next segment, created, headed and synced ahead of need.
    spare: Option<Segment>,
    /// A task is creating the spare.
    preparing: bool,
    /// Position after the last record (an end marker after it is not counted).
    write_position: u64,
    /// Everything before this position is durable.
    durable_position: u64,
    queues: Queues,
    /// Set by a failed write or sync: every later call fails with it until the log is reopened.
    failed: Option<LogError>,
    closed: bool,
    recovery: RecoveryStats,
    /// Layouts of the batch being appended, reused between calls.
    layouts: Vec<Layout>,
    /// LMQ names registered for [`Log::append_bodies`].
    handles: bodies::LmqHandles,
    /// The records [`Log::append_bodies`] frames, reused between calls.
    framed: Vec<u8>,
    /// Where appends write (the file system, or one that injects faults in tests).
    storage: Arc<dyn Storage>,
    /// Opened with [`LogOptions::read_only`]: every write fails with [`LogError::ReadOnly`].
    read_only: bool,
    /// A log on private storage (in memory) gives back the segments no LMQ needs any more
    /// ([`Log::detach_retired`]): each segment counts the index entries pointing into it.
    reclaim: bool,
}

impl Log {
    /// Fails when the log is closed or failed.
    fn usable(&self) -> Result<(), LogError> {
        if self.closed {
            return Err(LogError::Closed);
        }
        match &self.failed {
            Some(error) => Err(error.clone()),
            None => Ok(()),
        }
    }

    /// Fails when the log is closed, failed or read-only: the check of every call that writes.
    fn writable(&self) -> Result<(), LogError> {
        self.usable()?;
        if self.read_only {
            return Err(LogError::ReadOnly);
        }
        Ok(())
    }

    /// Whether the log was opened read-only.
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// Next write position.
    pub fn write_position(&self) -> Result<u64, LogError> {
        self.usable()?;
        Ok(self.write_position)
    }

    /// Whether a spare segment is ready for the next roll.
    pub fn spare_ready(&self) -> Result<bool, LogError> {
        self.usable()?;
        Ok(self.spare.is_some())
    }

    pub fn durable_position(&self) -> u64 {
        self.durable_position
    }

    /// Next offset to be written in `lmq`; 0 for an unknown one.
    pub fn max_offset(&self, lmq: &[u8]) -> Result<u64, LogError> {
        self.usable()?;
        Ok(self.queues.get(lmq).map_or(0, |q| q.next_offset()))
    }

    /// Oldest offset still stored; 0 for an unknown LMQ.
    pub fn min_offset(&self, lmq: &[u8]) -> Result<u64, LogError> {
        self.usable()?;
        Ok(self.queues.get(lmq).map_or(0, |q| q.min_offset()))
    }

    /// Store timestamp of the LMQ's newest record, `None` for an unknown LMQ.
    pub fn last_write_timestamp(&self, lmq: &[u8]) -> Result<Option<u64>, LogError> {
        self.usable()?;
        Ok(self.queues.get(lmq).map(|q| q.last_write_ms()))
    }

    /// Every LMQ whose name starts with `prefix`, in byte order, with its offsets and last store
    /// timestamp: what `min_offset`, `max_offset` and `last_write_timestamp` answer, in one call.
    pub fn lmq_summaries(&mut self, prefix: &[u8]) -> Result<Vec<LmqSummary>, LogError> {
        self.usable()?;
        let page = self.queues.list(prefix, None, usize::MAX);
        Ok(page
            .names
            .into_iter()
            .filter_map(|name| {
                let queue = self.queues.get(&name)?;
                Some(LmqSummary {
                    min_offset: queue.min_offset(),
                    next_offset: queue.next_offset(),
                    last_write_ms: queue.last_write_ms(),
                    name,
                })
            })
            .collect())
    }

    pub fn lmq_count(&self) -> Result<usize, LogError> {
        self.usable()?;
        Ok(self.queues.len())
    }

    /// Up to `limit` LMQ names starting with `prefix`, in byte order, strictly after `after`.
    pub fn list_lmqs(
        &mut self,
        prefix: &[u8],
        after: Option<&[u8]>,
        limit: usize,
    ) -> Result<crate::queue::NamePage, LogError> {
        self.usable()?;
        Ok(self.queues.list(prefix, after, limit))
    }

    pub fn stats(&self) -> Result<LogStats, LogError> {
        self.usable()?;
        let on_disk: u64 = self.segments.iter().chain(&self.spare).map(Segment::size).sum();
        let files = self.segments.len() + usize::from(self.spare.is_some());
        Ok(LogStats {
            segments: files,
            segment_bytes_on_disk: on_disk,
            write_position: self.write_position,
            durable_position: self.durable_position,
            lmqs: self.queues.len(),
            index_entries: self.queues.entry_count(),
            index_bytes: self.queues.approximate_bytes(),
            files_open: files,
            spare_ready: self.spare.is_some(),
            recovery: self.recovery.clone(),
        })
    }

    /// (base, last store timestamp) of every segment, for a checkpoint.
    fn segment_times(&self) -> Vec<(u64, u64)> {
        self.segments
            .iter()
            .map(|s| (s.base(), s.last_store_ms))
            .collect()
    }
}
