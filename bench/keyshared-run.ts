/**
 * One key-shared run (issue 7, "Figures"): a fresh in-memory broker with system timers, the parent
 * `agents`, one hot lite topic `hot` and the key-shared group `workers`. A producer keeps a backlog of
 * messages on `keys` uniformly drawn keys (seeded); clients join one by one up to each phase's count
 * and are never removed. Every client is one async loop: `pop` (long poll) up to `popMax` messages,
 * then for each message in turn "process" it (await a `processMs` system timer) and ack it, so a
 * client handles one message at a time and the clients run concurrently.
 *
 * Every delivery is checked as it is popped: (I1) no other client holds an unacked message of its key,
 * nor of its bucket; (I2) a first delivery of a key is the message right after the key's previous
 * first delivery in offset order (so also no gap); and exactly once (a redelivery cannot happen with
 * the invisible time used, so it counts as a violation too).
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type * as KeyShared from '../ts/broker/key-shared.js';
import type { Broker, Consumer, EngineName, PoppedMessage } from '../ts/index.js';
import { lib } from './lib.js';

// The broker's own hash and bucket cut (its vectors are tested in test/broker-keyshared.test.ts).
const { bucketOf, keyHash } = createRequire(__filename)(
  join(__dirname, '..', 'dist', 'broker', 'key-shared.js'),
) as typeof KeyShared;

export const PARENT = 'agents';
export const HOT = 'hot';
const GROUP = 'workers';
/** Most messages a run may send: enough for minutes at eight clients. */
const CAPACITY = 4_000_000;

export interface KeySharedRunConfig {
  keys: number;
  buckets: number;
  /** Clients of each measured phase, increasing. */
  phases: number[];
  processMs: number;
  popMax: number;
  waitMs: number;
  invisibleTimeMs: number;
  /** Measured time of each phase, after its last join and `settleMs`. */
  phaseMs: number;
  settleMs: number;
  /** Time after each join before the next one (or before the phase's settle). */
  joinGapMs: number;
  /** The producer keeps sent − acked at about this many messages. */
  backlog: number;
  sendBatch: number;
  seed: number;
}

export interface PhaseFigures {
  clients: number;
  acks: number;
  ms: number;
  messagesPerSecond: number;
  /** Mean measured length of a 1 ms "processing" timer, ms. */
  timerMs: number;
  /** messagesPerSecond ÷ (clients × 1000 ÷ timerMs): the share of the clients' time spent processing. */
  efficiency: number;
  /** Pops that came back empty during the phase. */
  emptyPops: number;
  /** Least sent − delivered (messages not yet handed out) the producer saw during the phase. */
  minReady: number;
  /** CPU time of this process (user + system) over the phase's wall time: 1 = one core busy. */
  cpuShare: number;
}

export interface JoinFigures {
  /** Clients before this join. */
  from: number;
  moved: number;
  /** Moved buckets `groupInfo().keyShared.withheld` listed right after the join. */
  withheld: number;
  /** Per moved bucket: join → its first delivery to its new owner, ms. */
  pausesMs: number[];
  /** Moved buckets not delivered to their new owner before they moved again or the run ended. */
  unresolved: number;
  /** The same for buckets that kept their owner: join → next delivery of them (a baseline). */
  keptMs: number[];
  /** How long the new client's `subscribe` took, and the admin reads after it (the bench's own cost), ms. */
  subscribeMs: number;
  adminMs: number;
}

export interface Violations {
  i1Key: number;
  i1Bucket: number;
  i2: number;
  duplicates: number;
  redeliveries: number;
  first: string[];
}

export interface KeySharedRunResult {
  engine: EngineName;
  phases: PhaseFigures[];
  joins: JoinFigures[];
  sent: number;
  deliveries: number;
  violations: Violations;
}

