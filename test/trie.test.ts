/**
 * The topic-name trie on every engine: behaviour and errors, and the engines' agreement on ids and
 * result order. The model-based property tests are in trie.property.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  type DialectName,
  InvalidArgumentError,
  InvalidLiteTopicError,
  InvalidPatternError,
  InvalidTopicError,
  TopicTrie,
} from '../ts/index.js';
import { DIALECT_NAMES } from './arbitraries.js';
import { ENGINES } from './engines.js';
import { modelMatches } from './model/matcher.js';

const sorted = (names: readonly string[]) => [...names].sort();

describe.each(ENGINES)('%s engine', (engine) => {
  it('gives each name a stable id and rebuilds names from ids', () => {
    const trie = new TopicTrie({ engine });
    expect(trie.engine).toBe(engine);
    const a = trie.add('tenant1__agent7__s1');
    expect(trie.add('tenant1__agent7__s1')).toBe(a);
    const b = trie.add('tenant1__agent7');
    expect(b).not.toBe(a);
    expect(trie.size).toBe(2);
    expect(trie.has('tenant1__agent7')).toBe(true);
    expect(trie.has('tenant1')).toBe(false);
    expect(trie.idOf('tenant1__agent7__s1')).toBe(a);
    expect(trie.idOf('tenant1')).toBeUndefined();
    expect(trie.idOf(7 as unknown as string)).toBeUndefined();
    expect(trie.nameOf(a)).toBe('tenant1__agent7__s1');
    expect(trie.nameOf(Math.max(a, b) + 1)).toBeUndefined();
    expect(trie.nameOf(-1)).toBeUndefined();
    expect(trie.nameOf(1.5)).toBeUndefined();
    expect(trie.nameOf(2 ** 32)).toBeUndefined();
    expect(trie.remove('tenant1__agent7__s1')).toBe(true);
    expect(trie.remove('tenant1__agent7__s1')).toBe(false);
    expect(trie.nameOf(a)).toBeUndefined();
    expect(trie.add('tenant2')).toBe(a);
    expect(trie.nameOf(a)).toBe('tenant2');
  });

  it('expands the reference rows of the lite dialect', () => {
    const trie = new TopicTrie({ engine });
    for (const name of ['pay__refund', 'pay__success', 'notify__refund', 'pay__refund__notify', 'pay']) trie.add(name);
    trie.add('pay__success__notify');
    expect(trie.expand('pay__refund')).toEqual(['pay__refund']);
    expect(sorted(trie.expand('pay__*'))).toEqual(['pay__refund', 'pay__success']);
    expect(sorted(trie.expand('*__refund'))).toEqual(['notify__refund', 'pay__refund']);
    expect(sorted(trie.expand('pay__*__notify'))).toEqual(['pay__refund__notify', 'pay__success__notify']);
    expect(trie.expand('**')).toHaveLength(6);
    expect(sorted(trie.expand('pay__**'))).toEqual([
      'pay__refund',
      'pay__refund__notify',
      'pay__success',
      'pay__success__notify',
    ]);
    expect(trie.expand('nothing__**')).toEqual([]);
    expect(trie.count('pay__**')).toBe(4);
    expect(trie.count('*')).toBe(1);
    expect(() => trie.expand('pay__')).toThrow(InvalidPatternError);
    expect(() => trie.count('pa*')).toThrow(InvalidPatternError);
    expect(() => trie.expandIds('**__a')).toThrow(InvalidPatternError);
    expect(() => trie.expand(1 as unknown as string)).toThrow(InvalidArgumentError);
  });

  it('applies MQTT # to the parent level and the $ rule, and NATS > to one or more tokens', () => {
    const mqtt = new TopicTrie({ dialect: 'mqtt', engine });
    for (const name of ['a', 'a/b', '$SYS/x', '/', 'b']) mqtt.add(name);
    expect(sorted(mqtt.expand('a/#'))).toEqual(['a', 'a/b']);
    expect(sorted(mqtt.expand('#'))).toEqual(['/', 'a', 'a/b', 'b']);
    expect(sorted(mqtt.expand('+'))).toEqual(['a', 'b']);
    expect(mqtt.expand('$SYS/#')).toEqual(['$SYS/x']);
    expect(mqtt.count('#')).toBe(4);
    const nats = new TopicTrie({ dialect: 'nats', engine });
    for (const name of ['a', 'a.b', 'a.b.c']) nats.add(name);
    expect(sorted(nats.expand('a.>'))).toEqual(['a.b', 'a.b.c']);
    expect(nats.count('>')).toBe(3);
    expect(nats.expand('*.b')).toEqual(['a.b']);
  });

  it('rejects invalid names with typed errors and adds nothing', () => {
    const trie = new TopicTrie({ engine, maxNameBytes: 8 });
    expect(() => trie.add('a b')).toThrow(InvalidLiteTopicError);
    try {
      trie.add('abcdefghi');
    } catch (error) {
      expect(error).toMatchObject({ code: 'INVALID_LITE_TOPIC', reason: 'TOO_LONG', limit: 8, actual: 9 });
    }
    expect(() => trie.add('')).toThrow(InvalidLiteTopicError);
    expect(() => trie.add(3 as unknown as string)).toThrow(InvalidArgumentError);
    for (const [dialect, name] of [
      ['mqtt', 'a/+'],
      ['mqtt', ''],
      ['nats', 'a..b'],
      ['nats', 'a.*'],
    ] as const) {
      const other = new TopicTrie({ dialect, engine });
      expect(() => other.add(name)).toThrow(InvalidTopicError);
      expect(() => other.add(name)).toThrow(expect.objectContaining({ code: 'INVALID_TOPIC', dialect, value: name }));
      expect(other.size).toBe(0);
    }
    expect(trie.size).toBe(0);
    expect(trie.stats().nodes).toBe(1);
    expect(() => new TopicTrie({ engine, maxNameBytes: 0 })).toThrow(InvalidArgumentError);
    expect(() => new TopicTrie({ engine, dialect: 'amqp' as 'lite' })).toThrow(InvalidArgumentError);
    expect(() => trie.add('a', -1)).toThrow(InvalidArgumentError);
    expect(() => trie.add('a', 1.5)).toThrow(InvalidArgumentError);
    expect(() => trie.touch('a', 2 ** 53)).toThrow(InvalidArgumentError);
    expect(() => trie.idleSince(Number.NaN)).toThrow(InvalidArgumentError);
    expect(() => trie.idleSince(1, -1)).toThrow(InvalidArgumentError);
    expect(() => trie.list('', 0)).toThrow(InvalidArgumentError);
    expect(() => trie.list('\uD800')).toThrow(InvalidArgumentError);
    expect(() => trie.remove(1 as unknown as string)).toThrow(InvalidArgumentError);
    expect(trie.size).toBe(0);
  });

  it('expandIds fills what fits and returns the full count, or a new array', () => {
    const trie = new TopicTrie({ engine });
    const ids = Array.from({ length: 100 }, (_, i) => trie.add(`t__a${i}`));
    const small = new Uint32Array(10);
    expect(trie.expandIds('t__*', small)).toBe(100);
    const all = trie.expandIds('t__*');
    expect(all).toBeInstanceOf(Uint32Array);
    expect(sorted([...all].map(String))).toEqual(sorted(ids.map(String)));
    expect([...small]).toEqual([...all.subarray(0, 10)]);
    expect([...all].map((id) => trie.nameOf(id))).toEqual(trie.expand('t__*'));
    expect(trie.expandIds('u__*')).toHaveLength(0);
    expect(() => trie.expandIds('t__*', [] as unknown as Uint32Array)).toThrow(InvalidArgumentError);
  });

  it('expands answers larger than its first buffers, before and after changes', () => {
    const trie = new TopicTrie({ engine });
    // Long enough that the answer spans several of the native engine's strings (60 KiB each).
    const names = Array.from({ length: 9000 }, (_, i) => `t${i % 3}__agent-${'a'.repeat(30)}-${i % 7}__s${i}`);
    for (const name of names) trie.add(name);
    let live = names.filter((_, i) => i % 3 === 0);
    for (let round = 0; round < 3; round++) {
      expect(sorted(trie.expand('t0__**'))).toEqual(sorted(live));
      expect(trie.expand('t0__**')).toEqual([...trie.expandIds('t0__**')].map((id) => trie.nameOf(id)));
      for (const name of live.filter((_, i) => i % 5 === 0)) trie.remove(name);
      live = live.filter((_, i) => i % 5 !== 0);
    }
  });

  it('lays changed subtrees down into the arrays of lists it freed, leaving the lists it keeps intact', () => {
    const trie = new TopicTrie({ engine });
    const live = new Set<string>();
    for (let i = 0; i < 900; i++) {
      const name = `t${i % 3}__a${i % 5}__s${i}`;
      trie.add(name);
      live.add(name);
    }
    // Lists of several sizes, some inside others, expanded in a different order each round so
    // that a freed list's array can come back to a list of another subtree.
    const patterns = ['t0__**', 't0__a1__**', 't1__**', 't2__a2__**', '**'];
    for (let round = 0; round < 12; round++) {
      for (let i = 0; i < 40; i++) {
        const name = `t${(round + i) % 3}__a${i % 5}__n${round}_${i}`;
        trie.add(name);
        live.add(name);
      }
      for (const name of [...live].filter((_, i) => (i + round) % 17 === 0)) {
        trie.remove(name);
        live.delete(name);
      }
      const order = round % 2 === 0 ? patterns : [...patterns].reverse();
      for (const pattern of order.slice(round % patterns.length)) {
        const expected = sorted([...live].filter((n) => modelMatches('lite', pattern, n)));
        expect(sorted(trie.expand(pattern))).toEqual(expected);
        expect(sorted([...trie.expandIds(pattern)].map((id) => trie.nameOf(id) as string))).toEqual(expected);
      }
      // Every list kept so far still answers for its subtree, changed since or not.
      for (const pattern of patterns) {
        const expected = sorted([...live].filter((n) => modelMatches('lite', pattern, n)));
        expect(sorted([...trie.expandIds(pattern)].map((id) => trie.nameOf(id) as string))).toEqual(expected);
      }
    }
  });

  it('expands answers of several native strings that are not ASCII', () => {
    const trie = new TopicTrie({ engine, dialect: 'mqtt' });
    const names = Array.from({ length: 6000 }, (_, i) => `t/é😀${'x'.repeat(i % 40)}/${i}`);
    for (const name of names) trie.add(name);
    // The first expand has too little room for the ends and splits; the second cuts at them.
    for (let round = 0; round < 2; round++) {
      expect(trie.expand('t/#')).toEqual([...trie.expandIds('t/#')].map((id) => trie.nameOf(id)));
    }
    expect(sorted(trie.expand('t/#'))).toEqual(sorted(names));
  });

  it('lists in segment order, by prefix, page by page', () => {
    const trie = new TopicTrie({ engine });
    for (const name of ['b', 'a__c', 'ab', 'a', 'a__b__x', 'a__b', 'B', 'a___b']) trie.add(name);
    // `a___b` is `a`,`_b`, and `_` sorts after `B` but before `b`.
    const all = ['B', 'a', 'a___b', 'a__b', 'a__b__x', 'a__c', 'ab', 'b'];
    expect(trie.list()).toEqual({ names: all });
    expect(trie.list('', 3)).toEqual({ names: ['B', 'a', 'a___b'], next: 'a___b' });
    expect(trie.list('', 3, 'a___b')).toEqual({ names: ['a__b', 'a__b__x', 'a__c'], next: 'a__c' });
    expect(trie.list('', 3, 'a__c')).toEqual({ names: ['ab', 'b'] });
    expect(trie.list('', 8)).toEqual({ names: all });
    expect(trie.list('a')).toEqual({ names: ['a', 'a___b', 'a__b', 'a__b__x', 'a__c'] });
    expect(trie.list('a__b', 1)).toEqual({ names: ['a__b'], next: 'a__b' });
    expect(trie.list('a__b', 1, 'a__b')).toEqual({ names: ['a__b__x'] });
    expect(trie.list('a', 10, 'a__bb')).toEqual({ names: ['a__c'] });
    expect(trie.list('a', 10, 'A')).toEqual({ names: ['a', 'a___b', 'a__b', 'a__b__x', 'a__c'] });
    expect(trie.list('a', 10, 'b')).toEqual({ names: [] });
    expect(trie.list('zz')).toEqual({ names: [] });
  });

  it('tracks the latest activity and lists idle names oldest first', () => {
    const trie = new TopicTrie({ engine });
    trie.add('a', 10);
    trie.add('b', 10);
    trie.add('c');
    trie.add('d', 40);
    expect(trie.touch('b', 30)).toBe(true);
    expect(trie.touch('a', 5)).toBe(true);
    expect(trie.touch('zz', 5)).toBe(false);
    trie.add('d', 20);
    expect(trie.idleSince(25)).toEqual(['c', 'a']);
    expect(trie.idleSince(31, 2)).toEqual(['c', 'a']);
    expect(trie.idleSince(41)).toEqual(['c', 'a', 'b', 'd']);
    expect(trie.idleSince(0)).toEqual([]);
    expect(trie.idleSince(41, 0)).toEqual([]);
    trie.remove('c');
    expect(trie.idleSince(11)).toEqual(['a']);
  });

  it('keeps idle order over many blocks under out-of-order timestamps', () => {
    // Well past TRIE_IDLE_BLOCK_ENTRIES keys, so blocks split and merge; timestamps in random order.
    const trie = new TopicTrie({ engine });
    const last = new Map<string, number>();
    let state = 7;
    const next = () => {
      state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
      return state % 5000;
    };
    for (let i = 0; i < 4000; i++) {
      const name = `t${i % 40}__s${i}`;
      const timestamp = next();
      trie.add(name, timestamp);
      last.set(name, timestamp);
    }
    for (let i = 0; i < 3000; i++) {
      const name = `t${i % 40}__s${(i * 7) % 4000}`;
      const timestamp = next();
      if (i % 3 === 0) {
        trie.remove(name);
        last.delete(name);
      } else if (last.has(name)) {
        trie.touch(name, timestamp);
        last.set(name, Math.max(last.get(name) as number, timestamp));
      }
    }
    const byAge = (cutoff: number) =>
      [...last.keys()]
        .filter((name) => (last.get(name) as number) < cutoff)
        .sort(
          (a, b) =>
            (last.get(a) as number) - (last.get(b) as number) || (trie.idOf(a) as number) - (trie.idOf(b) as number),
        );
    for (const cutoff of [1, 700, 2500, 5001]) expect(trie.idleSince(cutoff)).toEqual(byAge(cutoff));
    expect(trie.idleSince(5001, 100)).toEqual(byAge(5001).slice(0, 100));
  });

  it('gives memory back as names are removed, and clear() empties it', () => {
    const trie = new TopicTrie({ engine });
    const empty = trie.stats();
    const names = Array.from({ length: 3000 }, (_, i) => `t${i % 50}__a${i % 300}__s${i}`);
    for (const [i, name] of names.entries()) trie.add(name, i);
    expect(trie.stats()).toMatchObject({ names: 3000, segments: 50 + 300 + 3000 });
    expect(trie.stats().approximateBytes).toBeGreaterThan(empty.approximateBytes);
    for (const name of names) expect(trie.remove(name)).toBe(true);
    expect(trie.stats()).toEqual(empty);
    trie.add('x');
    trie.clear();
    expect(trie.size).toBe(0);
    expect(trie.expand('**')).toEqual([]);
    expect(trie.stats()).toEqual(empty);
  });
});

/** Multi-level names per dialect, with unusual but valid characters, and patterns over them. */
const WALK_CASES: Record<DialectName, { names: string[]; patterns: string[] }> = {
  lite: {
    names: [
      't1__a__s1',
      't1__a__s1__x',
      't1__a__s1__x__y',
      't1',
      't1__a___s',
      't1___',
      '_-__-_',
      't1__b-c__s2__x',
      `${'z'.repeat(30)}__${'Z9'.repeat(15)}`,
      't10__a',
    ],
    patterns: ['**', 't1__**', 't1__*__*__x', '*__a__**', 't1__a__s1__*', 't1', '*', '_-__*'],
  },
  mqtt: {
    names: ['a/b/c', 'a//c', '/', '//', 'a', 'a/b', '$sys/x', 'a/é/𝄞', 'a/ sp ace/%x!', 'a/b/c/d/e/f', '\u00a0/\uffff'],
    patterns: ['#', 'a/#', '+/+/#', '+', 'a/+/c', '/#', '$sys/#', 'a/é/+', '+/+'],
  },
  nats: {
    names: ['a.b.c', 'a.b', 'a.b.c.d', 'x.y', 'a.ü.c', 'a.$x.c', 'a.b-c_d/e.f'],
    patterns: ['>', 'a.>', '*.b.*', 'a.*.c', '*.*', 'a.*.>'],
  },
};

