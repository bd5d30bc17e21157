/**
 * Encodes `append` records into one buffer in the layout of docs/FORMAT.md, validating every field
 * as it goes, so an engine only patches LMQ offsets, the store timestamp and the checksum. Shared by
 * both engines: the native one takes the bytes in one crossing. A bad record throws before anything
 * is stored.
 */

import type { EncodedBatch } from '../engine/contract.js';
import { InvalidArgumentError } from '../errors.js';
import {
  MAX_APPEND_RECORDS,
  MAX_FIELD_BYTES,
  MAX_LMQ_NAME_BYTES,
  MAX_LMQS_PER_RECORD,
  MAX_PROPERTIES,
} from './limits.js';
import {
  FLAG_HAS_KEY,
  FLAG_HAS_TAG,
  RECORD_HEADER_BYTES,
  RECORD_MAGIC,
  RECORD_TYPE_DELETE,
  RECORD_TYPE_MESSAGE,
  writeU16,
  writeU32,
  writeU64,
} from './log-record.js';

/** One record as callers give it to `CommitLog.append`. */
export interface AppendRecord {
  lmqs: readonly string[];
  body: Uint8Array | string;
  key?: string;
  tag?: string;
  properties?: Readonly<Record<string, string>>;
  bornTimestamp?: number;
}

/**
 * Encoded, validated LMQ names, kept because a workload names the same queues again and again: a
 * name seen before costs one map lookup instead of a scan of its characters. Bounded: cleared when
 * full, which costs one re-encoding per name.
 */
const NAME_CACHE_ENTRIES = 65_536;
const nameCache = new Map<string, Uint8Array>();

/** Whether `name` is all ASCII without NUL (its UTF-8 bytes are then its character codes). */
function isPlainAscii(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c === 0 || c > 0x7f) return false;
  }
  return true;
}

/** A validated LMQ name's UTF-8 bytes (cached: a workload names the same queues again and again). */
export function encodedName(name: unknown): Uint8Array {
  if (typeof name === 'string') {
    const cached = nameCache.get(name);
    if (cached !== undefined) return cached;
  }
  if (typeof name !== 'string' || name.length === 0) {
    throw new InvalidArgumentError('an LMQ name must be a non-empty string', { value: name });
  }
  let bytes: Buffer;
  if (isPlainAscii(name)) bytes = Buffer.from(name, 'latin1');
  else {
    if (name.includes('\0') || !name.isWellFormed()) {
      throw new InvalidArgumentError('an LMQ name must be well-formed UTF-16 without NUL characters', { value: name });
    }
    bytes = Buffer.from(name, 'utf8');
  }
  if (bytes.length > MAX_LMQ_NAME_BYTES) {
    throw new InvalidArgumentError(`an LMQ name is longer than ${MAX_LMQ_NAME_BYTES} UTF-8 bytes`, {
      value: name,
      limit: MAX_LMQ_NAME_BYTES,
      actual: bytes.length,
    });
  }
  if (nameCache.size >= NAME_CACHE_ENTRIES) nameCache.clear();
  nameCache.set(name, bytes);
  return bytes;
}

/** UTF-8 length of a string field, checked against the u16 limit; -1 when absent. */
function fieldLength(value: unknown, what: string): number {
  if (value === undefined) return -1;
  if (typeof value !== 'string') throw new InvalidArgumentError(`${what} must be a string`, { value });
  if (!value.isWellFormed()) throw new InvalidArgumentError(`${what} must be well-formed UTF-16`, { value });
  const length = Buffer.byteLength(value, 'utf8');
  if (length > MAX_FIELD_BYTES) {
    throw new InvalidArgumentError(`${what} is longer than ${MAX_FIELD_BYTES} UTF-8 bytes`, {
      value,
      limit: MAX_FIELD_BYTES,
      actual: length,
    });
  }
  return length;
}

function checkTimestamp(value: unknown): number {
  if (value === undefined) return -1;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidArgumentError('bornTimestamp must be a non-negative integer (ms)', { value });
  }
  return value;
}

/**
 * The UTF-8 length of a valid LMQ name (throwing for an invalid one). A plain ASCII name is
 * checked by its characters alone; any other goes through `encodedName` and its cache.
 */
