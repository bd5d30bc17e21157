/**
 * The index checkpoint of docs/FORMAT.md ("Checkpoint"): every consume queue as of a durable log
 * position P, so recovery replays only the log after P. Written to `checkpoint.tmp`, synced, renamed
 * over `checkpoint` and the directory synced: a crash leaves the old file or the new one.
 *
 * Version 2, the one format written and read, puts a directory of the LMQs, checksummed on its own,
 * before their entry blocks, each with its own checksum: a reopen reads the directory and leaves
 * each block in the file until its LMQ is used (queue.ts, `StoredEntries`).
 * Mirrors native/core/src/log/checkpoint.rs.
 */
import { join } from 'node:path';
import { crc32c } from '../../../common/crc32c.js';
import { readU16, readU32, readU64, writeU16, writeU32, writeU64 } from '../../../common/log-record.js';
import { UnsupportedFormatError } from '../../../errors.js';
import {
  type CheckpointFile,
  ConsumeQueue,
  ENTRY_WORDS,
  QueueSet,
  STORED_ENTRY_BYTES,
  type StoredEntries,
} from '../queue.js';
import { ioError, openForReading, type Segment } from './segment.js';
import type { Storage } from './storage.js';

/** A checkpoint read back. */
export interface Checkpoint {
  position: number;
  createdMs: number;
  /** Newest store timestamp per segment base, for segments that existed at `position`. */
  segmentTimestamps: Map<number, number>;
  queues: QueueSet;
  /** The LMQs' names as the directory holds them, for a replay to find them by their bytes. */
  directory: DirectoryNames;
}

/** Each LMQ of a checkpoint: its name, the name's bytes in `bytes`, its queue; in directory order. */
export interface DirectoryNames {
  bytes: Uint8Array;
  /** Name `i` is `bytes[ranges[2i], ranges[2i + 1])`. */
  ranges: Int32Array;
  names: string[];
  queues: ConsumeQueue[];
}

export const CHECKPOINT_FILE = 'checkpoint';
export const CHECKPOINT_TMP_FILE = 'checkpoint.tmp';
/** The magic and version of the one format read and written; any other version is refused. */
const CHECKPOINT_VERSION = 2;
const MAGIC = 'LTCKPT02';
/** The fixed header; a shorter file is not a checkpoint, whatever it starts with. */
export const CHECKPOINT_HEADER_BYTES = 64;
const QUEUE_COUNT_AT = 40;
const DIRECTORY_END_AT = 48;
const DIRECTORY_CRC_AT = 56;
const HEADER_CRC_AT = 60;
/** A directory entry besides its name: u16 name length, min, next, last write, first position, CRC, zero. */
const DIRECTORY_ENTRY_BYTES = 2 + 4 * 8 + 4 + 4;
const TWO_32 = 0x1_0000_0000;

/** Bytes the entry blocks are written in: each piece is encoded and written in one go. */
const PIECE_BYTES = 512 * 1024;
/**
 * Encoding time per turn of the event loop, ms. Shorter slices stall other work less but make the
 * checkpoint take longer under load, and the log written meanwhile is what a crash then replays.
 */
const SLICE_MS = 20;
/** Queues encoded between two readings of the clock when pieces fill slowly. */
const QUEUES_PER_CLOCK_CHECK = 1024;

/** Lets the event loop run what is due before the next piece of a checkpoint is encoded. */
function yieldTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A queue whose block was copied from an older checkpoint file, and where the copy is. */
export interface CopiedBlock {
  queue: ConsumeQueue;
  from: StoredEntries;
  at: number;
}

