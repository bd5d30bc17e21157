/**
 * Body-only records for an engine that does not handle them itself (the js engine): a batch of
 * `CommitLog.appendBodies` encoded into the records of docs/FORMAT.md (the bytes the native engine
 * frames, with no object per record on the way; each LMQ name checked and encoded once, then kept),
 * and the bodies of a read cut out of its records (`CommitLog.readBodies`).
 */
import { bufferView } from './buffer-view.js';
import { encodedName } from './common/log-encode.js';
import {
  RECORD_HEADER_BYTES,
  RECORD_MAGIC,
  RECORD_TYPE_MESSAGE,
  readRecordSize,
  readU16,
  readU32,
  writeU16,
  writeU32,
  writeU64,
} from './common/log-record.js';
import type { BodyBatch, BodyReadResult, EncodedBatch, LogReadResult } from './engine/contract.js';
import { InvalidArgumentError } from './errors.js';

/** Bytes of a body-only record besides its LMQ name and body (docs/FORMAT.md, "Record"). */
export const BODY_RECORD_FRAME_BYTES = RECORD_HEADER_BYTES + 8 + 2 + 2 + 2 + 2 + 4;

/**
 * The records of a body-only batch whose shape the caller checked, born and stored at
 * `storeTimestampMs`, as `encodeBatch` would encode them; a record larger than `maxRecordBytes` or
 * an invalid name throws before anything is stored.
 */
export function encodeBodies(batch: BodyBatch, storeTimestampMs: number, maxRecordBytes: number): EncodedBatch {
  const { lmqs, lmqIndex, bodies, bodyEnds } = batch;
  const count = lmqIndex.length;
  const recordLmqs = new Array<string>(count);
  const encoded = new Array<Uint8Array>(count);
  let total = 0;
  let bodyStart = 0;
  for (let i = 0; i < count; i++) {
    const name = lmqs[lmqIndex[i] as number] as string;
    const bytes = encodedName(name);
    const bodyEnd = bodyEnds[i] as number;
    const size = BODY_RECORD_FRAME_BYTES + bytes.length + bodyEnd - bodyStart;
    if (size > maxRecordBytes) {
      throw new InvalidArgumentError(`record ${i} is ${size} bytes; a segment holds records up to ${maxRecordBytes}`, {
        limit: maxRecordBytes,
        actual: size,
      });
    }
    recordLmqs[i] = name;
    encoded[i] = bytes;
    total += size;
    bodyStart = bodyEnd;
  }
  const out = Buffer.allocUnsafe(total);
  const starts = new Uint32Array(count + 1);
  const lmqStarts = new Uint32Array(count + 1);
  let at = 0;
  bodyStart = 0;
  for (let i = 0; i < count; i++) {
    const name = encoded[i] as Uint8Array;
    const bodyEnd = bodyEnds[i] as number;
    const bodyLength = bodyEnd - bodyStart;
    starts[i] = at;
    lmqStarts[i] = i;
    writeU32(out, at, RECORD_MAGIC);
    writeU32(out, at + 4, BODY_RECORD_FRAME_BYTES + name.length + bodyLength);
    writeU32(out, at + 8, 0);
    out[at + 12] = RECORD_TYPE_MESSAGE;
    out[at + 13] = 0;
    writeU16(out, at + 14, 1);
    writeU64(out, at + 16, storeTimestampMs);
    writeU64(out, at + 24, storeTimestampMs);
    let p = at + RECORD_HEADER_BYTES;
    // The LMQ offset, which the engine fills in.
    for (const stop = p + 8; p < stop; p++) out[p] = 0;
    writeU16(out, p, name.length);
    out.set(name, p + 2);
    p += 2 + name.length;
    // An empty key and tag, no properties.
    for (const stop = p + 6; p < stop; p++) out[p] = 0;
    writeU32(out, p, bodyLength);
    out.set(new Uint8Array(bodies.buffer, bodies.byteOffset + bodyStart, bodyLength), p + 4);
    at = p + 4 + bodyLength;
    bodyStart = bodyEnd;
  }
  starts[count] = at;
  lmqStarts[count] = count;
  return {
    bytes: out,
    count,
    starts,
    lmqs: recordLmqs,
    lmqStarts,
    positions: new Float64Array(count),
    offsets: new Float64Array(count),
  };
}

/**
 * Where a read of `count` bodies laid out in memory from byte `at` puts its parts, as the native
 * engine lays out a read of bodies: the positions (f64) from the first 8-byte boundary at or after
 * `at`, the body ends (u32) padded to 8 bytes, then the bodies. Offsets into the same memory.
 */
export function bodiesReadLayout(at: number, count: number): { start: number; endsAt: number; bodiesAt: number } {
  const start = at + ((8 - (at % 8)) % 8);
  const endsAt = start + count * 8;
  return { start, endsAt, bodiesAt: endsAt + Math.ceil((count * 4) / 8) * 8 };
}

/**
 * `bodiesReadLayout` in `into` for `count` records whose bodies take at most `bound` bytes, or
 * undefined when it may not fit.
 */
export function bodiesLayout(
  into: Uint8Array,
  count: number,
  bound: number,
): { start: number; endsAt: number; bodiesAt: number } | undefined {
  const layout = bodiesReadLayout(into.byteOffset, count);
  return layout.bodiesAt + bound <= into.byteOffset + into.length ? layout : undefined;
}

/**
 * The bodies of the records of a read (already checked), copied back to back: into `into` when
 * they fit (see `CommitLog.readBodies`), else into new memory.
 */
export function bodiesOf(read: LogReadResult, into?: Uint8Array): BodyReadResult {
  const { bytes, count } = read;
  const starts = new Uint32Array(count);
  const lengths = new Uint32Array(count);
  let total = 0;
  let at = read.bytesAt;
  for (let i = 0; i < count; i++) {
    const lmqCount = readU16(bytes, at + 14);
    let p = at + RECORD_HEADER_BYTES + 8 * lmqCount;
    for (let j = 0; j < lmqCount; j++) p += 2 + readU16(bytes, p);
    p += 2 + readU16(bytes, p);
    p += 2 + readU16(bytes, p);
    const properties = readU16(bytes, p);
    p += 2;
    for (let j = 0; j < 2 * properties; j++) p += 2 + readU16(bytes, p);
    starts[i] = p + 4;
    lengths[i] = readU32(bytes, p);
    total += lengths[i] as number;
    at += readRecordSize(bytes, at);
  }
  const layout = into === undefined ? undefined : bodiesLayout(into, count, total);
  let bodies: Buffer;
  let bodyEnds: Uint32Array;
  let positions =
    read.positionsAt === 0 && read.positions.length === count
      ? read.positions
      : read.positions.subarray(read.positionsAt, read.positionsAt + count);
  if (into !== undefined && layout !== undefined) {
    const memory = into.buffer as ArrayBuffer;
    const given = positions;
    positions = new Float64Array(memory, layout.start, count);
    positions.set(given);
    bodyEnds = new Uint32Array(memory, layout.endsAt, count);
    bodies = bufferView(memory, layout.bodiesAt, total);
  } else {
    bodyEnds = new Uint32Array(count);
    bodies = Buffer.allocUnsafe(total);
  }
  let start = 0;
  for (let i = 0; i < count; i++) {
    const end = start + (lengths[i] as number);
    bodies.set(bytes.subarray(starts[i] as number, (starts[i] as number) + end - start), start);
    bodyEnds[i] = end;
    start = end;
  }
  return { firstOffset: read.firstOffset, count, bodies, bodyEnds, positions };
}
