/**
 * The trie's memory, child side: builds one trie of distinct workload names in a fresh process and
 * prints what it cost as one JSON line. Run by `runTrieBench` in ./trie.ts as
 *   node --expose-gc --import tsx bench/trie-memory.ts <native|js> <names> <seed>
 * A fresh process per engine keeps one trie's garbage out of the other's figures.
 */

import { lib } from './lib.js';
import { collectedMemory } from './measure.js';
import { makeTopics } from './workload.js';

const KINDS = ['native', 'js'] as const;
type Kind = (typeof KINDS)[number];

export interface TrieMemorySample {
  kind: Kind;
  names: number;
  buildMs: number;
  rssBytes: number;
  heapUsedBytes: number;
  externalBytes: number;
  /**
   * RSS and heap growth over the same baseline once `expand('**')` has handed every name out and
   * its answer was dropped: the native adapter keeps the names it hands out (ts/engine/native/trie.ts).
   */
  rssAfterExpandAllBytes: number;
  heapUsedAfterExpandAllBytes: number;
  /** The trie's own estimate (`TopicTrie.stats().approximateBytes`). */
  approximateBytes: number;
  nodes: number;
}

/** `n` distinct workload names (the workload repeats hot names, so it is drawn from until enough). */
export function distinctNames(n: number, seed: number): string[] {
  const names = new Set<string>();
  for (let round = 0; names.size < n; round++) {
    for (const name of makeTopics(Math.max(n, 10_000), seed + round)) {
      names.add(name);
      if (names.size === n) break;
    }
  }
  return [...names];
}

function build(kind: Kind, count: number, seed: number): TrieMemorySample {
  // Inputs and loaded code exist before the baseline, so only the trie itself is counted.
  const names = distinctNames(count, seed);
  new lib.TopicTrie({ engine: kind }).add('warm__up');
  const before = collectedMemory();
  const started = performance.now();
  const trie = new lib.TopicTrie({ engine: kind });
  for (let i = 0; i < names.length; i++) trie.add(names[i] as string, i);
  const buildMs = performance.now() - started;
  const after = collectedMemory();
  // The names stay reachable until after the measurement: the native engine copied them, and their
  // collection would otherwise be counted against its growth.
  if (trie.size !== count || names.length !== count) throw new Error('trie lost names');
  const stats = trie.stats();
  if (trie.expand('**').length !== count) throw new Error('expand lost names');
  const expanded = collectedMemory();
  if (trie.size !== count || names.length !== count) throw new Error('trie lost names');
  return {
    kind,
    names: count,
    buildMs,
    rssBytes: after.rss - before.rss,
    heapUsedBytes: after.heapUsed - before.heapUsed,
    externalBytes: after.external - before.external,
    rssAfterExpandAllBytes: expanded.rss - before.rss,
    heapUsedAfterExpandAllBytes: expanded.heapUsed - before.heapUsed,
    approximateBytes: stats.approximateBytes,
    nodes: stats.nodes,
  };
}

function main(argv: readonly string[]): void {
  const [kind, names, seed] = argv;
  if (!KINDS.includes(kind as Kind) || !Number.isInteger(Number(names)) || !Number.isInteger(Number(seed))) {
    throw new Error(`usage: trie-memory.ts <${KINDS.join('|')}> <names> <seed> (got ${argv.join(' ')})`);
  }
  process.stdout.write(`${JSON.stringify(build(kind as Kind, Number(names), Number(seed)))}\n`);
}

if (require.main === module) main(process.argv.slice(2));
