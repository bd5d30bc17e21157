/**
 * A bound, not a broker: the least work any broker with litetopic's API does per message of this
 * suite's workload, run by the same harness (producer, flow control, consumer loops, checks) as the
 * real one, so its rate is a ceiling for the real broker on the same machine.
 *
 * What it keeps, because the suite's checks and the API require it: each new lite topic goes into a topic
 * trie and is matched against the auditor's patterns; each message is stored as an object the POP
 * can hand out; each group gets one event per lite topic (shared: the least loaded of its clients;
 * exclusive: the holder `sync` named; auditor: its pattern matches), FIFO per lite topic with
 * nothing handed out past an unacked delivery; a POP long-polls and returns message objects with
 * a message id and a receipt handle; every ack is its own call returning a promise.
 *
 * What it leaves out, so that it costs less than any real broker: it keys all state by small
 * integer ids in typed arrays (one string lookup per sent message; the broker keys its state by
 * lite topic names); it stores and hands out the caller's body without copying it; it has no
 * journal, no invisible time (nothing is ever redelivered), no timers but the long poll's, no
 * quotas, no validation of names, options or handles, no stall checks, dead letters, expiry or
 * reopen, and it serves only the in-memory store.
 */
import type { EngineName, PoppedMessage } from '../ts/index.js';
import { AUDITOR_PATTERNS, type BrokerWorkload, PARENT_TOPIC } from './broker-workload.js';
import { distModule, lib } from './lib.js';

const { messageId } = distModule<typeof import('../ts/broker/message-id.js')>('broker/message-id.js');

interface Stored {
  offset: number;
  position: number;
  storeTimestamp: number;
  body: Buffer;
  properties: Record<string, string>;
}

interface PopOptions {
  maxNum: number;
  waitMs: number;
}

class FloorClient {
  /** Queued lite topic ids, taken from `head` on. */
  events: number[] = [];
  head = 0;
  /** Queued events plus unacked deliveries. */
  load = 0;
  waiter: (() => void) | undefined;
  closed = false;

  constructor(
    readonly broker: MinimalBroker,
    readonly group: FloorGroup,
  ) {}

  pop(options: PopOptions): Promise<PoppedMessage[]> {
    return this.broker.pop(this, options.maxNum, options.waitMs);
  }

  ack(message: PoppedMessage): Promise<void> {
    return this.broker.ack(this, message.receiptHandle);
  }

  async close(): Promise<void> {
    this.closed = true;
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.();
  }
}

class FloorGroup {
  readonly clients: FloorClient[] = [];
  /** Per lite topic id: the next offset to hand out, the end of the handed-out run, its unacked count. */
  readonly next: Int32Array;
  readonly end: Int32Array;
  readonly unacked: Int32Array;
  readonly queued: Uint8Array;
  /** Exclusive: the index of the client holding each lite topic id. */
  holder: Uint8Array | undefined;

  constructor(
    readonly name: string,
    readonly prefix: string,
    readonly audit: boolean,
    capacity: number,
  ) {
    this.next = new Int32Array(capacity);
    this.end = new Int32Array(capacity);
    this.unacked = new Int32Array(capacity);
    this.queued = new Uint8Array(capacity);
  }
}

export class MinimalBroker {
  private readonly trie;
  private readonly patterns;
  private readonly ids = new Map<string, number>();
  private readonly names: string[] = [];
  private readonly queues: Stored[][] = [];
  private readonly audited: Uint8Array;
  private readonly groups: FloorGroup[] = [];
  private readonly matched = new Uint32Array(AUDITOR_PATTERNS.length);
  private position = 0;
  /** The exclusive group's holder of a new lite topic, by its name. */
  private exclusive: ((name: string) => number) | undefined;

  constructor(
    engine: EngineName,
    private readonly capacity: number,
  ) {
    this.trie = new lib.TopicTrie({ engine });
    this.patterns = new lib.PatternIndex({ engine });
    for (const [i, pattern] of AUDITOR_PATTERNS.entries()) this.patterns.add(pattern, i);
    this.audited = new Uint8Array(capacity);
  }

  /**
   * A group of `clients` clients. `exclusive` (for one group at most) gives the index of the client
   * holding each new lite topic.
   */
  group(name: string, clients: number, options: { audit?: boolean; exclusive?: (name: string) => number } = {}) {
    const group = new FloorGroup(name, `2.0.${name}.`, options.audit ?? false, this.capacity);
    if (options.exclusive !== undefined) {
      group.holder = new Uint8Array(this.capacity);
      this.exclusive = options.exclusive;
    }
    for (let i = 0; i < clients; i++) group.clients.push(new FloorClient(this, group));
    this.groups.push(group);
    return group.clients;
  }

