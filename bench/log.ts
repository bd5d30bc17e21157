/**
 * The commit-log suite: litetopic's CommitLog on both engines next to lmdb,
 * better-sqlite3 and a plain append file, side by side in one run. 1,000,000 records (100 B and
 * 1 KiB bodies) over 10,000 LMQs, appended in batches of 1,000 without durability, then every LMQ
 * read back while warm; the first 200,000 appended with durability; bytes on disk; memory and native calls per record in fresh
 * processes; reopen time after a SIGKILL with and without checkpoints; and the disk's own speed. The floors the
 * machine sets are measured in the same rounds: the plain append file ('fs append', non-durable and with one
 * fdatasync per batch) under appends, and the copy-plus-checksum read of the native log's own records
 * (bench/log-floor.ts) under the warm read.
 *
 * Each store appends the whole workload once per round into a fresh directory under os.tmpdir(),
 * rounds interleaved with the store order reversed every other round (as bench/measure.ts does for
 * short cases); figures are medians over rounds and ratios are paired by round (`pairedSpeedup`).
 * Every run is checked: the store must hold every record, and a read must return every record and
 * every body byte.
 */

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { EngineName } from '../ts/index.js';
import { benchSeed, PACKAGE_ROOT, scriptArgs, stats } from './lib.js';
import { diskUsage, freeBytes, probeDisk, removeDir, tempDir } from './log-disk.js';
import { floorProgram, readFloor } from './log-floor.js';
import type { FootprintSample } from './log-footprint.js';
import type { LmqScaleSample } from './log-lmqs.js';
import { printLogResult } from './log-print.js';
import { benchRecovery } from './log-recovery.js';
import type { AppendRow, LogBenchConfig, LogBenchResult, ReadFloorRow, ReadRow } from './log-result.js';
import { type AppendShape, installedStores, LMDB_WINDOW, openStore, type StoreName } from './log-stores.js';
import { checkLogTargets } from './log-targets.js';
import { type LogWorkload, makeLogWorkload, prefixOf } from './log-workload.js';
import { fromRounds, type Measurement, pairedSpeedup } from './measure.js';
import { figure } from './table.js';

const { median } = stats;

const SEED = benchSeed(20_250_504);
const MIB = 2 ** 20;
const GIB = 2 ** 30;
/** Space left free beside the recovery log, so the benchmark never fills the disk. */
const FREE_MARGIN_BYTES = 2 * GIB;

export interface LogBenchOptions {
  quick: boolean;
  /** Size of the log the reopen case recovers, MiB (default 2,048; quick 64). */
  recoverMib?: number;
}

function configFor(options: LogBenchOptions): LogBenchConfig {
  const common = {
    seed: SEED,
    lmqs: 10_000,
    batchRecords: 1000,
    bodySizes: [100, 1024],
    callRecords: 100,
    lmdbWindowBatches: LMDB_WINDOW,
    scaleOpenFilesLimit: 20_000,
  };
  const recoverBytes = (options.recoverMib ?? (options.quick ? 64 : 2048)) * MIB;
  return options.quick
    ? {
        ...common,
        quick: true,
        records: 50_000,
        durableRecords: 50_000,
        rounds: 2,
        readPasses: 2,
        inFlightCalls: 10,
        recoverBytes,
        checkpointBytes: 8 * MIB,
        probeBytes: 64 * MIB,
        scaleLmqs: 50_000,
        scaleExtraLmqs: 5_000,
      }
    : {
        ...common,
        quick: false,
        records: 1_000_000,
        durableRecords: 200_000,
        rounds: 3,
        readPasses: 3,
        inFlightCalls: 10,
        recoverBytes,
        checkpointBytes: 64 * MIB,
        probeBytes: 256 * MIB,
        scaleLmqs: 1_000_000,
        scaleExtraLmqs: 100_000,
      };
}

/** Timings of one body size: ns per record per round, by case, and the first round's disk usage. */
interface SizeTimings {
  append: Map<string, number[]>;
  read: Map<string, number[]>;
  usage: Map<string, { apparentBytes: number; allocatedBytes: number }>;
  errors: Map<string, string>;
}

