//! Index entries still in a checkpoint file (docs/FORMAT.md, "Checkpoint", version 2): an LMQ
//! loaded from a checkpoint keeps only its offsets and where its entry block is until it is first
//! used, so reopening costs one pass over the LMQ directory rather than every entry of every LMQ.

use super::IndexEntry;
use crate::hash::crc32c;
use crate::limits::{MAX_LMQS_PER_RECORD, MAX_SEGMENT_BYTES, SEGMENT_HEADER_BYTES};
use memmap2::Mmap;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;

/// Bytes of one entry in a checkpoint: position, size, tag hash, key hash, zero.
pub const STORED_ENTRY_BYTES: usize = 24;
/// The smallest size an entry may give: a record's fixed header (log/record.rs).
const MIN_ENTRY_RECORD_BYTES: u32 = 32;
/// The largest size an entry may give: all of the largest segment after its header.
const MAX_ENTRY_RECORD_BYTES: u32 = (MAX_SEGMENT_BYTES - SEGMENT_HEADER_BYTES) as u32;

/// A checkpoint file, mapped read only. It stays mapped while an LMQ's block is read from it: a
/// newer checkpoint renamed over it leaves this one's inode alive until the last user lets go.
pub struct CheckpointFile {
    pub path: PathBuf,
    pub map: Mmap,
}

/// Where an LMQ's entries are, and what they must checksum to.
#[derive(Clone)]
pub struct StoredEntries {
    pub file: Arc<CheckpointFile>,
    /// Byte offset of the block in the file.
    pub at: usize,
    pub count: usize,
    /// CRC-32C of the block.
    pub crc: u32,
    /// Position of the record of the first entry (0 when there is none).
    pub first_position: u64,
    /// The checkpoint's position: every entry's record ends at or before it.
    pub end_position: u64,
}

/// A block that failed its checksum or layout: the file, the offset and why.
#[derive(Debug, PartialEq, Eq)]
pub struct BadBlock {
    pub file: String,
    pub at: u64,
    pub why: &'static str,
}

impl StoredEntries {
    /// The block's bytes (checked to be inside the file when the directory was read).
    pub fn bytes(&self) -> &[u8] {
        let end = self.at + self.count * STORED_ENTRY_BYTES;
        self.file.map.get(self.at..end).unwrap_or(&[])
    }

    /// Checks that the block lies inside its file and matches its checksum, without reading its
    /// entries.
    pub fn check(&self) -> Result<(), BadBlock> {
        let bad = |why| BadBlock {
            file: self.file.path.display().to_string(),
            at: self.at as u64,
            why,
        };
        let bytes = self.bytes();
        if bytes.len() != self.count * STORED_ENTRY_BYTES {
            return Err(bad("checkpoint entry block overruns the file"));
        }
        if crc32c(bytes) != self.crc {
            return Err(bad("checkpoint entry block checksum mismatch"));
        }
        Ok(())
    }

    /// Reads the entries, checking the block's checksum and that positions never go back (a record
    /// that names an LMQ twice gives it two entries at one position).
    pub fn load(&self) -> Result<VecDeque<IndexEntry>, BadBlock> {
        let bad = |why| BadBlock {
            file: self.file.path.display().to_string(),
            at: self.at as u64,
            why,
        };
        self.check()?;
        let bytes = self.bytes();
        let entries: VecDeque<IndexEntry> =
            bytes.chunks_exact(STORED_ENTRY_BYTES).map(decode_entry).collect();
        if entries.front().is_some_and(|e| e.position != self.first_position) {
            return Err(bad("checkpoint entry block disagrees with its directory"));
        }
        check_entries(&entries, self.end_position).map_err(bad)?;
        Ok(entries)
    }
}

/// Checks what a checkpoint says of an LMQ's entries before anything trusts it, since a read
/// allocates the sizes the entries give before it looks at the records: each size within what a
/// record can be, each record ending at or before `end_position` (the checkpoint's position), and
/// the records in log order without overlapping. Two entries may name one record (a record that
/// names the LMQ twice), with the same size. So the bytes of a read are bounded by the log's.
pub fn check_entries<'a>(
    entries: impl IntoIterator<Item = &'a IndexEntry>,
    end_position: u64,
) -> Result<(), &'static str> {
    let mut previous: Option<&IndexEntry> = None;
    // Entries in a row, up to the previous one, that name the previous one's record.
    let mut repeats = 0usize;
    for entry in entries {
        if !(MIN_ENTRY_RECORD_BYTES..=MAX_ENTRY_RECORD_BYTES).contains(&entry.size) {
            return Err("checkpoint entry gives a record size no record can have");
        }
        if entry
            .position
            .checked_add(u64::from(entry.size))
            .is_none_or(|end| end > end_position)
        {
            return Err("checkpoint entry points past the checkpoint's position");
        }
        let same_record = previous
            .is_some_and(|previous| previous.position == entry.position && previous.size == entry.size);
        if let Some(previous) = previous {
            if !same_record && previous.position + u64::from(previous.size) > entry.position {
                return Err("checkpoint entries overlap or go back");
            }
        }
        // A record names an LMQ at most MAX_LMQS_PER_RECORD times: more entries for it would let a
        // read allocate many times the log's bytes.
        if same_record && repeats >= MAX_LMQS_PER_RECORD {
            return Err("checkpoint entries name one record too often");
        }
        repeats = if same_record { repeats + 1 } else { 1 };
        previous = Some(entry);
    }
    Ok(())
}

/// One 24-byte entry (its length is checked by the caller).
pub fn decode_entry(bytes: &[u8]) -> IndexEntry {
    let word = |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    IndexEntry {
        position: u64::from(word(0)) | (u64::from(word(4)) << 32),
        size: word(8),
        tag_hash: word(12),
        key_hash: word(16),
    }
}

/// Appends one entry's 24 bytes to `out`.
pub fn encode_entry(out: &mut Vec<u8>, entry: &IndexEntry) {
    // Put together on the stack and appended in one copy, one capacity check per entry rather than
    // one per field: a checkpoint encodes every entry of every queue while appends wait for the log.
    let mut bytes = [0u8; STORED_ENTRY_BYTES];
    bytes[..8].copy_from_slice(&entry.position.to_le_bytes());
    bytes[8..12].copy_from_slice(&entry.size.to_le_bytes());
    bytes[12..16].copy_from_slice(&entry.tag_hash.to_le_bytes());
    bytes[16..20].copy_from_slice(&entry.key_hash.to_le_bytes());
    out.extend_from_slice(&bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(position: u64, size: u32) -> IndexEntry {
        IndexEntry {
            position,
            size,
            tag_hash: 0,
            key_hash: 0,
        }
    }

    #[test]
    fn one_record_may_be_named_as_often_as_a_record_names_lmqs_and_no_more() {
        let most: Vec<IndexEntry> = (0..MAX_LMQS_PER_RECORD).map(|_| entry(64, 100)).collect();
        assert_eq!(check_entries(&most, 1_000), Ok(()));
        let one_more: Vec<IndexEntry> = (0..=MAX_LMQS_PER_RECORD).map(|_| entry(64, 100)).collect();
        assert!(check_entries(&one_more, 1_000).is_err());
        // Another record after the run starts a count of its own.
        let mut two = most.clone();
        two.extend((0..MAX_LMQS_PER_RECORD).map(|_| entry(164, 100)));
        assert_eq!(check_entries(&two, 1_000), Ok(()));
    }
}
