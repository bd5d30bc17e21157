/**
 * Replay (docs/FORMAT.md, "Recovery", step 3): reading one segment's records in order through a
 * chunked buffer, checking each one fully, and applying it to the consume queues. A record is
 * checked where it lies in the buffer (record-scan.ts) and its LMQs are found by the bytes of their
 * names (replay-names.ts): nothing is allocated per record.
 */

import { MAX_LMQS_PER_RECORD } from '../../../common/limits.js';
import {
  END_MAGIC,
  RECORD_HEADER_BYTES,
  RECORD_MAGIC,
  RECORD_TYPE_DELETE,
  readU32,
} from '../../../common/log-record.js';
import { LogCorruptError } from '../../../errors.js';
import type { QueueSet } from '../queue.js';
import { ScannedRecord, scanRecord } from './record-scan.js';
import { ReplayNames } from './replay-names.js';
import type { Segment } from './segment.js';
import type { Storage } from './storage.js';

/** Bytes read from a segment at a time during replay (a larger record gets a buffer of its own). */
const REPLAY_CHUNK_BYTES = 4 * 1024 * 1024;

/** Where a segment's records ended: at its complete end, or at the end of the log. */
export interface SegmentEnd {
  /** In-segment offset after the last valid record. */
  offset: number;
  /** The segment ends with an end marker or has fewer than 4 bytes left there. */
  complete: boolean;
  /** Not complete, and the 4 bytes there are not zero: a torn or corrupt record starts there. */
  dirty: boolean;
}

/** A window on a segment file, refilled on demand; one buffer serves every segment of a replay. */
class SegmentReader {
  buffer: Buffer = Buffer.allocUnsafe(0);
  private segment: Segment | undefined;
  private start = 0;
  private length = 0;

  constructor(private readonly storage: Storage) {}

  /** Reads from `segment` from now on. */
  use(segment: Segment): void {
    this.segment = segment;
    this.length = 0;
  }

  /** Makes `[at, at + need)` of the file available; returns its index in `buffer`, -1 past the file's end. */
  window(at: number, need: number): number {
    if (at >= this.start && at + need <= this.start + this.length) return at - this.start;
    const segment = this.segment as Segment;
    const want = Math.min(Math.max(need, REPLAY_CHUNK_BYTES), segment.size - at);
    if (this.buffer.length < want) this.buffer = Buffer.allocUnsafe(want);
    let read = 0;
    while (read < want) {
      const n = this.storage.read(segment.fd, this.buffer, read, want - read, at + read);
      if (n === 0) break;
      read += n;
    }
    this.start = at;
    this.length = read;
    return read >= need ? 0 : -1;
  }
}

/** Entries a replay gathers before it applies them (bounds what the gathering holds). */
const MAX_BATCH_ENTRIES = 512 * 1024;
const INITIAL_BATCH_ENTRIES = 4096;
/** `Batch.offset` of a deletion record's entry. */
const DELETION = -1;

/**
 * The records of a replay, gathered and then applied LMQ by LMQ. Each record's entries are kept in
 * typed arrays, chained per LMQ in log order; applying a batch then visits each LMQ once, reserves
 * room for all its entries at once and appends them in order. Applying the records one by one would
 * visit an LMQ's queue once per record, scattered over the whole index, and grow its entries a few
 * at a time. Nothing of a batch depends on another LMQ's entries, so the order of LMQs is free (an
 * offset that goes back fails the open whichever LMQ it is found in first).
 */
class Batch {
  count = 0;
  private capacity = 0;
  position = new Float64Array(0);
  /** The record's offset in the LMQ, `DELETION` for a deletion record. */
  offset = new Float64Array(0);
  storeTimestamp = new Float64Array(0);
  size = new Uint32Array(0);
  tagHash = new Uint32Array(0);
  keyHash = new Uint32Array(0);
  /** The next entry of the same LMQ in this batch, -1 after its last. */
  next = new Int32Array(0);
  /** Per name id: its first and last entry in this batch (-1: none) and how many it has. */
  first = new Int32Array(0);
  last = new Int32Array(0);
  entries = new Int32Array(0);
  /** The name ids with entries in this batch. */
  touched = new Int32Array(0);
  touchedCount = 0;

  get full(): boolean {
    return this.count + MAX_LMQS_PER_RECORD > MAX_BATCH_ENTRIES;
  }