describe.each(ENGINES)('%s engine: expand writes names during the walk', (engine) => {
  it.each(DIALECT_NAMES)('%s: the names of expandIds, in the same order', (dialect) => {
    const { names, patterns } = WALK_CASES[dialect];
    const trie = new TopicTrie({ dialect, engine });
    for (const name of names) trie.add(name);
    // A removed and re-added name lands elsewhere in creation order.
    trie.remove(names[1] as string);
    trie.add(names[1] as string);
    for (const pattern of patterns) {
      const expanded = trie.expand(pattern);
      expect(expanded).toEqual([...trie.expandIds(pattern)].map((id) => trie.nameOf(id)));
      expect(sorted(expanded)).toEqual(sorted(names.filter((n) => modelMatches(dialect, pattern, n))));
    }
  });
});

describe.runIf(ENGINES.length > 1)('engines agree', () => {
  it('on ids and on the order of expand results', () => {
    const tries = ENGINES.map((engine) => new TopicTrie({ engine }));
    const names = Array.from({ length: 500 }, (_, i) => `t${i % 7}__a${i % 13}__s${i % 29}`);
    for (const trie of tries) {
      for (const [i, name] of names.entries()) {
        trie.add(name);
        if (i % 5 === 0) trie.remove(names[i >> 1] as string);
      }
    }
    const [first, ...others] = tries as [TopicTrie, ...TopicTrie[]];
    for (const other of others) {
      for (const name of names) expect(other.idOf(name)).toBe(first.idOf(name));
      for (const pattern of ['**', 't1__**', '*__a3__*', 't2__*__s5', '*__*__*']) {
        expect(other.expand(pattern)).toEqual(first.expand(pattern));
        expect(other.expandIds(pattern)).toEqual(first.expandIds(pattern));
      }
    }
  });
});

