/**
 * The index checkpoint of docs/FORMAT.md ("Checkpoint"): every consume queue as of a durable log
 * position P, so recovery replays only the log after P. Written to `checkpoint.tmp`, synced, renamed
 * over `checkpoint` and the directory synced: a crash leaves the old file or the new one. Mirrors
 * native/core/src/log/checkpoint.rs.
 */
import { join } from 'node:path';
import { UnsupportedFormatError } from '../../errors.js';
import { crc32c } from './crc32c.js';
import { readU16, readU32, readU64, writeU16, writeU32, writeU64 } from './log-record.js';
import { ioError, type Segment } from './log-segment.js';
import { ConsumeQueue, ENTRY_WORDS, QueueSet } from './queue.js';
import type { Storage } from './storage.js';

export const CHECKPOINT_FILE = 'checkpoint';
export const CHECKPOINT_TMP_FILE = 'checkpoint.tmp';
const CHECKPOINT_VERSION = 1;
const MAGIC = 'LTCKPT01';
const HEADER_BYTES = 48;
/** Bytes of one index entry in the file. */
const FILE_ENTRY_BYTES = 24;
const TWO_32 = 0x1_0000_0000;

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

/** Bytes the checkpoint is written in: each piece is encoded, checksummed and written in one go. */
const PIECE_BYTES = 512 * 1024;
/**
 * Encoding time per turn of the event loop, ms. Shorter slices stall other work less but make the
 * checkpoint take longer under load, and the log written meanwhile is what a crash then replays.
 */
const SLICE_MS = 20;

/** Lets the event loop run what is due before the next piece of a checkpoint is encoded. */
function yieldTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Writes the checkpoint of `queues` as of log position `position` to `dir/checkpoint`, a piece at a
 * time with turns of the event loop between pieces, so a large index never holds the loop for long.
 *
 * The queues and the segments are taken as they are at the call (before anything else can append);
 * appends, deletions and retention go on meanwhile. Each queue is written with its entries of
 * records before `position` only (entries are in position order, so later ones are cut from the
 * end); a queue deleted meanwhile is written as it was (its deletion record is after `position`,
 * so recovery replays it). `beforeInstall` runs once every piece is written, before the file is
 * synced and renamed over the old checkpoint: the caller makes the log durable there, so a queue's
 * last-write time read during the encoding never names a record that could be lost.
 */
export async function writeCheckpoint(
  storage: Storage,
  dir: string,
  position: number,
  nowMs: number,
  segments: readonly Segment[],
  queues: QueueSet,
  beforeInstall: () => Promise<void>,
): Promise<void> {
  const names: string[] = [];
  const list: ConsumeQueue[] = [];
  queues.byName.forEach((queue, name) => {
    names.push(name);
    list.push(queue);
  });
  const header = Buffer.alloc(HEADER_BYTES + 16 * segments.length);
  header.write(MAGIC, 0, 'latin1');
  writeU32(header, 8, CHECKPOINT_VERSION);
  writeU64(header, 16, position);
  writeU64(header, 24, nowMs);
  writeU32(header, 32, segments.length);
  writeU64(header, 40, names.length);
  let at = HEADER_BYTES;
  for (const segment of segments) {
    writeU64(header, at, segment.base);
    writeU64(header, at + 8, Math.max(0, segment.lastTimestamp));
    at += 16;
  }
  const tmp = join(dir, CHECKPOINT_TMP_FILE);
  await storage.unlink(tmp).catch(() => undefined);
  let fd: number;
  try {
    fd = await storage.create(tmp);
  } catch (error) {
    throw ioError(`cannot create ${tmp}`, error);
  }
  let fileAt = 0;
  let crc = 0;
  // Pieces are written as they are completed, several at once (each to its own place in the file);
  // they are waited for at the end of each slice.
  let writing: Promise<void>[] = [];
  const put = (bytes: Uint8Array, length: number) => {
    crc = crc32c(bytes, 0, length, crc);
    const written = storage.writeAsync(fd, bytes, 0, length, fileAt).then((n) => {
      if (n !== length) throw new Error('short write');
    });
    written.catch(() => undefined); // reported when the slice waits for it
    writing.push(written);
    fileAt += length;
  };
  const settle = async () => {
    const all = writing;
    writing = [];
    await Promise.all(all);
  };
  try {
    put(header, header.length);
    let piece = Buffer.allocUnsafe(PIECE_BYTES);
    let used = 0;
    let sliceStart = performance.now();
    for (let i = 0; i < names.length; i++) {
      const name = names[i] as string;
      const queue = list[i] as ConsumeQueue;
      let count = queue.count;
      while (count > 0 && queue.position(queue.min + count - 1) >= position) count--;
      const need = 2 + 3 * name.length + 24 + FILE_ENTRY_BYTES * count;
      if (used + need > piece.length) {
        if (used > 0) put(piece, used);
        piece = Buffer.allocUnsafe(Math.max(need, PIECE_BYTES));
        used = 0;
        if (performance.now() - sliceStart >= SLICE_MS) {
          await settle();
          await yieldTurn();
          sliceStart = performance.now();
        }
      }
      used = encodeQueue(piece, used, name, queue, count);
    }
    const tail = Buffer.allocUnsafe(used + 4);
    piece.copy(tail, 0, 0, used);
    crc = crc32c(tail, 0, used, crc);
    writeU32(tail, used, crc);
    put(tail, tail.length);
    await settle();
    await beforeInstall();
    await storage.datasync(fd);
  } catch (error) {
    await Promise.allSettled(writing);
    await storage.close(fd).catch(() => undefined);
    await storage.unlink(tmp).catch(() => undefined);
    throw ioError(`cannot write ${tmp}`, error);
  }
  try {
    await storage.close(fd);
    await storage.rename(tmp, join(dir, CHECKPOINT_FILE));
    await storage.syncDir(dir);
  } catch (error) {
    throw ioError(`cannot install ${tmp} as the checkpoint`, error);
  }
}

