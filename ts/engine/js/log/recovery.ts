/**
 * Opening a log directory, exactly as docs/FORMAT.md ("Recovery") says: list and check the segments,
 * load the checkpoint, replay the log after it into the consume queues, and end the log at the first
 * thing that is not a valid record or a complete segment's end. What a crash leaves after the last
 * durable position (a torn tail) is cut; damage where valid records must be is refused with
 * `LogCorruptError` unless the open asks for a repair. Nothing in the directory changes before the
 * replay has succeeded, so a refused open leaves every file as it was; a read-only open changes
 * nothing at all and reports what a writable one would do. Mirrors native/core/src/log/recovery.rs.
 */
import { join } from 'node:path';
import { crc32c } from '../../../common/crc32c.js';
import { SEGMENT_HEADER_BYTES } from '../../../common/limits.js';
import {
  checkRecord,
  RECORD_HEADER_BYTES,
  RECORD_MAGIC,
  readRecordSize,
  readU32,
  readU64,
  writeU32,
} from '../../../common/log-record.js';
import { LogCorruptError, UnsupportedFormatError } from '../../../errors.js';
import type { LogCorruption, LogRecoveryStats } from '../../contract.js';
import { BadBlockError, QueueSet } from '../queue.js';
import {
  CHECKPOINT_FILE,
  CHECKPOINT_TMP_FILE,
  type DirectoryNames,
  openCheckpoint,
  readCheckpoint,
} from './checkpoint.js';
import { Replay, type SegmentEnd } from './replay.js';
import { ReplayNames } from './replay-names.js';
import {
  checkSegmentHeader,
  createSegment,
  ioError,
  openForReading,
  parseSegmentFileName,
  SEGMENTS_DIR,
  type Segment,
} from './segment.js';
import type { Storage } from './storage.js';

/**
 * The unit a disk writes whole (docs/FORMAT.md, "Recovery"). A write that did not reach the disk
 * before a power loss leaves the zeros it would have replaced in at least one piece of a record
 * between two multiples of it.
 */
const SECTOR_BYTES = 512;
/** Bytes read at a time when checking a file for zeros or searching it for a record. */
const SCAN_CHUNK_BYTES = 1024 * 1024;
/** `LTCKPT02`, the version 2 checkpoint magic. */
const CHECKPOINT_MAGIC = 'LTCKPT02';

/** How a log is opened (`LogOpenOptions` of ts/engine/contract.ts). */
export interface RecoveryMode {
  segmentBytes: number;
  nowMs: number;
  readOnly: boolean;
  repair: boolean;
}

/** A recovered log: its segments, queues, and where the next record goes. */
export interface RecoveredLog {
  segments: Segment[];
  queues: QueueSet;
  /** In-segment offset of the end of the log in the last segment, which has room after it. */
  endOffset: number;
  /** Where the next record would go: the end of the readable log (read-only opens use it). */
  writePosition: number;
  recovery: LogRecoveryStats;
}

