//! Opening a log (docs/FORMAT.md, "Recovery"): take the lock, check the segment files, load the
//! checkpoint, replay the log after it into the consume queues, and end the log at the first thing
//! that is not a valid record, so nothing torn or corrupt is ever returned or built upon. What a
//! crash leaves after the last durable position (a torn tail) is cut; damage where valid records
//! must be is refused with `LogError::Corrupt` unless the open asks for a repair. Nothing in the
//! directory changes before the replay has succeeded, so a refused open leaves every file as it
//! was; a read-only open changes nothing at all and reports what a writable one would do.

use super::checkpoint::{self, CheckpointProblem, CHECKPOINT_FILE, CHECKPOINT_TMP_FILE};
use super::error::LogError;
use super::lock::DirLock;
use super::record::{self, check_stored, u32_at, u64_at, END_MARKER, RECORD_MAGIC, TYPE_DELETE};
use super::segment::{parse_segment_file_name, HeaderProblem, Segment, SegmentHeader};
use super::storage::Storage;
use super::{Log, LogOptions};
use crate::hash::crc32c;
use crate::limits::{MAX_SEGMENT_BYTES, MIN_SEGMENT_BYTES, SEGMENT_HEADER_BYTES};
use crate::queue::{CheckpointFile, IndexEntry, Queues, ReplayError};
use std::collections::VecDeque;
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

const HEADER: u64 = SEGMENT_HEADER_BYTES as u64;

/// The unit a disk writes whole (docs/FORMAT.md, "Recovery"). A write that did not reach the disk
/// before a power loss leaves the zeros it would have replaced in at least one piece of a record
/// between two multiples of it.
const SECTOR_BYTES: u64 = 512;

/// Bytes read at a time when checking that a segment holds nothing after its header.
const ZERO_CHECK_CHUNK_BYTES: usize = 64 * 1024;

/// What became of the checkpoint on open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckpointState {
    None,
    Loaded,
    Invalid,
}

impl CheckpointState {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckpointState::None => "none",
            CheckpointState::Loaded => "loaded",
            CheckpointState::Invalid => "invalid",
        }
    }
}

/// Damage found where valid data must be: a plain open refuses it, a repair cuts the log there, a
/// read-only open reports it and reads the log up to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Corruption {
    pub file: String,
    pub position: u64,
    pub message: String,
}

impl Corruption {
    fn error(&self) -> LogError {
        LogError::corrupt(Some(self.file.clone()), Some(self.position), self.message.clone())
    }
}

/// How the last open recovered the log. A read-only open reports what a writable open would do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveryStats {
    pub checkpoint: CheckpointState,
    /// Position replay started from.
    pub replayed_from: u64,
    pub replayed_records: u64,
    /// Where the log was cut, if anything was.
    pub cut_position: Option<u64>,
    pub cut_bytes: u64,
    pub removed_segments: u32,
    /// The segment files removed (the cut's and half-prepared ones).
    pub removed_files: Vec<String>,
    /// Damage refused (read-only), or cut (repair).
    pub corruption: Option<Corruption>,
    /// The open was read-only: the figures say what a writable open would do; nothing was done.
    pub read_only: bool,
    pub duration_ms: u64,
}

fn io_error(doing: &str) -> impl Fn(std::io::Error) -> LogError + '_ {
    move |e| LogError::io(doing, &e)
}

