//! Reads by LMQ: the index gives positions, the records are copied out of the mappings and checked
//! again (the reader's side of "assert on both sides of the disk"); a record that fails is never
//! returned.

use super::error::LogError;
use super::record::{
    body_range, check_stored_summed, crc32c_lanes, lmq_names, offset, Layout, CRC_FROM, CRC_LANES,
    TYPE_MESSAGE,
};
use super::segment::Segment;
use super::Log;
use crate::queue::IndexEntry;

/// Records read from one LMQ.
#[derive(Debug, Default)]
pub struct ReadResult {
    /// The records as stored, back to back.
    pub bytes: Vec<u8>,
    /// The position of each record.
    pub positions: Vec<f64>,
    /// Offset of the first record (the LMQ's minimum when asked below it).
    pub first_offset: u64,
}

/// What a read will return, found from the index alone: enough to allocate the result once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadSpan {
    /// Offset of the first record (the LMQ's minimum when asked below it).
    pub first_offset: u64,
    /// Records to read.
    pub count: usize,
    /// Their bytes, back to back.
    pub bytes: usize,
    /// The id of the LMQ's queue when it has records to read (the copy that follows under the same
    /// lock finds the queue by it instead of looking the name up again).
    pub queue: Option<u32>,
}

/// Records a read prefetches ahead of the one it checks and copies. Measured on 1,000,000 records
/// over 10,000 LMQs (bench/log.ts's shape): 8 to 24 ahead all cut the read's time by a fifth to a
/// half against none, at 100 B and 1 KiB bodies alike.
const PREFETCH_AHEAD: usize = 16;
/// Bytes of each record prefetched: all of a usual one; the hardware streams the rest of a longer
/// one once the checksum starts reading it.
const PREFETCH_RECORD_BYTES: usize = 2048;

impl Log {
    /// Up to `max` records of `lmq` from offset `from`. An unknown LMQ or `from` at or past the end
    /// gives no records.
    pub fn read(&mut self, lmq: &[u8], from: u64, max: usize) -> Result<ReadResult, LogError> {
        let span = self.read_span(lmq, from, max)?;
        let mut result = ReadResult {
            bytes: vec![0; span.bytes],
            positions: Vec::with_capacity(span.count),
            first_offset: span.first_offset,
        };
        let positions = &mut result.positions;
        self.read_into(lmq, &span, &mut result.bytes, |_, position| {
            positions.push(position as f64);
        })?;
        Ok(result)
    }

    /// The span of a read of up to `max` records of `lmq` from offset `from`, from the index; then
    /// [`Log::read_into`], under the same lock, copies the records. An LMQ whose entries are still
    /// in the checkpoint file has them read first (a block that fails its check fails the read).
    pub fn read_span(&mut self, lmq: &[u8], from: u64, max: usize) -> Result<ReadSpan, LogError> {
        self.usable()?;
        self.queues.load(lmq)?;
        let id = self.queues.id(lmq);
        Ok(self.span_at(id, from, max))
    }

    /// [`Log::read_span`] of the LMQ registered as `handle` ([`Log::register_lmqs`]): its queue is
    /// found by number (the handle keeps it), not by hashing and comparing its name. [`Log::read_into`]
    /// then takes [`Log::handle_lmq`] as the name.
    pub fn read_span_of(&mut self, handle: u32, from: u64, max: usize) -> Result<ReadSpan, LogError> {
        self.usable()?;
        let id = self.handle_queue(handle)?;
        if let Some(id) = id {
            self.queues.load_at(id)?;
        }
        Ok(self.span_at(id, from, max))
    }

    /// The span of up to `max` records from offset `from` of the queue `id` (none: an unknown LMQ).
    fn span_at(&self, id: Option<u32>, from: u64, max: usize) -> ReadSpan {
        let Some(id) = id else {
            return ReadSpan {
                first_offset: from,
                ..ReadSpan::default()
            };
        };
        let (first_offset, entries) = self.queues.at(id).range(from, max);
        let (count, bytes) = entries.fold((0, 0), |(count, bytes), entry| {
            (count + 1, bytes + entry.size as usize)
        });
        ReadSpan {
            first_offset,
            count,
            bytes,
            queue: Some(id),
        }
    }

