/**
 * Model-based property test of `DeliveryWindow`, the array the broker keeps a progress's deliveries
 * in by offset: random sets (ascending runs as FIFO makes them, gaps and sets below everything kept
 * as key-shared replay makes them) and deletes (mostly from the front, as acks make them), checked
 * after every step against a Map. Pure TypeScript with no engine underneath, so it runs once; the
 * broker suites run it on both engines through every POP and ack.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Delivery, DeliveryWindow } from '../ts/broker/offsets.js';

type Op = { kind: 'set'; offset: number } | { kind: 'run'; length: number } | { kind: 'delete'; offset: number };

const delivery = (offset: number): Delivery => ({
  offset,
  attempt: 0,
  invisibleUntil: 0,
  acked: false,
  holder: undefined,
});

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('set' as const), offset: fc.integer({ min: 0, max: 120 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('run' as const), length: fc.integer({ min: 1, max: 40 }) }) },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('delete' as const), offset: fc.integer({ min: 0, max: 120 }) }),
  },
  // Deleting the lowest kept offset, as an ack moving `committed` does: drives the front compaction.
  { weight: 4, arbitrary: fc.constant({ kind: 'delete' as const, offset: -1 }) },
);

describe('DeliveryWindow', () => {
  it('answers get, has, size and values as a Map of the same sets and deletes would', () => {
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
            expect(window.has(offset)).toBe(model.has(offset));
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
