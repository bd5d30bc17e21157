/**
 * Every file operation the js commit log performs, behind one interface, so tests can inject faults
 * (short writes, flipped bytes, failed syncs and creates) the way redb's failure-injecting backend
 * and TigerBeetle's simulated storage do. Positional reads and writes are synchronous: they only copy
 * to or from the page cache, and the bytes of a synchronous write survive a process kill. Everything
 * that may wait on the disk (creating, sizing, syncing, renaming, deleting files) returns a promise
 * and runs on the libuv thread pool, never on the event loop.
 */
import fs from 'node:fs';
import { promisify } from 'node:util';

export interface Storage {
  /** Opens an existing file for reading and writing; resolves to a file descriptor. */
  open(path: string): Promise<number>;
  /** Opens an existing file for reading only (a read-only open of the log); `open` where absent. */
  openReadOnly?(path: string): Promise<number>;
  /** Creates a file that must not exist yet (O_EXCL), open for reading and writing. */
  create(path: string): Promise<number>;
  close(fd: number): Promise<void>;
  /**
   * Writes `length` bytes of `bytes` from `offset` at `position` and returns how many were written.
   * A short write is continued, as the native engine's `write_all_at` does, so a full disk fails
   * with the system's error (`ENOSPC`); a count below `length` comes back only from a write that
   * made no progress and raised nothing, which callers treat as a failure.
   */
  write(fd: number, bytes: Uint8Array, offset: number, length: number, position: number): number;
  /** The same as `write`, off the event loop, for large writes that are not on the append path. */
  writeAsync(fd: number, bytes: Uint8Array, offset: number, length: number, position: number): Promise<number>;
  /** Reads up to `length` bytes at `position` into `bytes` from `offset`; returns how many were read. */
  read(fd: number, bytes: Uint8Array, offset: number, length: number, position: number): number;
  /** Size of an open file in bytes. */
  size(fd: number): Promise<number>;
  truncate(fd: number, length: number): Promise<void>;
  /** fdatasync: the file's data and the metadata needed to read it back are on disk. */
  datasync(fd: number): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  /** Names in a directory, unordered. */
  readdir(path: string): Promise<string[]>;
  /** Creates a directory and its parents; succeeds when it exists. */
  mkdir(path: string): Promise<void>;
  /** Makes a directory's entries (created, renamed, removed names) durable. */
  syncDir(path: string): Promise<void>;
}

const openAsync = promisify(fs.open);
const closeAsync = promisify(fs.close);
const writeAsync = promisify(fs.write);
const fstatAsync = promisify(fs.fstat);
const ftruncateAsync = promisify(fs.ftruncate);
const fdatasyncAsync = promisify(fs.fdatasync);
const fsyncAsync = promisify(fs.fsync);

/** The real file system, through Node's callback API so each call runs on the libuv pool. */
export const nodeStorage: Storage = {
  open: (path) => openAsync(path, 'r+'),
  openReadOnly: (path) => openAsync(path, 'r'),
  create: (path) => openAsync(path, 'wx+'),
  close: (fd) => closeAsync(fd),
  write: (fd, bytes, offset, length, position) => {
    let done = 0;
    while (done < length) {
      const written = fs.writeSync(fd, bytes, offset + done, length - done, position + done);
      if (written <= 0) break; // no progress and no error: the caller sees the short count
      done += written;
    }
    return done;
  },
  writeAsync: async (fd, bytes, offset, length, position) => {
    let done = 0;
    while (done < length) {
      const { bytesWritten } = await writeAsync(fd, bytes, offset + done, length - done, position + done);
      if (bytesWritten <= 0) break;
      done += bytesWritten;
    }
    return done;
  },
  read: (fd, bytes, offset, length, position) => fs.readSync(fd, bytes, offset, length, position),
  size: async (fd) => (await fstatAsync(fd)).size,
  truncate: (fd, length) => ftruncateAsync(fd, length),
  datasync: (fd) => fdatasyncAsync(fd),
  rename: (from, to) => fs.promises.rename(from, to),
  unlink: (path) => fs.promises.unlink(path),
  readdir: (path) => fs.promises.readdir(path),
  mkdir: async (path) => {
    await fs.promises.mkdir(path, { recursive: true });
  },
  async syncDir(path) {
    const fd = await openAsync(path, 'r');
    try {
      await fsyncAsync(fd);
    } finally {
      await closeAsync(fd);
    }
  },
};

