/**
 * Model-based property tests of the topic-name trie: random add/remove/touch sequences, with
 * expands between them, run against each engine and a naive model (a Map of live names and their
 * last activity, `modelMatches` as the filter, sorting for list and idle order).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type DialectName,
  InvalidLiteTopicError,
  InvalidPatternError,
  InvalidTopicError,
  TopicTrie,
} from '../ts/index.js';
import { DIALECT_NAMES, densePattern, hostileString, structuredPattern } from './arbitraries.js';
import { ENGINES } from './engines.js';
import { modelMatches, modelValidPattern, modelValidTopic } from './model/matcher.js';

const SEPARATOR = { lite: '__', mqtt: '/', nats: '.' } as const;

const sorted = (names: readonly string[]) => [...names].sort();

type Op =
  | { kind: 'add'; name: string; timestamp: number | undefined }
  | { kind: 'remove'; name: string }
  | { kind: 'touch'; name: string; timestamp: number }
  | { kind: 'expand'; pattern: string };

/** Names over a tiny alphabet (with the empty segment and `$x`), so they share prefixes all the time. */
function denseName(dialect: DialectName): fc.Arbitrary<string> {
  return fc
    .array(fc.constantFrom('a', 'b', 'c', '', '$x'), { minLength: 1, maxLength: 4 })
    .map((segments) => segments.join(SEPARATOR[dialect]));
}

function ops(dialect: DialectName): fc.Arbitrary<Op[]> {
  const name = fc.oneof({ weight: 9, arbitrary: denseName(dialect) }, { weight: 1, arbitrary: hostileString });
  // Few distinct timestamps: ties and out-of-order touches are the interesting cases.
  const timestamp = fc.integer({ min: 0, max: 12 });
  const op: fc.Arbitrary<Op> = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant('add' as const),
        name,
        timestamp: fc.option(timestamp, { nil: undefined }),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('remove' as const), name }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('touch' as const), name, timestamp }) },
    // Walks between changes: the native trie compacts on a walk (compact.rs), so later changes land
    // on a trie laid out again at an arbitrary point.
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('expand' as const),
        pattern: fc.oneof(densePattern(dialect), structuredPattern(dialect)),
      }),
    },
  );
  return fc.array(op, { minLength: 5, maxLength: 60 });
}

function compareBySegments(dialect: DialectName, a: string, b: string): number {
  const x = a.split(SEPARATOR[dialect]);
  const y = b.split(SEPARATOR[dialect]);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const s = x[i] as string;
    const t = y[i] as string;
    if (s !== t) return s < t ? -1 : 1;
  }
  return x.length - y.length;
}

function validName(dialect: DialectName, name: string): boolean {
  return dialect === 'lite' ? /^[A-Za-z0-9_-]{1,64}$/.test(name) : modelValidTopic(dialect, name);
}

function apply(trie: TopicTrie, op: Exclude<Op, { kind: 'expand' }>): void {
  if (op.kind === 'add') trie.add(op.name, op.timestamp);
  else if (op.kind === 'remove') trie.remove(op.name);
  else trie.touch(op.name, op.timestamp);
}

/** Every engine's expand of `pattern` against the model; the engines in the same order. */
function checkExpand(dialect: DialectName, tries: TopicTrie[], names: string[], pattern: string): void {
  if (!modelValidPattern(dialect, pattern)) {
    for (const trie of tries) expect(() => trie.expand(pattern)).toThrow(InvalidPatternError);
    return;
  }
  const expected = sorted(names.filter((name) => modelMatches(dialect, pattern, name)));
  const results = tries.map((trie) => trie.expand(pattern));
  for (const result of results) expect(sorted(result)).toEqual(expected);
  // Names are written during the walk: the same as the names of the ids, in the same order.
  for (const [i, trie] of tries.entries()) {
    expect(results[i]).toEqual([...trie.expandIds(pattern)].map((id) => trie.nameOf(id)));
  }
  for (const result of results.slice(1)) expect(result).toEqual(results[0]);
  for (const trie of tries) expect(trie.count(pattern)).toBe(expected.length);
}

/** Reads every page of `list` with pages of `limit` names. */
function allPages(trie: TopicTrie, limit: number): string[] {
  const names: string[] = [];
  let after: string | undefined;
  for (let pages = 0; pages <= trie.size; pages++) {
    const page = trie.list('', limit, after);
    names.push(...page.names);
    if (page.next === undefined) return names;
    after = page.next;
  }
  throw new Error('list never ends: a page made no progress');
}

