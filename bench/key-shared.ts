/**
 * The key-shared suite: one hot lite topic of 10,000 keys consumed by a
 * key-shared group as clients join, 1 → 2 → 4 → 8, each "processing" a message for a fixed 1 ms.
 * Both engines, the in-memory store (the hot path is the broker's dispatch, not the disk), system
 * timers and the real clock; see key-shared-run.ts for the run and its checks.
 *
 * 1. Throughput per phase: acks per second over `phaseMs`, after the phase's last join and a settle;
 *    the bar is at least 3.5× from 1 to 4 clients, with I1 and I2 held over every delivery.
 * 2. Join pause: for every bucket a join moves, join → its first delivery to its new owner (p50, p99
 *    over every moved bucket of every round); the same for the buckets it did not move, as a baseline.
 *
 * Rounds alternate the engines, reversed every other round; rates are medians over rounds.
 */

import type { EngineName } from '../ts/index.js';
import { printKeySharedResult } from './key-shared-print.js';
import {
  type EngineRuns,
  type JoinFigures,
  type KeySharedBenchConfig,
  type KeySharedBenchResult,
  type KeySharedRunResult,
  type PauseRow,
  type PhaseFigures,
  type PhaseRow,
  TIMERS_ONLY,
} from './key-shared-result.js';
import { runKeyShared, runTimersOnly } from './key-shared-run.js';
import { checkKeySharedTargets } from './key-shared-targets.js';
import { benchSeed, stats } from './lib.js';

const { median, quantiles, spreadPercent } = stats;

const ENGINES: readonly EngineName[] = ['native', 'js'];

function configFor(quick: boolean): KeySharedBenchConfig {
  const common = {
    keys: 10_000,
    buckets: 64,
    phases: [1, 2, 4, 8],
    processMs: 1,
    popMax: 16,
    waitMs: 1000,
    invisibleTimeMs: 60_000,
    settleMs: 300,
    joinGapMs: 150,
    backlog: 4000,
    sendBatch: 500,
    seed: benchSeed(20_250_507),
  };
  return quick
    ? { ...common, quick, phaseMs: 2500, controlMs: 1000, rounds: 1 }
    : { ...common, quick, phaseMs: 5000, controlMs: 2000, rounds: 3 };
}

const errorText = (error: unknown) => (error instanceof Error ? (error.stack ?? error.message) : String(error));

function phaseRows(
  engine: PhaseRow['engine'],
  config: KeySharedBenchConfig,
  runs: readonly Pick<KeySharedRunResult, 'phases'>[],
): PhaseRow[] {
  return config.phases.map((clients, i) => {
    const of = runs.map((r) => r.phases[i]).filter((p) => p !== undefined);
    const rates = of.map((p) => p.messagesPerSecond);
    const rate = median(rates);
    return {
      engine,
      clients,
      messagesPerSecond: rate,
      speedup: median(
        runs.map(
          (r) => (r.phases[i]?.messagesPerSecond ?? Number.NaN) / (r.phases[0]?.messagesPerSecond ?? Number.NaN),
        ),
      ),
      timerMs: median(of.map((p) => p.timerMs)),
      efficiency: median(of.map((p) => p.efficiency)),
      emptyPops: median(of.map((p) => p.emptyPops)),
      minReady: Math.min(...of.map((p) => p.minReady)),
      cpuShare: median(of.map((p) => p.cpuShare)),
      spreadPercent: spreadPercent(rates),
      roundRates: rates,
    };
  });
}

function pauseRow(engine: EngineName, join: string, joins: readonly JoinFigures[]): PauseRow {
  const [p50Ms, p99Ms, maxMs] = quantiles(
    joins.flatMap((j) => j.pausesMs),
    [0.5, 0.99, 1],
  ) as [number, number, number];
  const [keptP50Ms, keptP99Ms] = quantiles(
    joins.flatMap((j) => j.keptMs),
    [0.5, 0.99],
  ) as [number, number];
  const sum = (pick: (j: JoinFigures) => number) => joins.reduce((n, j) => n + pick(j), 0);
  return {
    engine,
    join,
    joins: joins.length,
    moved: sum((j) => j.moved),
    withheld: sum((j) => j.withheld),
    p50Ms,
    p99Ms,
    maxMs,
    unresolved: sum((j) => j.unresolved),
    keptP50Ms,
    keptP99Ms,
  };
}