/** An error shaped like Node's system errors, with `code` set. */
export function systemError(code: string, message: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`${code}: ${message}`);
  error.code = code;
  return error;
}

/**
 * A storage that passes everything to another one except the faults a test arms. Each counter fires
 * on that many calls, then the storage behaves again. Only files whose path passes `faulted` see
 * faults, so a test can aim at segments and leave the lock and checkpoint alone.
 */
export class FaultyStorage implements Storage {
  /** Writes that store only the first half of their bytes and report that count. */
  shortWrites = 0;
  /** Writes that store their bytes with one bit flipped in the middle (the caller's buffer untouched). */
  flippedWrites = 0;
  /** `datasync` calls that fail with EIO. */
  failedSyncs = 0;
  /** `create` calls that fail with ENOSPC, creating nothing. */
  failedCreates = 0;
  private readonly paths = new Map<number, string>();

  constructor(
    private readonly inner: Storage = nodeStorage,
    private readonly faulted: (path: string) => boolean = () => true,
  ) {}

  private aimed(fd: number): boolean {
    const path = this.paths.get(fd);
    return path !== undefined && this.faulted(path);
  }

  /** What reaches the file for a write, or undefined to write `bytes` unchanged. */
  private damage(fd: number, bytes: Uint8Array, offset: number, length: number): Uint8Array | undefined {
    if (!this.aimed(fd) || length === 0) return undefined;
    if (this.shortWrites > 0) {
      this.shortWrites--;
      return bytes.slice(offset, offset + (length >>> 1));
    }
    if (this.flippedWrites > 0) {
      this.flippedWrites--;
      const copy = bytes.slice(offset, offset + length);
      copy[length >>> 1] = (copy[length >>> 1] as number) ^ 0x10;
      return copy;
    }
    return undefined;
  }

  async open(path: string): Promise<number> {
    const fd = await this.inner.open(path);
    this.paths.set(fd, path);
    return fd;
  }

  async openReadOnly(path: string): Promise<number> {
    const fd = await (this.inner.openReadOnly?.(path) ?? this.inner.open(path));
    this.paths.set(fd, path);
    return fd;
  }

  async create(path: string): Promise<number> {
    if (this.faulted(path) && this.failedCreates > 0) {
      this.failedCreates--;
      throw systemError('ENOSPC', `injected: cannot create ${path}`);
    }
    const fd = await this.inner.create(path);
    this.paths.set(fd, path);
    return fd;
  }

  close(fd: number): Promise<void> {
    this.paths.delete(fd);
    return this.inner.close(fd);
  }

  write(fd: number, bytes: Uint8Array, offset: number, length: number, position: number): number {
    const damaged = this.damage(fd, bytes, offset, length);
    if (damaged === undefined) return this.inner.write(fd, bytes, offset, length, position);
    const written = this.inner.write(fd, damaged, 0, damaged.length, position);
    // A flipped write stores every byte and says so; a short one reports the truth.
    return damaged.length === length ? length : written;
  }

  async writeAsync(fd: number, bytes: Uint8Array, offset: number, length: number, position: number): Promise<number> {
    const damaged = this.damage(fd, bytes, offset, length);
    if (damaged === undefined) return this.inner.writeAsync(fd, bytes, offset, length, position);
    const written = await this.inner.writeAsync(fd, damaged, 0, damaged.length, position);
    return damaged.length === length ? length : written;
  }

  read(fd: number, bytes: Uint8Array, offset: number, length: number, position: number): number {
    return this.inner.read(fd, bytes, offset, length, position);
  }

  size(fd: number): Promise<number> {
    return this.inner.size(fd);
  }

  truncate(fd: number, length: number): Promise<void> {
    return this.inner.truncate(fd, length);
  }

  async datasync(fd: number): Promise<void> {
    if (this.aimed(fd) && this.failedSyncs > 0) {
      this.failedSyncs--;
      throw systemError('EIO', 'injected: fdatasync failed');
    }
    return this.inner.datasync(fd);
  }

