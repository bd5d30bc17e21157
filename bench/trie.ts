/**
 * The topic-name trie suite: build time and memory for 1M names per engine (in fresh processes),
 * expand of five patterns against a linear scan with a compiled matcher, the 1,000 names × 5
 * patterns shape the RocketMQ design measured, idleSince over 1M names with 1% idle next to the
 * same idle count among 10× fewer names, and the trie on a live broker (./trie-churn.ts): rounds of
 * added and removed names between expands. Targets: ./trie-targets.ts.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { TopicTrie } from '../ts/index.js';
import { benchSeed, lib, PACKAGE_ROOT, scriptArgs } from './lib.js';
import { type Case, type Measurement, measure, pairedSpeedup, type Timing } from './measure.js';
import { benchChurn } from './trie-churn.js';
import { distinctNames } from './trie-memory.js';
import { printTrieResult } from './trie-print.js';
import type { ExpandRow, TrieBenchConfig, TrieBenchResult, TrieMemorySample } from './trie-result.js';
import { checkTrieTargets } from './trie-targets.js';

const SEED = benchSeed(20_250_501);
const ENGINES = ['native', 'js'] as const;
/** The idle cutoff of the idleSince case, ms: idle names are older, active ones newer. */
const CUTOFF_MS = 1_000_000_000;
/**
 * The sample tenant of the expand patterns: rank 7 of 500 under Zipf 1.1, about 2% of the names (an
 * ordinary busy tenant). The hottest tenant, about 15% of all names, gets a row of its own.
 */
const SAMPLE_TENANT = 'tenant7';

const run = promisify(execFile);

async function memoryOnce(kind: 'native' | 'js', names: number): Promise<TrieMemorySample> {
  const args = ['--expose-gc', ...scriptArgs('trie-memory'), kind, String(names), String(SEED)];
  const { stdout } = await run(process.execPath, args, { cwd: PACKAGE_ROOT, maxBuffer: 1 << 20 });
  return JSON.parse(stdout) as TrieMemorySample;
}

function buildTries(names: readonly string[], timestamp: (i: number) => number = (i) => i): TopicTrie[] {
  return ENGINES.map((engine) => {
    const trie = new lib.TopicTrie({ engine });
    for (let i = 0; i < names.length; i++) trie.add(names[i] as string, timestamp(i));
    return trie;
  });
}

/** From one exact name to a whole tenant to leading wildcards, all drawn from a stored name. */
function fivePatterns(sample: string): string[] {
  const [tenant, agent, session] = sample.split('__');
  return [sample, `${tenant}__${agent}__${session}__*`, `${tenant}__${agent}__**`, `${tenant}__**`, '*__*__*__code'];
}

/** A stored name of at least four segments under `tenant`'s hottest agent. */
function sampleName(names: readonly string[], tenant: string): string {
  const found = names.find((n) => n.startsWith(`${tenant}__agent0__`) && n.split('__').length >= 4);
  return found ?? (names[0] as string);
}

async function benchExpand(names: readonly string[], timing: Timing): Promise<ExpandRow[]> {
  const tries = buildTries(names);
  const rows: ExpandRow[] = [];
  const five = fivePatterns(sampleName(names, SAMPLE_TENANT));
  // The first four are selective (one name, session, agent, tenant); the leading wildcard is not.
  const selective = new Set(five.slice(0, 4));
  const patterns = [...five, 'tenant0__**'];
  // A count walks down one node and lays nothing out (docs/TRIE.md); it warms the walk's code.
  for (const trie of tries) trie.count('**');
  for (const pattern of patterns) {
    const matcher = lib.compilePattern(pattern, { engine: 'js' });
    const expected = names.filter((n) => matcher.matches(n)).length;
    const [nativeFirstNs, jsFirstNs] = tries.map((trie) => {
      const started = process.hrtime.bigint();
      const found = trie.expand(pattern).length;
      const ns = Number(process.hrtime.bigint() - started);
      if (found !== expected) throw new Error(`${trie.engine} expand ${pattern}: ${found} names, expected ${expected}`);
      return ns;
    }) as [number, number];
    const ids = new Uint32Array(Math.max(1, expected));
    const cases: Case[] = [
      ...tries.map((trie) => ({
        name: `${trie.engine} expand`,
        operations: 1,
        run: () => trie.expand(pattern).length,
        expected,
      })),
      ...tries.map((trie) => ({
        name: `${trie.engine} expandIds`,
        operations: 1,
        run: () => trie.expandIds(pattern, ids),
        expected,
      })),
      {
        name: 'linear scan',
        operations: 1,
        run: () => {
          let hits = 0;
          for (let i = 0; i < names.length; i++) if (matcher.matches(names[i] as string)) hits++;
          return hits;
        },
        expected,
      },
    ];
    const measured = await measure(cases, timing);
    const [native, js, nativeIds, jsIds, scan] = measured as [
      Measurement,
      Measurement,
      Measurement,
      Measurement,
      Measurement,
    ];
    rows.push({
      pattern,
      matched: expected,
      nativeNs: native.medianNs,
      jsNs: js.medianNs,
      nativeFirstNs,
      jsFirstNs,
      nativeIdsNs: nativeIds.medianNs,
      jsIdsNs: jsIds.medianNs,
      scanNs: scan.medianNs,
      nativeSpeedup: pairedSpeedup(native, scan),
      jsSpeedup: pairedSpeedup(js, scan),
      nativeOverJsSpeedup: pairedSpeedup(native, js),
      selective: selective.has(pattern),
    });
  }
  return rows;
}

