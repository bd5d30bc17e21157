/**
 * The targets of issue 5 ("Tests and figures") for the native engine, checked for both stores: at
 * least 300,000 messages/s end to end, and send-to-pop p99 under 2 ms at half that load. The latency
 * runs are paced at half the *measured* median rate; the measured column says at which rate the p99
 * was taken, and a p99 taken below half the target rate cannot pass, however low it is.
 */
import type { LatencyRow, ThroughputRow } from './broker.js';
import type { LogTarget } from './log-targets.js';
import { figure } from './measure.js';

/** The same shape as the log suite's targets: figure and bar as text, PASS/FAIL or n/a. */
export type BrokerTarget = LogTarget;

export const END_TO_END_MESSAGES_PER_SECOND = 300_000;
export const P99_LIMIT_MS = 2;

const storeLabel = (store: string) => (store === 'disk' ? "on disk, flush 'async'" : 'in memory');

export function checkBrokerTargets(
  throughput: readonly ThroughputRow[],
  latency: readonly LatencyRow[],
): BrokerTarget[] {
  const out: BrokerTarget[] = [];
  for (const store of ['memory', 'disk'] as const) {
    const row = throughput.find((r) => r.engine === 'native' && r.store === store);
    const rate = row?.messagesPerSecond ?? Number.NaN;
    const known = Number.isFinite(rate);
    out.push({
      name: `end-to-end messages/s, native, ${storeLabel(store)}`,
      ratio: rate / END_TO_END_MESSAGES_PER_SECOND,
      target: 1,
      strict: false,
      pass: known ? rate >= END_TO_END_MESSAGES_PER_SECOND : null,
      measured: known ? `${figure(rate)} msgs/s` : '—',
      required: `≥ ${figure(END_TO_END_MESSAGES_PER_SECOND)} msgs/s`,
    });
  }
  for (const store of ['memory', 'disk'] as const) {
    const row = latency.find((r) => r.engine === 'native' && r.store === store);
    const p99 = row?.p99Ms ?? Number.NaN;
    const achieved = row?.achievedRate ?? Number.NaN;
    const known = Number.isFinite(p99);
    out.push({
      name: `send-to-pop p99 at half load, native, ${storeLabel(store)}`,
      ratio: P99_LIMIT_MS / p99,
      target: 1,
      strict: true,
      pass: known ? p99 < P99_LIMIT_MS && achieved >= END_TO_END_MESSAGES_PER_SECOND / 2 : null,
      measured: known ? `${figure(p99)} ms at ${figure(achieved)} msgs/s` : '—',
      required: `< ${P99_LIMIT_MS} ms at ≥ ${figure(END_TO_END_MESSAGES_PER_SECOND / 2)} msgs/s (run at half the measured rate)`,
    });
  }
  return out;
}
