/**
 * What holding a log costs a process, child side: appends the workload to one store in a fresh
 * process, reads every LMQ back, and prints one JSON line with the memory growth and, for the
 * native engine, how many times each binding function was called per record. Run by `runLogBench`:
 *   node --expose-gc --import tsx bench/log-footprint.ts <store> <records> <lmqs> <bodyBytes> <seed>
 * (compiled: node --expose-gc dist/bench/log-footprint.js ...; ./lib.ts `scriptArgs`)
 *
 * Crossings are counted by wrapping every function of the native binding as the loader receives it:
 * ts/engine/load.ts loads the addon with `process.dlopen`, so wrapping `process.dlopen` here, before
 * the first native call, sees the binding object without any hook in the package itself. The
 * wrappers cost time, which is why this runs apart from the timed cases.
 */
import { readFileSync } from 'node:fs';
import { runIfMain } from './lib.js';
import { removeDir, tempDir } from './log-disk.js';
import { type AppendShape, openStore, STORES, type StoreName } from './log-stores.js';
import { makeLogWorkload } from './log-workload.js';
import { collectedMemory } from './measure.js';

export interface FootprintSample {
  store: StoreName;
  records: number;
  bodyBytes: number;
  /** Deltas over a baseline taken after the workload was built, after global.gc(). */
  rssBytes: number;
  /** Anonymous and file-backed parts of the RSS growth (/proc/self/status; mapped log pages are file-backed). */
  rssAnonBytes: number | null;
  rssFileBytes: number | null;
  heapUsedBytes: number;
  externalBytes: number;
  /** `stats().indexBytes` for litetopic: the index's own estimate. */
  indexBytes: number | null;
  /** Native binding calls per phase (null when not counted). */
  crossings: {
    append: number;
    read: number;
    appendByFunction: Record<string, number>;
    readByFunction: Record<string, number>;
  } | null;
}

const counts = new Map<string, number>();
let counting = false;

function counted<F extends (...args: never[]) => unknown>(name: string, fn: F): F {
  return new Proxy(fn, {
    apply(target, self, args) {
      if (counting) counts.set(name, (counts.get(name) ?? 0) + 1);
      return Reflect.apply(target, self, args);
    },
    construct(target, args) {
      if (counting) counts.set(name, (counts.get(name) ?? 0) + 1);
      return Reflect.construct(target, args);
    },
  });
}

/** Wraps every function (and class method) of each addon loaded from now on. */
function countNativeCalls(): void {
  const dlopen = process.dlopen;
  process.dlopen = (module: { exports: Record<string, unknown> }, filename: string, flags?: number) => {
    // dlopen rejects an explicit undefined mode, so the argument is passed only when given.
    if (flags === undefined) dlopen(module, filename);
    else dlopen(module, filename, flags);
    for (const [name, value] of Object.entries(module.exports)) {
      if (typeof value !== 'function') continue;
      const prototype = (value as { prototype?: Record<string, unknown> }).prototype;
      if (prototype !== undefined) {
        for (const method of Object.getOwnPropertyNames(prototype)) {
          const member = Object.getOwnPropertyDescriptor(prototype, method)?.value;
          if (method !== 'constructor' && typeof member === 'function') {
            prototype[method] = counted(`${name}.${method}`, member as (...args: never[]) => unknown);
          }
        }
      }
      module.exports[name] = counted(name, value as (...args: never[]) => unknown);
    }
  };
}

function total(): number {
  let sum = 0;
  for (const n of counts.values()) sum += n;
  return sum;
}

/** RssAnon and RssFile in bytes, where /proc says (Linux). */
function rssParts(): { anon: number; file: number } | null {
  try {
    const status = readFileSync('/proc/self/status', 'utf8');
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { anon: kib('RssAnon') * 1024, file: kib('RssFile') * 1024 };
  } catch {
    return null;
  }
}

async function sample(store: StoreName, records: number, lmqs: number, bodyBytes: number, seed: number) {
  const native = store === 'litetopic native';
  if (native) countNativeCalls();
  const work = makeLogWorkload(records, lmqs, bodyBytes, seed);
  const shape: AppendShape = { durable: false, batchRecords: 1000, callRecords: 1000, inFlightCalls: 1 };
  // Load the store's code (and the native addon) before the baseline.
  const warmDir = tempDir('footprint-warm');
  try {
    await (await openStore(store, warmDir, false)).close();
  } finally {
    removeDir(warmDir);
  }
  const dir = tempDir('footprint');
  try {
    const before = collectedMemory();
    const beforeParts = rssParts();
    const opened = await openStore(store, dir, false);
    counts.clear();
    counting = native;
    await opened.append(work, shape);
    const append = total();
    const appendByFunction = Object.fromEntries(counts);
    counts.clear();
    const tally = opened.readAll?.(work);
    const read = total();
    counting = false;
    if (tally !== undefined && tally.records !== records) throw new Error(`${store}: read ${tally.records} records`);
    const readByFunction = Object.fromEntries(counts);
    const after = collectedMemory();
    const afterParts = rssParts();
    const result: FootprintSample = {
      store,
      records,
      bodyBytes,
      rssBytes: after.rss - before.rss,
      rssAnonBytes: beforeParts && afterParts ? afterParts.anon - beforeParts.anon : null,
      rssFileBytes: beforeParts && afterParts ? afterParts.file - beforeParts.file : null,
      heapUsedBytes: after.heapUsed - before.heapUsed,
      externalBytes: after.external - before.external,
      indexBytes: opened.indexBytes?.() ?? null,
      crossings: native ? { append, read, appendByFunction, readByFunction } : null,
    };
    if (opened.count() !== records) throw new Error(`${store}: holds ${opened.count()} records`);
    await opened.close();
    return result;
  } finally {
    removeDir(dir);
  }
}

async function main(argv: readonly string[]): Promise<void> {
  const [store, ...rest] = argv;
  const numbers = rest.map(Number);
  if (!STORES.includes(store as StoreName) || numbers.length !== 4 || !numbers.every(Number.isSafeInteger)) {
    throw new Error(`usage: log-footprint.ts <store> <records> <lmqs> <bodyBytes> <seed> (got ${argv.join(' ')})`);
  }
  const [records, lmqs, bodyBytes, seed] = numbers as [number, number, number, number];
  process.stdout.write(`${JSON.stringify(await sample(store as StoreName, records, lmqs, bodyBytes, seed))}\n`);
}

runIfMain(module, () => main(process.argv.slice(2)));