describe.runIf(ENGINES.length > 1)('engines agree on long answers of single names', () => {
  // The native adapter reads a long answer of names it holds by id, then puts each in its place
  // (ts/engine/native/trie.ts): the places must give the walk order, before and after changes.
  it('in walk order and matching the model, when every name or only some were handed out before', () => {
    const tries = ENGINES.map((engine) => new TopicTrie({ engine }));
    // Added in an order unlike the walk's, so that ids lie scattered over each answer.
    const live = Array.from({ length: 3000 }, (_, i) => {
      const scattered = (i * 7919) % 3000;
      return `t${scattered % 37}__a${scattered % 11}__s${scattered}`;
    });
    for (const trie of tries) for (const name of live) trie.add(name);
    const patterns = ['*__*__*', '*__a3__*', 't5__*__*'];
    const expectAgreement = () => {
      const [first, ...others] = tries as [TopicTrie, ...TopicTrie[]];
      for (const pattern of patterns) {
        const expected = sorted(live.filter((n) => modelMatches('lite', pattern, n)));
        // The first call may hand names out by text; the later ones hold them all.
        for (let call = 0; call < 3; call++) {
          const answer = first.expand(pattern);
          expect(sorted(answer), pattern).toEqual(expected);
          for (const other of others) expect(other.expand(pattern), pattern).toEqual(answer);
        }
      }
    };
    expectAgreement();
    for (let i = 0; i < live.length; i += 7) {
      const name = live[i] as string;
      const added = `t${i % 37}__a${i % 11}__new${i}`;
      for (const trie of tries) {
        trie.remove(name);
        trie.add(added);
      }
      live[i] = added;
    }
    expectAgreement();
  });
});

