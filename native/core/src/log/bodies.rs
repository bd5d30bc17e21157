//! Appends of records that carry only a body, given flat: the bodies back to back, and for each
//! record its LMQ as a number the caller registered once (an LMQ handle). The records are framed
//! here, into a buffer the log keeps, a part of the batch at a time, each part sealed and written
//! to the active segment as [`Log::append`] writes a batch (append.rs). The caller encodes nothing
//! per record and no name crosses per record:
//! what a producer of many small messages otherwise pays for each one in JavaScript.

use super::error::LogError;
use super::record::{self, check_layout, RECORD_HEADER_BYTES, RECORD_MAGIC, TYPE_MESSAGE};
use super::Log;
use crate::hash::murmur3_32;
use crate::limits::{MAX_LMQ_NAME_BYTES, SEGMENT_HEADER_BYTES};
use crate::queue::IndexEntry;

/// A body-only batch as the binding passes it: record `i` has the body from `body_ends[i - 1]` (0
/// for the first) to `body_ends[i]` in `bodies` and goes to the LMQ of `handles[i]`, a handle from
/// [`Log::register_lmqs`].
#[derive(Clone, Copy, Debug)]
pub struct BodyBatch<'a> {
    pub handles: &'a [u32],
    pub bodies: &'a [u8],
    pub body_ends: &'a [u32],
}

/// Framed bytes written at a time: a large batch is framed, sealed and written a part of this
/// size after another, so the part stays in the CPU's cache from its framing through its checksum
/// to the kernel's copy of it, where framing the whole batch first sends it out to memory and
/// reads it back twice. A few parts per batch cost a few more system calls than one write.
const WRITE_CHUNK_BYTES: usize = 256 * 1024;

/// How many records ahead of the one being written its queue is prefetched, and (fewer) where its
/// next index entry goes: far enough for a cache miss to end before the record is reached, near
/// enough that what was brought in is still in the first-level cache.
const QUEUE_AHEAD_RECORDS: usize = 16;
const TAIL_AHEAD_RECORDS: usize = 8;

/// A handle whose queue is not known (not looked up since the last removal, or none yet).
const NO_QUEUE: u32 = u32::MAX;

/// Bytes of a body-only record besides its LMQ name and body: the header, one LMQ offset, the name
/// length, the empty key, tag and property count, and the body length (docs/FORMAT.md, "Record").
pub const BODY_RECORD_FRAME_BYTES: usize = RECORD_HEADER_BYTES + 8 + 2 + 2 + 2 + 2 + 4;

/// LMQ names registered for [`Log::append_bodies`], numbered from 0 in registration order: their
/// bytes back to back and where each ends. A handle names an LMQ, not a queue, so deleting the LMQ
/// leaves its handle valid (the next record starts it again).
#[derive(Default)]
pub struct LmqHandles {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    /// Per handle, the id of its LMQ's queue ([`Queues::id`](crate::queue::Queues::id)) or
    /// `NO_QUEUE`: looked up once, not per record.
    queues: Vec<u32>,
    /// [`Queues::removals`](crate::queue::Queues::removals) when `queues` was last valid.
    removals: u64,
}

/// The name of `handle` in the names `bytes` that end at `ends`, if it was registered.
fn handle_name<'a>(bytes: &'a [u8], ends: &[usize], handle: u32) -> Option<&'a [u8]> {
    let i = handle as usize;
    let end = *ends.get(i)?;
    let start = if i == 0 { 0 } else { ends[i - 1] };
    bytes.get(start..end)
}

impl LmqHandles {
    fn len(&self) -> usize {
        self.ends.len()
    }
}

/// Why `name` cannot be an LMQ name, checked as the writer checks names in records.
fn check_name(name: &[u8]) -> Result<(), LogError> {
    if name.is_empty() || name.len() > MAX_LMQ_NAME_BYTES {
        return Err(LogError::InvalidArgument(format!(
            "an LMQ name must be 1 to {MAX_LMQ_NAME_BYTES} UTF-8 bytes (got {})",
            name.len()
        )));
    }
    if name.contains(&0) || (!name.is_ascii() && std::str::from_utf8(name).is_err()) {
        return Err(LogError::InvalidArgument(
            "an LMQ name must be UTF-8 without NUL characters".into(),
        ));
    }
    Ok(())
}

