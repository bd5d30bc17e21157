/**
 * The queues of a group's backlog (ts/broker/backlog.ts) against an insertion-ordered Set of the lite
 * topics that wait: whatever mix of entering, leaving, entering again, repeated pushes, expiry,
 * takes from the front and pruning, the entries that still count, first occurrence of each, are the
 * Set in order. Pure TypeScript with no engine underneath, so it runs once; the broker suites run it
 * on both engines through every dispatch with full clients.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BacklogQueue } from '../ts/broker/backlog.js';
import { TopicProgress } from '../ts/broker/progress.js';

type Op = { kind: 'enter' | 'again' | 'leave' | 'expire'; topic: number } | { kind: 'shift' } | { kind: 'prune' };

const topic = fc.nat({ max: 12 });
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('enter' as const), topic }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('again' as const), topic }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('leave' as const), topic }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('expire' as const), topic }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('shift' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('prune' as const) }) },
);

/** Every entry that still counts, taken from the front, each lite topic at its first occurrence. */
function drained(queue: BacklogQueue): string[] {
  const out: string[] = [];
  while (queue.length > 0) {
    const progress = queue.shift();
    if (progress !== undefined && !out.includes(progress.liteTopic)) out.push(progress.liteTopic);
  }
  return out;
}

describe('BacklogQueue', () => {
  it('counts an entry only while its lite topic waits under the number it entered with', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const progress = Array.from({ length: 13 }, (_, i) => new TopicProgress(0, `t${i}`));
        const queue = new BacklogQueue();
        const waiting = new Set<string>();
        let numbers = 0;
        for (const o of ops) {
          if (o.kind === 'shift') {
            const first = [...waiting][0];
            // Entries that no longer count come out as undefined: take until one counts or none is left.
            let taken: TopicProgress | undefined;
            while (taken === undefined && queue.length > 0) taken = queue.shift();
            expect(taken?.liteTopic).toBe(first);
            if (taken !== undefined) {
              taken.backlogged = false;
              waiting.delete(taken.liteTopic);
            }
            continue;
          }
          if (o.kind === 'prune') {
            queue.prune();
            continue;
          }
          const p = progress[o.topic] as TopicProgress;
          if (p.removed) continue;
          if (o.kind === 'enter' && !p.backlogged) {
            p.backlogged = true;
            p.backlogEntry = ++numbers;
            queue.push(p);
            waiting.add(p.liteTopic);
          } else if (o.kind === 'again' && p.backlogged) {
            queue.push(p); // a second entry while it waits: it keeps its place
          } else if (o.kind === 'leave') {
            p.backlogged = false;
            waiting.delete(p.liteTopic);
          } else if (o.kind === 'expire') {
            p.removed = true;
            waiting.delete(p.liteTopic);
          }
        }
        expect(drained(queue)).toEqual([...waiting]);
      }),
      { numRuns: 500 },
    );
  });

  it('keeps its order through many takes and pushes (its arrays cut as the front empties)', () => {
    const queue = new BacklogQueue();
    const all = Array.from({ length: 3000 }, (_, i) => {
      const p = new TopicProgress(0, `t${i}`);
      p.backlogged = true;
      p.backlogEntry = i + 1;
      return p;
    });
    for (const p of all.slice(0, 1000)) queue.push(p);
    for (let i = 0; i < 3000; i++) {
      expect(queue.shift()).toBe(all[i]);
      if (i + 1000 < 3000) queue.push(all[i + 1000] as TopicProgress);
    }
    expect(queue.length).toBe(0);
    expect(queue.shift()).toBeUndefined();
  });

  it('holds no progress outside its entries once pruned or emptied (slots are reused, not leaked)', () => {
    const queue = new BacklogQueue();
    const all = Array.from({ length: 100 }, (_, i) => new TopicProgress(0, `t${i}`));
    const held = () => (queue as unknown as { progress: unknown[] }).progress.filter((p) => p !== undefined).length;
    for (const [i, p] of all.entries()) {
      p.backlogged = true;
      p.backlogEntry = i + 1;
      queue.push(p);
    }
    // Half leave the backlog; a prune keeps the other half and drops its references to the rest.
    for (const p of all.slice(0, 50)) p.backlogged = false;
    queue.prune();
    expect(queue.length).toBe(50);
    expect(held()).toBe(50);
    while (queue.length > 0) queue.shift();
    expect(held()).toBe(0);
    // Filled again, it hands out the new entries in order.
    for (const p of all.slice(0, 3)) {
      p.backlogged = true;
      p.backlogEntry += 1000;
      queue.push(p);
    }
    expect([queue.shift(), queue.shift(), queue.shift()]).toEqual(all.slice(0, 3));
  });
});