/** Writes one queue (name, min, next, last write, its first `count` entries) at `at`; returns the end. */
function encodeQueue(bytes: Buffer, at: number, name: string, queue: ConsumeQueue, count: number): number {
  const length = bytes.write(name, at + 2, 'utf8');
  writeU16(bytes, at, length);
  at += 2 + length;
  writeU64(bytes, at, queue.min);
  writeU64(bytes, at + 8, queue.min + count);
  writeU64(bytes, at + 16, Math.max(0, queue.lastWrite));
  at += 24;
  const entries = queue.entries;
  for (let slot = queue.slot(queue.min), end = slot + count * ENTRY_WORDS; slot < end; slot += ENTRY_WORDS) {
    writeU64(bytes, at, (entries[slot + 1] as number) * TWO_32 + (entries[slot] as number));
    writeU32(bytes, at + 8, entries[slot + 2] as number);
    writeU32(bytes, at + 12, entries[slot + 3] as number);
    writeU32(bytes, at + 16, entries[slot + 4] as number);
    at += FILE_ENTRY_BYTES;
  }
  return at;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads a checkpoint file's bytes: the checkpoint, or undefined when its magic, checksum or layout is
 * wrong. A known magic with another version throws `UnsupportedFormatError`.
 */
export function decodeCheckpoint(bytes: Uint8Array, file: string): Checkpoint | undefined {
  if (bytes.length < HEADER_BYTES + 4 || Buffer.from(bytes.buffer, bytes.byteOffset, 8).toString('latin1') !== MAGIC) {
    return undefined;
  }
  const version = readU32(bytes, 8);
  if (version !== CHECKPOINT_VERSION) {
    throw new UnsupportedFormatError(`${file} is checkpoint format version ${version}; this release reads 1`, {
      file,
      version,
    });
  }
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
    if (at + FILE_ENTRY_BYTES * count > end) return undefined;
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
    // hash, key hash) and a zero word: copied word by word, no per-entry arithmetic.
    const entries = queue.entries;
    for (let k = 0, slot = 0; k < count; k++, at += FILE_ENTRY_BYTES, slot += ENTRY_WORDS) {
      const high = view.getUint32(at + 4, true);
      if (high >= 0x20_0000) return undefined; // past 2^53: not a position this log writes
      entries[slot] = view.getUint32(at, true);
      entries[slot + 1] = high;
      entries[slot + 2] = view.getUint32(at + 8, true);
      entries[slot + 3] = view.getUint32(at + 12, true);
      entries[slot + 4] = view.getUint32(at + 16, true);
    }
    queue.next = min + count;
    queues.insert(name, queue);
    queues.entries += count;
  }
  return at === end ? { position, createdMs, segmentTimestamps, queues } : undefined;
}

/** The bytes of `dir/checkpoint`, or undefined when there is none. */
export async function readCheckpointFile(storage: Storage, dir: string): Promise<Uint8Array | undefined> {
  const path = join(dir, CHECKPOINT_FILE);
  let fd: number;
  try {
    fd = await storage.open(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw ioError(`cannot open ${path}`, error);
  }
  try {
    const size = await storage.size(fd);
    const bytes = new Uint8Array(size);
    let read = 0;
    while (read < size) {
      const n = storage.read(fd, bytes, read, size - read, read);
      if (n === 0) break;
      read += n;
    }
    return bytes.subarray(0, read);
  } catch (error) {
    throw ioError(`cannot read ${path}`, error);
  } finally {
    await storage.close(fd);
  }
}
