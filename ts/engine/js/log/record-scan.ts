/**
 * The replay's check of a record: every rule of docs/FORMAT.md ("Validity") that `checkRecord`
 * (ts/common/log-record.ts) applies, with the fields written into one reused `ScannedRecord`
 * instead of a new object, arrays and strings per record. A reopen replays up to a checkpoint
 * interval of records, and what it allocates per record is what it spends its time on.
 *
 * One rule is left to the caller: that each LMQ name is UTF-8. The replay looks names up by their
 * bytes and checks the UTF-8 once, when it first meets a name's bytes (replay-names.ts).
 */
import { crc32c } from '../../../common/crc32c.js';
import { MAX_LMQ_NAME_BYTES, MAX_LMQS_PER_RECORD } from '../../../common/limits.js';
import {
  FLAG_HAS_KEY,
  FLAG_HAS_TAG,
  RECORD_HEADER_BYTES,
  RECORD_MAGIC,
  RECORD_TYPE_DELETE,
  RECORD_TYPE_MESSAGE,
  readU16,
  readU32,
  readU64,
} from '../../../common/log-record.js';
import { murmur3 } from '../../../common/murmur3.js';

const KNOWN_FLAGS = FLAG_HAS_KEY | FLAG_HAS_TAG;
/** The first byte the record checksum covers, and where the checksum is. */
const CRC_FROM = 12;
const CRC_AT = 8;

/** The fields of the last record `scanRecord` accepted; LMQ names are byte ranges of its buffer. */
export class ScannedRecord {
  size = 0;
  type = 0;
  lmqCount = 0;
  storeTimestamp = 0;
  /** murmur3 of the tag, 0 without one. */
  tagHash = 0;
  /** murmur3 of the key; a record without a key hashes as "" (0). */
  keyHash = 0;
  /** The offset of the record in each of its LMQs. */
  readonly offsets = new Float64Array(MAX_LMQS_PER_RECORD);
  /** Each LMQ name as `[nameStart[j], nameEnd[j])` of the buffer scanned. */
  readonly nameStart = new Int32Array(MAX_LMQS_PER_RECORD);
  readonly nameEnd = new Int32Array(MAX_LMQS_PER_RECORD);
}

/** The end of a field with a 2-byte length prefix at `at`, or -1 when it overruns `end`. */
function short(bytes: Uint8Array, at: number, end: number): number {
  if (at + 2 > end) return -1;
  const fieldEnd = at + 2 + readU16(bytes, at);
  return fieldEnd > end ? -1 : fieldEnd;
}

/**
 * Whether the record at `start`, reading no byte at or past `end`, keeps every rule `checkRecord`
 * checks but the UTF-8 of its LMQ names; when it does, its fields are in `out`.
 */
export function scanRecord(bytes: Uint8Array, start: number, end: number, out: ScannedRecord): boolean {
  if (end - start < RECORD_HEADER_BYTES || readU32(bytes, start) !== RECORD_MAGIC) return false;
  const size = readU32(bytes, start + 4);
  if (size < RECORD_HEADER_BYTES || size > end - start) return false;
  const recordEnd = start + size;
  const type = bytes[start + 12] as number;
  const flags = bytes[start + 13] as number;
  const lmqCount = readU16(bytes, start + 14);
  if (type !== RECORD_TYPE_MESSAGE && type !== RECORD_TYPE_DELETE) return false;
  if ((flags & ~KNOWN_FLAGS) !== 0 || lmqCount < 1 || lmqCount > MAX_LMQS_PER_RECORD) return false;
  const storeTimestamp = readU64(bytes, start + 16);
  if (Number.isNaN(storeTimestamp) || Number.isNaN(readU64(bytes, start + 24))) return false;
  let at = start + RECORD_HEADER_BYTES;
  if (at + 8 * lmqCount > recordEnd) return false;
  const offsets = out.offsets;
  for (let i = 0; i < lmqCount; i++, at += 8) {
    const offset = readU64(bytes, at);
    if (Number.isNaN(offset)) return false;
    offsets[i] = offset;
  }
  for (let i = 0; i < lmqCount; i++) {
    const field = short(bytes, at, recordEnd);
    if (field < 0 || field === at + 2 || field - at - 2 > MAX_LMQ_NAME_BYTES) return false;
    out.nameStart[i] = at + 2;
    out.nameEnd[i] = field;
    at = field;
  }
  const keyEnd = short(bytes, at, recordEnd);
  if (keyEnd < 0 || ((flags & FLAG_HAS_KEY) === 0 && keyEnd !== at + 2)) return false;
  const keyStart = at + 2;
  at = keyEnd;
  const tagEnd = short(bytes, at, recordEnd);
  if (tagEnd < 0 || ((flags & FLAG_HAS_TAG) === 0 && tagEnd !== at + 2)) return false;
  const tagStart = at + 2;
  at = tagEnd;
  if (at + 2 > recordEnd) return false;
  const propertyCount = readU16(bytes, at);
  at += 2;
  for (let i = 0; i < 2 * propertyCount; i++) {
    at = short(bytes, at, recordEnd);
    if (at < 0) return false;
  }
  if (at + 4 > recordEnd || at + 4 + readU32(bytes, at) !== recordEnd) return false;
  if (type === RECORD_TYPE_DELETE && (lmqCount !== 1 || flags !== 0 || propertyCount !== 0 || at + 4 !== recordEnd)) {
    return false;
  }
  // The checksum last: the cheap layout checks end a torn tail before a pass over its bytes.
  if (readU32(bytes, start + CRC_AT) !== crc32c(bytes, start + CRC_FROM, recordEnd)) return false;
  out.size = size;
  out.type = type;
  out.lmqCount = lmqCount;
  out.storeTimestamp = storeTimestamp;
  out.keyHash = murmur3(bytes, keyStart, keyEnd);
  out.tagHash = (flags & FLAG_HAS_TAG) === 0 ? 0 : murmur3(bytes, tagStart, tagEnd);
  return true;
}
