/**
 * The reverse pattern index on every engine: behaviour, and a model-based property test where random
 * add/remove sequences run against each engine and a brute-force list of live entries.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { segmentHash } from '../ts/engine/js/pattern/pattern-index.js';
import { type DialectName, InvalidArgumentError, InvalidPatternError, PatternIndex } from '../ts/index.js';
import {
  anyTopic,
  DIALECT_NAMES,
  densePattern,
  denseTopic,
  structuredPattern,
  structuredTopic,
} from './arbitraries.js';
import { ENGINES } from './engines.js';
import { modelMatches, modelValidPattern } from './model/matcher.js';

describe.each(ENGINES)('%s engine', (engine) => {
  it('reports every matching id once, ascending', () => {
    const index = new PatternIndex({ engine });
    expect(index.engine).toBe(engine);
    expect(index.add('t__a__s', 9)).toBe(true);
    expect(index.add('t__a__s', 9)).toBe(false);
    expect(index.add('t__**', 9)).toBe(true);
    expect(index.add('t__*__s', 2)).toBe(true);
    expect(index.add('*__*__*__tool', 5)).toBe(true);
    expect(index.add('**', 7)).toBe(true);
    expect(index.size).toBe(5);
    expect(index.match('t__a__s')).toEqual([2, 7, 9]);
    expect(index.match('t__a__s__tool')).toEqual([5, 7, 9]);
    expect(index.match('u__a__s')).toEqual([7]);
    expect(index.match('t')).toEqual([7]);
    expect(index.match('t__a__s ')).toEqual([]);
    expect(index.match(42 as unknown as string)).toEqual([]);
  });

  it('matchInto fills what fits and returns the full count', () => {
    const index = new PatternIndex({ engine });
    for (let id = 0; id < 100; id++) index.add(id % 2 ? 'a__*' : 'a__b', id);
    const small = new Uint32Array(10);
    expect(index.matchInto('a__b', small)).toBe(100);
    expect(Array.from(small)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const big = new Uint32Array(128);
    expect(index.matchInto('a__b', big)).toBe(100);
    expect(big[99]).toBe(99);
    expect(index.match('a__b')).toHaveLength(100);
    expect(index.matchInto('a__c', big)).toBe(50);
    expect(big[0]).toBe(1);
  });

  it('matchCounts counts many topics in one call', () => {
    const index = new PatternIndex({ engine });
    index.add('a__*', 1);
    index.add('a__b', 2);
    index.add('**', 3);
    const out = new Uint32Array(6).fill(99);
    expect(index.matchCounts(['a__b', 'a__c', 'x', '', 'a\0b', 'a b'], out)).toBe(6);
    expect(Array.from(out)).toEqual([3, 2, 1, 0, 0, 0]);
    expect(index.matchCounts([], out)).toBe(0);
    expect(() => index.matchCounts(['a', 'b'], new Uint32Array(1))).toThrow(InvalidArgumentError);
  });

  it('rejects bad input with typed errors and changes nothing', () => {
    const index = new PatternIndex({ engine });
    index.add('a__*', 1);
    expect(() => index.add('a__', 2)).toThrow(InvalidPatternError);
    expect(() => index.add('a__b', -1)).toThrow(InvalidArgumentError);
    expect(() => index.add('a__b', 1.5)).toThrow(InvalidArgumentError);
    expect(() => index.add('a__b', 2 ** 32)).toThrow(InvalidArgumentError);
    expect(() => index.add(7 as unknown as string, 1)).toThrow(InvalidArgumentError);
    expect(index.size).toBe(1);
    expect(index.remove('a__', 1)).toBe(false);
    expect(index.remove('a__*', 2)).toBe(false);
    expect(index.remove('a__b', 1)).toBe(false);
    expect(index.match('a__b')).toEqual([1]);
  });

  it('ids up to 2^32-1 survive the round trip', () => {
    const index = new PatternIndex({ engine });
    index.add('a', 0xffff_ffff);
    index.add('a', 0);
    expect(index.match('a')).toEqual([0, 0xffff_ffff]);
  });

  it('gives memory back as entries are removed', () => {
    const index = new PatternIndex({ engine });
    const empty = index.stats();
    const patterns = Array.from({ length: 2000 }, (_, i) => `t${i % 50}__a${i}__*`);
    for (const [id, p] of patterns.entries()) index.add(p, id);
    const full = index.stats();
    expect(full.entries).toBe(2000);
    expect(full.nodes).toBeGreaterThan(2000);
    expect(full.segments).toBe(2050);
    for (const [id, p] of patterns.entries()) expect(index.remove(p, id)).toBe(true);
    expect(index.stats()).toEqual(empty);
    index.add('x', 1);
    index.clear();
    expect(index.size).toBe(0);
    expect(index.match('x')).toEqual([]);
  });

  it('tells apart segments whose hashes collide, in any order of removal', () => {
    // Three segments with the same 30-bit FNV-1a hash (what the js engine keys literal children
    // by), so their nodes share one chain under the parent.
    const colliding = ['s206oz', 's2byln', 's3naa4'];
    expect(new Set(colliding.map((s) => segmentHash(s, 0, s.length))).size).toBe(1);
    const orders = [
      [0, 1, 2],
      [0, 2, 1],
      [1, 0, 2],
      [1, 2, 0],
      [2, 0, 1],
      [2, 1, 0],
    ];
    for (const order of orders) {
      const index = new PatternIndex({ engine });
      for (const [id, segment] of colliding.entries()) index.add(`t__${segment}__*`, id);
      const live = new Set([0, 1, 2]);
      for (const removed of order) {
        for (const [id, segment] of colliding.entries()) {
          expect(index.match(`t__${segment}__x`)).toEqual(live.has(id) ? [id] : []);
        }
        expect(index.remove(`t__${colliding[removed]}__*`, removed)).toBe(true);
        live.delete(removed);
      }
      expect(index.size).toBe(0);
      expect(index.stats().nodes).toBe(1);
    }
  });

  it('applies the MQTT $ rule and # matching the parent level', () => {
    const index = new PatternIndex({ dialect: 'mqtt', engine });
    index.add('#', 1);
    index.add('+/x', 2);
    index.add('$SYS/#', 3);
    index.add('a/#', 4);
    expect(index.match('$SYS/x')).toEqual([3]);
    expect(index.match('a/x')).toEqual([1, 2, 4]);
    expect(index.match('a')).toEqual([1, 4]);
  });
});

type Op = { kind: 'add' | 'remove'; pattern: string; id: number; probe: string };

/** Small ids exercise the stamp-based dedup; a few near 2^32 switch the engines to sorting. */
const ID_SPACES = {
  dense: fc.integer({ min: 0, max: 5 }),
  sparse: fc.oneof(fc.integer({ min: 0, max: 5 }), fc.constantFrom(0xffff_ffff, 0xffff_fffe)),
} as const;