/** 1,000 stored names, the five patterns expanded once each per iteration. */
async function benchSmallShape(timing: Timing): Promise<Measurement[]> {
  const names = distinctNames(1000, SEED + 1);
  const tries = buildTries(names);
  const patterns = fivePatterns(names.find((n) => n.split('__').length >= 4) as string);
  const expected = patterns.reduce((sum, p) => sum + (tries[1] as TopicTrie).count(p), 0);
  const cases: Case[] = tries.flatMap((trie) => [
    {
      name: `${trie.engine} expand (names)`,
      operations: 1,
      run: () => patterns.reduce((sum, p) => sum + trie.expand(p).length, 0),
      expected,
    },
    {
      name: `${trie.engine} expandIds (reused array)`,
      operations: 1,
      run: () => {
        const out = new Uint32Array(1024);
        return patterns.reduce((sum, p) => sum + trie.expandIds(p, out), 0);
      },
      expected,
    },
  ]);
  return measure(cases, timing);
}

/**
 * idleSince with 1% of `total` names idle (old timestamps) and the rest active, next to the same
 * number of idle names among 10× fewer: the two should cost the same.
 */
async function benchIdle(total: number, idle: number, timing: Timing): Promise<Measurement[]> {
  const names = distinctNames(total, SEED + 2);
  const cases: Case[] = [];
  for (const count of [total, total / 10]) {
    const stride = Math.round(count / idle);
    // Every `stride`-th name is idle (timestamps below the cutoff), the others active after it.
    const idleAt = (i: number) => (i % stride === 0 ? i / stride : CUTOFF_MS + i);
    for (const trie of buildTries(names.slice(0, count), idleAt)) {
      cases.push({
        name: `${trie.engine} idleSince, ${idle} idle of ${count}`,
        operations: 1,
        run: () => trie.idleSince(CUTOFF_MS).length,
        expected: idle,
      });
    }
  }
  return measure(cases, timing);
}

/** Runs the trie suite, prints its tables and returns the figures. */
export async function runTrieBench(opts: { quick: boolean }): Promise<TrieBenchResult> {
  const config: TrieBenchConfig = opts.quick
    ? { quick: true, seed: SEED, names: 100_000, timing: { timeMs: 150, warmupMs: 60, iterations: 3, rounds: 3 } }
    : {
        quick: false,
        seed: SEED,
        names: 1_000_000,
        timing: { timeMs: 1500, warmupMs: 200, iterations: 3, rounds: 5 },
      };
  const { timing } = config;
  console.log(
    `\n# trie${config.quick ? ' (quick)' : ''}: seed ${SEED}, ${config.names.toLocaleString('en-US')} names, ` +
      `${timing.timeMs} ms per case in ${timing.rounds} interleaved rounds`,
  );
  const memory: TrieMemorySample[] = [];
  for (const kind of ENGINES) memory.push(await memoryOnce(kind, config.names));
  printTrieResult({ config, memory });
  const names = distinctNames(config.names, SEED);
  const expand = await benchExpand(names, timing);
  printTrieResult({ expand });
  const smallShape = await benchSmallShape(timing);
  printTrieResult({ smallShape });
  const idle = await benchIdle(config.names, config.names / 100, timing);
  printTrieResult({ idle });
  const churn = benchChurn(config.names, config.quick ? 5 : 20, SEED + 3);
  printTrieResult({ churn });
  const partial = { config, memory, expand, smallShape, idle, churn };
  const targets = checkTrieTargets(partial);
  printTrieResult({ targets });
  return { ...partial, targets };
}