impl Log {
    /// Opens (creating if needed), locks and recovers the log in `dir`; read-only, it neither
    /// creates nor locks anything.
    pub fn open(dir: &Path, options: LogOptions, storage: Arc<dyn Storage>) -> Result<Log, LogError> {
        if !(MIN_SEGMENT_BYTES as u64..=MAX_SEGMENT_BYTES as u64).contains(&options.segment_bytes) {
            return Err(LogError::InvalidArgument(format!(
                "segment size {} out of range",
                options.segment_bytes
            )));
        }
        let started = Instant::now();
        let segments_dir = dir.join("segments");
        let lock = if options.read_only {
            None
        } else {
            storage
                .create_dir_all(&segments_dir)
                .map_err(io_error("creating the log directory"))?;
            // Files nobody else can reach need no lock to keep others out.
            (!storage.private())
                .then(|| DirLock::acquire(storage.as_ref(), dir, options.now_ms))
                .transpose()?
        };
        let recovered = match recover(dir, options, storage.as_ref(), true) {
            // An LMQ's block in the checkpoint failed its check while the log after it was
            // replayed: the whole log is replayed without the checkpoint instead.
            Err(Retry::WithoutCheckpoint) => recover(dir, options, storage.as_ref(), false),
            other => other,
        };
        match recovered.map_err(Retry::into_error) {
            Ok(mut state) => {
                state.stats.duration_ms = started.elapsed().as_millis() as u64;
                Ok(Log {
                    segments_dir,
                    segment_bytes: options.segment_bytes,
                    lock,
                    segments: state.segments,
                    spare: None,
                    preparing: false,
                    write_position: state.write_position,
                    durable_position: state.write_position,
                    queues: state.queues,
                    failed: None,
                    closed: false,
                    recovery: state.stats,
                    layouts: Vec::new(),
                    handles: super::bodies::LmqHandles::default(),
                    framed: Vec::new(),
                    reclaim: storage.private(),
                    storage,
                    read_only: options.read_only,
                })
            }
            Err(error) => {
                // The open failed: the lock must not outlive it. Failing to remove it only leaves a
                // lock of this process, which the next open reports as held.
                if let Some(lock) = lock {
                    let _ = lock.release(storage.as_ref());
                }
                Err(error)
            }
        }
    }
}

struct Recovered {
    segments: VecDeque<Segment>,
    queues: Queues,
    write_position: u64,
    stats: RecoveryStats,
}

/// Why `recover` stopped: a failure, or a checkpoint block that failed its check during replay.
enum Retry {
    Failed(LogError),
    WithoutCheckpoint,
}

impl From<LogError> for Retry {
    fn from(error: LogError) -> Retry {
        Retry::Failed(error)
    }
}

impl Retry {
    fn into_error(self) -> LogError {
        match self {
            Retry::Failed(error) => error,
            Retry::WithoutCheckpoint => {
                LogError::corrupt(None, None, "recovery could not use the checkpoint")
            }
        }
    }
}

/// A segment file recovery does not use: it and every later file leave the log.
struct Unusable {
    path: PathBuf,
    length: u64,
}

/// Why the segment files stop being usable at some file.
struct SegmentProblem {
    corruption: Corruption,
    /// The file is the last one, its header is invalid and nothing follows its header: a segment
    /// whose preparation never finished, which never held a record.
    prepared: bool,
}

/// The usable segments, in base order, and what follows them.
struct Listed {
    segments: VecDeque<Segment>,
    /// The files from the first problem on.
    rest: Vec<Unusable>,
    problem: Option<SegmentProblem>,
}

/// What recovery changes in the directory once the replay has succeeded (a writable open).
#[derive(Default)]
struct Changes {
    /// Segment files to remove: later than the cut, or unusable.
    remove: Vec<PathBuf>,
    /// Cut the segment at this index at this in-segment offset.
    cut: Option<(usize, u64)>,
    /// The checkpoint is unusable and goes.
    drop_checkpoint: bool,
}

