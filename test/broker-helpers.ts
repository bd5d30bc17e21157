/**
 * Shared by the broker tests: a broker per engine on a manual clock (timers run on `tick()`),
 * closed after each test, and small helpers to send and pop.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach } from 'vitest';
import { Broker, type BrokerOptions, type Consumer, type PopOptions, type PoppedMessage } from '../ts/index.js';
import { type Backend, ROCKETMQ_ENDPOINTS } from './engines.js';
import { ManualClock } from './log-helpers.js';

export { ManualClock, tempDir } from './log-helpers.js';

const opened: { close(): Promise<void> }[] = [];
let namespaces = 0;

afterEach(async () => {
  for (const broker of opened.splice(0)) await broker.close().catch(() => undefined);
});

export interface TestBroker {
  broker: Broker;
  clock: ManualClock;
  /** Advances the clock and runs what became due. */
  advance(ms: number): void;
  /**
   * Lets `ms` pass: `advance(ms)` on the embedded broker; real time on RocketMQ, which keeps its
   * own. For the tests whose timing both can show (short invisible times and waits).
   */
  elapse(ms: number): Promise<void>;
}

/** Real-time waits on RocketMQ: retries of `gather`, and the pause between them. */
const GATHER_ATTEMPTS = 40;
const GATHER_PAUSE_MS = 250;

/**
 * A moment before `ms` from now has passed: 1 ms short on the manual clock; half of it in real time
 * (RocketMQ), where timers and the trip to the broker are not exact.
 */
export function shortOf(backend: Backend, ms: number): number {
  return backend === 'rocketmq' ? Math.floor(ms / 2) : ms - 1;
}

/**
 * The messages a POP finds. On the embedded broker the one call `pop()`, so its assertions are those
 * of a single POP. RocketMQ makes stored and released messages visible to POP asynchronously (a
 * redelivery too, once its invisible time ends): there POPs are repeated, a bounded number of times,
 * until at least `count` messages were gathered (`first`, a POP already made, counts).
 */
export async function gather(
  backend: Backend,
  count: number,
  pop: () => Promise<PoppedMessage[]>,
  first?: PoppedMessage[],
): Promise<PoppedMessage[]> {
  const found = first ?? (await pop());
  if (backend !== 'rocketmq') return found;
  for (let attempt = 0; found.length < count && attempt < GATHER_ATTEMPTS; attempt++) {
    await sleep(GATHER_PAUSE_MS);
    found.push(...(await pop()));
  }
  return found;
}

/**
 * A broker with parent `agents` on a manual clock; closed after the test. On RocketMQ: a connection
 * in a namespace of its own (a fresh broker as far as the test can tell), real time only, and only
 * the `limits` option.
 */
export async function openBroker(engine: Backend, options: BrokerOptions = {}): Promise<TestBroker> {
  const clock = new ManualClock();
  if (engine === 'rocketmq') return connectBroker(clock, options);
  const broker = await Broker.open({ engine, clock, ...options });
  opened.push(broker);
  broker.createTopic('agents');
  return {
    broker,
    clock,
    advance(ms: number) {
      clock.advance(ms);
      broker.tick();
    },
    async elapse(ms: number) {
      clock.advance(ms);
      broker.tick();
    },
  };
}

async function connectBroker(clock: ManualClock, options: BrokerOptions): Promise<TestBroker> {
  const { limits, ...rest } = options;
  if (Object.keys(rest).length > 0)
    throw new Error(`RocketMQ takes no ${Object.keys(rest).join(', ')}: mark the test embeddedOnly`);
  const namespace = `t${process.pid}x${Date.now().toString(36)}x${++namespaces}`;
  const remote = await Broker.connect({ endpoints: ROCKETMQ_ENDPOINTS as string, namespace, limits });
  opened.push(remote);
  await remote.createTopic('agents');
  return {
    // The same methods where RocketMQ has them; tests that use the others are embeddedOnly.
    broker: remote as unknown as Broker,
    clock,
    advance() {
      throw new Error('RocketMQ keeps its own time: use elapse, or mark the test embeddedOnly');
    },
    elapse: (ms: number) => sleep(ms),
  };
}

/**
 * Which of two clients of a group holds the lite topics: on the embedded broker `first`, whose POP
 * is returned as it is (its assertions are those of one call). RocketMQ decides which client a lite
 * topic's messages go to: there each client POPs in turn, a bounded number of times, until one
 * brings something.
 */
export async function popEither(
  backend: Backend,
  first: Consumer,
  second: Consumer,
  options: PopOptions,
): Promise<{ holder: Consumer; other: Consumer; popped: PoppedMessage[] }> {
  const popped = await first.pop(options);
  if (backend !== 'rocketmq' || popped.length > 0) return { holder: first, other: second, popped };
  for (let attempt = 0; attempt < GATHER_ATTEMPTS; attempt++) {
    for (const [holder, other] of [
      [second, first],
      [first, second],
    ] as const) {
      const found = await holder.pop(options);
      if (found.length > 0) return { holder, other, popped: found };
    }
    await sleep(GATHER_PAUSE_MS);
  }
  return { holder: first, other: second, popped: [] };
}

/**
 * What the broker keeps per lite topic of `agents` (white box: at most one per existing lite topic,
 * so it must go when a lite topic does).
 */
export function keptLite(broker: Broker): Map<string, unknown> {
  const parents = (broker as unknown as { parents: Map<string, { lite: Map<string, unknown> }> }).parents;
  return parents.get('agents')?.lite ?? new Map();
}

/** Sends `count` messages to `liteTopic` with bodies `<liteTopic>#<i>` from `from`. */
export async function sendMany(broker: Broker, liteTopic: string, count: number, from = 0): Promise<void> {
  const messages = Array.from({ length: count }, (_, i) => ({ liteTopic, body: `${liteTopic}#${from + i}` }));
  await broker.sendBatch('agents', messages);
}

export function bodies(messages: readonly PoppedMessage[]): string[] {
  return messages.map((m) => m.body.toString());
}

/** Pops everything ready (several rounds) and acks it; returns the bodies. */
export async function drain(consumer: Consumer, ack = true): Promise<string[]> {
  const seen: string[] = [];
  for (;;) {
    const batch = await consumer.pop({ maxNum: 32 });
    if (batch.length === 0) return seen;
    for (const message of batch) {
      seen.push(message.body.toString());
      if (ack) await consumer.ack(message);
    }
  }
}