impl Log {
    /// Registers LMQ names for [`Log::append_bodies`]; returns the handle of the first, the others
    /// following in order. Every name is checked first: an invalid one registers none.
    pub fn register_lmqs(&mut self, names: &[&[u8]]) -> Result<u32, LogError> {
        self.usable()?;
        for name in names {
            check_name(name)?;
        }
        let first = u32::try_from(self.handles.len())
            .ok()
            .filter(|first| (*first as usize) + names.len() <= u32::MAX as usize)
            .ok_or_else(|| LogError::InvalidArgument("too many LMQ handles".into()))?;
        for name in names {
            self.handles.bytes.extend_from_slice(name);
            self.handles.ends.push(self.handles.bytes.len());
            self.handles.queues.push(NO_QUEUE);
        }
        Ok(first)
    }

    /// Forgets every registered handle (the caller's way of bounding them).
    pub fn forget_lmqs(&mut self) {
        self.handles = LmqHandles::default();
    }

    /// The name registered as `handle` ([`Log::register_lmqs`]), if it was.
    pub fn handle_lmq(&self, handle: u32) -> Option<&[u8]> {
        handle_name(&self.handles.bytes, &self.handles.ends, handle)
    }

    /// The id of the queue of the LMQ registered as `handle`, or None while that LMQ has none: looked
    /// up by name once and kept with the handle until a queue is removed. An unregistered handle is
    /// refused.
    pub(super) fn handle_queue(&mut self, handle: u32) -> Result<Option<u32>, LogError> {
        let table = &mut self.handles;
        if table.removals != self.queues.removals() {
            // A queue was removed: an id looked up before may since name another queue.
            table.queues.fill(NO_QUEUE);
            table.removals = self.queues.removals();
        }
        let name = handle_name(&table.bytes, &table.ends, handle)
            .ok_or_else(|| LogError::InvalidArgument("an LMQ handle that was not registered".into()))?;
        let cached = &mut table.queues[handle as usize];
        if *cached == NO_QUEUE {
            *cached = self.queues.id(name).unwrap_or(NO_QUEUE);
        }
        Ok((*cached != NO_QUEUE).then_some(*cached))
    }

    /// Appends records `records` (`from..count`) of a body-only batch (see [`BodyBatch`]), born
    /// when stored. As [`Log::append`]: every record is checked before anything is written,
    /// `positions[i]` and `offsets[i]` (one LMQ per record) are filled for each record written, and
    /// it stops at a record boundary when the active segment is full and no spare is ready; returns
    /// the index after the last record written. A failed write fails the log.
    pub fn append_bodies(
        &mut self,
        batch: BodyBatch<'_>,
        records: std::ops::Range<usize>,
        store_ms: u64,
        positions: &mut [f64],
        offsets: &mut [f64],
    ) -> Result<usize, LogError> {
        let BodyBatch {
            handles,
            bodies,
            body_ends,
        } = batch;
        let (from, count) = (records.start, records.end);
        if count > handles.len() || count > body_ends.len() || from > count {
            return Err(LogError::InvalidArgument(
                "from or count outside the batch".into(),
            ));
        }
        if positions.len() < count || offsets.len() < count {
            return Err(LogError::InvalidArgument(
                "the output arrays are shorter than the batch".into(),
            ));
        }
        self.writable()?;
        // The handles and the run being framed leave `self` while records are indexed and written,
        // and come back after (the run so that its buffer is reused).
        let mut table = std::mem::take(&mut self.handles);
        let mut run = std::mem::take(&mut self.framed);
        run.clear();
        let written = self
            .check_bodies(&mut table, handles, bodies, body_ends, from, count)
            .and_then(|()| {
                self.write_bodies(
                    &mut table,
                    &mut run,
                    handles,
                    bodies,
                    body_ends,
                    from..count,
                    store_ms,
                    positions,
                    offsets,
                )
            });
        self.handles = table;
        // A record much larger than a part grew the buffer far past it (a part's last record may
        // double it once): kept, the log would hold that much for nothing until it is closed.
        if run.capacity() > 4 * WRITE_CHUNK_BYTES {
            run = Vec::new();
        }
        self.framed = run;
        written
    }

