/**
 * The power-loss model of test/log-power-loss.test.ts: a storage that records what each call made
 * durable, and what a power loss at a chosen call leaves on disk.
 *
 * What the model keeps, as the js engine uses the disk: positional writes go to the page cache and
 * are durable once the file is `fdatasync`ed; a truncation likewise. A file created, renamed or
 * removed is durable in its directory only once that directory is synced. Directories themselves
 * are taken as durable.
 */
import { fstatSync, mkdirSync, readdirSync, readFileSync, readSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { nodeStorage, type Storage, systemError } from '../ts/engine/js/log/storage.js';
import { sweepDir } from './log-sweep.js';

/** A change to a file's bytes not yet known to be durable. */
type Change =
  | { kind: 'write'; file: number; at: number; bytes: Uint8Array }
  | { kind: 'truncate'; file: number; length: number };

/** A change to a directory's entries not yet known to be durable. */
type Entry =
  | { kind: 'create'; path: string; file: number }
  | { kind: 'rename'; from: string; to: string; file: number }
  | { kind: 'remove'; path: string };

function entryDir(entry: Entry): string {
  return dirname(entry.kind === 'rename' ? entry.to : entry.path);
}

function applyEntry(entry: Entry, names: Map<string, number>): void {
  if (entry.kind === 'create') names.set(entry.path, entry.file);
  else if (entry.kind === 'remove') names.delete(entry.path);
  else {
    names.delete(entry.from);
    names.set(entry.to, entry.file);
  }
}

function resized(bytes: Uint8Array, length: number): Uint8Array {
  const out = new Uint8Array(length);
  out.set(bytes.subarray(0, Math.min(length, bytes.length)));
  return out;
}

/** How much of what was not durable a power loss leaves. */
export interface Loss {
  /** Directory changes kept, from the first (they reach the disk in order). */
  entries: number;
  /** File changes kept, from the first. */
  changes: number;
  /** Keep the first half of the file changes and half the bytes of the next one instead. */
  torn: boolean;
}

export const ALL = Number.POSITIVE_INFINITY;
export const LOSSES: readonly Loss[] = [
  // Nothing that was not synced survives.
  { entries: 0, changes: 0, torn: false },
  // The directory entries reached the disk, no unsynced data did.
  { entries: ALL, changes: 0, torn: false },
  // All unsynced data reached the disk but no unsynced entry.
  { entries: 0, changes: ALL, torn: false },
  // Only the first one or two unsynced directory changes reached the disk, no unsynced data.
  { entries: 1, changes: 0, torn: false },
  { entries: 2, changes: 0, torn: false },
  // Everything reached the disk (as a process crash leaves it).
  { entries: ALL, changes: ALL, torn: false },
  // The entries, and the first half of the unsynced writes with the next one torn.
  { entries: ALL, changes: 0, torn: true },
];

export function describeLoss(loss: Loss): string {
  const count = (n: number) => (n === ALL ? 'all' : String(n));
  return `entries kept ${count(loss.entries)}, changes kept ${loss.torn ? 'half, then one torn' : count(loss.changes)}`;
}

/** What is durable, and what is not yet, at one moment. */
export class Disk {
  /** The durable bytes of each file ever created or opened. */
  durable: Uint8Array[] = [];
  /** Durable directory entries. */
  names = new Map<string, number>();
  /** Directory entries as the file system shows them now. */
  current = new Map<string, number>();
  /** Directory changes since their directory's last sync, in order. */
  entries: Entry[] = [];
  /** File changes not yet synced, in order. */
  changes: Change[] = [];

  clone(): Disk {
    const copy = new Disk();
    copy.durable = [...this.durable];
    copy.names = new Map(this.names);
    copy.current = new Map(this.current);
    copy.entries = [...this.entries];
    copy.changes = [...this.changes];
    return copy;
  }

  addFile(bytes: Uint8Array): number {
    this.durable.push(bytes);
    return this.durable.length - 1;
  }

  pushEntry(entry: Entry): void {
    applyEntry(entry, this.current);
    this.entries.push(entry);
  }

  /** The files a power loss of kind `loss` leaves: path and bytes. */
  after(loss: Loss): Map<string, Uint8Array> {
    const names = new Map(this.names);
    for (const entry of this.entries.slice(0, loss.entries)) applyEntry(entry, names);
    const files = [...this.durable];
    const apply = (change: Change, part: boolean) => {
      const file = files[change.file] as Uint8Array;
      if (change.kind === 'truncate') {
        files[change.file] = resized(file, change.length);
        return;
      }
      const bytes = part ? change.bytes.subarray(0, change.bytes.length >>> 1) : change.bytes;
      const out = resized(file, Math.max(file.length, change.at + bytes.length));
      out.set(bytes, change.at);
      files[change.file] = out;
    };
    const kept = loss.torn ? this.changes.length >>> 1 : Math.min(loss.changes, this.changes.length);
    for (const change of this.changes.slice(0, kept)) apply(change, false);
    const next = this.changes[kept];
    if (loss.torn && next !== undefined) apply(next, true);
    const out = new Map<string, Uint8Array>();
    for (const [path, file] of names) out.set(path, files[file] as Uint8Array);
    return out;
  }
}

function wholeFile(fd: number): Uint8Array {
  const bytes = new Uint8Array(fstatSync(fd).size);
  let done = 0;
  while (done < bytes.length) {
    const n = readSync(fd, bytes, done, bytes.length - done, done);
    if (n === 0) break;
    done += n;
  }
  return bytes;
}

/**
 * Real storage that keeps a `Disk` model of what it made durable, and at call `crashAt` (counted as
 * `CountingStorage` counts) takes a copy of the model and fails that call and every later one, as a
 * machine that lost power would.
 */
export class PowerStorage implements Storage {
  calls = 0;
  /** The model as the power loss found it. */
  crashed: Disk | undefined;
  private readonly disk = new Disk();
  /** The model's file behind each open descriptor. */
  private readonly files = new Map<number, number>();

  /** `dir`: the log directory, whose files at the first call are taken as durable. */
  constructor(
    private readonly crashAt: number,
    private readonly dir: string,
    private readonly inner: Storage = nodeStorage,
  ) {}

  /** Takes the files of the log directory and its segment directory as they are as durable. */
  private adopt(): void {
    for (const dir of [this.dir, join(this.dir, 'segments')]) {
      let names: string[];
      try {
        names = readdirSync(dir);
      } catch {
        continue;
      }
      for (const name of names) {
        const path = join(dir, name);
        if (!statSync(path).isFile()) continue;
        const file = this.disk.addFile(new Uint8Array(readFileSync(path)));
        this.disk.names.set(path, file);
        this.disk.current.set(path, file);
      }
    }
  }

  /** Cuts the power now: the model as it is, and every later call fails. */
  cutPower(): void {
    this.crashed = this.disk.clone();
  }

  /**
   * Throws when the power went while a call waited: it never completed (a sync that ran into the
   * power loss does not return success; what it made durable is what the model held when it went).
   */
  private completed(kind: string): void {
    if (this.crashed !== undefined) throw systemError('EIO', `power lost during ${kind}`);
  }

  /** Counts a call; throws once the power is gone. */
  private count(kind: string): void {
    if (this.calls === 0) this.adopt();
    this.calls++;
    if (this.calls === this.crashAt) this.crashed = this.disk.clone();
    if (this.crashed !== undefined) throw systemError('EIO', `power lost before ${kind}`);
  }

  private file(fd: number): number {
    const file = this.files.get(fd);
    if (file === undefined) throw new Error(`descriptor ${fd} unknown to the power model`);
    return file;
  }

  async open(path: string): Promise<number> {
    this.count('open');
    const fd = await this.inner.open(path);
    this.completed('open');
    let file = this.disk.current.get(path);
    if (file === undefined) {
      // A file from before the model started: durable as it is.
      file = this.disk.addFile(wholeFile(fd));
      this.disk.names.set(path, file);
      this.disk.current.set(path, file);
    }
    this.files.set(fd, file);
    return fd;
  }

  async create(path: string): Promise<number> {
    this.count('create');
    const fd = await this.inner.create(path);
    this.completed('create');
    const file = this.disk.addFile(new Uint8Array(0));
    this.disk.pushEntry({ kind: 'create', path, file });
    this.files.set(fd, file);
    return fd;
  }

  close(fd: number): Promise<void> {
    this.files.delete(fd);
    return this.inner.close(fd);
  }

  write(fd: number, bytes: Uint8Array, offset: number, length: number, position: number): number {
    this.count('write');
    const written = this.inner.write(fd, bytes, offset, length, position);
    const copy = bytes.slice(offset, offset + written);
    this.disk.changes.push({ kind: 'write', file: this.file(fd), at: position, bytes: copy });
    return written;
  }

  async writeAsync(fd: number, bytes: Uint8Array, offset: number, length: number, position: number): Promise<number> {
    this.count('writeAsync');
    const copy = bytes.slice(offset, offset + length);
    const written = await this.inner.writeAsync(fd, copy, 0, length, position);
    this.completed('writeAsync');
    this.disk.changes.push({ kind: 'write', file: this.file(fd), at: position, bytes: copy.subarray(0, written) });
    return written;
  }

  read(fd: number, bytes: Uint8Array, offset: number, length: number, position: number): number {
    return this.inner.read(fd, bytes, offset, length, position);
  }

  size(fd: number): Promise<number> {
    return this.inner.size(fd);
  }

  async truncate(fd: number, length: number): Promise<void> {
    this.count('truncate');
    await this.inner.truncate(fd, length);
    this.completed('truncate');
    this.disk.changes.push({ kind: 'truncate', file: this.file(fd), length });
  }

  async datasync(fd: number): Promise<void> {
    this.count('datasync');
    // What the file holds when the sync starts is what it makes durable: a write made while it runs
    // may or may not be.
    const file = this.file(fd);
    const bytes = wholeFile(fd);
    const covered = new Set(this.disk.changes.filter((change) => change.file === file));
    await this.inner.datasync(fd);
    this.completed('datasync');
    this.disk.durable[file] = bytes;
    this.disk.changes = this.disk.changes.filter((change) => !covered.has(change));
  }

  async rename(from: string, to: string): Promise<void> {
    this.count('rename');
    await this.inner.rename(from, to);
    this.completed('rename');
    const file = this.disk.current.get(from);
    if (file === undefined) throw new Error(`${from} unknown to the power model`);
    this.disk.pushEntry({ kind: 'rename', from, to, file });
  }

  async unlink(path: string): Promise<void> {
    this.count('unlink');
    await this.inner.unlink(path);
    this.completed('unlink');
    this.disk.pushEntry({ kind: 'remove', path });
  }

  readdir(path: string): Promise<string[]> {
    return this.inner.readdir(path);
  }

  mkdir(path: string): Promise<void> {
    return this.inner.mkdir(path);
  }

  async syncDir(path: string): Promise<void> {
    this.count('syncDir');
    await this.inner.syncDir(path);
    this.completed('syncDir');
    const rest: Entry[] = [];
    for (const entry of this.disk.entries) {
      if (entryDir(entry) === path) applyEntry(entry, this.disk.names);
      else rest.push(entry);
    }
    this.disk.entries = rest;
  }
}

/** Writes the files a power loss left into a fresh directory laid out like `original`. */
export function materialize(original: string, files: Map<string, Uint8Array>): string {
  const dir = sweepDir();
  mkdirSync(join(dir, 'segments'));
  for (const [path, bytes] of files) writeFileSync(join(dir, relative(original, path)), bytes);
  return dir;
}
