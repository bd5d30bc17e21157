/**
 * One end-to-end broker run: a fresh broker (in memory, or on disk with `flush: 'async'`), the parent
 * topic `agents` and three groups, every client long-polling and acking everything it gets, and one
 * producer sending the workload with `sendBatch`, either as fast as the consumers keep up (at most
 * `maxLagMessages` sent but not yet acked by the slowest full group) or paced at a fixed rate.
 *
 * The groups:
 * - `planner`: shared, 4 clients. A wildcard group whose clients have no patterns is "catch-all": each
 *   client takes every lite topic of the parent and each message goes to one of them (the least
 *   loaded). It receives every message. (Explicit subscriptions by share would need 25,000 names per
 *   client and would give each lite topic one holder, which is not sharing.)
 * - `tools`: exclusive, 4 clients; each `sync`s a quarter of the 100,000 names before any message
 *   exists (adding unknown lite topics is allowed), so each lite topic has one holder. Every message.
 * - `auditor`: wildcard with the patterns `tenant1__**` and `*__*__*__error`, 1 client; receives the
 *   messages of the lite topics those match, attached through the pattern index at their first message.
 * The tools shares need `maxLiteTopicsPerClient` and `maxSubscriptionsPerBroker` above their defaults.
 */
import type { EngineName, PoppedMessage } from '../ts/index.js';
import { minimalBroker } from './broker-floor.js';
import { GroupTally, type LatencyProbe } from './broker-tally.js';
import { AUDITOR_PATTERNS, type BrokerWorkload, messagesOf, PARENT_TOPIC } from './broker-workload.js';
import { lib } from './lib.js';
import { removeDir, tempDir } from './log-disk.js';

/** `floor`: not the broker but broker-floor.ts's bound, in memory, run by the same harness. */
export type StoreKind = 'memory' | 'disk' | 'floor';

export const PLANNER_CLIENTS = 4;
export const TOOLS_CLIENTS = 4;
export const POP_MAX = 32;
/** Long enough that nothing is redelivered during a run: a redelivery would be reported as a failure. */
export const INVISIBLE_TIME_MS = 120_000;
/** Long-poll wait of each POP. */
export const WAIT_MS = 1000;
/** A run that makes no progress for this long has failed. */
const STALL_MS = 60_000;

export const LIMITS = { maxLiteTopicsPerClient: 100_000, maxSubscriptionsPerBroker: 400_000 };

/**
 * How the producer sends. `max`: batches of `batch`, as fast as the groups keep up. `paced`: the
 * first `warmupMessages` (which open every lite topic) as `max` does, then, once every group has
 * acked them, the rest at `rate` messages/s in batches of at most `batch` due messages.
 */
export interface Pace {
  kind: 'max' | 'paced';
  batch: number;
  maxLagMessages: number;
  rate?: number;
  warmupMessages?: number;
}

export interface RunFigures {
  messages: number;
  /** Deliveries over all groups (each popped and acked). */
  deliveries: number;
  /** Broker open, topic, groups, consumers and subscriptions, ms. */
  setupMs: number;
  /** Messages of the timed phase: all of them, or those after the warm-up of a paced run. */
  timedMessages: number;
  /** Start of the timed phase to the last ack of the last group, ms. */
  elapsedMs: number;
  /** Start of the timed phase to the last send resolved, ms. */
  sendMs: number;
  /** CPU time of the process (all threads, user + system) from the start of the timed phase to the end, ms. */
  cpuMs: number;
  tallies: GroupTally[];
}

/** What the harness uses of a broker and of a consumer: the real ones, or the floor's. */
interface BenchBroker {
  sendBatch(parent: string, messages: { liteTopic: string; body: Buffer }[]): Promise<unknown>;
  close(): Promise<void>;
}
interface BenchConsumer {
  pop(options: { maxNum: number; invisibleTimeMs: number; waitMs: number }): Promise<PoppedMessage[]>;
  ack(message: PoppedMessage): Promise<void>;
  close(): Promise<void>;
}

interface Running {
  broker: BenchBroker;
  consumers: { consumer: BenchConsumer; tally: GroupTally }[];
  tallies: GroupTally[];
  dir: string | undefined;
  /** The first error of a consumer loop; it ends the run. */
  failure?: unknown;
}