  /** Adds an entry for name `id`, the ids below `names` all known. */
  add(id: number, names: number, position: number, offset: number, record: ScannedRecord): void {
    if (id >= this.first.length) this.growNames(names);
    if (this.count === this.capacity) this.growEntries();
    const entry = this.count++;
    this.position[entry] = position;
    this.offset[entry] = offset;
    this.storeTimestamp[entry] = record.storeTimestamp;
    this.size[entry] = record.size;
    this.tagHash[entry] = record.tagHash;
    this.keyHash[entry] = record.keyHash;
    this.next[entry] = -1;
    const last = this.last[id] as number;
    if (last < 0) {
      this.first[id] = entry;
      this.touched[this.touchedCount++] = id;
    } else {
      this.next[last] = entry;
    }
    this.last[id] = entry;
    this.entries[id] = (this.entries[id] as number) + 1;
  }

  /** Empties the batch (the per-name arrays are cleared where it touched them). */
  clear(): void {
    for (let k = 0; k < this.touchedCount; k++) {
      const id = this.touched[k] as number;
      this.first[id] = -1;
      this.last[id] = -1;
      this.entries[id] = 0;
    }
    this.count = 0;
    this.touchedCount = 0;
  }

  private growEntries(): void {
    const capacity = Math.min(Math.max(2 * this.capacity, INITIAL_BATCH_ENTRIES), MAX_BATCH_ENTRIES);
    const grow = <T extends Float64Array | Uint32Array | Int32Array>(old: T, made: T): T => {
      made.set(old as never);
      return made;
    };
    this.position = grow(this.position, new Float64Array(capacity));
    this.offset = grow(this.offset, new Float64Array(capacity));
    this.storeTimestamp = grow(this.storeTimestamp, new Float64Array(capacity));
    this.size = grow(this.size, new Uint32Array(capacity));
    this.tagHash = grow(this.tagHash, new Uint32Array(capacity));
    this.keyHash = grow(this.keyHash, new Uint32Array(capacity));
    this.next = grow(this.next, new Int32Array(capacity));
    this.capacity = capacity;
  }

  private growNames(names: number): void {
    const length = Math.max(2 * this.first.length, names, 1024);
    const first = new Int32Array(length).fill(-1);
    first.set(this.first);
    const last = new Int32Array(length).fill(-1);
    last.set(this.last);
    const entries = new Int32Array(length);
    entries.set(this.entries);
    const touched = new Int32Array(length);
    touched.set(this.touched.subarray(0, this.touchedCount));
    this.first = first;
    this.last = last;
    this.entries = entries;
    this.touched = touched;
  }
}

/** The consume queues a replay fills, and what it reuses from record to record. */
export class Replay {
  /** Records replayed so far. */
  records = 0;
  private readonly reader: SegmentReader;
  private readonly record = new ScannedRecord();
  /** Name ids of the record being gathered. */
  private readonly ids = new Int32Array(MAX_LMQS_PER_RECORD);
  private readonly batch = new Batch();
  /** The segment each record of the batch is in, for an error's `file` (by position). */
  private readonly batchSegments: Segment[] = [];

  /** `names`: the LMQs of `queues` by their names' bytes (all of them: see `ReplayNames`). */
  constructor(
    storage: Storage,
    private readonly queues: QueueSet,
    private readonly names = new ReplayNames(),
  ) {
    this.reader = new SegmentReader(storage);
  }

  /**
   * Replays the records of `segment` from `offset` until its end; returns where and how it ended.
   * Their entries may wait in the batch until `finish`.
   */
  segment(segment: Segment, offset: number): SegmentEnd {
    const reader = this.reader;
    reader.use(segment);
    this.batchSegments.push(segment);
    let at = offset;
    for (;;) {
      const left = segment.size - at;
      if (left < 4) return { offset: at, complete: true, dirty: false };
      let i = reader.window(at, Math.min(left, RECORD_HEADER_BYTES));
      if (i < 0) return { offset: at, complete: false, dirty: false };
      const magic = readU32(reader.buffer, i);
      if (magic === END_MAGIC) return { offset: at, complete: true, dirty: false };
      if (magic !== RECORD_MAGIC || left < RECORD_HEADER_BYTES) return this.torn(at, magic);
      const size = readU32(reader.buffer, i + 4);
      if (size < RECORD_HEADER_BYTES || size > left) return this.torn(at, magic);
      i = reader.window(at, size);
      if (i < 0 || !scanRecord(reader.buffer, i, i + size, this.record)) return this.torn(at, magic);
      if (!this.gather(segment, segment.base + at, reader.buffer)) return this.torn(at, magic);
      this.records++;
      at += size;
    }
  }