/**
 * Writes the checkpoint of `queues` as of log position `position` to `dir/checkpoint`, a piece at a
 * time with turns of the event loop between pieces, so a large index never holds the loop for long.
 * Returns the queues whose blocks were copied from an older checkpoint file, for `moveStored`.
 *
 * The queues and the segments are taken as they are at the call (before anything else can append);
 * appends, deletions and retention go on meanwhile. Each queue is written with its entries of
 * records before `position` only (entries are in position order, so later ones are cut from the
 * end); a queue deleted meanwhile is written as it was (its deletion record is after `position`,
 * so recovery replays it). A queue still stored in an older checkpoint has its block copied as it is
 * (all its records are older). `beforeInstall` runs once every piece is written, before the file is
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
): Promise<CopiedBlock[]> {
  // The queues and the segments as they are now.
  const names: string[] = [];
  const list: ConsumeQueue[] = [];
  queues.byName.forEach((queue, name) => {
    names.push(name);
    list.push(queue);
  });
  const segmentTable = segments.map((segment) => [segment.base, Math.max(0, segment.lastTimestamp)] as const);
  // Every queue taken is written, so the directory's size is known before any block.
  let directoryEnd = CHECKPOINT_HEADER_BYTES + 16 * segmentTable.length;
  let sliceStart = performance.now();
  for (let i = 0; i < names.length; i++) {
    directoryEnd += DIRECTORY_ENTRY_BYTES + Buffer.byteLength(names[i] as string, 'utf8');
    if (i % QUEUES_PER_CLOCK_CHECK === 0 && performance.now() - sliceStart >= SLICE_MS) {
      await yieldTurn();
      sliceStart = performance.now();
    }
  }
  // The header and segment table; the directory is written a piece at a time like the blocks (one
  // buffer of a million LMQs' entries would be tens of MB, and a garbage collection with it).
  const head = Buffer.alloc(CHECKPOINT_HEADER_BYTES + 16 * segmentTable.length);
  head.write(MAGIC, 0, 'latin1');
  writeU32(head, 8, CHECKPOINT_VERSION);
  writeU64(head, 16, position);
  writeU64(head, 24, nowMs);
  writeU32(head, 32, segmentTable.length);
  writeU64(head, QUEUE_COUNT_AT, names.length);
  writeU64(head, DIRECTORY_END_AT, directoryEnd);
  for (let i = 0, at = CHECKPOINT_HEADER_BYTES; i < segmentTable.length; i++, at += 16) {
    const [base, lastTimestamp] = segmentTable[i] as readonly [number, number];
    writeU64(head, at, base);
    writeU64(head, at + 8, lastTimestamp);
  }
  const tmp = join(dir, CHECKPOINT_TMP_FILE);
  await storage.unlink(tmp).catch(() => undefined);
  let fd: number;
  try {
    fd = await storage.create(tmp);
  } catch (error) {
    throw ioError(`cannot create ${tmp}`, error);
  }
  let fileAt = directoryEnd;
  // Pieces are written as they are completed, several at once (each to its own place in the file);
  // they are waited for at the end of each slice.
  let writing: Promise<void>[] = [];
  const put = (bytes: Uint8Array, length: number, at: number) => {
    const written = storage.writeAsync(fd, bytes, 0, length, at).then((n) => {
      if (n !== length) throw new Error('short write');
    });
    written.catch(() => undefined); // reported when the slice waits for it
    writing.push(written);
  };
  const settle = async () => {
    const all = writing;
    writing = [];
    await Promise.all(all);
  };
  const copied: CopiedBlock[] = [];
  // The directory's CRC covers the segment table, then each directory piece as it is written.
  let directoryCrc = crc32c(head, CHECKPOINT_HEADER_BYTES, head.length);
  let directoryAt = head.length;
  let entries = Buffer.allocUnsafe(PIECE_BYTES);
  let entriesUsed = 0;
  const putEntries = () => {
    directoryCrc = crc32c(entries, 0, entriesUsed, directoryCrc);
    put(entries, entriesUsed, directoryAt);
    directoryAt += entriesUsed;
    entries = Buffer.allocUnsafe(PIECE_BYTES);
    entriesUsed = 0;
  };
  try {
    let piece = Buffer.allocUnsafe(PIECE_BYTES);
    let used = 0;
    sliceStart = performance.now();
    for (let i = 0; i < names.length; i++) {
      const queue = list[i] as ConsumeQueue;
      const stored = queue.stored;
      // Entries held in memory (all, or those replayed after a stored block) may be past `position`.
      const storedCount = queue.storedCount;
      let count = queue.count;
      while (count > storedCount && queue.position(queue.min + count - 1 - storedCount) >= position) count--;
      const need = STORED_ENTRY_BYTES * count;
      // The clock is read when a piece is full and every QUEUES_PER_CLOCK_CHECK queues (most LMQs
      // are short: a piece can hold tens of thousands of them).
      const full = used + need > piece.length;
      if (full || (i % QUEUES_PER_CLOCK_CHECK === 0 && performance.now() - sliceStart >= SLICE_MS)) {
        if (used > 0) put(piece, used, fileAt - used);
        piece = Buffer.allocUnsafe(Math.max(need, PIECE_BYTES));
        used = 0;
        if (performance.now() - sliceStart >= SLICE_MS) {
          await settle();
          await yieldTurn();
          sliceStart = performance.now();
        }
      }
      let crc: number;
      let first: number;
      if (stored !== undefined && count === storedCount) {
        piece.set(stored.file.read(stored.at, need), used);
        crc = stored.crc;
        first = stored.firstPosition;
        copied.push({ queue, from: stored, at: fileAt });
      } else if (stored !== undefined) {
        // The stored block, then the entries held after it: a block of its own, not a copy.
        const storedBytes = STORED_ENTRY_BYTES * storedCount;
        piece.set(queue.storedBlock(stored), used);
        encodeEntries(piece, used + storedBytes, queue, count - storedCount);
        crc = crc32c(piece, used, used + need);
        first = storedCount > 0 ? stored.firstPosition : queue.position(queue.min);
      } else {
        encodeEntries(piece, used, queue, count);
        crc = crc32c(piece, used, used + need);
        first = count > 0 ? queue.position(queue.min) : 0;
      }
      used += need;
      fileAt += need;
      const name = names[i] as string;
      // A name is at most 3 bytes per UTF-16 unit.
      if (entriesUsed + DIRECTORY_ENTRY_BYTES + 3 * name.length > entries.length) putEntries();
      entriesUsed = encodeDirectoryEntry(entries, entriesUsed, name, queue, count, first, crc);
    }
    if (used > 0) put(piece, used, fileAt - used);
    if (entriesUsed > 0) putEntries();
    if (directoryAt !== directoryEnd) throw new Error(`the directory ends at ${directoryAt}, not ${directoryEnd}`);
    writeU32(head, DIRECTORY_CRC_AT, directoryCrc);
    writeU32(head, HEADER_CRC_AT, crc32c(head, 0, HEADER_CRC_AT));
    put(head, head.length, 0);
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
  return copied;
}

/** Writes the first `count` entries of `queue` at `at` of `bytes`, 24 bytes each. */
function encodeEntries(bytes: Buffer, at: number, queue: ConsumeQueue, count: number): void {
  const entries = queue.entries;
  for (let slot = queue.slot(queue.min), end = slot + count * ENTRY_WORDS; slot < end; slot += ENTRY_WORDS) {
    writeU64(bytes, at, (entries[slot + 1] as number) * TWO_32 + (entries[slot] as number));
    writeU32(bytes, at + 8, entries[slot + 2] as number);
    writeU32(bytes, at + 12, entries[slot + 3] as number);
    writeU32(bytes, at + 16, entries[slot + 4] as number);
    writeU32(bytes, at + 20, 0);
    at += STORED_ENTRY_BYTES;
  }
}

