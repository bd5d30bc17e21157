/**
 * The broker facade (DESIGN.md §2, §6, §7): LITE parent topics, consumer groups bound to them,
 * producers sending to lite topics, consumers subscribing and POPping. Storage is a `CommitLog` in
 * `<dir>/log`, or memory without a directory; time is a clock plus a scheduler (see docs/BROKER.md:
 * with a manual clock, `tick()` runs what is due).
 */
import { randomBytes } from 'node:crypto';
import type { EngineName } from '../engine/contract.js';
import { getEngine } from '../engine/load.js';
import {
  ClosedError,
  GroupNotFoundError,
  InvalidArgumentError,
  QuotaExceededError,
  TopicNotFoundError,
} from '../errors.js';
import { type Clock, systemClock } from '../log.js';
import { PatternIndex } from '../pattern.js';
import { TopicTrie } from '../trie.js';
import { Consumer } from './consumer.js';
import { Dispatcher } from './dispatcher.js';
import { checkLiteTopic } from './names.js';
import { TopicProgress } from './offsets.js';
import type { BrokerParts } from './parts.js';
import { messageId, Popper } from './pop.js';
import { type BrokerLimits, checkQuota, resolveLimits } from './quota.js';
import { Registry } from './registry.js';
import { type BrokerContext, ClientState, GroupState, type ParentTopic, type SubModel } from './state.js';
import { lmqName, type MessageStore, openStore } from './store.js';
import { ManualScheduler, type Scheduler, SystemScheduler } from './timers.js';
import type { SendMessage, SendResult } from './types.js';

export interface BrokerOptions {
  /** Data directory; without one everything is kept in memory. */
  dir?: string;
  /** `native` or `js`; default: the active engine. */
  engine?: EngineName;
  /** Commit-log flush mode with a directory: `async` (default) or `sync`. */
  flush?: 'async' | 'sync';
  /** Source of time; a manual clock makes the broker's timers run on `tick()` only. */
  clock?: Clock;
  /** `system`: real timers; `manual`: deadlines run on `tick()`. Default: manual iff a non-system clock is given. */
  timers?: 'system' | 'manual';
  limits?: Partial<BrokerLimits>;
  /** A client with queued events that does not POP for this long has them moved; default 30,000 ms. */
  stallTimeoutMs?: number;
  /** A custom store (fault injection in tests); replaces `dir`. */
  store?: MessageStore;
}

export interface TopicOptions {
  /** Idle lite topics expire after this long (kept for the lifecycle layer; not enforced yet). */
  liteTopicExpirationMs?: number;
}

export interface GroupOptions {
  bindTopic: string;
  /** `shared` (default) or `exclusive`. */
  subModel?: SubModel;
  /** Subscriptions are patterns (shared groups only). */
  wildcard?: boolean;
  /** Kept for the dead-letter layer; default 16. */
  maxReconsumeTimes?: number;
  /** Pattern dialect; only `lite` applies to lite topic names. */
  dialect?: 'lite';
}

const NAME = /^[A-Za-z0-9_-]{1,127}$/;
export const DEFAULT_STALL_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_RECONSUME_TIMES = 16;

function requireName(value: unknown, what: string): string {
  if (typeof value !== 'string' || !NAME.test(value)) {
    throw new InvalidArgumentError(`${what} must be 1..127 characters of [A-Za-z0-9_-] (got ${String(value)})`, {
      value,
    });
  }
  return value;
}

function optionalCount(value: unknown, what: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidArgumentError(`${what} must be a non-negative integer (got ${String(value)})`, { value });
  }
  return value;
}

export class Broker {
  readonly engine: EngineName;
  private closed = false;
  private readonly parents = new Map<string, ParentTopic>();
  private readonly groups = new Map<string, GroupState>();
  /** clientId → its state: a client belongs to one group. */
  private readonly clients = new Map<string, ClientState>();
  private readonly dispatcher: Dispatcher;
  private readonly registry: Registry;
  private readonly popper: Popper;
  private readonly parts: BrokerParts;

  private constructor(
    private readonly context: BrokerContext,
    engine: EngineName,
  ) {
    this.engine = engine;
    this.dispatcher = new Dispatcher(context);
    this.registry = new Registry(context, this.dispatcher);
    this.popper = new Popper(context, this.dispatcher);
    this.parts = {
      registry: this.registry,
      popper: this.popper,
      checkOpen: () => this.checkOpen(),
      liteTopics: (names) => names.map((name) => checkLiteTopic(name, context.limits, engine)),
    };
  }

