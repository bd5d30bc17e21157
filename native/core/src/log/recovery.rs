//! Opening a log (docs/FORMAT.md, "Recovery"): take the lock, check the segment files, load the
//! checkpoint, replay the log after it into the consume queues, and cut the log at the first thing
//! that is not a valid record, so nothing torn or corrupt is ever returned or built upon.

use super::checkpoint::{self, CheckpointProblem, CHECKPOINT_FILE, CHECKPOINT_TMP_FILE};
use super::error::LogError;
use super::lock::DirLock;
use super::record::{self, check_stored, END_MARKER, TYPE_DELETE};
use super::segment::{parse_segment_file_name, HeaderProblem, Segment, SegmentHeader};
use super::storage::Storage;
use super::{Log, LogOptions};
use crate::limits::{MAX_SEGMENT_BYTES, MIN_SEGMENT_BYTES, SEGMENT_HEADER_BYTES};
use crate::queue::{CheckpointFile, IndexEntry, Queues, ReplayError};
use std::collections::VecDeque;
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

const HEADER: u64 = SEGMENT_HEADER_BYTES as u64;

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

/// How the last open recovered the log.
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
    pub duration_ms: u64,
}

fn io_error(doing: &str) -> impl Fn(std::io::Error) -> LogError + '_ {
    move |e| LogError::io(doing, &e)
}

impl Log {
    /// Opens (creating if needed), locks and recovers the log in `dir`.
    pub fn open(dir: &Path, options: LogOptions, storage: Arc<dyn Storage>) -> Result<Log, LogError> {
        if !(MIN_SEGMENT_BYTES as u64..=MAX_SEGMENT_BYTES as u64).contains(&options.segment_bytes) {
            return Err(LogError::InvalidArgument(format!(
                "segment size {} out of range",
                options.segment_bytes
            )));
        }
        let started = Instant::now();
        let segments_dir = dir.join("segments");
        storage
            .create_dir_all(&segments_dir)
            .map_err(io_error("creating the log directory"))?;
        let lock = DirLock::acquire(storage.as_ref(), dir, options.now_ms)?;
        let recovered = match recover(dir, options, storage.as_ref(), true) {
            // An LMQ's block in the checkpoint failed its check while the log after it was
            // replayed: the checkpoint is dropped and the whole log replayed instead.
            Err(Retry::WithoutCheckpoint) => recover(dir, options, storage.as_ref(), false),
            other => other,
        };
        match recovered.map_err(Retry::into_error) {
            Ok(mut state) => {
                state.stats.duration_ms = started.elapsed().as_millis() as u64;
                Ok(Log {
                    segments_dir,
                    segment_bytes: options.segment_bytes,
                    lock: Some(lock),
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
                    storage,
                })
            }
            Err(error) => {
                // The open failed: the lock must not outlive it. Failing to remove it only leaves a
                // lock of this process, which the next open reports as held.
                let _ = lock.release(storage.as_ref());
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
        duration_ms: 0,
    };
    let tmp = dir.join(CHECKPOINT_TMP_FILE);
    match storage.remove(&tmp) {
        Err(e) if e.kind() != ErrorKind::NotFound => {
            return Err(LogError::io("removing checkpoint.tmp", &e).into())
        }
        _ => {}
    }
    let mut segments = open_segments(storage, &segments_dir, &mut stats)?;
    let LoadedCheckpoint {
        mut queues,
        position,
        segment_times,
    } = if use_checkpoint {
        load_checkpoint(storage, dir, &segments, &mut stats)?
    } else {
        drop_checkpoint(storage, dir, &mut stats)?
    };
    for segment in &mut segments {
        let known = segment_times.iter().find(|(base, _)| *base == segment.base());
        segment.last_store_ms = known.map_or(segment.header.created_ms, |&(_, last)| last);
    }
    let Some(first) = segments.front() else {
        // An empty directory (or one whose only segment was being prepared): start the log.
        let base = position.unwrap_or(0);
        queues.empty_all();
        let header = SegmentHeader {
            base,
            size: options.segment_bytes,
            created_ms: options.now_ms,
        };
        let segment =
            Segment::create(storage, &segments_dir, header).map_err(io_error("creating a segment"))?;
        stats.replayed_from = base + HEADER;
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
        LogEnd::At { segment, offset } => cut(storage, &mut segments, segment, offset, &mut stats)?,
        LogEnd::AfterLast => {
            let last_end = segments.back().map_or(0, Segment::end);
            let header = SegmentHeader {
                base: last_end,
                size: options.segment_bytes,
                created_ms: options.now_ms,
            };
            let segment =
                Segment::create(storage, &segments_dir, header).map_err(io_error("creating a segment"))?;
            segments.push_back(segment);
            last_end + HEADER
        }
    };
    // What was replayed may only be in the page cache (the previous owner was killed): make it
    // durable now, since the next checkpoint will claim it is.
    for segment in segments.iter().filter(|s| s.end() > start) {
        storage
            .sync(segment.file())
            .map_err(io_error("syncing a recovered segment"))?;
    }
    if let Some(first) = segments.front() {
        queues.drop_below(first.base());
    }
    Ok(Recovered {
        segments,
        queues,
        write_position,
        stats,
    })
}

/// Opens every segment file in base order, checking headers and contiguity (step 1).
fn open_segments(
    storage: &dyn Storage,
    dir: &Path,
    stats: &mut RecoveryStats,
) -> Result<VecDeque<Segment>, LogError> {
    let mut bases: Vec<u64> = storage
        .list(dir)
        .map_err(io_error("listing segments"))?
        .iter()
        .filter_map(|name| parse_segment_file_name(name))
        .collect();
    bases.sort_unstable();
    let mut segments: VecDeque<Segment> = VecDeque::with_capacity(bases.len());
    for (i, &base) in bases.iter().enumerate() {
        let path = dir.join(super::segment::segment_file_name(base));
        let file_name = path.display().to_string();
        let file = storage.open(&path).map_err(io_error("opening a segment"))?;
        let mut bytes = [0u8; SEGMENT_HEADER_BYTES];
        let length = file
            .metadata()
            .map_err(io_error("reading a segment's size"))?
            .len();
        let header = match file.read_exact_at(&mut bytes, 0) {
            Ok(()) => SegmentHeader::decode(&bytes),
            Err(_) => Err(HeaderProblem::Invalid("segment shorter than its header")),
        };
        let is_last = i + 1 == bases.len();
        let problem = match header {
            Ok(header) if header.base == base && header.size == length => None,
            // A valid header on a shorter file: a cut (truncate, then extend back) was interrupted
            // on a previous open. Its records are intact; the file gets its size back.
            Ok(header) if header.base == base && length < header.size && is_last => {
                storage
                    .set_len(&file, header.size)
                    .map_err(io_error("restoring a segment's size"))?;
                None
            }
            Ok(_) => Some("segment header disagrees with its file"),
            Err(HeaderProblem::Version(version)) => {
                return Err(LogError::UnsupportedFormat {
                    file: file_name,
                    version,
                });
            }
            Err(HeaderProblem::Invalid(why)) => Some(why),
        };
        if let Some(why) = problem {
            if is_last {
                // It was being prepared when the previous owner stopped; it never held a record.
                drop(file);
                storage
                    .remove(&path)
                    .map_err(io_error("removing a half-prepared segment"))?;
                stats.removed_segments += 1;
                continue;
            }
            return Err(LogError::corrupt(Some(file_name), Some(base), why));
        }
        let Ok(header) = header else { continue };
        if let Some(previous) = segments.back() {
            if previous.end() != base {
                return Err(LogError::corrupt(
                    Some(file_name),
                    Some(previous.end()),
                    "segment files are not contiguous",
                ));
            }
        }
        drop(file);
        segments.push_back(Segment::open(storage, path, header).map_err(io_error("mapping a segment"))?);
    }
    Ok(segments)
}

/// What recovery takes from a checkpoint (all empty without one).
#[derive(Default)]
struct LoadedCheckpoint {
    queues: Queues,
    position: Option<u64>,
    /// (base, last store timestamp) of the segments it knew.
    segment_times: Vec<(u64, u64)>,
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
    let file = match storage.open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(LoadedCheckpoint::default()),
        Err(e) => return Err(LogError::io("opening the checkpoint", &e)),
    };
    let length = file
        .metadata()
        .map_err(io_error("reading the checkpoint's size"))?
        .len();
    if length == 0 {
        return drop_checkpoint(storage, dir, stats);
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
                return drop_checkpoint(storage, dir, stats);
            }
            stats.checkpoint = CheckpointState::Loaded;
            Ok(LoadedCheckpoint {
                queues: loaded.queues,
                position: Some(loaded.position),
                segment_times: loaded.segments,
            })
        }
        Ok(_) | Err(CheckpointProblem::Invalid(_)) => drop_checkpoint(storage, dir, stats),
        Err(CheckpointProblem::Version(version)) => Err(LogError::UnsupportedFormat {
            file: path.display().to_string(),
            version,
        }),
    }
}

