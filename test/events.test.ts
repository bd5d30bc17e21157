/**
 * Client event queues (ts/broker/events.ts) against insertion-ordered Sets, the structure they
 * replace: whatever mix of adds, adds of what is queued already, deletes from anywhere and takes from
 * the front, over three queues sharing the same lite topics (a key-shared lite topic waits at several
 * clients), each queue holds what its Set holds, in the same order, and answers `has`, `size` and
 * `first` as the Set would. Pure TypeScript with no engine underneath, so it runs once; the broker
 * suites run it on both engines through every dispatch.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EventQueue } from '../ts/broker/events.js';
import { TopicProgress } from '../ts/broker/progress.js';

type Op = { kind: 'add' | 'delete'; queue: number; topic: number } | { kind: 'take'; queue: number };

const QUEUES = 3;
const TOPICS = 40;
const queue = fc.nat({ max: QUEUES - 1 });
const topic = fc.nat({ max: TOPICS - 1 });
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('add' as const), queue, topic }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('delete' as const), queue, topic }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('take' as const), queue }) },
);

describe('EventQueue', () => {
  it('holds what an insertion-ordered Set holds, in its order, with several queues sharing entries', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 400 }), (ops) => {
        const progress = Array.from({ length: TOPICS }, (_, i) => new TopicProgress(0, `t${i}`));
        const queues = Array.from({ length: QUEUES }, () => new EventQueue());
        const models = Array.from({ length: QUEUES }, () => new Set<TopicProgress>());
        for (const o of ops) {
          const q = queues[o.queue] as EventQueue;
          const model = models[o.queue] as Set<TopicProgress>;
          if (o.kind === 'take') {
            const first = model.values().next().value;
            expect(q.first()).toBe(first);
            if (first !== undefined) {
              expect(q.delete(first)).toBe(true);
              model.delete(first);
            }
            continue;
          }
          const p = progress[o.topic] as TopicProgress;
          if (o.kind === 'add') {
            q.add(p);
            model.add(p);
          } else {
            expect(q.delete(p)).toBe(model.delete(p));
          }
          for (let i = 0; i < QUEUES; i++) {
            const other = queues[i] as EventQueue;
            const otherModel = models[i] as Set<TopicProgress>;
            expect(other.size).toBe(otherModel.size);
            expect([...other]).toEqual([...otherModel]);
            for (const candidate of progress) expect(other.has(candidate)).toBe(otherModel.has(candidate));
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('keeps its storage within a constant factor of what it holds while entries come and go', () => {
    const q = new EventQueue();
    const progress = Array.from({ length: 8 }, (_, i) => new TopicProgress(0, `t${i}`));
    for (const p of progress) q.add(p);
    // One entry stays at the front while the others are taken from the middle and queued again.
    for (let round = 0; round < 10_000; round++) {
      const p = progress[1 + (round % 7)] as TopicProgress;
      q.delete(p);
      q.add(p);
    }
    expect(q.size).toBe(8);
    expect(q.first()).toBe(progress[0]);
    const slots = (q as unknown as { slots: unknown[] }).slots;
    expect(slots.length).toBeLessThanOrEqual(2 * 8 + 32 + 1);
    // Emptied, it holds no progress (its slots are written over when it fills again, in order).
    for (const p of progress) q.delete(p);
    expect(q.size).toBe(0);
    expect((q as unknown as { slots: unknown[] }).slots.filter((p) => p !== undefined)).toEqual([]);
    for (const p of progress.slice(0, 3).reverse()) q.add(p);
    expect([...q]).toEqual(progress.slice(0, 3).reverse());
  });
});
