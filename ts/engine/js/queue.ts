/**
 * The consume queues (LMQs) of docs/FORMAT.md, in memory: each LMQ is a run of fixed-size index
 * entries whose logical offset is implicit (`min` plus the entry's place). An LMQ is one small object
 * and one Uint32Array of five words per entry (position low and high, size, tag hash, key hash), so an
 * idle LMQ costs a few hundred bytes and no file or handle. A queue read from a checkpoint keeps its
 * entries in the checkpoint file until first used (`StoredEntries`). Mirrors native/core/src/queue/.
 */

import { crc32c } from '../../common/crc32c.js';
import { MAX_LMQS_PER_RECORD, MAX_SEGMENT_BYTES, SEGMENT_HEADER_BYTES } from '../../common/limits.js';
import { LogCorruptError } from '../../errors.js';

/** u32 words per entry in memory: position low, position high, size, tag hash, key hash. */
export const ENTRY_WORDS = 5;
/** Bytes of one entry in memory. */
export const ENTRY_BYTES = ENTRY_WORDS * 4;
/**
 * Estimated bytes of one LMQ besides its entries and name: the Map slot, the queue object, the typed
 * array and its buffer headers, and the sorted-name slot. A V8 figure, approximate by nature.
 */
export const LMQ_OVERHEAD_BYTES = 240;
const INITIAL_ENTRIES = 2;
const TWO_32 = 0x1_0000_0000;
/** Bytes of one entry in a checkpoint file: position, size, tag hash, key hash, zero. */
export const STORED_ENTRY_BYTES = 24;
const NO_ENTRIES = new Uint32Array(0);
/** Bytes of a checkpoint file `QueueSet.checkReplayedBlocks` reads at a time (a larger block alone). */
const CHECK_WINDOW_BYTES = 4 * 1024 * 1024;
/** The smallest size an entry may give: a record's fixed header (log-record.ts). */
const MIN_ENTRY_RECORD_BYTES = 32;
/** The largest size an entry may give: all of the largest segment after its header. */
const MAX_ENTRY_RECORD_BYTES = MAX_SEGMENT_BYTES - SEGMENT_HEADER_BYTES;

/**
 * Checks one entry a checkpoint gives against the one before it (`previousPosition` -1 for the
 * first), before anything trusts it, since a read allocates the sizes the entries give before it
 * looks at the records: the size within what a record can be, the record ending at or before
 * `endPosition` (the checkpoint's position), and the records in log order without overlapping. Two
 * entries may name one record (a record that names the LMQ twice), with the same size. So the bytes
 * of a read are bounded by the log's. Returns what is wrong, or undefined. Mirrors `check_entries`
 * in native/core/src/queue/stored.rs.
 */
export function checkEntry(
  position: number,
  size: number,
  previousPosition: number,
  previousSize: number,
  endPosition: number,
  /** Entries in a row, up to the previous one, that name the previous one's record. */
  repeats = 0,
): string | undefined {
  if (size < MIN_ENTRY_RECORD_BYTES || size > MAX_ENTRY_RECORD_BYTES) {
    return 'checkpoint entry gives a record size no record can have';
  }
  if (position + size > endPosition) return 'checkpoint entry points past the checkpoint position';
  const sameRecord = previousPosition === position && previousSize === size;
  if (previousPosition >= 0 && !sameRecord && previousPosition + previousSize > position) {
    return 'checkpoint entries overlap or go back';
  }
  // A record names an LMQ at most MAX_LMQS_PER_RECORD times: more entries for it would let a read
  // allocate many times the log's bytes.
  if (sameRecord && repeats >= MAX_LMQS_PER_RECORD) return 'checkpoint entries name one record too often';
  return undefined;
}

/**
 * An open checkpoint file that queues read their entries from. It stays open while a queue still
 * refers to it: a newer checkpoint renamed over it leaves its inode alive until then.
 */
export interface CheckpointFile {
  readonly path: string;
  /**
   * Reads `length` bytes at `at` (throws on a short read): into the start of `into` when it has
   * room (the result is then a view of it, valid until `into` is read into again), else into a new
   * array.
   */
  read(at: number, length: number, into?: Uint8Array): Uint8Array;
  /** Queues referring to it; it is closed when this drops to 0. */
  users: number;
  close(): void;
}

