//! The append path: one call per batch of records encoded by the caller. The whole batch is checked
//! first, so a malformed one writes nothing; then each record is given its LMQ offsets, store
//! timestamp and checksum in the batch itself and indexed, and the sealed records are written to
//! the active segment's file in one positional write per segment.

use super::error::LogError;
use super::record::{self, check_layout, record_size, Layout, END_MARKER, TYPE_DELETE};
use super::Log;
use crate::limits::SEGMENT_HEADER_BYTES;
use crate::queue::{ConsumeQueue, IndexEntry};

/// Records whose queues [`Log::warm_queues`] looks up at a time: enough for their cache misses to
/// overlap, few enough that what they bring in stays in cache while the records are written.
const WARM_RECORDS: usize = 32;

impl Log {
    /// Appends the `count` records of `batch` (complete records back to back), stamping
    /// `store_ms`. Each record's LMQ offsets, store timestamp and checksum are filled in `batch`
    /// itself, which is then written to the active segment's file in one positional write per
    /// segment it reaches (see [`Log::write_run`]). Fills `positions[i]` for each record written and
    /// `offsets` with each record's LMQ offsets, flattened in record order. Stops at a record
    /// boundary when the active segment is full and no spare is ready; returns the number of
    /// records written. A failed write fails the log.
    pub fn append(
        &mut self,
        batch: &mut [u8],
        count: usize,
        store_ms: u64,
        positions: &mut [f64],
        offsets: &mut [f64],
    ) -> Result<usize, LogError> {
        self.writable()?;
        self.check_batch(batch, count, positions.len(), offsets.len())?;
        // The layouts leave `self` for the loop, which needs `&mut self`, and come back after it
        // so their buffer is reused.
        let layouts = std::mem::take(&mut self.layouts);
        let written = self.write_records(batch, &layouts, store_ms, positions, offsets);
        self.layouts = layouts;
        written
    }

    fn write_records(
        &mut self,
        batch: &mut [u8],
        layouts: &[Layout],
        store_ms: u64,
        positions: &mut [f64],
        offsets: &mut [f64],
    ) -> Result<usize, LogError> {
        let mut at = 0usize;
        // The records from `run_start` to `at` are sealed in `batch` and not yet written.
        let mut run_start = 0usize;
        let mut next_offset_slot = 0usize;
        for (i, (layout, position_out)) in layouts.iter().zip(positions.iter_mut()).enumerate() {
            if i % WARM_RECORDS == 0 {
                let next = &layouts[i..layouts.len().min(i + WARM_RECORDS)];
                self.warm_queues(&batch[at..], next);
            }
            let size = layout.size as usize;
            // The run not yet written counts against the room left.
            if !self.has_room((at - run_start + size) as u64) {
                self.write_run(&batch[run_start..at], store_ms)?;
                run_start = at;
                if !self.roll()? {
                    return Ok(i);
                }
            }
            let position = self.write_position;
            let entry = IndexEntry {
                position,
                size: layout.size,
                tag_hash: layout.tag_hash,
                key_hash: layout.key_hash,
            };
            let record = &mut batch[at..at + size];
            at += size;
            let first_slot = next_offset_slot;
            for name in record::lmq_names(record, layout) {
                let offset = if layout.kind == TYPE_DELETE {
                    let removed = self.queues.remove(name);
                    if let Some(queue) = &removed {
                        self.forget_entries(queue);
                    }
                    removed.map_or(0, |q| q.next_offset())
                } else {
                    self.count_entry();
                    self.queues.append(name, entry, store_ms)
                };
                offsets[next_offset_slot] = offset as f64;
                next_offset_slot += 1;
            }
            // Offsets are below 2^53 (positions and counts of a log), so they pass through f64 whole.
            for (slot, &offset) in offsets[first_slot..next_offset_slot].iter().enumerate() {
                record::set_offset(record, slot, offset as u64);
            }
            record::seal(record, store_ms);
            *position_out = position as f64;
            self.write_position = position + size as u64;
        }
        self.write_run(&batch[run_start..at], store_ms)?;
        Ok(layouts.len())
    }

    /// Counts an index entry made for a record about to go to the active segment, in a log that
    /// reclaims segments (see `Segment::entries`).
    #[inline]
    pub(super) fn count_entry(&mut self) {
        if self.reclaim {
            if let Some(active) = self.segments.back_mut() {
                active.entries += 1;
            }
        }
    }

    /// Uncounts the entries of a queue that was just removed (see [`Log::count_entry`]): each from
    /// the segment it points into. Entries are in position order, as segments are.
    fn forget_entries(&mut self, queue: &ConsumeQueue) {
        if !self.reclaim {
            return;
        }
        let mut k = match queue.entries().front() {
            Some(first) => self.segments.partition_point(|s| s.end() <= first.position),
            None => return,
        };
        for entry in queue.entries().iter() {
            while self.segments.get(k).is_some_and(|s| s.end() <= entry.position) {
                k += 1;
            }
            match self.segments.get_mut(k) {
                Some(segment) if segment.base() <= entry.position => {
                    segment.entries = segment.entries.saturating_sub(1);
                }
                _ => debug_assert!(false, "an index entry outside every segment"),
            }
        }
    }

