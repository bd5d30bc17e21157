/**
 * The key-shared suite (issue 7, "Figures"): one hot lite topic of 10,000 keys consumed by a
 * key-shared group as clients join, 1 → 2 → 4 → 8, each "processing" a message for a fixed 1 ms.
 * Both engines, the in-memory store (the hot path is the broker's dispatch, not the disk), system
 * timers and the real clock; see keyshared-run.ts for the run and its checks.
 *
 * 1. Throughput per phase: acks per second over `phaseMs`, after the phase's last join and a settle;
 *    the bar is at least 3.5× from 1 to 4 clients, with I1 and I2 held over every delivery.
 * 2. Join pause: for every bucket a join moves, join → its first delivery to its new owner (p50, p99
 *    over every moved bucket of every round); the same for the buckets it did not move, as a baseline.
 *
 * Rounds alternate the engines, reversed every other round; rates are medians over rounds.
 */

import type { EngineName } from '../ts/index.js';
import { quantile } from './broker-tally.js';
import { printKeySharedResult } from './keyshared-print.js';
import {
  type JoinFigures,
  type KeySharedRunConfig,
  type KeySharedRunResult,
  type PhaseFigures,
  runKeyShared,
  runTimersOnly,
} from './keyshared-run.js';
import { benchSeed } from './lib.js';
import type { LogTarget } from './log-targets.js';
import { median } from './measure.js';

const ENGINES: readonly EngineName[] = ['native', 'js'];
/** The row of the harness alone (no broker): the ceiling. */
export const TIMERS_ONLY = 'timers only';
/** Issue 7: throughput with 4 clients at least this many times that with 1. */
export const SCALE_BAR = 3.5;

export interface KeySharedBenchConfig extends KeySharedRunConfig {
  quick: boolean;
  rounds: number;
  /** Length of each phase of the harness-alone control, ms. */
  controlMs: number;
}

export interface PhaseRow {
  engine: EngineName | typeof TIMERS_ONLY;
  clients: number;
  messagesPerSecond: number;
  /** Median over rounds of this phase's rate ÷ the 1-client rate of the same round. */
  speedup: number;
  timerMs: number;
  efficiency: number;
  emptyPops: number;
  minReady: number;
  cpuShare: number;
  spreadPercent: number;
  roundRates: number[];
}

export interface PauseRow {
  engine: EngineName;
  /** Clients before → after, or "all". */
  join: string;
  joins: number;
  moved: number;
  withheld: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  unresolved: number;
  keptP50Ms: number;
  keptP99Ms: number;
}

export interface EngineRuns {
  engine: EngineName;
  deliveries: number;
  sent: number;
  violations: KeySharedRunResult['violations'];
  error?: string;
}

export interface KeySharedBenchResult {
  config: KeySharedBenchConfig;
  phases: PhaseRow[];
  pauses: PauseRow[];
  runs: EngineRuns[];
  targets: LogTarget[];
}

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
      spreadPercent: ((Math.max(...rates) - Math.min(...rates)) / rate) * 100,
      roundRates: rates,
    };
  });
}

function pauseRow(engine: EngineName, join: string, joins: readonly JoinFigures[]): PauseRow {
  const sorted = (pick: (j: JoinFigures) => number[]) => Float64Array.from(joins.flatMap(pick)).sort();
  const pauses = sorted((j) => j.pausesMs);
  const kept = sorted((j) => j.keptMs);
  const sum = (pick: (j: JoinFigures) => number) => joins.reduce((n, j) => n + pick(j), 0);
  return {
    engine,
    join,
    joins: joins.length,
    moved: sum((j) => j.moved),
    withheld: sum((j) => j.withheld),
    p50Ms: quantile(pauses, 0.5),
    p99Ms: quantile(pauses, 0.99),
    maxMs: pauses[pauses.length - 1] ?? Number.NaN,
    unresolved: sum((j) => j.unresolved),
    keptP50Ms: quantile(kept, 0.5),
    keptP99Ms: quantile(kept, 0.99),
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

function checkTargets(phases: readonly PhaseRow[], runs: readonly EngineRuns[]): LogTarget[] {
  const out: LogTarget[] = [];
  for (const engine of ENGINES) {
    const four = phases.find((p) => p.engine === engine && p.clients === 4);
    const ratio = four?.speedup ?? Number.NaN;
    const known = Number.isFinite(ratio);
    out.push({
      name: `throughput 4 clients ÷ 1 client, ${engine}`,
      ratio: ratio / SCALE_BAR,
      target: 1,
      strict: false,
      pass: known ? ratio >= SCALE_BAR : null,
      measured: known ? `${ratio.toFixed(3)}×` : '—',
      required: `≥ ${SCALE_BAR}×`,
    });
    const run = runs.find((r) => r.engine === engine);
    const v = run?.violations;
    const ran = run !== undefined && v !== undefined && run.error === undefined;
    const invariant = (name: string, count: number, what: string) =>
      out.push({
        name: `${name}, ${engine}`,
        ratio: count === 0 ? 1 : 0,
        target: 1,
        strict: false,
        pass: ran ? count === 0 : null,
        measured: ran ? `${count} violations in ${(run?.deliveries ?? 0).toLocaleString('en-US')} deliveries` : '—',
        required: what,
      });
    invariant('I1: one holder per key (and bucket)', (v?.i1Key ?? 0) + (v?.i1Bucket ?? 0), '0 violations');
    invariant('I2: first deliveries in offset order per key', v?.i2 ?? 0, '0 violations (no reorder, no gap)');
    invariant('exactly once, no redelivery', (v?.duplicates ?? 0) + (v?.redeliveries ?? 0), '0 (invisible time 60 s)');
  }
  return out;
}

/** Runs the key-shared suite, prints its tables and returns the figures. */
export async function runKeySharedBench(options: { quick: boolean }): Promise<KeySharedBenchResult> {
  const config = configFor(options.quick);
  console.log(
    `\n# keyshared${config.quick ? ' (quick)' : ''}: one lite topic, ${config.keys.toLocaleString('en-US')} keys, ` +
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
  const targets = checkTargets(phases, runs);
  const result: KeySharedBenchResult = { config, phases, pauses, runs, targets };
  printKeySharedResult(result);
  const failed = targets.filter((t) => t.pass !== true).map((t) => t.name);
  console.log(failed.length === 0 ? '\nkeyshared: PASS' : `\nkeyshared: FAIL (${failed.join('; ')})`);
  return result;
}

if (require.main === module) {
  runKeySharedBench({ quick: process.argv.includes('--quick') }).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