function talliesOf(work: BrokerWorkload, probe: LatencyProbe | undefined) {
  const everything = () => true;
  return {
    planner: new GroupTally('planner', work, everything, probe),
    tools: new GroupTally('tools', work, everything, probe),
    auditor: new GroupTally('auditor', work, (topic) => work.audited[topic] === 1, probe),
  };
}

function setUpFloor(engine: EngineName, work: BrokerWorkload, probe: LatencyProbe | undefined): Running {
  const floor = minimalBroker(engine, work, PLANNER_CLIENTS, TOOLS_CLIENTS);
  const { planner, tools, auditor } = talliesOf(work, probe);
  const consumers: Running['consumers'] = [
    ...floor.planner.map((consumer) => ({ consumer, tally: planner })),
    ...floor.tools.map((consumer) => ({ consumer, tally: tools })),
    ...floor.auditor.map((consumer) => ({ consumer, tally: auditor })),
  ];
  return { broker: floor.broker, consumers, tallies: [planner, tools, auditor], dir: undefined };
}

async function setUp(engine: EngineName, store: StoreKind, work: BrokerWorkload, probe: LatencyProbe | undefined) {
  if (store === 'floor') return setUpFloor(engine, work, probe);
  const dir = store === 'disk' ? tempDir(`broker-${engine}`) : undefined;
  const broker = await lib.Broker.open({
    engine,
    flush: 'async',
    limits: LIMITS,
    ...(dir === undefined ? {} : { dir }),
  });
  broker.createTopic(PARENT_TOPIC);
  broker.createGroup('planner', { bindTopic: PARENT_TOPIC, subModel: 'shared', wildcard: true });
  broker.createGroup('tools', { bindTopic: PARENT_TOPIC, subModel: 'exclusive' });
  broker.createGroup('auditor', { bindTopic: PARENT_TOPIC, subModel: 'shared', wildcard: true });
  const { planner, tools, auditor } = talliesOf(work, probe);
  const consumers: Running['consumers'] = [];
  for (let i = 0; i < PLANNER_CLIENTS; i++) {
    consumers.push({ consumer: broker.consumer({ group: 'planner', clientId: `planner-${i}` }), tally: planner });
  }
  for (let i = 0; i < TOOLS_CLIENTS; i++) {
    const consumer = broker.consumer({ group: 'tools', clientId: `tools-${i}` });
    await consumer.sync(work.names.filter((_, index) => index % TOOLS_CLIENTS === i));
    consumers.push({ consumer, tally: tools });
  }
  const audit = broker.consumer({ group: 'auditor', clientId: 'auditor-0' });
  await audit.sync([...AUDITOR_PATTERNS]);
  consumers.push({ consumer: audit, tally: auditor });
  const running: Running = { broker, consumers, tallies: [planner, tools, auditor], dir };
  return running;
}

/** Resolves the producer's wait when consumers ack (flow control without polling). */
class AckSignal {
  private waiting: (() => void) | undefined;
  wait(): Promise<void> {
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }
  notify(): void {
    const resolve = this.waiting;
    this.waiting = undefined;
    resolve?.();
  }
}

