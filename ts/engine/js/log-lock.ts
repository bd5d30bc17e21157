/**
 * The directory lock of docs/FORMAT.md ("Lock"): `LOCK` holds one JSON line naming the owner. It is
 * created exclusively; an existing lock whose process is alive (this one included) refuses the open,
 * one whose process is gone was left by a crash and is replaced.
 */
import { join } from 'node:path';
import { LogLockedError } from '../../errors.js';
import { ioError } from './log-segment.js';
import type { Storage } from './storage.js';

export const LOCK_FILE = 'LOCK';

/** What a lock file says about its owner; undefined when it cannot be read as a lock. */
async function lockOwner(storage: Storage, fd: number): Promise<number | undefined> {
  const size = Math.min(await storage.size(fd), 4096);
  const bytes = new Uint8Array(size);
  const read = storage.read(fd, bytes, 0, size, 0);
  try {
    const owner: unknown = JSON.parse(new TextDecoder().decode(bytes.subarray(0, read)));
    const pid = (owner as { pid?: unknown } | null)?.pid;
    return typeof pid === 'number' && Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a process exists: signal 0 checks without sending, and EPERM means it exists as someone else. */
function processAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function readOwner(storage: Storage, path: string): Promise<number | undefined | null> {
  let fd: number;
  try {
    fd = await storage.open(path);
  } catch (error) {
    // Removed between our create and this open: try to create it again.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw ioError(`cannot read the lock ${path}`, error);
  }
  try {
    return await lockOwner(storage, fd);
  } finally {
    await storage.close(fd);
  }
}

/**
 * Takes the lock of `dir` for this process. A lock that cannot be parsed counts as stale: it is what
 * a crash between creating the file and writing its line leaves. Two processes replacing the same
 * stale lock at once can both succeed; the window is one unlink and one create wide.
 */
export async function acquireLock(storage: Storage, dir: string, engine: 'js', nowMs: number): Promise<string> {
  const path = join(dir, LOCK_FILE);
  const line = new TextEncoder().encode(`${JSON.stringify({ pid: process.pid, engine, createdMs: nowMs })}\n`);
  for (;;) {
    let fd: number;
    try {
      fd = await storage.create(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw ioError(`cannot create the lock ${path}`, error);
      const pid = await readOwner(storage, path);
      if (pid === null) continue;
      if (pid !== undefined && processAlive(pid)) {
        throw new LogLockedError(`${dir} is locked by process ${pid}`, { dir, pid });
      }
      await storage.unlink(path).catch((unlinkError: NodeJS.ErrnoException) => {
        if (unlinkError.code !== 'ENOENT') throw ioError(`cannot remove the stale lock ${path}`, unlinkError);
      });
      continue;
    }
    try {
      if (storage.write(fd, line, 0, line.length, 0) !== line.length) throw new Error('short write');
    } catch (error) {
      await storage.close(fd);
      await storage.unlink(path).catch(() => undefined);
      throw ioError(`cannot write the lock ${path}`, error);
    }
    await storage.close(fd);
    return path;
  }
}

/** Removes the lock taken by `acquireLock`. */
export async function releaseLock(storage: Storage, path: string): Promise<void> {
  try {
    await storage.unlink(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw ioError(`cannot remove the lock ${path}`, error);
  }
}