function ops(dialect: DialectName, ids: fc.Arbitrary<number>): fc.Arbitrary<Op[]> {
  const op = fc.record({
    kind: fc.constantFrom<Op['kind']>('add', 'add', 'remove'),
    pattern: fc.oneof(densePattern(dialect), structuredPattern(dialect)),
    id: ids,
    probe: fc.oneof(denseTopic(dialect), anyTopic(dialect)),
  });
  return fc.array(op, { minLength: 5, maxLength: 60 });
}

describe.each(DIALECT_NAMES)('%s dialect: pattern index ≡ brute force', (dialect) => {
  it.each(Object.keys(ID_SPACES) as (keyof typeof ID_SPACES)[])(
    'under random add/remove sequences, %s ids',
    (space) => {
      fc.assert(
        fc.property(
          ops(dialect, ID_SPACES[space]),
          fc.array(structuredTopic(dialect), { minLength: 1, maxLength: 8 }),
          (sequence, topics) => {
            const indexes = ENGINES.map((engine) => new PatternIndex({ dialect, engine }));
            const live = new Map<string, { pattern: string; id: number }>();
            const expectedFor = (topic: string) =>
              [
                ...new Set([...live.values()].filter((e) => modelMatches(dialect, e.pattern, topic)).map((e) => e.id)),
              ].sort((a, b) => a - b);
            for (const { kind, pattern, id, probe } of sequence) {
              const key = `${id}\u0001${pattern}`;
              const valid = modelValidPattern(dialect, pattern);
              for (const index of indexes) {
                if (kind === 'add' && !valid) expect(() => index.add(pattern, id)).toThrow(InvalidPatternError);
                else if (kind === 'add') expect(index.add(pattern, id)).toBe(!live.has(key));
                else expect(index.remove(pattern, id)).toBe(live.has(key));
              }
              if (kind === 'add' && valid) live.set(key, { pattern, id });
              if (kind === 'remove') live.delete(key);
              for (const index of indexes) {
                expect(index.size).toBe(live.size);
                expect(index.match(probe)).toEqual(expectedFor(probe));
              }
            }
            const counts = indexes.map(() => new Uint32Array(topics.length));
            for (const [i, index] of indexes.entries()) index.matchCounts(topics, counts[i] as Uint32Array);
            for (const c of counts) expect(Array.from(c)).toEqual(topics.map((t) => expectedFor(t).length));
          },
        ),
        { numRuns: 250 },
      );
    },
  );
});