const caseKey = (store: StoreName, durable: boolean) => `${store}|${durable ? 'sync' : 'async'}`;
/** The read floor's key in `SizeTimings.read` and `.errors`. */
const READ_FLOOR = 'read floor';

function push(map: Map<string, number[]>, key: string, value: number): void {
  const list = map.get(key) ?? [];
  list.push(value);
  map.set(key, list);
}

async function runOnce(store: StoreName, work: LogWorkload, shape: AppendShape, passes: number, into: SizeTimings) {
  const key = caseKey(store, shape.durable);
  const records = work.records.length;
  const dir = tempDir(store.replace(/\W+/g, '-'));
  try {
    const opened = await openStore(store, dir, shape.durable);
    const started = performance.now();
    await opened.append(work, shape);
    push(into.append, key, ((performance.now() - started) * 1e6) / records);
    const held = opened.count();
    if (held !== records) throw new Error(`holds ${held} of ${records} records after appending`);
    if (!shape.durable && opened.readAll !== undefined) {
      const passNs: number[] = [];
      for (let pass = 0; pass < passes; pass++) {
        const at = performance.now();
        const tally = opened.readAll(work);
        passNs.push(((performance.now() - at) * 1e6) / records);
        if (tally.records !== records || tally.bytes !== work.payloadBytes) {
          throw new Error(`read back ${tally.records} records, ${tally.bytes} body bytes`);
        }
      }
      push(into.read, store, median(passNs));
    }
    await opened.close();
    if (!into.usage.has(key)) into.usage.set(key, diskUsage(dir));
    if (store === 'litetopic native' && !shape.durable) floorOf(dir, records, into);
  } catch (error) {
    into.errors.set(key, error instanceof Error ? (error.stack ?? error.message) : String(error));
  } finally {
    removeDir(dir);
  }
}

/** The read floor over the native log just closed in `dir`, for the round's pair with its read. */
function floorOf(dir: string, records: number, into: SizeTimings): void {
  if (into.errors.has(READ_FLOOR)) return;
  try {
    const floor = readFloor(dir);
    if (floor.records !== records) throw new Error(`the floor read ${floor.records} of ${records} records`);
    push(into.read, READ_FLOOR, floor.copyChecksumNs);
  } catch (error) {
    into.errors.set(READ_FLOOR, error instanceof Error ? error.message : String(error));
  }
}

async function timeSize(
  bodyBytes: number,
  config: LogBenchConfig,
  stores: readonly StoreName[],
): Promise<{ append: AppendRow[]; read: ReadRow[]; readFloor: ReadFloorRow }> {
  const work = makeLogWorkload(config.records, config.lmqs, bodyBytes, config.seed + bodyBytes);
  const durableWork = prefixOf(work, config.durableRecords);
  const timings: SizeTimings = { append: new Map(), read: new Map(), usage: new Map(), errors: new Map() };
  for (let round = 0; round < config.rounds; round++) {
    const order = round % 2 === 1 ? [...stores].reverse() : stores;
    for (const durable of [false, true]) {
      const shape: AppendShape = { durable, ...config };
      for (const store of order) {
        const key = caseKey(store, durable);
        if (timings.errors.has(key)) continue;
        await runOnce(store, durable ? durableWork : work, shape, config.readPasses, timings);
        const failed = timings.errors.get(key);
        const ns = timings.append.get(key)?.[round] ?? Number.NaN;
        const outcome = failed === undefined ? `${figure(1e9 / ns)} records/s` : `failed: ${failed.split('\n')[0]}`;
        console.log(`  round ${round + 1}/${config.rounds}, ${bodyBytes} B, ${key}: ${outcome}`);
      }
    }
  }
  return {
    append: appendRows(work, durableWork, timings, stores),
    read: readRows(work, timings, stores),
    readFloor: readFloorRow(work, timings),
  };
}