describe.each(ENGINES)('%s engine: names handed out before', (engine) => {
  // The native adapter keeps the names it has handed out by the node position they end at
  // (ts/engine/native/trie.ts): a node a removed name ended at, or positions after the nodes moved,
  // or after clear(), must never answer with an old name.
  it('never answer for a name removed or moved: reused ids and nodes, a new layout, clear', () => {
    const trie = new TopicTrie({ engine });
    const names = Array.from({ length: 40 }, (_, i) => `t${i % 4}__a${i}`);
    const live = [...names];
    const expectExpansions = (patterns: readonly string[]) => {
      for (const pattern of patterns) {
        const expected = live.filter((n) => modelMatches('lite', pattern, n));
        expect(sorted(trie.expand(pattern)), pattern).toEqual(sorted(expected));
      }
    };
    for (const name of names) trie.add(name);
    expectExpansions(['**']);
    const old = trie.idOf('t1__a5') as number;
    expect(trie.nameOf(old)).toBe('t1__a5');
    trie.remove('t1__a5');
    // The same id, and on native the node the removed name ended at.
    expect(trie.add('t1__zz')).toBe(old);
    expect(trie.nameOf(old)).toBe('t1__zz');
    live.splice(live.indexOf('t1__a5'), 1, 't1__zz');
    expectExpansions(['t1__**', '**']);
    // Enough new names that the next walk lays the trie out again: every node may move.
    for (let i = 0; i < 30; i++) live.push(trie.nameOf(trie.add(`t${i % 3}__b${i}`)) as string);
    expectExpansions(['t0__**', 't1__**', 't2__**', '*__a1', '**']);
    // Nodes that move into positions other names held: t0 goes, and enough is added elsewhere that
    // the next walk lays the trie out again, so t1 takes t0's place with the same names as before.
    for (const name of live.filter((n) => n.startsWith('t0__'))) trie.remove(name);
    live.splice(0, live.length, ...live.filter((n) => !n.startsWith('t0__')));
    for (let i = 0; i < 40; i++) live.push(trie.nameOf(trie.add(`u__c${i}`)) as string);
    expectExpansions(['t1__**', 't2__**', '**']);
    for (let i = 0; i < 3; i++) live.push(trie.nameOf(trie.add(`t0__late${i}`)) as string);
    expectExpansions(['t0__**']);
    // Laid out again, with whole subtrees read as runs (twice: the second joins what the first
    // kept; the subtrees are large enough that the native adapter joins them as blocks).
    for (const tenant of ['t1', 't2', 'v']) {
      for (let i = 0; i < 70; i++) live.push(trie.nameOf(trie.add(`${tenant}__w${i}`)) as string);
    }
    expectExpansions(['**', 't1__**', '**', 't1__**', '**']);
    // Names at nodes that were only prefixes place no node: one name fewer and one more in t2's
    // subtree (the same count), then one more in t1's.
    trie.remove('t2__b2');
    live.splice(live.indexOf('t2__b2'), 1);
    live.push(trie.nameOf(trie.add('t2')) as string);
    expectExpansions(['**', '**', '**']);
    live.push(trie.nameOf(trie.add('t1')) as string);
    expectExpansions(['**', 't1__**']);
    trie.clear();
    const first = trie.add('t5__fresh');
    expect(trie.nameOf(first)).toBe('t5__fresh');
    expect(trie.expand('**')).toEqual(['t5__fresh']);
  });
});

