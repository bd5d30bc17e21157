/**
 * The agent-to-agent bus that `litetopic demo` runs: one embedded broker, a parent topic `agents`,
 * lite topics `tenantT__agentA__sessionS` (and `...__error` for sessions that fail) created on the
 * fly by their first message, and three consumer groups:
 *
 * - `planner`, shared, 4 clients: each session is subscribed by one planner client when it starts;
 * - `auditor`, wildcard: one client with the patterns `tenant1__**` and `*__*__*__error`, which
 *   receives every matching lite topic from its first message without subscribing by name;
 * - `tools`, exclusive, 2 clients: each session held by exactly one of them.
 *
 * Producers send in batches for the given time, backing off while the consumers lag too far behind,
 * then the consumers drain what is left. Consumers skip the ack of a few first deliveries (a tool
 * call that crashed) so the invisible time runs out and the broker redelivers them.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Broker, type Consumer, type EngineName } from '../index.js';
import { seededRandom } from './format.js';
import { quantile, Reservoir } from './stats.js';

export const PARENT_TOPIC = 'agents';
export const AUDITOR_PATTERNS = ['tenant1__**', '*__*__*__error'] as const;
const TENANTS = 20;
const AGENTS_PER_TENANT = 50;
/** Messages per `sendBatch`. */
const BATCH = 256;
/** Producer loops sending concurrently, so one's write overlaps another's preparation. */
const PRODUCERS = 2;
/** Producers pause while this many messages are sent but not yet acked by every group. */
const MAX_LAG = 40_000;
/** Sessions that keep receiving follow-up messages: the most recently started ones. */
const ACTIVE_SESSIONS = 2_000;
/** Short, so that skipped acks are redelivered within a short run. */
const INVISIBLE_TIME_MS = 1_000;
/** The longest the drain after the producers goes on, acks still coming in or not. */
const DRAIN_MAX_MS = 60_000;
const POP_WAIT_MS = 100;
/** One first delivery in this many is left unacked, to show redelivery. */
const SKIP_ACK_ONE_IN = 200;
/** One new lite topic in this many is the `__error` topic of a running session. */
const ERROR_TOPIC_ONE_IN = 50;
const LATENCY_SAMPLES = 100_000;

export interface BusOptions {
  engine: EngineName;
  dir: string;
  seconds: number;
  topics: number;
  /** Called about every `progressMs` while producers run and while draining. */
  onProgress: (progress: BusProgress) => void;
  progressMs: number;
}

export interface BusProgress {
  phase: 'sending' | 'draining';
  elapsedMs: number;
  sent: number;
  /** Messages acked, summed over the groups. */
  consumed: number;
  /** Deliveries owed to the groups and not acked yet. */
  lag: number;
  liteTopics: number;
  /** Messages sent per second since the previous progress report. */
  sendRate: number;
}

export interface GroupReport {
  group: string;
  kind: string;
  clients: number;
  /** Messages this group should receive (every message of a lite topic it covers). */
  expected: number;
  delivered: number;
  acked: number;
  redelivered: number;
  p50Ms: number | undefined;
  p99Ms: number | undefined;
}

export interface BusReport {
  engine: EngineName;
  sendMs: number;
  totalMs: number;
  sent: number;
  /** Messages sent per second while the producers ran (they keep pace with the consumers). */
  messagesPerSecond: number;
  /** CPU time of the process (all threads) over the whole run, per message sent, µs. */
  cpuMicrosPerMessage: number;
  liteTopics: number;
  /** False when the drain timed out with deliveries still owed. */
  drained: boolean;
  groups: GroupReport[];
}

/** What one group received, and which lite topics it still owes acks on (planner and tools). */
class GroupTally {
  expected = 0;
  delivered = 0;
  acked = 0;
  redelivered = 0;
  readonly latency: Reservoir;
  /** Lite topic → messages sent and not yet acked by this group. */
  readonly outstanding = new Map<string, number>();
  /** Lite topics that finished (no more sends) and have nothing outstanding: to unsubscribe. */
  readonly done: string[] = [];
  constructor(
    readonly group: string,
    readonly kind: string,
    readonly clients: Consumer[],
    random: () => number,
  ) {
    this.latency = new Reservoir(LATENCY_SAMPLES, random);
  }

