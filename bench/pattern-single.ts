/**
 * Section 1: one compiled pattern, many topics. The js engine's Matcher against a precompiled
 * RegExp (the bar of the suite's target), mqtt-match (a peer: left out when not installed), and the native
 * Matcher, whose figure is mostly the cost of crossing Node-API once per call.
 */
import assert from 'node:assert/strict';
import { lib, peer } from './lib.js';

const { compilePattern, matches } = lib;

import { type Case, type Measurement, measure, type Timing } from './measure.js';
import { makeMatchingTopics, makeTopics, toMqttFilter, toMqttTopic, toRegExp } from './workload.js';

export interface SingleMatchRow extends Measurement {
  shape: string;
  pattern: string;
  implementation: string;
  /** Topics in a batch, and how many of them match. */
  batch: number;
  hits: number;
}

/** Calls per iteration: large enough that timer reads vanish, small enough for many samples. */
const BATCH = 1024;

interface Shape {
  shape: string;
  pattern: string;
}

/** The four shapes, filled in from the first tool-call name of the workload (a hot tenant). */
function shapes(seed: number): Shape[] {
  const name = makeTopics(100, seed).find((t) => t.split('__').length >= 4);
  assert.ok(name !== undefined, 'the workload has tool-call names');
  const [tenant, agent, session, tool] = name.split('__') as [string, string, string, string];
  return [
    { shape: 'exact', pattern: `${tenant}__${agent}__${session}__${tool}` },
    { shape: 't__a__*', pattern: `${tenant}__${agent}__*` },
    { shape: 't__**', pattern: `${tenant}__**` },
    { shape: '*__*__*__tool', pattern: `*__*__*__${tool}` },
  ];
}

/** Half topics the pattern matches, half ordinary workload names, interleaved. */
function batchFor(pattern: string, seed: number): string[] {
  const hits = makeMatchingTopics(pattern, BATCH / 2, seed);
  const others = makeTopics(BATCH / 2, seed + 1);
  return hits.flatMap((hit, i) => [hit, others[i] as string]);
}

type MqttMatch = (filter: string, topic: string) => boolean;

/** Every implementation must give `matches()`'s answer on every topic of the batch. */
function implementations(pattern: string, topics: readonly string[]) {
  const mqttMatch = peer<MqttMatch>('mqtt-match');
  const js = compilePattern(pattern, { engine: 'js' });
  const native = compilePattern(pattern, { engine: 'native' });
  const regexp = toRegExp(pattern);
  const filter = toMqttFilter(pattern);
  const mqttTopics = topics.map(toMqttTopic);
  // One loop per implementation, written out: a shared loop taking a callback would make its call
  // site megamorphic and stop V8 from inlining whichever implementation it calls.
  const n = topics.length;
  const list = [
    {
      implementation: 'js Matcher.matches',
      run: () => {
        let hits = 0;
        for (let i = 0; i < n; i++) if (js.matches(topics[i] as string)) hits++;
        return hits;
      },
    },
    {
      implementation: 'RegExp.test (precompiled)',
      run: () => {
        let hits = 0;
        for (let i = 0; i < n; i++) if (regexp.test(topics[i] as string)) hits++;
        return hits;
      },
    },
    ...(mqttMatch === undefined
      ? []
      : [
          {
            implementation: 'mqtt-match',
            run: () => {
              let hits = 0;
              for (let i = 0; i < n; i++) if (mqttMatch(filter, mqttTopics[i] as string)) hits++;
              return hits;
            },
          },
        ]),
    {
      implementation: 'native Matcher.matches',
      run: () => {
        let hits = 0;
        for (let i = 0; i < n; i++) if (native.matches(topics[i] as string)) hits++;
        return hits;
      },
    },
  ];
  topics.forEach((topic, i) => {
    const expected = matches(pattern, topic);
    assert.equal(js.matches(topic), expected, `js: ${pattern} vs ${topic}`);
    assert.equal(native.matches(topic), expected, `native: ${pattern} vs ${topic}`);
    assert.equal(regexp.test(topic), expected, `RegExp ${regexp} vs ${topic}`);
    if (mqttMatch !== undefined) {
      assert.equal(mqttMatch(filter, mqttTopics[i] as string), expected, `mqtt-match ${filter} vs ${topic}`);
    }
  });
  return list;
}

export async function benchSingleMatch(seed: number, timing: Timing): Promise<SingleMatchRow[]> {
  const rows: SingleMatchRow[] = [];
  for (const { shape, pattern } of shapes(seed)) {
    const topics = batchFor(pattern, seed);
    const hits = topics.filter((t) => matches(pattern, t)).length;
    const list = implementations(pattern, topics);
    const cases: Case[] = list.map((impl) => ({
      name: `${shape}: ${impl.implementation}`,
      operations: topics.length,
      run: impl.run,
      expected: hits,
    }));
    const figures = await measure(cases, timing);
    figures.forEach((m, i) => {
      const implementation = list[i]?.implementation ?? '?';
      rows.push({ ...m, shape, pattern, implementation, batch: topics.length, hits });
    });
  }
  return rows;
}