function pauseRows(engine: EngineName, runs: readonly KeySharedRunResult[]): PauseRow[] {
  const joins = runs.flatMap((r) => r.joins);
  const sizes = [...new Set(joins.map((j) => j.from))].sort((a, b) => a - b);
  return [
    ...sizes.map((from) =>
      pauseRow(
        engine,
        `${from} → ${from + 1}`,
        joins.filter((j) => j.from === from),
      ),
    ),
    pauseRow(engine, 'all', joins),
  ];
}

/** Runs the key-shared suite, prints its tables and returns the figures. */
export async function runKeySharedBench(options: { quick: boolean }): Promise<KeySharedBenchResult> {
  const config = configFor(options.quick);
  console.log(
    `\n# key-shared${config.quick ? ' (quick)' : ''}: one lite topic, ${config.keys.toLocaleString('en-US')} keys, ` +
      `${config.buckets} buckets, clients ${config.phases.join(' → ')}, ${config.processMs} ms per message, ` +
      `${config.phaseMs / 1000} s per phase, ${config.rounds} round${config.rounds === 1 ? '' : 's'}, in-memory store`,
  );
  const results = new Map<EngineName, KeySharedRunResult[]>();
  const controls: { phases: PhaseFigures[] }[] = [];
  const errors = new Map<EngineName, string>();
  for (let round = 0; round < config.rounds; round++) {
    const control: PhaseFigures[] = [];
    for (const clients of config.phases) control.push(await runTimersOnly(clients, config.controlMs, config.processMs));
    controls.push({ phases: control });
    console.log(
      `  round ${round + 1}/${config.rounds}, ${TIMERS_ONLY} (no broker): ` +
        control.map((p) => `${p.clients} → ${Math.round(p.messagesPerSecond).toLocaleString('en-US')}/s`).join(', '),
    );
    for (const engine of round % 2 === 1 ? [...ENGINES].reverse() : ENGINES) {
      if (errors.has(engine)) continue;
      try {
        const result = await runKeyShared(engine, config, (line) =>
          console.log(`  round ${round + 1}/${config.rounds}, ${line}`),
        );
        results.set(engine, [...(results.get(engine) ?? []), result]);
        const v = result.violations;
        if (v.first.length > 0) console.log(`  !! ${engine}: invariant violated: ${v.first.join('; ')}`);
      } catch (error) {
        errors.set(engine, errorText(error));
        console.log(`  round ${round + 1}/${config.rounds}, ${engine}: failed: ${errorText(error).split('\n')[0]}`);
      }
    }
  }
  const phases: PhaseRow[] = [];
  const pauses: PauseRow[] = [];
  const runs: EngineRuns[] = [];
  phases.push(...phaseRows(TIMERS_ONLY, config, controls));
  for (const engine of ENGINES) {
    const of = results.get(engine) ?? [];
    phases.push(...phaseRows(engine, config, of));
    pauses.push(...pauseRows(engine, of));
    const sum = (pick: (v: KeySharedRunResult['violations']) => number) =>
      of.reduce((n, r) => n + pick(r.violations), 0);
    const error = errors.get(engine);
    runs.push({
      engine,
      deliveries: of.reduce((n, r) => n + r.deliveries, 0),
      sent: of.reduce((n, r) => n + r.sent, 0),
      violations: {
        i1Key: sum((v) => v.i1Key),
        i1Bucket: sum((v) => v.i1Bucket),
        i2: sum((v) => v.i2),
        duplicates: sum((v) => v.duplicates),
        redeliveries: sum((v) => v.redeliveries),
        first: of.flatMap((r) => r.violations.first).slice(0, 5),
      },
      ...(error === undefined ? {} : { error }),
    });
  }
  const targets = checkKeySharedTargets(phases, runs);
  const result: KeySharedBenchResult = { config, phases, pauses, runs, targets };
  printKeySharedResult(result);
  const failed = targets.filter((t) => t.pass !== true).map((t) => t.name);
  console.log(failed.length === 0 ? '\nkey-shared: PASS' : `\nkey-shared: FAIL (${failed.join('; ')})`);
  return result;
}
