/**
 * The package as users run it: the compiled build in dist/, loaded the way `require('litetopic')`
 * loads it. Benchmarks measure this rather than the TypeScript sources run through a transpiler,
 * whose module wrappers add calls to hot paths that the shipped build does not have. Types still come
 * from the sources, so type checking needs no build.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type * as Api from '../ts/index.js';

const entry = join(__dirname, '..', 'dist', 'index.js');
if (!existsSync(entry)) {
  throw new Error(`bench: ${entry} is missing; run "npm run build" first (npm run bench does it for you)`);
}

export const lib = createRequire(__filename)(entry) as typeof Api;

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
