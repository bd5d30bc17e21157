/**
 * Reading an LMQ's records back: one positional read per run of records that follow each other in a
 * segment, then a full check of every record before it is returned (docs/FORMAT.md, "Validity"): a
 * record that fails, or that does not carry the LMQ and offset the index expects, is corruption.
 */

import { checkRecord, RECORD_TYPE_MESSAGE } from '../../../common/log-record.js';
import { LogCorruptError } from '../../../errors.js';
import type { LogReadResult } from '../../contract.js';
import { type ConsumeQueue, ENTRY_WORDS } from '../queue.js';
import { ioError, type Segment } from './segment.js';
import type { Storage } from './storage.js';

const EMPTY = new Uint8Array(0);

/** The last segment whose base is at or before `position`, or undefined before the first. */
export function segmentAt(segments: readonly Segment[], position: number): Segment | undefined {
  let low = 0;
  let high = segments.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((segments[middle] as Segment).base <= position) low = middle + 1;
    else high = middle;
  }
  return segments[low - 1];
}

function readExactly(
  storage: Storage,
  segment: Segment,
  into: Uint8Array,
  at: number,
  length: number,
  position: number,
) {
  let done = 0;
  try {
    while (done < length) {
      const n = storage.read(segment.fd, into, at + done, length - done, position - segment.base + done);
      if (n === 0) break;
      done += n;
    }
  } catch (error) {
    throw ioError(`cannot read ${segment.path}`, error);
  }
  if (done < length) {
    throw new LogCorruptError(`${segment.path} ends inside the record at position ${position}`, {
      file: segment.path,
      position,
    });
  }
}

/** Up to `maxNum` records of `queue` (named `lmq`) from `fromOffset`, or from its minimum when below. */
export function readQueue(
  storage: Storage,
  segments: readonly Segment[],
  lmq: string,
  queue: ConsumeQueue | undefined,
  fromOffset: number,
  maxNum: number,
): LogReadResult {
  const first = queue === undefined ? fromOffset : Math.max(fromOffset, queue.min);
  const count = queue === undefined ? 0 : Math.max(0, Math.min(maxNum, queue.next - first));
  const positions = new Float64Array(count);
  if (queue === undefined || count === 0)
    return { bytes: EMPTY, bytesAt: 0, firstOffset: first, positions, positionsAt: 0, count: 0 };
  const entries = queue.entries;
  let total = 0;
  for (let k = 0, slot = queue.slot(first); k < count; k++, slot += ENTRY_WORDS) {
    positions[k] = queue.position(first + k);
    total += entries[slot + 2] as number;
  }
  const bytes = Buffer.allocUnsafe(total);
  // Coalesce: records back to back in one segment are read with one call.
  let at = 0;
  for (let k = 0; k < count; ) {
    const position = positions[k] as number;
    const segment = segmentAt(segments, position);
    if (segment === undefined) {
      throw new LogCorruptError(`LMQ ${lmq} points at position ${position}, before the log`, { position });
    }
    const segmentEnd = segment.base + segment.size;
    let runBytes = entries[queue.slot(first + k) + 2] as number;
    let next = k + 1;
    while (next < count && positions[next] === position + runBytes) {
      runBytes += entries[queue.slot(first + next) + 2] as number;
      next++;
    }
    if (position + runBytes > segmentEnd) {
      throw new LogCorruptError(`LMQ ${lmq} points past the end of ${segment.path}`, { file: segment.path, position });
    }
    readExactly(storage, segment, bytes, at, runBytes, position);
    at += runBytes;
    k = next;
  }
  verify(bytes, segments, lmq, queue, first, positions);
  return { bytes, bytesAt: 0, firstOffset: first, positions, positionsAt: 0, count };
}

/** Checks every record read, and that it is the one the index says: this LMQ, this offset, this size. */
function verify(
  bytes: Uint8Array,
  segments: readonly Segment[],
  lmq: string,
  queue: ConsumeQueue,
  first: number,
  positions: Float64Array,
): void {
  let at = 0;
  for (let k = 0; k < positions.length; k++) {
    const size = queue.entries[queue.slot(first + k) + 2] as number;
    const info = checkRecord(bytes, at, at + size);
    let problem = typeof info === 'string' ? info : undefined;
    if (typeof info !== 'string') {
      // A record may name the LMQ more than once, each with its own offset: any of them will do.
      let named = false;
      for (let j = 0; j < info.lmqs.length && !named; j++)
        named = info.lmqs[j] === lmq && info.offsets[j] === first + k;
      if (info.type !== RECORD_TYPE_MESSAGE || info.size !== size || !named) {
        problem = `it is not offset ${first + k} of LMQ ${lmq}`;
      }
    }
    if (problem !== undefined) {
      const position = positions[k] as number;
      const file = segmentAt(segments, position)?.path;
      throw new LogCorruptError(`the record at position ${position} is corrupt: ${problem}`, { file, position });
    }
    at += size;
  }
}