    /// Copies the records of `span` (from [`Log::read_span`] under the same lock) into `out`,
    /// exactly `span.bytes` long, checking each as it goes, and calls `position(i, position)` for
    /// each. A record that fails its check is never returned: the read fails.
    pub fn read_into(
        &self,
        lmq: &[u8],
        span: &ReadSpan,
        out: &mut [u8],
        mut position: impl FnMut(usize, u64),
    ) -> Result<(), LogError> {
        let mismatch = || LogError::InvalidArgument("the read span does not match the log".into());
        if out.len() != span.bytes {
            return Err(mismatch());
        }
        let mut at = 0usize;
        self.visit_span(lmq, span, |i, entry_position, record, _| {
            let target = out.get_mut(at..at + record.len()).ok_or_else(mismatch)?;
            target.copy_from_slice(record);
            position(i, entry_position);
            at += record.len();
            Ok(())
        })?;
        if at != span.bytes {
            return Err(mismatch());
        }
        Ok(())
    }

    /// [`Log::read_into`] for the bodies alone: copies the body of each record of `span` into
    /// `out` (at least as long as the bodies; `span.bytes` always is), back to back, each record
    /// checked whole first, and calls `body(i, position, end)` with where each body ends in `out`.
    /// Returns the bytes of `out` used.
    pub fn read_bodies_into(
        &self,
        lmq: &[u8],
        span: &ReadSpan,
        out: &mut [u8],
        mut body: impl FnMut(usize, u64, usize),
    ) -> Result<usize, LogError> {
        let mut at = 0usize;
        self.visit_span(lmq, span, |i, position, record, layout| {
            let (start, end) = body_range(record, layout).ok_or_else(|| {
                LogError::Internal("a checked record has no body where its layout says".into())
            })?;
            let length = end - start;
            let target = out
                .get_mut(at..at + length)
                .ok_or_else(|| LogError::InvalidArgument("the bodies do not fit the buffer".into()))?;
            target.copy_from_slice(&record[start..end]);
            at += length;
            body(i, position, at);
            Ok(())
        })?;
        Ok(at)
    }

