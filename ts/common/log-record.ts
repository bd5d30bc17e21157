/**
 * The record layout of docs/FORMAT.md: constants, the two fields an engine fills in (LMQ offsets,
 * store timestamp + checksum), the full validity check recovery and reads run, and field decoding.
 * Mirrors native/core/src/log/record.rs. Encoding lives in log-encode.ts.
 */
import { crc32c } from './crc32c.js';
import { MAX_LMQ_NAME_BYTES, MAX_LMQS_PER_RECORD } from './limits.js';
import { murmur3 } from './murmur3.js';

/** `LTR1` read as a little-endian u32. */
export const RECORD_MAGIC = 0x3152544c;
/** `LTE1`: the end marker of a segment whose next record did not fit. */
export const END_MAGIC = 0x3145544c;
/** Fixed part of a record, before the LMQ offsets. */
export const RECORD_HEADER_BYTES = 32;
export const RECORD_TYPE_MESSAGE = 1;
export const RECORD_TYPE_DELETE = 2;
export const FLAG_HAS_KEY = 1;
export const FLAG_HAS_TAG = 2;
const KNOWN_FLAGS = FLAG_HAS_KEY | FLAG_HAS_TAG;
/** Byte offset of the CRC and of the first byte it covers. */
const CRC_AT = 8;
const CRC_FROM = 12;
const STORE_TIMESTAMP_AT = 16;
const TWO_32 = 0x1_0000_0000;

export function readU16(bytes: Uint8Array, at: number): number {
  return (bytes[at] as number) | ((bytes[at + 1] as number) << 8);
}

export function readU32(bytes: Uint8Array, at: number): number {
  return (
    ((bytes[at] as number) | ((bytes[at + 1] as number) << 8) | ((bytes[at + 2] as number) << 16)) +
    (bytes[at + 3] as number) * 0x100_0000
  );
}

/** A u64 that must fit in 53 bits (positions, offsets, timestamps); larger values read as NaN. */
export function readU64(bytes: Uint8Array, at: number): number {
  const high = readU32(bytes, at + 4);
  return high >= 0x20_0000 ? Number.NaN : high * TWO_32 + readU32(bytes, at);
}

export function writeU16(bytes: Uint8Array, at: number, value: number): void {
  bytes[at] = value;
  bytes[at + 1] = value >>> 8;
}

export function writeU32(bytes: Uint8Array, at: number, value: number): void {
  bytes[at] = value;
  bytes[at + 1] = value >>> 8;
  bytes[at + 2] = value >>> 16;
  bytes[at + 3] = value >>> 24;
}

/** Writes a non-negative integer below 2^53 as a u64. */
export function writeU64(bytes: Uint8Array, at: number, value: number): void {
  const high = Math.floor(value / TWO_32);
  writeU32(bytes, at, value - high * TWO_32);
  writeU32(bytes, at + 4, high);
}

/** The `size` field of the record at `start`. */
export function readRecordSize(bytes: Uint8Array, start: number): number {
  return readU32(bytes, start + 4);
}

/** Sets the offset of the record at `start` in its `i`-th LMQ. */
export function setRecordOffset(bytes: Uint8Array, start: number, i: number, offset: number): void {
  writeU64(bytes, start + RECORD_HEADER_BYTES + 8 * i, offset);
}

/** Stamps the store timestamp and then the checksum: the last write before the record is stored. */
export function sealRecord(bytes: Uint8Array, start: number, storeTimestampMs: number): void {
  writeU64(bytes, start + STORE_TIMESTAMP_AT, storeTimestampMs);
  const size = readRecordSize(bytes, start);
  writeU32(bytes, start + CRC_AT, crc32c(bytes, start + CRC_FROM, start + size));
}

