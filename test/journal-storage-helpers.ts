/**
 * Storages for the broker's state journal that tests hand to `Broker.open({ stateStorage })`:
 * - `FaultyJournalStorage` counts every file operation (or only those named `only`) and fails the
 *   Nth one: it throws, or (a write) stores half and says so, or the disk fills up from there on (a
 *   short write, then ENOSPC).
 * - `PowerLossStorage` writes through to the disk and keeps a model of what a power loss would leave:
 *   per file only the bytes its last sync covered, and the directory as of its last sync (a create
 *   or rename not followed by one is lost). `views[n]` is that state just before operation `n`.
 */
import { type JournalFile, type JournalStorage, nodeJournalStorage } from '../ts/broker/journal-storage.js';

export type FaultMode = 'throw' | 'short' | 'full';

function systemError(code: string, message: string): NodeJS.ErrnoException {
  const error = new Error(`${code}: ${message}`) as NodeJS.ErrnoException;
  error.code = code;
  return error;
}

export class FaultyJournalStorage implements JournalStorage {
  /** Operations so far (every call of the storage and of its files). */
  calls = 0;
  /** Operation names in order, for messages. */
  readonly log: string[] = [];
  /** Whether the fault has happened. */
  hit = false;
  private diskFull = false;
  /** Operations counted toward `failAt`. */
  private counted = 0;

  constructor(
    private readonly failAt = 0,
    private readonly mode: FaultMode = 'throw',
    private readonly inner: JournalStorage = nodeJournalStorage,
    /** Count only operations of this name toward `failAt` (e.g. the Nth `datasync`). */
    private readonly only?: string,
  ) {}

  /** Counts an operation; true when this one is the fault. */
  private next(name: string): boolean {
    this.calls++;
    this.log.push(name);
    if (this.only !== undefined && name !== this.only) return false;
    if (++this.counted !== this.failAt) return false;
    this.hit = true;
    return true;
  }

  private fault(name: string, code: string): void {
    if (this.next(name) && this.mode === 'throw') throw systemError(code, `injected: ${name} failed`);
  }

  async read(path: string): Promise<Buffer | undefined> {
    this.fault('read', 'EIO');
    return this.inner.read(path);
  }

  async open(path: string): Promise<JournalFile> {
    this.fault('open', 'ENOSPC');
    return this.wrap(await this.inner.open(path));
  }

  async create(path: string): Promise<JournalFile> {
    this.fault('create', 'ENOSPC');
    return this.wrap(await this.inner.create(path));
  }

  async rename(from: string, to: string): Promise<void> {
    this.fault('rename', 'EIO');
    return this.inner.rename(from, to);
  }

  async remove(path: string): Promise<void> {
    this.fault('remove', 'EIO');
    return this.inner.remove(path);
  }

  async syncDirectory(path: string): Promise<void> {
    this.fault('syncDirectory', 'EIO');
    return this.inner.syncDirectory(path);
  }

  private wrap(file: JournalFile): JournalFile {
    return {
      write: async (bytes, offset, length, position) => {
        const faulted = this.next('write');
        if (faulted && this.mode === 'throw') throw systemError('ENOSPC', 'injected: write failed');
        if (faulted && this.mode === 'full') this.diskFull = true;
        else if (this.diskFull) throw systemError('ENOSPC', 'injected: the disk is full');
        if (faulted && length > 1) return file.write(bytes, offset, length >>> 1, position);
        return file.write(bytes, offset, length, position);
      },
      truncate: async (length) => {
        this.fault('truncate', 'EIO');
        return file.truncate(length);
      },
      datasync: async () => {
        this.fault('datasync', 'EIO');
        return file.datasync();
      },
      close: async () => {
        this.fault('close', 'EIO');
        return file.close();
      },
    };
  }
}

interface Inode {
  bytes: Buffer;
  synced: Buffer;
}

/** The files a power loss would leave: name → bytes. */
export type CrashView = Map<string, Buffer>;

export class PowerLossStorage implements JournalStorage {
  /** `views[n]`: what a power loss just before operation `n` (1-based) would leave; the last is after all. */
  readonly views: CrashView[] = [];
  private readonly names = new Map<string, Inode>();
  private syncedNames = new Map<string, Inode>();

  constructor(private readonly inner: JournalStorage = nodeJournalStorage) {}

  get calls(): number {
    return this.views.length;
  }

  /** What a power loss now would leave. */
  crashView(): CrashView {
    const view: CrashView = new Map();
    for (const [name, inode] of this.syncedNames) view.set(name, Buffer.from(inode.synced));
    return view;
  }

  private before(): void {
    this.views.push(this.crashView());
  }

  async read(path: string): Promise<Buffer | undefined> {
    this.before();
    return this.inner.read(path);
  }

  async open(path: string): Promise<JournalFile> {
    this.before();
    const file = await this.inner.open(path);
    let inode = this.names.get(path);
    if (inode === undefined) {
      // A file from before this storage: as it is on disk, and durable.
      const bytes = (await this.inner.read(path)) ?? Buffer.alloc(0);
      inode = { bytes, synced: Buffer.from(bytes) };
      this.names.set(path, inode);
      if (bytes.length > 0) this.syncedNames.set(path, inode);
    }
    return this.wrap(file, inode);
  }

  async create(path: string): Promise<JournalFile> {
    this.before();
    const file = await this.inner.create(path);
    const inode = { bytes: Buffer.alloc(0), synced: Buffer.alloc(0) };
    this.names.set(path, inode);
    return this.wrap(file, inode);
  }

  async rename(from: string, to: string): Promise<void> {
    this.before();
    await this.inner.rename(from, to);
    const inode = this.names.get(from);
    this.names.delete(from);
    if (inode !== undefined) this.names.set(to, inode);
  }

  async remove(path: string): Promise<void> {
    this.before();
    await this.inner.remove(path);
    this.names.delete(path);
  }

  async syncDirectory(path: string): Promise<void> {
    this.before();
    await this.inner.syncDirectory(path);
    this.syncedNames = new Map(this.names);
  }

  private wrap(file: JournalFile, inode: Inode): JournalFile {
    return {
      write: async (bytes, offset, length, position) => {
        this.before();
        const written = await file.write(bytes, offset, length, position);
        const end = position + written;
        if (end > inode.bytes.length) {
          const grown = Buffer.alloc(end);
          inode.bytes.copy(grown);
          inode.bytes = grown;
        }
        Buffer.from(bytes.buffer, bytes.byteOffset + offset, written).copy(inode.bytes, position);
        return written;
      },
      truncate: async (length) => {
        this.before();
        await file.truncate(length);
        const resized = Buffer.alloc(length);
        inode.bytes.copy(resized, 0, 0, Math.min(length, inode.bytes.length));
        inode.bytes = resized;
      },
      datasync: async () => {
        this.before();
        await file.datasync();
        inode.synced = Buffer.from(inode.bytes);
      },
      close: async () => {
        this.before();
        await file.close();
      },
    };
  }
}