function readFloorRow(work: LogWorkload, t: SizeTimings): ReadFloorRow {
  const nativeKey = caseKey('litetopic native', false);
  const nativeRead = measured(t, t.read, 'litetopic native', nativeKey, 'native read');
  const floor = measured(t, t.read, READ_FLOOR, READ_FLOOR, READ_FLOOR);
  const error = t.errors.get(READ_FLOOR);
  return {
    bodyBytes: work.bodyBytes,
    measurement: floor,
    recordsPerSecond: floor?.opsPerSecond ?? Number.NaN,
    nativeShare: speedup(nativeRead, floor),
    ...(error === undefined ? {} : { error }),
  };
}

/** A case's figures, or null when it failed in any round (its rounds would not pair). */
function measured(t: SizeTimings, map: Map<string, number[]>, key: string, errorKey: string, name: string) {
  const rounds = map.get(key);
  return t.errors.has(errorKey) || rounds === undefined ? null : fromRounds(name, rounds);
}

function speedup(native: Measurement | null, other: Measurement | null): number {
  return native === null || other === null ? Number.NaN : pairedSpeedup(native, other);
}

function appendRows(
  work: LogWorkload,
  durableWork: LogWorkload,
  t: SizeTimings,
  stores: readonly StoreName[],
): AppendRow[] {
  const rows: AppendRow[] = [];
  for (const durable of [false, true]) {
    const ran = durable ? durableWork : work;
    const nativeKey = caseKey('litetopic native', durable);
    const native = measured(t, t.append, nativeKey, nativeKey, 'native');
    for (const store of stores) {
      const key = caseKey(store, durable);
      const m = measured(t, t.append, key, key, store);
      const usage = t.usage.get(key) ?? { apparentBytes: Number.NaN, allocatedBytes: Number.NaN };
      rows.push({
        store,
        bodyBytes: work.bodyBytes,
        durable,
        records: ran.records.length,
        measurement: m,
        recordsPerSecond: m?.opsPerSecond ?? Number.NaN,
        payloadBytesPerSecond: (m?.opsPerSecond ?? Number.NaN) * work.bodyBytes,
        nativeSpeedup: speedup(native, m),
        ...usage,
        payloadBytes: ran.payloadBytes,
        ...(t.errors.has(key) ? { error: t.errors.get(key) } : {}),
      });
    }
  }
  return rows;
}

function readRows(work: LogWorkload, t: SizeTimings, stores: readonly StoreName[]): ReadRow[] {
  const nativeKey = caseKey('litetopic native', false);
  const nativeRead = measured(t, t.read, 'litetopic native', nativeKey, 'native read');
  return stores
    .filter((s) => s !== 'fs append')
    .map((store) => {
      const m = measured(t, t.read, store, caseKey(store, false), `${store} read`);
      const error = t.errors.get(caseKey(store, false));
      return {
        store,
        bodyBytes: work.bodyBytes,
        measurement: m,
        recordsPerSecond: m?.opsPerSecond ?? Number.NaN,
        nativeSpeedup: speedup(nativeRead, m),
        ...(error === undefined ? {} : { error }),
      };
    });
}

const run = promisify(execFile);

/** The JSON line a bench child prints, or the first error line of its stderr. */
async function childJson<T>(file: string, args: readonly string[]): Promise<T | { error: string }> {
  try {
    const { stdout } = await run(file, args, { cwd: PACKAGE_ROOT, maxBuffer: 1 << 20 });
    return JSON.parse(stdout) as T;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? '';
    return {
      error: (
        stderr
          .trim()
          .split('\n')
          .find((l) => l.includes('Error')) ?? String(error)
      ).slice(0, 300),
    };
  }
}

async function footprintOf(store: StoreName, config: LogBenchConfig): Promise<LogBenchResult['footprint'][number]> {
  const args = [
    '--expose-gc',
    ...scriptArgs('log-footprint'),
    store,
    String(config.records),
    String(config.lmqs),
    '100',
    String(SEED),
  ];
  const sample = await childJson<FootprintSample>(process.execPath, args);
  return 'error' in sample ? { store, error: sample.error } : sample;
}

