/**
 * The moving parts of one key-shared run (keyshared-run.ts): the producer that keeps a backlog of
 * keyed messages, the client loops (pop, then process and ack each message in turn), the joins with
 * the buckets they move, and the ledger that checks I1, I2 and exactly once on every delivery.
 */
import type * as KeyShared from '../ts/broker/key-shared.js';
import type { Broker, Consumer, PoppedMessage } from '../ts/index.js';
import type { JoinFigures, KeySharedRunConfig, Violations } from './key-shared-result.js';
import { distModule } from './lib.js';

// The broker's own hash and bucket cut (its vectors are tested in test/broker-keyshared.test.ts).
const { bucketOf, keyHash } = distModule<typeof KeyShared>('broker/key-shared.js');

export const PARENT = 'agents';
export const HOT = 'hot';
export const GROUP = 'workers';
/** Most messages a run may send: enough for minutes at eight clients. */
const CAPACITY = 4_000_000;

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

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

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
export class Run {
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
