/**
 * Section 2: reverse lookup, "which subscriptions match this topic?", over 10k and 100k
 * subscriptions. Every implementation counts the distinct ids per topic; the sums must agree.
 * qlobber is a peer: without it its row and the targets against it are left out, and the engines
 * are checked against each other and a linear scan instead.
 */
import assert from 'node:assert/strict';
import type * as Qlobber from 'qlobber';
import type { QlobberDedup } from 'qlobber';
import type { PatternIndex as PatternIndexType } from '../ts/index.js';
import { lib, peer } from './lib.js';

const { matches, PatternIndex } = lib;
type PatternIndex = PatternIndexType;

import { type Case, type Measurement, measure, type Timing } from './measure.js';
import { distinctNames } from './trie-memory.js';
import {
  makeSubscriptions,
  makeTopics,
  mulberry32,
  QLOBBER_OPTIONS,
  type Subscription,
  toQlobber,
  toRegExp,
} from './workload.js';

/** The subscriptions and topics a reverse lookup row measured (see `reverseWorkload`). */
export type ReverseWorkload = 'agent-bus' | 'distinct names';

export interface ReverseRow extends Measurement {
  workload: ReverseWorkload;
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

/** qlobber's QlobberDedup filled with the subscriptions, or undefined when qlobber is not installed. */
export function buildQlobber(subscriptions: readonly Subscription[]): QlobberDedup<number> | undefined {
  const qlobberModule = peer<typeof Qlobber>('qlobber');
  if (qlobberModule === undefined) return undefined;
  const qlobber = new qlobberModule.QlobberDedup<number>(QLOBBER_OPTIONS);
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

/** The distinct ids whose pattern matches `topic`, by checking every subscription (`matches()`). */
function scan(subscriptions: readonly Subscription[], topic: string): number[] {
  const ids = new Set<number>();
  for (const { pattern, id } of subscriptions) if (matches(pattern, topic)) ids.add(id);
  return [...ids].sort((a, b) => a - b);
}

/** Topics checked against a linear scan when qlobber is not there to check every topic. */
const SCANNED_TOPICS = 50;

/**
 * Before anything is timed: both engines and qlobber return the same ids for every topic (without
 * qlobber: the engines agree with each other on every topic and with a linear scan on the first
 * topics), both engines' `matchCounts` agree with those lists topic by topic, and the RegExp
 * translation agrees with `matches()` on a sample of the subscriptions' patterns. Returns the total
 * match count.
 */
function verify(
  subscriptions: readonly Subscription[],
  topics: readonly string[],
  native: PatternIndex,
  js: PatternIndex,
  qlobber: QlobberDedup<number> | undefined,
): number {
  const counts = { native: new Uint32Array(topics.length), js: new Uint32Array(topics.length) };
  native.matchCounts(topics, counts.native);
  js.matchCounts(topics, counts.js);
  let total = 0;
  topics.forEach((topic, i) => {
    const reference =
      qlobber !== undefined
        ? [...qlobber.match(topic)].sort((a, b) => a - b)
        : i < SCANNED_TOPICS
          ? scan(subscriptions, topic)
          : js.match(topic);
    assert.deepEqual(js.match(topic), reference, `js ids for ${topic}`);
    assert.deepEqual(native.match(topic), reference, `native ids for ${topic}`);
    assert.equal(counts.js[i], reference.length, `js count for ${topic}`);
    assert.equal(counts.native[i], reference.length, `native count for ${topic}`);
    total += reference.length;
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
  qlobber: QlobberDedup<number> | undefined,
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
  ];
  if (qlobber !== undefined) {
    list.push([
      'qlobber QlobberDedup.match().size',
      () => {
        let total = 0;
        for (let i = 0; i < n; i++) total += qlobber.match(topics[i] as string).size;
        return total;
      },
    ]);
  }
  return list.map(([name, run]) => ({ name, operations: n, run, expected }));
}

/** Names of the second workload, subscriptions made from them, and the names topics are drawn from. */
export const DISTINCT_NAMES = 200_000;
export const DISTINCT_NAME_SUBSCRIPTIONS = 100_000;
export const DISTINCT_NAME_PUBLISHED = 50_000;

/**
 * The second workload: many distinct names and few ids per topic, as a broker of one subscriber per
 * lite topic sees it. `DISTINCT_NAMES` workload names; subscriptions made from them, 80% one name
 * exactly and 20% a narrow wildcard over one name's session (`t__a__s__*`, `t__a__s__**`) or tool
 * (`t__a__*__tool`), one subscriber per two patterns; topics drawn from `DISTINCT_NAME_PUBLISHED` of
 * the names.
 */
export function distinctNameWorkload(
  subscriptionCount: number,
  topicCount: number,
  seed: number,
): { subscriptions: Subscription[]; topics: string[] } {
  const names = distinctNames(DISTINCT_NAMES, seed + 2);
  const random = mulberry32(seed + 3);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const subscribers = Math.max(1, Math.ceil(subscriptionCount / 2));
  const seen = new Set<string>();
  const subscriptions: Subscription[] = [];
  while (subscriptions.length < subscriptionCount) {
    const name = pick(names);
    const [tenant, agent, session, tool] = name.split('__');
    const roll = random();
    const pattern =
      roll < 0.8 || tool === undefined
        ? name
        : roll < 0.87
          ? `${tenant}__${agent}__${session}__*`
          : roll < 0.94
            ? `${tenant}__${agent}__${session}__**`
            : `${tenant}__${agent}__*__${tool}`;
    const id = Math.floor(random() * subscribers);
    const key = `${pattern} ${id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    subscriptions.push({ pattern, id });
  }
  const published = names.slice(0, DISTINCT_NAME_PUBLISHED);
  const topics = Array.from({ length: topicCount }, () => pick(published));
  return { subscriptions, topics };
}

export async function benchReverse(
  size: number,
  topicCount: number,
  seed: number,
  timing: Timing,
  workload: ReverseWorkload = 'agent-bus',
): Promise<ReverseRow[]> {
  const { subscriptions, topics } =
    workload === 'agent-bus'
      ? { subscriptions: makeSubscriptions(size, seed), topics: makeTopics(topicCount, seed + 1) }
      : distinctNameWorkload(size, topicCount, seed);
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
    workload,
    subscriptions: size,
    implementation: m.name,
    topics: topics.length,
    matchesPerTopic: expected / topics.length,
  }));
}