/** Where a queue's entries are while they are still in a checkpoint file. */
export interface StoredEntries {
  file: CheckpointFile;
  /** Byte offset of the block in the file. */
  at: number;
  /** CRC-32C of the block. */
  crc: number;
  /** Position of the record of the first entry (0 when there is none). */
  firstPosition: number;
  /** The checkpoint's position: every entry's record ends at or before it. */
  endPosition: number;
}

/** A checkpoint block that failed its check when its LMQ was first used (code `LOG_CORRUPT`). */
export class BadBlockError extends LogCorruptError {}

function release(file: CheckpointFile): void {
  file.users--;
  if (file.users === 0) file.close();
}

export class ConsumeQueue {
  /** Offset of the oldest entry held (the entry at `head`). */
  min: number;
  /** Offset the next record will get. */
  next: number;
  /** Store timestamp of the newest record, -1 when none was seen. */
  lastWrite = -1;
  /** Entry slots, ENTRY_WORDS words each; live ones are `head .. head + next - min`. */
  entries: Uint32Array;
  head = 0;
  /**
   * While set, the first `storedCount` entries are in a checkpoint file: `load()` reads them. Entries
   * appended meanwhile (replay of the log after the checkpoint) follow in `entries` from `head`.
   */
  stored: StoredEntries | undefined;
  storedCount = 0;

  /** `entries`: storage to start with (a checkpoint's queues share one buffer); else `capacity` entries. */
  constructor(offset: number, capacity = INITIAL_ENTRIES, entries?: Uint32Array) {
    this.min = offset;
    this.next = offset;
    this.entries = entries ?? new Uint32Array(capacity * ENTRY_WORDS);
  }

  get count(): number {
    return this.next - this.min;
  }

  /** A queue of `count` entries from `min` still in a checkpoint file. */
  static fromStored(min: number, count: number, lastWrite: number, stored: StoredEntries): ConsumeQueue {
    const queue = new ConsumeQueue(min, 0, NO_ENTRIES);
    queue.next = min + count;
    queue.lastWrite = lastWrite;
    queue.stored = stored;
    queue.storedCount = count;
    stored.file.users++;
    return queue;
  }

  /**
   * Reads the entries from the checkpoint file if they are still there, checking the block's
   * checksum and every entry (`checkEntry`); a block that fails throws `LogCorruptError` and leaves
   * the queue as it was.
   */
  load(): void {
    const stored = this.stored;
    if (stored === undefined) return;
    const count = this.storedCount;
    const bytes = this.storedBlock(stored);
    const bad = (why: string) =>
      new BadBlockError(`${stored.file.path}: ${why}`, { file: stored.file.path, position: stored.at });
    const tail = this.next - this.min - count;
    const words = new Uint32Array(Math.max(count + tail, INITIAL_ENTRIES) * ENTRY_WORDS);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let previous = -1;
    let previousSize = 0;
    let repeats = 0;
    for (let k = 0, at = 0, slot = 0; k < count; k++, at += STORED_ENTRY_BYTES, slot += ENTRY_WORDS) {
      const low = view.getUint32(at, true);
      const high = view.getUint32(at + 4, true);
      const position = high * TWO_32 + low;
      const size = view.getUint32(at + 8, true);
      if (high >= 0x20_0000 || (k === 0 && position !== stored.firstPosition)) {
        throw bad('checkpoint entry block disagrees with its directory');
      }
      const wrong = checkEntry(position, size, previous, previousSize, stored.endPosition, repeats);
      if (wrong !== undefined) throw bad(wrong);
      repeats = position === previous && size === previousSize ? repeats + 1 : 1;
      previous = position;
      previousSize = size;
      words[slot] = low;
      words[slot + 1] = high;
      words[slot + 2] = size;
      words[slot + 3] = view.getUint32(at + 12, true);
      words[slot + 4] = view.getUint32(at + 16, true);
    }
    if (tail > 0) {
      const from = this.head * ENTRY_WORDS;
      words.set(this.entries.subarray(from, from + tail * ENTRY_WORDS), count * ENTRY_WORDS);
    }
    this.entries = words;
    this.head = 0;
    this.forget();
  }

