/**
 * The directory lock of docs/FORMAT.md ("Lock"). Node has no `flock`, so the js engine judges an
 * existing lock by its line and `/proc`: another boot is stale; an owner in another PID namespace is
 * judged by its heartbeat (the holder touches the file's mtime every second); a line with this
 * process's PID is live only while this process has `LOCK` open (a restarted PID 1 left it
 * otherwise); any other PID is live while that process exists with the start time the line records.
 * A native owner also holds a `flock`, which only native openers can see; its line follows the same
 * rule for js openers.
 *
 * `LOCK` appears only complete (written under a temporary name, then hard-linked), and a stale one is
 * removed by renaming it aside and checking that the file moved is the one judged, so an opener never
 * removes a lock that another has just taken in its place.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { LogLockedError } from '../../../errors.js';
import { ioError } from './segment.js';
import { nodeStorage, type Storage } from './storage.js';

export const LOCK_FILE = 'LOCK';
/** How often a holder touches `LOCK`'s mtime. */
export const LOCK_HEARTBEAT_MS = 1000;
/**
 * An owner that can be judged only by its heartbeat is stale once `LOCK` has gone untouched this
 * long, and live as soon as its mtime moves.
 */
export const LOCK_STALE_MS = 10_000;
/** The most of a lock file that is read: a line is far shorter. */
const MAX_LINE_BYTES = 4096;
/** Attempts to take the lock; each retry follows a replacement of `LOCK` by another opener. */
const ROUNDS = 4;

const futimes = promisify(fs.futimes);

/** A held lock: the open descriptor of `LOCK` and its heartbeat. */
export interface DirLock {
  readonly path: string;
  readonly fd: number;
  /** Stops the heartbeat; resolves once no touch of `fd` is under way, so it can be closed. */
  stopHeartbeat(): Promise<void>;
  /**
   * Touches `LOCK` now if a heartbeat is due: for work that holds the event loop (recovery's
   * replay and scans), during which the heartbeat's timer cannot fire.
   */
  beat(): void;
}

/** What identifies a process across PID reuse, PID namespaces and reboots, as far as `/proc` tells. */
interface Identity {
  pid: number;
  bootId?: string;
  pidNamespace?: string;
  startTime?: number;
}

/**
 * What a lock line says; undefined fields were absent or malformed. Its engine does not matter here:
 * a js opener cannot see a native owner's flock.
 */
type Owner = Partial<Identity>;

type Verdict = { live: string } | 'stale' | 'heartbeat';