describe.each(ENGINES)('%s engine: names handed out across many ids', (engine) => {
  // The native adapter keeps handed-out names in pages by id: ids first met far past the others,
  // and ids freed and taken again on pages that were never or already filled, answer their names.
  it('answers with the current name of every id, first walk in any id order', () => {
    const trie = new TopicTrie({ engine });
    const names = Array.from({ length: 10_000 }, (_, i) => `t${i % 7}__a${i}`);
    const live = new Set(names);
    for (const name of names) trie.add(name);
    // Only the last tenant's names first: its ids are spread over every page.
    expect(sorted(trie.expand('t6__**'))).toEqual(sorted(names.filter((n) => n.startsWith('t6__'))));
    const removed = ['t6__a9995', 't0__a7', 't2__a5000', 't1__a4096'];
    for (const name of removed) {
      const id = trie.idOf(name) as number;
      expect(trie.remove(name)).toBe(true);
      live.delete(name);
      const added = `t${id % 7}__new${id}`;
      expect(trie.add(added)).toBe(id);
      live.add(added);
    }
    for (let i = 0; i < 5000; i++) live.add(trie.nameOf(trie.add(`u__b${i}`)) as string);
    for (const pattern of ['t6__**', '**', 't0__**', 'u__**']) {
      const expected = [...live].filter((n) => modelMatches('lite', pattern, n));
      expect(sorted(trie.expand(pattern)), pattern).toEqual(sorted(expected));
    }
  });
});

