//! Segment files: a 64-byte header, then records back to back (docs/FORMAT.md, "Segment"). Each
//! segment is one file and one shared mapping, whatever the number of LMQs.

use super::record::u32_at;
use super::record::u64_at;
use super::storage::Storage;
use crate::hash::crc32c;
use crate::limits::{MAX_SEGMENT_BYTES, MIN_SEGMENT_BYTES, SEGMENT_HEADER_BYTES};
use memmap2::{MmapOptions, MmapRaw};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub const SEGMENT_MAGIC: [u8; 8] = *b"LTLOGSEG";
/// The version of the segment and record layouts.
pub const FORMAT_VERSION: u32 = 1;
const HEADER_CRC_AT: usize = 60;

/// The fields of a segment header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentHeader {
    pub base: u64,
    pub size: u64,
    pub created_ms: u64,
}

/// Why a header was not accepted.
#[derive(Debug, PartialEq, Eq)]
pub enum HeaderProblem {
    /// Not a segment header of any version (or a torn one).
    Invalid(&'static str),
    /// A segment header of a version this release does not know.
    Version(u32),
}

impl SegmentHeader {
    pub fn encode(&self) -> [u8; SEGMENT_HEADER_BYTES] {
        let mut out = [0u8; SEGMENT_HEADER_BYTES];
        out[..8].copy_from_slice(&SEGMENT_MAGIC);
        out[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        out[12..16].copy_from_slice(&(SEGMENT_HEADER_BYTES as u32).to_le_bytes());
        out[16..24].copy_from_slice(&self.base.to_le_bytes());
        out[24..32].copy_from_slice(&self.size.to_le_bytes());
        out[32..40].copy_from_slice(&self.created_ms.to_le_bytes());
        let crc = crc32c(&out[..HEADER_CRC_AT]);
        out[HEADER_CRC_AT..].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Reads a header, checking magic, version, checksum, header size and segment size.
    pub fn decode(bytes: &[u8]) -> Result<SegmentHeader, HeaderProblem> {
        if bytes.len() < SEGMENT_HEADER_BYTES || bytes[..8] != SEGMENT_MAGIC {
            return Err(HeaderProblem::Invalid("no segment magic"));
        }
        let version = u32_at(bytes, 8).unwrap_or(0);
        if version != FORMAT_VERSION {
            return Err(HeaderProblem::Version(version));
        }
        if u32_at(bytes, HEADER_CRC_AT) != Some(crc32c(&bytes[..HEADER_CRC_AT])) {
            return Err(HeaderProblem::Invalid("segment header checksum mismatch"));
        }
        let header = SegmentHeader {
            base: u64_at(bytes, 16).unwrap_or(0),
            size: u64_at(bytes, 24).unwrap_or(0),
            created_ms: u64_at(bytes, 32).unwrap_or(0),
        };
        let size_ok = (MIN_SEGMENT_BYTES as u64..=MAX_SEGMENT_BYTES as u64).contains(&header.size);
        if u32_at(bytes, 12) != Some(SEGMENT_HEADER_BYTES as u32) || !size_ok {
            return Err(HeaderProblem::Invalid("segment header fields out of range"));
        }
        Ok(header)
    }
}

/// `<base>.seg`, the base zero-padded to 20 digits so names sort like positions.
pub fn segment_file_name(base: u64) -> String {
    format!("{base:020}.seg")
}

/// The base of a segment file name, or `None` for any other file.
pub fn parse_segment_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".seg")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// One open segment: its file, its mapping and how far it is written.
pub struct Segment {
    pub header: SegmentHeader,
    pub path: PathBuf,
    file: File,
    /// Shared with sync tasks, which flush it without holding the log's lock.
    map: Arc<MmapRaw>,
    /// Bytes in use from the start of the file: header, records and the end marker.
    pub written: u64,
    /// Store timestamp of the newest record (0 before the first), for retention by age.
    pub last_store_ms: u64,
    /// Records end here: an end marker was written, or less than 4 bytes are left.
    pub complete: bool,
    /// Index entries pointing into the segment, counted in a log that reclaims segments (`Log`'s
    /// `reclaim`; 0 and unused elsewhere).
    pub entries: u64,
    /// Its records' memory was given back ([`Segment::release_records`]): no entry points into it.
    pub released: bool,
}

impl Segment {
    /// Creates a zero-filled segment file, sparse (no block is reserved, as the js engine makes
    /// them), writes its header and makes both durable (the file's directory entry included)
    /// before the segment is used: a segment with an invalid header then never held a record
    /// (docs/FORMAT.md). Sparse rather than reserved with `fallocate`: a sync of records written
    /// into reserved blocks also converts those blocks from unwritten to written, which made each
    /// durable append's sync slower, and appends write with [`Segment::append_bytes`], never
    /// through the mapping, so a full disk is an error of that write (failing the log), not a
    /// fault. No page of the mapping is faulted in here. A file already of that name is past the
    /// end of the log (left by a preparation whose clean-up failed) and is replaced, as the js
    /// engine does.
    pub fn create(storage: &dyn Storage, dir: &Path, header: SegmentHeader) -> io::Result<Segment> {
        let path = dir.join(segment_file_name(header.base));
        let file = match storage.create_new(&path) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                storage.remove(&path)?;
                storage.create_new(&path)?
            }
            other => other?,
        };
        storage.set_len(&file, header.size)?;
        storage.write_at(&file, &header.encode(), 0)?;
        storage.sync(&file)?;
        storage.sync_dir(dir)?;
        Segment::map(path, file, header)
    }