    /// Calls `visit(i, position, record, layout)` for each record of `span` (from
    /// [`Log::read_span`] under the same lock), in offset order, after checking it whole: its
    /// checksum and layout, its size against its index entry, and that it is a message of `lmq` at
    /// the offset the index names.
    fn visit_span(
        &self,
        lmq: &[u8],
        span: &ReadSpan,
        mut visit: impl FnMut(usize, u64, &[u8], &Layout) -> Result<(), LogError>,
    ) -> Result<(), LogError> {
        self.usable()?;
        let mismatch = || LogError::InvalidArgument("the read span does not match the log".into());
        if span.count == 0 {
            return Ok(());
        }
        let id = span.queue.ok_or_else(mismatch)?;
        debug_assert_eq!(self.queues.id(lmq), Some(id), "a span of another LMQ");
        let (first_offset, entries) = self.queues.at(id).range(span.first_offset, span.count);
        if first_offset != span.first_offset {
            return Err(mismatch());
        }
        let mut segment: Option<&Segment> = None;
        let mut count = 0usize;
        // An LMQ's records lie far apart in the log, each a cache and TLB miss: the lookahead
        // starts loading the records a few entries ahead so those misses overlap.
        let mut ahead = entries.clone();
        let mut ahead_segment: Option<&Segment> = None;
        let mut prefetch_next = || {
            if let Some(entry) = ahead.next() {
                let inside = |s: &&Segment| s.base() <= entry.position && entry.position < s.end();
                if !ahead_segment.as_ref().is_some_and(inside) {
                    ahead_segment = self.segment_at(entry.position);
                }
                if let Some(found) = ahead_segment {
                    let start = (entry.position - found.base()) as usize;
                    let size = (entry.size as usize).min(PREFETCH_RECORD_BYTES);
                    crate::prefetch::prefetch_range(found.bytes(), start, size);
                }
            }
        };
        for _ in 0..PREFETCH_AHEAD {
            prefetch_next();
        }
        // The records are taken a few at a time: their checksums are computed side by side (each
        // is a chain of instructions that wait for one another), then each record is checked and
        // visited in order as if alone, so the first one that fails is the one reported.
        let mut entries = entries;
        loop {
            let mut group: [Option<(&IndexEntry, Option<&Segment>)>; CRC_LANES] = [None; CRC_LANES];
            let mut taken = 0;
            for slot in &mut group {
                let Some(entry) = entries.next() else {
                    break;
                };
                prefetch_next();
                let inside = |s: &&Segment| s.base() <= entry.position && entry.position < s.end();
                if !segment.as_ref().is_some_and(inside) {
                    segment = self.segment_at(entry.position);
                }
                *slot = Some((entry, segment));
                taken += 1;
            }
            if taken == 0 {
                break;
            }
            let sums = crc32c_lanes(group.map(|taken| {
                taken
                    .and_then(|(entry, found)| record_at(entry, found?))
                    .and_then(|record| record.get(CRC_FROM..))
                    .unwrap_or_default()
            }));
            for (&taken, sum) in group.iter().zip(sums) {
                let Some((entry, found)) = taken else {
                    break;
                };
                let Some(found) = found else {
                    return Err(LogError::corrupt(
                        None,
                        Some(entry.position),
                        "an index entry points outside the log",
                    ));
                };
                let corrupt = |why: &str| {
                    LogError::corrupt(Some(found.path.display().to_string()), Some(entry.position), why)
                };
                let record = record_at(entry, found).ok_or_else(|| corrupt("record size does not fit"))?;
                let layout = check_stored_summed(record, Some(sum)).map_err(corrupt)?;
                if layout.size != entry.size {
                    return Err(corrupt("record size differs from its index entry"));
                }
                // The record must be the one the index says: a message of this LMQ at this offset
                // (an index entry pointing at another intact record is corruption too).
                let wanted = span.first_offset + count as u64;
                // A record may name the LMQ more than once (the Rust API does not refuse it), each
                // with its own offset: any of them will do.
                let here = layout.kind == TYPE_MESSAGE
                    && lmq_names(record, &layout)
                        .enumerate()
                        .any(|(i, name)| same_bytes(name, lmq) && offset(record, i) == wanted);
                if !here {
                    return Err(corrupt("the record is not the LMQ offset its index entry names"));
                }
                visit(count, entry.position, record, &layout)?;
                count += 1;
            }
        }
        if count != span.count {
            return Err(mismatch());
        }
        Ok(())
    }

    /// The segment holding `position`.
    fn segment_at(&self, position: u64) -> Option<&Segment> {
        let after = self.segments.partition_point(|s| s.base() <= position);
        let segment = self.segments.get(after.checked_sub(1)?)?;
        (position < segment.end()).then_some(segment)
    }
}

/// The bytes of the record `entry` names in `segment` (which holds its position), as long as the
/// entry says: the index says where each record ends, so the checks run on exactly its bytes.
fn record_at<'a>(entry: &IndexEntry, segment: &'a Segment) -> Option<&'a [u8]> {
    let start = (entry.position - segment.base()) as usize;
    segment.bytes().get(start..)?.get(..entry.size as usize)
}

/// Whether `a` and `b` hold the same bytes: `a == b` without the call into the C library's
/// `memcmp`, which costs more than the comparison itself for names a few dozen bytes long (a read
/// compares one per record).
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    // Eight bytes at a time, without a branch per word; then the few bytes left.
    let word = |chunk: &[u8]| u64::from_le_bytes(chunk.try_into().unwrap_or_default());
    let (a_words, b_words) = (a.chunks_exact(8), b.chunks_exact(8));
    let (a_rest, b_rest) = (a_words.remainder(), b_words.remainder());
    let differ = a_words
        .zip(b_words)
        .fold(0u64, |differ, (x, y)| differ | (word(x) ^ word(y)));
    differ == 0 && a_rest == b_rest
}
