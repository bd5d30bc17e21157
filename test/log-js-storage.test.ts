/**
 * The js engine's commit log under injected storage faults (short writes, flipped bytes, failed
 * syncs and creates) through `FaultyStorage`, and the js-only pieces below the shared log tests:
 * stopping at a full segment without a spare, and the LMQ name order. Behaviour shared by both
 * engines lives in test/log*.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MIN_SEGMENT_BYTES, SEGMENT_HEADER_BYTES } from '../ts/common/limits.js';
import { encodeBatch } from '../ts/common/log-encode.js';
import type { LogCore } from '../ts/engine/contract.js';
import { openJsLog } from '../ts/engine/js/log/log.js';
import { FaultyStorage, type Storage } from '../ts/engine/js/log/storage.js';
import { QueueSet } from '../ts/engine/js/queue.js';
import { LogCorruptError, LogIoError, LogLockedError } from '../ts/errors.js';
import { RUN_TESTS_WITHOUT_NATIVE } from './engines.js';

const SEGMENT = MIN_SEGMENT_BYTES;
const NOW = 1_700_000_000_000;
const dirs: string[] = [];
const logs: LogCore[] = [];

afterEach(async () => {
  for (const log of logs.splice(0)) await log.close().catch(() => undefined);
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'litetopic-js-storage-'));
  dirs.push(dir);
  return dir;
}

async function open(dir: string, storage?: Storage): Promise<LogCore> {
  const log = await openJsLog(dir, { segmentBytes: SEGMENT, nowMs: NOW, readOnly: false, repair: false }, storage);
  logs.push(log);
  return log;
}

/** Storage that faults segment files only, so the lock and checkpoint stay sound. */
function faultySegments(): FaultyStorage {
  return new FaultyStorage(undefined, (path) => path.endsWith('.seg'));
}

function bodyOf(lmq: string, n: number): string {
  return `${lmq}#${n}:`.padEnd(100, 'x');
}

/** Appends `count` records to `lmq`, preparing segments as needed; returns their positions. */
async function appendAll(log: LogCore, lmq: string, count: number): Promise<number[]> {
  const first = log.maxOffset(lmq);
  const records = Array.from({ length: count }, (_, i) => ({ lmqs: [lmq], body: bodyOf(lmq, first + i) }));
  const batch = encodeBatch(records, NOW, SEGMENT - SEGMENT_HEADER_BYTES);
  for (let from = 0; from < batch.count; ) {
    from = log.append(batch, from, NOW);
    if (from < batch.count) await log.prepareSegment(NOW);
  }
  return [...batch.positions];
}

/** Every record of `lmq` reads back intact, with the body its offset says. */
function expectIntact(log: LogCore, lmq: string): void {
  const min = log.minOffset(lmq);
  const result = log.read(lmq, min, 100_000);
  expect(result.count).toBe(log.maxOffset(lmq) - min);
  const text = Buffer.from(result.bytes).toString('latin1');
  for (let k = 0; k < result.count; k++) expect(text).toContain(bodyOf(lmq, min + k));
}

