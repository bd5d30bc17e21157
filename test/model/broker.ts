/**
 * A small reference model of the broker's consumption semantics, for the fast-check model test: lite
 * topics as arrays of bodies, explicit subscriptions per client (exclusive groups: one holder), and
 * per (group, lite topic, offset) the deliveries made so far. It predicts subscription sets, quota
 * refusals and ack outcomes exactly, and checks every POP result for FIFO, reconsume counts and
 * ownership. Which client gets which event is the broker's choice and is not predicted.
 */

export interface ModelLimits {
  maxLiteTopicsPerClient: number;
  maxSubscriptionsPerBroker: number;
}

interface Delivery {
  count: number;
  acked: boolean;
  invisibleUntil: number;
  /** The client the latest delivery went to. */
  holder: string;
}

interface HandleInfo {
  group: string;
  topic: string;
  offset: number;
  attempt: number;
}

export interface PoppedView {
  liteTopic: string;
  offset: number;
  reconsumeTimes: number;
  receiptHandle: string;
  body: string;
}

export class BrokerModel {
  readonly messages = new Map<string, string[]>();
  /** group → client → lite topics. */
  readonly subscriptions = new Map<string, Map<string, Set<string>>>();
  /** `group|topic` → offset → delivery; present once the group has progress on the topic (start 0). */
  readonly deliveries = new Map<string, Map<number, Delivery>>();
  readonly handles = new Map<string, HandleInfo>();

  constructor(
    readonly groups: Record<string, 'shared' | 'exclusive'>,
    readonly limits: ModelLimits,
  ) {
    for (const group of Object.keys(groups)) this.subscriptions.set(group, new Map());
  }

  send(topic: string, bodies: string[]): void {
    const queue = this.messages.get(topic) ?? [];
    queue.push(...bodies);
    this.messages.set(topic, queue);
  }

  topicsOf(group: string, client: string): Set<string> {
    return this.subscriptions.get(group)?.get(client) ?? new Set();
  }

  private get references(): number {
    let total = 0;
    for (const clients of this.subscriptions.values()) for (const topics of clients.values()) total += topics.size;
    return total;
  }

  /** Applies a partial add; returns the quota that refuses it (and changes nothing), if any. */
  subscribe(group: string, client: string, topics: string[]): string | undefined {
    const clients = this.subscriptions.get(group) as Map<string, Set<string>>;
    const current = this.topicsOf(group, client);
    const added = [...new Set(topics)].filter((t) => !current.has(t));
    if (current.size + added.length > this.limits.maxLiteTopicsPerClient) return 'maxLiteTopicsPerClient';
    let evicted = 0;
    if (this.groups[group] === 'exclusive') {
      for (const [other, held] of clients) if (other !== client) evicted += added.filter((t) => held.has(t)).length;
    }
    if (this.references + added.length - evicted > this.limits.maxSubscriptionsPerBroker) {
      return 'maxSubscriptionsPerBroker';
    }
    if (this.groups[group] === 'exclusive') {
      for (const [other, held] of clients) if (other !== client) for (const t of added) held.delete(t);
    }
    clients.set(client, new Set([...current, ...added]));
    for (const t of added) if (!this.deliveries.has(`${group}|${t}`)) this.deliveries.set(`${group}|${t}`, new Map());
    return undefined;
  }

  unsubscribe(group: string, client: string, topics: string[]): void {
    for (const t of topics) this.topicsOf(group, client).delete(t);
  }

  /** A closed client's unacked deliveries are visible again at once (`close()` releases them). */
  close(group: string, client: string): void {
    this.subscriptions.get(group)?.delete(client);
    for (const [where, progress] of this.deliveries) {
      if (!where.startsWith(`${group}|`)) continue;
      for (const delivery of progress.values()) {
        if (delivery.holder === client && !delivery.acked) delivery.invisibleUntil = 0;
      }
    }
  }

  /** Checks one POP result against the model and records the deliveries. Throws on a violation. */
  popped(group: string, client: string, batch: readonly PoppedView[], now: number, invisibleTimeMs: number): void {
    const inBatch = new Set<string>();
    for (const m of batch) {
      const where = `${group}|${m.liteTopic}`;
      const held = this.topicsOf(group, client);
      if (!held.has(m.liteTopic)) throw new Error(`${client} of ${group} got ${m.liteTopic}, which it does not hold`);
      const progress = this.deliveries.get(where);
      if (progress === undefined) throw new Error(`${group} has no progress on ${m.liteTopic}`);
      const stored = this.messages.get(m.liteTopic) ?? [];
      if (stored[m.offset] !== m.body) throw new Error(`wrong body at ${where}#${m.offset}`);
      for (let earlier = 0; earlier < m.offset; earlier++) {
        if (progress.get(earlier)?.acked !== true && !inBatch.has(`${where}#${earlier}`)) {
          throw new Error(`FIFO: ${where}#${m.offset} handed out before #${earlier} was acked`);
        }
      }
      const delivery = progress.get(m.offset) ?? { count: 0, acked: false, invisibleUntil: 0, holder: client };
      if (delivery.acked) throw new Error(`${where}#${m.offset} redelivered after its ack`);
      if (delivery.invisibleUntil > now) throw new Error(`${where}#${m.offset} redelivered while invisible`);
      if (m.reconsumeTimes !== delivery.count) {
        throw new Error(`${where}#${m.offset}: reconsumeTimes ${m.reconsumeTimes}, expected ${delivery.count}`);
      }
      delivery.count++;
      delivery.invisibleUntil = now + invisibleTimeMs;
      delivery.holder = client;
      progress.set(m.offset, delivery);
      inBatch.add(`${where}#${m.offset}`);
      this.handles.set(m.receiptHandle, { group, topic: m.liteTopic, offset: m.offset, attempt: m.reconsumeTimes });
    }
  }

  /** Whether an ack of `handle` must succeed (it is the latest delivery); records it. */
  ack(handle: string): boolean {
    const info = this.handles.get(handle) as HandleInfo;
    const delivery = this.deliveries.get(`${info.group}|${info.topic}`)?.get(info.offset) as Delivery;
    if (info.attempt !== delivery.count - 1) return false;
    delivery.acked = true;
    return true;
  }

  /** Every (group, lite topic, offset) that must be delivered: all messages of topics the group started. */
  unacked(group: string): string[] {
    const missing: string[] = [];
    for (const [where, progress] of this.deliveries) {
      const [g, topic] = where.split('|') as [string, string];
      if (g !== group) continue;
      const count = this.messages.get(topic)?.length ?? 0;
      for (let offset = 0; offset < count; offset++) {
        if (progress.get(offset)?.acked !== true) missing.push(`${topic}#${offset}`);
      }
    }
    return missing;
  }

  /** Lite topics any client of the group ever subscribed (those the group has progress on). */
  started(group: string): string[] {
    return [...this.deliveries.keys()].filter((w) => w.startsWith(`${group}|`)).map((w) => w.split('|')[1] as string);
  }
}