async function consume(run: Running, entry: Running['consumers'][number], signal: AckSignal, stop: { now: boolean }) {
  const { consumer, tally } = entry;
  while (!stop.now) {
    const batch = await consumer.pop({ maxNum: POP_MAX, invisibleTimeMs: INVISIBLE_TIME_MS, waitMs: WAIT_MS });
    if (batch.length === 0) continue;
    tally.record(batch, performance.now());
    await Promise.all(batch.map((message) => consumer.ack(message)));
    tally.acknowledged(batch.length, performance.now());
    signal.notify();
    if (run.tallies.every((t) => t.complete)) stop.now = true;
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Sends `[from, to)` in batches of `batch`, never more than `maxLag` ahead of the slowest full group. */
async function sendAtMax(run: Running, work: BrokerWorkload, pace: Pace, signal: AckSignal, from: number, to: number) {
  const [planner, tools] = run.tallies as [GroupTally, GroupTally];
  for (let sent = from; sent < to; ) {
    while (sent - Math.min(planner.acked, tools.acked) > pace.maxLagMessages) {
      if (run.failure !== undefined) throw run.failure;
      await signal.wait();
    }
    const count = Math.min(pace.batch, to - sent);
    await run.broker.sendBatch(PARENT_TOPIC, messagesOf(work, sent, count));
    sent += count;
  }
}

/** Sends `[from, to)` at `rate` messages/s from `started`, stamping each message's send time. */
async function sendPaced(run: Running, work: BrokerWorkload, pace: Pace, probe: LatencyProbe, started: number) {
  const rate = pace.rate as number;
  const to = work.topicOf.length;
  let sent = probe.measureFrom;
  while (sent < to) {
    const due = Math.min(to, probe.measureFrom + Math.floor(((performance.now() - started) * rate) / 1000));
    if (due <= sent) {
      // Sleep when the next message is over a millisecond away; otherwise only let the consumers run.
      if (probe.scheduledAt(sent) - performance.now() > 1) await sleep(1);
      else await yieldToLoop();
      continue;
    }
    const count = Math.min(pace.batch, due - sent);
    const batch = messagesOf(work, sent, count);
    probe.sentAt.fill(performance.now(), sent, sent + count);
    await run.broker.sendBatch(PARENT_TOPIC, batch);
    sent += count;
    await yieldToLoop();
  }
}

/** Waits until every group has acked everything it is due below sequence number `limit`. */
async function settled(run: Running, limit: number): Promise<void> {
  const due = run.tallies.map((t) => t.expectedBelow(limit));
  while (run.tallies.some((t, i) => t.acked < (due[i] as number))) {
    if (run.failure !== undefined) throw run.failure;
    await sleep(5);
  }
}

async function untilDone(run: Running): Promise<void> {
  let last = -1;
  let lastChange = performance.now();
  while (!run.tallies.every((t) => t.complete)) {
    await sleep(50);
    if (run.failure !== undefined) throw run.failure;
    const progress = run.tallies.reduce((sum, t) => sum + t.acked, 0);
    if (progress !== last) {
      last = progress;
      lastChange = performance.now();
    } else if (performance.now() - lastChange > STALL_MS) {
      const state = run.tallies.map((t) => `${t.group} ${t.acked}/${t.expected}`).join(', ');
      throw new Error(`no progress for ${STALL_MS / 1000} s: ${state}`);
    }
  }
}

/**
 * Runs the workload once and checks every delivery. A `paced` run records the send-to-pop latency
 * of every message after the warm-up (`latency` in the figures).
 */
export async function runBroker(
  engine: EngineName,
  store: StoreKind,
  work: BrokerWorkload,
  pace: Pace,
): Promise<RunFigures> {
  const total = work.topicOf.length;
  const warmup = pace.kind === 'paced' ? (pace.warmupMessages ?? 0) : total;
  let pacedFrom = Number.NaN;
  const probe: LatencyProbe | undefined =
    pace.kind === 'paced'
      ? {
          sentAt: new Float64Array(total),
          scheduledAt: (seq) => pacedFrom + ((seq - warmup) * 1000) / (pace.rate as number),
          measureFrom: warmup,
        }
      : undefined;
  const setupStarted = performance.now();
  const run = await setUp(engine, store, work, probe);
  const setupMs = performance.now() - setupStarted;
  const stop = { now: false };
  const signal = new AckSignal();
  try {
    const loops = run.consumers.map((entry) =>
      consume(run, entry, signal, stop).catch((error: unknown) => {
        run.failure ??= error;
        stop.now = true;
        signal.notify();
      }),
    );
    let started = performance.now();
    let cpuFrom = process.cpuUsage();
    await sendAtMax(run, work, pace, signal, 0, warmup);
    if (probe !== undefined) {
      await settled(run, warmup);
      started = pacedFrom = performance.now();
      cpuFrom = process.cpuUsage();
      await sendPaced(run, work, pace, probe, started);
    }
    const sentDone = performance.now();
    await untilDone(run);
    const cpu = process.cpuUsage(cpuFrom);
    const done = Math.max(...run.tallies.map((t) => t.doneAt));
    stop.now = true;
    for (const { consumer } of run.consumers) await consumer.close();
    await Promise.all(loops);
    if (run.failure !== undefined) throw run.failure;
    for (const tally of run.tallies) tally.verify();
    return {
      messages: total,
      timedMessages: total - (probe === undefined ? 0 : warmup),
      deliveries: run.tallies.reduce((sum, t) => sum + t.delivered, 0),
      setupMs,
      elapsedMs: done - started,
      sendMs: sentDone - started,
      cpuMs: (cpu.user + cpu.system) / 1000,
      tallies: run.tallies,
    };
  } finally {
    stop.now = true;
    await run.broker.close();
    if (run.dir !== undefined) removeDir(run.dir);
  }
}
