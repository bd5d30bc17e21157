/**
 * Past one machine (docs/ROCKETMQ.md, "Growing past one broker"): on a RocketMQ cluster of two
 * brokers, lite topics land on both, and one producer's messages reach consumers of two groups
 * exactly once each, in order per lite topic. Also what RocketMQ decides itself and the shared
 * conformance files cannot assert the embedded way: exclusive eviction told through RocketMQ's
 * unsubscribe notice, also after the telemetry stream that carries it was dropped and opened again
 * (the per-client quota, from the group's `lite.sub.client.quota`, runs in test/broker.test.ts). Runs
 * only under `npm run test:rocketmq`, which starts broker-a and broker-b.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { Broker, PoppedMessage } from '../ts/index.js';
import { openBroker } from './broker-helpers.js';
import { ROCKETMQ_ENDPOINTS } from './engines.js';

const LITE_TOPICS = 24;
const PER_LITE_TOPIC = 5;

/** Pops with long poll and acks until `expected` messages came or a round brings nothing for a while. */
async function consumeAll(broker: Broker, group: string, clientId: string, names: string[], expected: number) {
  const consumer = broker.consumer({ group, clientId });
  await consumer.subscribe(names, { offset: { policy: 'min' } });
  const seen: PoppedMessage[] = [];
  let idleRounds = 0;
  while (seen.length < expected && idleRounds < 5) {
    const batch = await consumer.pop({ maxNum: 32, waitMs: 2_000, invisibleTimeMs: 20_000 });
    idleRounds = batch.length === 0 ? idleRounds + 1 : 0;
    for (const message of batch) {
      seen.push(message);
      await consumer.ack(message);
    }
  }
  await consumer.close();
  return seen;
}

describe.runIf(ROCKETMQ_ENDPOINTS !== undefined)('a RocketMQ cluster of two brokers', () => {
  it('spreads lite topics over both brokers; each group gets every message once, in order per lite topic', async () => {
    const { broker } = await openBroker('rocketmq');
    await broker.createGroup('g1', { bindTopic: 'agents' });
    await broker.createGroup('g2', { bindTopic: 'agents' });
    const names = Array.from({ length: LITE_TOPICS }, (_, i) => `session-${i}`);
    const messages = names.flatMap((liteTopic) =>
      Array.from({ length: PER_LITE_TOPIC }, (_, i) => ({ liteTopic, body: `${liteTopic}#${i}` })),
    );
    // Subscribed before sending, from the start: nothing is missed whatever the timing.
    const [first, second] = await Promise.all([
      consumeAll(broker, 'g1', 'c1', names, messages.length),
      (async () => {
        await broker.sendBatch('agents', messages);
        return consumeAll(broker, 'g2', 'c2', names, messages.length);
      })(),
    ]);
    for (const seen of [first, second]) {
      const bodies = seen.map((m) => m.body.toString());
      expect(new Set(bodies).size).toBe(bodies.length);
      expect([...bodies].sort()).toEqual(messages.map((m) => m.body).sort());
      for (const name of names) {
        const order = seen.filter((m) => m.liteTopic === name).map((m) => m.offset);
        expect(order).toEqual([...order].sort((a, b) => a - b));
      }
    }
    // Both brokers hold some of the lite topics: the receipt handles name the broker that served them.
    const served = new Set(first.map((m) => brokerOf(m.receiptHandle)));
    expect(served).toEqual(new Set(['broker-a', 'broker-b']));
  }, 120_000);
});

describe.runIf(ROCKETMQ_ENDPOINTS !== undefined)('RocketMQ behaviour', () => {
  it("tells an exclusive group's earlier holder it was evicted, through RocketMQ's unsubscribe notice", async () => {
    const { broker } = await openBroker('rocketmq');
    await broker.createGroup('g', { bindTopic: 'agents', subModel: 'exclusive' });
    const a = broker.consumer({ group: 'g', clientId: 'a' });
    const b = broker.consumer({ group: 'g', clientId: 'b' });
    const evicted = new Promise((resolve) => a.once('unsubscribed', resolve));
    await a.subscribe(['x', 'y']);
    await b.subscribe(['x']);
    expect(await evicted).toEqual({ liteTopic: 'x', reason: 'evicted' });
    expect(a.liteTopics).toEqual(['y']);
    expect(b.liteTopics).toEqual(['x']);
  }, 30_000);

  it('opens a dropped telemetry stream again: the proxy still tells the client of an eviction', async () => {
    const { broker } = await openBroker('rocketmq');
    await broker.createGroup('g', { bindTopic: 'agents', subModel: 'exclusive' });
    const a = broker.consumer({ group: 'g', clientId: 'a' });
    const b = broker.consumer({ group: 'g', clientId: 'b' });
    await a.subscribe(['x', 'y']);
    // White box: the stream fails as when the connection drops, and the consumer counts its reopenings.
    const inside = a as unknown as { telemetryStream: { cancel(): void }; reconnects: number };
    const errors: unknown[] = [];
    broker.on('error', (error) => errors.push(error));
    inside.telemetryStream.cancel();
    for (let waited = 0; inside.reconnects === 0 && waited < 20_000; waited += 100) await sleep(100);
    expect(inside.reconnects).toBe(1);
    expect(errors).toHaveLength(1);
    const evicted = new Promise((resolve) => a.once('unsubscribed', resolve));
    await b.subscribe(['x']);
    expect(await evicted).toEqual({ liteTopic: 'x', reason: 'evicted' });
    expect(a.liteTopics).toEqual(['y']);
  }, 40_000);
});

/** RocketMQ's receipt handle is space-separated; one field is the broker's name. */
function brokerOf(handle: string): string {
  return handle.split(' ').find((field) => /^broker-[ab]$/.test(field)) ?? '';
}