  /** The stored block's bytes, their checksum checked (`BadBlockError` when it fails). */
  storedBlock(stored: StoredEntries): Uint8Array {
    const bytes = stored.file.read(stored.at, this.storedCount * STORED_ENTRY_BYTES);
    if (crc32c(bytes) !== stored.crc) {
      throw new BadBlockError(`${stored.file.path}: checkpoint entry block checksum mismatch`, {
        file: stored.file.path,
        position: stored.at,
      });
    }
    return bytes;
  }

  /** Entries held in `entries` from `head`: all of them, or those after the stored block. */
  get heldCount(): number {
    return this.next - this.min - this.storedCount;
  }

  /** Points a stored queue at a copy of its block in a newer checkpoint file. */
  moveStored(file: CheckpointFile, at: number): void {
    const old = this.stored;
    if (old === undefined) return;
    file.users++;
    this.stored = { ...old, file, at };
    release(old.file);
  }

  /** Lets go of the checkpoint file of a queue that is dropped while still stored. */
  forget(): void {
    const stored = this.stored;
    if (stored === undefined) return;
    this.stored = undefined;
    this.storedCount = 0;
    release(stored.file);
  }

  /** Appends the entry for offset `next` (after the stored block, if the queue is still stored). */
  push(position: number, size: number, tagHash: number, keyHash: number): void {
    let at = (this.head + this.heldCount) * ENTRY_WORDS;
    if (at === this.entries.length) at = this.makeRoom();
    const entries = this.entries;
    const high = Math.floor(position / TWO_32);
    entries[at] = position - high * TWO_32;
    entries[at + 1] = high;
    entries[at + 2] = size;
    entries[at + 3] = tagHash;
    entries[at + 4] = keyHash;
    this.next++;
  }

  /**
   * Makes room for `count` more entries after the held ones, so that many pushes allocate nothing:
   * a replay knows how many entries it is about to push to a queue, and growing by doubling from
   * nothing would allocate and copy several times per queue.
   */
  reserve(count: number): void {
    const live = this.heldCount;
    if ((this.head + live + count) * ENTRY_WORDS <= this.entries.length) return;
    const from = this.head * ENTRY_WORDS;
    const grown = new Uint32Array(Math.max(live + count, INITIAL_ENTRIES) * ENTRY_WORDS);
    grown.set(this.entries.subarray(from, from + live * ENTRY_WORDS));
    this.entries = grown;
    this.head = 0;
  }

  /** Moves the live entries to the front, growing the array when they fill more than half of it. */
  private makeRoom(): number {
    const live = this.heldCount;
    const capacity = this.entries.length / ENTRY_WORDS;
    const from = this.head * ENTRY_WORDS;
    // A stored queue starts with no room at all (a shared empty array).
    if (live * 2 > capacity || capacity === 0) {
      const grown = new Uint32Array(Math.max(capacity * 2, INITIAL_ENTRIES) * ENTRY_WORDS);
      grown.set(this.entries.subarray(from, from + live * ENTRY_WORDS));
      this.entries = grown;
    } else {
      this.entries.copyWithin(0, from, from + live * ENTRY_WORDS);
    }
    this.head = 0;
    return live * ENTRY_WORDS;
  }

  /** Word index of the entry for `offset` (which must be held). */
  slot(offset: number): number {
    return (this.head + offset - this.min) * ENTRY_WORDS;
  }

  position(offset: number): number {
    const at = this.slot(offset);
    return (this.entries[at + 1] as number) * TWO_32 + (this.entries[at] as number);
  }

  /** Forgets every entry, starting again at `offset` (older records were retired). */
  restart(offset: number): void {
    this.forget();
    this.min = offset;
    this.next = offset;
    this.head = 0;
  }

  /**
   * Drops the entries of records before `position` (their segments were deleted); returns how many.
   * A stored queue with such entries must be loaded first (`QueueSet.loadBelow`).
   */
  dropBefore(position: number): number {
    if (this.stored !== undefined) return 0;
    let dropped = 0;
    while (this.min < this.next && this.position(this.min) < position) {
      this.min++;
      this.head++;
      dropped++;
    }
    if (this.min === this.next) this.head = 0;
    return dropped;
  }

