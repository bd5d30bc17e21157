/**
 * The broker suite's targets, from one run's figures, for the native engine: CPU per message in
 * memory and on disk (flush 'async'); end to end against the js engine, paired by round; the share
 * of the floor row's rate the broker reaches in memory, paired by round; and send-to-pop p99 at
 * half the measured rate, in memory and on disk.
 */
import type { LatencyRow, ThroughputRow } from './broker-result.js';
import type { StoreKind } from './broker-scenario.js';
import { stats } from './lib.js';
import { figure } from './table.js';
import { ceilingTarget, floorTarget, notMeasured, type Target } from './targets.js';

const { pairedRatio } = stats;

type Store = Exclude<StoreKind, 'floor'>;
const STORES: readonly Store[] = ['memory', 'disk'];

/** Native CPU time per message end to end, µs. */
export const CPU_MICROS_PER_MESSAGE: Record<Store, number> = { memory: 12, disk: 15 };
/** Native end-to-end rate over js's, paired by round. */
export const NATIVE_OVER_JS: Record<Store, number> = { memory: 1.3, disk: 1.6 };
/** The native broker's in-memory rate as a share of the floor row's, paired by round, %. */
export const FLOOR_SHARE_PERCENT = 50;
/** Send-to-pop p99 at half the measured rate, ms. */
export const P99_LIMIT_MS = 2;

const storeLabel = (store: Store) => (store === 'disk' ? "on disk, flush 'async'" : 'in memory');

/** A row's per-round rates, or undefined when the case failed (its rounds would not pair). */
function rates(row: ThroughputRow | undefined): number[] | undefined {
  return row === undefined || row.error !== undefined || row.roundRates.length === 0 ? undefined : row.roundRates;
}

export function checkBrokerTargets(throughput: readonly ThroughputRow[], latency: readonly LatencyRow[]): Target[] {
  const row = (engine: string, store: StoreKind) => throughput.find((r) => r.engine === engine && r.store === store);
  const out: Target[] = [];
  for (const store of STORES) {
    const native = row('native', store);
    const cpu = native?.error === undefined ? (native?.cpuMicrosPerMessage ?? Number.NaN) : Number.NaN;
    out.push(
      ceilingTarget(`CPU per message, native, ${storeLabel(store)}`, cpu, CPU_MICROS_PER_MESSAGE[store], 'µs', {
        inclusive: true,
      }),
    );
  }
  for (const store of STORES) {
    const name = `end to end, native / js, ${storeLabel(store)}`;
    const [native, js] = [rates(row('native', store)), rates(row('js', store))];
    out.push(
      native === undefined || js === undefined
        ? notMeasured(name, `≥ ${NATIVE_OVER_JS[store]}×`)
        : floorTarget(name, pairedRatio(native, js), NATIVE_OVER_JS[store], '×'),
    );
  }
  const floorName = 'end to end, native broker / floor row, in memory';
  const [broker, floor] = [rates(row('native', 'memory')), rates(row('native', 'floor'))];
  out.push(
    broker === undefined || floor === undefined
      ? notMeasured(floorName, `≥ ${FLOOR_SHARE_PERCENT}%`)
      : floorTarget(floorName, pairedRatio(broker, floor) * 100, FLOOR_SHARE_PERCENT, '%'),
  );
  for (const store of STORES) {
    const r = latency.find((l) => l.engine === 'native' && l.store === store);
    const p99 = r?.error === undefined ? (r?.p99Ms ?? Number.NaN) : Number.NaN;
    out.push(
      ceilingTarget(`send-to-pop p99 at half load, native, ${storeLabel(store)}`, p99, P99_LIMIT_MS, 'ms', {
        measured: `${figure(p99)} ms at ${figure(r?.achievedRate ?? Number.NaN)} msgs/s`,
      }),
    );
  }
  return out;
}
