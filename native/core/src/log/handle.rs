//! A log shared between the JavaScript thread and background tasks. Quick calls take the lock for
//! their whole length; the slow ones (sync, segment creation, checkpoint, file removal, close) take
//! it only to read or install state and do their disk work without it, so an append never waits
//! for the disk.

use super::checkpoint::{self, CHECKPOINT_FILE, CHECKPOINT_TMP_FILE};
use super::error::LogError;
use super::segment::{Segment, SegmentHeader};
use super::storage::Storage;
use super::{Log, LogOptions, Retired};
use crate::queue::{CheckpointFile, StoredEntries};
use memmap2::MmapRaw;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

/// What a log that a panic left poisoned fails with, until the panicking call records its own error.
const POISONED: &str = "an earlier call panicked while it held the log";

/// Queues encoded per taking of the lock while a checkpoint is written.
const CHECKPOINT_BATCH: usize = 2048;

#[derive(Clone)]
pub struct LogHandle {
    log: Arc<Mutex<Log>>,
    storage: Arc<dyn Storage>,
}

/// Ranges of mappings to flush, and the position that is durable once they are.
struct SyncPlan {
    target: u64,
    ranges: Vec<(Arc<MmapRaw>, usize, usize)>,
}

impl LogHandle {
    pub fn open(dir: &Path, options: LogOptions, storage: Arc<dyn Storage>) -> Result<LogHandle, LogError> {
        let log = Log::open(dir, options, Arc::clone(&storage))?;
        Ok(LogHandle {
            log: Arc::new(Mutex::new(log)),
            storage,
        })
    }

