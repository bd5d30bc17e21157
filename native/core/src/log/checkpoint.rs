//! The index checkpoint (docs/FORMAT.md, "Checkpoint"): every consume queue as of a durable log
//! position, so reopening replays only the log after it. Version 2, the one format written and read,
//! puts a directory of the LMQs, checksummed on its own, before their entry blocks, each with its
//! own checksum, so a reopen reads the directory and leaves each block in the mapped file until its
//! LMQ is used (queue/stored.rs).

use super::record::{u16_at, u32_at, u64_at};
use crate::hash::crc32c;
use crate::queue::{
    encode_entry, CheckpointFile, ConsumeQueue, Entries, Queues, StoredEntries, STORED_ENTRY_BYTES,
};
use std::sync::Arc;

pub const CHECKPOINT_FILE: &str = "checkpoint";
pub const CHECKPOINT_TMP_FILE: &str = "checkpoint.tmp";
/// The magic and version of the one format read and written; any other version is refused.
pub const CHECKPOINT_MAGIC: [u8; 8] = *b"LTCKPT02";
pub const CHECKPOINT_VERSION: u32 = 2;
/// The fixed header; a shorter file is not a checkpoint, whatever it starts with.
pub const HEADER_BYTES: usize = 64;
const ENTRY_BYTES: usize = STORED_ENTRY_BYTES;
/// Where the LMQ count, the directory's end, its CRC and the header's CRC sit in the header.
const QUEUE_COUNT_AT: usize = 40;
const DIRECTORY_END_AT: usize = 48;
const DIRECTORY_CRC_AT: usize = 56;
const HEADER_CRC_AT: usize = 60;

/// A decoded checkpoint.
pub struct Checkpoint {
    /// Every record before this position is reflected in `queues`.
    pub position: u64,
    pub created_ms: u64,
    /// (base, last store timestamp) of each segment that existed at `position`.
    pub segments: Vec<(u64, u64)>,
    /// Stored queues, their entries still in the file until each is first used.
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

/// A checkpoint written a queue at a time, so the caller can let go of the log between batches of
/// queues (handle.rs). Each queue is written with its entries of records before `position` only:
/// entries are in position order, so those of later appends are cut from the end. A queue still
/// stored in an older checkpoint has its block copied as it is (all its records are older).
pub struct Encoder {
    /// The header and segment table, then the directory.
    head: Vec<u8>,
    /// The entry blocks, in directory order.
    blocks: Vec<u8>,
    position: u64,
    queues: u64,
    /// Stored queues whose blocks were copied: name, where the block was, where it is in `blocks`.
    copied: Vec<(Arc<[u8]>, StoredEntries, usize)>,
    /// Blocks encoded but not yet checksummed: where the checksum goes in `head`, and the block's
    /// range in `blocks` (see [`Encoder::checksum_blocks`]).
    unsummed: Vec<(usize, std::ops::Range<usize>)>,
}

/// What [`Encoder::finish`] produces: the file's bytes in two parts (written one after the other),
/// and the copied blocks' offsets in it, so their queues can move to the new file once installed.
pub struct Encoded {
    pub head: Vec<u8>,
    pub blocks: Vec<u8>,
    pub copied: Vec<(Arc<[u8]>, StoredEntries, usize)>,
}

impl Encoder {
    pub fn new(position: u64, created_ms: u64, segments: &[(u64, u64)], capacity: usize) -> Encoder {
        let mut head = Vec::with_capacity(HEADER_BYTES + 16 * segments.len() + capacity / 8);
        // Magic, version, zero, position P, creation time, segment count, zero (docs/FORMAT.md).
        head.extend_from_slice(&CHECKPOINT_MAGIC);
        head.extend_from_slice(&CHECKPOINT_VERSION.to_le_bytes());
        head.extend_from_slice(&0u32.to_le_bytes());
        head.extend_from_slice(&position.to_le_bytes());
        head.extend_from_slice(&created_ms.to_le_bytes());
        head.extend_from_slice(&(segments.len() as u32).to_le_bytes());
        head.extend_from_slice(&0u32.to_le_bytes());
        // The queue count, the directory's end and the two checksums, set by `finish`.
        head.resize(HEADER_BYTES, 0);
        for &(base, last_store_ms) in segments {
            head.extend_from_slice(&base.to_le_bytes());
            head.extend_from_slice(&last_store_ms.to_le_bytes());
        }
        Encoder {
            head,
            blocks: Vec::with_capacity(capacity),
            position,
            queues: 0,
            copied: Vec::new(),
            unsummed: Vec::new(),
        }
    }

