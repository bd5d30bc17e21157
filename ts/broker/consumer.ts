/**
 * A consumer: one client of one group. Subscribes (explicit lite topics, or patterns in wildcard
 * groups), POPs, acks, and hears about lost subscriptions through `unsubscribed` events. Every
 * method is a thin check-and-forward to the broker's registry and POP logic.
 */
import { EventEmitter } from 'node:events';
import { ClosedError, InvalidArgumentError } from '../errors.js';
import type { Matcher } from '../pattern.js';
import type { BrokerParts } from './parts.js';
import { compilePatterns } from './registry.js';
import { type MessageHandler, type Running, type RunOptions, type RunTarget, startRun } from './run.js';
import { requireStart, type StartPosition } from './start.js';
import type { ClientState } from './state.js';
import { type StreamedMessage, type StreamOptions, streamMessages } from './stream.js';
import type { PopOptions, PoppedMessage } from './types.js';

export interface SubscribeOptions {
  /** Where the group starts on lite topics it has no progress on; default `{ policy: 'max' }`. */
  offset?: StartPosition;
}

/** Payload of the `unsubscribed` event. */
export interface UnsubscribedEvent {
  liteTopic: string;
  /** `evicted`: an exclusive group gave the lite topic to another client; `expired`: the lite topic expired. */
  reason: 'evicted' | 'expired';
}

export type { StreamedMessage, StreamOptions } from './stream.js';

export interface ConsumerEvents {
  unsubscribed: [UnsubscribedEvent];
  /** A new lite topic matched this client's patterns but a quota refused it; nothing changed. */
  quotaExceeded: [Error];
  /** The client made no call for `sessionTimeoutMs` and was closed; its messages went to others. */
  sessionExpired: [];
}

export class Consumer extends EventEmitter<ConsumerEvents> {
  /** @internal Use `broker.consumer()`. */
  constructor(
    private readonly parts: BrokerParts,
    private readonly client: ClientState,
  ) {
    super();
    client.notify = (event, payload) => {
      if (event === 'unsubscribed') this.emit('unsubscribed', payload as UnsubscribedEvent);
      else if (event === 'sessionExpired') this.emit('sessionExpired');
      else if (event === 'quotaExceeded' && this.listenerCount('quotaExceeded') > 0) {
        this.emit('quotaExceeded', payload as Error);
      }
    };
  }

  get clientId(): string {
    return this.client.clientId;
  }

  get group(): string {
    return this.client.group.name;
  }

  /** The lite topics this client holds now (in wildcard groups: those its patterns matched). */
  get liteTopics(): string[] {
    return [...this.client.topics];
  }

  /** Wildcard groups: this client's patterns (none = every lite topic of the parent). */
  get patterns(): string[] {
    return [...this.client.patterns.keys()];
  }

  /** Partial add: lite topics (or, in wildcard groups, patterns) join the subscription. */
  async subscribe(items: readonly string[], options?: SubscribeOptions): Promise<void> {
    this.checkOpen();
    const start = requireStart(options?.offset);
    const list = this.list(items);
    if (this.client.group.wildcard) {
      const target = new Map<string, Matcher>(this.client.patterns);
      for (const [pattern, matcher] of compilePatterns(list, this.client.group)) target.set(pattern, matcher);
      this.parts.registry.setPatterns(this.client, target, start);
    } else {
      this.parts.registry.addTopics(this.client, this.parts.liteTopics(list), start);
    }
    await this.parts.settle();
  }

  /** Partial remove. In a wildcard group removing the last pattern makes the client catch-all (everything). */
  async unsubscribe(items: readonly string[]): Promise<void> {
    this.checkOpen();
    const list = this.list(items);
    if (this.client.group.wildcard) {
      const target = new Map<string, Matcher>(this.client.patterns);
      for (const pattern of list) target.delete(pattern);
      this.parts.registry.setPatterns(this.client, target, { policy: 'max' });
    } else {
      this.parts.registry.removeTopics(this.client, list);
    }
  }

  /** Complete add: the subscription becomes exactly `items` (patterns in wildcard groups; [] = catch-all). */
  async sync(items: readonly string[], options?: SubscribeOptions): Promise<void> {
    this.checkOpen();
    const start = requireStart(options?.offset);
    const list = this.list(items);
    if (this.client.group.wildcard) {
      this.parts.registry.setPatterns(this.client, compilePatterns(list, this.client.group), start);
    } else {
      this.parts.registry.setTopics(this.client, new Set(this.parts.liteTopics(list)), start);
    }
    await this.parts.settle();
  }