    /// Writes sealed records at the end of the active segment in one positional write (see
    /// [`Segment::append_bytes`]). A failure fails the log: what the file holds past the last
    /// record is then unknown, and the index already names the records of the run.
    pub(super) fn write_run(&mut self, run: &[u8], store_ms: u64) -> Result<(), LogError> {
        if run.is_empty() {
            return Ok(());
        }
        let Some(active) = self.segments.back_mut() else {
            return Err(LogError::Closed);
        };
        if let Err(e) = active.append_bytes(self.storage.as_ref(), run) {
            let error = LogError::io("writing to the log", &e);
            return Err(self.failed.get_or_insert(error).clone());
        }
        active.last_store_ms = active.last_store_ms.max(store_ms);
        Ok(())
    }

    /// Looks up the queues of the records of `layouts` (encoded back to back at the start of
    /// `batch`) and prefetches where their next index entries go. Each record of a batch usually
    /// names a different queue whose map slot and entries are cache misses; looked up here, in a
    /// loop with nothing else to do, the misses of many records overlap, and the write loop then
    /// finds them in cache.
    fn warm_queues(&self, batch: &[u8], layouts: &[Layout]) {
        let mut at = 0usize;
        for layout in layouts {
            let size = layout.size as usize;
            let Some(record) = batch.get(at..at + size) else {
                return;
            };
            at += size;
            for name in record::lmq_names(record, layout) {
                if let Some(queue) = self.queues.get(name) {
                    queue.prefetch_tail();
                }
            }
        }
    }

    /// Checks every record's layout (the writer's side of "assert on both sides of the disk") and
    /// that the output arrays have room, before anything is written.
    fn check_batch(
        &mut self,
        batch: &[u8],
        count: usize,
        positions: usize,
        offsets: usize,
    ) -> Result<(), LogError> {
        let invalid =
            |i: usize, why: &str| LogError::InvalidArgument(format!("record {i} of the batch: {why}"));
        let largest = self.segment_bytes - SEGMENT_HEADER_BYTES as u64;
        if count > positions {
            return Err(LogError::InvalidArgument(
                "positions has fewer slots than records".into(),
            ));
        }
        self.layouts.clear();
        let mut at = 0usize;
        let mut lmqs = 0usize;
        for i in 0..count {
            let rest = &batch[at..];
            let size =
                record_size(rest).ok_or_else(|| invalid(i, "the batch ends inside the record"))? as usize;
            if size as u64 > largest {
                return Err(invalid(i, "larger than a segment can hold"));
            }
            let bytes = rest
                .get(..size)
                .ok_or_else(|| invalid(i, "the batch ends inside the record"))?;
            let layout = check_layout(bytes).map_err(|why| invalid(i, why))?;
            lmqs += usize::from(layout.lmq_count);
            self.layouts.push(layout);
            at += size;
        }
        if at != batch.len() {
            return Err(LogError::InvalidArgument(
                "bytes follow the last record of the batch".into(),
            ));
        }
        if lmqs > offsets {
            return Err(LogError::InvalidArgument(
                "offsets has fewer slots than the records' LMQs".into(),
            ));
        }
        // Queues whose entries are still in the checkpoint file are read before anything is
        // written: a block that fails its check fails the whole batch, none of it stored.
        let mut at = 0usize;
        for layout in &self.layouts {
            let bytes = &batch[at..at + layout.size as usize];
            at += layout.size as usize;
            if layout.kind != TYPE_DELETE {
                for name in record::lmq_names(bytes, layout) {
                    self.queues.load(name)?;
                }
            }
        }
        Ok(())
    }

    /// Whether the active segment is open and has `size` bytes free.
    pub(super) fn has_room(&self, size: u64) -> bool {
        self.segments
            .back()
            .is_some_and(|active| !active.complete && size <= active.size() - active.written)
    }

    /// Completes the active segment (with an end marker where 4 bytes are left) and moves to the
    /// spare. False when no spare is ready: the caller stops there. A failed write fails the log.
    pub(super) fn roll(&mut self) -> Result<bool, LogError> {
        let Some(active) = self.segments.back_mut() else {
            return Ok(false);
        };
        if !active.complete {
            if active.size() - active.written >= END_MARKER.len() as u64 {
                if let Err(e) = active.append_bytes(self.storage.as_ref(), &END_MARKER) {
                    let error = LogError::io("writing to the log", &e);
                    return Err(self.failed.get_or_insert(error).clone());
                }
            }
            active.complete = true;
        }
        let Some(spare) = self.spare.take() else {
            return Ok(false);
        };
        self.write_position = spare.base() + SEGMENT_HEADER_BYTES as u64;
        self.segments.push_back(spare);
        Ok(true)
    }
}
