/**
 * Every file operation of the broker's state journal (journal.ts), behind one small interface, so a
 * test can inject faults the way the js commit log's storage does: a failed or short write, a failed
 * sync, open or rename, or a power loss that keeps only what was synced. The real one goes through
 * `fs.promises`, so writes and syncs run on libuv's thread pool, off the event loop.
 */
import { write } from 'node:fs';
import { constants, type FileHandle, open, readFile, rename, rm } from 'node:fs/promises';

/** A journal file open for reading and writing. */
export interface JournalFile {
  /**
   * Writes up to `length` bytes of `bytes` from `offset` at `position`; resolves to how many were
   * written, which may be fewer (a full disk), never more.
   */
  write(bytes: Uint8Array, offset: number, length: number, position: number): Promise<number>;
  truncate(length: number): Promise<void>;
  /** fdatasync: the file's data and the metadata needed to read it back are on disk. */
  datasync(): Promise<void>;
  close(): Promise<void>;
}

export interface JournalStorage {
  /** The whole file, or undefined when it does not exist. */
  read(path: string): Promise<Buffer | undefined>;
  /** Opens `path` for reading and writing, creating it empty when it does not exist. */
  open(path: string): Promise<JournalFile>;
  /** Creates `path`, or empties it when it exists, open for reading and writing. */
  create(path: string): Promise<JournalFile>;
  /** Replaces `to` by `from` in one step. */
  rename(from: string, to: string): Promise<void>;
  /** Removes `path`; nothing when it does not exist. */
  remove(path: string): Promise<void>;
  /** Makes the directory's entries (created, renamed, removed names) durable. */
  syncDirectory(path: string): Promise<void>;
}

function fileOf(handle: FileHandle): JournalFile {
  const fd = handle.fd;
  return {
    // The callback form on the handle's descriptor: the same write on the thread pool, without the
    // promise API's per-call handle bookkeeping and result object (a journal writes every round).
    write: (bytes, offset, length, position) =>
      new Promise((resolve, reject) => {
        write(fd, bytes, offset, length, position, (error, written) => {
          if (error === null) resolve(written);
          else reject(error);
        });
      }),
    truncate: (length) => handle.truncate(length),
    datasync: () => handle.datasync(),
    close: () => handle.close(),
  };
}

/** The real file system. */
export const nodeJournalStorage: JournalStorage = {
  async read(path) {
    try {
      return await readFile(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  },
  open: async (path) => fileOf(await open(path, constants.O_RDWR | constants.O_CREAT)),
  create: async (path) => fileOf(await open(path, 'w+')),
  rename: (from, to) => rename(from, to),
  remove: (path) => rm(path, { force: true }),
  async syncDirectory(path) {
    const handle = await open(path, 'r');
    try {
      await handle.sync();
    } catch (error) {
      // Some file systems refuse fsync on a directory; a rename is then as durable as they make it.
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'EINVAL' && code !== 'EISDIR') throw error;
    } finally {
      await handle.close();
    }
  },
};

/**
 * Writes all of `bytes` at `position`: a short write is continued with the rest; a write that
 * makes no progress is a failure (ENOSPC), so the caller never counts bytes that are not there.
 */
export async function writeFully(file: JournalFile, bytes: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < bytes.length) {
    const written = await file.write(bytes, done, bytes.length - done, position + done);
    if (!(written > 0) || written > bytes.length - done) {
      const error = new Error(`short write: ${done + Math.max(0, written)} of ${bytes.length} bytes at ${position}`);
      (error as NodeJS.ErrnoException).code = 'ENOSPC';
      throw error;
    }
    done += written;
  }
}
