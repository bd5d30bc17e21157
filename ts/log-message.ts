/**
 * Turns the bytes an engine's `read` returns (records as stored, already checked) into message
 * objects. Bodies are views into the one buffer the read returned, not copies.
 */
import { bufferView } from './buffer-view.js';
import {
  FLAG_HAS_KEY,
  FLAG_HAS_TAG,
  RECORD_HEADER_BYTES,
  readRecordSize,
  readU16,
  readU32,
  readU64,
} from './common/log-record.js';
import type { LogReadResult } from './engine/contract.js';

/** A message as `CommitLog.read` returns it. */
export interface StoredMessage {
  /** The LMQ it was read from. */
  lmq: string;
  /** Its offset in that LMQ. */
  offset: number;
  /** Its position in the commit log (the same for every LMQ it was written to). */
  position: number;
  /** When the log stored it, ms. */
  storeTimestamp: number;
  /** The producer's timestamp, or the store timestamp when none was given. */
  bornTimestamp: number;
  key: string | undefined;
  tag: string | undefined;
  properties: Record<string, string>;
  /** A view into the read's buffer; copy it to keep it beyond the message's lifetime cheaply. */
  body: Buffer;
}

function text(bytes: Buffer, start: number, end: number): string {
  return bytes.toString('utf8', start, end);
}

/** Decodes every record of a read result. */
export function decodeMessages(lmq: string, result: LogReadResult): StoredMessage[] {
  const count = result.count;
  const messages: StoredMessage[] = new Array(count);
  if (count === 0) return messages;
  const source = result.bytes;
  const arrayBuffer = source.buffer;
  const base = source.byteOffset;
  const bytes = Buffer.isBuffer(source) ? source : Buffer.from(arrayBuffer, base, source.byteLength);
  const positions = result.positions;
  const positionsAt = result.positionsAt;
  const firstOffset = result.firstOffset;
  let at = result.bytesAt;
  for (let i = 0; i < count; i++) {
    const size = readRecordSize(bytes, at);
    const flags = bytes[at + 13] as number;
    const lmqCount = readU16(bytes, at + 14);
    let p = at + RECORD_HEADER_BYTES + 8 * lmqCount;
    for (let j = 0; j < lmqCount; j++) p += 2 + readU16(bytes, p);
    const keyLength = readU16(bytes, p);
    const key = (flags & FLAG_HAS_KEY) === 0 ? undefined : text(bytes, p + 2, p + 2 + keyLength);
    p += 2 + keyLength;
    const tagLength = readU16(bytes, p);
    const tag = (flags & FLAG_HAS_TAG) === 0 ? undefined : text(bytes, p + 2, p + 2 + tagLength);
    p += 2 + tagLength;
    const propertyCount = readU16(bytes, p);
    p += 2;
    const properties: Record<string, string> = {};
    for (let j = 0; j < propertyCount; j++) {
      const nameLength = readU16(bytes, p);
      const name = text(bytes, p + 2, p + 2 + nameLength);
      p += 2 + nameLength;
      const valueLength = readU16(bytes, p);
      const value = text(bytes, p + 2, p + 2 + valueLength);
      // A plain assignment to "__proto__" would set the prototype instead of a property.
      if (name === '__proto__')
        Object.defineProperty(properties, name, { value, enumerable: true, writable: true, configurable: true });
      else properties[name] = value;
      p += 2 + valueLength;
    }
    const bodyLength = readU32(bytes, p);
    messages[i] = {
      lmq,
      offset: firstOffset + i,
      position: positions[positionsAt + i] as number,
      storeTimestamp: readU64(bytes, at + 16),
      bornTimestamp: readU64(bytes, at + 24),
      key,
      tag,
      properties,
      // A view made from the ArrayBuffer directly: `subarray` looks up a species constructor for
      // every message, and `Buffer.from` checks its arguments (see buffer-view.ts).
      body: bufferView(arrayBuffer, base + p + 4, bodyLength),
    };
    at += size;
  }
  return messages;
}
