/**
 * Section 3, child side: builds one index in a fresh process and prints what it costs in memory as
 * one JSON line. Run by `measureIndexMemory` in ./pattern.ts as
 *   node --expose-gc --import tsx bench/pattern-memory.ts <native|js|qlobber> <patterns> <seed>
 * (compiled: node --expose-gc dist/bench/pattern-memory.js ...; ./lib.ts `scriptArgs`).
 * A fresh process per index keeps one index's garbage and heap growth out of another's figures.
 */

import { lib } from './lib.js';
import { collectedMemory } from './measure.js';

const { PatternIndex } = lib;

import { buildIndex, buildQlobber } from './pattern-reverse.js';
import { makeSubscriptions } from './workload.js';

const KINDS = ['native', 'js', 'qlobber'] as const;
type Kind = (typeof KINDS)[number];

export interface MemorySample {
  kind: Kind;
  patterns: number;
  heapUsedBytes: number;
  rssBytes: number;
  externalBytes: number;
  /** The index's own estimate (`PatternIndex.stats().approximateBytes`); qlobber has none. */
  approximateBytes: number | null;
  buildMs: number;
}

function build(kind: Kind, patterns: number, seed: number): MemorySample {
  // Inputs and loaded code exist before the baseline, so only the index itself is counted.
  const subscriptions = makeSubscriptions(patterns, seed);
  if (kind !== 'qlobber') new PatternIndex({ engine: kind }).add('warm__up', 0);
  else if (buildQlobber([{ pattern: 'warm__**', id: 0 }]) === undefined) throw new Error('qlobber is not installed');
  const before = collectedMemory();
  const started = performance.now();
  const index = kind === 'qlobber' ? buildQlobber(subscriptions) : buildIndex(kind, subscriptions);
  const buildMs = performance.now() - started;
  const after = collectedMemory();
  const approximateBytes = index instanceof PatternIndex ? index.stats().approximateBytes : null;
  // Both stay reachable until after the measurement.
  if (subscriptions.length !== patterns || (index instanceof PatternIndex && index.size !== patterns)) {
    throw new Error('index lost entries');
  }
  return {
    kind,
    patterns,
    heapUsedBytes: after.heapUsed - before.heapUsed,
    rssBytes: after.rss - before.rss,
    externalBytes: after.external - before.external,
    approximateBytes,
    buildMs,
  };
}

function main(argv: readonly string[]): void {
  const [kind, patterns, seed] = argv;
  if (!KINDS.includes(kind as Kind) || !Number.isInteger(Number(patterns)) || !Number.isInteger(Number(seed))) {
    throw new Error(`usage: pattern-memory.ts <${KINDS.join('|')}> <patterns> <seed> (got ${argv.join(' ')})`);
  }
  process.stdout.write(`${JSON.stringify(build(kind as Kind, Number(patterns), Number(seed)))}\n`);
}

main(process.argv.slice(2));
