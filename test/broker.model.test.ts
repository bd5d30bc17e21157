/**
 * Model test: random interleavings of send, subscribe, unsubscribe, pop, ack (fresh and stale),
 * expiry (clock advance) and close, on every engine, against test/model/broker.ts. After every step:
 * subscriptions and quota refusals as the model predicts, exclusive ownership, FIFO and reconsume
 * counts on every POP, ack outcomes; at the end, at-least-once: every message of every lite topic a
 * group started on is delivered and acked.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Broker, type Consumer, type PoppedMessage } from '../ts/index.js';
import { ManualClock } from './broker-helpers.js';
import { ENGINES } from './engines.js';
import { BrokerModel } from './model/broker.js';

const TOPICS = ['t0', 't1', 't2'];
const GROUPS = { shared: 'shared', excl: 'exclusive' } as const;
const CLIENTS = ['c0', 'c1'];
const LIMITS = { maxLiteTopicsPerClient: 3, maxSubscriptionsPerBroker: 7 };

type Command =
  | { kind: 'send'; topic: string; count: number }
  | { kind: 'subscribe' | 'unsubscribe'; group: string; client: string; topics: string[] }
  | { kind: 'pop'; group: string; client: string; maxNum: number; invisibleTimeMs: number }
  | { kind: 'ack'; pick: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'close'; group: string; client: string };

const group = fc.constantFrom(...Object.keys(GROUPS));
const client = fc.constantFrom(...CLIENTS);
const topics = fc.uniqueArray(fc.constantFrom(...TOPICS), { minLength: 1, maxLength: 3 });

const command: fc.Arbitrary<Command> = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant('send' as const),
      topic: fc.constantFrom(...TOPICS),
      count: fc.integer({ min: 1, max: 3 }),
    }),
    weight: 4,
  },
  { arbitrary: fc.record({ kind: fc.constant('subscribe' as const), group, client, topics }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('unsubscribe' as const), group, client, topics }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant('pop' as const),
      group,
      client,
      maxNum: fc.integer({ min: 1, max: 4 }),
      invisibleTimeMs: fc.constantFrom(0, 100, 1000),
    }),
    weight: 4,
  },
  { arbitrary: fc.record({ kind: fc.constant('ack' as const), pick: fc.nat() }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.constantFrom(50, 100, 1000) }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('close' as const), group, client }), weight: 1 },
);

class Run {
  readonly model = new BrokerModel(GROUPS, LIMITS);
  readonly consumers = new Map<string, Consumer>();
  /** Every handle received, fresh or since superseded, with the group it belongs to. */
  readonly received: { group: string; handle: string }[] = [];
  sent = 0;

  constructor(
    readonly broker: Broker,
    readonly clock: ManualClock,
  ) {}

  consumer(groupName: string, clientId: string): Consumer {
    const key = `${groupName}/${clientId}`;
    let consumer = this.consumers.get(key);
    if (consumer === undefined || consumer.closed) {
      consumer = this.broker.consumer({ group: groupName, clientId: key });
      this.consumers.set(key, consumer);
    }
    return consumer;
  }

  async step(c: Command): Promise<void> {
    const { model } = this;
    switch (c.kind) {
      case 'send': {
        const bodies = Array.from({ length: c.count }, () => `m${this.sent++}`);
        await this.broker.sendBatch(
          'agents',
          bodies.map((body) => ({ liteTopic: c.topic, body })),
        );
        model.send(c.topic, bodies);
        return;
      }
      case 'subscribe': {
        const expected = model.subscribe(c.group, c.client, c.topics);
        const outcome = this.consumer(c.group, c.client).subscribe(c.topics, { offset: { policy: 'min' } });
        if (expected === undefined) await outcome;
        else await expect(outcome).rejects.toMatchObject({ code: 'QUOTA_EXCEEDED', quota: expected });
        return;
      }
      case 'unsubscribe':
        model.unsubscribe(c.group, c.client, c.topics);
        await this.consumer(c.group, c.client).unsubscribe(c.topics);
        return;
      case 'pop': {
        const batch = await this.consumer(c.group, c.client).pop({
          maxNum: c.maxNum,
          invisibleTimeMs: c.invisibleTimeMs,
        });
        model.popped(c.group, c.client, batch.map(view), this.clock.now(), c.invisibleTimeMs);
        for (const m of batch) this.received.push({ group: c.group, handle: m.receiptHandle });
        return;
      }
      case 'ack': {
        if (this.received.length === 0) return;
        const { group: groupName, handle } = this.received[c.pick % this.received.length] as (typeof this.received)[0];
        const acker = this.openConsumer(groupName);
        if (acker === undefined) return;
        const outcome = acker.ack(handle);
        if (model.ack(handle)) await outcome;
        else await expect(outcome).rejects.toMatchObject({ code: 'INVALID_RECEIPT' });
        return;
      }
      case 'advance':
        this.clock.advance(c.ms);
        this.broker.tick();
        return;
      case 'close':
        model.close(c.group, c.client);
        await this.consumers.get(`${c.group}/${c.client}`)?.close();
        return;
    }
  }

  private openConsumer(groupName: string): Consumer | undefined {
    for (const clientId of CLIENTS) {
      const consumer = this.consumers.get(`${groupName}/${clientId}`);
      if (consumer !== undefined && !consumer.closed) return consumer;
    }
    return undefined;
  }

  /** Subscriptions as the model says; exclusive topics held once; quotas respected. */
  checkInvariants(): void {
    let references = 0;
    for (const groupName of Object.keys(GROUPS)) {
      const held = new Map<string, number>();
      for (const clientId of CLIENTS) {
        const consumer = this.consumers.get(`${groupName}/${clientId}`);
        const actual = consumer === undefined || consumer.closed ? [] : consumer.liteTopics.sort();
        expect(actual, `${groupName}/${clientId}`).toEqual([...this.model.topicsOf(groupName, clientId)].sort());
        expect(actual.length).toBeLessThanOrEqual(LIMITS.maxLiteTopicsPerClient);
        references += actual.length;
        for (const t of actual) held.set(t, (held.get(t) ?? 0) + 1);
      }
      if (GROUPS[groupName as keyof typeof GROUPS] === 'exclusive') {
        for (const [t, count] of held) expect(count, `exclusive ${t}`).toBe(1);
      }
    }
    expect(references).toBeLessThanOrEqual(LIMITS.maxSubscriptionsPerBroker);
  }

  /** At-least-once: one fresh client per group takes over every started lite topic and drains it. */
  async finish(): Promise<void> {
    for (const [key, consumer] of this.consumers) {
      const [groupName, clientId] = key.split('/') as [string, string];
      this.model.close(groupName, clientId);
      await consumer.close();
    }
    this.clock.advance(10_000);
    this.broker.tick();
    for (const groupName of Object.keys(GROUPS)) {
      const started = this.model.started(groupName);
      if (started.length === 0) continue;
      const consumer = this.broker.consumer({ group: groupName, clientId: `${groupName}/final` });
      expect(this.model.subscribe(groupName, 'final', started)).toBeUndefined();
      await consumer.subscribe(started);
      for (let round = 0; round < 200; round++) {
        const batch = await consumer.pop({ maxNum: 32, invisibleTimeMs: 1000 });
        if (batch.length === 0) break;
        this.model.popped(groupName, 'final', batch.map(view), this.clock.now(), 1000);
        for (const m of batch) {
          expect(this.model.ack(m.receiptHandle)).toBe(true);
          await consumer.ack(m);
        }
      }
      expect(this.model.unacked(groupName), `undelivered in ${groupName}`).toEqual([]);
      this.model.close(groupName, 'final');
      await consumer.close();
    }
  }
}

function view(m: PoppedMessage) {
  return {
    liteTopic: m.liteTopic,
    offset: m.offset,
    reconsumeTimes: m.reconsumeTimes,
    receiptHandle: m.receiptHandle,
    body: m.body.toString(),
  };
}

describe.each(ENGINES)('%s engine', (engine) => {
  it('matches the reference model under random interleavings', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 10, maxLength: 80 }), async (commands) => {
        const clock = new ManualClock();
        const broker = await Broker.open({ engine, clock, limits: { ...LIMITS, maxEventsPerClient: 2 } });
        const run = new Run(broker, clock);
        try {
          broker.createTopic('agents');
          for (const [name, subModel] of Object.entries(GROUPS))
            broker.createGroup(name, { bindTopic: 'agents', subModel });
          for (const c of commands) {
            await run.step(c);
            run.checkInvariants();
          }
          await run.finish();
        } finally {
          await broker.close();
        }
      }),
      { numRuns: 150 },
    );
  });
});