  rename(from: string, to: string): Promise<void> {
    return this.inner.rename(from, to);
  }

  unlink(path: string): Promise<void> {
    return this.inner.unlink(path);
  }

  readdir(path: string): Promise<string[]> {
    return this.inner.readdir(path);
  }

  mkdir(path: string): Promise<void> {
    return this.inner.mkdir(path);
  }

  syncDir(path: string): Promise<void> {
    return this.inner.syncDir(path);
  }
}

/** What a `CountingStorage` does to the call it fails. */
export type Fault =
  /** The call fails with EIO and changes nothing. */
  | 'fail'
  /**
   * A write stores the first half of its bytes and then fails with EIO (a write cut short by the
   * failure); any other call fails as with `fail`.
   */
  | 'tear';

/**
 * A storage failing one call chosen by its number, whatever its kind, so a test can run a scenario
 * once to count its calls and then again failing each of them in turn. Counted (from 1) are the
 * calls that change files or make them durable: opens, creates, writes, truncations, syncs of files
 * and directories, renames and removals. Closing, reading, sizing, listing and `mkdir` are not
 * counted and never fail. Mirrors `CountingStorage` of native/core/src/log/storage.rs.
 */
export class CountingStorage implements Storage {
  /** Counted calls so far. */
  calls = 0;
  /** The kind of each counted call, in order, for reporting which call a failing case failed. */
  readonly kinds: string[] = [];

  /**
   * `failAt`: the call to fail (0 fails none). `persistent`: from that call on every counted call
   * fails (a disk that went away), not only that one.
   */
  constructor(
    private readonly failAt: number,
    private readonly fault: Fault = 'fail',
    private readonly persistent = false,
    private readonly inner: Storage = nodeStorage,
  ) {}

  /** Counts a call of `kind`; whether it is to fail. */
  private fails(kind: string): boolean {
    this.kinds.push(kind);
    const n = ++this.calls;
    return this.failAt !== 0 && (n === this.failAt || (this.persistent && n > this.failAt));
  }

  private check(kind: string): void {
    if (this.fails(kind)) throw systemError('EIO', `injected: ${kind} call ${this.calls} failed`);
  }

  async open(path: string): Promise<number> {
    this.check('open');
    return this.inner.open(path);
  }

  async create(path: string): Promise<number> {
    this.check('create');
    return this.inner.create(path);
  }

  close(fd: number): Promise<void> {
    return this.inner.close(fd);
  }

  write(fd: number, bytes: Uint8Array, offset: number, length: number, position: number): number {
    if (!this.fails('write')) return this.inner.write(fd, bytes, offset, length, position);
    if (this.fault === 'tear') this.inner.write(fd, bytes, offset, length >>> 1, position);
    throw systemError('EIO', `injected: write call ${this.calls} failed`);
  }

  async writeAsync(fd: number, bytes: Uint8Array, offset: number, length: number, position: number): Promise<number> {
    if (!this.fails('writeAsync')) return this.inner.writeAsync(fd, bytes, offset, length, position);
    if (this.fault === 'tear') await this.inner.writeAsync(fd, bytes, offset, length >>> 1, position);
    throw systemError('EIO', `injected: writeAsync call ${this.calls} failed`);
  }

  read(fd: number, bytes: Uint8Array, offset: number, length: number, position: number): number {
    return this.inner.read(fd, bytes, offset, length, position);
  }

  size(fd: number): Promise<number> {
    return this.inner.size(fd);
  }

  async truncate(fd: number, length: number): Promise<void> {
    this.check('truncate');
    return this.inner.truncate(fd, length);
  }

  async datasync(fd: number): Promise<void> {
    this.check('datasync');
    return this.inner.datasync(fd);
  }

  async rename(from: string, to: string): Promise<void> {
    this.check('rename');
    return this.inner.rename(from, to);
  }

  async unlink(path: string): Promise<void> {
    this.check('unlink');
    return this.inner.unlink(path);
  }

  readdir(path: string): Promise<string[]> {
    return this.inner.readdir(path);
  }

  mkdir(path: string): Promise<void> {
    return this.inner.mkdir(path);
  }

  async syncDir(path: string): Promise<void> {
    this.check('syncDir');
    return this.inner.syncDir(path);
  }
}
