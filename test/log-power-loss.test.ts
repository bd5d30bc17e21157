/**
 * The js engine's power-loss sweep: the scenario of test/log-sweep.ts runs on a storage that
 * records what each call made durable, and is cut by a power loss at each of its I/O calls in
 * turn. From there on every call fails; the directory is then replaced by what a power loss could
 * leave on disk, in several ways, and reopened (with each engine in turn) against the model of
 * acknowledged records.
 *
 * What the model keeps, as the js engine uses the disk: positional writes go to the page cache and
 * are durable once the file is `fdatasync`ed; a truncation likewise. A file created, renamed or
 * removed is durable in its directory only once that directory is synced. Directories themselves
 * are taken as durable. The native engine's power-loss sweep is native/core/src/log/tests/power.rs.
 */
import { createHash } from 'node:crypto';
import { fstatSync, mkdirSync, readdirSync, readFileSync, readSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SEGMENT_HEADER_BYTES } from '../ts/engine/js/limits.js';
import { openJsLog } from '../ts/engine/js/log.js';
import { encodeBatch } from '../ts/engine/js/log-encode.js';
import { segmentFileName } from '../ts/engine/js/log-segment.js';
import { nodeStorage, type Storage, systemError } from '../ts/engine/js/storage.js';
import { CommitLog } from '../ts/index.js';
import { ENGINES } from './engines.js';
import { innerStorage, removeDir, runScenario, type Scenario, SEGMENT, sweepDir, verify } from './log-sweep.js';

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
interface Loss {
  /** Directory changes kept, from the first (they reach the disk in order). */
  entries: number;
  /** File changes kept, from the first. */
  changes: number;
  /** Keep the first half of the file changes and half the bytes of the next one instead. */
  torn: boolean;
}

