/**
 * The key-shared suite's targets, from one run's figures, per engine: throughput with 4 clients at
 * least 3.5× that with 1 (paired by round), and no violation of I1 (one holder per key and bucket),
 * I2 (first deliveries in offset order per key) or exactly-once over every delivery.
 */
import type { EngineName } from '../ts/index.js';
import type { EngineRuns, PhaseRow } from './key-shared-result.js';
import { floorTarget, type Target } from './targets.js';

const ENGINES: readonly EngineName[] = ['native', 'js'];
/** Throughput with 4 clients at least this many times that with 1. */
export const SCALE_BAR = 3.5;

export function checkKeySharedTargets(phases: readonly PhaseRow[], runs: readonly EngineRuns[]): Target[] {
  const out: Target[] = [];
  for (const engine of ENGINES) {
    const four = phases.find((p) => p.engine === engine && p.clients === 4);
    const ratio = four?.speedup ?? Number.NaN;
    out.push(floorTarget(`throughput 4 clients ÷ 1 client, ${engine}`, ratio, SCALE_BAR, '×', `${ratio.toFixed(3)}×`));
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
