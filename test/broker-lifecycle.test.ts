/**
 * Lifecycle (issue 6): lite-topic expiry through the trie's idle index, retention, dead letters,
 * sessions and admin queries. Each on every engine, on a manual clock (`tick()` runs the
 * maintenance timer and session checks; `runMaintenance()` waits for the pass to finish).
 */
import { describe, expect, it, vi } from 'vitest';
import { REVIVE_SLICE } from '../ts/broker/lifecycle.js';
import type { TopicProgress } from '../ts/broker/progress.js';
import { NO_WAKE } from '../ts/broker/wakes.js';
import { type Clock, MemoryStore, type UnsubscribedEvent } from '../ts/index.js';
import { bodies, drain, keptLite, openBroker, sendMany, tempDir } from './broker-helpers.js';
import { ENGINES } from './engines.js';

describe.each(ENGINES)('%s engine', (engine) => {
  describe('expiry', () => {
    it('deletes a lite topic idle for liteTopicExpirationMs with its state, never one written to within it', async () => {
      const t = await openBroker(engine, { dir: tempDir(), sessionTimeoutMs: 0 });
      const { broker } = t;
      broker.createTopic('agents', { liteTopicExpirationMs: 10_000 });
      broker.createGroup('g', { bindTopic: 'agents' });
      const c = broker.consumer({ group: 'g', clientId: 'c' });
      const lost: UnsubscribedEvent[] = [];
      c.on('unsubscribed', (event) => lost.push(event));
      await c.subscribe(['idle', 'busy'], { offset: { policy: 'min' } });
      await sendMany(broker, 'idle', 3);
      await sendMany(broker, 'busy', 1);
      const [held] = await c.pop({ maxNum: 1, invisibleTimeMs: 60_000 }); // in flight when it expires
      expect(held?.liteTopic).toBe('idle');
      t.advance(6000);
      await sendMany(broker, 'busy', 1, 1);
      t.advance(4000); // idle: 10 s without a message; busy: 4 s
      await broker.runMaintenance();
      expect(lost).toEqual([{ liteTopic: 'idle', reason: 'expired' }]);
      expect(c.liteTopics).toEqual(['busy']);
      expect(broker.admin.liteTopicInfo('agents', 'idle')).toBeNull();
      expect(broker.admin.topicInfo('agents').liteTopics).toBe(1);
      expect([...keptLite(broker).keys()]).toEqual(['busy']);
      expect(broker.admin.clientInfo('g', 'c')?.inflight).toBe(0);
      await expect(c.ack(held as never)).rejects.toMatchObject({ code: 'INVALID_RECEIPT' });
      expect(broker.admin.brokerInfo().expiredLiteTopics).toBe(1);
      // It comes back with its next message, at offset 0.
      expect((await broker.send('agents', { liteTopic: 'idle', body: 'again' })).offset).toBe(0);
      await c.subscribe(['idle'], { offset: { policy: 'min' } });
      expect((await drain(c)).sort()).toEqual(['again', 'busy#0', 'busy#1']);
      t.advance(10_000);
      await broker.runMaintenance();
      expect(broker.admin.topicInfo('agents').liteTopics).toBe(0);
      expect(keptLite(broker).size).toBe(0);
    });

    it('without a directory, gives back what expired lite topics held while others keep theirs', async () => {
      const t = await openBroker(engine, { sessionTimeoutMs: 0, segmentBytes: 4096 });
      const { broker } = t;
      broker.createTopic('agents', { liteTopicExpirationMs: 10_000 });
      const big = 'x'.repeat(400);
      const send = (liteTopic: string, from: number, count: number) =>
        broker.sendBatch(
          'agents',
          Array.from({ length: count }, (_, i) => ({ liteTopic, body: `${from + i}|${big}` })),
        );
      // `old` fills segments alone, then shares one with `kept`, then fills more alone.
      await send('old', 0, 40);
      await send('kept', 0, 2);
      await send('old', 40, 40);
      t.advance(6000);
      await send('kept', 2, 20);
      const before = broker.admin.brokerInfo();
      t.advance(4000); // old: idle 10 s, expired; kept: 4 s
      await broker.runMaintenance();
      expect(broker.admin.liteTopicInfo('agents', 'old')).toBeNull();
      if (engine === 'native') {
        // The native engine keeps messages in a log in memory: the segments of `old` alone go (off
        // the event loop, after the deletion).
        expect(before.storageFiles).toBeGreaterThan(10);
        await vi.waitFor(() => expect(broker.admin.brokerInfo().storageFiles).toBeLessThan(before.storageFiles));
      } else {
        // The js engine's memory store drops the lite topic's messages with it: no files either way.
        expect([before.storageFiles, broker.admin.brokerInfo().storageFiles]).toEqual([0, 0]);
      }
      broker.createGroup('g', { bindTopic: 'agents' });
      const c = broker.consumer({ group: 'g', clientId: 'c' });
      await c.subscribe(['kept'], { offset: { policy: 'min' } });
      const seen = await drain(c);
      expect(seen.map((body) => Number(body.split('|')[0]))).toEqual(Array.from({ length: 22 }, (_, i) => i));
      expect(seen.every((body) => body.endsWith(big))).toBe(true);
    });

    it('deletes expired LMQs through the store in batches with deleteLmqs', async () => {
      const clock: Clock = { now: () => 0 };
      const batches: string[][] = [];
      class BatchingStore extends MemoryStore {
        override async deleteLmqs(lmqs: readonly string[]): Promise<boolean[]> {
          batches.push([...lmqs]);
          return super.deleteLmqs(lmqs);
        }
      }
      const names = Array.from({ length: 40 }, (_, i) => `idle${i}`);
      const store = new BatchingStore(clock);
      const t = await openBroker(engine, { store, sessionTimeoutMs: 0 });
      t.broker.createTopic('agents', { liteTopicExpirationMs: 10_000 });
      for (const name of names) await sendMany(t.broker, name, 1);
      t.advance(10_000);
      await t.broker.runMaintenance();
      expect(t.broker.admin.topicInfo('agents').liteTopics).toBe(0);
      expect(store.listLmqs().lmqs).toEqual([]);
      const lmqs = names.map((name) => `%LMQ%$agents$${name}`).sort();
      expect(batches.length).toBeGreaterThan(0);
      expect(batches.length).toBeLessThan(names.length);
      expect(batches.flat().sort()).toEqual(lmqs);
    });

    it('runs on the maintenance timer under a manual clock, and keeps no progress for an expired topic after restart', async () => {
      const dir = tempDir();
      const t = await openBroker(engine, { dir, sessionTimeoutMs: 0, flush: 'sync' });
      t.broker.createTopic('agents', { liteTopicExpirationMs: 5000 });
      t.broker.createGroup('g', { bindTopic: 'agents' });
      const c = t.broker.consumer({ group: 'g', clientId: 'c' });
      await c.subscribe(['x'], { offset: { policy: 'min' } });
      await sendMany(t.broker, 'x', 5);
      await drain(c);
      t.advance(5000); // the maintenance timer fires in tick()
      await t.broker.runMaintenance();
      expect(c.liteTopics).toEqual([]);
      await t.broker.send('agents', { liteTopic: 'x', body: 'new' });
      await t.broker.close();
      const again = await openBroker(engine, { dir, sessionTimeoutMs: 0 });
      const d = again.broker.consumer({ group: 'g', clientId: 'd' });
      await d.subscribe(['x'], { offset: { policy: 'min' } });
      expect(await drain(d)).toEqual(['new']);
    });
  });

  describe('close during a sweep', () => {
    it('stops a running sweep at its next slice, finishes its deletions, and reopens consistent', async () => {
      const dir = tempDir();
      const t = await openBroker(engine, { dir, sessionTimeoutMs: 0 });
      t.broker.createTopic('agents', { liteTopicExpirationMs: 1000 });
      const names = Array.from({ length: 100 }, (_, i) => `idle${i}`);
      await t.broker.sendBatch(
        'agents',
        names.map((liteTopic) => ({ liteTopic, body: 'x' })),
      );
      t.clock.advance(2000);
      const sweep = t.broker.runMaintenance(); // 100 idle: several slices with turns between them
      const settled = sweep.then(
        () => 'resolved',
        (error: unknown) => error,
      );
      await t.broker.close(); // while the pass is between slices
      expect(await settled).toBe('resolved');
      const again = await openBroker(engine, { dir, sessionTimeoutMs: 0 });
      const left = again.broker.admin.topicInfo('agents').liteTopics;
      expect(left).toBeGreaterThan(0); // the pass stopped early
      expect(left).toBeLessThan(names.length);
      // Whatever was dropped is gone from the log too: a new message starts again at offset 0.
      for (const name of names) {
        const info = again.broker.admin.liteTopicInfo('agents', name);
        if (info === null) expect((await again.broker.send('agents', { liteTopic: name, body: 'y' })).offset).toBe(0);
        else expect(info.maxOffset).toBe(1);
      }
    });
  });

  describe('retention', () => {
    it('deletes old segments on the maintenance pass; consumers behind them resume at the oldest kept message', async () => {
      const t = await openBroker(engine, {
        dir: tempDir(),
        sessionTimeoutMs: 0,
        segmentBytes: 4096,
        retention: { maxBytes: 8192 },
      });
      const { broker } = t;
      broker.createGroup('g', { bindTopic: 'agents' });
      const c = broker.consumer({ group: 'g', clientId: 'c' });
      await c.subscribe(['t'], { offset: { policy: 'min' } });
      const big = 'x'.repeat(400);
      await broker.sendBatch(
        'agents',
        Array.from({ length: 60 }, (_, i) => ({ liteTopic: 't', body: `${i}|${big}` })),
      );
      const before = broker.admin.brokerInfo().storageBytes;
      await broker.runMaintenance();
      const info = broker.admin.liteTopicInfo('agents', 't');
      expect(broker.admin.brokerInfo().storageBytes).toBeLessThan(before);
      expect(info?.minOffset).toBeGreaterThan(0);
      expect(info?.maxOffset).toBe(60);
      const seen = (await drain(c)).map((body) => Number(body.split('|')[0]));
      expect(seen).toEqual(Array.from({ length: 60 - (info?.minOffset ?? 0) }, (_, i) => (info?.minOffset ?? 0) + i));
    });
  });

  describe('dead letters', () => {
    it('moves a message past maxReconsumeTimes to %DLQ%<group>, unblocks its lite topic, reads and re-sends it', async () => {
      const t = await openBroker(engine, { sessionTimeoutMs: 0 });
      const { broker } = t;
      broker.createGroup('g', { bindTopic: 'agents', maxReconsumeTimes: 2 });
      const c = broker.consumer({ group: 'g', clientId: 'c' });
      await c.subscribe(['x'], { offset: { policy: 'min' } });
      await broker.send('agents', { liteTopic: 'x', body: 'poison', key: 'k', properties: { p: 'v' } });
      await sendMany(broker, 'x', 1);
      const seen: number[] = [];
      for (let i = 0; i < 3; i++) {
        const [m] = await c.pop({ maxNum: 1, invisibleTimeMs: 1000 });
        seen.push(m?.reconsumeTimes as number);
        t.advance(1000);
      }
      expect(seen).toEqual([0, 1, 2]);
      expect(await c.pop({ maxNum: 1 })).toEqual([]); // this POP moves it
      await new Promise((resolve) => setImmediate(resolve));
      expect(bodies(await c.pop())).toEqual(['x#0']);
      const [letter] = broker.readDeadLetters('g');
      expect(letter).toMatchObject({
        offset: 0,
        liteTopic: 'x',
        originalOffset: 0,
        reconsumeTimes: 2,
        key: 'k',
        properties: { p: 'v' },
      });
      expect(letter?.body.toString()).toBe('poison');
      const resent = await broker.resendDeadLetter('g', 0);
      expect(resent).toMatchObject({ liteTopic: 'x', offset: 2 });
      expect(bodies(await c.pop())).toEqual([]); // x#0 is still unacked and hidden
    });

    it('moves one explicitly with deadLetter()', async () => {
      const { broker } = await openBroker(engine, { sessionTimeoutMs: 0 });
      broker.createGroup('g', { bindTopic: 'agents' });
      const c = broker.consumer({ group: 'g', clientId: 'c' });
      await c.subscribe(['x'], { offset: { policy: 'min' } });
      await sendMany(broker, 'x', 2);
      const [m] = await c.pop({ maxNum: 1 });
      await c.deadLetter(m as never);
      await expect(c.ack(m as never)).rejects.toMatchObject({ code: 'INVALID_RECEIPT' });
      expect(bodies(await c.pop())).toEqual(['x#1']);
      expect(broker.readDeadLetters('g').map((l) => [l.liteTopic, l.reconsumeTimes])).toEqual([['x', 0]]);
      expect(broker.admin.topicInfo('agents').liteTopics).toBe(1); // the dead-letter queue is not a lite topic
    });
  });

  describe('revive', () => {
    it('offers again a redelivery whose wake-up was lost, looking at a bounded slice of lite topics per pass', async () => {
      const t = await openBroker(engine, { sessionTimeoutMs: 0 });
      const { broker } = t;
      broker.createGroup('g', { bindTopic: 'agents' });
      // REVIVE_SLICE lite topics with nothing in flight come first in the group, then the one whose
      // wake-up goes missing: the first pass looks only at the first slice, the second reaches it.
      const clients = Array.from({ length: Math.ceil(REVIVE_SLICE / 2000) }, (_, i) =>
        broker.consumer({ group: 'g', clientId: `idle${i}` }),
      );
      for (const [i, client] of clients.entries()) {
        const from = i * 2000;
        const names = Array.from({ length: Math.min(2000, REVIVE_SLICE - from) }, (_, k) => `idle${from + k}`);
        await client.subscribe(names, { offset: { policy: 'min' } });
      }
      const c = broker.consumer({ group: 'g', clientId: 'c' });
      await c.subscribe(['late'], { offset: { policy: 'min' } });
      await sendMany(broker, 'late', 1);
      expect(bodies(await c.pop({ maxNum: 1, invisibleTimeMs: 1000 }))).toEqual(['late#0']);
      // The wake-up of its redelivery is lost (as a clock race once lost one): nothing else offers it.
      const group = (broker as unknown as { groups: Map<string, { progress: Map<string, TopicProgress> }> }).groups.get(
        'g',
      );
      const progress = group?.progress.get('late') as TopicProgress;
      progress.wake = NO_WAKE;
      progress.wakeAt = Number.POSITIVE_INFINITY;
      t.advance(2000);
      expect((await c.pop({ maxNum: 1, waitMs: 0 })).length).toBe(0);
      await broker.runMaintenance();
      expect((await c.pop({ maxNum: 1, waitMs: 0 })).length).toBe(0); // not in the first slice
      await broker.runMaintenance();
      const [again] = await c.pop({ maxNum: 1, waitMs: 0 });
      expect([again?.body.toString(), again?.reconsumeTimes]).toEqual(['late#0', 1]);
    });
  });

  describe('sessions', () => {
    it('closes a client silent for sessionTimeoutMs; its events and in-flight messages go to others', async () => {
      const t = await openBroker(engine, { sessionTimeoutMs: 10_000 });
      const { broker } = t;
      broker.createGroup('g', { bindTopic: 'agents' });
      const a = broker.consumer({ group: 'g', clientId: 'a' });
      const b = broker.consumer({ group: 'g', clientId: 'b' });
      let expired = 0;
      a.on('sessionExpired', () => expired++);
      await a.subscribe(['x', 'y'], { offset: { policy: 'min' } });
      await b.subscribe(['x', 'y'], { offset: { policy: 'min' } });
      await sendMany(broker, 'x', 2);
      const held = await a.pop({ maxNum: 1, invisibleTimeMs: 60_000 });
      expect(bodies(held)).toEqual(['x#0']);
      t.advance(6000);
      b.heartbeat();
      t.advance(4000);
      expect(a.closed).toBe(true);
      expect(b.closed).toBe(false);
      expect(expired).toBe(1);
      expect(bodies(await b.pop())).toEqual(['x#0', 'x#1']);
      expect((await b.pop({ maxNum: 1 })).length).toBe(0);
    });
  });

  describe('admin', () => {
    it('answers broker, topic, lite topic, client and group queries with lag and top-K', async () => {
      const t = await openBroker(engine, { sessionTimeoutMs: 0 });
      const { broker } = t;
      broker.createGroup('g', { bindTopic: 'agents' });
      const c = broker.consumer({ group: 'g', clientId: 'c' });
      await c.subscribe(['a', 'b', 'c'], { offset: { policy: 'min' } });
      await sendMany(broker, 'b', 1);
      t.advance(100);
      await sendMany(broker, 'a', 3);
      await sendMany(broker, 'c', 2);
      const [first] = await c.pop({ maxNum: 1 });
      expect(first?.liteTopic).toBe('b');
      expect(broker.admin.brokerInfo()).toMatchObject({
        engine,
        topics: 1,
        liteTopics: 3,
        groups: 1,
        clients: 1,
        subscriptions: 3,
        inflight: 1,
      });
      expect(broker.admin.topicInfo('agents')).toMatchObject({ liteTopics: 3, groups: ['g'] });
      expect(broker.admin.liteTopicInfo('agents', 'a')).toMatchObject({
        minOffset: 0,
        maxOffset: 3,
        lastWriteTimestamp: t.clock.now(),
        subscribers: [{ group: 'g', clientId: 'c' }],
      });
      expect(broker.admin.clientInfo('g', 'c')).toMatchObject({ liteTopics: ['a', 'b', 'c'], inflight: 1 });
      const info = broker.admin.groupInfo('g', { liteTopic: 'a', topK: 2 });
      expect(info.totalLag).toBe(6);
      expect(info.liteTopic).toMatchObject({ committedOffset: 0, maxOffset: 3, lag: 3 });
      expect(info.topByLag.map((l) => [l.liteTopic, l.lag])).toEqual([
        ['a', 3],
        ['c', 2],
      ]);
      expect(info.topByOldest.map((l) => l.liteTopic)).toEqual(['b', 'a']);
      expect(broker.admin.triggerDispatch('g', 'c')).toBeGreaterThan(0);
      expect(() => broker.admin.groupInfo('nope')).toThrow(expect.objectContaining({ code: 'GROUP_NOT_FOUND' }));
    });
  });
});
