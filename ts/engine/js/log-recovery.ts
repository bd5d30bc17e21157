/**
 * Opening a log directory, exactly as docs/FORMAT.md ("Recovery") says: list and check the segments,
 * load the checkpoint, replay the log after it into the consume queues, and cut the log at the first
 * thing that is not a valid record or a complete segment's end. Mirrors native/core/src/log/recovery.rs.
 */
import { join } from 'node:path';
import { LogCorruptError, UnsupportedFormatError } from '../../errors.js';
import type { LogRecoveryStats } from '../contract.js';
import { SEGMENT_HEADER_BYTES } from './limits.js';
import { CHECKPOINT_FILE, CHECKPOINT_TMP_FILE, readCheckpoint } from './log-checkpoint.js';
import { applyRecord, replaySegment, type SegmentEnd } from './log-replay.js';
import {
  checkSegmentHeader,
  createSegment,
  ioError,
  parseSegmentFileName,
  SEGMENTS_DIR,
  type Segment,
} from './log-segment.js';
import { BadBlockError, QueueSet } from './queue.js';
import type { Storage } from './storage.js';

/** A recovered log: its segments, queues, and where the next record goes. */
export interface RecoveredLog {
  segments: Segment[];
  queues: QueueSet;
  /** In-segment offset of the end of the log in the last segment, which has room after it. */
  endOffset: number;
  recovery: LogRecoveryStats;
}

async function removeIfPresent(storage: Storage, path: string): Promise<void> {
  try {
    await storage.unlink(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw ioError(`cannot remove ${path}`, error);
  }
}

async function closeAll(storage: Storage, segments: readonly Segment[]): Promise<void> {
  for (const segment of segments) await storage.close(segment.fd).catch(() => undefined);
}

/** Opens and checks one segment file; undefined when its header is invalid. */
async function openSegment(storage: Storage, path: string, base: number, isLast: boolean): Promise<Segment | string> {
  let fd: number;
  try {
    fd = await storage.open(path);
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
      await storage.truncate(fd, check.size);
      return { base, size: check.size, fd, path, lastTimestamp: check.createdMs };
    }
    if (check.kind === 'valid') return { base, size: check.size, fd, path, lastTimestamp: check.createdMs };
    if (check.kind === 'short') {
      await storage.close(fd);
      return `file is shorter than the ${check.size} bytes its header says`;
    }
    await storage.close(fd);
    return check.reason;
  } catch (error) {
    await storage.close(fd).catch(() => undefined);
    if (error instanceof UnsupportedFormatError) throw error;
    throw ioError(`cannot read segment ${path}`, error);
  }
}

/**
 * Step 1: the segment files in position order, each open and checked. A last segment with an invalid
 * header was being prepared and is removed; any other invalid header, or a gap, is corruption.
 */
async function listSegments(storage: Storage, segmentsDir: string, stats: LogRecoveryStats): Promise<Segment[]> {
  let names: string[];
  try {
    names = await storage.readdir(segmentsDir);
  } catch (error) {
    throw ioError(`cannot list ${segmentsDir}`, error);
  }
  const bases: number[] = [];
  for (const name of names) {
    const base = parseSegmentFileName(name);
    if (base !== undefined) bases.push(base);
  }
  bases.sort((a, b) => a - b);
  const segments: Segment[] = [];
  try {
    for (let i = 0; i < bases.length; i++) {
      const base = bases[i] as number;
      const path = join(segmentsDir, `${String(base).padStart(20, '0')}.seg`);
      const opened = await openSegment(storage, path, base, i === bases.length - 1);
      if (typeof opened !== 'string') {
        const previous = segments[segments.length - 1];
        if (previous !== undefined && previous.base + previous.size !== base) {
          throw new LogCorruptError(`segment ${path} does not follow the one before it`, {
            file: path,
            position: previous.base + previous.size,
          });
        }
        segments.push(opened);
      } else if (i === bases.length - 1) {
        await removeIfPresent(storage, path);
        stats.removedSegments++;
      } else {
        throw new LogCorruptError(`segment ${path} has an invalid header: ${opened}`, { file: path, position: base });
      }
    }
  } catch (error) {
    await closeAll(storage, segments);
    throw error;
  }
  return segments;
}

/** Removes an unusable checkpoint (reported as invalid). */
async function dropCheckpoint(storage: Storage, dir: string, stats: LogRecoveryStats): Promise<undefined> {
  // Left in place, an unusable checkpoint could be loaded once the log grows past its position
  // (docs/FORMAT.md, "Checkpoint"): it goes.
  stats.checkpoint = 'invalid';
  await removeIfPresent(storage, join(dir, CHECKPOINT_FILE));
  return undefined;
}

