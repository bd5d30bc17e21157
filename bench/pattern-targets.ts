/**
 * The pattern suite's targets, as ratios of one run's figures paired by round: the js engine's
 * single compiled match at least as fast as a precompiled RegExp per shape; the reverse index,
 * batched, at least 5× qlobber natively and 1.5× in js on both workloads (the agent bus and many
 * distinct names); each index smaller than qlobber's. Targets against qlobber are left out of a run
 * that skipped it.
 */
import { pairedSpeedup } from './measure.js';
import type { MemorySample, PatternBenchResult, ReverseRow, SingleMatchRow } from './pattern-result.js';
import type { ReverseWorkload } from './pattern-reverse.js';
import { notMeasured, ratioTarget, type Target } from './targets.js';

/** Reverse lookup, batched, over qlobber on the same subscriptions and topics. */
const NATIVE_OVER_QLOBBER = 5;
const JS_OVER_QLOBBER = 1.5;
const WORKLOADS: readonly ReverseWorkload[] = ['agent-bus', 'distinct names'];

function byImplementation<T extends { implementation: string }>(rows: readonly T[], prefix: string): T | undefined {
  return rows.find((r) => r.implementation.startsWith(prefix));
}

function paired(name: string, ours: SingleMatchRow | ReverseRow | undefined, theirs: typeof ours, bar: number) {
  return ours === undefined || theirs === undefined
    ? notMeasured(name, `≥ ${bar}×`)
    : ratioTarget(name, pairedSpeedup(ours, theirs), bar);
}

/** Single compiled match: the js engine at least as fast as the precompiled RegExp, per shape. */
function singleMatchTargets(rows: readonly SingleMatchRow[]): Target[] {
  return [...new Set(rows.map((r) => r.shape))].map((shape) => {
    const ofShape = rows.filter((r) => r.shape === shape);
    const js = byImplementation(ofShape, 'js ');
    return paired(`single match ${shape}: js / RegExp`, js, byImplementation(ofShape, 'RegExp'), 1);
  });
}

/** Rows recorded before the suite had a second workload carry none: they are the agent bus. */
const workloadOf = (row: ReverseRow): ReverseWorkload => row.workload ?? 'agent-bus';

/** Reverse lookup on each workload and size: native and js batched over qlobber. */
function reverseTargets(rows: readonly ReverseRow[]): Target[] {
  return WORKLOADS.flatMap((workload) => {
    const label = (size: string) => `reverse${size}${workload === 'agent-bus' ? '' : ` (${workload})`}`;
    const ofWorkload = rows.filter((r) => workloadOf(r) === workload);
    if (ofWorkload.length === 0) {
      return [
        notMeasured(`${label('')}: native batched / qlobber`, `≥ ${NATIVE_OVER_QLOBBER}×`),
        notMeasured(`${label('')}: js batched / qlobber`, `≥ ${JS_OVER_QLOBBER}×`),
      ];
    }
    return [...new Set(ofWorkload.map((r) => r.subscriptions))].flatMap((size) => {
      const ofSize = ofWorkload.filter((r) => r.subscriptions === size);
      const qlobber = byImplementation(ofSize, 'qlobber');
      if (qlobber === undefined) return [];
      const name = label(` ${size / 1000}k`);
      return [
        paired(
          `${name}: native batched / qlobber`,
          byImplementation(ofSize, 'native matchCounts'),
          qlobber,
          NATIVE_OVER_QLOBBER,
        ),
        paired(`${name}: js batched / qlobber`, byImplementation(ofSize, 'js matchCounts'), qlobber, JS_OVER_QLOBBER),
      ];
    });
  });
}

/** Index memory below qlobber's. A delta at or below zero is noise, so it decides nothing. */
function memoryTargets(samples: readonly MemorySample[]): Target[] {
  const of = (kind: MemorySample['kind']) => samples.find((m) => m.kind === kind);
  const [native, js, qlobber] = [of('native'), of('js'), of('qlobber')];
  if (qlobber === undefined) return [];
  const smaller = (what: string, ours: number, theirs: number): Target => {
    const name = `memory ${qlobber.patterns / 1000}k: qlobber / ${what}`;
    const target = ratioTarget(name, theirs / ours, 1, true);
    return ours > 0 && theirs > 0 ? target : { ...target, pass: null, measured: 'below noise' };
  };
  const targets: Target[] = [];
  // Native memory lives outside the JS heap, so only rss speaks for it.
  if (native) targets.push(smaller('native (rss)', native.rssBytes, qlobber.rssBytes));
  if (js) {
    targets.push(smaller('js (heapUsed)', js.heapUsedBytes, qlobber.heapUsedBytes));
    targets.push(smaller('js (rss)', js.rssBytes, qlobber.rssBytes));
  }
  return targets;
}

/** The suite's targets, from the figures of one run. */
export function checkPatternTargets(result: Omit<PatternBenchResult, 'targets'>): Target[] {
  return [
    ...singleMatchTargets(result.singleMatch),
    ...reverseTargets(result.reverse),
    ...memoryTargets(result.memory),
  ];
}