fn recover(
    dir: &Path,
    options: LogOptions,
    storage: &dyn Storage,
    use_checkpoint: bool,
) -> Result<Recovered, Retry> {
    let segments_dir = dir.join("segments");
    let mut stats = RecoveryStats {
        checkpoint: CheckpointState::None,
        replayed_from: 0,
        replayed_records: 0,
        cut_position: None,
        cut_bytes: 0,
        removed_segments: 0,
        removed_files: Vec::new(),
        corruption: None,
        read_only: options.read_only,
        duration_ms: 0,
    };
    if !options.read_only {
        let tmp = dir.join(CHECKPOINT_TMP_FILE);
        match storage.remove(&tmp) {
            Err(e) if e.kind() != ErrorKind::NotFound => {
                return Err(LogError::io("removing checkpoint.tmp", &e).into())
            }
            _ => {}
        }
    }
    let Listed {
        mut segments,
        rest,
        problem,
    } = open_segments(storage, &segments_dir, options)?;
    let header_position = checkpoint_header_position(storage, dir)?;
    let mut changes = Changes::default();
    // The cut the unusable files make on their own: their first base and their bytes.
    let mut rest_cut = None;
    if let Some(problem) = problem {
        let rest_bytes: u64 = rest.iter().map(|r| r.length).sum();
        // A checkpoint past the segment's base shows it was in use: its header was durable.
        let prepared = problem.prepared
            && header_position.is_none_or(|position| position <= problem.corruption.position);
        if !prepared {
            if !options.repair && !options.read_only {
                return Err(problem.corruption.error().into());
            }
            // A repair cuts there; a read-only open ends the readable log there, where a writable
            // open would refuse.
            if options.repair {
                rest_cut = Some((problem.corruption.position, rest_bytes));
            }
            stats.corruption = Some(problem.corruption);
        }
        if prepared || options.repair {
            for unusable in rest {
                stats.removed_segments += 1;
                stats.removed_files.push(unusable.path.display().to_string());
                changes.remove.push(unusable.path);
            }
        }
    }
    let LoadedCheckpoint {
        mut queues,
        position,
        segment_times,
        unusable,
    } = if use_checkpoint {
        load_checkpoint(storage, dir, &segments, &mut stats)?
    } else {
        unusable_checkpoint(&mut stats)
    };
    changes.drop_checkpoint = unusable;
    // Everything before the checkpoint's position was durable when it was written, whether or not
    // the rest of the checkpoint can be used.
    let durable = header_position.max(position);
    for segment in &mut segments {
        let known = segment_times.iter().find(|(base, _)| *base == segment.base());
        segment.last_store_ms = known.map_or(segment.header.created_ms, |&(_, last)| last);
    }
    let Some(first) = segments.front() else {
        // An empty directory (or one whose only segment was being prepared): start the log.
        let base = position.unwrap_or(0);
        queues.empty_all();
        stats.replayed_from = base + HEADER;
        if let Some((at, bytes)) = rest_cut {
            stats.cut_position = Some(at);
            stats.cut_bytes = bytes;
        }
        if options.read_only {
            return Ok(Recovered {
                segments,
                queues,
                write_position: base + HEADER,
                stats,
            });
        }
        apply(storage, dir, &mut segments, &changes)?;
        let header = SegmentHeader {
            base,
            size: options.segment_bytes,
            created_ms: options.now_ms,
        };
        let segment =
            Segment::create(storage, &segments_dir, header).map_err(io_error("creating a segment"))?;
        return Ok(Recovered {
            segments: VecDeque::from([segment]),
            queues,
            write_position: base + HEADER,
            stats,
        });
    };
    let start = position.unwrap_or(0).max(first.base() + HEADER);
    stats.replayed_from = start;
    let end = match replay(&mut segments, &mut queues, start, &mut stats) {
        Err(Replay::BadBlock) if use_checkpoint => return Err(Retry::WithoutCheckpoint),
        Err(Replay::BadBlock) => {
            return Err(LogError::corrupt(None, None, "a queue without a checkpoint").into())
        }
        Err(Replay::Failed(error)) => return Err(error.into()),
        Ok(end) => end,
    };
    let write_position = match end {
        LogEnd::AfterLast => {
            if let Some((at, bytes)) = rest_cut {
                stats.cut_position = Some(at);
                stats.cut_bytes = bytes;
            }
            segments.back().map_or(0, Segment::end) + HEADER
        }
        LogEnd::At { segment: k, offset } => {
            let position = segments[k].base() + offset;
            let damage = damage_at(&segments, k, offset, durable);
            match damage {
                Some(message) if !options.repair => {
                    let corruption = Corruption {
                        file: segments[k].path.display().to_string(),
                        position,
                        message,
                    };
                    if !options.read_only {
                        return Err(corruption.error().into());
                    }
                    // Read-only: the readable log ends here; a writable open would refuse.
                    stats.corruption = Some(corruption);
                }
                damage => {
                    if let Some(message) = damage {
                        stats.corruption = Some(Corruption {
                            file: segments[k].path.display().to_string(),
                            position,
                            message,
                        });
                    }
                    plan_cut(&segments, k, offset, rest_cut, &mut stats, &mut changes);
                }
            }
            position
        }
    };
    if let Some(first) = segments.front() {
        queues.drop_below(first.base());
    }
    if options.read_only {
        return Ok(Recovered {
            segments,
            queues,
            write_position,
            stats,
        });
    }
    apply(storage, dir, &mut segments, &changes)?;
    if matches!(end, LogEnd::AfterLast) {
        let header = SegmentHeader {
            base: write_position - HEADER,
            size: options.segment_bytes,
            created_ms: options.now_ms,
        };
        let segment =
            Segment::create(storage, &segments_dir, header).map_err(io_error("creating a segment"))?;
        segments.push_back(segment);
    }
    // What was replayed may only be in the page cache (the previous owner was killed): make it
    // durable now, since the next checkpoint will claim it is.
    for segment in segments.iter().filter(|s| s.end() > start) {
        storage
            .sync(segment.file())
            .map_err(io_error("syncing a recovered segment"))?;
    }
    Ok(Recovered {
        segments,
        queues,
        write_position,
        stats,
    })
}