async function removeIfPresent(storage: Storage, path: string): Promise<boolean> {
  try {
    await storage.unlink(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw ioError(`cannot remove ${path}`, error);
    return false;
  }
}

async function closeAll(storage: Storage, segments: readonly Segment[]): Promise<void> {
  for (const segment of segments) await storage.close(segment.fd).catch(() => undefined);
}

/** Reads up to `length` bytes of `fd` at `position` (fewer at the end of the file). */
function readAt(storage: Storage, fd: number, position: number, length: number): Buffer {
  const bytes = Buffer.alloc(length);
  let read = 0;
  while (read < length) {
    const n = storage.read(fd, bytes, read, length - read, position + read);
    if (n === 0) break;
    read += n;
  }
  return bytes.subarray(0, read);
}

/** Whether a segment file holds nothing after its header: shorter than one, or zeros from there on. */
function nothingAfterHeader(storage: Storage, fd: number, length: number): boolean {
  for (let at = SEGMENT_HEADER_BYTES; at < length; at += SCAN_CHUNK_BYTES) {
    const chunk = readAt(storage, fd, at, Math.min(SCAN_CHUNK_BYTES, length - at));
    if (chunk.length === 0) break;
    for (const byte of chunk) if (byte !== 0) return false;
  }
  return true;
}

/** One segment file opened and checked: a segment, or why it cannot be one (`prepared`: see below). */
type Opened = Segment | { reason: string; length: number; prepared: boolean };

/**
 * Opens and checks one segment file. An invalid one is `prepared` when it is the last file and
 * holds nothing after its header: a segment whose preparation never finished.
 */
async function openSegment(
  storage: Storage,
  path: string,
  base: number,
  isLast: boolean,
  mode: RecoveryMode,
): Promise<Opened> {
  let fd: number;
  try {
    fd = mode.readOnly ? await openForReading(storage, path) : await storage.open(path);
  } catch (error) {
    throw ioError(`cannot open segment ${path}`, error);
  }
  try {
    const fileSize = await storage.size(fd);
    const header = new Uint8Array(SEGMENT_HEADER_BYTES);
    const read = storage.read(fd, header, 0, SEGMENT_HEADER_BYTES, 0);
    const check = checkSegmentHeader(header, read, base, fileSize);
    if (check.kind === 'version') {
      throw new UnsupportedFormatError(`${path} is segment format version ${check.version}; this release reads 1`, {
        file: path,
        version: check.version,
      });
    }
    if (check.kind === 'short' && isLast) {
      // A cut (truncate, then extend back) interrupted on a previous open: its records are intact.
      // A read-only open reads it as far as it goes.
      if (mode.readOnly) return { base, size: fileSize, fd, path, lastTimestamp: check.createdMs };
      await storage.truncate(fd, check.size);
      return { base, size: check.size, fd, path, lastTimestamp: check.createdMs };
    }
    if (check.kind === 'valid') return { base, size: check.size, fd, path, lastTimestamp: check.createdMs };
    const reason =
      check.kind === 'short' ? `file is shorter than the ${check.size} bytes its header says` : check.reason;
    const prepared = isLast && nothingAfterHeader(storage, fd, fileSize);
    await storage.close(fd);
    return { reason, length: fileSize, prepared };
  } catch (error) {
    await storage.close(fd).catch(() => undefined);
    if (error instanceof UnsupportedFormatError) throw error;
    throw ioError(`cannot read segment ${path}`, error);
  }
}

/** A segment file recovery does not use: it and every later file leave the log. */
interface Unusable {
  path: string;
  length: number;
}

/** The usable segments, and the files from the first problem on. */
interface Listed {
  segments: Segment[];
  rest: Unusable[];
  problem?: { corruption: LogCorruption; prepared: boolean };
}

async function fileLength(storage: Storage, path: string): Promise<number> {
  const fd = await openForReading(storage, path);
  try {
    return await storage.size(fd);
  } finally {
    await storage.close(fd);
  }
}

/**
 * Step 1: the segment files in position order, each open and checked, up to the first file whose
 * header is invalid or that does not follow the one before it; that file and the later ones are
 * returned unopened.
 */
async function listSegments(storage: Storage, segmentsDir: string, mode: RecoveryMode): Promise<Listed> {
  let names: string[];
  try {
    names = await storage.readdir(segmentsDir);
  } catch (error) {
    // A read-only open of a directory no log was ever opened in: an empty log.
    if (!(mode.readOnly && (error as NodeJS.ErrnoException).code === 'ENOENT')) {
      throw ioError(`cannot list ${segmentsDir}`, error);
    }
    names = [];
  }
  const bases: number[] = [];
  for (const name of names) {
    const base = parseSegmentFileName(name);
    if (base !== undefined) bases.push(base);
  }
  bases.sort((a, b) => a - b);
  const listed: Listed = { segments: [], rest: [] };
  try {
    for (let i = 0; i < bases.length; i++) {
      const base = bases[i] as number;
      const path = join(segmentsDir, `${String(base).padStart(20, '0')}.seg`);
      if (listed.problem !== undefined) {
        listed.rest.push({ path, length: await fileLength(storage, path) });
        continue;
      }
      const opened = await openSegment(storage, path, base, i === bases.length - 1, mode);
      if ('reason' in opened) {
        listed.problem = {
          corruption: { file: path, position: base, message: `invalid segment header: ${opened.reason}` },
          prepared: opened.prepared,
        };
        listed.rest.push({ path, length: opened.length });
        continue;
      }
      const previous = listed.segments[listed.segments.length - 1];
      if (previous !== undefined && previous.base + previous.size !== base) {
        await storage.close(opened.fd);
        listed.problem = {
          corruption: {
            file: path,
            position: previous.base + previous.size,
            message: 'segment files are not contiguous',
          },
          prepared: false,
        };
        listed.rest.push({ path, length: opened.size });
        continue;
      }
      listed.segments.push(opened);
    }
  } catch (error) {
    await closeAll(storage, listed.segments);
    throw error;
  }
  return listed;
}

/**
 * The position in the checkpoint's header when the header checks (version 2: magic, version and
 * header CRC), whatever the rest of the file holds: the log before it was durable when it was written.
 */
async function checkpointHeaderPosition(storage: Storage, dir: string): Promise<number | undefined> {
  const opened = await openCheckpoint(storage, dir);
  if (opened === undefined) return undefined;
  const { fd } = opened;
  try {
    const header = readAt(storage, fd, 0, 64);
    if (header.length < 64 || header.toString('latin1', 0, 8) !== CHECKPOINT_MAGIC) return undefined;
    if (readU32(header, 8) !== 2 || readU32(header, 60) !== crc32c(header, 0, 60)) return undefined;
    return readU64(header, 16);
  } finally {
    await storage.close(fd);
  }
}

/**
 * Step 2: the checkpoint, when it is valid and describes this log: its position within the segments
 * (as the native engine requires, one before the first segment misses what retention deleted after
 * it, LMQ deletions included). A directory without segments takes any valid checkpoint and starts
 * its log at the checkpoint's position, so offsets and positions carry on. Queues of a version 2
 * file stay in it until used, but those with entries below the first segment are read now (their
 * retired entries are dropped): one whose block fails its check makes the checkpoint unusable. An
 * unusable one is reported as invalid and left in place until recovery has succeeded.
 */
async function loadCheckpoint(storage: Storage, dir: string, segments: readonly Segment[], stats: LogRecoveryStats) {
  const checkpoint = await readCheckpoint(storage, dir);
  if (checkpoint === undefined) return undefined;
  const first = segments[0];
  const last = segments[segments.length - 1];
  const usable =
    checkpoint !== 'invalid' &&
    (first === undefined ||
      last === undefined ||
      (checkpoint.position >= first.base && checkpoint.position <= last.base + last.size));
  if (!usable) {
    if (checkpoint !== 'invalid') checkpoint.queues.forgetStored();
    stats.checkpoint = 'invalid';
    return undefined;
  }
  if (first === undefined) {
    checkpoint.queues.emptyAll();
  } else {
    try {
      checkpoint.queues.loadBelow(first.base);
    } catch (error) {
      checkpoint.queues.forgetStored();
      if (!(error instanceof BadBlockError)) throw error;
      stats.checkpoint = 'invalid';
      return undefined;
    }
    checkpoint.queues.dropBefore(first.base);
  }
  stats.checkpoint = 'loaded';
  for (const segment of segments) {
    segment.lastTimestamp = checkpoint.segmentTimestamps.get(segment.base) ?? segment.lastTimestamp;
  }
  return checkpoint;
}

/** Where replay starts: segment index and in-segment offset for a log position. */
function locate(segments: readonly Segment[], position: number): { index: number; offset: number } {
  for (let index = 0; index < segments.length; index++) {
    const segment = segments[index] as Segment;
    if (position < segment.base + segment.size) {
      return { index, offset: Math.max(position - segment.base, SEGMENT_HEADER_BYTES) };
    }
  }
  const index = segments.length - 1;
  return { index, offset: (segments[index] as Segment).size };
}

/**
 * Step 3: replays from `start` to the end of the log into `queues` (the checkpoint's, whose names
 * `directory` gives, or new ones); returns the segment it ended in and how.
 */
function replay(
  storage: Storage,
  segments: Segment[],
  queues: QueueSet,
  directory: DirectoryNames | undefined,
  start: number,
  stats: LogRecoveryStats,
): { index: number; end: SegmentEnd } {
  const from = locate(segments, start);
  stats.replayedFrom = (segments[from.index] as Segment).base + from.offset;
  const names = new ReplayNames();
  if (directory !== undefined) names.defer(directory);
  const run = new Replay(storage, queues, names);
  let index = from.index;
  let end: SegmentEnd;
  try {
    for (let offset = from.offset; ; index++, offset = SEGMENT_HEADER_BYTES) {
      end = run.segment(segments[index] as Segment, offset);
      if (!end.complete || index === segments.length - 1) break;
    }
    run.finish();
  } finally {
    stats.replayedRecords = run.records;
  }
  return { index, end };
}

/**
 * Where the invalid record at `offset` ends, as far as it can be told: at its size when it has the
 * record magic and a size that fits the segment, else after the size field (magic present) or the magic.
 */
function damagedExtent(storage: Storage, segment: Segment, offset: number): number {
  const head = readAt(storage, segment.fd, offset, 8);
  if (head.length >= 4 && readU32(head, 0) === RECORD_MAGIC) {
    if (head.length === 8) {
      const size = readRecordSize(head, 0);
      if (size >= RECORD_HEADER_BYTES && offset + size <= segment.size) return offset + size;
    }
    return Math.min(offset + 8, segment.size);
  }
  return Math.min(offset + 4, segment.size);
}

/** Whether `[from, to)` of the segment, split at multiples of `SECTOR_BYTES`, has a piece of zeros only. */
function hasZeroPiece(storage: Storage, segment: Segment, from: number, to: number): boolean {
  for (let start = from; start < to; ) {
    const end = Math.min((Math.floor(start / SECTOR_BYTES) + 1) * SECTOR_BYTES, to);
    const piece = readAt(storage, segment.fd, start, end - start);
    if (piece.every((byte) => byte === 0)) return true;
    start = end;
  }
  return false;
}

/**
 * The position of the first valid record at or after `offset` of segment `index`, or in a later
 * segment, found by trying every offset where the record magic appears.
 */
function nextValidRecord(
  storage: Storage,
  segments: readonly Segment[],
  index: number,
  offset: number,
): number | undefined {
  for (let k = index; k < segments.length; k++) {
    const segment = segments[k] as Segment;
    const from = k === index ? Math.max(offset, SEGMENT_HEADER_BYTES) : SEGMENT_HEADER_BYTES;
    const found = firstValidIn(storage, segment, from, segment.size);
    if (found !== undefined) return segment.base + found;
  }
  return undefined;
}

/**
 * The offset of the first valid record starting in `[from, to)` of the segment, found by trying
 * every offset where the record magic appears (the record itself may run past `to`).
 */
function firstValidIn(storage: Storage, segment: Segment, from: number, to: number): number | undefined {
  const magic = Buffer.alloc(4);
  writeU32(magic, 0, RECORD_MAGIC);
  const limit = Math.min(to, segment.size);
  let chunkAt = from;
  while (chunkAt < limit) {
    // Up to three bytes past `limit`, so a magic starting before it is found whole.
    const length = Math.min(SCAN_CHUNK_BYTES, limit - chunkAt + 3, segment.size - chunkAt);
    const chunk = readAt(storage, segment.fd, chunkAt, length);
    if (chunk.length < 4) break;
    for (let found = chunk.indexOf(magic); found >= 0; found = chunk.indexOf(magic, found + 1)) {
      const at = chunkAt + found;
      if (at >= limit) return undefined;
      const head = readAt(storage, segment.fd, at, RECORD_HEADER_BYTES);
      if (head.length < RECORD_HEADER_BYTES) continue;
      const size = readRecordSize(head, 0);
      if (size < RECORD_HEADER_BYTES || at + size > segment.size) continue;
      const record = readAt(storage, segment.fd, at, size);
      if (typeof checkRecord(record, 0, size) !== 'string') return at;
    }
    // The next chunk overlaps this one by 3 bytes, so a magic across the boundary is found.
    chunkAt += chunk.length - 3;
  }
  return undefined;
}

/**
 * Whether the first invalid bytes of the log, at `offset` of segment `index`, are damage (the
 * reason) rather than the torn tail a crash leaves (docs/FORMAT.md, "Recovery"): damage when they
 * are before the position a checkpoint showed durable, or when the invalid record has no piece
 * between two sector boundaries that reads as zeros (the mark of a write that never reached the
 * disk) and a valid record follows it.
 */
function damageAt(
  storage: Storage,
  segments: readonly Segment[],
  index: number,
  offset: number,
  durable: number | undefined,
): string | undefined {
  const segment = segments[index] as Segment;
  const position = segment.base + offset;
  if (durable !== undefined && position < durable) {
    return `invalid record before position ${durable}, which the checkpoint shows was durable`;
  }
  // A damaged size field can make the extent run over the valid records after the record and on
  // into the zeros past the end of the log: the record ends, at the latest, where the first valid
  // record after it starts.
  const extent = damagedExtent(storage, segment, offset);
  const end = firstValidIn(storage, segment, offset + 1, extent) ?? extent;
  if (hasZeroPiece(storage, segment, offset, end)) return undefined;
  const found = nextValidRecord(storage, segments, index, offset + 1);
  return found === undefined ? undefined : `invalid record followed by a valid one at position ${found}`;
}

/** What recovery changes in the directory once the replay has succeeded (a writable open). */
interface Changes {
  /** Segment files to remove: unusable ones (those after the cut are `segments` past `cut.index`). */
  remove: string[];
  cut?: { index: number; offset: number };
  dropCheckpoint: boolean;
}

/**
 * Makes the changes of a writable open: the unusable checkpoint goes first (left in place while the
 * log is cut before its position, a crash could leave it describing records that are gone), then the
 * segments after the cut and the unusable ones, then the cut itself (truncate and extend back, then
 * sync); the directories are synced after removals.
 */
async function apply(storage: Storage, dir: string, segments: Segment[], changes: Changes): Promise<void> {
  const segmentsDir = join(dir, SEGMENTS_DIR);
  try {
    if (changes.dropCheckpoint && (await removeIfPresent(storage, join(dir, CHECKPOINT_FILE)))) {
      await storage.syncDir(dir);
    }
    const removed = changes.cut === undefined ? [] : segments.splice(changes.cut.index + 1);
    for (const segment of removed) {
      await storage.close(segment.fd).catch(() => undefined);
      await removeIfPresent(storage, segment.path);
    }
    for (const path of changes.remove) await removeIfPresent(storage, path);
    if (removed.length > 0 || changes.remove.length > 0) await storage.syncDir(segmentsDir);
    if (changes.cut !== undefined) {
      const segment = segments[changes.cut.index] as Segment;
      await storage.truncate(segment.fd, changes.cut.offset);
      await storage.truncate(segment.fd, segment.size);
      await storage.datasync(segment.fd);
    }
  } catch (error) {
    throw ioError(`cannot recover ${dir}`, error);
  }
}

/** Recovers the log in `dir` (already locked unless read-only), creating its first segment when it has none. */
export async function recoverLog(storage: Storage, dir: string, mode: RecoveryMode): Promise<RecoveredLog> {
  const began = performance.now();
  const segmentsDir = join(dir, SEGMENTS_DIR);
  const recovery: LogRecoveryStats = {
    checkpoint: 'none',
    replayedFrom: 0,
    replayedRecords: 0,
    cutPosition: -1,
    cutBytes: 0,
    removedSegments: 0,
    removedFiles: [],
    corruption: null,
    readOnly: mode.readOnly,
    durationMs: 0,
  };
  if (!mode.readOnly) {
    try {
      await storage.mkdir(segmentsDir);
    } catch (error) {
      throw ioError(`cannot create ${segmentsDir}`, error);
    }
    await removeIfPresent(storage, join(dir, CHECKPOINT_TMP_FILE));
  }
  const { segments, rest, problem } = await listSegments(storage, segmentsDir, mode);
  // The queues a loaded checkpoint fills keep its file open until they are read: a refused or
  // failed open lets go of it with the segments.
  let loaded: QueueSet | undefined;
  try {
    const headerPosition = await checkpointHeaderPosition(storage, dir);
    const changes: Changes = { remove: [], dropCheckpoint: false };
    // The cut the unusable files make on their own: their first position and their bytes.
    let restCut: { position: number; bytes: number } | undefined;
    if (problem !== undefined) {
      // A checkpoint past the segment's base shows it was in use: its header was durable.
      const prepared =
        problem.prepared && (headerPosition === undefined || headerPosition <= problem.corruption.position);
      if (!prepared) {
        if (!mode.repair && !mode.readOnly) {
          throw new LogCorruptError(`${problem.corruption.message} in ${problem.corruption.file}`, problem.corruption);
        }
        recovery.corruption = problem.corruption;
        // Read-only: a writable open would refuse; the readable log ends before the file.
        if (mode.repair) {
          restCut = { position: problem.corruption.position, bytes: rest.reduce((sum, r) => sum + r.length, 0) };
        }
      }
      if (prepared || mode.repair) {
        for (const unusable of rest) {
          recovery.removedSegments++;
          recovery.removedFiles.push(unusable.path);
          changes.remove.push(unusable.path);
        }
      }
    }
    const finish = (queues: QueueSet, endOffset: number, writePosition: number): RecoveredLog => {
      recovery.durationMs = performance.now() - began;
      return { segments, queues, endOffset, writePosition, recovery };
    };
    const noteRestCut = () => {
      if (restCut === undefined) return;
      recovery.cutPosition = restCut.position;
      recovery.cutBytes = restCut.bytes;
    };

    const checkpoint = await loadCheckpoint(storage, dir, segments, recovery);
    loaded = checkpoint?.queues;
    changes.dropCheckpoint = recovery.checkpoint === 'invalid';
    if (segments.length === 0) {
      const base = checkpoint?.position ?? 0;
      recovery.replayedFrom = base + SEGMENT_HEADER_BYTES;
      noteRestCut();
      const queues = checkpoint?.queues ?? new QueueSet();
      if (!mode.readOnly) {
        await apply(storage, dir, segments, changes);
        segments.push(await createSegment(storage, segmentsDir, base, mode.segmentBytes, mode.nowMs));
      }
      return finish(queues, SEGMENT_HEADER_BYTES, base + SEGMENT_HEADER_BYTES);
    }
    let queues = checkpoint?.queues ?? new QueueSet();
    let durable = headerPosition ?? checkpoint?.position;
    if (checkpoint !== undefined && (durable === undefined || checkpoint.position > durable))
      durable = checkpoint.position;
    let replayed: { index: number; end: SegmentEnd };
    try {
      replayed = replay(storage, segments, queues, checkpoint?.directory, checkpoint?.position ?? 0, recovery);
      // The stored blocks the replay appended after are checked now, all at once.
      queues.checkReplayedBlocks();
    } catch (error) {
      // A queue's block in the checkpoint failed its check while the log after it was replayed
      // (nothing is changed before replay ends): the whole log is replayed without the checkpoint.
      if (!(error instanceof BadBlockError)) throw error;
      queues.forgetStored();
      recovery.checkpoint = 'invalid';
      changes.dropCheckpoint = true;
      recovery.replayedRecords = 0;
      queues = new QueueSet();
      replayed = replay(storage, segments, queues, undefined, 0, recovery);
    }
    const { index, end } = replayed;
    const endSegment = segments[index] as Segment;
    let writePosition: number;
    if (end.complete) {
      noteRestCut();
      writePosition = endSegment.base + endSegment.size + SEGMENT_HEADER_BYTES;
    } else {
      writePosition = endSegment.base + end.offset;
      const damage = damageAt(storage, segments, index, end.offset, durable);
      const corruption: LogCorruption | undefined =
        damage === undefined ? undefined : { file: endSegment.path, position: writePosition, message: damage };
      if (corruption !== undefined && !mode.repair && !mode.readOnly) {
        throw new LogCorruptError(`${corruption.message} in ${corruption.file}`, corruption);
      }
      if (corruption !== undefined) recovery.corruption = corruption;
      if (corruption === undefined || mode.repair) {
        // The cut of step 4: the rest of this segment, the later segments and the unusable files.
        let cutBytes = endSegment.size - end.offset;
        for (const later of segments.slice(index + 1)) {
          cutBytes += later.size;
          recovery.removedSegments++;
          recovery.removedFiles.push(later.path);
        }
        if (end.dirty || index + 1 < segments.length || restCut !== undefined) {
          recovery.cutPosition = writePosition;
          recovery.cutBytes = cutBytes + (restCut?.bytes ?? 0);
        }
        changes.cut = { index, offset: end.offset };
      }
    }
    if (mode.readOnly) return finish(queues, end.offset, writePosition);
    // What was replayed may only be in the page cache (the writer was killed): it is made durable.
    try {
      const from = locate(segments, recovery.replayedFrom).index;
      for (let i = from; i <= index; i++) await storage.datasync((segments[i] as Segment).fd);
    } catch (error) {
      throw ioError(`cannot sync ${endSegment.path}`, error);
    }
    await apply(storage, dir, segments, changes);
    if (end.complete) {
      const base = endSegment.base + endSegment.size;
      segments.push(await createSegment(storage, segmentsDir, base, mode.segmentBytes, mode.nowMs));
      return finish(queues, SEGMENT_HEADER_BYTES, writePosition);
    }
    return finish(queues, end.offset, writePosition);
  } catch (error) {
    loaded?.forgetStored();
    await closeAll(storage, segments);
    throw error;
  }
}
