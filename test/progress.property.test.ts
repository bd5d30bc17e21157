/**
 * Model-based property tests of two structures behind POP and ack. `DeliveryWindow`: the array the
 * broker keeps a progress's deliveries in by offset: random sets (ascending runs as FIFO makes them,
 * gaps and sets below everything kept as key-shared replay makes them) and deletes (mostly from the
 * front, as acks make them), checked after every step against a Map. `RecentAcks`: a group's last
 * acks, against a plain list of them.
 * Pure TypeScript with no engine underneath, so they run once; the broker suites run both on both
 * engines through every POP and ack.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Delivery, DeliveryWindow, TopicProgress } from '../ts/broker/progress.js';
import { RecentAcks } from '../ts/broker/recent-acks.js';

type Op =
  | { kind: 'set'; offset: number }
  | { kind: 'run'; length: number; reserve: boolean }
  | { kind: 'delete'; offset: number };

const delivery = (offset: number): Delivery => ({
  offset,
  attempt: 0,
  invisibleUntil: 0,
  acked: false,
  holder: undefined,
});

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('set' as const), offset: fc.integer({ min: 0, max: 120 }) }) },
  // A run handed out together, room for it reserved first (as FIFO takes do) or not.
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('run' as const),
      length: fc.integer({ min: 1, max: 40 }),
      reserve: fc.boolean(),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('delete' as const), offset: fc.integer({ min: 0, max: 120 }) }),
  },
  // Deleting the lowest kept offset, as an ack moving `committed` does: drives the front compaction.
  { weight: 4, arbitrary: fc.constant({ kind: 'delete' as const, offset: -1 }) },
);

describe('DeliveryWindow', () => {
  it('answers get, size and values as a Map of the same sets and deletes would', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000_000 }), fc.array(op, { maxLength: 200 }), (base, ops) => {
        const window = new DeliveryWindow();
        const model = new Map<number, Delivery>();
        let next = base;
        for (const step of ops) {
          if (step.kind === 'set') {
            const d = delivery(base + step.offset);
            window.set(d.offset, d);
            model.set(d.offset, d);
          } else if (step.kind === 'run') {
            if (step.reserve) window.reserve(next, step.length);
            for (let i = 0; i < step.length; i++) {
              const d = delivery(next++);
              window.set(d.offset, d);
              model.set(d.offset, d);
            }
          } else {
            const offset = step.offset < 0 ? Math.min(...model.keys()) : base + step.offset;
            expect(window.delete(offset)).toBe(model.delete(offset));
          }
          expect(window.size).toBe(model.size);
          const kept = [...model.keys()].sort((a, b) => a - b);
          expect([...window.values()].map((d) => d.offset)).toEqual(kept);
          for (let offset = base - 2; offset <= Math.max(next, base + 122); offset++) {
            expect(window.get(offset)).toBe(model.get(offset));
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('RecentAcks', () => {
  it('remembers exactly the last `capacity` acks, through index builds, upkeep and drops', () => {
    type Ack = { topic: number; offset: number; attempt: number };
    /** An ack to record, or a lookup: of an ack recorded before (`pick` into them) or of any triple. */
    type Step = { kind: 'add'; ack: Ack } | { kind: 'has'; pick: number | undefined; ack: Ack };
    const ack: fc.Arbitrary<Ack> = fc.record({ topic: fc.nat(3), offset: fc.nat(30), attempt: fc.nat(2) });
    const step: fc.Arbitrary<Step> = fc.oneof(
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('add' as const), ack }) },
      {
        weight: 2,
        arbitrary: fc.record({ kind: fc.constant('has' as const), pick: fc.option(fc.nat(), { nil: undefined }), ack }),
      },
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 9 }), fc.array(step, { maxLength: 300 }), (capacity, steps) => {
        const recent = new RecentAcks(capacity);
        const topics = [0, 1, 2, 3].map((i) => new TopicProgress(0, `t${i}`));
        const recorded: Ack[] = [];
        const same = (a: Ack, b: Ack) => a.topic === b.topic && a.offset === b.offset;
        for (const s of steps) {
          if (s.kind === 'add') {
            // The broker records an offset of a progress once (a second ack of it is not recorded).
            if (recorded.some((r) => same(r, s.ack))) continue;
            recent.add(topics[s.ack.topic] as TopicProgress, s.ack.offset, s.ack.attempt);
            recorded.push(s.ack);
          } else {
            const asked =
              s.pick === undefined || recorded.length === 0 ? s.ack : (recorded[s.pick % recorded.length] as Ack);
            const last = recorded.slice(-capacity);
            const expected = last.some((r) => same(r, asked) && r.attempt === asked.attempt);
            expect(recent.has(topics[asked.topic] as TopicProgress, asked.offset, asked.attempt)).toBe(expected);
          }
        }
      }),
      { numRuns: 500 },
    );
  });
});