  static async open(options: BrokerOptions = {}): Promise<Broker> {
    if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options must be an object');
    const engine = getEngine(options.engine).name;
    const clock = options.clock ?? systemClock;
    if (typeof clock.now !== 'function') throw new InvalidArgumentError('clock must have a now() method');
    const timers = options.timers ?? (clock === systemClock ? 'system' : 'manual');
    if (timers !== 'system' && timers !== 'manual') {
      throw new InvalidArgumentError('timers must be "system" or "manual"', { value: timers });
    }
    const limits = resolveLimits(options.limits);
    const stallTimeoutMs = optionalCount(options.stallTimeoutMs, 'stallTimeoutMs', DEFAULT_STALL_TIMEOUT_MS);
    if (options.dir !== undefined && typeof options.dir !== 'string') {
      throw new InvalidArgumentError('dir must be a string', { value: options.dir });
    }
    const store = options.store ?? (await openStore(options.dir, { engine, flush: options.flush, clock }));
    const scheduler: Scheduler = timers === 'manual' ? new ManualScheduler(clock) : new SystemScheduler(clock);
    const epoch = randomBytes(6).toString('hex');
    return new Broker({ store, clock, scheduler, limits, epoch, stallTimeoutMs }, engine);
  }

  /** Creates a LITE parent topic. Lite topics already in the store (a reopened directory) are found. */
  createTopic(name: string, options: TopicOptions = {}): void {
    this.checkOpen();
    requireName(name, 'topic name');
    if (this.parents.has(name)) throw new InvalidArgumentError(`topic ${name} already exists`, { value: name });
    const expiration = options.liteTopicExpirationMs;
    if (expiration !== undefined) optionalCount(expiration, 'liteTopicExpirationMs', 0);
    const trie = new TopicTrie({ engine: this.engine, maxNameBytes: this.context.limits.maxLiteTopicBytes });
    const prefix = lmqName(name, '');
    let cursor: string | undefined;
    do {
      const page = this.context.store.listLmqs(prefix, 1000, cursor);
      for (const lmq of page.lmqs) trie.add(lmq.slice(prefix.length), this.context.clock.now());
      cursor = page.cursor;
    } while (cursor !== undefined);
    this.parents.set(name, { name, liteTopicExpirationMs: expiration, trie, groups: new Set() });
  }

  /** Creates a consumer group bound to a parent topic. */
  createGroup(name: string, options: GroupOptions): void {
    this.checkOpen();
    requireName(name, 'group name');
    if (this.groups.has(name)) throw new InvalidArgumentError(`group ${name} already exists`, { value: name });
    if (options === null || typeof options !== 'object') throw new InvalidArgumentError('group options are required');
    const parent = this.parent(options.bindTopic);
    const subModel = options.subModel ?? 'shared';
    if (subModel !== 'shared' && subModel !== 'exclusive') {
      throw new InvalidArgumentError('subModel must be "shared" or "exclusive"', { value: subModel });
    }
    const wildcard = options.wildcard ?? false;
    if (typeof wildcard !== 'boolean')
      throw new InvalidArgumentError('wildcard must be a boolean', { value: wildcard });
    if (wildcard && subModel === 'exclusive') {
      throw new InvalidArgumentError('wildcard groups are shared; exclusive wildcard groups are not supported', {
        value: options,
      });
    }
    const dialect = options.dialect ?? 'lite';
    if (dialect !== 'lite')
      throw new InvalidArgumentError('lite topic names use the "lite" dialect', { value: dialect });
    const maxReconsumeTimes = optionalCount(
      options.maxReconsumeTimes,
      'maxReconsumeTimes',
      DEFAULT_MAX_RECONSUME_TIMES,
    );
    const index = wildcard ? new PatternIndex({ engine: this.engine, dialect }) : undefined;
    const group = new GroupState(
      name,
      parent,
      { bindTopic: parent.name, subModel, wildcard, maxReconsumeTimes, dialect },
      index,
    );
    this.groups.set(name, group);
    parent.groups.add(group);
  }

  /** Sends one message; resolves once stored (durable under `flush: 'sync'`). */
  async send(topic: string, message: SendMessage): Promise<SendResult> {
    return (await this.sendBatch(topic, [message]))[0] as SendResult;
  }

