/**
 * Opening a log directory, exactly as docs/FORMAT.md ("Recovery") says: list and check the segments,
 * load the checkpoint, replay the log after it into the consume queues, and cut the log at the first
 * thing that is not a valid record or a complete segment's end. Mirrors native/core/src/log/recovery.rs.
 */
import { join } from 'node:path';
import { LogCorruptError, UnsupportedFormatError } from '../../errors.js';
import type { LogRecoveryStats } from '../contract.js';
import { SEGMENT_HEADER_BYTES } from './limits.js';
import { CHECKPOINT_FILE, CHECKPOINT_TMP_FILE, decodeCheckpoint, readCheckpointFile } from './log-checkpoint.js';
import { applyRecord, replaySegment } from './log-replay.js';
import {
  checkSegmentHeader,
  createSegment,
  ioError,
  parseSegmentFileName,
  SEGMENTS_DIR,
  type Segment,
} from './log-segment.js';
import { QueueSet } from './queue.js';
import type { Storage } from './storage.js';

/** A recovered log: its segments, queues, and where the next record goes. */
export interface RecoveredLog {
  segments: Segment[];
  queues: QueueSet;
  /** In-segment offset of the end of the log in the last segment. */
  endOffset: number;
  /** Whether the last segment is complete (no more records go into it). */
  full: boolean;
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
async function openSegment(storage: Storage, path: string, base: number): Promise<Segment | string> {
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
    if (check.kind === 'valid') return { base, size: check.size, fd, path, lastTimestamp: -1 };
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
      const opened = await openSegment(storage, path, base);
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

/** Step 2: the checkpoint, when it is valid and describes this log. */
async function loadCheckpoint(storage: Storage, dir: string, segments: readonly Segment[], stats: LogRecoveryStats) {
  const bytes = await readCheckpointFile(storage, dir);
  if (bytes === undefined) return undefined;
  const path = join(dir, CHECKPOINT_FILE);
  const checkpoint = decodeCheckpoint(bytes, path);
  const last = segments[segments.length - 1];
  stats.checkpoint = 'invalid';
  if (checkpoint === undefined) return undefined;
  if (last === undefined || checkpoint.position > last.base + last.size) {
    // It describes records this log no longer has: loading it later would point into new records.
    await removeIfPresent(storage, path);
    return undefined;
  }
  stats.checkpoint = 'loaded';
  const first = segments[0] as Segment;
  checkpoint.queues.dropBefore(first.base);
  for (const segment of segments) segment.lastTimestamp = checkpoint.segmentTimestamps.get(segment.base) ?? -1;
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
 * Steps 3 and 4: replays from `start` until the end of the log, then cuts there: zeroes the rest of
 * that segment (truncate and extend back) and removes the segments after it. Replayed segments are
 * synced, since a killed writer may have left their bytes in the page cache only.
 */
async function replayAndCut(
  storage: Storage,
  segmentsDir: string,
  segments: Segment[],
  queues: QueueSet,
  start: number,
  stats: LogRecoveryStats,
): Promise<{ endOffset: number; full: boolean }> {
  const from = locate(segments, start);
  stats.replayedFrom = (segments[from.index] as Segment).base + from.offset;
  let index = from.index;
  let offset = from.offset;
  let full = false;
  for (;;) {
    const segment = segments[index] as Segment;
    const end = replaySegment(storage, segment, offset, (position, info) => {
      applyRecord(queues, segment, position, info);
      stats.replayedRecords++;
    });
    offset = end.offset;
    if (!end.complete) {
      if (end.dirty) {
        stats.cutPosition = segment.base + offset;
        stats.cutBytes = segment.size - offset;
      }
      break;
    }
    if (index === segments.length - 1) {
      full = true;
      break;
    }
    index++;
    offset = SEGMENT_HEADER_BYTES;
  }
  const last = index;
  const endSegment = segments[last] as Segment;
  try {
    if (!full) {
      await storage.truncate(endSegment.fd, offset);
      await storage.truncate(endSegment.fd, endSegment.size);
    }
    for (let i = from.index; i <= last; i++) await storage.datasync((segments[i] as Segment).fd);
  } catch (error) {
    throw ioError(`cannot cut the log in ${endSegment.path}`, error);
  }
  const removed = segments.splice(last + 1);
  for (const segment of removed) {
    await storage.close(segment.fd).catch(() => undefined);
    await removeIfPresent(storage, segment.path);
    stats.removedSegments++;
  }
  if (removed.length > 0) {
    try {
      await storage.syncDir(segmentsDir);
    } catch (error) {
      throw ioError(`cannot sync ${segmentsDir}`, error);
    }
  }
  return { endOffset: offset, full };
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
      segments.push(await createSegment(storage, segmentsDir, 0, segmentBytes, nowMs));
      recovery.replayedFrom = SEGMENT_HEADER_BYTES;
      recovery.durationMs = performance.now() - began;
      return { segments, queues: new QueueSet(), endOffset: SEGMENT_HEADER_BYTES, full: false, recovery };
    }
    const queues = checkpoint?.queues ?? new QueueSet();
    const start = checkpoint?.position ?? 0;
    const end = await replayAndCut(storage, segmentsDir, segments, queues, start, recovery);
    recovery.durationMs = performance.now() - began;
    return { segments, queues, endOffset: end.endOffset, full: end.full, recovery };
  } catch (error) {
    await closeAll(storage, segments);
    throw error;
  }
}
