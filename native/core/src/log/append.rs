//! The append path: one call per batch of records encoded by the caller. The whole batch is checked
//! first, so a malformed one writes nothing; then each record is copied into the active segment's
//! mapping, given its LMQ offsets, store timestamp and checksum there, and indexed.

use super::error::LogError;
use super::record::{self, check_layout, record_size, Layout, END_MARKER, TYPE_DELETE};
use super::Log;
use crate::limits::SEGMENT_HEADER_BYTES;
use crate::queue::IndexEntry;

/// Records whose queues [`Log::warm_queues`] looks up at a time: enough for their cache misses to
/// overlap, few enough that what they bring in stays in cache while the records are written.
const WARM_RECORDS: usize = 32;

impl Log {
    /// Appends the `count` records of `batch` (complete records back to back), stamping
    /// `store_ms`. Fills `positions[i]` for each record written and `offsets` with each record's LMQ
    /// offsets, flattened in record order. Stops at a record boundary when the active segment is
    /// full and no spare is ready; returns the number of records written.
    pub fn append(
        &mut self,
        batch: &[u8],
        count: usize,
        store_ms: u64,
        positions: &mut [f64],
        offsets: &mut [f64],
    ) -> Result<usize, LogError> {
        self.usable()?;
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
        batch: &[u8],
        layouts: &[Layout],
        store_ms: u64,
        positions: &mut [f64],
        offsets: &mut [f64],
    ) -> Result<usize, LogError> {
        let mut at = 0usize;
        let mut next_offset_slot = 0usize;
        for (i, (layout, position_out)) in layouts.iter().zip(positions.iter_mut()).enumerate() {
            if i % WARM_RECORDS == 0 {
                let next = &layouts[i..layouts.len().min(i + WARM_RECORDS)];
                self.warm_queues(&batch[at..], next);
            }
            let size = layout.size as usize;
            if !self.make_room(size as u64) {
                return Ok(i);
            }
            let source = &batch[at..at + size];
            at += size;
            let position = self.write_position;
            let entry = IndexEntry {
                position,
                size: layout.size,
                tag_hash: layout.tag_hash,
                key_hash: layout.key_hash,
            };
            let Some(active) = self.segments.back_mut() else {
                return Err(LogError::Closed);
            };
            let start = active.written as usize;
            let target = &mut active.bytes_mut()[start..start + size];
            target.copy_from_slice(source);
            for (slot, name) in record::lmq_names(source, layout).enumerate() {
                let offset = if layout.kind == TYPE_DELETE {
                    self.queues.remove(name).map_or(0, |q| q.next_offset())
                } else {
                    self.queues.append(name, entry, store_ms)
                };
                record::set_offset(target, slot, offset);
                offsets[next_offset_slot] = offset as f64;
                next_offset_slot += 1;
            }
            record::seal(target, store_ms);
            active.written += size as u64;
            active.last_store_ms = active.last_store_ms.max(store_ms);
            *position_out = position as f64;
            self.write_position = position + size as u64;
        }
        Ok(layouts.len())
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

    /// Makes sure the active segment has `size` bytes free for a record, rolling to the spare when
    /// it does not (after closing the active one with an end marker). False when it is full and no
    /// spare is ready: the caller stops there.
    fn make_room(&mut self, size: u64) -> bool {
        let Some(active) = self.segments.back_mut() else {
            return false;
        };
        let room = active.size() - active.written;
        if !active.complete && size <= room {
            return true;
        }
        if !active.complete {
            if room >= END_MARKER.len() as u64 {
                let at = active.written as usize;
                active.bytes_mut()[at..at + END_MARKER.len()].copy_from_slice(&END_MARKER);
                active.written += END_MARKER.len() as u64;
            }
            active.complete = true;
        }
        let Some(spare) = self.spare.take() else {
            return false;
        };
        self.write_position = spare.base() + SEGMENT_HEADER_BYTES as u64;
        self.segments.push_back(spare);
        true
    }
}