/** Records the many-LMQ probe adds to each of its first LMQs. */
const SCALE_EXTRA_PER_LMQ = 9;

/**
 * The many-LMQ probe for one engine, in a fresh process. On Linux a shell lowers its descriptor
 * limit to `scaleOpenFilesLimit` first (lowering needs no privilege); the child reports the limit it saw.
 */
async function lmqScaleOf(
  engine: EngineName,
  config: LogBenchConfig,
): Promise<NonNullable<LogBenchResult['lmqScale']>[number]> {
  const node = [
    process.execPath,
    '--expose-gc',
    ...scriptArgs('log-lmqs'),
    engine,
    String(config.scaleLmqs),
    String(config.scaleExtraLmqs),
    String(SCALE_EXTRA_PER_LMQ),
  ];
  const sample =
    process.platform === 'linux'
      ? await childJson<LmqScaleSample>('/bin/sh', [
          '-c',
          `ulimit -n ${config.scaleOpenFilesLimit} && exec "$@"`,
          'sh',
          ...node,
        ])
      : await childJson<LmqScaleSample>(process.execPath, node.slice(1));
  return 'error' in sample ? { engine, error: sample.error } : sample;
}

/** The recovery log's size: as asked if the disk has room, else the largest power of two that fits. */
function fitRecovery(config: LogBenchConfig, free: number): LogBenchConfig {
  const room = free - FREE_MARGIN_BYTES;
  if (config.recoverBytes <= room) return config;
  let bytes = 64 * MIB;
  while (bytes * 2 <= room) bytes *= 2;
  const note = `asked for ${config.recoverBytes / MIB} MiB, but ${(free / GIB).toFixed(1)} GiB is free under os.tmpdir()`;
  return { ...config, recoverBytes: bytes, recoverNote: note };
}

/** Runs the log suite, prints its tables and returns the figures. */
export async function runLogBench(options: LogBenchOptions): Promise<LogBenchResult> {
  const free = freeBytes();
  const config = fitRecovery(configFor(options), free);
  console.log(
    `\n# log${config.quick ? ' (quick)' : ''}: seed ${SEED}, ${config.records.toLocaleString('en-US')} records over ` +
      `${config.lmqs.toLocaleString('en-US')} LMQs, bodies ${config.bodySizes.join(' B and ')} B, ${config.rounds} interleaved rounds`,
  );
  if (config.recoverNote)
    console.log(`recovery log scaled down to ${config.recoverBytes / MIB} MiB: ${config.recoverNote}`);
  const stores = installedStores();
  const disk = { ...probeDisk(config.probeBytes), freeBytes: free };
  printLogResult({ config, disk });
  const append: AppendRow[] = [];
  const read: ReadRow[] = [];
  const readFloor: ReadFloorRow[] = [];
  const floorBuild = stores.includes('litetopic native') ? floorProgram() : undefined;
  if (floorBuild !== undefined && 'why' in floorBuild) console.log(`read floor left out: ${floorBuild.why}`);
  for (const bodyBytes of config.bodySizes) {
    const rows = await timeSize(bodyBytes, config, stores);
    append.push(...rows.append);
    read.push(...rows.read);
    readFloor.push(rows.readFloor);
  }
  printLogResult({ config, append, read, readFloor });
  const footprint: LogBenchResult['footprint'] = [];
  for (const store of stores.filter((s) => s !== 'fs append')) footprint.push(await footprintOf(store, config));
  printLogResult({ config, footprint });
  const lmqScale: NonNullable<LogBenchResult['lmqScale']> = [];
  const engines: EngineName[] = stores.includes('litetopic native') ? ['native', 'js'] : ['js'];
  for (const engine of engines) lmqScale.push(await lmqScaleOf(engine, config));
  printLogResult({ config, lmqScale });
  const recovery = await benchRecovery(config.recoverBytes, config.checkpointBytes, SEED);
  printLogResult({ config, recovery });
  const partial = { config, disk, append, read, readFloor, footprint, lmqScale, recovery };
  const targets = checkLogTargets(partial);
  printLogResult({ config, targets });
  return { ...partial, targets };
}
