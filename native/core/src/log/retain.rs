//! Retention: whole old segments leave the log by age or total size. Detaching them is quick and in
//! memory (the index forgets the entries pointing into them); deleting their files is left to a
//! background task.

use super::error::LogError;
use super::segment::{parse_segment_file_name, release_from, segment_file_name, Segment};
use super::storage::Storage;
use super::Log;
use crate::limits::SEGMENT_HEADER_BYTES;
use std::fs::File;
use std::path::PathBuf;

/// Segments detached from the log, whose files are still to be removed, and segments still in the
/// log whose records' memory is to be given back (a log in memory: see [`Log::detach_retired`]).
pub struct Retired {
    segments: Vec<Segment>,
    dir: PathBuf,
    /// Each such segment's file (a copy of its descriptor) and size.
    released: Vec<(File, u64)>,
}

impl Retired {
    /// Segments removed or given back.
    pub fn segment_count(&self) -> usize {
        self.segments.len() + self.released.len()
    }

    pub fn bytes(&self) -> u64 {
        self.segments.iter().map(Segment::size).sum::<u64>()
            + self.released.iter().map(|(_, size)| size).sum::<u64>()
    }

    /// Unmaps and removes the files, oldest first, then makes their removal durable. The files left
    /// by an earlier removal that failed part-way (every segment file below the first one still in
    /// the log) go first: a segment file is removed only once every older one is gone, so what is
    /// on disk stays contiguous and the next open does not find a gap. A failed removal stops there.
    pub fn remove_files(self, storage: &dyn Storage) -> Result<(), LogError> {
        for (file, size) in &self.released {
            release_from(file, SEGMENT_HEADER_BYTES as u64, *size);
        }
        let Some(keep_from) = self.segments.last().map(Segment::end) else {
            return Ok(());
        };
        drop(self.segments);
        let mut bases: Vec<u64> = storage
            .list(&self.dir)
            .map_err(|e| LogError::io("listing the segment directory", &e))?
            .iter()
            .filter_map(|name| parse_segment_file_name(name))
            .filter(|&base| base < keep_from)
            .collect();
        bases.sort_unstable();
        for base in bases {
            match storage.remove(&self.dir.join(segment_file_name(base))) {
                Ok(()) => {}
                // Removed already by a retention running at the same time: what this one wanted is done.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io("removing a retired segment", &e)),
            }
        }
        storage
            .sync_dir(&self.dir)
            .map_err(|e| LogError::io("syncing the segment directory", &e))
    }
}

impl Log {
    /// Detaches every segment but the active one whose records are all older than `cutoff_ms`
    /// (`None`: no age rule), then the oldest ones while the log is larger than `max_bytes`
    /// (`None`: no size rule), and drops the index entries pointing into them. A log that reclaims
    /// (in memory) also detaches the oldest segments no index entry points into (their records
    /// belong to deleted LMQs), and gives back the records' memory of such segments further on,
    /// which must keep their place until every older one has gone.
    pub fn detach_retired(
        &mut self,
        cutoff_ms: Option<u64>,
        max_bytes: Option<u64>,
    ) -> Result<Retired, LogError> {
        self.writable()?;
        let mut detached = Vec::new();
        let mut total: u64 = self.segments.iter().map(Segment::size).sum();
        // The queues still in the checkpoint file with entries in segments about to go are read
        // first, before anything changes, so a block that fails its check fails the retention.
        let mut keep_from = None;
        let mut remaining = total;
        for (k, segment) in self
            .segments
            .iter()
            .enumerate()
            .take(self.segments.len().saturating_sub(1))
        {
            let too_old = cutoff_ms.is_some_and(|cutoff| segment.last_store_ms < cutoff);
            let too_big = max_bytes.is_some_and(|max| remaining > max);
            if !too_old && !too_big {
                break;
            }
            remaining -= segment.size();
            keep_from = self.segments.get(k + 1).map(Segment::base);
        }
        if let Some(base) = keep_from {
            self.queues.load_below(base)?;
        }
        while self.segments.len() > 1 {
            let Some(oldest) = self.segments.front() else {
                break;
            };
            let too_old = cutoff_ms.is_some_and(|cutoff| oldest.last_store_ms < cutoff);
            let too_big = max_bytes.is_some_and(|max| total > max);
            if !too_old && !too_big {
                break;
            }
            total -= oldest.size();
            detached.extend(self.segments.pop_front());
        }
        if let Some(first) = self.segments.front() {
            if !detached.is_empty() {
                self.queues.drop_below(first.base());
            }
        }
        let mut released = Vec::new();
        if self.reclaim {
            while self.segments.len() > 1 && self.segments.front().is_some_and(|s| s.entries == 0) {
                detached.extend(self.segments.pop_front());
            }
            let older = self.segments.len().saturating_sub(1);
            for segment in self.segments.iter_mut().take(older) {
                if segment.entries == 0 && !segment.released {
                    let file = segment
                        .release_records()
                        .map_err(|e| LogError::io("giving back a segment's memory", &e))?;
                    released.push((file, segment.size()));
                }
            }
        }
        Ok(Retired {
            segments: detached,
            dir: self.segments_dir.clone(),
            released,
        })
    }
}
