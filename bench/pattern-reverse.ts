/**
 * Section 2: reverse lookup, "which subscriptions match this topic?", over 10k and 100k
 * subscriptions. Every implementation counts the distinct ids per topic; the sums must agree.
 */
import assert from 'node:assert/strict';
import { QlobberDedup } from 'qlobber';
import type { PatternIndex as PatternIndexType } from '../ts/index.js';
import { lib } from './lib.js';

const { matches, PatternIndex } = lib;
type PatternIndex = PatternIndexType;

import { type Case, type Measurement, measure, type Timing } from './measure.js';
import { makeSubscriptions, makeTopics, QLOBBER_OPTIONS, type Subscription, toQlobber, toRegExp } from './workload.js';

export interface ReverseRow extends Measurement {
  subscriptions: number;
  implementation: string;
  /** Topics looked up per iteration, and the mean number of distinct ids each matched. */
  topics: number;
  matchesPerTopic: number;
}

/** Topics per `matchCounts` call: a realistic delivery batch. */
export const COUNT_BATCH = 1024;

export function buildIndex(engine: 'native' | 'js', subscriptions: readonly Subscription[]): PatternIndex {
  const index = new PatternIndex({ engine });
  for (const { pattern, id } of subscriptions) index.add(pattern, id);
  return index;
}

export function buildQlobber(subscriptions: readonly Subscription[]): QlobberDedup<number> {
  const qlobber = new QlobberDedup<number>(QLOBBER_OPTIONS);
  for (const { pattern, id } of subscriptions) qlobber.add(toQlobber(pattern), id);
  return qlobber;
}

export function batches(topics: readonly string[], size: number): string[][] {
  const out: string[][] = [];
  for (let i = 0; i < topics.length; i += size) out.push(topics.slice(i, i + size));
  return out;
}

/** Looks up every batch with one `matchCounts` call; returns the total count. */
export function batchedCounter(index: PatternIndex, topicBatches: readonly string[][]): () => number {
  const out = new Uint32Array(COUNT_BATCH);
  return () => {
    let total = 0;
    for (const batch of topicBatches) total += index.matchCounts(batch, out);
    return total;
  };
}

/**
 * Before anything is timed: both engines and qlobber return the same ids for every topic, both
 * engines' `matchCounts` agree with those lists topic by topic, and the RegExp translation agrees
 * with `matches()` on a sample of the subscriptions' patterns. Returns the total match count.
 */
function verify(
  subscriptions: readonly Subscription[],
  topics: readonly string[],
  native: PatternIndex,
  js: PatternIndex,
  qlobber: QlobberDedup<number>,
): number {
  const counts = { native: new Uint32Array(topics.length), js: new Uint32Array(topics.length) };
  native.matchCounts(topics, counts.native);
  js.matchCounts(topics, counts.js);
  let total = 0;
  topics.forEach((topic, i) => {
    const fromQlobber = [...qlobber.match(topic)].sort((a, b) => a - b);
    assert.deepEqual(js.match(topic), fromQlobber, `js ids for ${topic}`);
    assert.deepEqual(native.match(topic), fromQlobber, `native ids for ${topic}`);
    assert.equal(counts.js[i], fromQlobber.length, `js count for ${topic}`);
    assert.equal(counts.native[i], fromQlobber.length, `native count for ${topic}`);
    total += fromQlobber.length;
  });
  verifyRegExp(subscriptions, topics.slice(0, 200));
  return total;
}

function verifyRegExp(subscriptions: readonly Subscription[], topics: readonly string[]): void {
  const step = Math.max(1, Math.floor(subscriptions.length / 200));
  for (let i = 0; i < subscriptions.length; i += step) {
    const pattern = (subscriptions[i] as Subscription).pattern;
    const regexp = toRegExp(pattern);
    for (const topic of topics) {
      assert.equal(regexp.test(topic), matches(pattern, topic), `RegExp ${regexp} vs ${topic}`);
    }
  }
}

function cases(
  topics: readonly string[],
  native: PatternIndex,
  js: PatternIndex,
  qlobber: QlobberDedup<number>,
  expected: number,
): Case[] {
  const topicBatches = batches(topics, COUNT_BATCH);
  const n = topics.length;
  const perTopic = (index: PatternIndex) => () => {
    let total = 0;
    for (let i = 0; i < n; i++) total += index.match(topics[i] as string).length;
    return total;
  };
  const list: [string, () => number][] = [
    [`native matchCounts (batches of ${COUNT_BATCH})`, batchedCounter(native, topicBatches)],
    ['native match() per topic', perTopic(native)],
    [`js matchCounts (batches of ${COUNT_BATCH})`, batchedCounter(js, topicBatches)],
    ['js match() per topic', perTopic(js)],
    [
      'qlobber QlobberDedup.match().size',
      () => {
        let total = 0;
        for (let i = 0; i < n; i++) total += qlobber.match(topics[i] as string).size;
        return total;
      },
    ],
  ];
  return list.map(([name, run]) => ({ name, operations: n, run, expected }));
}

export async function benchReverse(
  size: number,
  topicCount: number,
  seed: number,
  timing: Timing,
): Promise<ReverseRow[]> {
  const subscriptions = makeSubscriptions(size, seed);
  const topics = makeTopics(topicCount, seed + 1);
  const native = buildIndex('native', subscriptions);
  const js = buildIndex('js', subscriptions);
  const qlobber = buildQlobber(subscriptions);
  assert.equal(native.size, size);
  assert.equal(js.size, size);
  const expected = verify(subscriptions, topics, native, js, qlobber);
  const list = cases(topics, native, js, qlobber, expected);
  const figures = await measure(list, timing);
  return figures.map((m) => ({
    ...m,
    subscriptions: size,
    implementation: m.name,
    topics: topics.length,
    matchesPerTopic: expected / topics.length,
  }));
}