describe.runIf(RUN_TESTS_WITHOUT_NATIVE)('js commit log with injected storage faults', () => {
  it('fails on a short write and reopens clean, the torn record cut', async () => {
    const dir = tempDir();
    const storage = faultySegments();
    const log = await open(dir, storage);
    await appendAll(log, 'q', 10);
    storage.shortWrites = 1;
    const failing = encodeBatch([{ lmqs: ['q'], body: bodyOf('q', 10) }], NOW, SEGMENT);
    expect(() => log.append(failing, 0, NOW)).toThrow(LogIoError);
    // Failed for good: every later call raises the same error until the log is reopened.
    expect(() => log.read('q', 0, 1)).toThrow(LogIoError);
    await expect(log.sync()).rejects.toThrow(LogIoError);
    await log.close();
    const reopened = await open(dir);
    expect(reopened.stats().recovery.cutPosition).toBe(failing.positions[0]);
    expect(reopened.maxOffset('q')).toBe(10);
    expectIntact(reopened, 'q');
    await appendAll(reopened, 'q', 5);
    expectIntact(reopened, 'q');
  });

  it('never returns a record whose bytes were flipped on the way to disk; reopening refuses it, a repair cuts it', async () => {
    const dir = tempDir();
    const storage = faultySegments();
    const log = await open(dir, storage);
    await appendAll(log, 'q', 5);
    storage.flippedWrites = 1;
    const [damaged] = await appendAll(log, 'q', 1);
    await appendAll(log, 'q', 3);
    expect(() => log.read('q', 5, 1)).toThrow(LogCorruptError);
    expect(() => log.read('q', 0, 100)).toThrow(LogCorruptError);
    expect(log.read('q', 6, 3).count).toBe(3);
    await log.close();
    // Valid records follow the flipped one, which has no zeroed sector: corruption, not a torn tail.
    await expect(open(dir)).rejects.toMatchObject({ code: 'LOG_CORRUPT', position: damaged });
    const reopened = await openJsLog(dir, { segmentBytes: SEGMENT, nowMs: NOW, readOnly: false, repair: true });
    logs.push(reopened);
    // The repair cuts there: the flipped record and everything after it are gone.
    expect(reopened.stats().recovery).toMatchObject({ cutPosition: damaged, corruption: { position: damaged } });
    expect(reopened.maxOffset('q')).toBe(5);
    expectIntact(reopened, 'q');
  });

  it('rejects a sync whose fdatasync fails, claims nothing durable and stays failed', async () => {
    const dir = tempDir();
    const storage = faultySegments();
    const log = await open(dir, storage);
    await appendAll(log, 'q', 3);
    const durable = await log.sync();
    expect(durable).toBe(log.writePosition);
    await appendAll(log, 'q', 3);
    storage.failedSyncs = 1;
    expect(log.stats().durablePosition).toBe(durable);
    await expect(log.sync()).rejects.toThrow(LogIoError);
    // The page cache can no longer be trusted to hold what was written: no more appends, syncs or
    // figures (a durable position among them) until the log is reopened.
    await expect(log.sync()).rejects.toThrow(LogIoError);
    expect(() => log.stats()).toThrow(LogIoError);
    await expect(log.checkpoint(NOW)).rejects.toThrow(LogIoError);
    expect(() => encodeAndAppend(log)).toThrow(LogIoError);
    await log.close();
    const reopened = await open(dir);
    expect(reopened.maxOffset('q')).toBe(6);
    expectIntact(reopened, 'q');
  });

  it('rejects a segment preparation whose create fails, leaves nothing behind, and a retry works', async () => {
    const dir = tempDir();
    const storage = faultySegments();
    const log = await open(dir, storage);
    storage.failedCreates = 1;
    await expect(log.prepareSegment(NOW)).rejects.toThrow(LogIoError);
    expect(log.spareReady).toBe(false);
    expect(log.stats().segments).toBe(1);
    // A failed preparation held no records: the log keeps working.
    await appendAll(log, 'q', 2);
    await log.prepareSegment(NOW);
    expect(log.spareReady).toBe(true);
    await appendAll(log, 'q', 60);
    expectIntact(log, 'q');
  });

  it('rejects a segment preparation whose sync fails and removes the half-made file', async () => {
    const dir = tempDir();
    const storage = faultySegments();
    const log = await open(dir, storage);
    storage.failedSyncs = 1;
    await expect(log.prepareSegment(NOW)).rejects.toThrow(LogIoError);
    expect(log.stats().segments).toBe(1);
    await log.prepareSegment(NOW);
    expect(log.stats()).toMatchObject({ segments: 2, spareReady: true });
  });
});

function encodeAndAppend(log: LogCore): number {
  return log.append(encodeBatch([{ lmqs: ['q'], body: 'x' }], NOW, SEGMENT), 0, NOW);
}