    /// The writer's checks of a body-only batch, before anything is written: every handle
    /// registered, every body inside `bodies`, every record small enough for a segment. Queues
    /// whose entries are still in the checkpoint file are read here, as [`Log::append`] does; and
    /// each handle's queue is looked up once, for the writing to prefetch (`prefetch_ahead`).
    fn check_bodies(
        &mut self,
        table: &mut LmqHandles,
        handles: &[u32],
        bodies: &[u8],
        body_ends: &[u32],
        from: usize,
        count: usize,
    ) -> Result<(), LogError> {
        let invalid =
            |i: usize, why: &str| LogError::InvalidArgument(format!("record {i} of the batch: {why}"));
        let largest = (self.segment_bytes - SEGMENT_HEADER_BYTES as u64) as usize;
        let LmqHandles {
            bytes: names,
            ends,
            queues: cached,
            removals,
        } = table;
        if *removals != self.queues.removals() {
            // A queue was removed: an id looked up before may since name another queue.
            cached.fill(NO_QUEUE);
            *removals = self.queues.removals();
        }
        let mut body_start = if from == 0 {
            0
        } else {
            body_ends[from - 1] as usize
        };
        for i in from..count {
            let handle = handles[i];
            let name = handle_name(names, ends, handle)
                .ok_or_else(|| invalid(i, "an LMQ handle that was not registered"))?;
            let body_end = body_ends[i] as usize;
            if body_end < body_start || body_end > bodies.len() {
                return Err(invalid(i, "its body is outside the bodies"));
            }
            if BODY_RECORD_FRAME_BYTES + name.len() + body_end - body_start > largest {
                return Err(invalid(i, "larger than a segment can hold"));
            }
            body_start = body_end;
            let mut queue = cached[handle as usize];
            if queue == NO_QUEUE {
                queue = self.queues.id(name).unwrap_or(NO_QUEUE);
                cached[handle as usize] = queue;
            }
            if queue != NO_QUEUE {
                self.queues.load(name)?;
            }
        }
        Ok(())
    }

    /// Frames, indexes and writes the records of `range` (checked by [`Log::check_bodies`]), in
    /// one positional write per [`WRITE_CHUNK_BYTES`] of records (and at least one per segment
    /// they reach), in order, so a crash still leaves one write cut short and nothing after it.
    #[allow(
        clippy::too_many_arguments,
        reason = "the flat batch, as append_bodies takes it"
    )]
    fn write_bodies(
        &mut self,
        table: &mut LmqHandles,
        run: &mut Vec<u8>,
        handles: &[u32],
        bodies: &[u8],
        body_ends: &[u32],
        range: std::ops::Range<usize>,
        store_ms: u64,
        positions: &mut [f64],
        offsets: &mut [f64],
    ) -> Result<usize, LogError> {
        let LmqHandles {
            bytes: names,
            ends,
            queues: cached,
            ..
        } = table;
        let key_hash = murmur3_32(&[]);
        let first_body = if range.start == 0 {
            0
        } else {
            body_ends[range.start - 1] as usize
        };
        let last_body = range
            .end
            .checked_sub(1)
            .map_or(0, |last| body_ends[last] as usize);
        run.reserve(
            (last_body.saturating_sub(first_body) + range.len() * (BODY_RECORD_FRAME_BYTES + 64))
                .min(WRITE_CHUNK_BYTES + BODY_RECORD_FRAME_BYTES + MAX_LMQ_NAME_BYTES),
        );
        let mut body_start = if range.start == 0 {
            0
        } else {
            body_ends[range.start - 1] as usize
        };
        self.prefetch_first(cached, handles, &range);
        for i in range.clone() {
            self.prefetch_ahead(cached, handles, i, range.end);
            let handle = handles[i];
            let body_end = body_ends[i] as usize;
            let (Some(name), Some(body)) =
                (handle_name(names, ends, handle), bodies.get(body_start..body_end))
            else {
                return Err(LogError::Internal(
                    "a body-only record changed after its check".into(),
                ));
            };
            body_start = body_end;
            let size = BODY_RECORD_FRAME_BYTES + name.len() + body.len();
            if !self.has_room((run.len() + size) as u64) {
                record::seal_run(run);
                self.write_run(run, store_ms)?;
                run.clear();
                if !self.roll()? {
                    return Ok(i);
                }
            }
            let position = self.write_position;
            let entry = IndexEntry {
                position,
                size: size as u32,
                tag_hash: 0,
                key_hash,
            };
            let queue = cached[handle as usize];
            self.count_entry();
            let offset = if queue == NO_QUEUE {
                let offset = self.queues.append(name, entry, store_ms);
                cached[handle as usize] = self.queues.id(name).unwrap_or(NO_QUEUE);
                offset
            } else {
                self.queues.append_to(queue, entry, store_ms)
            };
            let at = run.len();
            frame(run, name, body, offset, store_ms);
            debug_assert_eq!(check_layout(&run[at..]).map(|l| l.size as usize), Ok(size));
            positions[i] = position as f64;
            offsets[i] = offset as f64;
            self.write_position = position + size as u64;
            if run.len() >= WRITE_CHUNK_BYTES {
                record::seal_run(run);
                self.write_run(run, store_ms)?;
                run.clear();
            }
        }
        record::seal_run(run);
        self.write_run(run, store_ms)?;
        Ok(range.end)
    }

    /// Prefetches for the records written after record `i` (of a batch ending at `end`): the
    /// queue of the one [`QUEUE_AHEAD_RECORDS`] on, and where the next entry goes in the queue of
    /// the one [`TAIL_AHEAD_RECORDS`] on, whose queue was prefetched that many records ago. So each
    /// record finds its queue and its entry's place in cache, and what is prefetched stays there:
    /// it is used a few records later, not after the rest of the batch.
    #[inline]
    fn prefetch_ahead(&self, cached: &[u32], handles: &[u32], i: usize, end: usize) {
        if let Some(queue) = queue_at(cached, handles, i + QUEUE_AHEAD_RECORDS, end) {
            self.queues.prefetch_queue(queue);
        }
        if let Some(queue) = queue_at(cached, handles, i + TAIL_AHEAD_RECORDS, end) {
            self.queues.prefetch_tail(queue);
        }
    }

    /// What [`Log::prefetch_ahead`] would have asked for the first records of `range` had records
    /// come before them: where the next entries go for the first [`TAIL_AHEAD_RECORDS`] (their
    /// queues read now), the queues of the records after them up to [`QUEUE_AHEAD_RECORDS`]. So
    /// the first records of a batch, all of a small one, are prefetched too.
    fn prefetch_first(&self, cached: &[u32], handles: &[u32], range: &std::ops::Range<usize>) {
        for at in range.start..range.start + TAIL_AHEAD_RECORDS {
            if let Some(queue) = queue_at(cached, handles, at, range.end) {
                self.queues.prefetch_tail(queue);
            }
        }
        for at in range.start + TAIL_AHEAD_RECORDS..range.start + QUEUE_AHEAD_RECORDS {
            if let Some(queue) = queue_at(cached, handles, at, range.end) {
                self.queues.prefetch_queue(queue);
            }
        }
    }
}