  /**
   * Sends messages in order, all or none: every message is checked (and the lite-topic quota for the
   * batch as a whole) before anything is stored.
   */
  async sendBatch(topic: string, messages: readonly SendMessage[]): Promise<SendResult[]> {
    this.checkOpen();
    const parent = this.parent(topic);
    if (!Array.isArray(messages) || messages.length === 0) {
      throw new InvalidArgumentError('messages must be a non-empty array', { value: messages });
    }
    const names = messages.map((message) => this.checkMessage(message));
    const created = [...new Set(names)].filter((name) => !parent.trie.has(name));
    if (created.length > 0) {
      let existing = 0;
      for (const p of this.parents.values()) existing += p.trie.size;
      checkQuota(this.context.limits, 'maxLiteTopicsPerBroker', existing + created.length, created);
    }
    const now = this.context.clock.now();
    // In the trie before the append, so concurrent sends count them against the quota too.
    for (const name of created) parent.trie.add(name, now);
    const records = messages.map((message, i) => ({
      lmqs: [lmqName(parent.name, names[i] as string)],
      body: message.body,
      key: message.key,
      tag: message.tag,
      properties: message.properties,
    }));
    let results: Awaited<ReturnType<MessageStore['append']>>;
    try {
      results = await this.context.store.append(records);
    } catch (error) {
      for (const name of created) {
        if (this.context.store.maxOffset(lmqName(parent.name, name)) === 0) parent.trie.remove(name);
      }
      throw error;
    }
    const fresh = new Set(created);
    return results.map((result, i) => {
      const liteTopic = names[i] as string;
      const offset = result.offsets[0] as number;
      parent.trie.touch(liteTopic, now);
      this.arrive(parent, liteTopic, offset, fresh.delete(liteTopic));
      return { messageId: messageId(result.position), liteTopic, offset };
    });
  }

  /** A consumer: client `clientId` of `group`. A clientId belongs to one group at a time. */
  consumer(options: { group: string; clientId: string }): Consumer {
    this.checkOpen();
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('consumer options are required');
    const group = this.groups.get(options.group);
    if (group === undefined) {
      throw new GroupNotFoundError(`group ${String(options.group)} does not exist`, { value: String(options.group) });
    }
    const clientId = options.clientId;
    if (typeof clientId !== 'string' || clientId.length === 0) {
      throw new InvalidArgumentError('clientId must be a non-empty string', { value: clientId });
    }
    const existing = this.clients.get(clientId);
    if (existing !== undefined && !existing.closed) {
      throw new InvalidArgumentError(`client ${clientId} is already open in group ${existing.group.name}`, {
        value: clientId,
      });
    }
    const client = new ClientState(clientId, group, group.nextClientId++, this.context.clock.now());
    this.clients.set(clientId, client);
    group.clients.set(clientId, client);
    group.byId.set(client.id, client);
    if (client.legacy) {
      group.legacy.add(client);
      this.dispatcher.drainBacklog(group, client);
    }
    return new Consumer(this.parts, client);
  }

  /**
   * Runs every timer the clock has reached: invisible times ending, long-poll deadlines, stall checks.
   * Only needed with manual timers; with system timers they run on their own and this does nothing.
   */
  tick(): void {
    this.checkOpen();
    this.context.scheduler.runDue();
  }

  /** Closes every consumer (waiting POPs resolve empty) and the store. Safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const client of this.clients.values()) this.registry.close(client);
    this.context.scheduler.clear();
    await this.context.store.close();
  }

  private arrive(parent: ParentTopic, liteTopic: string, offset: number, created: boolean): void {
    for (const group of parent.groups) {
      if (created && group.patternIndex !== undefined && group.patternIndex.size > 0) {
        for (const id of group.patternIndex.match(liteTopic)) {
          const client = group.byId.get(id) as ClientState;
          try {
            this.registry.attachArrived(client, liteTopic, offset);
          } catch (error) {
            if (!(error instanceof QuotaExceededError)) throw error;
            client.notify('quotaExceeded', error);
          }
        }
      }
      if (!group.interested(liteTopic)) continue;
      if (!group.progress.has(liteTopic)) group.progress.set(liteTopic, new TopicProgress(offset));
      this.dispatcher.ready(group, liteTopic);
    }
  }

  private checkMessage(message: SendMessage): string {
    if (message === null || typeof message !== 'object') {
      throw new InvalidArgumentError('a message must be an object', { value: message });
    }
    const name = checkLiteTopic(message.liteTopic, this.context.limits, this.engine);
    if (typeof message.body !== 'string' && !(message.body instanceof Uint8Array)) {
      throw new InvalidArgumentError('body must be a string or a Uint8Array', { value: message.body });
    }
    for (const field of ['key', 'tag'] as const) {
      const value = message[field];
      if (value !== undefined && typeof value !== 'string') {
        throw new InvalidArgumentError(`${field} must be a string`, { value });
      }
    }
    const properties = message.properties;
    if (properties !== undefined) {
      if (properties === null || typeof properties !== 'object') {
        throw new InvalidArgumentError('properties must be an object of strings', { value: properties });
      }
      for (const value of Object.values(properties)) {
        if (typeof value !== 'string') throw new InvalidArgumentError('property values must be strings', { value });
      }
    }
    return name;
  }

  private parent(name: unknown): ParentTopic {
    const parent = typeof name === 'string' ? this.parents.get(name) : undefined;
    if (parent === undefined)
      throw new TopicNotFoundError(`topic ${String(name)} does not exist`, { value: String(name) });
    return parent;
  }

  private checkOpen(): void {
    if (this.closed) throw new ClosedError('the broker is closed');
  }
}
