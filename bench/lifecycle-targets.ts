/**
 * The lifecycle suite's targets, from one run's figures: `Broker.open` of a large directory after a
 * clean close and after SIGKILL, per engine, and send-to-pop p99 while expiry sweeps run against
 * the p99 with expiry off in the same run.
 */
import type { EngineName } from '../ts/index.js';
import type { ExpiryRow, ReopenRow } from './lifecycle-result.js';
import { figure } from './table.js';
import { ceilingTarget, type Target } from './targets.js';

export const CLEAN_REOPEN_MS = 1000;
/** Reopen after SIGKILL: the js engine restores the checkpointed LMQs without replaying into them. */
export const KILLED_REOPEN_MS: Record<EngineName, number> = { native: 5000, js: 2000 };
/**
 * "No effect on p99": the p99 while sweeping may exceed the p99 with expiry off by at most this
 * share of it or `P99_SLACK_MS`, whichever is larger (the machine is shared and noisy). Each side is
 * the median over its windows of the window's own p99: the p99 over all of a phase's deliveries
 * follows its worst window, and on a shared machine one window of either phase can take a stall
 * that has nothing to do with expiry.
 */
export const P99_SLACK_SHARE = 0.25;
export const P99_SLACK_MS = 1;

export function checkLifecycleTargets(reopen: readonly ReopenRow[], expiry: readonly ExpiryRow[]): Target[] {
  const out: Target[] = [];
  for (const r of reopen) {
    const what = r.shutdown === 'clean' ? 'clean reopen' : 'reopen after SIGKILL';
    const limit = r.shutdown === 'clean' ? CLEAN_REOPEN_MS : KILLED_REOPEN_MS[r.engine];
    const size = `${figure(r.messages / 1e6)} M messages, ${r.liteTopics.toLocaleString('en-US')} lite topics`;
    const ms = r.error === undefined ? r.openMs : Number.NaN;
    out.push(ceilingTarget(`${what}, ${r.engine}, ${size}`, ms, limit, 'ms'));
  }
  for (const r of expiry) {
    const off = r.phases.find((p) => p.phase === 'expiry off')?.medianWindowP99Ms ?? Number.NaN;
    const on = r.phases.find((p) => p.phase === 'sweeping')?.medianWindowP99Ms ?? Number.NaN;
    const bar = off + Math.max(P99_SLACK_MS, off * P99_SLACK_SHARE);
    const target = ceilingTarget(`send-to-pop p99 while expiring idle lite topics, ${r.engine}`, on, bar, 'ms', {
      inclusive: true,
      measured: `${figure(on)} ms sweeping, ${figure(off)} ms expiry off (median window p99)`,
      undecided: !Number.isFinite(off) || r.error !== undefined,
    });
    out.push({ ...target, required: `${target.required} (off + max(${P99_SLACK_MS} ms, ${P99_SLACK_SHARE * 100}%))` });
  }
  return out;
}
