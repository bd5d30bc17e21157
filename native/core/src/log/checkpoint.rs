//! The index checkpoint (docs/FORMAT.md, "Checkpoint"): every consume queue as of a durable log
//! position, so reopening replays only the log after it. Version 2 (written) puts a directory of
//! the LMQs, checksummed on its own, before their entry blocks, each with its own checksum, so a
//! reopen reads the directory and leaves each block in the mapped file until its LMQ is used
//! (queue/stored.rs). Version 1 (read only) interleaves them under one checksum and is loaded whole.

use super::record::{u16_at, u32_at, u64_at};
use crate::hash::crc32c;
use crate::queue::{
    check_entries, decode_entry, encode_entry, CheckpointFile, ConsumeQueue, Entries, Queues, StoredEntries,
    STORED_ENTRY_BYTES,
};
use std::collections::VecDeque;
use std::sync::Arc;

pub const CHECKPOINT_FILE: &str = "checkpoint";
pub const CHECKPOINT_TMP_FILE: &str = "checkpoint.tmp";
/// Version 2, the one written.
pub const CHECKPOINT_MAGIC: [u8; 8] = *b"LTCKPT02";
pub const CHECKPOINT_VERSION: u32 = 2;
/// Version 1, still read (a directory written before version 2 opens without a full replay).
pub const CHECKPOINT_V1_MAGIC: [u8; 8] = *b"LTCKPT01";
pub const CHECKPOINT_V1_VERSION: u32 = 1;
const V1_FIXED_BYTES: usize = 48;
/// Version 2's fixed header.
pub const HEADER_BYTES: usize = 64;
const ENTRY_BYTES: usize = STORED_ENTRY_BYTES;
/// Where the LMQ count, the directory's end, its CRC and the header's CRC sit in the v2 header.
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
    /// Version 2: stored queues, their entries still in the file; version 1: loaded queues.
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
        write_header_start(
            &mut head,
            CHECKPOINT_MAGIC,
            CHECKPOINT_VERSION,
            position,
            created_ms,
            segments.len(),
        );
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
        }
    }

    /// Adds one queue as of the checkpoint's position.
    pub fn queue(&mut self, name: &[u8], queue: &ConsumeQueue) {
        let block_at = self.blocks.len();
        let (count, crc, first_position) = match queue.entries() {
            Entries::Stored(stored) if stored.tail.is_empty() => {
                let block = &stored.block;
                self.blocks.extend_from_slice(block.bytes());
                self.copied.push((Arc::from(name), block.clone(), block_at));
                (block.count, block.crc, block.first_position)
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
                (count, crc32c(&self.blocks[block_at..]), first)
            }
            _ => {
                let entries = queue.entries();
                let count = entries.partition_point(|e| e.position < self.position);
                self.blocks.reserve(ENTRY_BYTES * count);
                for entry in entries.range(0, count) {
                    encode_entry(&mut self.blocks, entry);
                }
                let first = entries.front().filter(|_| count > 0).map_or(0, |e| e.position);
                (count, crc32c(&self.blocks[block_at..]), first)
            }
        };
        let head = &mut self.head;
        head.extend_from_slice(&(name.len() as u16).to_le_bytes());
        head.extend_from_slice(name);
        head.extend_from_slice(&queue.min_offset().to_le_bytes());
        head.extend_from_slice(&(queue.min_offset() + count as u64).to_le_bytes());
        head.extend_from_slice(&queue.last_write_ms().to_le_bytes());
        head.extend_from_slice(&first_position.to_le_bytes());
        head.extend_from_slice(&crc.to_le_bytes());
        head.extend_from_slice(&0u32.to_le_bytes());
        self.queues += 1;
    }

    /// The checkpoint: the header completed (queue count, directory end, checksums).
    pub fn finish(mut self) -> Encoded {
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

/// Decodes a mapped checkpoint file, checking its magic, version, checksums and layout. A version 2
/// file gives stored queues whose blocks are checked when loaded; a version 1 file is loaded whole.
pub fn decode(file: &Arc<CheckpointFile>) -> Result<Checkpoint, CheckpointProblem> {
    let bytes = &file.map[..];
    if bytes.len() < V1_FIXED_BYTES + 4 || bytes[..6] != CHECKPOINT_MAGIC[..6] {
        return Err(CheckpointProblem::Invalid("no checkpoint magic"));
    }
    let version = u32_at(bytes, 8).unwrap_or(0);
    if bytes[..8] == CHECKPOINT_MAGIC && version == CHECKPOINT_VERSION {
        decode_v2(file)
    } else if bytes[..8] == CHECKPOINT_V1_MAGIC && version == CHECKPOINT_V1_VERSION {
        decode_v1(bytes)
    } else {
        Err(CheckpointProblem::Version(version))
    }
}

fn decode_v2(file: &Arc<CheckpointFile>) -> Result<Checkpoint, CheckpointProblem> {
    let invalid = CheckpointProblem::Invalid;
    let bytes = &file.map[..];
    if bytes.len() < HEADER_BYTES || u32_at(bytes, HEADER_CRC_AT) != Some(crc32c(&bytes[..HEADER_CRC_AT])) {
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

/// A queue's name, minimum and next offset and last write time (both versions start a queue so).
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

fn decode_v1(bytes: &[u8]) -> Result<Checkpoint, CheckpointProblem> {
    let invalid = CheckpointProblem::Invalid;
    if bytes.len() < V1_FIXED_BYTES + 4 {
        return Err(invalid("checkpoint shorter than its header"));
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    if u32_at(crc, 0) != Some(crc32c(body)) {
        return Err(invalid("checkpoint checksum mismatch"));
    }
    let position = u64_at(body, 16).unwrap_or(0);
    let created_ms = u64_at(body, 24).unwrap_or(0);
    let segment_count = u32_at(body, 32).unwrap_or(0) as usize;
    let queue_count = u64_at(body, 40).unwrap_or(0);
    let mut at = V1_FIXED_BYTES;
    let segments = read_segments(body, &mut at, segment_count)?;
    let mut queues = Queues::default();
    for _ in 0..queue_count {
        let (name, min_offset, next_offset, last_write_ms) = read_queue_head(body, &mut at)?;
        let entries_end = usize::try_from(next_offset - min_offset)
            .ok()
            .and_then(|count| count.checked_mul(ENTRY_BYTES))
            .and_then(|bytes| bytes.checked_add(at))
            .filter(|&end| end <= body.len())
            .ok_or(invalid("checkpoint entries overrun the file"))?;
        let entries: VecDeque<_> = body[at..entries_end]
            .chunks_exact(ENTRY_BYTES)
            .map(decode_entry)
            .collect();
        check_entries(&entries, position).map_err(invalid)?;
        at = entries_end;
        let queue = ConsumeQueue {
            min_offset,
            last_write_ms,
            entries: entries.into(),
        };
        queues.restore(name, queue);
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

/// The first 40 bytes both versions share: magic, version, zero, position P, creation time, segment
/// count, zero (docs/FORMAT.md).
fn write_header_start(
    out: &mut Vec<u8>,
    magic: [u8; 8],
    version: u32,
    position: u64,
    created_ms: u64,
    segments: usize,
) {
    out.extend_from_slice(&magic);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&position.to_le_bytes());
    out.extend_from_slice(&created_ms.to_le_bytes());
    out.extend_from_slice(&(segments as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
}

/// A version 1 checkpoint of `queues` (all loaded), as releases before version 2 wrote it: tests
/// check that such files still open.
pub fn encode_v1(position: u64, created_ms: u64, segments: &[(u64, u64)], queues: &Queues) -> Vec<u8> {
    let mut out = Vec::new();
    write_header_start(
        &mut out,
        CHECKPOINT_V1_MAGIC,
        CHECKPOINT_V1_VERSION,
        position,
        created_ms,
        segments.len(),
    );
    out.extend_from_slice(&(queues.len() as u64).to_le_bytes());
    for &(base, last) in segments {
        out.extend_from_slice(&base.to_le_bytes());
        out.extend_from_slice(&last.to_le_bytes());
    }
    for (name, queue) in queues.iter() {
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(name);
        out.extend_from_slice(&queue.min_offset().to_le_bytes());
        out.extend_from_slice(&queue.next_offset().to_le_bytes());
        out.extend_from_slice(&queue.last_write_ms().to_le_bytes());
        for entry in queue.entries() {
            encode_entry(&mut out, entry);
        }
    }
    let crc = crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}