/// Records in `stats` and `changes` the cut at `offset` of segment `k` (step 4): the rest of that
/// segment, the later segments and the unusable files after them.
fn plan_cut(
    segments: &VecDeque<Segment>,
    k: usize,
    offset: u64,
    rest_cut: Option<(u64, u64)>,
    stats: &mut RecoveryStats,
    changes: &mut Changes,
) {
    let segment = &segments[k];
    let at = offset as usize;
    let garbage = segment.bytes()[at..at + 4] != [0; 4];
    let mut cut_bytes = segment.size() - offset;
    for later in segments.iter().skip(k + 1) {
        cut_bytes += later.size();
        stats.removed_segments += 1;
        stats.removed_files.push(later.path.display().to_string());
    }
    if garbage || segments.len() > k + 1 || rest_cut.is_some() {
        stats.cut_position = Some(segment.base() + offset);
        stats.cut_bytes = cut_bytes + rest_cut.map_or(0, |(_, bytes)| bytes);
    }
    changes.cut = Some((k, offset));
}

/// Makes the changes of a writable open: the unusable checkpoint goes first (left in place while
/// the log is cut before its position, a crash could leave it describing records that are gone),
/// then the segments after the cut and the unusable ones, then the cut itself; the directories are
/// synced after removals.
fn apply(
    storage: &dyn Storage,
    dir: &Path,
    segments: &mut VecDeque<Segment>,
    changes: &Changes,
) -> Result<(), LogError> {
    if changes.drop_checkpoint {
        match storage.remove(&dir.join(CHECKPOINT_FILE)) {
            Ok(()) => storage
                .sync_dir(dir)
                .map_err(io_error("syncing the log directory"))?,
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(LogError::io("removing an unusable checkpoint", &e)),
        }
    }
    let mut removed = !changes.remove.is_empty();
    if let Some((k, _)) = changes.cut {
        for later in segments.drain(k + 1..) {
            let path = later.path.clone();
            drop(later);
            storage
                .remove(&path)
                .map_err(io_error("removing a segment after the end of the log"))?;
            removed = true;
        }
    }
    for path in &changes.remove {
        storage
            .remove(path)
            .map_err(io_error("removing an unusable segment"))?;
    }
    if removed {
        storage
            .sync_dir(&dir.join("segments"))
            .map_err(io_error("syncing the segment directory"))?;
    }
    if let Some((k, offset)) = changes.cut {
        let segment = &mut segments[k];
        // Zero the rest, torn bytes included, so a later crash cannot make old bytes after new
        // records look like records: truncating and extending frees the blocks instead of writing
        // zeros. The recovered segments are synced afterwards.
        storage
            .set_len(segment.file(), offset)
            .map_err(io_error("cutting a segment"))?;
        storage
            .set_len(segment.file(), segment.size())
            .map_err(io_error("cutting a segment"))?;
        segment.written = offset;
        segment.complete = false;
    }
    Ok(())
}

