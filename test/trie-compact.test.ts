/**
 * Compaction in steps: walks lay the trie out again a step at a time while names come and go
 * between the steps. Both engines through the public API (answers, ids and order must not depend
 * on where a pass stands), and the js engine's links checked after every step against a model, as
 * the Rust model test does for the native core (native/core/src/trie/tests/model.rs).
 */
import { describe, expect, it } from 'vitest';
import { compact, compactPartly, preorderSuccessor } from '../ts/engine/js/trie/compact.js';
import { JsTopicTrie } from '../ts/engine/js/trie/trie.js';
import { NONE, ROOT } from '../ts/engine/js/trie/walk.js';
import { TopicTrie } from '../ts/index.js';
import { ENGINES, RUN_TESTS_WITHOUT_NATIVE } from './engines.js';
import { modelMatches } from './model/matcher.js';

const sorted = (names: readonly string[]) => [...names].sort();

/** A small deterministic generator (the tests need no statistical quality, only repeatability). */
function generator(seed: number): (below: number) => number {
  let state = seed >>> 0;
  return (below) => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state % below;
  };
}

/**
 * Sessions added round-robin over tenants and agents, so that every subtree is spread over the
 * node arrays and walks over every node start a pass.
 */
function scatteredNames(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `t${i % 7}__a${i % 97}__s${i}`);
}

describe.runIf(ENGINES.length > 1)('engines agree while a compaction pass is under way', () => {
  it('on answers, their order and ids, with names added and removed between the steps', () => {
    const tries = ENGINES.map((engine) => new TopicTrie({ engine }));
    const names = scatteredNames(10_000);
    for (const trie of tries) for (const name of names) trie.add(name);
    const live = new Set(names);
    const random = generator(7);
    const patterns = ['*__*__*', 't3__**', 't1__a8__**', '*__a5__*', 't2__*__s100'];
    // Each wide walk takes a step; the first of them start the pass, the later ones carry it on.
    for (let round = 0; round < 25; round++) {
      for (let change = 0; change < 20; change++) {
        const added = `t${random(9)}__a${random(120)}__s${random(40_000)}__x`;
        const removed = names[random(names.length)] as string;
        for (const trie of tries) {
          trie.add(added);
          trie.remove(removed);
        }
        live.add(added);
        live.delete(removed);
      }
      const [first, ...others] = tries as [TopicTrie, ...TopicTrie[]];
      for (const pattern of patterns) {
        const answer = first.expand(pattern);
        expect(sorted(answer)).toEqual(sorted([...live].filter((n) => modelMatches('lite', pattern, n))));
        expect([...first.expandIds(pattern)].map((id) => first.nameOf(id))).toEqual(first.expand(pattern));
        for (const other of others) {
          expect(other.expand(pattern)).toEqual(answer);
          expect([...other.expandIds(pattern)]).toEqual([...first.expandIds(pattern)]);
        }
      }
    }
  });
});

/**
 * The js trie's links agree wherever the nodes lie: every node reached from the root is its
 * parent's child, reachable by segment, its name points at it, and the nodes reached and the free
 * positions account for every position.
 */
function checkLinks(trie: JsTopicTrie): void {
  let reached = 1;
  for (let node = preorderSuccessor(trie, ROOT); node !== NONE; node = preorderSuccessor(trie, node)) {
    const parent = trie.parent[node] as number;
    const map = trie.children[parent];
    if (map !== undefined) expect(map.get(trie.segment[node] as number)).toBe(node);
    const name = trie.nodeName[node] as number;
    if (name !== NONE) expect(trie.idOf(trie.nodeText[node] as string)).toBe(name);
    reached++;
  }
  let free = 0;
  for (let at = 1; at < trie.nodeCount; at++) if (trie.isFreeNode(at)) free++;
  expect(reached).toBe(trie.liveNodes());
  expect(reached + free).toBe(trie.nodeCount);
}

describe.runIf(RUN_TESTS_WITHOUT_NATIVE)('js engine: a compaction pass in small steps', () => {
  it('keeps links, ids and answers whole between steps, with random changes between them', () => {
    const random = generator(11);
    const trie = new JsTopicTrie('lite', 64);
    const live = new Map<string, number>();
    const words = ['a', 'b', 'c', 'd', '_b'];
    for (let step = 0; step < 1500; step++) {
      const name = Array.from({ length: 1 + random(4) }, () => words[random(words.length)]).join('__');
      if (random(3) === 0 && live.size > 0) {
        const victim = [...live.keys()][random(live.size)] as string;
        expect(trie.remove(victim)).toBe(true);
        live.delete(victim);
      } else {
        const id = trie.add(name, undefined);
        if (live.has(name)) expect(id).toBe(live.get(name));
        live.set(name, id);
      }
      if (random(3) === 0) compactPartly(trie, 1 + random(6));
      checkLinks(trie);
      for (const [known, id] of live) expect(trie.idOf(known)).toBe(id);
      const pattern = ['**', 'a__**', '*__b', 'b__*__**', '*__*'][random(5)] as string;
      expect(sorted(trie.expand(pattern) ?? [])).toEqual(
        sorted([...live.keys()].filter((n) => modelMatches('lite', pattern, n))),
      );
    }
  });

  it('spreads a pass over walks in proportion to the nodes each visited', () => {
    const trie = new JsTopicTrie('lite', 64);
    const names = scatteredNames(40_000);
    for (const name of names) trie.add(name, undefined);
    let walks = 0;
    while (trie.compactionLast === NONE) {
      expect(trie.count('*__*__*')).toBe(names.length);
      walks++;
      expect(walks).toBeLessThan(100);
    }
    let steps = 0;
    while (trie.compactionLast !== NONE) {
      const placed = trie.compactionNext;
      trie.expand('t3__**');
      // `t3__**` visits one node on its way down: a step of at most one node.
      if (trie.compactionLast !== NONE) expect(trie.compactionNext - placed).toBeLessThanOrEqual(1);
      trie.add(`t${steps % 3}__late__s${steps}`, undefined);
      trie.count('*__*__*');
      checkLinks(trie);
      steps++;
    }
    expect(steps).toBeGreaterThan(1);
    // The names added during the pass went wherever there was room; a whole pass lays them out too.
    compact(trie);
    let previous = -1;
    for (let node = ROOT; node !== NONE; node = preorderSuccessor(trie, node)) {
      expect(node).toBe(previous + 1);
      previous = node;
    }
  });
});