const ALL = Number.POSITIVE_INFINITY;
const LOSSES: readonly Loss[] = [
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

function describeLoss(loss: Loss): string {
  const count = (n: number) => (n === ALL ? 'all' : String(n));
  return `entries kept ${count(loss.entries)}, changes kept ${loss.torn ? 'half, then one torn' : count(loss.changes)}`;
}

/** What is durable, and what is not yet, at one moment. */
class Disk {
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
class PowerStorage implements Storage {
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
function materialize(original: string, files: Map<string, Uint8Array>): string {
  const dir = sweepDir();
  mkdirSync(join(dir, 'segments'));
  for (const [path, bytes] of files) writeFileSync(join(dir, relative(original, path)), bytes);
  return dir;
}

/** Runs `scenario` with the power lost at call `n`; the problems found, one per kind of loss of `losses`. */
async function powerCase(scenario: Scenario, n: number, losses: readonly Loss[]): Promise<string[]> {
  const dir = sweepDir();
  const problems: string[] = [];
  try {
    const storage = new PowerStorage(n, dir, innerStorage(scenario));
    const model = await runScenario(dir, storage, scenario);
    const disk = storage.crashed;
    if (disk === undefined) return problems;
    // Losses that leave the same files (nothing was pending of what they differ in) are checked once.
    const seen = new Set<string>();
    for (const [k, loss] of losses.entries()) {
      const files = disk.after(loss);
      const digest = createHash('sha256');
      for (const [path, bytes] of [...files].sort(([a], [b]) => (a < b ? -1 : 1))) digest.update(path).update(bytes);
      const key = digest.digest('hex');
      if (seen.has(key)) continue;
      seen.add(key);
      const image = materialize(dir, files);
      try {
        const engine = ENGINES[(n + k) % ENGINES.length] as (typeof ENGINES)[number];
        const why = await verify(image, model, engine);
        if (why !== undefined) {
          problems.push(`${scenario}, power lost at call ${n}, ${describeLoss(loss)}, ${engine}: ${why}`);
        }
      } finally {
        removeDir(image);
      }
    }
  } finally {
    removeDir(dir);
  }
  return problems;
}

/** Every power loss of `losses` at every call of `scenario`; the problems found. */
async function sweep(scenario: Scenario, losses: readonly Loss[]): Promise<string[]> {
  const dir = sweepDir();
  let calls: number;
  try {
    const storage = new PowerStorage(0, dir, innerStorage(scenario));
    const model = await runScenario(dir, storage, scenario);
    expect(await verify(dir, model, 'js')).toBeUndefined();
    calls = storage.calls;
  } finally {
    removeDir(dir);
  }
  const problems: string[] = [];
  for (let n = 1; n <= calls; n++) problems.push(...(await powerCase(scenario, n, losses)));
  return problems;
}

describe('js commit log power-loss sweep', () => {
  it('models the disk: without a power loss the directory holds everything', async () => {
    const dir = sweepDir();
    try {
      const storage = new PowerStorage(0, dir);
      const model = await runScenario(dir, storage);
      expect(storage.calls).toBeGreaterThan(50);
      expect(await verify(dir, model, 'js')).toBeUndefined();
    } finally {
      removeDir(dir);
    }
  });

  it('loses no acknowledged record and returns no bad one wherever the power is lost', {
    timeout: 180_000,
  }, async () => {
    expect(await sweep('whole', LOSSES)).toEqual([]);
  });

  it('loses no acknowledged record and returns no bad one wherever the power is lost, work running at once', {
    timeout: 180_000,
  }, async () => {
    expect(await sweep('concurrent', LOSSES)).toEqual([]);
  });

  it('loses no acknowledged record after a crash wherever the power is lost, directory changes kept', {
    timeout: 180_000,
  }, async () => {
    const losses = LOSSES.filter((loss) => loss.entries === ALL);
    expect(await sweep('afterCrash', losses)).toEqual([]);
  });

  // Recovery cuts the torn record at the end of the log: it removes the spare segment after it, then
  // truncates the cut segment to the cut and extends it back (log-recovery.ts `replayAndCut`), and
  // syncs the directory only after both. A power loss that keeps the truncation but not the removal
  // (call 13, the extension, never made; no order between the two is promised without a sync)
  // leaves a short segment followed by another, and the next open fails with LogCorruptError. Defect
  // of log-recovery.ts: the removal of the later segments must be made durable (`syncDir`) before
  // the cut segment is truncated. Once it is, make this an `it` (or run the test above with every loss).
  it.fails('loses no acknowledged record after a crash wherever the power is lost, directory changes lost', {
    timeout: 180_000,
  }, async () => {
    const losses = LOSSES.filter((loss) => loss.entries !== ALL);
    expect(await sweep('afterCrash', losses)).toEqual([]);
  });
});

describe.each(ENGINES)('js log cut by recovery, reopened with %s', (engine) => {
  // Recovery cuts the log at a corrupt record and removes the segment files after it; records
  // appended after the cut fill its segment, are synced (acknowledged) and complete it with an end
  // marker; the power goes before the next segment is created. The removed segments must not come
  // back: their old records would be replayed after the complete segment, restarting the LMQ ahead
  // of the acknowledged records.
  it('keeps a segment removed by a cut removed across a power loss', async () => {
    const dir = sweepDir();
    let image: string | undefined;
    try {
      const now = 1_700_000_000_000;
      const body = (byte: number, length: number) => Buffer.alloc(length, byte);
      const first = await openJsLog(dir, { segmentBytes: SEGMENT, nowMs: now });
      const old = encodeBatch(
        Array.from({ length: 40 }, (_, i) => ({ lmqs: ['q'], body: body(i, 300) })),
        now,
        SEGMENT - SEGMENT_HEADER_BYTES,
      );
      for (let from = 0; from < old.count; ) {
        from = first.append(old, from, now);
        if (from < old.count) await first.prepareSegment(now);
      }
      await first.close();
      const positions = [...old.positions];
      expect(positions.some((position) => Math.floor(position / SEGMENT) === 2)).toBe(true);
      const corrupt = positions.filter((position) => Math.floor(position / SEGMENT) === 1)[3] as number;
      const file = join(dir, 'segments', segmentFileName(SEGMENT));
      const bytes = readFileSync(file);
      bytes[(corrupt % SEGMENT) + 40] = (bytes[(corrupt % SEGMENT) + 40] as number) ^ 0x10;
      writeFileSync(file, bytes);

      const storage = new PowerStorage(0, dir);
      const log = await openJsLog(dir, { segmentBytes: SEGMENT, nowMs: now }, storage);
      expect(log.stats().recovery.removedSegments).toBeGreaterThan(0);
      // Larger records than before, so the old ones after the cut do not happen to continue them.
      const more = encodeBatch(
        Array.from({ length: 20 }, (_, i) => ({ lmqs: ['q'], body: body(100 + i, 600) })),
        now,
        SEGMENT - SEGMENT_HEADER_BYTES,
      );
      const done = log.append(more, 0, now);
      expect(done).toBeLessThan(20);
      await log.sync();
      const acked = [...more.offsets.subarray(0, done)];
      storage.cutPower();
      await log.close().catch(() => undefined);

      image = materialize(dir, (storage.crashed as Disk).after(LOSSES[0] as Loss));
      const reopened = await CommitLog.open(image, { engine, segmentBytes: SEGMENT });
      try {
        const offsets = reopened.read('q', 0, 1000).map((message) => message.offset);
        for (const offset of acked) expect(offsets).toContain(offset);
      } finally {
        await reopened.close();
      }
    } finally {
      removeDir(dir);
      if (image !== undefined) removeDir(image);
    }
  });
});