  async sendBatch(_parent: string, messages: readonly { liteTopic: string; body: Buffer }[]) {
    const now = Date.now();
    return messages.map(({ liteTopic, body }) => {
      const id = this.ids.get(liteTopic) ?? this.create(liteTopic, now);
      const queue = this.queues[id] as Stored[];
      const offset = queue.length;
      const position = this.position++;
      queue.push({ offset, position, storeTimestamp: now, body, properties: {} });
      for (const group of this.groups) if (!group.audit || this.audited[id] === 1) this.ready(group, id);
      return { messageId: messageId(position), liteTopic, offset };
    });
  }

  private create(liteTopic: string, now: number): number {
    const id = this.names.length;
    if (id >= this.capacity) throw new Error(`the floor broker holds at most ${this.capacity} lite topics`);
    this.trie.add(liteTopic, now);
    this.names.push(liteTopic);
    this.queues.push([]);
    this.ids.set(liteTopic, id);
    if (this.patterns.matchInto(liteTopic, this.matched) > 0) this.audited[id] = 1;
    for (const group of this.groups) {
      if (group.holder !== undefined) group.holder[id] = this.exclusive?.(liteTopic) ?? 0;
    }
    return id;
  }

  private ready(group: FloorGroup, id: number): void {
    if (group.queued[id] === 1 || group.unacked[id] !== 0) return;
    if ((group.next[id] as number) >= (this.queues[id] as Stored[]).length) return;
    let client = group.holder === undefined ? undefined : group.clients[group.holder[id] as number];
    if (client === undefined)
      for (const c of group.clients) if (client === undefined || c.load < client.load) client = c;
    if (client === undefined || client.closed) return;
    group.queued[id] = 1;
    client.events.push(id);
    client.load++;
    const waiter = client.waiter;
    if (waiter !== undefined) {
      client.waiter = undefined;
      queueMicrotask(waiter);
    }
  }

  private popNow(client: FloorClient, maxNum: number): PoppedMessage[] {
    const out: PoppedMessage[] = [];
    const group = client.group;
    while (client.head < client.events.length && out.length < maxNum) {
      const id = client.events[client.head++] as number;
      client.load--;
      group.queued[id] = 0;
      const queue = this.queues[id] as Stored[];
      const from = group.next[id] as number;
      const to = Math.min(queue.length, from + maxNum - out.length);
      group.end[id] = to;
      group.unacked[id] = to - from;
      client.load += to - from;
      for (let offset = from; offset < to; offset++) {
        const stored = queue[offset] as Stored;
        out.push({
          messageId: messageId(stored.position),
          topic: PARENT_TOPIC,
          liteTopic: this.names[id] as string,
          offset,
          body: stored.body,
          properties: stored.properties,
          storeTimestamp: stored.storeTimestamp,
          reconsumeTimes: 0,
          receiptHandle: `${group.prefix}${offset.toString(36)}.${id.toString(36)}`,
        });
      }
    }
    if (client.head === client.events.length) {
      client.events.length = 0;
      client.head = 0;
    }
    return out;
  }

  pop(client: FloorClient, maxNum: number, waitMs: number): Promise<PoppedMessage[]> {
    const ready = client.closed ? [] : this.popNow(client, maxNum);
    if (ready.length > 0 || client.closed) return Promise.resolve(ready);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        client.waiter = undefined;
        resolve([]);
      }, waitMs);
      client.waiter = () => {
        clearTimeout(timer);
        resolve(client.closed ? [] : this.popNow(client, maxNum));
      };
    });
  }

  async ack(client: FloorClient, handle: string): Promise<void> {
    const group = client.group;
    const dot = handle.indexOf('.', group.prefix.length);
    const offset = Number.parseInt(handle.slice(group.prefix.length, dot), 36);
    const id = Number.parseInt(handle.slice(dot + 1), 36);
    if (offset < (group.next[id] as number) || offset >= (group.end[id] as number)) {
      throw new Error(`floor broker: ack of offset ${offset} outside the delivered run`);
    }
    client.load--;
    const unacked = (group.unacked[id] as number) - 1;
    group.unacked[id] = unacked;
    if (unacked > 0) return;
    group.next[id] = group.end[id] as number;
    this.ready(group, id);
  }

  async close(): Promise<void> {
    for (const group of this.groups) for (const client of group.clients) await client.close();
  }
}

/** The floor set up like broker-scenario's `setUp`: planner 4 shared, tools 4 exclusive, auditor 1. */
export function minimalBroker(engine: EngineName, work: BrokerWorkload, planners: number, tools: number) {
  const broker = new MinimalBroker(engine, work.names.length);
  const index = new Map(work.names.map((name, i) => [name, i]));
  return {
    broker,
    planner: broker.group('planner', planners),
    tools: broker.group('tools', tools, { exclusive: (name) => (index.get(name) ?? 0) % tools }),
    auditor: broker.group('auditor', 1, { audit: true }),
  };
}