/** Writes one directory entry at `at`; returns its end. */
function encodeDirectoryEntry(
  head: Buffer,
  at: number,
  name: string,
  queue: ConsumeQueue,
  count: number,
  firstPosition: number,
  crc: number,
): number {
  const length = head.write(name, at + 2, 'utf8');
  writeU16(head, at, length);
  at += 2 + length;
  writeU64(head, at, queue.min);
  writeU64(head, at + 8, queue.min + count);
  writeU64(head, at + 16, Math.max(0, queue.lastWrite));
  writeU64(head, at + 24, firstPosition);
  writeU32(head, at + 32, crc);
  writeU32(head, at + 36, 0);
  return at + 40;
}

/**
 * Reads `length` bytes at `at` of an open file (fewer only at its end), into the start of `into`
 * when it has room, else into a new array.
 */
function readAt(storage: Storage, fd: number, at: number, length: number, into?: Uint8Array): Uint8Array {
  const bytes = into !== undefined && into.length >= length ? into.subarray(0, length) : new Uint8Array(length);
  let done = 0;
  while (done < length) {
    const n = storage.read(fd, bytes, done, length - done, at + done);
    if (n === 0) break;
    done += n;
  }
  return done === length ? bytes : bytes.subarray(0, done);
}

/** An open checkpoint file that stored queues read their blocks from; closed once nothing uses it. */
export function checkpointFile(storage: Storage, fd: number, path: string): CheckpointFile {
  let closed = false;
  return {
    path,
    users: 0,
    read(at: number, length: number, into?: Uint8Array): Uint8Array {
      let bytes: Uint8Array;
      try {
        bytes = readAt(storage, fd, at, length, into);
      } catch (error) {
        throw ioError(`cannot read ${path}`, error);
      }
      // A block the directory places inside the file and that is no longer there: the file changed.
      if (bytes.length !== length) throw ioError(`cannot read ${path}`, new Error('the file ends inside a block'));
      return bytes;
    },
    close(): void {
      if (closed) return;
      closed = true;
      storage.close(fd).catch(() => undefined);
    },
  };
}