function nameLength(name: unknown): number {
  if (fitsAsAscii(name) && isPlainAscii(name)) return name.length;
  return encodedName(name).length;
}

/**
 * Whether `name` is a string whose length would be a valid LMQ name's byte length if it were
 * plain ASCII. `encodeBatch` counts such a name at that length without reading its characters,
 * and checks them as it copies them (`writePlainName`): one pass over each name instead of two.
 */
function fitsAsAscii(name: unknown): name is string {
  return typeof name === 'string' && name.length !== 0 && name.length <= MAX_LMQ_NAME_BYTES;
}

/**
 * Writes a name `nameLength` accepted, its length and then its bytes, at `p`; returns the end. A
 * plain ASCII name is copied character by character (`writePlainName`): cheaper than a cache lookup
 * and a copy of the cached bytes, which on 10,000 names in turn both miss the processor's caches.
 * Any other is then written from its encoded bytes, over what the character copy left.
 */
function writeName(bytes: Uint8Array, p: number, name: string): number {
  const end = writePlainName(bytes, p, name);
  return end >= 0 ? end : writeEncodedName(bytes, p, encodedName(name));
}

/**
 * Writes a name `fitsAsAscii` accepted, its length and then its characters, at `p`, and returns
 * the end; or returns -1, with the bytes from `p` undefined, at the first character that is not
 * plain ASCII: the name was counted at the wrong length, and the batch is encoded again.
 */
function writePlainName(bytes: Uint8Array, p: number, name: string): number {
  const length = name.length;
  const from = p + 2;
  for (let k = 0; k < length; k++) {
    const c = name.charCodeAt(k);
    if (c === 0 || c > 0x7f) return -1;
    bytes[from + k] = c;
  }
  writeU16(bytes, p, length);
  return from + length;
}

function writeEncodedName(bytes: Uint8Array, p: number, name: Uint8Array): number {
  const length = name.length;
  writeU16(bytes, p, length);
  p += 2;
  for (let k = 0; k < length; k++) bytes[p + k] = name[k] as number;
  return p + length;
}

/**
 * The encoded size of one record, validating it; `allLmqs` receives its LMQ names. Unless `exact`,
 * a name `fitsAsAscii` accepts is counted as if it were plain ASCII, unchecked (see `encode`).
 */
function measure(
  record: AppendRecord,
  index: number,
  allLmqs: string[],
  maxRecordBytes: number,
  exact: boolean,
): number {
  if (record === null || typeof record !== 'object') {
    throw new InvalidArgumentError(`record ${index} must be an object`, { value: record });
  }
  const lmqs = record.lmqs;
  if (!Array.isArray(lmqs) || lmqs.length === 0 || lmqs.length > MAX_LMQS_PER_RECORD) {
    throw new InvalidArgumentError(`record ${index}: lmqs must be an array of 1 to ${MAX_LMQS_PER_RECORD} names`, {
      value: lmqs,
      limit: MAX_LMQS_PER_RECORD,
      actual: Array.isArray(lmqs) ? lmqs.length : undefined,
    });
  }
  let size = RECORD_HEADER_BYTES + 10 * lmqs.length + 2 + 2 + 2 + 4;
  for (let i = 0; i < lmqs.length; i++) {
    const lmq = lmqs[i] as string;
    size += !exact && fitsAsAscii(lmq) ? lmq.length : nameLength(lmq);
    for (let j = 0; j < i; j++) {
      if (lmqs[j] === lmq) throw new InvalidArgumentError(`record ${index} names LMQ ${lmq} twice`, { value: lmqs });
    }
    allLmqs.push(lmq);
  }
  size += Math.max(0, fieldLength(record.key, 'key')) + Math.max(0, fieldLength(record.tag, 'tag'));
  const properties = record.properties;
  if (properties !== undefined) {
    if (properties === null || typeof properties !== 'object') {
      throw new InvalidArgumentError(`record ${index}: properties must be an object of strings`, { value: properties });
    }
    let count = 0;
    for (const name in properties) {
      if (!Object.hasOwn(properties, name)) continue;
      count++;
      const value = properties[name];
      if (typeof value !== 'string') {
        throw new InvalidArgumentError(`record ${index}: property ${name} must be a string`, { value });
      }
      size += 4 + fieldLength(name, 'a property name') + fieldLength(value, `property ${name}`);
    }
    if (count > MAX_PROPERTIES) {
      throw new InvalidArgumentError(`record ${index} has more than ${MAX_PROPERTIES} properties`, {
        limit: MAX_PROPERTIES,
        actual: count,
      });
    }
  }
  const body = record.body;
  if (typeof body === 'string') size += Buffer.byteLength(body, 'utf8');
  else if (body instanceof Uint8Array) size += body.length;
  else
    throw new InvalidArgumentError(`record ${index}: body must be a Buffer, a Uint8Array or a string`, { value: body });
  checkTimestamp(record.bornTimestamp);
  if (size > maxRecordBytes) {
    throw new InvalidArgumentError(
      `record ${index} is ${size} bytes; a segment holds records up to ${maxRecordBytes}`,
      {
        limit: maxRecordBytes,
        actual: size,
      },
    );
  }
  return size;
}