/** mulberry32: a small seeded generator, so every run draws the same keys. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface Client {
  index: number;
  id: string;
  consumer: Consumer;
  loop?: Promise<void>;
}

interface Pending {
  join: JoinFigures;
  at: number;
  owner: number;
}

/** The state of one run: what was sent, who holds what, and the invariants' ledger. */
class Run {
  readonly keyNames: string[];
  readonly bucketOfKey: Uint16Array;
  readonly keyOf = new Uint16Array(CAPACITY);
  /** Per message, the previous message of its key (−1: none). */
  readonly prevOfKey = new Int32Array(CAPACITY);
  readonly delivered = new Uint8Array(CAPACITY);
  readonly lastSentOfKey: Int32Array;
  readonly lastFirstOfKey: Int32Array;
  readonly keyHolder: Int32Array;
  readonly keyHeld: Int32Array;
  readonly bucketHolder: Int32Array;
  readonly bucketHeld: Int32Array;
  readonly violations: Violations = { i1Key: 0, i1Bucket: 0, i2: 0, duplicates: 0, redeliveries: 0, first: [] };
  readonly clients: Client[] = [];
  owners: Int32Array;
  /** Per bucket, a pending join pause (moved) or baseline (kept), ended by the bucket's next delivery to `owner`. */
  readonly pendingMoved: (Pending | undefined)[];
  readonly pendingKept: (Pending | undefined)[];
  readonly joins: JoinFigures[] = [];
  sent = 0;
  deliveries = 0;
  acked = 0;
  emptyPops = 0;
  timerSum = 0;
  timerCount = 0;
  minReady = Number.POSITIVE_INFINITY;
  stop = false;
  failure: unknown;
  private readonly draw: () => number;

  constructor(
    readonly broker: Broker,
    readonly config: KeySharedRunConfig,
  ) {
    const { keys, buckets } = config;
    this.keyNames = Array.from({ length: keys }, (_, k) => `key-${k}`);
    this.bucketOfKey = Uint16Array.from(this.keyNames, (name) => bucketOf(keyHash(name), buckets));
    this.lastSentOfKey = new Int32Array(keys).fill(-1);
    this.lastFirstOfKey = new Int32Array(keys).fill(-1);
    this.keyHolder = new Int32Array(keys).fill(-1);
    this.keyHeld = new Int32Array(keys);
    this.bucketHolder = new Int32Array(buckets).fill(-1);
    this.bucketHeld = new Int32Array(buckets);
    this.owners = new Int32Array(buckets).fill(-1);
    this.pendingMoved = new Array(buckets).fill(undefined);
    this.pendingKept = new Array(buckets).fill(undefined);
    this.draw = random(config.seed);
  }

  violation(kind: Exclude<keyof Violations, 'first'>, text: string): void {
    this.violations[kind]++;
    if (this.violations.first.length < 5) this.violations.first.push(text);
  }

  async send(count: number): Promise<void> {
    const messages = [];
    for (let i = 0; i < count; i++) {
      const seq = this.sent + i;
      if (seq >= CAPACITY) throw new Error(`more than ${CAPACITY} messages: raise CAPACITY`);
      const k = Math.floor(this.draw() * this.config.keys);
      this.keyOf[seq] = k;
      this.prevOfKey[seq] = this.lastSentOfKey[k] as number;
      this.lastSentOfKey[k] = seq;
      messages.push({ liteTopic: HOT, key: this.keyNames[k] as string, body: String(seq) });
    }
    const results = await this.broker.sendBatch(PARENT, messages);
    for (let i = 0; i < count; i++) {
      if (results[i]?.offset !== this.sent + i)
        throw new Error(`message ${this.sent + i} got offset ${results[i]?.offset}`);
    }
    this.sent += count;
  }

  /** Keeps sent − acked near `backlog` until the run stops. */
  async produce(): Promise<void> {
    const { backlog, sendBatch } = this.config;
    while (!this.stop) {
      this.minReady = Math.min(this.minReady, this.sent - this.deliveries);
      const room = backlog - (this.sent - this.acked);
      if (room >= sendBatch / 4) await this.send(Math.min(room, sendBatch));
      else await sleep(1);
    }
  }