  sentTo(liteTopic: string): void {
    this.expected++;
    this.outstanding.set(liteTopic, (this.outstanding.get(liteTopic) ?? 0) + 1);
  }

  ackedOn(liteTopic: string, retired: ReadonlySet<string>): void {
    this.acked++;
    const left = (this.outstanding.get(liteTopic) ?? 1) - 1;
    if (left > 0) this.outstanding.set(liteTopic, left);
    else {
      this.outstanding.delete(liteTopic);
      if (retired.has(liteTopic)) this.done.push(liteTopic);
    }
  }

  retire(liteTopic: string): void {
    if (!this.outstanding.has(liteTopic)) this.done.push(liteTopic);
  }
}

function auditorWants(liteTopic: string): boolean {
  return liteTopic.startsWith('tenant1__') || (liteTopic.endsWith('__error') && liteTopic.split('__').length === 4);
}

function hashOf(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** Runs the bus once on a fresh broker in `options.dir`; closes everything before returning. */
export async function runBus(options: BusOptions): Promise<BusReport> {
  const { topics } = options;
  const broker = await Broker.open({
    dir: options.dir,
    engine: options.engine,
    // Finished sessions are unsubscribed, but acks may lag: leave room for every lite topic.
    limits: {
      maxLiteTopicsPerClient: Math.max(2_000, topics),
      maxSubscriptionsPerBroker: Math.max(100_000, 3 * topics + 1_000),
    },
  });
  const random = seededRandom(20_251_129);
  try {
    broker.createTopic(PARENT_TOPIC);
    broker.createGroup('planner', { bindTopic: PARENT_TOPIC, subModel: 'shared' });
    broker.createGroup('auditor', { bindTopic: PARENT_TOPIC, subModel: 'shared', wildcard: true });
    broker.createGroup('tools', { bindTopic: PARENT_TOPIC, subModel: 'exclusive' });
    const clients = (group: string, n: number) =>
      Array.from({ length: n }, (_, i) => broker.consumer({ group, clientId: `${group}-${i + 1}` }));
    const planner = new GroupTally('planner', 'shared', clients('planner', 4), random);
    const auditor = new GroupTally('auditor', 'wildcard', clients('auditor', 1), random);
    const tools = new GroupTally('tools', 'exclusive', clients('tools', 2), random);
    for (const c of auditor.clients) await c.subscribe([...AUDITOR_PATTERNS], { offset: { policy: 'min' } });
    const tallies = [planner, auditor, tools];
    return await drive(broker, options, { planner, auditor, tools, tallies, random });
  } finally {
    await broker.close();
  }
}

interface Bus {
  planner: GroupTally;
  auditor: GroupTally;
  tools: GroupTally;
  tallies: GroupTally[];
  random: () => number;
}

/** The running workload: producers, consumers and the progress ticker over one broker. */
class Run {
  private readonly started = performance.now();
  private readonly cpuFrom = process.cpuUsage();
  private sending = true;
  private stopped = false;
  private sent = 0;
  /** Lite topics in creation order; the last ACTIVE_SESSIONS of them receive follow-ups. */
  private readonly sessions: string[] = [];
  private readonly created = new Set<string>();
  /** Lite topics that left the active window: nothing more is sent to them. */
  private readonly retired = new Set<string>();
  private lastSent = 0;
  private lastReportAt = this.started;
  /**
   * Numbers the sessions, so every new session name differs. (`created.size + names.length` counted
   * the names of the current call twice, since each is added to `created` as it is made: two calls
   * could then number sessions alike, and a name made twice sat in `sessions` twice, its first copy
   * retired and unsubscribed while the second still received messages that no one consumed.)
   */
  private nextSession = 0;

  constructor(
    private readonly broker: Broker,
    private readonly options: BusOptions,
    private readonly bus: Bus,
  ) {}

  get lag(): number {
    return this.bus.tallies.reduce((sum, t) => sum + t.expected - t.acked, 0);
  }

  async run(): Promise<BusReport> {
    const ticker = setInterval(() => this.report(), this.options.progressMs);
    const consumers = this.bus.tallies.flatMap((tally) => tally.clients.map((c) => this.consume(tally, c)));
    let drained = false;
    let sendMs = 0;
    try {
      await Promise.all(Array.from({ length: PRODUCERS }, () => this.produce()));
      sendMs = performance.now() - this.started;
      this.sending = false;
      // Skipped acks come back after INVISIBLE_TIME_MS, and each holds the rest of its lite topic
      // (FIFO) until then: a lite topic with several of them drains in as many rounds. The drain
      // goes on while acks come in, and gives up after a few rounds of that time without one (or
      // at DRAIN_MAX_MS), which only deliveries that never come back would take.
      const stallMs = Math.max(5_000, 4 * INVISIBLE_TIME_MS);
      const drainEnd = performance.now() + DRAIN_MAX_MS;
      let owed = this.lag;
      let progressAt = performance.now();
      while (owed > 0) {
        await sleep(20);
        const now = performance.now();
        const lag = this.lag;
        if (lag < owed) progressAt = now;
        owed = lag;
        if (now - progressAt > stallMs || now > drainEnd) break;
      }
      drained = this.lag === 0;
    } finally {
      clearInterval(ticker);
      this.stopped = true;
      await Promise.all(consumers);
      this.report();
      for (const tally of this.bus.tallies) for (const c of tally.clients) await c.close();
    }
    return this.result(sendMs, drained);
  }

  private result(sendMs: number, drained: boolean): BusReport {
    const cpu = process.cpuUsage(this.cpuFrom);
    return {
      engine: this.options.engine,
      sendMs,
      totalMs: performance.now() - this.started,
      sent: this.sent,
      messagesPerSecond: sendMs > 0 ? (this.sent * 1000) / sendMs : 0,
      cpuMicrosPerMessage: this.sent > 0 ? (cpu.user + cpu.system) / this.sent : 0,
      liteTopics: this.created.size,
      drained,
      groups: this.bus.tallies.map((t) => ({
        group: t.group,
        kind: t.kind,
        clients: t.clients.length,
        expected: t.expected,
        delivered: t.delivered,
        acked: t.acked,
        redelivered: t.redelivered,
        p50Ms: t.latency.count === 0 ? undefined : quantile(t.latency.samples(), 0.5),
        p99Ms: t.latency.count === 0 ? undefined : quantile(t.latency.samples(), 0.99),
      })),
    };
  }

  private report(): void {
    const now = performance.now();
    this.options.onProgress({
      phase: this.sending ? 'sending' : 'draining',
      elapsedMs: now - this.started,
      sent: this.sent,
      consumed: this.bus.tallies.reduce((sum, t) => sum + t.acked, 0),
      lag: this.lag,
      liteTopics: this.created.size,
      sendRate: now > this.lastReportAt ? ((this.sent - this.lastSent) * 1000) / (now - this.lastReportAt) : 0,
    });
    this.lastSent = this.sent;
    this.lastReportAt = now;
  }

  private async consume(tally: GroupTally, consumer: Consumer): Promise<void> {
    while (!this.stopped) {
      const messages = await consumer.pop({ maxNum: 32, invisibleTimeMs: INVISIBLE_TIME_MS, waitMs: POP_WAIT_MS });
      const now = performance.now();
      const acks: Promise<void>[] = [];
      for (const m of messages) {
        tally.delivered++;
        if (m.reconsumeTimes > 0) tally.redelivered++;
        else {
          tally.latency.add(now - Number(m.body.toString()));
          // A tool call that crashed: no ack, so the message comes back after its invisible time.
          if (this.bus.random() * SKIP_ACK_ONE_IN < 1) continue;
        }
        acks.push(consumer.ack(m).then(() => tally.ackedOn(m.liteTopic, this.retired)));
      }
      await Promise.all(acks);
    }
  }

  private async produce(): Promise<void> {
    const { options, bus } = this;
    const durationMs = options.seconds * 1000;
    while (performance.now() - this.started < durationMs) {
      if (this.lag > MAX_LAG) {
        await sleep(5);
        continue;
      }
      const due = Math.ceil((options.topics * (performance.now() - this.started)) / durationMs);
      const fresh = await this.newTopics(Math.min(BATCH, Math.min(options.topics, due) - this.created.size));
      const batch = fresh.slice();
      const window = Math.min(this.sessions.length, ACTIVE_SESSIONS);
      while (batch.length < BATCH && window > 0) {
        batch.push(this.sessions[this.sessions.length - 1 - Math.floor(bus.random() * window)] as string);
      }
      if (batch.length === 0) {
        // Nothing due yet and no session open: wait a moment rather than send an empty batch.
        await sleep(1);
        continue;
      }
      for (const name of batch) {
        bus.planner.sentTo(name);
        bus.tools.sentTo(name);
        if (auditorWants(name)) bus.auditor.sentTo(name);
      }
      const body = String(performance.now());
      this.sent += batch.length;
      await this.broker.sendBatch(
        PARENT_TOPIC,
        batch.map((liteTopic) => ({ liteTopic, body })),
      );
      await this.unsubscribeDone();
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /** Names `count` new lite topics and subscribes planner and tools to them before their first message. */
  private async newTopics(count: number): Promise<string[]> {
    const { bus, sessions, created } = this;
    const names: string[] = [];
    for (let i = 0; i < count; i++) {
      const base =
        sessions[sessions.length - 1 - Math.floor(bus.random() * Math.min(sessions.length, ACTIVE_SESSIONS))];
      const failed = `${base}__error`;
      if (
        base !== undefined &&
        !base.endsWith('__error') &&
        !created.has(failed) &&
        bus.random() * ERROR_TOPIC_ONE_IN < 1
      ) {
        names.push(failed);
      } else {
        const tenant = Math.floor(bus.random() * TENANTS);
        const agent = Math.floor(bus.random() * AGENTS_PER_TENANT);
        names.push(`tenant${tenant}__agent${agent}__session${this.nextSession++}`);
      }
      created.add(names[names.length - 1] as string);
    }
    // Subscribe before the first message, as an agent joins its session before anyone speaks in it.
    await subscribeSpread(bus.planner.clients, names);
    await subscribeSpread(bus.tools.clients, names);
    sessions.push(...names);
    for (let i = sessions.length - ACTIVE_SESSIONS - names.length; i < sessions.length - ACTIVE_SESSIONS; i++) {
      const name = sessions[i];
      if (name === undefined) continue;
      this.retired.add(name);
      bus.planner.retire(name);
      bus.tools.retire(name);
    }
    return names;
  }

  /**
   * Sessions that ended and were acked in full are unsubscribed, as an agent leaves a finished
   * session: each client then holds only the live sessions, well inside the default quotas.
   */
  private async unsubscribeDone(): Promise<void> {
    for (const tally of [this.bus.planner, this.bus.tools]) {
      if (tally.done.length === 0) continue;
      const names = tally.done.splice(0);
      const parts: string[][] = tally.clients.map(() => []);
      for (const name of names) parts[hashOf(name) % tally.clients.length]?.push(name);
      await Promise.all(
        tally.clients.map((c, i) => (parts[i]?.length ? c.unsubscribe(parts[i] as string[]) : undefined)),
      );
    }
  }
}

async function drive(broker: Broker, options: BusOptions, bus: Bus): Promise<BusReport> {
  return new Run(broker, options, bus).run();
}

/** Each name goes to one client, chosen by hash, in one subscribe call per client. */
async function subscribeSpread(clients: readonly Consumer[], names: readonly string[]): Promise<void> {
  if (names.length === 0) return;
  const parts: string[][] = clients.map(() => []);
  for (const name of names) parts[hashOf(name) % clients.length]?.push(name);
  await Promise.all(
    clients.map((c, i) =>
      parts[i]?.length ? c.subscribe(parts[i] as string[], { offset: { policy: 'min' } }) : undefined,
    ),
  );
}
