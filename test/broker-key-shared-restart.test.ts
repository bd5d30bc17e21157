/**
 * Key-shared groups across a restart (issue 7): the group's settings, its committed offset and its
 * out-of-order deliveries come back from the state journal (also through a compaction); the key
 * hashes are read again from the commit log; a bucket with deliveries from before the restart is
 * withheld until they are acked with their old handles or expire; nothing is lost or acked twice.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Broker, type BrokerOptions, type Consumer, type EngineName, type PoppedMessage } from '../ts/index.js';
import { ManualClock, tempDir } from './broker-helpers.js';
import { bucketOfKey, sendKeyed, seq } from './broker-key-shared-helpers.js';
import { ENGINES } from './engines.js';

const opened: Broker[] = [];
afterEach(async () => {
  for (const broker of opened.splice(0)) await broker.close().catch(() => undefined);
});

async function open(engine: EngineName, dir: string, clock: ManualClock, options: BrokerOptions): Promise<Broker> {
  const broker = await Broker.open({ engine, dir, clock, flush: 'sync', ...options });
  opened.push(broker);
  return broker;
}

async function join(broker: Broker, clientId: string): Promise<Consumer> {
  const consumer = broker.consumer({ group: 'g', clientId });
  await consumer.subscribe(['hot'], { offset: { policy: 'min' } });
  return consumer;
}

describe.each(ENGINES)('%s engine', (engine) => {
  for (const compact of [false, true]) {
    it(`restarts mid-traffic${compact ? ' after a compaction' : ''}: order per key, nothing lost, buckets drain`, async () => {
      const dir = tempDir();
      const clock = new ManualClock();
      const options: BrokerOptions = compact ? { stateCompactBytes: 512 } : {};
      const first = await open(engine, dir, clock, options);
      first.createTopic('agents');
      first.createGroup('g', { bindTopic: 'agents', keyShared: { buckets: 16 } });
      const a = await join(first, 'a');
      const b = await join(first, 'b');
      const counts = new Map<string, number>();
      await sendKeyed(
        first,
        'hot',
        Array.from({ length: 90 }, (_, i) => `k${i % 30}`),
        counts,
      );
      const seen = new Map<string, number>();
      const firstSeen = new Map<string, number>();
      const record = (batch: readonly PoppedMessage[]) => {
        for (const m of batch) {
          const body = m.body.toString();
          seen.set(body, (seen.get(body) ?? 0) + 1);
          if (m.reconsumeTimes > 0) continue;
          expect(seq(m)).toBe((firstSeen.get(m.key as string) ?? -1) + 1);
          firstSeen.set(m.key as string, seq(m));
        }
      };
      const heldA = await a.pop({ maxNum: 12, invisibleTimeMs: 10_000 });
      const fromB = await b.pop({ maxNum: 12, invisibleTimeMs: 10_000 });
      record(heldA);
      record(fromB);
      for (const m of fromB.slice(0, 6)) await b.ack(m);
      await first.close();

      const second = await open(engine, dir, clock, options);
      second.createTopic('agents');
      second.createGroup('g', { bindTopic: 'agents', keyShared: { buckets: 16 } });
      const withheld = second.admin.groupInfo('g').keyShared?.withheld ?? [];
      const heldBuckets = new Set([...heldA, ...fromB.slice(6)].map((m) => bucketOfKey(m.key, 16)));
      expect(new Set(withheld.map((w) => w.bucket))).toEqual(heldBuckets);
      expect(withheld.every((w) => w.holder === undefined)).toBe(true);
      const a2 = await join(second, 'a');
      const b2 = await join(second, 'b');
      // Buckets with deliveries from before the restart wait; the others flow at once.
      const now = [...(await a2.pop({ maxNum: 32 })), ...(await b2.pop({ maxNum: 32 }))];
      for (const m of now) expect(heldBuckets.has(bucketOfKey(m.key, 16))).toBe(false);
      record(now);
      for (const m of now) await a2.ack(m); // any client of the group may ack a handle
      // Old handles still ack their deliveries.
      for (const m of heldA.slice(0, 4)) await a2.ack(m);
      clock.advance(10_000);
      second.tick();
      for (let round = 0; round < 20; round++) {
        const batch = [...(await a2.pop({ maxNum: 32 })), ...(await b2.pop({ maxNum: 32 }))];
        if (batch.length === 0) break;
        record(batch);
        for (const m of batch) await a2.ack(m);
      }
      expect(seen.size).toBe(90);
      const redelivered = [...seen.values()].reduce((sum, n) => sum + n - 1, 0);
      expect(redelivered).toBe(heldA.length - 4 + 6);
      expect(second.admin.groupInfo('g').totalLag).toBe(0);
    });
  }
});
