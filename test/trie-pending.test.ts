/**
 * Expands of changed subtrees below a kept list's holder, which both engines answer by merging the
 * holder's old list with the edits it kept since (docs/TRIE.md, "Pending edits"): the answer must
 * be the subtree in walk order (depth first, children in order of creation) under random adds and
 * removes, names added and removed again before an expand, compaction passes in between, and lists
 * whose edits were dropped (too many of them, or a lay-down below).
 */
import { describe, expect, it } from 'vitest';
import { TopicTrie } from '../ts/index.js';
import { ENGINES } from './engines.js';

/** A tree of prefixes kept in order of creation, pruned as names go: the walk order, obviously. */
class OrderModel {
  private readonly root: ModelNode = { children: new Map(), named: false, names: 0 };

  add(name: string): void {
    let node = this.root;
    const path = [node];
    for (const segment of name.split('__')) {
      let child = node.children.get(segment);
      if (child === undefined) {
        child = { children: new Map(), named: false, names: 0 };
        node.children.set(segment, child);
      }
      node = child;
      path.push(node);
    }
    if (node.named) return;
    node.named = true;
    for (const on of path) on.names++;
  }

  remove(name: string): void {
    const segments = name.split('__');
    const path = [this.root];
    for (const segment of segments) {
      const child = path[path.length - 1]?.children.get(segment);
      if (child === undefined) return;
      path.push(child);
    }
    const node = path[path.length - 1] as ModelNode;
    if (!node.named) return;
    node.named = false;
    for (const on of path) on.names--;
    // Prefixes without names go, so a later name there makes them anew, after their siblings.
    for (let level = segments.length; level > 0; level--) {
      if ((path[level] as ModelNode).names === 0)
        (path[level - 1] as ModelNode).children.delete(segments[level - 1] as string);
    }
  }

  /** What `prefix__**` matches, in walk order. */
  below(prefix: string): string[] {
    let node: ModelNode | undefined = this.root;
    for (const segment of prefix.split('__')) node = node?.children.get(segment);
    const out: string[] = [];
    const walk = (at: ModelNode, path: string): void => {
      if (at.named && path !== prefix) out.push(path);
      for (const [segment, child] of at.children) walk(child, `${path}__${segment}`);
    };
    if (node !== undefined) walk(node, prefix);
    return out;
  }
}

interface ModelNode {
  children: Map<string, ModelNode>;
  named: boolean;
  names: number;
}

/** A seeded generator (an LCG), so that every engine sees the same history. */
function generator(seed: number): (below: number) => number {
  let state = seed >>> 0;
  return (below) => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state % below;
  };
}