function writeString(bytes: Buffer, at: number, value: string | undefined): number {
  if (value === undefined || value.length === 0) {
    writeU16(bytes, at, 0);
    return at + 2;
  }
  const length = bytes.write(value, at + 2, 'utf8');
  writeU16(bytes, at, length);
  return at + 2 + length;
}

function allocateBatch(
  count: number,
  lmqTotal: number,
  totalBytes: number,
  lmqs: string[],
  scratch?: Buffer,
): EncodedBatch {
  return {
    bytes:
      scratch !== undefined && scratch.length >= totalBytes
        ? scratch.subarray(0, totalBytes)
        : Buffer.allocUnsafe(totalBytes),
    count,
    starts: new Uint32Array(count + 1),
    lmqs,
    lmqStarts: new Uint32Array(count + 1),
    positions: new Float64Array(count),
    offsets: new Float64Array(lmqTotal),
  };
}

/**
 * Encodes `records` (validating them all first) with `storeTimestampMs` as the store timestamp and
 * the born timestamp of records that give none. Records larger than `maxRecordBytes` are refused.
 * The bytes go to the start of `scratch` when it is large enough (a caller reusing one buffer
 * spares each append a fresh allocation, which for a batch of large bodies costs page faults and a
 * garbage collection later), else to a new buffer.
 */
export function encodeBatch(
  records: readonly AppendRecord[],
  storeTimestampMs: number,
  maxRecordBytes: number,
  scratch?: Buffer,
): EncodedBatch {
  if (!Array.isArray(records) || records.length === 0 || records.length > MAX_APPEND_RECORDS) {
    throw new InvalidArgumentError(`append takes an array of 1 to ${MAX_APPEND_RECORDS} records`, {
      value: Array.isArray(records) ? undefined : records,
      limit: MAX_APPEND_RECORDS,
      actual: Array.isArray(records) ? records.length : undefined,
    });
  }
  return (
    encode(records, storeTimestampMs, maxRecordBytes, scratch, false) ??
    (encode(records, storeTimestampMs, maxRecordBytes, scratch, true) as EncodedBatch)
  );
}

/**
 * `encodeBatch` in two passes: `measure` validates every record and sizes it, then each is written.
 * Unless `exact`, names are sized as if plain ASCII and checked as they are copied; a name that is
 * not gives `undefined` (nothing is stored yet), and the caller encodes again with `exact`, which
 * sizes each name by its UTF-8 bytes (and throws for an invalid one, as `measure` would have).
 */