    /// The log, for the quick calls. A panic while it was held (a bug) leaves the log failed.
    pub fn lock(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|poisoned| {
            let mut log = poisoned.into_inner();
            log.failed.get_or_insert(LogError::Internal(POISONED.into()));
            log
        })
    }

    /// Makes everything written so far durable; returns the durable position. A failure leaves the
    /// log failed: the page cache can no longer be trusted to hold what was written.
    pub fn sync(&self) -> Result<u64, LogError> {
        let plan = {
            let log = self.lock();
            log.usable()?;
            if log.read_only {
                // Nothing was written: everything the log holds is as durable as it will be.
                return Ok(log.durable_position);
            }
            let durable = log.durable_position;
            let ranges = log
                .segments
                .iter()
                .filter(|s| s.end() > durable)
                .map(|s| {
                    let from = durable.saturating_sub(s.base()) as usize;
                    (
                        s.shared_map(),
                        from,
                        s.written as usize - from.min(s.written as usize),
                    )
                })
                .filter(|&(_, _, len)| len > 0)
                .collect();
            SyncPlan {
                target: log.write_position,
                ranges,
            }
        };
        for (map, offset, len) in &plan.ranges {
            if let Err(e) = self.storage.sync_map(map, *offset, *len) {
                return Err(self.fail(LogError::io("syncing the log", &e)));
            }
        }
        let mut log = self.lock();
        log.usable()?;
        log.durable_position = log.durable_position.max(plan.target);
        Ok(log.durable_position)
    }

    /// Puts the log in the failed state (unless it already is) and returns the error it now fails
    /// with. The binding calls this when a call panicked outside the lock, which poisoning misses.
    pub fn fail(&self, error: LogError) -> LogError {
        // Not through `lock`, so a poisoned lock records this error rather than its generic one;
        // and a call on another thread that found the lock poisoned before the panicking call got
        // here left only the generic one, which the panic's own message replaces.
        let mut log = self.log.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let generic = matches!(&log.failed, Some(LogError::Internal(message)) if message == POISONED);
        if generic && matches!(error, LogError::Internal(_)) {
            log.failed = Some(error.clone());
        }
        log.failed.get_or_insert(error).clone()
    }

    /// Creates the next segment (file, size, header, sync) unless one is ready or being made.
    pub fn prepare_segment(&self, now_ms: u64) -> Result<(), LogError> {
        let (dir, header) = {
            let mut log = self.lock();
            log.writable()?;
            if log.spare.is_some() || log.preparing {
                return Ok(());
            }
            let base = log.segments.back().map_or(0, Segment::end);
            log.preparing = true;
            (
                log.segments_dir.clone(),
                SegmentHeader {
                    base,
                    size: log.segment_bytes,
                    created_ms: now_ms,
                },
            )
        };
        let created = Segment::create(self.storage.as_ref(), &dir, header);
        let mut log = self.lock();
        log.preparing = false;
        let segment = match created {
            Ok(segment) => segment,
            Err(e) => {
                // Nothing was written into it: remove what exists of it and leave the log usable.
                if self
                    .storage
                    .remove(&dir.join(super::segment::segment_file_name(header.base)))
                    .is_ok()
                {
                    let _ = self.storage.sync_dir(&dir);
                }
                return Err(LogError::io("preparing a segment", &e));
            }
        };
        if log.closed {
            let path = segment.path.clone();
            drop(segment);
            return self
                .storage
                .remove(&path)
                .and_then(|()| self.storage.sync_dir(&dir))
                .map_err(|e| LogError::io("removing an unused segment", &e));
        }
        log.spare = Some(segment);
        Ok(())
    }

    /// Detaches old segments now and removes their files; returns how many and their bytes.
    pub fn retain(&self, cutoff_ms: Option<u64>, max_bytes: Option<u64>) -> Result<(usize, u64), LogError> {
        let retired = self.lock().detach_retired(cutoff_ms, max_bytes)?;
        let counts = (retired.segment_count(), retired.bytes());
        self.remove_retired(retired)?;
        Ok(counts)
    }

    /// Removes the files of segments detached by [`Log::detach_retired`].
    pub fn remove_retired(&self, retired: Retired) -> Result<(), LogError> {
        retired.remove_files(self.storage.as_ref())
    }

    /// Writes a checkpoint of the queues as of the current write position, after making the log
    /// durable: temporary file, sync, rename, directory sync. The position, the segments and the
    /// names are taken together; the queues are then copied `CHECKPOINT_BATCH` at a time, taking
    /// the lock for each batch's copy only (the checksums are computed without it), so appends and
    /// reads from the JavaScript thread go on meanwhile. Each queue is cut at the position (checkpoint.rs, `Encoder`); one deleted
    /// meanwhile is left out (its deletion record is after the position: recovery replays it). The
    /// log is synced after the encoding, so a queue's last-write time read during it never names a
    /// record that could be lost.
    pub fn checkpoint(&self, now_ms: u64) -> Result<(), LogError> {
        let (dir, position, segments, names, capacity) = {
            let log = self.lock();
            log.writable()?;
            let segments = log.segment_times();
            let names = log.queues.name_list();
            let dir = log
                .segments_dir
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default();
            let capacity = 48 + 16 * segments.len() + names.len() * 64 + 24 * log.queues.entry_count();
            (dir, log.write_position, segments, names, capacity)
        };
        let mut encoder = checkpoint::Encoder::new(position, now_ms, &segments, capacity);
        let mut ids = Vec::with_capacity(CHECKPOINT_BATCH.min(names.len()));
        for batch_start in (0..names.len()).step_by(CHECKPOINT_BATCH) {
            {
                let log = self.lock();
                log.usable()?;
                let batch = batch_start..names.len().min(batch_start + CHECKPOINT_BATCH);
                // The batch's queues are looked up first, their entries' ends prefetched, so the
                // copies below find them in cache.
                ids.clear();
                for i in batch.clone() {
                    let id = log.queues.id(names.get(i));
                    if let Some(id) = id {
                        log.queues.at(id).prefetch_ends();
                    }
                    ids.push(id);
                }
                for (i, id) in batch.zip(&ids) {
                    if let Some(id) = *id {
                        encoder.queue(names.get(i), log.queues.at(id));
                    }
                }
            }
            // Only the copy of the entries needs the log; their checksums are computed without it.
            encoder.checksum_blocks();
        }
        let encoded = encoder.finish();
        self.sync()?;
        let tmp = dir.join(CHECKPOINT_TMP_FILE);
        let path = dir.join(CHECKPOINT_FILE);
        let written = self
            .storage
            .create(&tmp)
            .and_then(|file| {
                self.storage.write_at(&file, &encoded.head, 0)?;
                self.storage
                    .write_at(&file, &encoded.blocks, encoded.head.len() as u64)?;
                self.storage.sync(&file)
            })
            .and_then(|()| self.storage.rename(&tmp, &path))
            .and_then(|()| self.storage.sync_dir(&dir));
        // A checkpoint that could not be written leaves the log as it was (its records are synced
        // above, where a failure does fail the log): the error goes to the caller, the tmp file goes.
        written.map_err(|e| {
            let _ = self.storage.remove(&tmp);
            LogError::io("writing the checkpoint", &e)
        })?;
        drop(encoded.head);
        drop(encoded.blocks);
        self.move_stored(&path, encoded.copied);
        Ok(())
    }

    /// Points the queues still stored in an older checkpoint at their copies in the one just
    /// installed, so the older file (renamed over, kept alive by its mapping) is let go. If the new
    /// file cannot be mapped they stay where they are: still valid, only holding the old file.
    fn move_stored(&self, path: &Path, copied: Vec<(Arc<[u8]>, StoredEntries, usize)>) {
        if copied.is_empty() {
            return;
        }
        let Ok(file) = self.storage.open(path) else {
            return;
        };
        // SAFETY: checkpoint files are replaced by rename, never changed in place (recovery.rs).
        let Ok(map) = (unsafe { memmap2::Mmap::map(&file) }) else {
            return;
        };
        let mapped = Arc::new(CheckpointFile {
            path: path.to_path_buf(),
            map,
        });
        for batch in copied.chunks(CHECKPOINT_BATCH) {
            let mut log = self.lock();
            for (name, old, at) in batch {
                log.queues.move_stored(name, old, &mapped, *at);
            }
        }
    }

    /// Syncs, then releases the files and mappings and removes the lock. Closing twice is a no-op.
    pub fn close(&self) -> Result<(), LogError> {
        let synced = if self.lock().closed {
            return Ok(());
        } else {
            // A read-only log's sync does nothing: it wrote nothing.
            self.sync().map(|_| ())
        };
        let mut log = self.lock();
        if log.closed {
            return Ok(());
        }
        log.closed = true;
        // Only after the sync above: the released range is past every record it made durable. A
        // read-only log gives nothing back: that would change its files.
        if synced.is_ok() && !log.read_only {
            if let Some(active) = log.segments.back() {
                active.release_tail();
            }
        }
        log.segments.clear();
        let spare = log.spare.take().map(|s| s.path.clone());
        let lock = log.lock.take();
        let segments_dir = log.segments_dir.clone();
        drop(log);
        // A spare holds no record: removing it spares the next open a "removed segment".
        if let Some(path) = spare {
            if self.storage.remove(&path).is_ok() {
                let _ = self.storage.sync_dir(&segments_dir);
            }
        }
        if let Some(lock) = lock {
            lock.release(self.storage.as_ref())
                .map_err(|e| LogError::io("removing the lock file", &e))?;
        }
        synced
    }
}