/// Whether the first invalid bytes of the log, at `offset` of segment `k`, are damage (the reason)
/// rather than the torn tail a crash leaves (docs/FORMAT.md, "Recovery"): damage when they are
/// before the position a checkpoint showed durable, or when the invalid record has no piece between
/// two sector boundaries that reads as zeros (the mark of a write that never reached the disk) and
/// a valid record follows it.
fn damage_at(segments: &VecDeque<Segment>, k: usize, offset: u64, durable: Option<u64>) -> Option<String> {
    let segment = &segments[k];
    let position = segment.base() + offset;
    if let Some(durable) = durable.filter(|&durable| position < durable) {
        return Some(format!(
            "invalid record before position {durable}, which the checkpoint shows was durable"
        ));
    }
    let bytes = segment.bytes();
    // A damaged size field can make the extent run over the valid records after the record and on
    // into the zeros past the end of the log: the record ends, at the latest, where the first valid
    // record after it starts.
    let mut end = damaged_extent(bytes, offset);
    if let Some(inside) = first_valid_in(bytes, offset as usize + 1, end as usize) {
        end = inside as u64;
    }
    if has_zero_piece(bytes, offset, end) {
        return None;
    }
    let found = next_valid_record(segments, k, offset + 1)?;
    Some(format!(
        "invalid record followed by a valid one at position {found}"
    ))
}

/// Where the invalid record at `offset` ends, as far as it can be told: at its size when it has the
/// record magic and a size that fits the segment, else after the size field (magic present) or the
/// magic.
fn damaged_extent(bytes: &[u8], offset: u64) -> u64 {
    let length = bytes.len() as u64;
    let at = offset as usize;
    if bytes.get(at..at + 4) == Some(&RECORD_MAGIC[..]) {
        if let Some(size) = u32_at(bytes, at + 4).map(u64::from) {
            if size >= record::RECORD_HEADER_BYTES as u64 && offset + size <= length {
                return offset + size;
            }
        }
        return (offset + 8).min(length);
    }
    (offset + 4).min(length)
}

/// Whether `bytes[from..to]`, split at multiples of [`SECTOR_BYTES`], has a piece of zeros only.
fn has_zero_piece(bytes: &[u8], from: u64, to: u64) -> bool {
    let mut start = from;
    while start < to {
        let end = ((start / SECTOR_BYTES + 1) * SECTOR_BYTES).min(to);
        if bytes[start as usize..end as usize].iter().all(|&b| b == 0) {
            return true;
        }
        start = end;
    }
    false
}

/// The position of the first valid record at or after `offset` of segment `k`, or in a later
/// segment, found by trying every offset where the record magic appears.
fn next_valid_record(segments: &VecDeque<Segment>, k: usize, offset: u64) -> Option<u64> {
    let mut from = offset as usize;
    for segment in segments.iter().skip(k) {
        let bytes = segment.bytes();
        if let Some(found) = first_valid_in(bytes, from.max(SEGMENT_HEADER_BYTES), bytes.len()) {
            return Some(segment.base() + found as u64);
        }
        from = 0;
    }
    None
}