  /** Checks and books the deliveries of one pop by client `c`, popped at `at`. */
  observe(c: number, batch: readonly PoppedMessage[], at: number): void {
    for (const m of batch) {
      const seq = m.offset;
      this.deliveries++;
      if (m.body.toString() !== String(seq)) throw new Error(`offset ${seq} carries body ${m.body.toString()}`);
      const k = this.keyOf[seq] as number;
      const b = this.bucketOfKey[k] as number;
      if (m.reconsumeTimes > 0) this.violation('redeliveries', `offset ${seq} redelivered to c${c}`);
      if (this.delivered[seq] === 1) this.violation('duplicates', `offset ${seq} delivered twice`);
      this.delivered[seq] = 1;
      if ((this.keyHeld[k] as number) > 0 && this.keyHolder[k] !== c) {
        this.violation(
          'i1Key',
          `key-${k} (offset ${seq}) to c${c} while c${this.keyHolder[k]} holds ${this.keyHeld[k]}`,
        );
      }
      if ((this.bucketHeld[b] as number) > 0 && this.bucketHolder[b] !== c) {
        this.violation('i1Bucket', `bucket ${b} (offset ${seq}) to c${c} while c${this.bucketHolder[b]} holds it`);
      }
      this.keyHolder[k] = c;
      this.keyHeld[k] = (this.keyHeld[k] as number) + 1;
      this.bucketHolder[b] = c;
      this.bucketHeld[b] = (this.bucketHeld[b] as number) + 1;
      if (m.reconsumeTimes === 0) {
        if (this.lastFirstOfKey[k] !== this.prevOfKey[seq]) {
          this.violation(
            'i2',
            `key-${k}: offset ${seq} first-delivered after ${this.lastFirstOfKey[k]}, expected after ${this.prevOfKey[seq]}`,
          );
        }
        this.lastFirstOfKey[k] = seq;
      }
      for (const pending of [this.pendingMoved, this.pendingKept]) {
        const p = pending[b];
        if (p !== undefined && p.owner === c) {
          (pending === this.pendingMoved ? p.join.pausesMs : p.join.keptMs).push(at - p.at);
          pending[b] = undefined;
        }
      }
    }
  }

  /** One client: pop, then process and ack each message in turn. */
  async consume(client: Client): Promise<void> {
    const { popMax, waitMs, invisibleTimeMs, processMs } = this.config;
    const c = client.index;
    while (!this.stop) {
      const batch = await client.consumer.pop({ maxNum: popMax, invisibleTimeMs, waitMs });
      if (this.stop) return;
      if (batch.length === 0) {
        this.emptyPops++;
        continue;
      }
      this.observe(c, batch, performance.now());
      for (const m of batch) {
        const started = performance.now();
        await sleep(processMs);
        this.timerSum += performance.now() - started;
        this.timerCount++;
        if (this.stop) return;
        const k = this.keyOf[m.offset] as number;
        // Released in the same synchronous step as the ack call: nothing can run in between.
        this.keyHeld[k] = (this.keyHeld[k] as number) - 1;
        const b = this.bucketOfKey[k] as number;
        this.bucketHeld[b] = (this.bucketHeld[b] as number) - 1;
        await client.consumer.ack(m);
        this.acked++;
      }
    }
  }

  /** Per bucket, the index of the client that owns it now (admin `keySharedBuckets`). */
  currentOwners(): Int32Array {
    const owners = new Int32Array(this.config.buckets).fill(-1);
    for (const client of this.clients) {
      const info = this.broker.admin.clientInfo(GROUP, client.id);
      for (const entry of info?.keySharedBuckets ?? []) {
        if (entry.liteTopic !== HOT) continue;
        for (const b of entry.buckets) owners[b] = client.index;
      }
    }
    return owners;
  }

  async join(): Promise<void> {
    const index = this.clients.length;
    const client: Client = {
      index,
      id: `c${index}`,
      consumer: this.broker.consumer({ group: GROUP, clientId: `c${index}` }),
    };
    const at = performance.now();
    await client.consumer.subscribe([HOT], { offset: { policy: 'min' } });
    const subscribed = performance.now();
    this.clients.push(client);
    const before = this.owners;
    const after = this.currentOwners();
    this.owners = after;
    if (index > 0) {
      const withheldNow = this.broker.admin.groupInfo(GROUP).keyShared?.withheld ?? [];
      const join: JoinFigures = {
        from: index,
        moved: 0,
        withheld: 0,
        pausesMs: [],
        unresolved: 0,
        keptMs: [],
        subscribeMs: subscribed - at,
        adminMs: performance.now() - subscribed,
      };
      for (let b = 0; b < after.length; b++) {
        const p = this.pendingMoved[b];
        if (before[b] === after[b]) {
          this.pendingKept[b] = { join, at, owner: after[b] as number };
          continue;
        }
        if (p !== undefined) p.join.unresolved++;
        join.moved++;
        if (withheldNow.some((w) => w.liteTopic === HOT && w.bucket === b)) join.withheld++;
        this.pendingMoved[b] = { join, at, owner: after[b] as number };
        this.pendingKept[b] = undefined;
      }
      this.joins.push(join);
    }
    client.loop = this.consume(client).catch((error: unknown) => {
      this.failure ??= error;
      this.stop = true;
    });
  }
}

