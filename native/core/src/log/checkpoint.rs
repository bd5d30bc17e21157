//! The index checkpoint (docs/FORMAT.md, "Checkpoint"): every consume queue as of a durable log
//! position, so reopening replays only the log after it.

use super::record::{u16_at, u32_at, u64_at};
use super::segment::FORMAT_VERSION;
use crate::hash::crc32c;
use crate::queue::{ConsumeQueue, IndexEntry, Queues};
use std::collections::VecDeque;

pub const CHECKPOINT_FILE: &str = "checkpoint";
pub const CHECKPOINT_TMP_FILE: &str = "checkpoint.tmp";
pub const CHECKPOINT_MAGIC: [u8; 8] = *b"LTCKPT01";
const FIXED_BYTES: usize = 48;
const ENTRY_BYTES: usize = 24;

/// A decoded checkpoint.
pub struct Checkpoint {
    /// Every record before this position is reflected in `queues`.
    pub position: u64,
    pub created_ms: u64,
    /// (base, last store timestamp) of each segment that existed at `position`.
    pub segments: Vec<(u64, u64)>,
    pub queues: Queues,
}

/// Why a checkpoint was not loaded.
#[derive(Debug, PartialEq, Eq)]
pub enum CheckpointProblem {
    /// Wrong magic, checksum or layout: ignored, the log is replayed from its start.
    Invalid(&'static str),
    /// A checkpoint of another version: refused.
    Version(u32),
}

/// Encodes the queues as of `position`.
pub fn encode(position: u64, created_ms: u64, segments: &[(u64, u64)], queues: &Queues) -> Vec<u8> {
    let names: usize = queues.iter().map(|(name, _)| name.len() + 26).sum();
    let capacity = FIXED_BYTES + 16 * segments.len() + names + ENTRY_BYTES * queues.entry_count() + 4;
    let mut encoder = Encoder::new(position, created_ms, segments, capacity);
    for (name, queue) in queues.iter() {
        encoder.queue(name, queue);
    }
    encoder.finish()
}

/// A checkpoint written a queue at a time, so the caller can let go of the log between batches of
/// queues (handle.rs). Each queue is written with its entries of records before `position` only:
/// entries are in position order, so those of later appends are cut from the end.
pub struct Encoder {
    position: u64,
    out: Vec<u8>,
    queues: u64,
}

/// Where the queue count sits in the fixed header.
const QUEUE_COUNT_AT: usize = 40;

impl Encoder {
    pub fn new(position: u64, created_ms: u64, segments: &[(u64, u64)], capacity: usize) -> Encoder {
        let mut out = Vec::with_capacity(capacity.max(FIXED_BYTES + 16 * segments.len() + 4));
        out.extend_from_slice(&CHECKPOINT_MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&position.to_le_bytes());
        out.extend_from_slice(&created_ms.to_le_bytes());
        out.extend_from_slice(&(segments.len() as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes()); // the queue count, set by `finish`
        for &(base, last_store_ms) in segments {
            out.extend_from_slice(&base.to_le_bytes());
            out.extend_from_slice(&last_store_ms.to_le_bytes());
        }
        Encoder {
            position,
            out,
            queues: 0,
        }
    }

    /// Adds one queue as of the checkpoint's position.
    pub fn queue(&mut self, name: &[u8], queue: &ConsumeQueue) {
        let entries = queue.entries();
        let count = entries.partition_point(|e| e.position < self.position);
        let out = &mut self.out;
        out.reserve(2 + name.len() + 24 + ENTRY_BYTES * count);
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(name);
        out.extend_from_slice(&queue.min_offset().to_le_bytes());
        out.extend_from_slice(&(queue.min_offset() + count as u64).to_le_bytes());
        out.extend_from_slice(&queue.last_write_ms().to_le_bytes());
        for entry in entries.range(..count) {
            out.extend_from_slice(&entry.position.to_le_bytes());
            out.extend_from_slice(&entry.size.to_le_bytes());
            out.extend_from_slice(&entry.tag_hash.to_le_bytes());
            out.extend_from_slice(&entry.key_hash.to_le_bytes());
            out.extend_from_slice(&0u32.to_le_bytes());
        }
        self.queues += 1;
    }

    /// The checkpoint's bytes: the queue count set and the checksum appended.
    pub fn finish(mut self) -> Vec<u8> {
        self.out[QUEUE_COUNT_AT..QUEUE_COUNT_AT + 8].copy_from_slice(&self.queues.to_le_bytes());
        let crc = crc32c(&self.out);
        self.out.extend_from_slice(&crc.to_le_bytes());
        self.out
    }
}

/// Decodes a checkpoint, checking its magic, version, checksum and layout.
pub fn decode(bytes: &[u8]) -> Result<Checkpoint, CheckpointProblem> {
    let invalid = CheckpointProblem::Invalid;
    if bytes.len() < FIXED_BYTES + 4 || bytes[..6] != CHECKPOINT_MAGIC[..6] {
        return Err(invalid("no checkpoint magic"));
    }
    let version = u32_at(bytes, 8).unwrap_or(0);
    if bytes[..8] != CHECKPOINT_MAGIC || version != FORMAT_VERSION {
        return Err(CheckpointProblem::Version(version));
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    if u32_at(crc, 0) != Some(crc32c(body)) {
        return Err(invalid("checkpoint checksum mismatch"));
    }
    let position = u64_at(body, 16).unwrap_or(0);
    let created_ms = u64_at(body, 24).unwrap_or(0);
    let segment_count = u32_at(body, 32).unwrap_or(0) as usize;
    let queue_count = u64_at(body, 40).unwrap_or(0);
    let mut at = FIXED_BYTES;
    let mut segments = Vec::new();
    for _ in 0..segment_count {
        let (Some(base), Some(last)) = (u64_at(body, at), u64_at(body, at + 8)) else {
            return Err(invalid("checkpoint segments overrun the file"));
        };
        segments.push((base, last));
        at += 16;
    }
    let mut queues = Queues::default();
    for _ in 0..queue_count {
        let name_len = usize::from(u16_at(body, at).ok_or(invalid("checkpoint queue overruns the file"))?);
        let name = body
            .get(at + 2..at + 2 + name_len)
            .ok_or(invalid("checkpoint name overruns the file"))?;
        at += 2 + name_len;
        let (Some(min_offset), Some(next_offset), Some(last_write_ms)) =
            (u64_at(body, at), u64_at(body, at + 8), u64_at(body, at + 16))
        else {
            return Err(invalid("checkpoint queue overruns the file"));
        };
        at += 24;
        let count = next_offset
            .checked_sub(min_offset)
            .ok_or(invalid("checkpoint queue offsets reversed"))?;
        let entries_end = usize::try_from(count)
            .ok()
            .and_then(|count| count.checked_mul(ENTRY_BYTES))
            .and_then(|bytes| bytes.checked_add(at))
            .filter(|&end| end <= body.len())
            .ok_or(invalid("checkpoint entries overrun the file"))?;
        let entries: VecDeque<IndexEntry> = body[at..entries_end]
            .chunks_exact(ENTRY_BYTES)
            .map(|entry| IndexEntry {
                position: u64_at(entry, 0).unwrap_or(0),
                size: u32_at(entry, 8).unwrap_or(0),
                tag_hash: u32_at(entry, 12).unwrap_or(0),
                key_hash: u32_at(entry, 16).unwrap_or(0),
            })
            .collect();
        at = entries_end;
        queues.restore(
            name,
            ConsumeQueue {
                min_offset,
                last_write_ms,
                entries,
            },
        );
    }
    if at != body.len() {
        return Err(invalid("checkpoint parts do not add up to its size"));
    }
    Ok(Checkpoint {
        position,
        created_ms,
        segments,
        queues,
    })
}