/// The offset of the first valid record starting in `bytes[from..to]`, found by trying every offset
/// where the record magic appears (the record itself may run past `to`).
fn first_valid_in(bytes: &[u8], from: usize, to: usize) -> Option<usize> {
    let to = to.min(bytes.len());
    let mut at = from;
    while at < to {
        // Up to three bytes past `to`, so a magic starting before it is found whole.
        let window = bytes.get(at..(to + 3).min(bytes.len()))?;
        let candidate = at + window.windows(4).position(|w| w == RECORD_MAGIC)?;
        if candidate >= to {
            return None;
        }
        if check_stored(&bytes[candidate..]).is_ok() {
            return Some(candidate);
        }
        at = candidate + 1;
    }
    None
}

/// The position in the checkpoint's header when the header checks (version 2: magic, version and
/// header CRC), whatever the rest of the file holds.
fn checkpoint_header_position(storage: &dyn Storage, dir: &Path) -> Result<Option<u64>, LogError> {
    let file = match storage.open_read_only(&dir.join(CHECKPOINT_FILE)) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LogError::io("opening the checkpoint", &e)),
    };
    let mut header = [0u8; checkpoint::HEADER_BYTES];
    if file.read_exact_at(&mut header, 0).is_err() {
        return Ok(None);
    }
    let checks = header[..8] == checkpoint::CHECKPOINT_MAGIC
        && u32_at(&header, 8) == Some(checkpoint::CHECKPOINT_VERSION)
        && u32_at(&header, 60) == Some(crc32c(&header[..60]));
    Ok(if checks { u64_at(&header, 16) } else { None })
}

/// Whether a segment file holds nothing after its header: shorter than a header, or zeros only
/// from there to its end.
fn nothing_after_header(file: &std::fs::File, length: u64) -> Result<bool, LogError> {
    let mut chunk = vec![0u8; ZERO_CHECK_CHUNK_BYTES];
    let mut at = HEADER;
    while at < length {
        let n = ((length - at) as usize).min(chunk.len());
        file.read_exact_at(&mut chunk[..n], at)
            .map_err(io_error("reading a segment"))?;
        if chunk[..n].iter().any(|&b| b != 0) {
            return Ok(false);
        }
        at += n as u64;
    }
    Ok(true)
}