    /// Adds one queue as of the checkpoint's position. Its entries are copied; their checksum is
    /// left to [`Encoder::checksum_blocks`], which needs nothing of the log, so that the caller
    /// can compute it after letting go of the log.
    pub fn queue(&mut self, name: &[u8], queue: &ConsumeQueue) {
        let block_at = self.blocks.len();
        let (count, crc, first_position) = match queue.entries() {
            Entries::Stored(stored) if stored.tail.is_empty() => {
                let block = &stored.block;
                self.blocks.extend_from_slice(block.bytes());
                self.copied.push((Arc::from(name), block.clone(), block_at));
                (block.count, Some(block.crc), block.first_position)
            }
            Entries::Stored(stored) => {
                // The block (its checksum checked when replay appended after it), then the entries
                // held after it before the checkpoint's position: a block of its own.
                debug_assert!(stored.checked, "entries held after an unchecked block");
                let block = &stored.block;
                self.blocks.extend_from_slice(block.bytes());
                let held = stored.tail.partition_point(|e| e.position < self.position);
                for entry in stored.tail.range(..held) {
                    encode_entry(&mut self.blocks, entry);
                }
                let count = block.count + held;
                let first = if block.count > 0 {
                    block.first_position
                } else {
                    stored.tail.front().filter(|_| held > 0).map_or(0, |e| e.position)
                };
                (count, None, first)
            }
            _ => {
                let entries = queue.entries();
                // Entries are in position order, and those of appends after the checkpoint's
                // position are a few at the end: counted from there, not found by a binary search
                // whose every probe is a cache miss in a queue not touched for a while.
                let after = entries
                    .iter()
                    .rev()
                    .take_while(|e| e.position >= self.position)
                    .count();
                let count = entries.loaded() - after;
                self.blocks.reserve(ENTRY_BYTES * count);
                for entry in entries.range(0, count) {
                    encode_entry(&mut self.blocks, entry);
                }
                let first = entries.front().filter(|_| count > 0).map_or(0, |e| e.position);
                (count, None, first)
            }
        };
        let head = &mut self.head;
        head.extend_from_slice(&(name.len() as u16).to_le_bytes());
        head.extend_from_slice(name);
        head.extend_from_slice(&queue.min_offset().to_le_bytes());
        head.extend_from_slice(&(queue.min_offset() + count as u64).to_le_bytes());
        head.extend_from_slice(&queue.last_write_ms().to_le_bytes());
        head.extend_from_slice(&first_position.to_le_bytes());
        if crc.is_none() {
            self.unsummed.push((head.len(), block_at..self.blocks.len()));
        }
        head.extend_from_slice(&crc.unwrap_or(0).to_le_bytes());
        head.extend_from_slice(&0u32.to_le_bytes());
        self.queues += 1;
    }