/// Removes an unusable checkpoint: left in place, it could be loaded once the log grows past its
/// position (docs/FORMAT.md, "Checkpoint").
fn drop_checkpoint(
    storage: &dyn Storage,
    dir: &Path,
    stats: &mut RecoveryStats,
) -> Result<LoadedCheckpoint, LogError> {
    stats.checkpoint = CheckpointState::Invalid;
    match storage.remove(&dir.join(CHECKPOINT_FILE)) {
        Ok(()) => Ok(LoadedCheckpoint::default()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(LoadedCheckpoint::default()),
        Err(e) => Err(LogError::io("removing an unusable checkpoint", &e)),
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

/// Cuts the log at `offset` of segment `k` (step 4): zeroes the rest of that segment and removes
/// the later ones. Returns the write position.
fn cut(
    storage: &dyn Storage,
    segments: &mut VecDeque<Segment>,
    k: usize,
    offset: u64,
    stats: &mut RecoveryStats,
) -> Result<u64, LogError> {
    let segment = &segments[k];
    let position = segment.base() + offset;
    let garbage = segment.bytes()[offset as usize..offset as usize + 4] != [0; 4];
    let mut cut_bytes = segment.size() - offset;
    let later: Vec<Segment> = segments.drain(k + 1..).collect();
    let removed_later = !later.is_empty();
    for removed in later {
        cut_bytes += removed.size();
        let path = removed.path.clone();
        drop(removed);
        storage
            .remove(&path)
            .map_err(io_error("removing a segment after the end of the log"))?;
        stats.removed_segments += 1;
    }
    if garbage || removed_later {
        stats.cut_position = Some(position);
        stats.cut_bytes = cut_bytes;
    }
    let segment = &mut segments[k];
    // Zero the rest, torn bytes included, so a later crash cannot make old bytes after new records
    // look like records: truncating and extending frees the blocks instead of writing zeros.
    storage
        .set_len(segment.file(), offset)
        .map_err(io_error("cutting a segment"))?;
    storage
        .set_len(segment.file(), segment.size())
        .map_err(io_error("cutting a segment"))?;
    segment.written = offset;
    segment.complete = false;
    Ok(position)
}
