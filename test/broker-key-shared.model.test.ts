/**
 * Key-shared model test (issue 7): random schedules of send, pop, ack (fresh and stale), nack
 * (`changeInvisibleTime(h, 0)`), join, leave, crash (a client that goes silent until its session
 * ends) and clock advance, on every engine, checked against test/model/key-shared.ts: I1 and the
 * ack outcomes after every step, I2 and I4 on every POP, and at the end, after draining, I3.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bucketOf, keyHash } from '../ts/broker/key-shared.js';
import { Broker, type Consumer, type PoppedMessage } from '../ts/index.js';
import { ManualClock } from './broker-helpers.js';
import { ENGINES } from './engines.js';
import { KeySharedModel } from './model/key-shared.js';

const CLIENTS = ['c0', 'c1', 'c2', 'c3'];
const BUCKETS = 16;
/** Six keys, two per bucket for three buckets, and no key: bucket-level exclusion (I1) is exercised. */
const KEYS: (string | undefined)[] = [undefined];
for (let i = 0, perBucket = new Map<number, number>(); KEYS.length < 7; i++) {
  const bucket = bucketOf(keyHash(`k${i}`), BUCKETS);
  const count = perBucket.get(bucket) ?? 0;
  if (count === 2 || (count === 0 && perBucket.size === 3)) continue;
  perBucket.set(bucket, count + 1);
  KEYS.push(`k${i}`);
}
const SESSION_TIMEOUT_MS = 3000;

type Command =
  | { kind: 'send'; keys: (string | undefined)[] }
  | { kind: 'pop'; client: string; maxNum: number; invisibleTimeMs: number }
  | { kind: 'ack' | 'nack'; pick: number }
  | { kind: 'join' | 'leave' | 'crash'; client: string }
  | { kind: 'advance'; ms: number };

const client = fc.constantFrom(...CLIENTS);
const command: fc.Arbitrary<Command> = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant('send' as const),
      keys: fc.array(fc.constantFrom(...KEYS), { minLength: 1, maxLength: 5 }),
    }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('pop' as const),
      client,
      maxNum: fc.integer({ min: 1, max: 5 }),
      invisibleTimeMs: fc.constantFrom(100, 1000, 5000),
    }),
    weight: 5,
  },
  { arbitrary: fc.record({ kind: fc.constant('ack' as const), pick: fc.nat() }), weight: 5 },
  { arbitrary: fc.record({ kind: fc.constant('nack' as const), pick: fc.nat() }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('join' as const), client }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('leave' as const), client }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('crash' as const), client }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.constantFrom(50, 500, 2000) }), weight: 2 },
);

class Run {
  readonly model = new KeySharedModel(BUCKETS, SESSION_TIMEOUT_MS);
  readonly consumers = new Map<string, Consumer>();
  readonly crashed = new Set<string>();
  /** Every popped message, fresh or stale, for acks and nacks to pick from. */
  readonly popped: PoppedMessage[] = [];

  constructor(
    readonly broker: Broker,
    readonly clock: ManualClock,
  ) {}

  private seen(id: string): void {
    this.model.lastSeen.set(id, this.clock.now());
  }

  /** Some live client, to ack through (any client of the group may ack any handle). */
  private anyLive(): [string, Consumer] | undefined {
    for (const [id, consumer] of this.consumers) if (!this.crashed.has(id)) return [id, consumer];
    return undefined;
  }

  async join(id: string): Promise<void> {
    if (this.consumers.has(id)) return;
    const consumer = this.broker.consumer({ group: 'g', clientId: id });
    this.consumers.set(id, consumer);
    this.crashed.delete(id);
    await consumer.subscribe(['hot'], { offset: { policy: 'min' } });
    this.seen(id);
  }

