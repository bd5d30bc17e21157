/**
 * The package as users run it: the compiled build in dist/, loaded the way `require('litetopic')`
 * loads it. Benchmarks measure this rather than the TypeScript sources run through a transpiler,
 * whose module wrappers add calls to hot paths that the shipped build does not have. Types still come
 * from the sources, so type checking needs no build.
 *
 * The suites run in two places, with the same code: from a source checkout as bench/*.ts through tsx
 * (`npm run bench`), and compiled as dist/bench/*.js (`litetopic bench` from an installed package,
 * where neither tsx nor the sources exist). This file is where the two differ: where dist/ is, how a
 * suite starts one of its child-process scripts, and which peers (devDependencies) can be loaded.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type * as Format from '../ts/cli/format.js';
import type * as Stats from '../ts/cli/stats.js';
import type * as Api from '../ts/index.js';

/** True when running as dist/bench/*.js (compiled), false as bench/*.ts (through tsx). */
export const COMPILED = !__filename.endsWith('.ts');

/** The package root: the repository, or the installed package directory. */
export const PACKAGE_ROOT = COMPILED ? join(__dirname, '..', '..') : join(__dirname, '..');

const DIST = join(PACKAGE_ROOT, 'dist');

/** A module of the compiled build, by its path under dist/ (`'index.js'`, `'broker/key-shared.js'`). */
export function distModule<T>(relative: string): T {
  const file = join(DIST, relative);
  if (!existsSync(file)) {
    throw new Error(`bench: ${file} is missing; run "npm run build" first (npm run bench does it for you)`);
  }
  return require(file) as T;
}

export const lib = distModule<typeof Api>('index.js');

/**
 * The command line's statistics and text formats (ts/cli/stats.ts, ts/cli/format.ts), which the
 * suites share with it: one median, one quantile, one table renderer.
 */
export const stats = distModule<typeof Stats>('cli/stats.js');
export const format = distModule<typeof Format>('cli/format.js');

/**
 * Node arguments that run the suite script `name` (e.g. `'pattern-memory'`) in a child process:
 * the .ts file through tsx in a checkout, the compiled .js file otherwise. Run it with
 * `cwd: PACKAGE_ROOT` (tsx is resolved from there).
 */
export function scriptArgs(name: string): string[] {
  return COMPILED ? [join(__dirname, `${name}.js`)] : ['--import', 'tsx', join(__dirname, `${name}.ts`)];
}

/**
 * Runs a child script's `main` when its file is the one node was started with (`module` is the
 * caller's), printing what it throws and exiting with 1.
 */
export function runIfMain(module: NodeModule, main: () => Promise<void>): void {
  if (require.main !== module) return;
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}

/**
 * The workload seed: `LITETOPIC_BENCH_SEED` (what `litetopic bench --seed n` sets) or the suite's
 * own default, so a published figure names the seed that reproduces it.
 */
export function benchSeed(fallback: number): number {
  const given = process.env.LITETOPIC_BENCH_SEED;
  if (given === undefined || given === '') return fallback;
  const seed = Number(given);
  if (!Number.isSafeInteger(seed) || seed < 0)
    throw new Error(`LITETOPIC_BENCH_SEED must be a non-negative integer (got ${given})`);
  return seed;
}

/** A peer a suite could not load, and why (its rows and the targets against it are left out). */
export interface SkippedPeer {
  peer: string;
  reason: string;
}

const loaded = new Map<string, { module: unknown } | { reason: string }>();
let skipped: SkippedPeer[] = [];

/**
 * A peer the suites compare against (qlobber, mqtt-match, lmdb, better-sqlite3: devDependencies,
 * which an installed litetopic does not bring), or undefined when it cannot be loaded. Then a note is
 * printed and the peer is remembered for the suite's record (`takeSkippedPeers`); the suite leaves
 * out the peer's rows and the targets measured against it.
 */
export function peer<T>(name: string): T | undefined {
  let entry = loaded.get(name);
  if (entry === undefined) {
    try {
      entry = { module: require(name) };
    } catch (error) {
      const message = (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';
      const absent = (error as { code?: string }).code === 'MODULE_NOT_FOUND' && message.includes(`'${name}'`);
      entry = { reason: absent ? 'not installed' : `cannot be loaded (${message})` };
    }
    loaded.set(name, entry);
  }
  if ('module' in entry) return entry.module as T;
  if (!skipped.some((s) => s.peer === name)) {
    skipped.push({ peer: name, reason: entry.reason });
    console.log(`peer ${name} ${entry.reason}: skipped (npm install ${name} beside litetopic to compare with it)`);
  }
  return undefined;
}

/** The peers skipped since the last call (one suite's), for its record. */
export function takeSkippedPeers(): SkippedPeer[] {
  const taken = skipped;
  skipped = [];
  return taken;
}