function readText(path: string): string | undefined {
  try {
    return fs.readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** A value written and read without escapes, as the native engine does. */
function plain(value: unknown): value is string {
  return typeof value === 'string' && /^[\x21-\x7e]+$/.test(value) && !/["\\]/.test(value);
}

/**
 * Field 22 of `/proc/<pid>/stat`: when the process started, in clock ticks after boot. The fields are
 * counted after the last `)`, since the command name before it may hold spaces and parentheses.
 */
function startTime(pid: number | 'self'): number | undefined {
  const stat = readText(`/proc/${pid}/stat`);
  const field = stat
    ?.slice(stat.lastIndexOf(')') + 1)
    .trim()
    .split(/\s+/)[19];
  const value = Number(field);
  return field !== undefined && /^\d+$/.test(field) && Number.isSafeInteger(value) ? value : undefined;
}

function thisProcess(): Identity {
  const bootId = readText('/proc/sys/kernel/random/boot_id')?.trim();
  let pidNamespace: string | undefined;
  try {
    pidNamespace = fs.readlinkSync('/proc/self/ns/pid');
  } catch {
    pidNamespace = undefined;
  }
  const started = startTime('self');
  return {
    pid: process.pid,
    ...(plain(bootId) ? { bootId } : {}),
    ...(plain(pidNamespace) ? { pidNamespace } : {}),
    ...(started !== undefined ? { startTime: started } : {}),
  };
}

function parseOwner(bytes: Uint8Array): Owner {
  let line: unknown;
  try {
    line = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return {};
  }
  if (typeof line !== 'object' || line === null) return {};
  const { pid, bootId, pidNamespace, startTime } = line as Record<string, unknown>;
  const count = (n: unknown) => (typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined);
  return {
    pid: count(pid) || undefined,
    bootId: plain(bootId) ? bootId : undefined,
    pidNamespace: plain(pidNamespace) ? pidNamespace : undefined,
    startTime: count(startTime),
  };
}

/** Whether a process exists: signal 0 checks without sending, and EPERM means it exists as someone else. */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether this process has the file open as `fd` open through another descriptor; undefined when
 * `/proc/self/fd` cannot be read.
 */
function thisProcessHasOpen(fd: number): boolean | undefined {
  let names: string[];
  try {
    names = fs.readdirSync('/proc/self/fd');
  } catch {
    return undefined;
  }
  const target = fs.fstatSync(fd, { bigint: true });
  return names.some((name) => {
    if (name === String(fd)) return false;
    try {
      const other = fs.statSync(`/proc/self/fd/${name}`, { bigint: true });
      return other.dev === target.dev && other.ino === target.ino;
    } catch {
      return false;
    }
  });
}

/** The rule of docs/FORMAT.md, "Lock", as far as the file's content and `/proc` decide it. */
function judge(owner: Owner, me: Identity, fd: number): Verdict {
  // LOCK appears only complete, so a line without a pid is damage from a crash of the machine.
  const pid = owner.pid;
  if (pid === undefined) return 'stale';
  if (owner.bootId !== undefined && me.bootId !== undefined && owner.bootId !== me.bootId) return 'stale';
  if (owner.pidNamespace !== undefined && me.pidNamespace !== undefined && owner.pidNamespace !== me.pidNamespace) {
    return 'heartbeat';
  }
  if (pid === me.pid) {
    // A lock of this process is held through an open descriptor of LOCK; without one, the line was
    // left by an earlier program that had this PID (a restarted PID 1, or one this process replaced
    // with exec, which closes descriptors).
    const held = thisProcessHasOpen(fd);
    if (held === false) return 'stale';
    return { live: held ? 'this process holds it' : 'it names this process' };
  }
  if (!processAlive(pid)) return 'stale';
  const actual = owner.startTime === undefined ? undefined : startTime(pid);
  if (actual !== undefined && actual !== owner.startTime) return 'stale';
  return {
    live: actual === undefined ? `process ${pid} is alive` : `process ${pid} is alive and started when the lock says`,
  };
}

/** Whether `path` names the file open as `fd`. */
async function names(path: string, fd: number): Promise<boolean> {
  let named: fs.BigIntStats;
  try {
    named = await fs.promises.stat(path, { bigint: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  const open = fs.fstatSync(fd, { bigint: true });
  return named.dev === open.dev && named.ino === open.ino;
}

/**
 * Judges an owner by its heartbeat: live as soon as the mtime moves, stale once it is older than
 * `LOCK_STALE_MS` or has not moved for that long while watched. 'replaced' when `LOCK` was removed
 * or replaced meanwhile.
 */
async function watch(path: string, fd: number): Promise<{ live: string } | 'stale' | 'replaced'> {
  const first = fs.fstatSync(fd, { bigint: true }).mtimeNs;
  const started = performance.now();
  for (;;) {
    if (!(await names(path, fd))) return 'replaced';
    const modified = fs.fstatSync(fd, { bigint: true }).mtimeNs;
    if (modified !== first) {
      return { live: `its owner is in another PID namespace and touched LOCK within the last ${LOCK_STALE_MS} ms` };
    }
    const age = Date.now() - Number(modified / 1_000_000n);
    if (age >= LOCK_STALE_MS || performance.now() - started >= LOCK_STALE_MS) return 'stale';
    await sleep(LOCK_HEARTBEAT_MS / 4);
  }
}

/**
 * Writes `line` to a new file and links it as `LOCK`, so the name appears with its content complete.
 * Resolves to the open descriptor, or undefined when `LOCK` exists.
 */
async function publish(storage: Storage, dir: string, path: string, line: Uint8Array): Promise<number | undefined> {
  const temporary = join(dir, `${LOCK_FILE}.${process.pid}-${randomUUID()}.tmp`);
  let fd: number;
  try {
    fd = await storage.create(temporary);
  } catch (error) {
    throw ioError(`cannot create the lock ${path}`, error);
  }
  let linked: unknown;
  try {
    if (storage.write(fd, line, 0, line.length, 0) !== line.length) throw new Error('short write');
    await fs.promises.link(temporary, path);
  } catch (error) {
    linked = error;
  }
  await storage.unlink(temporary).catch(() => undefined);
  if (linked === undefined) return fd;
  await storage.close(fd).catch(() => undefined);
  if ((linked as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
  throw ioError(`cannot write the lock ${path}`, linked);
}

/**
 * Removes the stale `LOCK` that `judged` was opened from. It is renamed aside first: if what moved is
 * another file, an opener replaced the stale lock meanwhile, and its lock is linked back.
 */
async function removeStale(storage: Storage, dir: string, path: string, judged: number): Promise<void> {
  const aside = join(dir, `${LOCK_FILE}.${process.pid}-${randomUUID()}.stale`);
  try {
    await storage.rename(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if (!(await names(aside, judged))) {
    // A third opener may have published a lock in the moment LOCK was missing; the next round judges it.
    await fs.promises.link(aside, path).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
  }
  await storage.unlink(aside);
}

function hold(path: string, fd: number): DirLock {
  let touching: Promise<void> = Promise.resolve();
  let touchedAt = Date.now();
  const heartbeat = setInterval(() => {
    touchedAt = Date.now();
    const now = touchedAt / 1000;
    // A failed touch is retried on the next beat.
    touching = futimes(fd, now, now).catch(() => undefined);
  }, LOCK_HEARTBEAT_MS);
  // The heartbeat must not keep the process alive: a process that exits has let go of the lock.
  heartbeat.unref();
  return {
    path,
    fd,
    stopHeartbeat() {
      clearInterval(heartbeat);
      return touching;
    },
    beat() {
      const now = Date.now();
      if (now - touchedAt < LOCK_HEARTBEAT_MS) return;
      touchedAt = now;
      try {
        fs.futimesSync(fd, now / 1000, now / 1000);
      } catch {
        // A failed touch is retried on the next beat.
      }
    },
  };
}

/** Reads and judges the lock open as `fd`, watching its heartbeat if the rule says so. */
async function judgeOpen(
  storage: Storage,
  path: string,
  fd: number,
  me: Identity,
): Promise<{ owner: Owner; verdict: { live: string } | 'stale' | 'replaced' }> {
  const bytes = new Uint8Array(MAX_LINE_BYTES);
  const owner = parseOwner(bytes.subarray(0, storage.read(fd, bytes, 0, bytes.length, 0)));
  const verdict = judge(owner, me, fd);
  return { owner, verdict: verdict === 'heartbeat' ? await watch(path, fd) : verdict };
}

/**
 * The live owner of the lock of `dir`, judged as a js opener would, without taking it; undefined
 * when there is no lock or it is stale. For tools that must not take over a directory.
 */
export async function liveLockOwner(
  dir: string,
  storage: Storage = nodeStorage,
): Promise<{ pid?: number; reason: string } | undefined> {
  const path = join(dir, LOCK_FILE);
  const me = thisProcess();
  for (let round = 0; round < ROUNDS; round++) {
    let fd: number;
    try {
      fd = await storage.open(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw ioError(`cannot read the lock ${path}`, error);
    }
    try {
      const { owner, verdict } = await judgeOpen(storage, path, fd, me);
      if (verdict === 'stale') return undefined;
      if (verdict !== 'replaced')
        return { ...(owner.pid === undefined ? {} : { pid: owner.pid }), reason: verdict.live };
    } finally {
      await storage.close(fd);
    }
  }
  return { reason: 'other processes kept replacing it while this one judged it' };
}

/** Takes the lock of `dir` for this process. */
export async function acquireLock(storage: Storage, dir: string, engine: 'js', nowMs: number): Promise<DirLock> {
  const path = join(dir, LOCK_FILE);
  const me = thisProcess();
  const { pid, ...identity } = me;
  const line = new TextEncoder().encode(`${JSON.stringify({ pid, engine, createdMs: nowMs, ...identity })}\n`);
  const locked = (pid: number | undefined, reason: string) =>
    new LogLockedError(
      `commit log directory ${dir} is locked${pid === undefined ? '' : ` by process ${pid}`}: ${reason}`,
      { dir, pid },
    );
  for (let round = 0; round < ROUNDS; round++) {
    const fd = await publish(storage, dir, path, line);
    if (fd !== undefined) return hold(path, fd);
    let judged: number;
    try {
      judged = await storage.open(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw ioError(`cannot read the lock ${path}`, error);
    }
    try {
      const { owner, verdict } = await judgeOpen(storage, path, judged, me);
      if (verdict === 'replaced') continue;
      if (verdict !== 'stale') throw locked(owner.pid, verdict.live);
      await removeStale(storage, dir, path, judged);
    } catch (error) {
      if (error instanceof LogLockedError) throw error;
      throw ioError(`cannot judge the lock ${path}`, error);
    } finally {
      await storage.close(judged);
    }
  }
  throw locked(undefined, 'other processes kept replacing it while this one tried to take it');
}

/** Stops the heartbeat, removes `LOCK` if it still names the held file, and closes it. */
export async function releaseLock(storage: Storage, lock: DirLock): Promise<void> {
  await lock.stopHeartbeat();
  try {
    if (await names(lock.path, lock.fd)) await storage.unlink(lock.path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw ioError(`cannot remove the lock ${lock.path}`, error);
  } finally {
    await storage.close(lock.fd).catch(() => undefined);
  }
}