  /** Estimated bytes held, name excluded. */
  bytes(): number {
    return LMQ_OVERHEAD_BYTES + this.entries.length * 4;
  }
}

/** Orders strings by code point, i.e. by their UTF-8 bytes (JavaScript's `<` orders by UTF-16 unit). */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return utf8Rank(x) - utf8Rank(y);
  }
  return a.length - b.length;
}

/** Surrogates (astral code points) move above U+E000..U+FFFF, where UTF-8 puts them. */
function utf8Rank(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}

/** Code units at which UTF-16 order and UTF-8 order can disagree (surrogates and above). */
const HIGH_UNITS = /[\ud800-\uffff]/;

/**
 * Sorts `names` in UTF-8 order, in place. Without surrogates or U+E000..U+FFFF, UTF-16 code-unit
 * order (the built-in sort's) is the same order and much faster than a comparator (a reopen sorts
 * every LMQ name once).
 */
function sortUtf8(names: string[]): string[] {
  for (const name of names) if (HIGH_UNITS.test(name)) return names.sort(compareUtf8);
  return names.sort();
}

/** First index in sorted `names` whose name is after `key` (strictly when `strict`). */
function lowerBound(names: readonly string[], key: string, strict: boolean): number {
  let low = 0;
  let high = names.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    const order = compareUtf8(names[middle] as string, key);
    if (order < 0 || (strict && order === 0)) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Every LMQ by name, with the entry total and a name order for listing kept up to date lazily. */
export class QueueSet {
  readonly byName = new Map<string, ConsumeQueue>();
  /** Index entries held across all queues. */
  entries = 0;
  /** Names in UTF-8 order as of the last listing; may hold dropped names until the next one. */
  private sorted: string[] = [];
  /** Names created since `sorted` was built. */
  private added: string[] = [];
  private droppedSinceSort = false;

  get size(): number {
    return this.byName.size;
  }

  get(name: string): ConsumeQueue | undefined {
    return this.byName.get(name);
  }

  /** The queue of `name`, created empty at `offset` when unknown. */
  obtain(name: string, offset: number): ConsumeQueue {
    let queue = this.byName.get(name);
    if (queue === undefined) {
      queue = new ConsumeQueue(offset);
      this.byName.set(name, queue);
      this.added.push(name);
      // Without listings, churn (create, drop, create) would grow `added` without bound.
      if (this.added.length > 2 * this.byName.size + 1024) this.sortedNames();
    }
    return queue;
  }

  /** Adds a queue read from a checkpoint (its entries counted by the caller's pushes). */
  insert(name: string, queue: ConsumeQueue): void {
    this.byName.set(name, queue);
    this.added.push(name);
  }

  drop(name: string): void {
    const queue = this.byName.get(name);
    if (queue === undefined) return;
    queue.forget();
    this.entries -= queue.count;
    this.byName.delete(name);
    this.droppedSinceSort = true;
  }

  /** Drops every entry of a record before `position` (retention deleted its segment). */
  dropBefore(position: number): void {
    for (const queue of this.byName.values()) this.entries -= queue.dropBefore(position);
  }

  /** Reads the entries of `name` from the checkpoint file if they are still there. */
  load(name: string): ConsumeQueue | undefined {
    const queue = this.byName.get(name);
    queue?.load();
    return queue;
  }

  /** Loads every stored queue with an entry of a record before `position`, for `dropBefore`. */
  loadBelow(position: number): void {
    for (const queue of this.byName.values()) {
      const stored = queue.stored;
      if (stored !== undefined && queue.next > queue.min && stored.firstPosition < position) queue.load();
    }
  }

  /**
   * Checks the checksum of every stored block that replay appended entries after, without reading
   * the entries (they are checked when the queue is loaded), so a damaged block still makes recovery
   * replay the whole log while the queues stay in the file until first used. Each file is read in
   * windows of `CHECK_WINDOW_BYTES`, its blocks in file order. Throws `BadBlockError` for the first
   * block that fails.
   */
  checkReplayedBlocks(): void {
    const byFile = new Map<CheckpointFile, ConsumeQueue[]>();
    for (const queue of this.byName.values()) {
      const stored = queue.stored;
      if (stored === undefined || queue.storedCount === 0 || queue.heldCount === 0) continue;
      const list = byFile.get(stored.file);
      if (list === undefined) byFile.set(stored.file, [queue]);
      else list.push(queue);
    }
    for (const [file, list] of byFile) {
      const at = (queue: ConsumeQueue) => (queue.stored as StoredEntries).at;
      const end = (queue: ConsumeQueue) => at(queue) + queue.storedCount * STORED_ENTRY_BYTES;
      list.sort((a, b) => at(a) - at(b));
      let windowAt = 0;
      let window: Uint8Array = new Uint8Array(0);
      // One buffer serves every window: a fresh one per window costs zeroing and page faults.
      let reuse: Uint8Array | undefined;
      for (let i = 0; i < list.length; i++) {
        const queue = list[i] as ConsumeQueue;
        const stored = queue.stored as StoredEntries;
        if (at(queue) < windowAt || end(queue) > windowAt + window.length) {
          // The window runs from this block to the end of the last block that fits in it.
          let until = end(queue);
          for (let j = i + 1; j < list.length && end(list[j] as ConsumeQueue) - at(queue) <= CHECK_WINDOW_BYTES; j++)
            until = Math.max(until, end(list[j] as ConsumeQueue));
          windowAt = at(queue);
          window = file.read(windowAt, until - windowAt, reuse);
          if (reuse === undefined || window.buffer !== reuse.buffer) reuse = window;
        }
        if (crc32c(window, at(queue) - windowAt, end(queue) - windowAt) !== stored.crc) {
          throw new BadBlockError(`${file.path}: checkpoint entry block checksum mismatch`, {
            file: file.path,
            position: stored.at,
          });
        }
      }
    }
  }

  /** Lets go of every checkpoint file still referred to (the log is closing). */
  forgetStored(): void {
    for (const queue of this.byName.values()) queue.forget();
  }

  /**
   * Empties every queue, keeping its offsets (its next offset becomes its minimum): a log with no
   * segment left holds none of the records a checkpoint indexed. Stored queues are not read.
   */
  emptyAll(): void {
    for (const queue of this.byName.values()) {
      queue.forget();
      queue.restart(queue.next);
    }
    this.entries = 0;
  }

  /** Up to `limit` names starting with `prefix`, in UTF-8 order, strictly after `after` when given. */
  list(prefix: string, limit: number, after: string | undefined): { names: string[]; more: boolean } {
    const sorted = this.sortedNames();
    const afterCursor = after !== undefined && compareUtf8(after, prefix) >= 0;
    let i = afterCursor ? lowerBound(sorted, after, true) : lowerBound(sorted, prefix, false);
    const names: string[] = [];
    for (; i < sorted.length; i++) {
      const name = sorted[i] as string;
      if (!name.startsWith(prefix)) break;
      if (names.length === limit) return { names, more: true };
      names.push(name);
    }
    return { names, more: false };
  }

  /** Merges the names created since the last listing into the order, dropping removed ones. */
  private sortedNames(): string[] {
    if (this.added.length === 0 && !this.droppedSinceSort) return this.sorted;
    const added = sortUtf8(this.added);
    const old = this.sorted;
    const merged: string[] = [];
    let i = 0;
    let j = 0;
    while (i < old.length || j < added.length) {
      const a = old[i];
      const b = added[j];
      const takeOld = b === undefined || (a !== undefined && compareUtf8(a, b) <= 0);
      const name = (takeOld ? old[i++] : added[j++]) as string;
      // A name dropped and created again appears twice; a dropped one is skipped.
      if (merged[merged.length - 1] !== name && this.byName.has(name)) merged.push(name);
    }
    this.sorted = merged;
    this.added = [];
    this.droppedSinceSort = false;
    return merged;
  }

  /** Estimated bytes of the index: queues, their entries and names (UTF-16 in V8). */
  bytes(): number {
    let total = 0;
    for (const [name, queue] of this.byName) total += queue.bytes() + 2 * name.length;
    return total;
  }
}