  private torn(at: number, magic: number): SegmentEnd {
    return { offset: at, complete: false, dirty: magic !== 0 };
  }

  /**
   * Adds the record just scanned to the batch (applying the batch first when it is full); false,
   * with nothing added, when one of its LMQ names is not UTF-8 (the record is not valid).
   */
  private gather(segment: Segment, position: number, bytes: Uint8Array): boolean {
    const record = this.record;
    const names = this.names;
    const ids = this.ids;
    const count = record.lmqCount;
    for (let j = 0; j < count; j++) {
      const id = names.find(bytes, record.nameStart[j] as number, record.nameEnd[j] as number);
      if (id < 0) return false;
      ids[j] = id;
    }
    if (record.storeTimestamp > segment.lastTimestamp) segment.lastTimestamp = record.storeTimestamp;
    const batch = this.batch;
    if (batch.full) {
      this.apply();
      this.batchSegments.push(segment);
    }
    if (record.type === RECORD_TYPE_DELETE) {
      batch.add(ids[0] as number, names.size, position, DELETION, record);
      return true;
    }
    for (let j = 0; j < count; j++)
      batch.add(ids[j] as number, names.size, position, record.offsets[j] as number, record);
    return true;
  }

  /** Applies what the batch holds; call once the last segment has been replayed. */
  finish(): void {
    this.apply();
  }

  /**
   * Applies the batch LMQ by LMQ (docs/FORMAT.md, "Recovery", step 3): an unknown LMQ starts at
   * the first offset it is given, an offset past its next restarts it, an offset before its next
   * is corruption, a deletion record drops it.
   */
  private apply(): void {
    const batch = this.batch;
    const names = this.names;
    const queues = this.queues;
    // In name id order: a checkpoint's names have ids in the order their queues were made, so the
    // queues are visited about in the order they lie in memory rather than at random.
    batch.touched.subarray(0, batch.touchedCount).sort();
    try {
      for (let k = 0; k < batch.touchedCount; k++) {
        const id = batch.touched[k] as number;
        const name = names.names[id] as string;
        let queue = names.queues[id];
        let reserved = false;
        for (let entry = batch.first[id] as number; entry >= 0; entry = batch.next[entry] as number) {
          const offset = batch.offset[entry] as number;
          if (offset === DELETION) {
            queues.drop(name);
            queue = undefined;
            reserved = false;
            continue;
          }
          // A queue still in the checkpoint file stays there, the replayed entries held after its
          // block, whose checksum recovery checks once replay is done (`QueueSet.checkReplayedBlocks`).
          if (queue === undefined) queue = queues.get(name) ?? queues.obtain(name, offset);
          if (offset > queue.next) {
            // Older records of this LMQ were retired (or it was dropped and started again elsewhere).
            queues.entries -= queue.count;
            queue.restart(offset);
          } else if (offset < queue.next) {
            const position = batch.position[entry] as number;
            throw new LogCorruptError(
              `the record at position ${position} gives LMQ ${name} offset ${offset}, below its next offset ${queue.next}`,
              { file: this.fileAt(position), position },
            );
          }
          if (!reserved) {
            // Room for every entry of this LMQ in the batch (more than it takes after a deletion).
            queue.reserve(batch.entries[id] as number);
            reserved = true;
          }
          queue.push(
            batch.position[entry] as number,
            batch.size[entry] as number,
            batch.tagHash[entry] as number,
            batch.keyHash[entry] as number,
          );
          queue.lastWrite = batch.storeTimestamp[entry] as number;
          queues.entries++;
        }
        names.queues[id] = queue;
      }
    } finally {
      batch.clear();
      this.batchSegments.length = 0;
    }
  }

  /** The path of the batch's segment that holds `position`. */
  private fileAt(position: number): string | undefined {
    let file: string | undefined;
    for (const segment of this.batchSegments) if (segment.base <= position) file = segment.path;
    return file;
  }
}
