/**
 * Past one machine (docs/ROCKETMQ.md, "Growing past one broker"): on a RocketMQ cluster of two
 * brokers, lite topics land on both, and one producer's messages reach consumers of two groups
 * exactly once each, in order per lite topic. Runs only under `npm run test:rocketmq`, which starts
 * broker-a and broker-b.
 */
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

/** RocketMQ's receipt handle is space-separated; one field is the broker's name. */
function brokerOf(handle: string): string {
  return handle.split(' ').find((field) => /^broker-[ab]$/.test(field)) ?? '';
}
