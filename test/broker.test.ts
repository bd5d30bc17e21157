/**
 * Broker scenarios (issue 5): send, registry, exclusive, wildcard and quotas, each on every engine,
 * on a manual clock.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { messageId } from '../ts/broker/message-id.js';
import { openStore } from '../ts/broker/store.js';
import { Broker, type Consumer, type PoppedMessage, type UnsubscribedEvent } from '../ts/index.js';
import { bodies, drain, keptLite, openBroker, sendMany } from './broker-helpers.js';
import { BACKENDS, embeddedOnly } from './engines.js';

function events(consumer: Consumer): UnsubscribedEvent[] {
  const seen: UnsubscribedEvent[] = [];
  consumer.on('unsubscribed', (event) => seen.push(event));
  return seen;
}

describe.each(BACKENDS)('%s engine', (engine) => {
  describe('send', () => {
    embeddedOnly(engine, 'Message ids')(
      'names a message by its log position in 16 upper-case hex digits, the same id when popped',
      async () => {
        fc.assert(
          fc.property(fc.maxSafeNat(), (position) => {
            expect(messageId(position)).toBe(position.toString(16).toUpperCase().padStart(16, '0'));
          }),
        );
        for (const position of [0, 0xffff_ffff, 0x1_0000_0000, Number.MAX_SAFE_INTEGER]) {
          expect(messageId(position)).toBe(position.toString(16).toUpperCase().padStart(16, '0'));
        }
        const { broker } = await openBroker(engine);
        broker.createGroup('g', { bindTopic: 'agents' });
        const c = broker.consumer({ group: 'g', clientId: 'c' });
        await c.subscribe(['ids']);
        const sent = await broker.sendBatch('agents', [
          { liteTopic: 'ids', body: 'a' },
          { liteTopic: 'ids', body: 'b' },
        ]);
        const popped = await c.pop({ maxNum: 2 });
        expect(popped.map((m) => m.messageId)).toEqual(sent.map((r) => r.messageId));
        for (const { messageId: id } of sent) expect(id).toMatch(/^[0-9A-F]{16}$/);
      },
    );

    it('stores to a LITE parent and creates the lite topic with its first message', async () => {
      const { broker } = await openBroker(engine);
      const first = await broker.send('agents', { liteTopic: 't1__s1', body: 'a', key: 'k', tag: 'x' });
      const second = await broker.send('agents', { liteTopic: 't1__s1', body: 'b' });
      expect(first).toMatchObject({ liteTopic: 't1__s1', offset: 0 });
      expect(second.offset).toBe(1);
      expect(second.messageId).not.toBe(first.messageId);
      const batch = await broker.sendBatch('agents', [
        { liteTopic: 't1__s2', body: 'c' },
        { liteTopic: 't1__s1', body: 'd' },
      ]);
      expect(batch.map((r) => [r.liteTopic, r.offset])).toEqual([
        ['t1__s2', 0],
        ['t1__s1', 2],
      ]);
    });

    embeddedOnly(engine, 'Storage')(
      'forgets a lite topic whose first send the store failed; the next send starts it at offset 0',
      async () => {
        const store = await openStore(undefined, { clock: { now: () => 1 } });
        const append = store.append.bind(store);
        let failures = 1;
        store.append = (records) => (failures-- > 0 ? Promise.reject(new Error('disk full')) : append(records));
        const { broker } = await openBroker(engine, { store });
        await expect(broker.send('agents', { liteTopic: 't', body: 'lost' })).rejects.toThrow('disk full');
        expect(broker.admin.topicInfo('agents').liteTopics).toBe(0);
        expect(broker.admin.liteTopicInfo('agents', 't')).toBeNull();
        expect(keptLite(broker).size).toBe(0);
        expect(await broker.send('agents', { liteTopic: 't', body: 'kept' })).toMatchObject({ offset: 0 });
        expect(broker.admin.topicInfo('agents').liteTopics).toBe(1);
        expect([...keptLite(broker).keys()]).toEqual(['t']);
      },
    );

    embeddedOnly(engine, 'Storage')(
      'delivers the next send of a lite topic a group looked at while its first send was failing',
      async () => {
        const store = await openStore(undefined, { clock: { now: () => 1 } });
        const append = store.append.bind(store);
        let fail: (error: Error) => void = () => undefined;
        let failures = 1;
        store.append = (records) => (failures-- > 0 ? new Promise((_, reject) => (fail = reject)) : append(records));
        const { broker } = await openBroker(engine, { store });
        broker.createGroup('g', { bindTopic: 'agents', subModel: 'shared' });
        const sending = broker.send('agents', { liteTopic: 't', body: 'lost' });
        // While the append is pending `t` exists: a subscriber's dispatch asks what it holds (nothing).
        const consumer = broker.consumer({ group: 'g', clientId: 'c' });
        await consumer.subscribe(['t'], { offset: { policy: 'min' } });
        fail(new Error('disk full'));
        await expect(sending).rejects.toThrow('disk full');
        await broker.sendBatch('agents', [
          { liteTopic: 't', body: 'one' },
          { liteTopic: 't', body: 'two' },
        ]);
        const first = await consumer.pop({ maxNum: 1 });
        expect(bodies(first)).toEqual(['one']);
        await consumer.ack(first[0] as PoppedMessage);
        expect(bodies(await consumer.pop())).toEqual(['two']);
      },
    );

    it('refuses an unknown parent, a bad name or a bad message with typed errors and stores nothing', async () => {
      const { broker } = await openBroker(engine);
      await expect(broker.send('nope', { liteTopic: 'a', body: 'x' })).rejects.toMatchObject({
        code: 'TOPIC_NOT_FOUND',
      });
      await expect(broker.send('agents', { liteTopic: 'a b', body: 'x' })).rejects.toMatchObject({
        code: 'INVALID_LITE_TOPIC',
        position: 1,
      });
      await expect(broker.send('agents', { liteTopic: 'x'.repeat(65), body: 'x' })).rejects.toMatchObject({
        code: 'QUOTA_EXCEEDED',
        quota: 'maxLiteTopicBytes',
        limit: 64,
        actual: 65,
      });
      // One bad message fails the whole batch before anything is stored.
      await expect(
        broker.sendBatch('agents', [
          { liteTopic: 'good', body: 'x' },
          { liteTopic: 'bad!', body: 'x' },
        ]),
      ).rejects.toMatchObject({ code: 'INVALID_LITE_TOPIC' });
      await expect(broker.send('agents', { liteTopic: 'good', body: 5 as never })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
      broker.createGroup('g', { bindTopic: 'agents' });
      const c = broker.consumer({ group: 'g', clientId: 'c' });
      await c.subscribe(['good'], { offset: { policy: 'min' } });
      expect((await broker.send('agents', { liteTopic: 'good', body: 'y' })).offset).toBe(0);
      expect(bodies(await c.pop())).toEqual(['y']);
    });
  });

  describe('registry', () => {
    it('adds, removes, syncs and closes; unknown lite topics may be added before they exist', async () => {
      const { broker } = await openBroker(engine);
      broker.createGroup('g', { bindTopic: 'agents' });
      const c = broker.consumer({ group: 'g', clientId: 'c1' });
      await c.subscribe(['t1', 't2']);
      await c.subscribe(['t3']);
      await c.unsubscribe(['t2']);
      expect(c.liteTopics.sort()).toEqual(['t1', 't3']);
      await c.sync(['t2', 't4']);
      expect(c.liteTopics.sort()).toEqual(['t2', 't4']);
      await sendMany(broker, 't2', 1);
      await sendMany(broker, 't1', 1);
      expect(await drain(c)).toEqual(['t2#0']);
      await c.close();
      expect(c.closed).toBe(true);
      await expect(c.pop()).rejects.toMatchObject({ code: 'CLOSED' });
      if (engine === 'rocketmq') {
        // The group is looked up on the brokers: its first call rejects (docs/ROCKETMQ.md, "Errors").
        const unknown = broker.consumer({ group: 'nope', clientId: 'x' });
        await expect(unknown.subscribe(['t1'])).rejects.toMatchObject({ code: 'GROUP_NOT_FOUND' });
      } else {
        expect(() => broker.consumer({ group: 'nope', clientId: 'x' })).toThrow(
          expect.objectContaining({ code: 'GROUP_NOT_FOUND' }),
        );
      }
    });

    it('keeps a client in one group', async () => {
      const { broker } = await openBroker(engine);
      broker.createGroup('g1', { bindTopic: 'agents' });
      broker.createGroup('g2', { bindTopic: 'agents' });
      const c = broker.consumer({ group: 'g1', clientId: 'c' });
      expect(() => broker.consumer({ group: 'g2', clientId: 'c' })).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      );
      await c.close();
      expect(broker.consumer({ group: 'g2', clientId: 'c' }).group).toBe('g2');
    });

    it('starts after the last message by default; min and offset as asked', async () => {
      const { broker } = await openBroker(engine);
      for (let i = 0; i < 5; i++) await broker.send('agents', { liteTopic: 'log', body: `log#${i}` });
      const cases = [
        [undefined, []],
        [{ policy: 'max' }, []],
        [{ policy: 'min' }, ['log#0', 'log#1', 'log#2', 'log#3', 'log#4']],
        [{ offset: 3 }, ['log#3', 'log#4']],
        [{ offset: 99 }, []],
      ] as const;
      for (const [i, [offset, expected]] of cases.entries()) {
        await broker.createGroup(`g${i}`, { bindTopic: 'agents' });
        const c = broker.consumer({ group: `g${i}`, clientId: `c${i}` });
        await c.subscribe(['log'], offset === undefined ? undefined : { offset });
        expect(await drain(c), JSON.stringify(offset)).toEqual(expected);
      }
      await expect(
        broker.consumer({ group: 'g0', clientId: 'bad' }).subscribe(['log'], { offset: { tail: 1 } as never }),
      ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    });

    embeddedOnly(engine, 'Start positions')('starts at tailN and timestamp as asked', async () => {
      const { broker, clock } = await openBroker(engine);
      for (let i = 0; i < 5; i++) {
        await broker.send('agents', { liteTopic: 'log', body: `log#${i}` });
        clock.advance(1000);
      }
      const start = clock.now() - 5000;
      const cases = [
        [{ tailN: 2 }, ['log#3', 'log#4']],
        [{ tailN: 99 }, ['log#0', 'log#1', 'log#2', 'log#3', 'log#4']],
        [{ timestamp: start + 2500 }, ['log#3', 'log#4']],
        [{ timestamp: start + 2000 }, ['log#2', 'log#3', 'log#4']],
      ] as const;
      for (const [i, [offset, expected]] of cases.entries()) {
        broker.createGroup(`g${i}`, { bindTopic: 'agents' });
        const c = broker.consumer({ group: `g${i}`, clientId: `c${i}` });
        await c.subscribe(['log'], { offset });
        expect(await drain(c), JSON.stringify(offset)).toEqual(expected);
      }
    });
  });

  describe('exclusive', () => {
    embeddedOnly(engine, 'Exclusive groups')(
      'evicts the holder on a later add; its POPs skip the topic; re-adding takes it back',
      async () => {
        const { broker } = await openBroker(engine);
        broker.createGroup('g', { bindTopic: 'agents', subModel: 'exclusive' });
        const a = broker.consumer({ group: 'g', clientId: 'a' });
        const b = broker.consumer({ group: 'g', clientId: 'b' });
        const aEvents = events(a);
        const bEvents = events(b);
        await a.subscribe(['x', 'y']);
        await sendMany(broker, 'x', 1);
        await b.subscribe(['x']);
        expect(aEvents).toEqual([{ liteTopic: 'x', reason: 'evicted' }]);
        expect(a.liteTopics).toEqual(['y']);
        expect(await drain(a)).toEqual([]);
        expect(await drain(b)).toEqual(['x#0']);
        await a.subscribe(['x']);
        expect(bEvents).toEqual([{ liteTopic: 'x', reason: 'evicted' }]);
        await sendMany(broker, 'x', 1, 1);
        expect(await drain(b)).toEqual([]);
        expect(await drain(a)).toEqual(['x#1']);
      },
    );

    embeddedOnly(engine, 'Exclusive groups')(
      "gives the evicted client's in-flight messages to the new holder at their invisible time",
      async () => {
        const { broker, advance } = await openBroker(engine);
        broker.createGroup('g', { bindTopic: 'agents', subModel: 'exclusive' });
        const a = broker.consumer({ group: 'g', clientId: 'a' });
        const b = broker.consumer({ group: 'g', clientId: 'b' });
        await a.subscribe(['x']);
        await sendMany(broker, 'x', 2);
        expect(bodies(await a.pop({ maxNum: 1, invisibleTimeMs: 10_000 }))).toEqual(['x#0']);
        await b.subscribe(['x']);
        expect(await b.pop()).toEqual([]);
        advance(9_999);
        expect(await b.pop()).toEqual([]);
        advance(1);
        const again = await b.pop({ maxNum: 1 });
        expect(again.map((m) => [m.body.toString(), m.reconsumeTimes])).toEqual([['x#0', 1]]);
      },
    );

    it('never gives two clients the same topic through sync', async () => {
      const { broker } = await openBroker(engine);
      broker.createGroup('g', { bindTopic: 'agents', subModel: 'exclusive' });
      const clients = ['a', 'b', 'c'].map((id) => broker.consumer({ group: 'g', clientId: id }));
      await clients[0]?.sync(['t1', 't2', 't3']);
      await clients[1]?.sync(['t2', 't4']);
      await clients[2]?.sync(['t3', 't4', 't1']);
      const held = clients.flatMap((c) => c.liteTopics);
      expect(held.sort()).toEqual(['t1', 't2', 't3', 't4']);
      expect(clients.map((c) => c.liteTopics.sort())).toEqual([[], ['t2'], ['t1', 't3', 't4']]);
    });
  });

  describe('wildcard', () => {
    embeddedOnly(engine, 'Wildcard groups')(
      'with patterns gets exactly the matching lite topics, existing and new; without patterns all',
      async () => {
        const { broker } = await openBroker(engine);
        broker.createGroup('w', { bindTopic: 'agents', wildcard: true });
        broker.createGroup('all', { bindTopic: 'agents', wildcard: true });
        await sendMany(broker, 'pay__refund', 1);
        await sendMany(broker, 'pay__success', 1);
        await sendMany(broker, 'notify__refund', 1);
        const catchAll = broker.consumer({ group: 'all', clientId: 'catch-all' });
        const pattern = broker.consumer({ group: 'w', clientId: 'pattern' });
        await pattern.sync(['pay__*'], { offset: { policy: 'min' } });
        expect(pattern.liteTopics.sort()).toEqual(['pay__refund', 'pay__success']);
        expect((await drain(pattern)).sort()).toEqual(['pay__refund#0', 'pay__success#0']);
        // A new matching lite topic is caught from its first message; a new non-matching one is not.
        await sendMany(broker, 'pay__new', 2);
        await sendMany(broker, 'other', 1);
        expect(pattern.liteTopics.sort()).toEqual(['pay__new', 'pay__refund', 'pay__success']);
        expect(await drain(pattern)).toEqual(['pay__new#0', 'pay__new#1']);
        // The catch-all client joined after the first three: it gets every lite topic from then on.
        expect((await drain(catchAll)).sort()).toEqual(['other#0', 'pay__new#0', 'pay__new#1']);
      },
    );

    embeddedOnly(engine, 'Wildcard groups')(
      'mixes catch-all and pattern clients in one group, each getting what it asked for',
      async () => {
        const { broker } = await openBroker(engine);
        broker.createGroup('w', { bindTopic: 'agents', wildcard: true });
        const catchAll = broker.consumer({ group: 'w', clientId: 'catch-all' });
        const pattern = broker.consumer({ group: 'w', clientId: 'pattern' });
        await pattern.sync(['a__*']);
        for (const name of ['a__1', 'b__1', 'a__2', 'b__2', 'a__3']) await sendMany(broker, name, 1);
        const patternGot = await drain(pattern);
        const catchAllGot = await drain(catchAll);
        expect(patternGot.every((body) => body.startsWith('a__'))).toBe(true);
        expect([...patternGot, ...catchAllGot].sort()).toEqual(['a__1#0', 'a__2#0', 'a__3#0', 'b__1#0', 'b__2#0']);
        expect(catchAllGot).toEqual(expect.arrayContaining(['b__1#0', 'b__2#0']));
      },
    );

    embeddedOnly(engine, 'Wildcard groups')(
      'rejects an entirely invalid pattern set and changes nothing; ignores invalid ones in a valid set',
      async () => {
        const { broker } = await openBroker(engine);
        broker.createGroup('w', { bindTopic: 'agents', wildcard: true });
        await sendMany(broker, 'pay__refund', 1);
        const c = broker.consumer({ group: 'w', clientId: 'c' });
        await c.sync(['pay__*']);
        await expect(c.sync(['pa*', 'pay____x'])).rejects.toMatchObject({ code: 'INVALID_PATTERN' });
        await expect(c.subscribe(['**__x'])).rejects.toMatchObject({ code: 'INVALID_PATTERN' });
        expect(c.patterns).toEqual(['pay__*']);
        expect(c.liteTopics).toEqual(['pay__refund']);
        await c.sync(['pa*', 'pay__refund']);
        expect(c.patterns).toEqual(['pay__refund']);
      },
    );

    embeddedOnly(engine, 'Wildcard groups')('moves between patterns and catch-all without stale state', async () => {
      const { broker } = await openBroker(engine);
      broker.createGroup('w', { bindTopic: 'agents', wildcard: true });
      const c = broker.consumer({ group: 'w', clientId: 'c' });
      await c.sync(['a__*']);
      await sendMany(broker, 'a__1', 1);
      await sendMany(broker, 'b__1', 1);
      expect(c.liteTopics).toEqual(['a__1']);
      await c.sync([]);
      expect(c.liteTopics).toEqual([]);
      expect(c.patterns).toEqual([]);
      await sendMany(broker, 'b__1', 1, 1);
      expect((await drain(c)).sort()).toEqual(['a__1#0', 'b__1#1']);
      await c.sync(['a__*']);
      expect(c.liteTopics).toEqual(['a__1']);
      await sendMany(broker, 'b__1', 1, 2);
      await sendMany(broker, 'b__2', 1);
      await sendMany(broker, 'a__1', 1, 1);
      expect(await drain(c)).toEqual(['a__1#1']);
      await c.unsubscribe(['a__*']);
      expect(c.liteTopics).toEqual([]);
      await sendMany(broker, 'b__2', 1, 1);
      expect(await drain(c)).toEqual(['b__2#1']);
    });
  });

  describe('quotas', () => {
    it('checks lite topics per client before changing anything', async () => {
      const { broker } = await openBroker(engine, { limits: { maxLiteTopicsPerClient: 3 } });
      await broker.createGroup('g', { bindTopic: 'agents' });
      const c = broker.consumer({ group: 'g', clientId: 'c' });
      await c.subscribe(['t1', 't2']);
      await expect(c.subscribe(['t3', 't4'])).rejects.toMatchObject({
        code: 'QUOTA_EXCEEDED',
        quota: 'maxLiteTopicsPerClient',
        limit: 3,
        actual: 4,
      });
      expect(c.liteTopics.sort()).toEqual(['t1', 't2']);
      await expect(c.sync(['a', 'b', 'c', 'd'])).rejects.toMatchObject({ quota: 'maxLiteTopicsPerClient' });
      expect(c.liteTopics.sort()).toEqual(['t1', 't2']);
      await c.subscribe(['t2', 't3']);
      expect(c.liteTopics.sort()).toEqual(['t1', 't2', 't3']);
    });

    embeddedOnly(engine, 'Wildcard groups')(
      'checks patterns per client, and what they expand to, before changing anything',
      async () => {
        const { broker } = await openBroker(engine, { limits: { maxLiteTopicsPerClient: 3, maxPatternsPerClient: 2 } });
        broker.createGroup('w', { bindTopic: 'agents', wildcard: true });
        const w = broker.consumer({ group: 'w', clientId: 'w' });
        await expect(w.sync(['a__*', 'b__*', 'c__*'])).rejects.toMatchObject({
          quota: 'maxPatternsPerClient',
          actual: 3,
        });
        for (const name of ['x__1', 'x__2', 'x__3', 'x__4']) await sendMany(broker, name, 1);
        // Expansion counts too: four existing matches do not fit three.
        await expect(w.sync(['x__*'])).rejects.toMatchObject({ quota: 'maxLiteTopicsPerClient', actual: 4 });
        expect(w.patterns).toEqual([]);
      },
    );

    embeddedOnly(engine, 'Wildcard groups')(
      'checks a new matching lite topic against the quota and tells the client instead of overshooting',
      async () => {
        const { broker } = await openBroker(engine, { limits: { maxLiteTopicsPerClient: 2 } });
        broker.createGroup('w', { bindTopic: 'agents', wildcard: true });
        const w = broker.consumer({ group: 'w', clientId: 'w' });
        const refused: Error[] = [];
        w.on('quotaExceeded', (error) => refused.push(error));
        await w.sync(['x__*']);
        for (const name of ['x__1', 'x__2', 'x__3']) await sendMany(broker, name, 1);
        expect(w.liteTopics.sort()).toEqual(['x__1', 'x__2']);
        expect(refused).toEqual([expect.objectContaining({ quota: 'maxLiteTopicsPerClient', limit: 2, actual: 3 })]);
        expect((await drain(w)).sort()).toEqual(['x__1#0', 'x__2#0']);
      },
    );

    embeddedOnly(engine, 'Quotas')('checks subscriptions and lite topics per broker, and maxPopNum', async () => {
      const { broker } = await openBroker(engine, {
        limits: { maxSubscriptionsPerBroker: 3, maxLiteTopicsPerBroker: 2, maxPopNum: 4 },
      });
      broker.createGroup('g', { bindTopic: 'agents' });
      const a = broker.consumer({ group: 'g', clientId: 'a' });
      const b = broker.consumer({ group: 'g', clientId: 'b' });
      await a.subscribe(['t1', 't2']);
      await expect(b.subscribe(['t1', 't2'])).rejects.toMatchObject({
        quota: 'maxSubscriptionsPerBroker',
        limit: 3,
        actual: 4,
      });
      await b.subscribe(['t1']);
      await a.unsubscribe(['t2']);
      await b.subscribe(['t2']);
      await broker.send('agents', { liteTopic: 'n1', body: 'x' });
      await expect(
        broker.sendBatch('agents', [
          { liteTopic: 'n2', body: 'x' },
          { liteTopic: 'n3', body: 'x' },
        ]),
      ).rejects.toMatchObject({ quota: 'maxLiteTopicsPerBroker', limit: 2, actual: 3 });
      await broker.send('agents', { liteTopic: 'n2', body: 'x' });
      await broker.send('agents', { liteTopic: 'n1', body: 'again' });
      await expect(broker.send('agents', { liteTopic: 'n3', body: 'x' })).rejects.toMatchObject({
        quota: 'maxLiteTopicsPerBroker',
      });
      await expect(a.pop({ maxNum: 5 })).rejects.toMatchObject({ quota: 'maxPopNum', limit: 4, actual: 5 });
    });
  });
});

describe('Broker.open', () => {
  it('refuses bad options', async () => {
    await expect(Broker.open({ limits: { maxPopNum: 0 } })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(Broker.open({ limits: { nope: 1 } as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});
