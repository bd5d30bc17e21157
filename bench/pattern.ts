/**
 * The pattern benchmark suite: single compiled match, reverse lookup, index memory and the cost of
 * crossing into native code, each with its peers side by side, and the targets (pattern-targets.ts)
 * checked against the figures of this very run.
 */

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { benchSeed, PACKAGE_ROOT, peer, scriptArgs, stats } from './lib.js';
import { benchCrossing } from './pattern-crossing.js';
import { printPatternResult } from './pattern-print.js';
import type { MemorySample, PatternBenchConfig, PatternBenchResult, ReverseRow } from './pattern-result.js';
import { benchReverse, DISTINCT_NAME_SUBSCRIPTIONS } from './pattern-reverse.js';
import { benchSingleMatch } from './pattern-single.js';
import { checkPatternTargets } from './pattern-targets.js';

const { median } = stats;

const SEED = benchSeed(20_250_501);

function configFor(quick: boolean): PatternBenchConfig {
  return quick
    ? {
        quick,
        seed: SEED,
        timing: { timeMs: 150, warmupMs: 60, iterations: 3, rounds: 3 },
        reverseSizes: [10_000],
        topicsPerIteration: 2048,
        memoryPatterns: 10_000,
        memoryRuns: 1,
      }
    : {
        quick,
        seed: SEED,
        timing: { timeMs: 2000, warmupMs: 300, iterations: 3, rounds: 5 },
        reverseSizes: [10_000, 100_000],
        topicsPerIteration: 4096,
        memoryPatterns: 100_000,
        memoryRuns: 5,
      };
}

const run = promisify(execFile);

/** Builds one index in a fresh `node --expose-gc` process (see ./pattern-memory.ts). */
async function memoryOnce(kind: MemorySample['kind'], patterns: number, seed: number): Promise<MemorySample> {
  const args = ['--expose-gc', ...scriptArgs('pattern-memory'), kind, String(patterns), String(seed)];
  const { stdout } = await run(process.execPath, args, { cwd: PACKAGE_ROOT, maxBuffer: 1 << 20 });
  const line = stdout.trim().split('\n').pop() ?? '';
  return JSON.parse(line) as MemorySample;
}

/**
 * The median of `runs` fresh processes, figure by figure: rss after a GC still counts pages V8
 * keeps committed, so one process alone can be off by a few MiB either way.
 */
async function measureIndexMemory(kind: MemorySample['kind'], config: PatternBenchConfig): Promise<MemorySample> {
  const samples: MemorySample[] = [];
  for (let i = 0; i < config.memoryRuns; i++) samples.push(await memoryOnce(kind, config.memoryPatterns, config.seed));
  const first = samples[0] as MemorySample;
  const of = (pick: (s: MemorySample) => number) => median(samples.map(pick));
  return {
    ...first,
    heapUsedBytes: of((s) => s.heapUsedBytes),
    rssBytes: of((s) => s.rssBytes),
    externalBytes: of((s) => s.externalBytes),
    buildMs: of((s) => s.buildMs),
  };
}

export async function runPatternBench(opts: { quick: boolean }): Promise<PatternBenchResult> {
  const config = configFor(opts.quick);
  const { seed, timing } = config;
  console.log(
    `\n# pattern${config.quick ? ' (quick)' : ''}: seed ${seed}, ${timing.timeMs} ms per case in ${timing.rounds} interleaved rounds`,
  );
  const singleMatch = await benchSingleMatch(seed, timing);
  printPatternResult({ singleMatch });
  const reverse: ReverseRow[] = [];
  for (const size of config.reverseSizes) {
    reverse.push(...(await benchReverse(size, config.topicsPerIteration, seed, timing)));
  }
  const distinct = config.quick ? DISTINCT_NAME_SUBSCRIPTIONS / 10 : DISTINCT_NAME_SUBSCRIPTIONS;
  reverse.push(...(await benchReverse(distinct, config.topicsPerIteration, seed, timing, 'distinct names')));
  printPatternResult({ reverse });
  const memory: MemorySample[] = [];
  const kinds = peer('qlobber') === undefined ? (['native', 'js'] as const) : (['native', 'js', 'qlobber'] as const);
  for (const kind of kinds) memory.push(await measureIndexMemory(kind, config));
  printPatternResult({ memory });
  const crossing = await benchCrossing(10_000, seed, timing);
  printPatternResult({ crossing });
  const partial = { config, singleMatch, reverse, memory, crossing };
  const targets = checkPatternTargets(partial);
  printPatternResult({ targets });
  return { ...partial, targets };
}