describe.each(DIALECT_NAMES)('%s dialect: trie ≡ model', (dialect) => {
  it('under random add/remove/touch/expand sequences', () => {
    fc.assert(
      fc.property(
        ops(dialect),
        fc.array(fc.oneof(densePattern(dialect), structuredPattern(dialect)), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 4 }),
        (sequence, patterns, pageSize) => {
          const tries = ENGINES.map((engine) => new TopicTrie({ dialect, engine }));
          const invalidName = dialect === 'lite' ? InvalidLiteTopicError : InvalidTopicError;
          const live = new Map<string, number>();
          for (const op of sequence) {
            if (op.kind === 'expand') {
              checkExpand(dialect, tries, [...live.keys()], op.pattern);
              continue;
            }
            const valid = validName(dialect, op.name);
            for (const trie of tries) {
              if (op.kind === 'add' && !valid) expect(() => apply(trie, op)).toThrow(invalidName);
              else apply(trie, op);
            }
            const last = live.get(op.name);
            if (op.kind === 'add' && valid) live.set(op.name, Math.max(last ?? 0, op.timestamp ?? 0));
            if (op.kind === 'remove') live.delete(op.name);
            if (op.kind === 'touch' && last !== undefined) live.set(op.name, Math.max(last, op.timestamp));
            const ids = tries.map((trie) => [...live.keys()].map((name) => trie.idOf(name)));
            for (const other of ids.slice(1)) expect(other).toEqual(ids[0]);
            for (const trie of tries) expect(trie.size).toBe(live.size);
          }
          const names = [...live.keys()];
          for (const pattern of patterns) checkExpand(dialect, tries, names, pattern);
          const listed = [...names].sort((a, b) => compareBySegments(dialect, a, b));
          for (const trie of tries) {
            expect(allPages(trie, pageSize)).toEqual(listed);
            for (const cutoff of [0, 1, 6, 13]) {
              const idle = names
                .filter((name) => (live.get(name) as number) < cutoff)
                .sort(
                  (a, b) =>
                    (live.get(a) as number) - (live.get(b) as number) ||
                    (trie.idOf(a) as number) - (trie.idOf(b) as number),
                );
              expect(trie.idleSince(cutoff)).toEqual(idle);
            }
          }
          for (const trie of tries) {
            for (const name of names) expect(trie.remove(name)).toBe(true);
            expect(trie.stats()).toEqual(new TopicTrie({ dialect, engine: trie.engine }).stats());
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

/**
 * A live broker's shape: a few tenants, agents and sessions, names added and removed in bursts
 * between expands of a whole subtree at every level (which lay down and patch kept lists) and walks
 * through many nodes (which eventually compact the trie under them). Every answer is checked against
 * the model, and the engines against each other in order.
 */
describe('lite dialect: trie ≡ model under churn', () => {
  const name = fc
    .tuple(
      fc.integer({ min: 0, max: 2 }),
      fc.integer({ min: 0, max: 3 }),
      fc.integer({ min: 0, max: 4 }),
      fc.integer({ min: -1, max: 1 }),
    )
    .map(([t, a, s, x]) => `t${t}__a${a}__s${s}${x < 0 ? '' : `__x${x}`}`);
  const pattern = fc.constantFrom(
    '**',
    't0__**',
    't1__a1__**',
    't2__a3__s4__**',
    't0__a0__s0__**',
    '*__a1__**',
    't0__*__s1',
    '*__*__*__x0',
    't1__a2__s3',
  );
  const burst = fc.record({
    adds: fc.array(name, { maxLength: 12 }),
    removes: fc.array(name, { maxLength: 12 }),
    patterns: fc.array(pattern, { minLength: 1, maxLength: 4 }),
  });
  it('when bursts of adds and removes come between expands', () => {
    fc.assert(
      fc.property(fc.array(burst, { minLength: 1, maxLength: 25 }), (bursts) => {
        const tries = ENGINES.map((engine) => new TopicTrie({ engine }));
        const live = new Set<string>();
        for (const { adds, removes, patterns } of bursts) {
          for (const added of adds) {
            for (const trie of tries) trie.add(added);
            live.add(added);
          }
          for (const removed of removes) {
            for (const trie of tries) expect(trie.remove(removed)).toBe(live.has(removed));
            live.delete(removed);
          }
          for (const p of patterns) checkExpand('lite', tries, [...live], p);
        }
      }),
      { numRuns: 200 },
    );
  });
});