describe.each(ENGINES)('%s engine: changes after a walk', (engine) => {
  it('sees a name removed or added again at a node that stays as a prefix', () => {
    const trie = new TopicTrie({ engine });
    for (const name of ['a__b', 'a__b__c', 'a__b__c__d', 'a__e', 'x__y']) trie.add(name);
    let filler = 0;
    // Places enough new nodes elsewhere that the next walk lays the whole trie out again, so the
    // change that follows lands in a subtree laid out before it.
    const relayout = () => {
      for (let i = 0; i < 20; i++) trie.add(`z${filler++}__q`);
      expect(trie.count('*__q')).toBe(filler);
    };
    expect(trie.expand('a__**')).toEqual(['a__b', 'a__b__c', 'a__b__c__d', 'a__e']);
    trie.remove('a__b__c');
    expect(trie.expand('a__**')).toEqual(['a__b', 'a__b__c__d', 'a__e']);
    relayout();
    trie.remove('a__b');
    expect(trie.expand('a__**')).toEqual(['a__b__c__d', 'a__e']);
    relayout();
    trie.add('a__b__c');
    expect(trie.expand('a__b__**')).toEqual(['a__b__c', 'a__b__c__d']);
    relayout();
    trie.add('a__b');
    expect(trie.expand('a__**')).toEqual(['a__b', 'a__b__c', 'a__b__c__d', 'a__e']);
  });
});