/// Opens every segment file in base order, checking headers and contiguity (step 1), up to the
/// first file that fails; that file and the later ones are returned unopened.
fn open_segments(storage: &dyn Storage, dir: &Path, options: LogOptions) -> Result<Listed, LogError> {
    let mut bases: Vec<u64> = match storage.list(dir) {
        Ok(names) => names
            .iter()
            .filter_map(|name| parse_segment_file_name(name))
            .collect(),
        // A read-only open of a directory no log was ever opened in: an empty log.
        Err(e) if options.read_only && e.kind() == ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(LogError::io("listing segments", &e)),
    };
    bases.sort_unstable();
    let mut listed = Listed {
        segments: VecDeque::with_capacity(bases.len()),
        rest: Vec::new(),
        problem: None,
    };
    for (i, &base) in bases.iter().enumerate() {
        let path = dir.join(super::segment::segment_file_name(base));
        let file_name = path.display().to_string();
        let file = storage
            .open_read_only(&path)
            .map_err(io_error("opening a segment"))?;
        let length = file
            .metadata()
            .map_err(io_error("reading a segment's size"))?
            .len();
        if listed.problem.is_some() {
            listed.rest.push(Unusable { path, length });
            continue;
        }
        let mut bytes = [0u8; SEGMENT_HEADER_BYTES];
        let header = match file.read_exact_at(&mut bytes, 0) {
            Ok(()) => SegmentHeader::decode(&bytes),
            Err(_) => Err(HeaderProblem::Invalid("segment shorter than its header")),
        };
        let is_last = i + 1 == bases.len();
        let mut problem = match header {
            Ok(header) if header.base == base && header.size == length => None,
            // A valid header on a shorter file: a cut (truncate, then extend back) was interrupted
            // on a previous open. Its records are intact; the file gets its size back (a read-only
            // open reads it as far as it goes).
            Ok(header) if header.base == base && length < header.size && is_last => {
                if !options.read_only {
                    let writable = storage.open(&path).map_err(io_error("opening a segment"))?;
                    storage
                        .set_len(&writable, header.size)
                        .map_err(io_error("restoring a segment's size"))?;
                }
                None
            }
            Ok(_) => Some("invalid segment header: it disagrees with its file".to_string()),
            Err(HeaderProblem::Version(version)) => {
                return Err(LogError::UnsupportedFormat {
                    file: file_name,
                    version,
                });
            }
            Err(HeaderProblem::Invalid(why)) => Some(format!("invalid segment header: {why}")),
        };
        let mut position = base;
        if let (None, Some(previous)) = (&problem, listed.segments.back()) {
            if previous.end() != base {
                problem = Some("segment files are not contiguous".to_string());
                position = previous.end();
            }
        }
        if let Some(why) = problem {
            // Only a last file that never held a record may go as half-prepared.
            let prepared = is_last && position == base && nothing_after_header(&file, length)?;
            listed.problem = Some(SegmentProblem {
                corruption: Corruption {
                    file: file_name,
                    position,
                    message: why,
                },
                prepared,
            });
            listed.rest.push(Unusable { path, length });
            continue;
        }
        let Ok(header) = header else { continue };
        drop(file);
        let segment = if options.read_only {
            Segment::open_read_only(storage, path, header)
        } else {
            Segment::open(storage, path, header)
        };
        listed
            .segments
            .push_back(segment.map_err(io_error("mapping a segment"))?);
    }
    Ok(listed)
}

/// What recovery takes from a checkpoint (all empty without one).
#[derive(Default)]
struct LoadedCheckpoint {
    queues: Queues,
    position: Option<u64>,
    /// (base, last store timestamp) of the segments it knew.
    segment_times: Vec<(u64, u64)>,
    /// A checkpoint file exists and cannot be used: it is removed once recovery has succeeded.
    unusable: bool,
}

/// An unusable checkpoint: reported as invalid, removed by a writable open once the replay that
/// replaces it has succeeded (left in place, it could be loaded once the log grows past its
/// position; docs/FORMAT.md, "Checkpoint").
fn unusable_checkpoint(stats: &mut RecoveryStats) -> LoadedCheckpoint {
    stats.checkpoint = CheckpointState::Invalid;
    LoadedCheckpoint {
        unusable: true,
        ..LoadedCheckpoint::default()
    }
}