describe.runIf(RUN_TESTS_WITHOUT_NATIVE)('js commit log segments', () => {
  it('stops at a full segment when no spare is ready, with an end marker, and goes on once one is', async () => {
    const dir = tempDir();
    const log = await open(dir);
    const records = Array.from({ length: 40 }, (_, i) => ({ lmqs: ['q'], body: bodyOf('q', i) }));
    const batch = encodeBatch(records, NOW, SEGMENT);
    const stopped = log.append(batch, 0, NOW);
    expect(stopped).toBeGreaterThan(0);
    expect(stopped).toBeLessThan(40);
    expect(log.maxOffset('q')).toBe(stopped);
    const marker = Buffer.alloc(4);
    const fd = openSync(join(dir, 'segments', `${'0'.repeat(20)}.seg`), 'r');
    readSync(fd, marker, 0, 4, log.writePosition);
    closeSync(fd);
    expect(marker.toString('latin1')).toBe('LTE1');
    // Complete now: nothing more goes into it, however small.
    expect(encodeAndAppend(log)).toBe(0);
    await log.prepareSegment(NOW);
    expect(log.append(batch, stopped, NOW)).toBe(40);
    expect(batch.positions[stopped]).toBe(SEGMENT + SEGMENT_HEADER_BYTES);
    expectIntact(log, 'q');
    await log.close();
    const reopened = await open(dir);
    expect(reopened.stats().recovery.cutPosition).toBe(-1);
    expectIntact(reopened, 'q');
  });

  it('gives a log that ends with a complete segment its next segment on reopen', async () => {
    const dir = tempDir();
    const log = await open(dir);
    const batch = encodeBatch(
      Array.from({ length: 40 }, (_, i) => ({ lmqs: ['q'], body: bodyOf('q', i) })),
      NOW,
      SEGMENT,
    );
    const stopped = log.append(batch, 0, NOW);
    await log.close();
    const reopened = await open(dir);
    expect(reopened.stats()).toMatchObject({ segments: 2, writePosition: SEGMENT + SEGMENT_HEADER_BYTES });
    expect(reopened.stats().recovery.cutPosition).toBe(-1);
    expect(reopened.maxOffset('q')).toBe(stopped);
    expect(reopened.append(batch, stopped, NOW)).toBe(40);
    expectIntact(reopened, 'q');
  });
});

describe.runIf(RUN_TESTS_WITHOUT_NATIVE)('js LMQ name order', () => {
  it('lists in UTF-8 byte order, where astral characters sort after U+E000..U+FFFF', () => {
    const queues = new QueueSet();
    const names = ['b', 'a\u{1F600}', 'a\uFF01', 'a', 'ab', 'a\u00E9'];
    for (const name of names) queues.obtain(name, 0);
    const expected = [...names].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    expect(expected).not.toEqual([...names].sort());
    expect(queues.list('', 100, undefined).names).toEqual(expected);
    expect(queues.list('a', 2, 'a')).toEqual({ names: expected.slice(1, 3), more: true });
    expect(queues.list('a', 100, 'a\uFF01')).toEqual({ names: ['a\u{1F600}'], more: false });
    expect(queues.list('a', 100, 'zz')).toEqual({ names: [], more: false });
  });

  it('keeps the order through drops and re-creations between listings', () => {
    const queues = new QueueSet();
    for (let i = 0; i < 3000; i++) queues.obtain(`n${i % 700}`, 0);
    expect(queues.list('', 10_000, undefined).names).toHaveLength(700);
    for (let i = 0; i < 700; i += 2) queues.drop(`n${i}`);
    queues.obtain('n0', 0);
    const listed = queues.list('n', 10_000, undefined).names;
    expect(listed).toHaveLength(351);
    expect(listed).toEqual([...listed].sort());
    expect(listed[0]).toBe('n0');
  });
});

describe.runIf(RUN_TESTS_WITHOUT_NATIVE)('js directory lock', () => {
  it('replaces a lock left by a dead process or a crash mid-write, and refuses a live one', async () => {
    const dir = tempDir();
    const dead = spawnSync(process.execPath, ['-e', '']).pid as number;
    writeFileSync(join(dir, 'LOCK'), `${JSON.stringify({ pid: dead, engine: 'native', createdMs: 1 })}\n`);
    const log = await open(dir);
    expect(JSON.parse(readFileSync(join(dir, 'LOCK'), 'utf8'))).toMatchObject({ pid: process.pid, engine: 'js' });
    await log.close();
    writeFileSync(join(dir, 'LOCK'), '');
    await (await open(dir)).close();
    // pid 1 always exists and belongs to someone else: EPERM or success both mean alive.
    writeFileSync(join(dir, 'LOCK'), `${JSON.stringify({ pid: 1, engine: 'native', createdMs: 1 })}\n`);
    await expect(open(dir)).rejects.toMatchObject({ constructor: LogLockedError, pid: 1 });
  });
});