describe.runIf(ENGINES.length > 1)('engines agree across compactions', () => {
  it('when names come and go under subtrees laid out by an earlier walk', () => {
    // A walk compacts (both engines); the changes after it land inside and beside subtrees that a
    // later walk may read straight through their positions (js), so answers and order must hold.
    const tries = ENGINES.map((engine) => new TopicTrie({ engine }));
    const names = Array.from({ length: 600 }, (_, i) => `t${i % 5}__a${i % 11}__s${i % 23}${i % 3 ? '__x' : ''}`);
    const patterns = ['**', 't1__**', 't1__a4__**', '*__a3__*', '*__*__*__x', 't2__*__s5__*'];
    const check = () => {
      const candidates = [...names, 't1__a4__s4__y', 't1__a4__new', 't9__a0__s0'];
      const live = [...new Set(candidates)].filter((n) => (tries[0] as TopicTrie).has(n));
      const [first, ...others] = tries as [TopicTrie, ...TopicTrie[]];
      for (const pattern of patterns) {
        expect(sorted(first.expand(pattern))).toEqual(sorted(live.filter((n) => modelMatches('lite', pattern, n))));
        expect(first.expand(pattern)).toEqual([...first.expandIds(pattern)].map((id) => first.nameOf(id)));
        for (const other of others) expect(other.expand(pattern)).toEqual(first.expand(pattern));
      }
    };
    for (const trie of tries) for (const name of names) trie.add(name);
    check();
    for (const [step, edit] of [
      (t: TopicTrie) => t.remove('t1__a4__s4__x'),
      (t: TopicTrie) => t.add('t1__a4__s4__y'),
      (t: TopicTrie) => t.add('t1__a4__new'),
      (t: TopicTrie) => t.remove('t1__a4__s15'),
      (t: TopicTrie) => t.add('t9__a0__s0'),
      (t: TopicTrie) => {
        for (const n of names.slice(0, 200)) t.remove(n);
      },
      (t: TopicTrie) => {
        for (const n of names.slice(0, 100)) t.add(n);
      },
    ].entries()) {
      for (const trie of tries) edit(trie);
      // Every other step walks in between, so some changes meet a freshly compacted trie.
      if (step % 2 === 1) check();
    }
    check();
  });
});

