/**
 * Checkpoint format version 1 (docs/FORMAT.md, "Checkpoint"), read only: releases before version 2
 * wrote it, and a directory they left opens without a full replay. Its LMQs and entries are
 * interleaved under one checksum, so it is read and loaded whole. Mirrors `decode_v1` in
 * native/core/src/log/checkpoint.rs.
 */
import { crc32c } from '../../../common/crc32c.js';
import { readU16, readU32, readU64 } from '../../../common/log-record.js';
import { ConsumeQueue, checkEntry, ENTRY_WORDS, QueueSet, STORED_ENTRY_BYTES } from '../queue.js';

export const CHECKPOINT_V1_MAGIC = 'LTCKPT01';
export const CHECKPOINT_V1_VERSION = 1;
const HEADER_BYTES = 48;

/** A checkpoint read back. */
export interface Checkpoint {
  position: number;
  createdMs: number;
  /** Newest store timestamp per segment base, for segments that existed at `position`. */
  segmentTimestamps: Map<number, number>;
  queues: QueueSet;
}

/** Words of one buffer the queues of a checkpoint being loaded share (4 MiB). */
const SHARED_WORDS = 1 << 20;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A version 1 checkpoint's bytes (magic and version already checked), or undefined when invalid. */
export function decodeCheckpointV1(bytes: Uint8Array): Checkpoint | undefined {
  if (bytes.length < HEADER_BYTES + 4) return undefined;
  const crcAt = bytes.length - 4;
  if (readU32(bytes, crcAt) !== crc32c(bytes, 0, crcAt)) return undefined;
  try {
    return readBody(bytes, crcAt, new QueueSet());
  } catch {
    // A layout the checksum vouches for but that does not parse: written by a broken writer.
    return undefined;
  }
}

function readBody(bytes: Uint8Array, end: number, queues: QueueSet): Checkpoint | undefined {
  const position = readU64(bytes, 16);
  const createdMs = readU64(bytes, 24);
  const segmentCount = readU32(bytes, 32);
  const queueCount = readU64(bytes, 40);
  if (Number.isNaN(position) || Number.isNaN(createdMs) || Number.isNaN(queueCount)) return undefined;
  let at = HEADER_BYTES;
  if (at + 16 * segmentCount > end) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let shared = new Uint32Array(0);
  let sharedUsed = 0;
  const segmentTimestamps = new Map<number, number>();
  for (let i = 0; i < segmentCount; i++, at += 16) segmentTimestamps.set(readU64(bytes, at), readU64(bytes, at + 8));
  for (let i = 0; i < queueCount; i++) {
    if (at + 2 > end) return undefined;
    const nameEnd = at + 2 + readU16(bytes, at);
    if (nameEnd + 24 > end) return undefined;
    const name = utf8.decode(bytes.subarray(at + 2, nameEnd));
    const min = readU64(bytes, nameEnd);
    const next = readU64(bytes, nameEnd + 8);
    const lastWrite = readU64(bytes, nameEnd + 16);
    at = nameEnd + 24;
    const count = next - min;
    if (name.length === 0 || queues.get(name) !== undefined || !(count >= 0) || Number.isNaN(lastWrite))
      return undefined;
    if (at + STORED_ENTRY_BYTES * count > end) return undefined;
    // Every queue starts in one shared buffer (one allocation, not one per LMQ); a queue that
    // grows moves to its own array (queue.ts, makeRoom).
    const words = Math.max(count, 1) * ENTRY_WORDS;
    if (shared.length - sharedUsed < words) {
      shared = new Uint32Array(Math.max(words, SHARED_WORDS));
      sharedUsed = 0;
    }
    const queue = new ConsumeQueue(min, 0, shared.subarray(sharedUsed, sharedUsed + words));
    sharedUsed += words;
    queue.lastWrite = lastWrite;
    // An entry in the file is the in-memory entry's five words (position low and high, size, tag
    // hash, key hash) and a zero word: copied word by word once its position and size are checked.
    const entries = queue.entries;
    let previous = -1;
    let previousSize = 0;
    let repeats = 0;
    for (let k = 0, slot = 0; k < count; k++, at += STORED_ENTRY_BYTES, slot += ENTRY_WORDS) {
      const high = view.getUint32(at + 4, true);
      if (high >= 0x20_0000) return undefined; // past 2^53: not a position this log writes
      const low = view.getUint32(at, true);
      const entryPosition = high * 0x1_0000_0000 + low;
      const size = view.getUint32(at + 8, true);
      // Sizes a read would allocate, checked as version 2 checks them when a block is loaded.
      if (checkEntry(entryPosition, size, previous, previousSize, position, repeats) !== undefined) return undefined;
      repeats = entryPosition === previous && size === previousSize ? repeats + 1 : 1;
      previous = entryPosition;
      previousSize = size;
      entries[slot] = low;
      entries[slot + 1] = high;
      entries[slot + 2] = size;
      entries[slot + 3] = view.getUint32(at + 12, true);
      entries[slot + 4] = view.getUint32(at + 16, true);
    }
    queue.next = min + count;
    queues.insert(name, queue);
    queues.entries += count;
  }
  return at === end ? { position, createdMs, segmentTimestamps, queues } : undefined;
}