/** What recovery and the index need from a valid record. */
export interface RecordInfo {
  size: number;
  type: number;
  flags: number;
  lmqCount: number;
  lmqs: string[];
  offsets: number[];
  storeTimestamp: number;
  bornTimestamp: number;
  /** murmur3 of the tag, 0 without one. */
  tagHash: number;
  /** murmur3 of the key; a record without a key hashes as "" (0). */
  keyHash: number;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Checks the record at `start` against every rule of docs/FORMAT.md ("Validity"), reading no byte at
 * or past `end`; returns its fields, or a sentence saying what is wrong.
 */
export function checkRecord(bytes: Uint8Array, start: number, end: number): RecordInfo | string {
  if (end - start < RECORD_HEADER_BYTES) return 'not enough bytes for a record header';
  if (readU32(bytes, start) !== RECORD_MAGIC) return 'no record magic';
  const size = readRecordSize(bytes, start);
  if (size < RECORD_HEADER_BYTES || size > end - start) return `record size ${size} does not fit`;
  const recordEnd = start + size;
  if (readU32(bytes, start + CRC_AT) !== crc32c(bytes, start + CRC_FROM, recordEnd)) return 'checksum mismatch';
  const type = bytes[start + 12] as number;
  const flags = bytes[start + 13] as number;
  const lmqCount = readU16(bytes, start + 14);
  if (type !== RECORD_TYPE_MESSAGE && type !== RECORD_TYPE_DELETE) return `unknown record type ${type}`;
  if ((flags & ~KNOWN_FLAGS) !== 0) return `unknown flags ${flags}`;
  if (lmqCount < 1 || lmqCount > MAX_LMQS_PER_RECORD) return `LMQ count ${lmqCount} out of range`;
  const storeTimestamp = readU64(bytes, start + STORE_TIMESTAMP_AT);
  const bornTimestamp = readU64(bytes, start + 24);
  if (Number.isNaN(storeTimestamp) || Number.isNaN(bornTimestamp)) return 'timestamp out of range';
  let at = start + RECORD_HEADER_BYTES;
  if (at + 8 * lmqCount > recordEnd) return 'LMQ offsets overrun the record';
  const offsets: number[] = [];
  for (let i = 0; i < lmqCount; i++, at += 8) {
    const offset = readU64(bytes, at);
    if (Number.isNaN(offset)) return 'LMQ offset out of range';
    offsets.push(offset);
  }
  const lmqs: string[] = [];
  for (let i = 0; i < lmqCount; i++) {
    const field = lengthPrefixed(bytes, at, recordEnd, 2);
    if (field < 0 || field === at + 2 || field - at - 2 > MAX_LMQ_NAME_BYTES) return 'bad LMQ name';
    const name = decodeStrict(bytes, at + 2, field);
    if (name === undefined) return 'LMQ name is not UTF-8';
    lmqs.push(name);
    at = field;
  }
  const keyEnd = lengthPrefixed(bytes, at, recordEnd, 2);
  if (keyEnd < 0 || ((flags & FLAG_HAS_KEY) === 0 && keyEnd !== at + 2)) return 'bad key';
  const keyHash = murmur3(bytes, at + 2, keyEnd);
  at = keyEnd;
  const tagEnd = lengthPrefixed(bytes, at, recordEnd, 2);
  if (tagEnd < 0 || ((flags & FLAG_HAS_TAG) === 0 && tagEnd !== at + 2)) return 'bad tag';
  const tagHash = (flags & FLAG_HAS_TAG) === 0 ? 0 : murmur3(bytes, at + 2, tagEnd);
  at = tagEnd;
  if (at + 2 > recordEnd) return 'property count overruns the record';
  const propertyCount = readU16(bytes, at);
  at += 2;
  for (let i = 0; i < 2 * propertyCount; i++) {
    at = lengthPrefixed(bytes, at, recordEnd, 2);
    if (at < 0) return 'bad property';
  }
  const bodyEnd = lengthPrefixed(bytes, at, recordEnd, 4);
  if (bodyEnd !== recordEnd) return 'record parts do not add up to its size';
  if (type === RECORD_TYPE_DELETE && (lmqCount !== 1 || flags !== 0 || propertyCount !== 0 || bodyEnd !== at + 4)) {
    return 'malformed LMQ deletion record';
  }
  return { size, type, flags, lmqCount, lmqs, offsets, storeTimestamp, bornTimestamp, tagHash, keyHash };
}

/** The end of a field with a `width`-byte length prefix at `at`, or -1 when it overruns `end`. */
function lengthPrefixed(bytes: Uint8Array, at: number, end: number, width: 2 | 4): number {
  if (at + width > end) return -1;
  const fieldEnd = at + width + (width === 2 ? readU16(bytes, at) : readU32(bytes, at));
  return fieldEnd > end ? -1 : fieldEnd;
}

function decodeStrict(bytes: Uint8Array, start: number, end: number): string | undefined {
  try {
    return utf8.decode(bytes.subarray(start, end));
  } catch {
    return undefined;
  }
}

// Added by the js log engine (ts/engine/js/log/log.ts) for its append path.

/**
 * The tag hash (`out[0]`) and key hash (`out[1]`) of the record at `start`, as `checkRecord` computes
 * them, without the full check: on the append path the record was just encoded and is trusted.
 */
export function recordHashes(bytes: Uint8Array, start: number, out: Uint32Array): void {
  const lmqCount = readU16(bytes, start + 14);
  let at = start + RECORD_HEADER_BYTES + 8 * lmqCount;
  for (let i = 0; i < lmqCount; i++) at += 2 + readU16(bytes, at);
  const keyEnd = at + 2 + readU16(bytes, at);
  out[1] = murmur3(bytes, at + 2, keyEnd);
  const tagEnd = keyEnd + 2 + readU16(bytes, keyEnd);
  out[0] = ((bytes[start + 13] as number) & FLAG_HAS_TAG) === 0 ? 0 : murmur3(bytes, keyEnd + 2, tagEnd);
}
