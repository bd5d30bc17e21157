/**
 * Consumption as users write it, on every engine: `consumer.run` (concurrency, FIFO per lite topic,
 * retry with backoff, dead letters, extension of the invisible time, `stop()`), `messages()` ending
 * early or aborted, `close()` releasing what it held, and background failures reaching the broker's
 * `'error'` event. Runs use system timers with short delays; assertions are on order and counts,
 * never on how long something took.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { retryDelayMs } from '../ts/broker/run.js';
import { Broker, MemoryStore, type PoppedMessage, systemClock } from '../ts/index.js';
import { bodies, gather, openBroker, popEither, sendMany } from './broker-helpers.js';
import { BACKENDS, type Backend, embeddedOnly } from './engines.js';

/** A broker on system timers (long polls and invisible times run on their own), closed by the caller. */
async function liveBroker(engine: Backend, options: Parameters<typeof Broker.open>[0] = {}): Promise<Broker> {
  if (engine === 'rocketmq') return (await openBroker(engine, options)).broker;
  const broker = await Broker.open({ engine, ...options });
  broker.createTopic('agents');
  return broker;
}

/** Resolves once `check` holds, polling every few ms; fails after `ms`. */
async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** A promise with its resolve, to hold handlers until the test lets them go. */
function gate(): { promise: Promise<void>; open(): void } {
  let open: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe('retry delay', () => {
  it('doubles per earlier delivery from the initial delay, capped', () => {
    expect([0, 1, 2, 3, 10, 100].map((n) => retryDelayMs(n, 100, 1_000))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });
});

describe.each(BACKENDS)('%s engine', (engine) => {
  describe('consumer.close()', () => {
    it('makes its in-flight messages visible to the group at once', async () => {
      const { broker } = await openBroker(engine);
      broker.createGroup('g', { bindTopic: 'agents' });
      const first = broker.consumer({ group: 'g', clientId: 'first' });
      const second = broker.consumer({ group: 'g', clientId: 'second' });
      await first.subscribe(['t1', 't2']);
      await second.subscribe(['t1', 't2']);
      await sendMany(broker, 't1', 2);
      await sendMany(broker, 't2', 1);
      const {
        holder,
        other,
        popped: held,
      } = await popEither(engine, first, second, {
        maxNum: 32,
        invisibleTimeMs: 60_000,
      });
      expect(held.length).toBeGreaterThan(0);
      await holder.close();
      const again = await gather(engine, 3, () => other.pop({ maxNum: 32 }));
      expect(bodies(again).sort()).toEqual(['t1#0', 't1#1', 't2#0'].sort());
      for (const m of again.filter((m) => bodies(held).includes(m.body.toString()))) expect(m.reconsumeTimes).toBe(1);
    });

    it('with release: false keeps them hidden until their invisible time ends', async () => {
      const { broker, elapse } = await openBroker(engine);
      broker.createGroup('g', { bindTopic: 'agents' });
      const first = broker.consumer({ group: 'g', clientId: 'first' });
      const second = broker.consumer({ group: 'g', clientId: 'second' });
      await first.subscribe(['t1']);
      await second.subscribe(['t1']);
      await sendMany(broker, 't1', 1);
      const { holder, other, popped } = await popEither(engine, first, second, { invisibleTimeMs: 5_000 });
      expect(bodies(popped)).toEqual(['t1#0']);
      await holder.close({ release: false });
      expect(await other.pop()).toEqual([]);
      await elapse(5_000);
      expect(bodies(await gather(engine, 1, () => other.pop()))).toEqual(['t1#0']);
    });
  });

  describe('messages()', () => {
    embeddedOnly(engine, 'Dispatch')('releases the rest of its batch when the loop ends early', async () => {
      const { broker } = await openBroker(engine);
      broker.createGroup('g', { bindTopic: 'agents' });
      const reader = broker.consumer({ group: 'g', clientId: 'reader' });
      const other = broker.consumer({ group: 'g', clientId: 'other' });
      for (const c of [reader, other]) await c.subscribe(['t1', 't2', 't3']);
      for (const t of ['t1', 't2', 't3']) await sendMany(broker, t, 1);
      let taken: PoppedMessage | undefined;
      for await (const message of reader.messages({ maxNum: 3, waitMs: 0, invisibleTimeMs: 60_000 })) {
        taken = message;
        break;
      }
      expect(taken).toBeDefined();
      const rest = await gather(engine, 2, () => other.pop({ maxNum: 32 }));
      expect(bodies(rest).sort()).toEqual(['t1#0', 't2#0', 't3#0'].filter((b) => b !== taken?.body.toString()));
      // The message handed out stays with the reader, which can still ack it.
      await reader.ack(taken as PoppedMessage);
    });

    it('ends when its signal aborts, and a message that arrives after is not lost', async () => {
      const broker = await liveBroker(engine);
      try {
        broker.createGroup('g', { bindTopic: 'agents' });
        const reader = broker.consumer({ group: 'g', clientId: 'reader' });
        await reader.subscribe(['t1']);
        const controller = new AbortController();
        const seen: string[] = [];
        const loop = (async () => {
          for await (const m of reader.messages({ signal: controller.signal, waitMs: 60_000 })) {
            seen.push(m.body.toString());
            await m.ack();
          }
        })();
        await sleep(20);
        controller.abort();
        await loop;
        await sendMany(broker, 't1', 1);
        // On RocketMQ the aborted stream's long poll stays open on the proxy until its wait ends and
        // may take the message first; the stream makes it visible again, asynchronously.
        const after = await gather(engine, 1, () => reader.pop({ waitMs: 2_000 }));
        expect(seen).toEqual([]);
        expect(bodies(after)).toEqual(['t1#0']);
      } finally {
        await broker.close();
      }
    });

    embeddedOnly(engine, 'Dead letters')('gives each message nack, extend and deadLetter', async () => {
      const { broker, advance } = await openBroker(engine);
      broker.createGroup('g', { bindTopic: 'agents' });
      const reader = broker.consumer({ group: 'g', clientId: 'reader' });
      await reader.subscribe(['t1', 't2']);
      await sendMany(broker, 't1', 1);
      await sendMany(broker, 't2', 1);
      const stream = reader.messages({ maxNum: 2, waitMs: 0, invisibleTimeMs: 1_000 });
      const first = (await stream.next()).value as Awaited<ReturnType<typeof stream.next>>['value'];
      const second = (await stream.next()).value as typeof first;
      if (first === undefined || second === undefined) throw new Error('expected two messages');
      const [nacked, dead] = first.liteTopic === 't1' ? [first, second] : [second, first];
      await nacked.extend(10_000);
      await dead.deadLetter();
      advance(5_000);
      expect(await reader.pop()).toEqual([]); // extended past its first invisible time; the other is a dead letter
      await nacked.nack(0);
      await stream.return();
      const again = await reader.pop();
      expect(again.map((m) => [m.body.toString(), m.reconsumeTimes])).toEqual([['t1#0', 1]]);
      expect(broker.readDeadLetters('g').map((d) => d.body.toString())).toEqual(['t2#0']);
    });
  });

  describe('consumer.run()', () => {
    it('runs up to `concurrency` handlers at once, never two of one lite topic, in order per lite topic', async () => {
      const broker = await liveBroker(engine);
      try {
        broker.createGroup('g', { bindTopic: 'agents' });
        const consumer = broker.consumer({ group: 'g', clientId: 'worker' });
        const topics = ['t1', 't2', 't3', 't4', 't5', 't6'];
        await consumer.subscribe(topics);
        for (const t of topics) await sendMany(broker, t, 5);
        let running = 0;
        let most = 0;
        const busy = new Set<string>();
        const order = new Map<string, number[]>();
        const run = consumer.run(
          async (m) => {
            expect(busy.has(m.liteTopic), `two handlers of ${m.liteTopic}`).toBe(false);
            busy.add(m.liteTopic);
            running++;
            most = Math.max(most, running);
            await sleep(5);
            order.set(m.liteTopic, [...(order.get(m.liteTopic) ?? []), m.offset]);
            running--;
            busy.delete(m.liteTopic);
          },
          { concurrency: 3, waitMs: 50 },
        );
        await until(() => [...order.values()].reduce((n, o) => n + o.length, 0) === 30, 'every message handled');
        await run.stop();
        expect(most).toBe(3);
        for (const t of topics) expect(order.get(t)).toEqual([0, 1, 2, 3, 4]);
        expect(await consumer.pop({ maxNum: 32 })).toEqual([]);
      } finally {
        await broker.close();
      }
    });

    embeddedOnly(engine, 'Dead letters')(
      'retries a failed message after a backoff, before anything after it, then dead-letters it at the limit',
      async () => {
        const broker = await liveBroker(engine);
        try {
          broker.createGroup('g', { bindTopic: 'agents', maxReconsumeTimes: 2 });
          const consumer = broker.consumer({ group: 'g', clientId: 'worker' });
          await consumer.subscribe(['t1']);
          await sendMany(broker, 't1', 2);
          const attempts: string[] = [];
          const failedAt: number[] = [];
          const errors: unknown[] = [];
          const run = consumer.run(
            async (m) => {
              attempts.push(`${m.body.toString()}@${m.reconsumeTimes}`);
              if (m.offset === 0) {
                failedAt.push(Date.now());
                throw new Error('always fails');
              }
            },
            { waitMs: 20, retry: { initialDelayMs: 40, maxDelayMs: 60 }, onError: (error) => errors.push(error) },
          );
          await until(() => attempts.includes('t1#1@0'), 'the message after the failing one');
          await run.stop();
          // Three deliveries of #0 (0, 1, 2 earlier deliveries), then #1: FIFO held #1 back until #0 left.
          expect(attempts).toEqual(['t1#0@0', 't1#0@1', 't1#0@2', 't1#1@0']);
          expect(errors).toHaveLength(3);
          // Each retry came no sooner than its backoff: 40 ms after the first failure, then the 60 ms cap
          // (a millisecond of slack for the clock's rounding).
          expect((failedAt[1] as number) - (failedAt[0] as number)).toBeGreaterThanOrEqual(39);
          expect((failedAt[2] as number) - (failedAt[1] as number)).toBeGreaterThanOrEqual(59);
          expect(broker.readDeadLetters('g').map((d) => d.body.toString())).toEqual(['t1#0']);
        } finally {
          await broker.close();
        }
      },
    );

    embeddedOnly(engine, 'Invisible time')(
      'keeps a message hidden while its handler runs longer than the invisible time',
      async () => {
        const broker = await liveBroker(engine);
        try {
          broker.createGroup('g', { bindTopic: 'agents' });
          const slow = broker.consumer({ group: 'g', clientId: 'slow' });
          const other = broker.consumer({ group: 'g', clientId: 'other' });
          for (const c of [slow, other]) await c.subscribe(['t1']);
          await sendMany(broker, 't1', 1);
          const stolen: string[] = [];
          const hold = gate();
          let started = false;
          const run = slow.run(
            async () => {
              started = true;
              await hold.promise;
            },
            { invisibleTimeMs: 300, waitMs: 20 },
          );
          await until(() => started, 'the handler to start');
          // More than an invisible time passes while the handler runs; the other client must get nothing.
          for (let i = 0; i < 8; i++) stolen.push(...bodies(await other.pop({ waitMs: 60 })));
          hold.open();
          await run.stop();
          expect(stolen).toEqual([]);
          expect(await other.pop({ waitMs: 100 })).toEqual([]); // acked, not merely released
        } finally {
          await broker.close();
        }
      },
    );

    it('stop() waits for running handlers and releases what was fetched and not started', async () => {
      const broker = await liveBroker(engine);
      try {
        broker.createGroup('g', { bindTopic: 'agents' });
        const worker = broker.consumer({ group: 'g', clientId: 'worker' });
        const other = broker.consumer({ group: 'g', clientId: 'other' });
        const topics = ['t1', 't2', 't3', 't4'];
        for (const c of [worker, other]) await c.subscribe(topics);
        for (const t of topics) await sendMany(broker, t, 1);
        const hold = gate();
        const handled: string[] = [];
        let finished = false;
        const run = worker.run(
          async (m) => {
            handled.push(m.body.toString());
            await hold.promise;
            finished = true;
          },
          { concurrency: 1, maxNum: 4, invisibleTimeMs: 60_000, waitMs: 20 },
        );
        await until(() => handled.length === 1, 'the first handler');
        const stopping = run.stop();
        let stopped = false;
        stopping.then(() => {
          stopped = true;
        });
        await sleep(20);
        expect(stopped).toBe(false); // still waiting for the running handler
        hold.open();
        await stopping;
        expect(finished).toBe(true);
        // Nothing hidden: the rest is there for the group at once (each release's event goes to one
        // of its clients); the handled one was acked. RocketMQ hands released messages to consumers
        // asynchronously (docs/ROCKETMQ.md, "Long poll"): there the rest may take a few more rounds.
        const expected = topics.map((t) => `${t}#0`).filter((b) => b !== handled[0]);
        const rest: string[] = [];
        const popRest = async () => {
          rest.push(...bodies(await other.pop({ maxNum: 32 })), ...bodies(await worker.pop({ maxNum: 32 })));
        };
        await popRest();
        const rounds = engine === 'rocketmq' ? 30 : 0;
        for (let round = 0; round < rounds && rest.length < expected.length; round++) {
          await sleep(100);
          await popRest();
        }
        expect(rest.sort()).toEqual(expected);
      } finally {
        await broker.close();
      }
    });

    it('ends when its signal aborts, and reports handler failures as broker errors by default', async () => {
      const broker = await liveBroker(engine);
      try {
        broker.createGroup('g', { bindTopic: 'agents' });
        const worker = broker.consumer({ group: 'g', clientId: 'worker' });
        await worker.subscribe(['t1']);
        await sendMany(broker, 't1', 1);
        const reported: [unknown, { during: string }][] = [];
        broker.on('error', (error, info) => reported.push([error, info]));
        const controller = new AbortController();
        const run = worker.run(
          () => {
            throw new Error('handler broke');
          },
          { signal: controller.signal, waitMs: 20, retry: { initialDelayMs: 60_000 } },
        );
        await until(() => reported.length > 0, 'a reported failure');
        controller.abort();
        await run.done;
        const [error, info] = reported[0] as [Error, { during: string }];
        expect(error.message).toBe('handler broke');
        expect(info.during).toBe('consumer.run handler');
      } finally {
        await broker.close();
      }
    });
  });

  describe("the broker's 'error' event", () => {
    embeddedOnly(engine, 'Storage')(
      'carries a failed maintenance pass, and a logger hears it when nobody listens',
      async () => {
        class FailingRetention extends MemoryStore {
          override async retain(): Promise<{ segments: number; bytes: number }> {
            throw new Error('disk went away');
          }
        }
        const logged: string[] = [];
        const { broker } = await openBroker(engine, {
          store: new FailingRetention(systemClock),
          retention: { maxAgeMs: 1 },
          logger: { error: (message) => logged.push(message) },
        });
        await expect(broker.runMaintenance()).rejects.toThrow('disk went away');
        expect(logged).toEqual([expect.stringContaining('maintenance failed: disk went away')]);
        const heard: string[] = [];
        broker.on('error', (error: Error, info: { during: string }) => heard.push(`${info.during}: ${error.message}`));
        await expect(broker.runMaintenance()).rejects.toThrow('disk went away');
        expect(heard).toEqual(['maintenance: disk went away']);
        expect(logged).toHaveLength(1);
      },
    );
  });
});