/** Opens `dir/checkpoint` for reading; undefined when there is none. */
export async function openCheckpoint(storage: Storage, dir: string): Promise<{ path: string; fd: number } | undefined> {
  const path = join(dir, CHECKPOINT_FILE);
  try {
    return { path, fd: await openForReading(storage, path) };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw ioError(`cannot open ${path}`, error);
  }
}

/**
 * Reads `dir/checkpoint`: undefined without one, 'invalid' when its magic, checksums or layout are
 * wrong, else the checkpoint (the file stays open while its stored queues refer to it). A file
 * with the `LTCKPT` prefix but another magic or version throws `UnsupportedFormatError`.
 */
export async function readCheckpoint(storage: Storage, dir: string): Promise<Checkpoint | 'invalid' | undefined> {
  const opened = await openCheckpoint(storage, dir);
  if (opened === undefined) return undefined;
  const { path, fd } = opened;
  const file = checkpointFile(storage, fd, path);
  let result: Checkpoint | 'invalid' = 'invalid';
  try {
    const size = await storage.size(fd);
    const head = readAt(storage, fd, 0, Math.min(size, CHECKPOINT_HEADER_BYTES));
    const magic = Buffer.from(head.buffer, head.byteOffset, Math.min(8, head.length)).toString('latin1');
    if (size < CHECKPOINT_HEADER_BYTES || !magic.startsWith('LTCKPT')) return result;
    const version = readU32(head, 8);
    if (magic !== MAGIC || version !== CHECKPOINT_VERSION) {
      throw new UnsupportedFormatError(
        `${path} is checkpoint format version ${version}; this release reads ${CHECKPOINT_VERSION}`,
        { file: path, version },
      );
    }
    result = decodeDirectory(storage, fd, file, size, head) ?? 'invalid';
    return result;
  } catch (error) {
    if (error instanceof UnsupportedFormatError) throw error;
    throw ioError(`cannot read ${path}`, error);
  } finally {
    if (result === 'invalid' || file.users === 0) {
      if (result !== 'invalid') result.queues.forgetStored();
      file.close();
    }
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The header and directory, checked; the queues stay stored in `file`. */
function decodeDirectory(
  storage: Storage,
  fd: number,
  file: CheckpointFile,
  size: number,
  head: Uint8Array,
): Checkpoint | undefined {
  if (head.length < CHECKPOINT_HEADER_BYTES || readU32(head, HEADER_CRC_AT) !== crc32c(head, 0, HEADER_CRC_AT)) {
    return undefined;
  }
  const position = readU64(head, 16);
  const createdMs = readU64(head, 24);
  const segmentCount = readU32(head, 32);
  const queueCount = readU64(head, QUEUE_COUNT_AT);
  const directoryEnd = readU64(head, DIRECTORY_END_AT);
  if (Number.isNaN(position) || Number.isNaN(createdMs) || Number.isNaN(queueCount)) return undefined;
  if (!(directoryEnd >= CHECKPOINT_HEADER_BYTES && directoryEnd <= size)) return undefined;
  const directory = readAt(storage, fd, 0, directoryEnd);
  if (directory.length !== directoryEnd) return undefined;
  if (readU32(head, DIRECTORY_CRC_AT) !== crc32c(directory, CHECKPOINT_HEADER_BYTES, directoryEnd)) return undefined;
  const queues = new QueueSet();
  try {
    const checkpoint = readDirectory(directory, file, queues, position, createdMs, segmentCount, queueCount, size);
    if (checkpoint === undefined) queues.forgetStored();
    return checkpoint;
  } catch {
    // A layout the checksum vouches for but that does not parse: written by a broken writer.
    queues.forgetStored();
    return undefined;
  }
}

function readDirectory(
  directory: Uint8Array,
  file: CheckpointFile,
  queues: QueueSet,
  position: number,
  createdMs: number,
  segmentCount: number,
  queueCount: number,
  size: number,
): Checkpoint | undefined {
  const end = directory.length;
  let at = CHECKPOINT_HEADER_BYTES;
  if (at + 16 * segmentCount > end) return undefined;
  const segmentTimestamps = new Map<number, number>();
  for (let i = 0; i < segmentCount; i++, at += 16) {
    segmentTimestamps.set(readU64(directory, at), readU64(directory, at + 8));
  }
  let blockAt = end;
  // Room for the names the directory can hold (a larger count fails the layout checks below).
  const names: DirectoryNames = {
    bytes: directory,
    ranges: new Int32Array(2 * Math.min(queueCount, Math.floor((end - at) / (DIRECTORY_ENTRY_BYTES + 1)))),
    names: [],
    queues: [],
  };
  for (let i = 0; i < queueCount; i++) {
    if (at + 2 > end) return undefined;
    const nameStart = at + 2;
    const nameEnd = nameStart + readU16(directory, at);
    if (nameEnd + DIRECTORY_ENTRY_BYTES - 2 > end) return undefined;
    const name = utf8.decode(directory.subarray(nameStart, nameEnd));
    const min = readU64(directory, nameEnd);
    const next = readU64(directory, nameEnd + 8);
    const lastWrite = readU64(directory, nameEnd + 16);
    const firstPosition = readU64(directory, nameEnd + 24);
    const crc = readU32(directory, nameEnd + 32);
    at = nameEnd + DIRECTORY_ENTRY_BYTES - 2;
    const count = next - min;
    if (name.length === 0 || !(count >= 0) || Number.isNaN(lastWrite)) return undefined;
    if (Number.isNaN(firstPosition) || (count === 0 && firstPosition !== 0)) return undefined;
    if (blockAt + STORED_ENTRY_BYTES * count > size) return undefined;
    const queue = ConsumeQueue.fromStored(min, count, lastWrite, {
      file,
      at: blockAt,
      crc,
      firstPosition,
      endPosition: position,
    });
    // An LMQ named twice: inserting it again leaves the number of queues as it was. (One lookup
    // instead of a check before the insert: this loop runs once per LMQ of the directory.)
    const queuesBefore = queues.size;
    queues.insert(name, queue);
    if (queues.size === queuesBefore) return undefined;
    queues.entries += count;
    names.ranges[2 * i] = nameStart;
    names.ranges[2 * i + 1] = nameEnd;
    names.names.push(name);
    names.queues.push(queue);
    blockAt += STORED_ENTRY_BYTES * count;
  }
  return at === end && blockAt === size
    ? { position, createdMs, segmentTimestamps, queues, directory: names }
    : undefined;
}