describe.each(ENGINES)('%s engine: addMany', (engine) => {
  it('adds names in segment order and returns their ids in the order given', () => {
    const trie = new TopicTrie({ engine });
    trie.add('b__x');
    const names = ['t1__a1__s2', 't10', 't1__a1', 't1', 'b__x', 't1__a0__s9', 't1__a1__s2', 't1_x__y'];
    const ids = trie.addMany(names, [5, 6, 7, 8, 9, 10, 11, 12]);
    expect([...ids].map((id) => trie.nameOf(id))).toEqual(names);
    expect(ids[0]).toBe(ids[6]);
    expect(trie.size).toBe(7);
    // Given timestamps count as in `add` (a later one for a name given twice, a touch for one there).
    expect(trie.idleSince(9)).toEqual(['t10', 't1__a1', 't1']);
    // Segment order: `t1` and its subtree before `t10` and `t1_x`.
    expect(trie.list().names).toEqual(['b__x', 't1', 't1__a0__s9', 't1__a1', 't1__a1__s2', 't10', 't1_x__y']);
    // Children in order of creation, which followed segment order here.
    expect(trie.expand('t1__**')).toEqual(['t1__a0__s9', 't1__a1', 't1__a1__s2']);
  });

  it('gives a fresh trie ids in segment order, equal names by their first place', () => {
    const trie = new TopicTrie({ engine });
    // Names whose string order and segment order differ (`a_` sorts before `a__B` as a string,
    // after it by segments), upper case before lower, and names given more than once.
    const segments = ['a', 'a_', 'B', 'b', 'ab', 'z9', 'Z', '0'];
    const names: string[] = [];
    for (let i = 0; i < 400; i++) {
      const depth = 1 + (i % 3);
      const parts = Array.from({ length: depth }, (_, d) => segments[(i * (d + 3) + d * 5) % segments.length]);
      names.push(parts.join('__'));
    }
    const ids = trie.addMany(names);
    const segmentOrder = (x: string, y: string) => {
      const xs = x.split('__');
      const ys = y.split('__');
      for (let d = 0; d < Math.min(xs.length, ys.length); d++) {
        const a = xs[d] as string;
        const b = ys[d] as string;
        if (a !== b) return a < b ? -1 : 1;
      }
      return xs.length - ys.length;
    };
    const distinct = [...new Set(names)].sort(segmentOrder);
    expect(distinct.map((name) => trie.idOf(name))).toEqual(distinct.map((_, i) => i));
    expect([...ids].map((id) => trie.nameOf(id))).toEqual(names);
  });

  it('throws like add at the first invalid name, keeping those before it', () => {
    const trie = new TopicTrie({ engine });
    expect(() => trie.addMany(['a__b', 'c d', 'a'])).toThrow(InvalidLiteTopicError);
    expect(trie.has('a')).toBe(true);
    expect(() => trie.addMany(['x'], [1, 2])).toThrow(InvalidArgumentError);
    const mqtt = new TopicTrie({ engine, dialect: 'mqtt' });
    expect([...mqtt.addMany(['a/b', 'a'])].map((id) => mqtt.nameOf(id))).toEqual(['a/b', 'a']);
    expect(() => mqtt.addMany(['a/+'])).toThrow(InvalidTopicError);
  });

  it('with order "given", adds as add would, name by name, in one call', () => {
    const names = ['t1__a1__s2', 't10', 't1__a1', 'b__x', 't1__a1__s2', 't1__a0__s9', 't1'];
    const stamps = [5, 6, 7, 8, 9, 10, 11];
    const one = new TopicTrie({ engine });
    const many = new TopicTrie({ engine });
    for (const trie of [one, many]) {
      trie.add('b__x', 1);
      trie.add('gone');
      trie.remove('gone');
    }
    const expected = names.map((name, i) => one.add(name, stamps[i]));
    expect([...many.addMany(names, stamps, { order: 'given' })]).toEqual(expected);
    // The same ids, the same activity (a touch for a name there, the later one for a name twice),
    // the same child order (creation order, not segment order).
    expect(many.idleSince(100)).toEqual(one.idleSince(100));
    expect(many.expand('**')).toEqual(one.expand('**'));
    expect(many.expand('t1__**')).toEqual(['t1__a1', 't1__a1__s2', 't1__a0__s9']);
    expect(() => many.addMany(['y', 'c d', 'z'], undefined, { order: 'given' })).toThrow(InvalidLiteTopicError);
    expect([many.has('y'), many.has('z')]).toEqual([true, false]);
    expect(() => many.addMany(['y'], undefined, { order: 'random' as 'given' })).toThrow(InvalidArgumentError);
  });
});

describe.runIf(ENGINES.length > 1)('engines agree on addMany', () => {
  it('gives the same ids for the same history', () => {
    const names = Array.from({ length: 300 }, (_, i) => `t${(i * 7) % 5}__a${(i * 3) % 11}__s${i % 17}`);
    const tries = ENGINES.map((engine) => new TopicTrie({ engine }));
    for (const trie of tries) {
      trie.add('t3__a1');
      trie.remove('t3__a1');
    }
    const ids = tries.map((trie) => [...trie.addMany(names)]);
    expect(ids[1]).toEqual(ids[0]);
    expect((tries[1] as TopicTrie).expand('**')).toEqual((tries[0] as TopicTrie).expand('**'));
  });
});
