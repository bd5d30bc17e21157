/**
 * The dispatcher's wake-up queue (ts/broker/wakes.ts) under a manual clock and scheduler: wake-ups
 * run once due, in deadline order and in arming order among equal deadlines; cancelled ones never
 * run; the queue keeps one scheduler timer, and under arm/cancel churn it holds at most about twice
 * the wake-ups pending. Pure TypeScript with no engine underneath, so it runs once; the broker
 * suites run it on both engines through every invisible time.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TopicProgress } from '../ts/broker/progress.js';
import { ManualScheduler } from '../ts/broker/timers.js';
import { NO_WAKE, WakeQueue } from '../ts/broker/wakes.js';
import { ManualClock } from './log-helpers.js';

function setUp() {
  const clock = new ManualClock(0);
  const manual = new ManualScheduler(clock);
  /** Scheduler timers set and neither run nor cancelled. */
  const timers = { live: 0 };
  const scheduler = {
    at(atMs: number, task: () => void) {
      timers.live++;
      let done = false;
      const end = () => {
        if (!done) timers.live--;
        done = true;
      };
      const cancel = manual.at(atMs, () => {
        end();
        task();
      });
      return () => {
        end();
        cancel();
      };
    },
    runDue: () => manual.runDue(),
    clear: () => manual.clear(),
  };
  const woken: string[] = [];
  const queue = new WakeQueue<string>(scheduler, clock, (_group, progress) => {
    progress.wake = NO_WAKE;
    woken.push(progress.liteTopic);
  });
  const arm = (at: number, name: string, progress = new TopicProgress(0, name)) => {
    progress.wake = queue.add(at, 'g', progress);
    return progress;
  };
  const advanceTo = (ms: number) => {
    clock.ms = ms;
    scheduler.runDue();
  };
  return { clock, timers, queue, woken, arm, advanceTo };
}

describe('WakeQueue', () => {
  it('runs wake-ups once due, by deadline and then arming order, never a cancelled one', () => {
    const { woken, arm, advanceTo, timers } = setUp();
    arm(30, 'c');
    arm(10, 'a');
    const cancelled = arm(20, 'x');
    arm(20, 'b1');
    arm(20, 'b2');
    cancelled.wake = NO_WAKE;
    advanceTo(9);
    expect(woken).toEqual([]);
    advanceTo(20);
    expect(woken).toEqual(['a', 'b1', 'b2']);
    advanceTo(1000);
    expect(woken).toEqual(['a', 'b1', 'b2', 'c']);
    advanceTo(2000);
    expect(woken).toEqual(['a', 'b1', 'b2', 'c']);
    expect(timers.live).toBe(0); // nothing pending, no timer left
  });

  it('re-armed wake-ups run at their new deadline only', () => {
    const { woken, arm, advanceTo } = setUp();
    const progress = arm(50, 'p');
    arm(10, 'p', progress); // replaces the one at 50
    advanceTo(10);
    expect(woken).toEqual(['p']);
    arm(100, 'p', progress);
    advanceTo(60);
    expect(woken).toEqual(['p']);
    advanceTo(100);
    expect(woken).toEqual(['p', 'p']);
  });

  it('matches a naive model through random arms, cancels and clock steps, with one timer while any is held', () => {
    type Op =
      | { kind: 'arm'; slot: number; delay: number }
      | { kind: 'cancel'; slot: number }
      | { kind: 'advance'; by: number };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ kind: fc.constant('arm' as const), slot: fc.nat(40), delay: fc.integer({ min: 1, max: 50 }) }),
      fc.record({ kind: fc.constant('cancel' as const), slot: fc.nat(40) }),
      fc.record({ kind: fc.constant('advance' as const), by: fc.integer({ min: 0, max: 30 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
        const { clock, woken, queue, advanceTo, timers } = setUp();
        const progress = Array.from({ length: 41 }, (_, i) => new TopicProgress(0, `t${i}`));
        // The model: each slot's pending deadline and arming number, or none.
        const pending = new Map<number, { at: number; seq: number }>();
        let seq = 0;
        for (const step of ops) {
          if (step.kind === 'arm') {
            const at = clock.ms + step.delay;
            const p = progress[step.slot] as TopicProgress;
            p.wake = queue.add(at, 'g', p);
            pending.set(step.slot, { at, seq: seq++ });
          } else if (step.kind === 'cancel') {
            (progress[step.slot] as TopicProgress).wake = NO_WAKE;
            pending.delete(step.slot);
          } else {
            const to = clock.ms + step.by;
            const due = [...pending]
              .filter(([, w]) => w.at <= to)
              .sort(([, a], [, b]) => a.at - b.at || a.seq - b.seq)
              .map(([slot]) => slot);
            for (const slot of due) pending.delete(slot);
            woken.length = 0;
            advanceTo(to);
            expect(woken).toEqual(due.map((slot) => `t${slot}`));
          }
          expect(timers.live).toBe(queue.size > 0 ? 1 : 0);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('holds about twice the pending wake-ups under churn, with one scheduler timer', () => {
    const { queue, arm, timers } = setUp();
    const progress = Array.from({ length: 100 }, (_, i) => new TopicProgress(0, `t${i}`));
    // Every arming replaces its progress's previous one: 100 pending, 200,000 armed.
    for (let i = 0; i < 200_000; i++) arm(1_000_000 + i, 'p', progress[i % 100]);
    expect(queue.size).toBeLessThanOrEqual(2048);
    expect(timers.live).toBe(1);
  });
});