    /// Maps an existing segment file whose header was read and checked.
    pub fn open(storage: &dyn Storage, path: PathBuf, header: SegmentHeader) -> io::Result<Segment> {
        let file = storage.open(&path)?;
        Segment::map(path, file, header)
    }

    /// Maps an existing segment file for reading only, as far as the file goes: a last segment left
    /// short by an interrupted cut is read up to its length (its header's size then says that
    /// length, which is where the readable log ends). Nothing may be appended to it.
    pub fn open_read_only(
        storage: &dyn Storage,
        path: PathBuf,
        mut header: SegmentHeader,
    ) -> io::Result<Segment> {
        let file = storage.open_read_only(&path)?;
        header.size = header.size.min(file.metadata()?.len());
        let map = MmapOptions::new()
            .len(header.size as usize)
            .map_raw_read_only(&file)?;
        Ok(Segment::mapped(header, path, file, map))
    }

    /// A segment over `map`, nothing yet known written past its header (recovery finds its end).
    fn mapped(header: SegmentHeader, path: PathBuf, file: File, map: MmapRaw) -> Segment {
        Segment {
            header,
            path,
            file,
            map: Arc::new(map),
            written: SEGMENT_HEADER_BYTES as u64,
            last_store_ms: 0,
            complete: false,
            entries: 0,
            released: false,
        }
    }

    fn map(path: PathBuf, file: File, header: SegmentHeader) -> io::Result<Segment> {
        if file.metadata()?.len() != header.size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "segment file size differs from its header",
            ));
        }
        let map = MmapOptions::new().len(header.size as usize).map_raw(&file)?;
        Ok(Segment::mapped(header, path, file, map))
    }

    /// Gives back the pages and blocks past the records of a segment that is no longer written
    /// (`FALLOC_FL_PUNCH_HOLE`): those a segment created by an earlier release reserved for
    /// records that never came, and the page cache's zeros past the records. The file keeps
    /// its size and still reads as zeros there, as docs/FORMAT.md requires. Best effort: a file
    /// system without holes keeps the zeros.
    pub fn release_tail(&self) {
        release_from(&self.file, self.written, self.size());
    }

    /// Gives back the pages of every record of a segment no index entry points into any more (a
    /// log in memory: the records of deleted LMQs), as [`Segment::release_tail`] does past them;
    /// they read as zeros afterwards. Its file, mapping and place in the log stay. Returns the
    /// file to punch with [`release_from`] (a copy of its descriptor), so the caller may do it
    /// without the log's lock.
    pub fn release_records(&mut self) -> io::Result<File> {
        let file = self.file.try_clone()?;
        self.released = true;
        Ok(file)
    }

    pub fn base(&self) -> u64 {
        self.header.base
    }

    pub fn size(&self) -> u64 {
        self.header.size
    }

    /// The position just past the segment, the next segment's base.
    pub fn end(&self) -> u64 {
        self.header.base + self.header.size
    }

    pub fn file(&self) -> &File {
        &self.file
    }

    pub fn shared_map(&self) -> Arc<MmapRaw> {
        Arc::clone(&self.map)
    }

    /// The whole file as bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the mapping lives as long as `self.map`. The file's bytes change only through
        // `append_bytes`, which needs `&mut self`, so no write overlaps this borrow (no process
        // but the one holding the directory lock writes the file). Sync tasks hold clones of the
        // mapping but only pass it to `msync`, which reads no Rust-visible memory. The file keeps
        // its size while mapped: only recovery truncates, before the log is shared.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr(), self.map.len()) }
    }

    /// Writes `bytes` where the segment's records end and counts them as written: one positional
    /// write through the page cache, which the mapping shares. A write of whole pages neither
    /// faults them into a mapping nor zeroes them first, as stores into the mapping would; so a
    /// new segment needs no pages prepared ahead of its appends.
    pub fn append_bytes(&mut self, storage: &dyn Storage, bytes: &[u8]) -> io::Result<()> {
        storage.write_at(&self.file, bytes, self.written)?;
        self.written += bytes.len() as u64;
        Ok(())
    }
}

/// Punches out (`FALLOC_FL_PUNCH_HOLE`) the pages of a segment's `file` from `from`, rounded up to
/// a page, to `size`: their memory and blocks go back to the system, the file keeps its size and
/// reads as zeros there. Best effort: a file system without holes keeps the bytes. The caller
/// guarantees that nothing reads the range as records any more.
pub fn release_from(file: &File, from: u64, size: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::io::AsRawFd;
        const PAGE_BYTES: u64 = 4096;
        let from = from.div_ceil(PAGE_BYTES) * PAGE_BYTES;
        let (Ok(offset), Ok(len)) = (
            libc::off_t::try_from(from),
            libc::off_t::try_from(size.saturating_sub(from)),
        ) else {
            return;
        };
        if len > 0 {
            // SAFETY: fallocate reads no memory of ours. The range holds nothing any reader reaches
            // (the caller's guarantee), and the pages it drops from mappings read back as zeros.
            unsafe {
                libc::fallocate(
                    file.as_raw_fd(),
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    offset,
                    len,
                );
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, from, size);
}
