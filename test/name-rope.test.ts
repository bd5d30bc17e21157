/**
 * The ropes the trie's kept lists are made of (ts/common/name-rope.ts, used by both engines): lists
 * built from runs of other lists and single names, against plain arrays.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NameRope, RopeBuilder } from '../ts/common/name-rope.js';

/** A step: a run of an earlier list (by index, start and length as fractions), or a single name. */
const step = fc.oneof(
  fc.record({
    list: fc.nat(),
    from: fc.double({ min: 0, max: 1, noNaN: true }),
    share: fc.double({ min: 0, max: 1, noNaN: true }),
  }),
  fc.string({ maxLength: 3 }),
);

describe('NameRope', () => {
  it('holds what its runs and names say, however chunks are shared and joined', () => {
    fc.assert(
      fc.property(fc.array(fc.array(step, { maxLength: 12 }), { minLength: 1, maxLength: 30 }), (lists) => {
        const ropes: NameRope[] = [new NameRope([], 0)];
        const arrays: string[][] = [[]];
        for (const steps of lists) {
          const builder = new RopeBuilder();
          const expected: string[] = [];
          for (const s of steps) {
            if (typeof s === 'string') {
              builder.name(s);
              expected.push(s);
              continue;
            }
            const index = s.list % ropes.length;
            const source = arrays[index] as string[];
            const from = Math.floor(s.from * source.length);
            const count = Math.floor(s.share * (source.length - from));
            (ropes[index] as NameRope).copyTo(builder, from, count);
            expected.push(...source.slice(from, from + count));
          }
          const answer = new RopeBuilder('answer');
          const rope = builder.toRope();
          expect(rope.size).toBe(expected.length);
          rope.copyTo(answer, 0, rope.size);
          const names = answer.toArray();
          expect(names).toEqual(expected);
          // An answer is the caller's: changing it changes no list.
          names.fill('x');
          const again = new RopeBuilder('answer');
          rope.copyTo(again, 0, rope.size);
          expect(again.toArray()).toEqual(expected);
          ropes.push(rope);
          arrays.push(expected);
        }
      }),
    );
  });
  it('holds lists longer than a chunk, from single names, runs across chunks and joined small runs', () => {
    const names = Array.from({ length: 40_000 }, (_, i) => `n${i}`);
    const builder = new RopeBuilder();
    for (const name of names) builder.name(name);
    const rope = builder.toRope();
    const whole = new RopeBuilder();
    rope.copyTo(whole, 0, rope.size);
    expect(whole.toArray()).toEqual(names);
    const across = new RopeBuilder();
    rope.copyTo(across, 15_990, 30);
    expect(across.toArray()).toEqual(names.slice(15_990, 16_020));
    // Many short runs (a chunk ends inside one): the rope made of them is joined into new chunks.
    const runs = new RopeBuilder();
    const expected: string[] = [];
    for (let from = 0; from < names.length; from += 23) {
      const count = Math.min(19, names.length - from);
      rope.copyTo(runs, from, count);
      expected.push(...names.slice(from, from + count));
    }
    const joined = runs.toRope();
    expect(joined.size).toBe(expected.length);
    const inner = new RopeBuilder();
    joined.copyTo(inner, 5, joined.size - 10);
    expect(inner.toArray()).toEqual(expected.slice(5, expected.length - 5));
  });
  it('keeps a list made again and again from runs of itself and new names, as a lay-down after changes does', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (seed) => {
        let state = seed;
        const random = (below: number): number => {
          state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
          return state % below;
        };
        let expected = Array.from({ length: 20_000 + random(20_000) }, (_, i) => `n${i}`);
        const first = new RopeBuilder();
        for (const name of expected) first.name(name);
        let rope = first.toRope();
        for (let generation = 0; generation < 30; generation++) {
          // Runs of the old list between changes: some names left out, some new ones put in.
          const builder = new RopeBuilder();
          const next: string[] = [];
          for (let from = 0; from < expected.length; ) {
            const count = Math.min(1 + random(generation < 15 ? 2000 : 300), expected.length - from);
            rope.copyTo(builder, from, count);
            next.push(...expected.slice(from, from + count));
            from += count + random(2);
            for (let added = random(3); added > 0; added--) {
              const name = `g${generation}_${from}_${added}`;
              builder.name(name);
              next.push(name);
            }
          }
          rope = builder.toRope();
          expected = next;
          expect(rope.size).toBe(expected.length);
          const answer = new RopeBuilder('answer');
          rope.copyTo(answer, 0, rope.size);
          expect(answer.toArray()).toEqual(expected);
        }
      }),
      { numRuns: 5 },
    );
  });
});