    /// Computes the checksums of the blocks [`Encoder::queue`] encoded since the last call.
    pub fn checksum_blocks(&mut self) {
        for (crc_at, block) in self.unsummed.drain(..) {
            let crc = crc32c(&self.blocks[block]);
            self.head[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
        }
    }

    /// The checkpoint: the header completed (queue count, directory end, checksums).
    pub fn finish(mut self) -> Encoded {
        self.checksum_blocks();
        let directory_end = self.head.len();
        self.head[QUEUE_COUNT_AT..QUEUE_COUNT_AT + 8].copy_from_slice(&self.queues.to_le_bytes());
        self.head[DIRECTORY_END_AT..DIRECTORY_END_AT + 8]
            .copy_from_slice(&(directory_end as u64).to_le_bytes());
        let directory_crc = crc32c(&self.head[HEADER_BYTES..]);
        self.head[DIRECTORY_CRC_AT..DIRECTORY_CRC_AT + 4].copy_from_slice(&directory_crc.to_le_bytes());
        let header_crc = crc32c(&self.head[..HEADER_CRC_AT]);
        self.head[HEADER_CRC_AT..HEADER_CRC_AT + 4].copy_from_slice(&header_crc.to_le_bytes());
        let copied = self
            .copied
            .into_iter()
            .map(|(name, old, at)| (name, old, directory_end + at))
            .collect();
        Encoded {
            head: self.head,
            blocks: self.blocks,
            copied,
        }
    }
}

/// Encodes every queue at once (tests and small logs; handle.rs encodes in batches).
pub fn encode(position: u64, created_ms: u64, segments: &[(u64, u64)], queues: &Queues) -> Vec<u8> {
    let mut encoder = Encoder::new(position, created_ms, segments, ENTRY_BYTES * queues.entry_count());
    let names = queues.name_list();
    for i in 0..names.len() {
        let name = names.get(i);
        if let Some(queue) = queues.get(name) {
            encoder.queue(name, queue);
        }
    }
    let Encoded { mut head, blocks, .. } = encoder.finish();
    head.extend_from_slice(&blocks);
    head
}

/// Decodes a mapped checkpoint file, checking its magic, version, checksums and layout. It gives
/// stored queues whose blocks are checked when loaded. A file with the checkpoint magic's `LTCKPT`
/// prefix but another magic or version is refused: a format this release does not read.
pub fn decode(file: &Arc<CheckpointFile>) -> Result<Checkpoint, CheckpointProblem> {
    let invalid = CheckpointProblem::Invalid;
    let bytes = &file.map[..];
    if bytes.len() < HEADER_BYTES || bytes[..6] != CHECKPOINT_MAGIC[..6] {
        return Err(invalid("no checkpoint header"));
    }
    let version = u32_at(bytes, 8).unwrap_or(0);
    if bytes[..8] != CHECKPOINT_MAGIC || version != CHECKPOINT_VERSION {
        return Err(CheckpointProblem::Version(version));
    }
    if u32_at(bytes, HEADER_CRC_AT) != Some(crc32c(&bytes[..HEADER_CRC_AT])) {
        return Err(invalid("checkpoint header checksum mismatch"));
    }
    let position = u64_at(bytes, 16).unwrap_or(0);
    let created_ms = u64_at(bytes, 24).unwrap_or(0);
    let segment_count = u32_at(bytes, 32).unwrap_or(0) as usize;
    let queue_count = u64_at(bytes, QUEUE_COUNT_AT).unwrap_or(0);
    let directory_end = usize::try_from(u64_at(bytes, DIRECTORY_END_AT).unwrap_or(0))
        .ok()
        .filter(|&end| (HEADER_BYTES..=bytes.len()).contains(&end))
        .ok_or(invalid("checkpoint directory overruns the file"))?;
    let directory = &bytes[..directory_end];
    if u32_at(bytes, DIRECTORY_CRC_AT) != Some(crc32c(&directory[HEADER_BYTES..])) {
        return Err(invalid("checkpoint directory checksum mismatch"));
    }
    let mut at = HEADER_BYTES;
    let segments = read_segments(directory, &mut at, segment_count)?;
    let mut queues = Queues::default();
    let mut block_at = directory_end;
    for _ in 0..queue_count {
        let (name, min_offset, next_offset, last_write_ms) = read_queue_head(directory, &mut at)?;
        let (Some(first_position), Some(crc)) = (u64_at(directory, at), u32_at(directory, at + 8)) else {
            return Err(invalid("checkpoint directory entry overruns the directory"));
        };
        at += 16;
        let count =
            usize::try_from(next_offset - min_offset).map_err(|_| invalid("checkpoint queue too long"))?;
        let block_end = count
            .checked_mul(ENTRY_BYTES)
            .and_then(|bytes| bytes.checked_add(block_at))
            .filter(|&end| end <= bytes.len())
            .ok_or(invalid("checkpoint entries overrun the file"))?;
        if queues.get(name).is_some() || (count == 0 && first_position != 0) {
            return Err(invalid("checkpoint directory entry is inconsistent"));
        }
        let stored = StoredEntries {
            file: Arc::clone(file),
            at: block_at,
            count,
            crc,
            first_position,
            end_position: position,
        };
        queues.restore(name, ConsumeQueue::from_stored(min_offset, last_write_ms, stored));
        block_at = block_end;
    }
    if at != directory_end || block_at != bytes.len() {
        return Err(invalid("checkpoint parts do not add up to its size"));
    }
    Ok(Checkpoint {
        position,
        created_ms,
        segments,
        queues,
    })
}

fn read_segments(bytes: &[u8], at: &mut usize, count: usize) -> Result<Vec<(u64, u64)>, CheckpointProblem> {
    let mut segments = Vec::new();
    for _ in 0..count {
        let (Some(base), Some(last)) = (u64_at(bytes, *at), u64_at(bytes, *at + 8)) else {
            return Err(CheckpointProblem::Invalid("checkpoint segments overrun the file"));
        };
        segments.push((base, last));
        *at += 16;
    }
    Ok(segments)
}

/// A directory entry's name, minimum and next offset and last write time.
fn read_queue_head<'a>(
    bytes: &'a [u8],
    at: &mut usize,
) -> Result<(&'a [u8], u64, u64, u64), CheckpointProblem> {
    let invalid = CheckpointProblem::Invalid;
    let name_len = usize::from(u16_at(bytes, *at).ok_or(invalid("checkpoint queue overruns the file"))?);
    let name = bytes
        .get(*at + 2..*at + 2 + name_len)
        .ok_or(invalid("checkpoint name overruns the file"))?;
    // As the js engine reads names: UTF-8 text, never empty (no record names an empty LMQ).
    if name.is_empty() || (!name.is_ascii() && std::str::from_utf8(name).is_err()) {
        return Err(invalid("checkpoint name is empty or not UTF-8"));
    }
    *at += 2 + name_len;
    let (Some(min_offset), Some(next_offset), Some(last_write_ms)) = (
        u64_at(bytes, *at),
        u64_at(bytes, *at + 8),
        u64_at(bytes, *at + 16),
    ) else {
        return Err(invalid("checkpoint queue overruns the file"));
    };
    *at += 24;
    if next_offset < min_offset {
        return Err(invalid("checkpoint queue offsets reversed"));
    }
    Ok((name, min_offset, next_offset, last_write_ms))
}