/// The queue of record `at` of a batch ending at `end`, if it is in the batch and its handle's
/// queue is known.
#[inline]
fn queue_at(cached: &[u32], handles: &[u32], at: usize, end: usize) -> Option<u32> {
    handles
        .get(at)
        .filter(|_| at < end)
        .and_then(|&handle| cached.get(handle as usize))
        .copied()
        .filter(|&queue| queue != NO_QUEUE)
}

/// Appends one body-only record to `out` as docs/FORMAT.md lays it out, its checksum left to
/// [`record::seal_run`]: the fixed fields are put together on the stack first, so the record takes
/// four copies rather than one per field.
fn frame(out: &mut Vec<u8>, name: &[u8], body: &[u8], offset: u64, store_ms: u64) {
    const HEAD_BYTES: usize = RECORD_HEADER_BYTES + 8 + 2;
    let size = (BODY_RECORD_FRAME_BYTES + name.len() + body.len()) as u32;
    let mut head = [0u8; HEAD_BYTES];
    head[..4].copy_from_slice(&RECORD_MAGIC);
    head[4..8].copy_from_slice(&size.to_le_bytes());
    // The checksum stays zero here; then the type, flags (no key, no tag) and one LMQ.
    head[12..16].copy_from_slice(&[TYPE_MESSAGE, 0, 1, 0]);
    head[16..24].copy_from_slice(&store_ms.to_le_bytes());
    // Born when stored.
    head[24..32].copy_from_slice(&store_ms.to_le_bytes());
    head[32..40].copy_from_slice(&offset.to_le_bytes());
    head[40..42].copy_from_slice(&(name.len() as u16).to_le_bytes());
    // An empty key and tag, no properties, then the body's length.
    let mut tail = [0u8; 10];
    tail[6..].copy_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(name);
    out.extend_from_slice(&tail);
    out.extend_from_slice(body);
}