/**
 * Step 2: the checkpoint, when it is valid and describes this log: its position within the segments
 * (as the native engine requires, one before the first segment misses what retention deleted after
 * it, LMQ deletions included). A directory without segments takes any valid checkpoint and starts
 * its log at the checkpoint's position, so offsets and positions carry on. Queues of a version 2
 * file stay in it until used, but those with entries below the first segment are read now (their
 * retired entries are dropped): one whose block fails its check makes the checkpoint unusable.
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
    return dropCheckpoint(storage, dir, stats);
  }
  if (first === undefined) {
    checkpoint.queues.emptyAll();
  } else {
    try {
      checkpoint.queues.loadBelow(first.base);
    } catch (error) {
      checkpoint.queues.forgetStored();
      if (error instanceof BadBlockError) return dropCheckpoint(storage, dir, stats);
      throw error;
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
 * Steps 3 and 4: replays from `start` to the end of the log and cuts there: zeroes the rest of that
 * segment (truncate and extend back) and removes the segments after it. A cut is reported when a
 * torn or corrupt record started there or later segments were removed, as the native engine does;
 * the bytes cut include those segments. A log ending with a complete last segment gets its next
 * segment now. Replayed segments are synced: a killed writer may have left them in the page cache.
 */
async function replayAndCut(
  storage: Storage,
  segmentsDir: string,
  segments: Segment[],
  queues: QueueSet,
  start: number,
  next: { segmentBytes: number; nowMs: number },
  stats: LogRecoveryStats,
): Promise<number> {
  const from = locate(segments, start);
  stats.replayedFrom = (segments[from.index] as Segment).base + from.offset;
  let index = from.index;
  let end: SegmentEnd;
  for (let offset = from.offset; ; index++, offset = SEGMENT_HEADER_BYTES) {
    const segment = segments[index] as Segment;
    end = replaySegment(storage, segment, offset, (position, info) => {
      applyRecord(queues, segment, position, info);
      stats.replayedRecords++;
    });
    if (!end.complete || index === segments.length - 1) break;
  }
  const endSegment = segments[index] as Segment;
  try {
    for (let i = from.index; i <= index; i++) await storage.datasync((segments[i] as Segment).fd);
  } catch (error) {
    throw ioError(`cannot sync ${endSegment.path}`, error);
  }
  if (end.complete) {
    const base = endSegment.base + endSegment.size;
    segments.push(await createSegment(storage, segmentsDir, base, next.segmentBytes, next.nowMs));
    return SEGMENT_HEADER_BYTES;
  }
  const removed = segments.splice(index + 1);
  let cutBytes = endSegment.size - end.offset;
  for (const segment of removed) {
    cutBytes += segment.size;
    await storage.close(segment.fd).catch(() => undefined);
    await removeIfPresent(storage, segment.path);
    stats.removedSegments++;
  }
  if (end.dirty || removed.length > 0) {
    stats.cutPosition = endSegment.base + end.offset;
    stats.cutBytes = cutBytes;
  }
  try {
    await storage.truncate(endSegment.fd, end.offset);
    await storage.truncate(endSegment.fd, endSegment.size);
    await storage.datasync(endSegment.fd);
    if (removed.length > 0) await storage.syncDir(segmentsDir);
  } catch (error) {
    throw ioError(`cannot cut the log in ${endSegment.path}`, error);
  }
  return end.offset;
}

/** Recovers the log in `dir` (already locked), creating its first segment when it has none. */
export async function recoverLog(
  storage: Storage,
  dir: string,
  segmentBytes: number,
  nowMs: number,
): Promise<RecoveredLog> {
  const began = performance.now();
  const segmentsDir = join(dir, SEGMENTS_DIR);
  const recovery: LogRecoveryStats = {
    checkpoint: 'none',
    replayedFrom: 0,
    replayedRecords: 0,
    cutPosition: -1,
    cutBytes: 0,
    removedSegments: 0,
    durationMs: 0,
  };
  try {
    await storage.mkdir(segmentsDir);
  } catch (error) {
    throw ioError(`cannot create ${segmentsDir}`, error);
  }
  await removeIfPresent(storage, join(dir, CHECKPOINT_TMP_FILE));
  const segments = await listSegments(storage, segmentsDir, recovery);
  try {
    const checkpoint = await loadCheckpoint(storage, dir, segments, recovery);
    if (segments.length === 0) {
      const base = checkpoint?.position ?? 0;
      segments.push(await createSegment(storage, segmentsDir, base, segmentBytes, nowMs));
      recovery.replayedFrom = base + SEGMENT_HEADER_BYTES;
      recovery.durationMs = performance.now() - began;
      return { segments, queues: checkpoint?.queues ?? new QueueSet(), endOffset: SEGMENT_HEADER_BYTES, recovery };
    }
    let queues = checkpoint?.queues ?? new QueueSet();
    const next = { segmentBytes, nowMs };
    let endOffset: number;
    try {
      endOffset = await replayAndCut(storage, segmentsDir, segments, queues, checkpoint?.position ?? 0, next, recovery);
    } catch (error) {
      // A queue's block in the checkpoint failed its check while the log after it was replayed
      // (nothing is cut before replay ends): the checkpoint goes and the whole log is replayed.
      if (!(error instanceof BadBlockError)) throw error;
      queues.forgetStored();
      await dropCheckpoint(storage, dir, recovery);
      recovery.replayedRecords = 0;
      queues = new QueueSet();
      endOffset = await replayAndCut(storage, segmentsDir, segments, queues, 0, next, recovery);
    }
    recovery.durationMs = performance.now() - began;
    return { segments, queues, endOffset, recovery };
  } catch (error) {
    await closeAll(storage, segments);
    throw error;
  }
}