describe.each(ENGINES)('%s engine: changed subtrees below a kept list', (engine) => {
  it('come out in walk order after adds and removes, through compactions and dropped edits', () => {
    const trie = new TopicTrie({ engine });
    const model = new OrderModel();
    const random = generator(23);
    const nameAt = (levels: number) =>
      Array.from({ length: levels }, (_, level) => `${'tasx'[level]}${random(level === 0 ? 3 : 6)}`).join('__');
    const add = (name: string) => {
      trie.add(name);
      model.add(name);
    };
    const remove = (name: string) => {
      trie.remove(name);
      model.remove(name);
    };
    const check = (prefix: string) => {
      const expected = model.below(prefix);
      expect(trie.expand(`${prefix}__**`)).toEqual(expected);
      expect([...trie.expandIds(`${prefix}__**`)].map((id) => trie.nameOf(id))).toEqual(expected);
    };
    for (let i = 0; i < 400; i++) add(nameAt(2 + random(3)));
    for (const t of ['t0', 't1', 't2']) check(t);
    for (let round = 0; round < 300; round++) {
      // Bursts now and then: more edits than a list keeps, or than a merge takes.
      const changes = round % 17 === 16 ? 400 : 1 + random(12);
      for (let c = 0; c < changes; c++) {
        const name = nameAt(1 + random(4));
        const kind = random(5);
        if (kind === 0) {
          // Added and removed again before any expand.
          if (!trie.has(name)) {
            add(name);
            remove(name);
          }
        } else if (kind < 3) {
          add(name);
        } else {
          remove(name);
        }
      }
      const t = `t${random(3)}`;
      const a = `${t}__a${random(5)}`;
      check(`${a}__s${random(5)}`);
      check(a);
      if (random(3) === 0) check(t);
      // A walk through every node of three levels, which starts and carries compaction passes.
      if (round % 10 === 5) expect(trie.count('*__*__*__*')).toBeGreaterThanOrEqual(0);
      if (round % 10 === 7) trie.expand('*__*__*');
    }
  });

  it('put new children of blocks ending at one place deepest first, before names starting there', () => {
    const trie = new TopicTrie({ engine });
    const initial = ['t__a__s1__x', 't__a__s1__y', 't__a__s2__x', 't__b__s1__x', 'u__x'];
    for (const name of initial) trie.add(name);
    // The root holds the list; every expand below it merges.
    expect(trie.expand('**')).toEqual(initial);
    // At the end of s1 (where s2 starts): s1's new child, then s2's own name.
    trie.add('t__a__s2');
    trie.add('t__a__s1__z');
    // At the end of s2, a and t's old blocks (where t__b starts): s2's, a's, then t's new children,
    // then t__b's own name.
    trie.add('t__b');
    trie.add('t__c__x');
    trie.add('t__a__s3__x');
    trie.add('t__a__s2__w');
    // A prefix named and unnamed again, a name removed, a new name gone again.
    trie.add('t__a__s1');
    trie.remove('t__a__s1');
    trie.add('t__a');
    trie.remove('t__a__s1__x');
    trie.add('t__a__s4');
    trie.remove('t__a__s4');
    const t = [
      't__a',
      't__a__s1__y',
      't__a__s1__z',
      't__a__s2',
      't__a__s2__x',
      't__a__s2__w',
      't__a__s3__x',
      't__b',
      't__b__s1__x',
      't__c__x',
    ];
    expect(trie.expand('t__a__s1__**')).toEqual(['t__a__s1__y', 't__a__s1__z']);
    expect(trie.expand('t__a__**')).toEqual(t.slice(1, 7));
    expect(trie.expand('t__**')).toEqual(t);
    expect(trie.expand('**')).toEqual([...t, 'u__x']);
  });

  it('come out with their own texts when added in batches below a list, in either order', () => {
    const trie = new TopicTrie({ engine });
    const model = new OrderModel();
    const random = generator(41);
    const first = Array.from({ length: 200 }, (_, i) => `t__a${i % 4}__s${i % 13}__x${i}`);
    trie.addMany(first, undefined, { order: 'given' });
    for (const name of first) model.add(name);
    expect(trie.expand('t__**')).toEqual(model.below('t'));
    for (let round = 0; round < 40; round++) {
      // New sessions and names in old ones, below the list `t` holds.
      const batch = Array.from({ length: 1 + random(6) }, () => `t__a${random(4)}__s${random(20)}__y${random(50)}`);
      const bySegments = round % 2 === 1;
      trie.addMany(batch, undefined, { order: bySegments ? 'segments' : 'given' });
      // In segment order the trie adds them sorted segment by segment (a separator sorts first).
      const key = (name: string) => name.replaceAll('__', '\0');
      const added = bySegments ? [...batch].sort((x, y) => (key(x) < key(y) ? -1 : key(x) > key(y) ? 1 : 0)) : batch;
      for (const name of added) model.add(name);
      const agent = `t__a${random(4)}`;
      expect(trie.expand(`${agent}__**`)).toEqual(model.below(agent));
      if (round % 3 === 2) expect(trie.expand('t__**')).toEqual(model.below('t'));
    }
  });

  it('come out in walk order past the edits a large list keeps', () => {
    const trie = new TopicTrie({ engine });
    const model = new OrderModel();
    const names = Array.from({ length: 40_000 }, (_, i) => `t__a__s${i % 200}__x${Math.floor(i / 200)}`);
    trie.addMany(names, undefined, { order: 'given' });
    for (const name of names) model.add(name);
    expect(trie.expand('t__**')).toEqual(model.below('t'));
    // More edits than any list keeps, checked on the way past them.
    for (let y = 0; y < 4200; y++) {
      const name = `t__a__s${y % 200}__y${y}`;
      trie.add(name);
      model.add(name);
      if (y % 1000 === 999 || y > 4090) expect(trie.expand('t__a__s7__**')).toEqual(model.below('t__a__s7'));
    }
    expect(trie.expand('t__a__**')).toEqual(model.below('t__a'));
    expect(trie.expand('t__**')).toEqual(model.below('t'));
  });
});
