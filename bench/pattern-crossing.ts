/**
 * Section 4: what one call into the native engine costs, next to the same call in the js engine,
 * and what batching saves per topic, so users can see when to batch.
 */
import type { PatternIndex } from '../ts/index.js';
import { lib } from './lib.js';

const { compilePattern } = lib;

import { type Case, type Measurement, measure, type Timing } from './measure.js';
import { batchedCounter, batches, buildIndex, COUNT_BATCH } from './pattern-reverse.js';
import { makeSubscriptions, makeTopics } from './workload.js';

export interface CrossingRow extends Measurement {
  operation: string;
  engine: 'native' | 'js';
}

const CALLS = 1024;

/** `PatternIndex.size`: a property read that, on native, is a bare call with no argument. */
function sizeReads(index: PatternIndex): () => number {
  return () => {
    let total = 0;
    for (let i = 0; i < CALLS; i++) total += index.size;
    return total;
  };
}

/** `Matcher.matches` on a short name equal to the pattern: the cheapest real work plus one string. */
function trivialMatches(engine: 'native' | 'js'): () => number {
  const matcher = compilePattern('a__b', { engine });
  const topic = 'a__b';
  return () => {
    let hits = 0;
    for (let i = 0; i < CALLS; i++) if (matcher.matches(topic)) hits++;
    return hits;
  };
}

/** `matchInto` once per topic, into a buffer with room for every id. */
function matchIntoEach(index: PatternIndex, topics: readonly string[]): () => number {
  const out = new Uint32Array(1 << 16);
  return () => {
    let total = 0;
    for (let i = 0; i < topics.length; i++) total += index.matchInto(topics[i] as string, out);
    return total;
  };
}

function engineCases(engine: 'native' | 'js', index: PatternIndex, topics: readonly string[], matched: number) {
  const label = (operation: string) => ({ name: `${engine} ${operation}`, operation, engine });
  return [
    {
      ...label('PatternIndex.size (no argument)'),
      operations: CALLS,
      run: sizeReads(index),
      expected: index.size * CALLS,
    },
    { ...label("Matcher.matches('a__b')"), operations: CALLS, run: trivialMatches(engine), expected: CALLS },
    {
      ...label('matchInto per topic'),
      operations: topics.length,
      run: matchIntoEach(index, topics),
      expected: matched,
    },
    {
      ...label(`matchCounts per topic (batches of ${COUNT_BATCH})`),
      operations: topics.length,
      run: batchedCounter(index, batches(topics, COUNT_BATCH)),
      expected: matched,
    },
  ];
}

export async function benchCrossing(size: number, seed: number, timing: Timing): Promise<CrossingRow[]> {
  const subscriptions = makeSubscriptions(size, seed);
  const topics = makeTopics(CALLS, seed + 1);
  const native = buildIndex('native', subscriptions);
  const js = buildIndex('js', subscriptions);
  // The reverse-lookup section checks matchCounts against qlobber; here match() lengths suffice.
  const matched = topics.reduce((sum, topic) => sum + js.match(topic).length, 0);
  const all = [...engineCases('native', native, topics, matched), ...engineCases('js', js, topics, matched)];
  const cases: Case[] = all.map(({ name, operations, run, expected }) => ({ name, operations, run, expected }));
  const figures = await measure(cases, timing);
  return figures.map((m, i) => {
    const spec = all[i];
    return { ...m, operation: spec?.operation ?? '?', engine: spec?.engine ?? 'js' };
  });
}