/// Loads the checkpoint if there is a usable one (step 2): its queues (a version 2 file's stay in
/// the mapped file until used), its position and its segment timestamps. Queues with entries below
/// the first segment are loaded now, so that their retired entries can be dropped: one whose block
/// fails its check makes the checkpoint unusable.
fn load_checkpoint(
    storage: &dyn Storage,
    dir: &Path,
    segments: &VecDeque<Segment>,
    stats: &mut RecoveryStats,
) -> Result<LoadedCheckpoint, LogError> {
    let path = dir.join(CHECKPOINT_FILE);
    let file = match storage.open_read_only(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(LoadedCheckpoint::default()),
        Err(e) => return Err(LogError::io("opening the checkpoint", &e)),
    };
    let length = file
        .metadata()
        .map_err(io_error("reading the checkpoint's size"))?
        .len();
    if length == 0 {
        return Ok(unusable_checkpoint(stats));
    }
    // SAFETY: the file is only ever replaced by renaming a new one over it, never written or
    // truncated in place, so the mapped bytes do not change under the mapping.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io_error("mapping the checkpoint"))?;
    drop(file);
    let mapped = Arc::new(CheckpointFile {
        path: path.clone(),
        map,
    });
    let first_base = segments.front().map(Segment::base);
    let usable = |loaded: &checkpoint::Checkpoint| {
        first_base.is_none_or(|first| first <= loaded.position)
            && loaded.position <= segments.back().map_or(loaded.position, Segment::end)
    };
    match checkpoint::decode(&mapped) {
        // A checkpoint past the end of the segments describes records that are not there; one
        // before the first segment misses what retention deleted after it, LMQ deletions included,
        // so the queues could not be rebuilt from it.
        Ok(mut loaded) if usable(&loaded) => {
            if loaded.queues.load_below(first_base.unwrap_or(0)).is_err() {
                return Ok(unusable_checkpoint(stats));
            }
            stats.checkpoint = CheckpointState::Loaded;
            Ok(LoadedCheckpoint {
                queues: loaded.queues,
                position: Some(loaded.position),
                segment_times: loaded.segments,
                unusable: false,
            })
        }
        Ok(_) | Err(CheckpointProblem::Invalid(_)) => Ok(unusable_checkpoint(stats)),
        Err(CheckpointProblem::Version(version)) => Err(LogError::UnsupportedFormat {
            file: path.display().to_string(),
            version,
        }),
    }
}
/// Where replay stopped.
enum LogEnd {
    /// At the first invalid bytes: segment index and offset in it.
    At { segment: usize, offset: u64 },
    /// After the last segment, which is complete.
    AfterLast,
}

/// Why replay stopped short of the end of the log.
enum Replay {
    Failed(LogError),
    /// A queue's block in the checkpoint failed its check.
    BadBlock,
}

/// Replays the records from `start` into the queues (step 3), segment after segment.
fn replay(
    segments: &mut VecDeque<Segment>,
    queues: &mut Queues,
    start: u64,
    stats: &mut RecoveryStats,
) -> Result<LogEnd, Replay> {
    let mut k = segments
        .partition_point(|s| s.end() <= start)
        .min(segments.len().saturating_sub(1));
    let mut offset = start.saturating_sub(segments[k].base()).max(HEADER);
    loop {
        let segment = &mut segments[k];
        let size = segment.size();
        let marker =
            size - offset >= 4 && segment.bytes()[offset as usize..offset as usize + 4] == END_MARKER;
        if size - offset < 4 || marker {
            segment.written = if marker { offset + 4 } else { size };
            segment.complete = true;
            if k + 1 == segments.len() {
                return Ok(LogEnd::AfterLast);
            }
            k += 1;
            offset = HEADER;
            continue;
        }
        let rest = &segment.bytes()[offset as usize..];
        let Ok(layout) = check_stored(rest) else {
            return Ok(LogEnd::At { segment: k, offset });
        };
        let bytes = &rest[..layout.size as usize];
        let position = segment.base() + offset;
        let store_ms = record::store_timestamp(bytes);
        let entry = IndexEntry {
            position,
            size: layout.size,
            tag_hash: layout.tag_hash,
            key_hash: layout.key_hash,
        };
        for (i, name) in record::lmq_names(bytes, &layout).enumerate() {
            if layout.kind == TYPE_DELETE {
                queues.remove(name);
            } else {
                match queues.replay(name, record::offset(bytes, i), entry, store_ms) {
                    Ok(()) => {}
                    Err(ReplayError::BadBlock(_)) => return Err(Replay::BadBlock),
                    Err(ReplayError::WentBack(went_back)) => {
                        let why = format!(
                            "LMQ offset {} where {} was expected",
                            went_back.found, went_back.expected
                        );
                        return Err(Replay::Failed(LogError::corrupt(
                            Some(segment.path.display().to_string()),
                            Some(position),
                            why,
                        )));
                    }
                }
            }
        }
        segment.last_store_ms = segment.last_store_ms.max(store_ms);
        offset += u64::from(layout.size);
        stats.replayed_records += 1;
    }
}
