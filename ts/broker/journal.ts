/**
 * The broker's state journal (docs/FORMAT.md, "Broker state"): one append-only file of
 * length-prefixed, CRC-32C-checked JSON records, compacted by writing the whole state to a new file
 * (tmp, fsync, rename, fsync of the directory). All file work goes through `fs.promises`, so writes
 * and syncs run on libuv's thread pool, off the event loop; the caller only encodes records.
 *
 * Records are written in the order they were appended, by one writer loop. `durable()` waits until
 * everything appended so far is written and synced; concurrent waiters share one sync.
 */
import { type FileHandle, open, readFile, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { crc32c } from '../engine/js/crc32c.js';
import { LogCorruptError, LogIoError, UnsupportedFormatError } from '../errors.js';
import { BINARY_RECORD, checkBinary } from './snapshot.js';

const MAGIC = Buffer.from('LTBSTATE', 'ascii');
/**
 * Written: version 2 adds binary progress batches (snapshot.ts), which compaction writes; version 3
 * binary hot records (start, ack, deliver), which every arrival, ack and POP writes.
 */
export const JOURNAL_VERSION = 3;
/**
 * Read as well. An older file is opened as it is and its header says version 3 before the first
 * record of this release goes in (`open`), so a release that cannot read those refuses the file
 * instead of cutting the state at the first one.
 */
const JOURNAL_VERSIONS_READ = [1, 2, 3];
/** Where the header holds the version. */
const VERSION_AT = 8;
export const JOURNAL_HEADER_BYTES = 16;
/** Per record: u32 payload length, u32 CRC-32C of the payload. */
export const RECORD_HEADER_BYTES = 8;
/** Largest payload accepted on read; a longer length is a torn or corrupt tail. */
export const MAX_JOURNAL_RECORD_BYTES = 64 * 1024 * 1024;
/** Compact once the file is this large and at least twice its size after the last compaction. */
export const DEFAULT_COMPACT_BYTES = 4 * 1024 * 1024;
/** Background sync period when appends do not wait for durability (`flush: 'async'`). */
const ASYNC_SYNC_INTERVAL_MS = 200;

function header(): Buffer {
  const bytes = Buffer.alloc(JOURNAL_HEADER_BYTES);
  MAGIC.copy(bytes, 0);
  bytes.writeUInt32LE(JOURNAL_VERSION, VERSION_AT);
  return bytes;
}

/** One framed record: length, CRC-32C, then UTF-8 JSON, or the bytes of a binary record as they are. */
export function encodeRecord(record: unknown): Buffer {
  if (record instanceof Uint8Array) {
    const bytes = Buffer.allocUnsafe(RECORD_HEADER_BYTES + record.length);
    bytes.writeUInt32LE(record.length, 0);
    bytes.writeUInt32LE(crc32c(record), 4);
    bytes.set(record, RECORD_HEADER_BYTES);
    return bytes;
  }
  // The text written straight into the frame: a UTF-8 copy of it first, then a zeroed frame to copy
  // that into, cost as much again (a delivery and an ack each write a record).
  const text = JSON.stringify(record);
  const length = Buffer.byteLength(text, 'utf8');
  const bytes = Buffer.allocUnsafe(RECORD_HEADER_BYTES + length);
  bytes.write(text, RECORD_HEADER_BYTES, 'utf8');
  bytes.writeUInt32LE(length, 0);
  bytes.writeUInt32LE(crc32c(bytes, RECORD_HEADER_BYTES), 4);
  return bytes;
}

/** Fills in the frame header of `bytes`, whose payload was written after `RECORD_HEADER_BYTES`. */
export function sealRecord(bytes: Buffer): Buffer {
  bytes.writeUInt32LE(bytes.length - RECORD_HEADER_BYTES, 0);
  bytes.writeUInt32LE(crc32c(bytes, RECORD_HEADER_BYTES), 4);
  return bytes;
}

/**
 * The records of a journal file and where the valid part ends (a torn or corrupt tail is cut there).
 * A JSON record comes back parsed; a binary one (version 2 and later) as its payload bytes, layout
 * checked against what the file's version may hold.
 */
export function decodeJournal(
  bytes: Buffer,
  file: string,
): { records: unknown[]; validBytes: number; version: number } {
  if (bytes.length < JOURNAL_HEADER_BYTES || !bytes.subarray(0, 8).equals(MAGIC)) {
    // A crash while the first header was written leaves a short or zero file: nothing was recorded.
    if (bytes.length < JOURNAL_HEADER_BYTES && MAGIC.subarray(0, bytes.length).equals(bytes)) {
      return { records: [], validBytes: 0, version: JOURNAL_VERSION };
    }
    if (bytes.every((b) => b === 0)) return { records: [], validBytes: 0, version: JOURNAL_VERSION };
    throw new LogCorruptError('the broker state journal has no valid header', { file, position: 0 });
  }
  const version = bytes.readUInt32LE(VERSION_AT);
  if (!JOURNAL_VERSIONS_READ.includes(version)) {
    throw new UnsupportedFormatError(`the broker state journal has unknown version ${version}`, { file, version });
  }
  const records: unknown[] = [];
  let at = JOURNAL_HEADER_BYTES;
  while (at + RECORD_HEADER_BYTES <= bytes.length) {
    const length = bytes.readUInt32LE(at);
    const end = at + RECORD_HEADER_BYTES + length;
    if (length === 0 || length > MAX_JOURNAL_RECORD_BYTES || end > bytes.length) break;
    const payload = bytes.subarray(at + RECORD_HEADER_BYTES, end);
    if (crc32c(payload) !== bytes.readUInt32LE(at + 4)) break;
    let record: unknown;
    if (payload[0] === BINARY_RECORD) {
      if (!checkBinary(payload, version)) break;
      record = payload;
    } else {
      try {
        record = JSON.parse(payload.toString('utf8'));
      } catch {
        break;
      }
    }
    records.push(record);
    at = end;
  }
  return { records, validBytes: at, version };
}

/** A journal file as `StateJournal.read` found it. */
export interface JournalContents {
  records: unknown[];
  /** Bytes up to the end of the last valid record (0: no valid header, a new journal). */
  validBytes: number;
  /** The file's size when read (0 when missing). */
  fileBytes: number;
  /** The version its header gives (`JOURNAL_VERSION` for a new journal). */
  version: number;
}

interface Waiter {
  seq: number;
  resolve(): void;
  reject(error: unknown): void;
}

export interface JournalOptions {
  /** `sync`: callers await `durable()`; `async`: a background sync runs every 200 ms. */
  flush: 'sync' | 'async';
  compactBytes?: number;
}

export class StateJournal {
  private handle: FileHandle;
  private size: number;
  private sizeAfterCompaction: number;
  private pending: Buffer[] = [];
  private appended = 0;
  private written = 0;
  private synced = 0;
  private waiters: Waiter[] = [];
  private running: Promise<void> | undefined;
  private failure: unknown;
  private closed = false;
  private readonly timer: NodeJS.Timeout | undefined;
  /** Every record describing the current state, for compaction; set by the broker after restore. */
  snapshot: (() => unknown[]) | undefined;

  private constructor(
    private readonly path: string,
    handle: FileHandle,
    size: number,
    private readonly options: JournalOptions,
  ) {
    this.handle = handle;
    this.size = size;
    this.sizeAfterCompaction = size;
    if (options.flush === 'async') {
      this.timer = setInterval(() => {
        if (this.synced < this.appended && this.failure === undefined) this.durable().catch(() => undefined);
      }, ASYNC_SYNC_INTERVAL_MS);
      this.timer.unref();
    }
  }

  /**
   * Reads and decodes the journal at `path` without changing anything, so it can run before the
   * directory's lock is taken (the broker reads it while the commit log recovers). The result is
   * only valid for `open` once the lock is held: until then another owner may still be writing.
   */
  static async read(path: string): Promise<JournalContents> {
    let bytes: Buffer;
    try {
      bytes = await readFile(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      bytes = Buffer.alloc(0);
    }
    const { records, validBytes, version } = decodeJournal(bytes, path);
    return { records, validBytes, fileBytes: bytes.length, version };
  }

  /**
   * Opens (creating if needed) the journal at `path`; returns it with the records it holds. The
   * caller holds the directory's lock. `contents`: what `read` returned for this file under that
   * lock's protection (read while the lock was being taken); without it the file is read here.
   */
  static async open(
    path: string,
    options: JournalOptions,
    contents?: JournalContents,
  ): Promise<{ journal: StateJournal; records: unknown[] }> {
    await rm(`${path}.tmp`, { force: true });
    const { records, validBytes, fileBytes, version } = contents ?? (await StateJournal.read(path));
    const handle = await open(path, fileBytes === 0 ? 'w+' : 'r+');
    let size = validBytes;
    if (validBytes === 0) {
      await handle.truncate(0);
      await handle.write(header(), 0, JOURNAL_HEADER_BYTES, 0);
      size = JOURNAL_HEADER_BYTES;
    } else if (validBytes < fileBytes) {
      await handle.truncate(validBytes); // the torn tail: later records must not follow garbage
    }
    if (validBytes > 0 && version < JOURNAL_VERSION) {
      // Its records stay as they are (this release reads them); the header now says which release
      // may append, before the datasync below makes both durable and before any new record.
      const field = Buffer.alloc(4);
      field.writeUInt32LE(JOURNAL_VERSION, 0);
      await handle.write(field, 0, 4, VERSION_AT);
    }
    await handle.datasync();
    await syncDirectory(dirname(path));
    return { journal: new StateJournal(path, handle, size, options), records };
  }

  get flushMode(): 'sync' | 'async' {
    return this.options.flush;
  }

  /** Queues a record; it is written in order shortly after. */
  append(record: unknown): void {
    this.appendFramed(encodeRecord(record));
  }

  /** Queues a record framed by the caller (`sealRecord`). */
  appendFramed(bytes: Buffer): void {
    if (this.closed) return;
    this.pending.push(bytes);
    this.appended++;
    this.kick();
  }

  /** Resolves once every record appended so far is on disk. */
  durable(): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.synced >= this.appended) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.waiters.push({ seq: this.appended, resolve, reject });
      this.kick();
    });
  }

  /** Under `sync`, `durable()`; under `async`, nothing to wait for. */
  settle(): Promise<void> {
    return this.options.flush === 'sync' ? this.durable() : Promise.resolve();
  }

  /** Writes what is pending, compacts, syncs and closes the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.timer !== undefined) clearInterval(this.timer);
    try {
      await this.durable();
      if (this.snapshot !== undefined) await this.compact();
    } finally {
      this.closed = true;
      await this.handle.close();
    }
  }

  private kick(): void {
    if (this.running !== undefined) return;
    this.running = this.run().finally(() => {
      this.running = undefined;
      if (this.failure === undefined && (this.pending.length > 0 || this.waitersDue())) this.kick();
    });
  }

  private waitersDue(): boolean {
    return this.waiters.length > 0;
  }

  private async run(): Promise<void> {
    try {
      while (this.pending.length > 0 || this.waiters.length > 0) {
        if (this.pending.length > 0) {
          const seq = this.appended;
          const bytes = Buffer.concat(this.pending);
          this.pending = [];
          await this.handle.write(bytes, 0, bytes.length, this.size);
          this.size += bytes.length;
          this.written = seq;
        }
        const compactAt = this.options.compactBytes ?? DEFAULT_COMPACT_BYTES;
        if (this.snapshot !== undefined && this.size >= compactAt && this.size >= 2 * this.sizeAfterCompaction) {
          await this.compact();
        } else if (this.waiters.length > 0) {
          await this.handle.datasync();
          this.synced = this.written;
        }
        this.release();
      }
    } catch (error) {
      const errno = (error as NodeJS.ErrnoException).code;
      this.failure = new LogIoError(`broker state journal ${this.path}: ${String(error)}`, { errno, cause: error });
      for (const waiter of this.waiters.splice(0)) waiter.reject(this.failure);
    }
  }

  private release(): void {
    const still: Waiter[] = [];
    for (const waiter of this.waiters) {
      if (waiter.seq <= this.synced) waiter.resolve();
      else still.push(waiter);
    }
    this.waiters = still;
  }

  /**
   * Replaces the file by the current state: the snapshot covers every record appended so far (each
   * was appended when its change was made), so pending ones are dropped.
   */
  private async compact(): Promise<void> {
    const snapshot = this.snapshot as () => unknown[];
    const seq = this.appended;
    const parts = [header(), ...snapshot().map(encodeRecord)];
    this.pending = [];
    const bytes = Buffer.concat(parts);
    const tmp = `${this.path}.tmp`;
    const file = await open(tmp, 'w');
    try {
      await file.write(bytes, 0, bytes.length, 0);
      await file.datasync();
    } finally {
      await file.close();
    }
    await rename(tmp, this.path);
    await syncDirectory(dirname(this.path));
    const old = this.handle;
    this.handle = await open(this.path, 'r+');
    await old.close();
    this.size = bytes.length;
    this.sizeAfterCompaction = bytes.length;
    this.written = seq;
    this.synced = seq;
  }
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } catch (error) {
    // Some file systems refuse fsync on a directory; the rename is then as durable as they make it.
    if ((error as NodeJS.ErrnoException).code !== 'EINVAL' && (error as NodeJS.ErrnoException).code !== 'EISDIR')
      throw error;
  } finally {
    await handle.close();
  }
}