  async step(cmd: Command): Promise<void> {
    const now = this.clock.now();
    switch (cmd.kind) {
      case 'send':
        await this.broker.sendBatch(
          'agents',
          cmd.keys.map((key) =>
            key === undefined ? { liteTopic: 'hot', body: 'x' } : { liteTopic: 'hot', key, body: 'x' },
          ),
        );
        for (const key of cmd.keys) this.model.sent(key);
        break;
      case 'pop': {
        const consumer = this.consumers.get(cmd.client);
        if (consumer === undefined || this.crashed.has(cmd.client)) break;
        const batch = await consumer.pop({ maxNum: cmd.maxNum, invisibleTimeMs: cmd.invisibleTimeMs });
        this.seen(cmd.client);
        this.model.popped(cmd.client, now, cmd.invisibleTimeMs, batch);
        this.popped.push(...batch);
        break;
      }
      case 'ack':
      case 'nack': {
        const message = this.popped[cmd.pick % Math.max(1, this.popped.length)];
        const live = this.anyLive();
        if (message === undefined || live === undefined) break;
        const [id, consumer] = live;
        const expected =
          cmd.kind === 'ack'
            ? this.model.ack(message.offset, message.reconsumeTimes)
            : this.model.release(message.offset, message.reconsumeTimes, now);
        const outcome = cmd.kind === 'ack' ? consumer.ack(message) : consumer.changeInvisibleTime(message, 0);
        if (expected === 'reject') await expect(outcome).rejects.toMatchObject({ code: 'INVALID_RECEIPT' });
        else await outcome;
        this.seen(id);
        break;
      }
      case 'join':
        await this.join(cmd.client);
        break;
      case 'leave': {
        const consumer = this.consumers.get(cmd.client);
        if (consumer === undefined || this.crashed.has(cmd.client)) break;
        await consumer.close();
        this.consumers.delete(cmd.client);
        this.model.left(cmd.client, now);
        break;
      }
      case 'crash':
        if (this.consumers.has(cmd.client)) this.crashed.add(cmd.client);
        break;
      case 'advance':
        this.advance(cmd.ms);
        break;
    }
    this.model.checkExclusive(this.clock.now());
  }

  advance(ms: number): void {
    this.clock.advance(ms);
    this.broker.tick();
    const now = this.clock.now();
    for (const id of this.model.expired(now)) {
      this.model.left(id, now);
      expect(this.consumers.get(id)?.closed).toBe(true);
      this.consumers.delete(id);
      this.crashed.delete(id);
    }
  }

  /** Everyone live pops and acks until nothing is left; silent clients' sessions end on the way. */
  async drain(): Promise<void> {
    for (let round = 0; round < 200; round++) {
      if (this.anyLive() === undefined) await this.join('drainer');
      let any = false;
      for (const [id, consumer] of [...this.consumers]) {
        if (this.crashed.has(id)) continue;
        const now = this.clock.now();
        const batch = await consumer.pop({ maxNum: 32, invisibleTimeMs: 1000 });
        this.seen(id);
        this.model.popped(id, now, 1000, batch);
        for (const m of batch) {
          expect(this.model.ack(m.offset, m.reconsumeTimes)).toBe('accept');
          await consumer.ack(m);
        }
        any ||= batch.length > 0;
      }
      this.model.checkExclusive(this.clock.now());
      if (!any && this.broker.admin.groupInfo('g').totalLag === 0) return;
      if (!any) this.advance(1000);
    }
    throw new Error('the group did not drain');
  }
}

describe.each(ENGINES)('%s engine', (engine) => {
  it('keeps I1–I4 under random send/pop/ack/nack/join/leave/crash/advance schedules', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 5, maxLength: 50 }), async (commands) => {
        const clock = new ManualClock();
        const broker = await Broker.open({ engine, clock, sessionTimeoutMs: SESSION_TIMEOUT_MS });
        try {
          broker.createTopic('agents');
          broker.createGroup('g', { bindTopic: 'agents', keyShared: { buckets: BUCKETS }, maxReconsumeTimes: 1000 });
          const run = new Run(broker, clock);
          await run.join('c0');
          for (const cmd of commands) await run.step(cmd);
          await run.drain();
          run.model.checkComplete();
        } finally {
          await broker.close();
        }
      }),
      { numRuns: 300 },
    );
  });
});