function encode(
  records: readonly AppendRecord[],
  storeTimestampMs: number,
  maxRecordBytes: number,
  scratch: Buffer | undefined,
  exact: boolean,
): EncodedBatch | undefined {
  const lmqs: string[] = [];
  const sizes = new Uint32Array(records.length);
  let total = 0;
  for (let i = 0; i < records.length; i++) {
    const size = measure(records[i] as AppendRecord, i, lmqs, maxRecordBytes, exact);
    sizes[i] = size;
    total += size;
  }
  const batch = allocateBatch(records.length, lmqs.length, total, lmqs, scratch);
  const bytes = batch.bytes as Buffer;
  let at = 0;
  let nameIndex = 0;
  for (let i = 0; i < records.length; i++) {
    const record = records[i] as AppendRecord;
    batch.starts[i] = at;
    batch.lmqStarts[i] = nameIndex;
    const recordLmqs = record.lmqs;
    const lmqCount = recordLmqs.length;
    const end = at + (sizes[i] as number);
    writeU32(bytes, at, RECORD_MAGIC);
    writeU32(bytes, at + 4, end - at);
    writeU32(bytes, at + 8, 0);
    bytes[at + 12] = RECORD_TYPE_MESSAGE;
    bytes[at + 13] = (record.key === undefined ? 0 : FLAG_HAS_KEY) | (record.tag === undefined ? 0 : FLAG_HAS_TAG);
    writeU16(bytes, at + 14, lmqCount);
    writeU64(bytes, at + 16, storeTimestampMs);
    writeU64(bytes, at + 24, record.bornTimestamp ?? storeTimestampMs);
    let p = at + RECORD_HEADER_BYTES;
    // A byte loop beats fill() for the few bytes of offsets (no builtin call).
    for (const stop = p + 8 * lmqCount; p < stop; p++) bytes[p] = 0;
    for (let j = 0; j < lmqCount; j++) {
      const lmq = recordLmqs[j] as string;
      p = exact ? writeName(bytes, p, lmq) : writePlainName(bytes, p, lmq);
      if (p < 0) return undefined;
    }
    nameIndex += lmqCount;
    p = writeString(bytes, p, record.key);
    p = writeString(bytes, p, record.tag);
    p = writeProperties(bytes, p, record.properties);
    const body = record.body;
    let bodyLength: number;
    if (typeof body === 'string') bodyLength = bytes.write(body, p + 4, 'utf8');
    else {
      bytes.set(body, p + 4);
      bodyLength = body.length;
    }
    writeU32(bytes, p, bodyLength);
    p += 4 + bodyLength;
    if (p !== end) throw new Error(`litetopic: record ${i} encoded to ${p - at} bytes, measured ${end - at}`);
    at = end;
  }
  batch.starts[records.length] = at;
  batch.lmqStarts[records.length] = nameIndex;
  return batch;
}

function writeProperties(bytes: Buffer, at: number, properties: AppendRecord['properties']): number {
  const countAt = at;
  let p = at + 2;
  let count = 0;
  if (properties !== undefined) {
    for (const name in properties) {
      if (!Object.hasOwn(properties, name)) continue;
      p = writeString(bytes, p, name);
      p = writeString(bytes, p, properties[name]);
      count++;
    }
  }
  writeU16(bytes, countAt, count);
  return p;
}

/**
 * The LMQ deletion records of docs/FORMAT.md for `lmqs`, one per name, in one batch (their offset
 * fields are set by the engine). At most `MAX_APPEND_RECORDS` names.
 */
export function encodeDeletions(lmqs: readonly string[], storeTimestampMs: number): EncodedBatch {
  // The names are of LMQs about to go: written like appends' names, not kept in the name cache.
  const sizeOf = (lmq: string) => RECORD_HEADER_BYTES + 8 + 2 + nameLength(lmq) + 2 + 2 + 2 + 4;
  const total = lmqs.reduce((sum, lmq) => sum + sizeOf(lmq), 0);
  const batch = allocateBatch(lmqs.length, lmqs.length, total, [...lmqs]);
  const bytes = batch.bytes;
  bytes.fill(0);
  let at = 0;
  for (let i = 0; i < lmqs.length; i++) {
    batch.starts[i] = at;
    batch.lmqStarts[i] = i;
    writeU32(bytes, at, RECORD_MAGIC);
    bytes[at + 12] = RECORD_TYPE_DELETE;
    writeU16(bytes, at + 14, 1);
    writeU64(bytes, at + 16, storeTimestampMs);
    writeU64(bytes, at + 24, storeTimestampMs);
    const end = writeName(bytes, at + RECORD_HEADER_BYTES + 8, lmqs[i] as string) + 2 + 2 + 2 + 4;
    writeU32(bytes, at + 4, end - at);
    at = end;
  }
  if (at !== total) throw new Error(`litetopic: deletion records encoded to ${at} bytes, measured ${total}`);
  batch.starts[lmqs.length] = at;
  batch.lmqStarts[lmqs.length] = lmqs.length;
  return batch;
}
