/**
 * Replay (docs/FORMAT.md, "Recovery", step 3): reading one segment's records in order through a
 * chunked buffer, checking each one fully, and applying it to the consume queues.
 */

import {
  checkRecord,
  END_MAGIC,
  RECORD_HEADER_BYTES,
  RECORD_MAGIC,
  RECORD_TYPE_DELETE,
  type RecordInfo,
  readRecordSize,
  readU32,
} from '../../../common/log-record.js';
import { LogCorruptError } from '../../../errors.js';
import type { QueueSet } from '../queue.js';
import type { Segment } from './segment.js';
import type { Storage } from './storage.js';

/** Bytes read from a segment at a time during replay (a larger record gets a buffer of its own). */
const REPLAY_CHUNK_BYTES = 4 * 1024 * 1024;

/** Where a segment's records ended: at its complete end, or at the end of the log. */
export interface SegmentEnd {
  /** In-segment offset after the last valid record. */
  offset: number;
  /** The segment ends with an end marker or has fewer than 4 bytes left there. */
  complete: boolean;
  /** Not complete, and the 4 bytes there are not zero: a torn or corrupt record starts there. */
  dirty: boolean;
}

/** A window on a segment file, refilled on demand. */
class SegmentReader {
  buffer: Buffer = Buffer.allocUnsafe(0);
  private start = 0;
  private length = 0;

  constructor(
    private readonly storage: Storage,
    private readonly segment: Segment,
  ) {}

  /** Makes `[at, at + need)` of the file available; returns its index in `buffer`, -1 past the file's end. */
  window(at: number, need: number): number {
    if (at >= this.start && at + need <= this.start + this.length) return at - this.start;
    const want = Math.min(Math.max(need, REPLAY_CHUNK_BYTES), this.segment.size - at);
    if (this.buffer.length < want) this.buffer = Buffer.allocUnsafe(want);
    let read = 0;
    while (read < want) {
      const n = this.storage.read(this.segment.fd, this.buffer, read, want - read, at + read);
      if (n === 0) break;
      read += n;
    }
    this.start = at;
    this.length = read;
    return read >= need ? 0 : -1;
  }
}

/** Reads records of `segment` from `offset`, passing each valid one to `onRecord`, until its end. */
export function replaySegment(
  storage: Storage,
  segment: Segment,
  offset: number,
  onRecord: (position: number, info: RecordInfo) => void,
): SegmentEnd {
  const reader = new SegmentReader(storage, segment);
  let at = offset;
  for (;;) {
    const left = segment.size - at;
    if (left < 4) return { offset: at, complete: true, dirty: false };
    const peek = Math.min(left, RECORD_HEADER_BYTES);
    let i = reader.window(at, peek);
    if (i < 0) return { offset: at, complete: false, dirty: false };
    const magic = readU32(reader.buffer, i);
    if (magic === END_MAGIC) return { offset: at, complete: true, dirty: false };
    const torn = { offset: at, complete: false, dirty: magic !== 0 };
    if (magic !== RECORD_MAGIC || left < RECORD_HEADER_BYTES) return torn;
    const size = readRecordSize(reader.buffer, i);
    if (size < RECORD_HEADER_BYTES || size > left) return torn;
    i = reader.window(at, size);
    if (i < 0) return torn;
    const info = checkRecord(reader.buffer, i, i + size);
    if (typeof info === 'string') return torn;
    onRecord(segment.base + at, info);
    at += size;
  }
}

/** Applies one replayed record to the queues (docs/FORMAT.md, "Recovery", step 3). */
export function applyRecord(queues: QueueSet, segment: Segment, position: number, info: RecordInfo): void {
  if (info.storeTimestamp > segment.lastTimestamp) segment.lastTimestamp = info.storeTimestamp;
  if (info.type === RECORD_TYPE_DELETE) {
    queues.drop(info.lmqs[0] as string);
    return;
  }
  for (let j = 0; j < info.lmqCount; j++) {
    const name = info.lmqs[j] as string;
    const offset = info.offsets[j] as number;
    // A queue still in the checkpoint file stays there, the replayed entries held after its block,
    // whose checksum recovery checks once replay is done (`QueueSet.checkReplayedBlocks`).
    let queue = queues.get(name);
    if (queue === undefined) {
      queue = queues.obtain(name, offset);
    } else if (offset > queue.next) {
      // Older records of this LMQ were retired (or it was dropped and started again elsewhere).
      queues.entries -= queue.count;
      queue.restart(offset);
    } else if (offset < queue.next) {
      throw new LogCorruptError(
        `the record at position ${position} gives LMQ ${name} offset ${offset}, below its next offset ${queue.next}`,
        { file: segment.path, position },
      );
    }
    queue.push(position, info.size, info.tagHash, info.keyHash);
    queue.lastWrite = info.storeTimestamp;
    queues.entries++;
  }
}