  /** POP: up to `maxNum` messages across this client's lite topics; waits up to `waitMs` for some. */
  pop(options?: PopOptions): Promise<PoppedMessage[]> {
    try {
      this.checkOpen();
      const { maxNum, invisibleTimeMs, waitMs } = this.parts.popper.options(options);
      return this.parts.popper.pop(this.client, maxNum, invisibleTimeMs, waitMs);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Acks a popped message (or its receipt handle). Not an async function, like `pop`: the promise
   * the POP layer returns goes to the caller as it is, without one more promise and turn per call.
   */
  ack(messageOrHandle: PoppedMessage | string): Promise<void> {
    try {
      this.checkOpen();
      return this.parts.popper.ack(this.client, handleOf(messageOrHandle), messageOrHandle);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Hides a popped message for `invisibleTimeMs` from now; 0 makes it visible at once. */
  async changeInvisibleTime(messageOrHandle: PoppedMessage | string, invisibleTimeMs: number): Promise<void> {
    this.checkOpen();
    await this.parts.popper.changeInvisibleTime(this.client, handleOf(messageOrHandle), invisibleTimeMs);
  }

  /**
   * Moves a popped message to the group's dead-letter queue now (docs/BROKER.md, "Dead letters"),
   * as if it had reached `maxReconsumeTimes`; the lite topic goes on with the next message.
   */
  async deadLetter(messageOrHandle: PoppedMessage | string): Promise<void> {
    this.checkOpen();
    await this.parts.deadLetter(this.client, handleOf(messageOrHandle));
  }

  /** Tells the broker this client is alive; every other call does too (`sessionTimeoutMs`). */
  heartbeat(): void {
    this.checkOpen();
  }

  /**
   * Handler-style consumption (see `RunOptions`): up to `concurrency` handlers at once, in order per
   * lite topic (per key in key-shared groups); a handler that resolves acks, one that throws makes
   * its message visible again after a capped exponential backoff, and dead-letters it once it is at
   * the group's `maxReconsumeTimes`. Returns `{ stop(), done }`.
   */
  run(handler: MessageHandler, options?: RunOptions): Running {
    this.checkOpen();
    // The POP options are checked now, as pop() would, not by every POP of the run.
    if (options !== null && typeof options === 'object') {
      const { maxNum, invisibleTimeMs, waitMs } = options;
      this.parts.popper.options({ maxNum, invisibleTimeMs, waitMs });
      if (options.retry?.maxDelayMs !== undefined)
        this.parts.popper.options({ invisibleTimeMs: options.retry.maxDelayMs });
    }
    return startRun(this.settler(), handler, options);
  }

  /**
   * The messages as a stream: POPs with long poll (default wait 30 s per round) until the consumer
   * closes or `signal` aborts. Each message has `ack()`, `nack(delayMs)`, `extend(ms)` and
   * `deadLetter()`. When the loop ends early (`break`, a throw, an abort), the messages of the
   * current batch not yet handed out are made visible again at once.
   */
  messages(options?: StreamOptions): AsyncGenerator<StreamedMessage, void, undefined> {
    return streamMessages(this.settler(), options, (pop) => this.parts.popper.options(pop));
  }

  /** What `run()` and `messages()` call on this consumer. */
  private settler(): RunTarget {
    const consumer = this;
    const group = this.client.group;
    return {
      get closed() {
        return consumer.client.closed;
      },
      pop: (pop) => this.pop(pop),
      ack: (message) => this.ack(message),
      changeInvisibleTime: (message, ms) => this.changeInvisibleTime(message, ms),
      deadLetter: (message) => this.deadLetter(message),
      get maxReconsumeTimes() {
        return group.config.maxReconsumeTimes;
      },
      keyShared: group.keyShared !== undefined,
      report: (error, during) => this.parts.report(error, during),
    };
  }

  /**
   * Complete remove: drops the subscription; queued events go to other clients at once, and so do
   * its in-flight messages, visible again now, unless `release: false` keeps them hidden until
   * their invisible time ends.
   */
  async close(options: { release?: boolean } = {}): Promise<void> {
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('close options must be an object');
    if (this.client.closed) return;
    this.parts.leave(this.client, options.release ?? true);
  }

  get closed(): boolean {
    return this.client.closed;
  }

  private checkOpen(): void {
    this.parts.checkOpen();
    if (this.client.closed) throw new ClosedError('the consumer is closed');
    this.parts.seen(this.client);
  }

  private list(items: readonly string[]): string[] {
    if (!Array.isArray(items)) throw new InvalidArgumentError('expected an array of strings', { value: items });
    return items as string[];
  }
}

function handleOf(messageOrHandle: PoppedMessage | string): string {
  if (typeof messageOrHandle === 'string') return messageOrHandle;
  if (messageOrHandle !== null && typeof messageOrHandle === 'object') return messageOrHandle.receiptHandle;
  throw new InvalidArgumentError('expected a popped message or a receipt handle', { value: messageOrHandle });
}