/** Runs the phases once on `engine` and returns the figures; throws if a client or the producer failed. */
export async function runKeyShared(
  engine: EngineName,
  config: KeySharedRunConfig,
  progress: (line: string) => void,
): Promise<KeySharedRunResult> {
  const broker = await lib.Broker.open({ engine });
  const run = new Run(broker, config);
  try {
    broker.createTopic(PARENT);
    broker.createGroup(GROUP, { bindTopic: PARENT, subModel: 'shared', keyShared: { buckets: config.buckets } });
    await run.send(config.backlog);
    const producer = run.produce().catch((error: unknown) => {
      run.failure ??= error;
      run.stop = true;
    });
    const phases: PhaseFigures[] = [];
    for (const clients of config.phases) {
      while (run.clients.length < clients) {
        await run.join();
        await sleep(config.joinGapMs);
      }
      await sleep(config.settleMs);
      const cpu = process.cpuUsage();
      const start = {
        at: performance.now(),
        acked: run.acked,
        empty: run.emptyPops,
        sum: run.timerSum,
        n: run.timerCount,
      };
      run.minReady = Number.POSITIVE_INFINITY;
      await sleep(config.phaseMs);
      if (run.failure !== undefined) throw run.failure;
      const ms = performance.now() - start.at;
      const used = process.cpuUsage(cpu);
      const acks = run.acked - start.acked;
      const rate = (acks / ms) * 1000;
      const timerMs = (run.timerSum - start.sum) / (run.timerCount - start.n);
      const phase: PhaseFigures = {
        clients,
        acks,
        ms,
        messagesPerSecond: rate,
        timerMs,
        efficiency: rate / ((clients * 1000) / timerMs),
        emptyPops: run.emptyPops - start.empty,
        minReady: run.minReady,
        cpuShare: (used.user + used.system) / 1000 / ms,
      };
      phases.push(phase);
      const v = run.violations;
      progress(
        `${engine}, ${clients} client${clients === 1 ? '' : 's'}: ${Math.round(rate).toLocaleString('en-US')} msgs/s ` +
          `(${(phase.efficiency * 100).toFixed(0)}% of ${clients} × 1 per ${timerMs.toFixed(2)} ms timer), ` +
          `process CPU ${(phase.cpuShare * 100).toFixed(0)}%, ${phase.emptyPops} empty pops, ≥ ${phase.minReady} ready; violations so far I1 ${v.i1Key + v.i1Bucket}, I2 ${v.i2}`,
      );
    }
    run.stop = true;
    for (const client of run.clients) await client.consumer.close();
    await Promise.all([producer, ...run.clients.map((c) => c.loop)]);
    if (run.failure !== undefined) throw run.failure;
    for (const pending of run.pendingMoved) if (pending !== undefined) pending.join.unresolved++;
    return { engine, phases, joins: run.joins, sent: run.sent, deliveries: run.deliveries, violations: run.violations };
  } finally {
    run.stop = true;
    await broker.close();
  }
}

/**
 * The harness alone, no broker: `clients` loops that each await the same `processMs` timer in turn
 * for `ms`. Its rate is the ceiling the broker runs are held against.
 */
export async function runTimersOnly(clients: number, ms: number, processMs: number): Promise<PhaseFigures> {
  let stop = false;
  let count = 0;
  let sum = 0;
  const loops = Array.from({ length: clients }, async () => {
    while (!stop) {
      const started = performance.now();
      await sleep(processMs);
      sum += performance.now() - started;
      count++;
    }
  });
  const at = performance.now();
  const cpu = process.cpuUsage();
  await sleep(ms);
  stop = true;
  const elapsed = performance.now() - at;
  const used = process.cpuUsage(cpu);
  const acks = count;
  const timerMs = sum / Math.max(1, acks);
  await Promise.all(loops);
  const rate = (acks / elapsed) * 1000;
  return {
    clients,
    acks,
    ms: elapsed,
    messagesPerSecond: rate,
    timerMs,
    efficiency: rate / ((clients * 1000) / timerMs),
    emptyPops: Number.NaN,
    minReady: Number.NaN,
    cpuShare: (used.user + used.system) / 1000 / elapsed,
  };
}
