/**
 * The LMQs a replay meets, looked up by the bytes of their names. A record names its LMQs in UTF-8;
 * decoding each name to a string and looking the string up would cost a string and a hash of it per
 * record, where most records name an LMQ met before. Here a name's bytes are hashed in place and
 * compared with a copy kept when the name was first met, so a string exists once per LMQ: the name
 * the consume queues are keyed by.
 */
import { randomInt } from 'node:crypto';
import type { ConsumeQueue } from '../queue.js';
import type { DirectoryNames } from './checkpoint.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });
/** Starting room for name bytes, grown by doubling. */
const INITIAL_NAME_BYTES = 64 * 1024;
const INITIAL_SLOTS = 1024;

/**
 * A hash of `bytes[start, end)` as a signed 32-bit number, four bytes a step. The seed is drawn
 * per process, so names chosen to collide cannot make a reopen slow.
 */
function hashBytes(bytes: Uint8Array, start: number, end: number, seed: number): number {
  let h = seed;
  let i = start;
  for (const stop = end - 3; i < stop; i += 4) {
    const k =
      (bytes[i] as number) |
      ((bytes[i + 1] as number) << 8) |
      ((bytes[i + 2] as number) << 16) |
      ((bytes[i + 3] as number) << 24);
    h = Math.imul(h ^ Math.imul(k, 0xcc9e2d51), 0x1b873593);
    h = (h << 13) | (h >>> 19);
  }
  for (; i < end; i++) h = Math.imul(h ^ (bytes[i] as number), 0x01000193);
  h ^= end - start;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** Int32 words per key in `keys`: hash, start of its bytes, their length, name id. */
const KEY_WORDS = 4;

/**
 * Names by their bytes, each with its string and its queue (undefined while the LMQ does not exist:
 * not yet created, or deleted by a replayed record). Open addressing with linear probing over a
 * power-of-two table of keys (byte sequences), each key's fields side by side so a probe that
 * finds it reads one place; each key leads to a name id. Two keys can lead to one name: the
 * decoder drops a leading byte order mark, so `EF BB BF` before a name's bytes is the same LMQ.
 */
export class ReplayNames {
  private readonly seed = randomInt(0x7fff_ffff);
  /** Key id + 1 per slot, 0 for an empty one. */
  private slots = new Int32Array(INITIAL_SLOTS);
  private keys = new Int32Array((INITIAL_SLOTS / 2) * KEY_WORDS);
  private keyCount = 0;
  /** The bytes of every key, back to back. */
  private bytes = new Uint8Array(INITIAL_NAME_BYTES);
  private used = 0;
  /**
   * Name ids by name. The names `add` gave (a checkpoint's) go in only when a name not known by its
   * bytes is met after them: a replay that meets only known names never pays for a map of them all.
   */
  private readonly ids = new Map<string, number>();
  private idsStale = false;
  readonly names: string[] = [];
  readonly queues: (ConsumeQueue | undefined)[] = [];
  /** A checkpoint's names not added yet, and how many names were met that were not known. */
  private pending: DirectoryNames | undefined;
  private misses = 0;

  get size(): number {
    return this.names.length;
  }

  /** Makes room for `count` keys of `nameBytes` in all, so a checkpoint's names go in without regrowing. */
  reserve(count: number, nameBytes: number): void {
    let size = this.slots.length;
    while (size < 2 * count) size *= 2;
    if (size !== this.slots.length) this.rehash(size);
    if (nameBytes > this.bytes.length) this.growBytes(nameBytes);
  }

  /** Adds a name not yet present and known to be UTF-8 that decodes to `name` (an LMQ of a checkpoint). */
  add(bytes: Uint8Array, start: number, end: number, name: string, queue: ConsumeQueue | undefined): void {
    const id = this.names.length;
    this.names.push(name);
    this.queues.push(queue);
    this.idsStale = true;
    this.insertKey(bytes, start, end, hashBytes(bytes, start, end, this.seed), id);
  }

  /**
   * Adds a checkpoint's names once the replay has met a sixteenth as many names it did not know: a
   * short replay (a clean close, a kill soon after a checkpoint) meets few of them, and finds those
   * by their strings for less than adding every name would cost.
   */
  defer(directory: DirectoryNames): void {
    this.pending = directory;
  }

  private addPending(directory: DirectoryNames): void {
    this.pending = undefined;
    const ids = this.nameIds();
    const { bytes, ranges } = directory;
    this.reserve(this.keyCount + directory.names.length, this.used + bytes.length);
    for (let i = 0; i < directory.names.length; i++) {
      const name = directory.names[i] as string;
      if (ids.has(name)) continue;
      this.add(bytes, ranges[2 * i] as number, ranges[2 * i + 1] as number, name, directory.queues[i]);
    }
  }

  /**
   * The name id of `bytes[start, end)`, adding the name when it is new; -1 when it is new and not
   * UTF-8 (the record naming it is not valid).
   */
  find(bytes: Uint8Array, start: number, end: number): number {
    const hash = hashBytes(bytes, start, end, this.seed);
    const slots = this.slots;
    const keys = this.keys;
    const mask = slots.length - 1;
    const length = end - start;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const key = ((slots[slot] as number) - 1) * KEY_WORDS;
      if (key < 0) break;
      if (
        keys[key] === hash &&
        keys[key + 2] === length &&
        this.sameBytes(keys[key + 1] as number, bytes, start, length)
      ) {
        return keys[key + 3] as number;
      }
    }
    return this.findNew(bytes, start, end, hash);
  }

  private findNew(bytes: Uint8Array, start: number, end: number, hash: number): number {
    const pending = this.pending;
    if (pending !== undefined && 16 * ++this.misses > pending.names.length) {
      this.addPending(pending);
      return this.find(bytes, start, end);
    }
    let name: string;
    try {
      name = utf8.decode(bytes.subarray(start, end));
    } catch {
      return -1;
    }
    const ids = this.nameIds();
    let id = ids.get(name);
    if (id === undefined) {
      id = this.names.length;
      this.names.push(name);
      this.queues.push(undefined);
      ids.set(name, id);
    }
    this.insertKey(bytes, start, end, hash, id);
    return id;
  }

  private nameIds(): Map<string, number> {
    const ids = this.ids;
    if (this.idsStale) {
      for (let id = 0; id < this.names.length; id++) {
        const name = this.names[id] as string;
        if (!ids.has(name)) ids.set(name, id);
      }
      this.idsStale = false;
    }
    return ids;
  }

  private sameBytes(from: number, bytes: Uint8Array, start: number, length: number): boolean {
    const kept = this.bytes;
    for (let k = 0; k < length; k++) if (kept[from + k] !== bytes[start + k]) return false;
    return true;
  }

  private insertKey(bytes: Uint8Array, start: number, end: number, hash: number, id: number): void {
    const key = this.keyCount;
    if (2 * (key + 1) > this.slots.length) this.rehash(2 * this.slots.length);
    const length = end - start;
    if (this.used + length > this.bytes.length) this.growBytes(Math.max(2 * this.bytes.length, this.used + length));
    // Byte by byte: names are short, and a view per name to copy it in one call costs more.
    const kept = this.bytes;
    for (let k = 0, to = this.used; k < length; k++) kept[to + k] = bytes[start + k] as number;
    const at = key * KEY_WORDS;
    this.keys[at] = hash;
    this.keys[at + 1] = this.used;
    this.keys[at + 2] = length;
    this.keys[at + 3] = id;
    this.used += length;
    this.keyCount++;
    this.place(key, hash);
  }

  private place(key: number, hash: number): void {
    const mask = this.slots.length - 1;
    let slot = hash & mask;
    while (this.slots[slot] !== 0) slot = (slot + 1) & mask;
    this.slots[slot] = key + 1;
  }

  /** A table of `size` slots (keys stay at most half of it, so `keys` holds `size / 2`). */
  private rehash(size: number): void {
    this.slots = new Int32Array(size);
    const keys = new Int32Array((size / 2) * KEY_WORDS);
    keys.set(this.keys.subarray(0, this.keyCount * KEY_WORDS));
    this.keys = keys;
    for (let key = 0; key < this.keyCount; key++) this.place(key, keys[key * KEY_WORDS] as number);
  }

  private growBytes(size: number): void {
    const bigger = new Uint8Array(size);
    bigger.set(this.bytes.subarray(0, this.used));
    this.bytes = bigger;
  }
}
