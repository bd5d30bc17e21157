/**
 * `consumer.run(handler)`: handler-style consumption on top of POP and ack. Up to `concurrency`
 * handlers run at once, never two of one lane: a lite topic, or in a key-shared group a key of a
 * lite topic, so the order the broker hands messages out in is the order they are handled in. A
 * handler that resolves acks its message; one that throws makes it visible again after a capped
 * exponential backoff, and a message already at the group's `maxReconsumeTimes` goes to the
 * dead-letter queue instead. While a message is held (queued or running), its invisible time is
 * extended. `stop()` stops popping, releases what was fetched and not started, and resolves once
 * the running handlers have finished and their messages are acked or released.
 */
import { ClosedError, InvalidArgumentError } from '../errors.js';
import type { PopOptions, PoppedMessage } from './types.js';

/** What a runner needs of its consumer (kept narrow so run.ts does not import consumer.ts). */
export interface RunTarget {
  readonly closed: boolean;
  pop(options: PopOptions): Promise<PoppedMessage[]>;
  ack(message: PoppedMessage): Promise<void>;
  changeInvisibleTime(message: PoppedMessage, invisibleTimeMs: number): Promise<void>;
  deadLetter(message: PoppedMessage): Promise<void>;
  /** The group's `maxReconsumeTimes`. */
  readonly maxReconsumeTimes: number;
  /** Whether lanes are keys (key-shared groups) rather than lite topics. */
  readonly keyShared: boolean;
  /** Where failures go when `onError` is not given (the broker's `'error'` event). */
  report(error: unknown, during: string): void;
}

export type MessageHandler = (message: PoppedMessage) => unknown;

export interface RunOptions {
  /** Handlers running at once, across lanes; default 1. */
  concurrency?: number;
  /** Aborting it stops the run as `stop()` does. */
  signal?: AbortSignal;
  /** Messages asked for per POP; default the broker's `maxPopNum`. */
  maxNum?: number;
  /** How long a popped message stays hidden; extended while it is held. Default 30,000 ms. */
  invisibleTimeMs?: number;
  /** Long-poll wait per POP, which also bounds how long `stop()` waits for a POP in flight; default 1,000 ms. */
  waitMs?: number;
  /** Delay before a failed message is delivered again: `initialDelayMs × 2^reconsumeTimes`, at most `maxDelayMs`. */
  retry?: { initialDelayMs?: number; maxDelayMs?: number };
  /** Called with every handler failure and every failed ack or release; default: the broker's `'error'` event. */
  onError?: (error: unknown, message: PoppedMessage | undefined) => void;
}

/** A run in progress. */
export interface Running {
  /** Stops popping, releases fetched messages not yet started, and waits for the running handlers. */
  stop(): Promise<void>;
  /** Resolves when the run has ended (after `stop()`, an aborted signal, or the consumer closing). */
  readonly done: Promise<void>;
}

export const DEFAULT_RUN_WAIT_MS = 1_000;
export const DEFAULT_RETRY_INITIAL_DELAY_MS = 1_000;
export const DEFAULT_RETRY_MAX_DELAY_MS = 60_000;
/** Pause after a POP failed for another reason than the consumer closing, before the next one. */
const POP_FAILURE_PAUSE_MS = 1_000;

function positive(value: unknown, what: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new InvalidArgumentError(`${what} must be a positive integer (got ${String(value)})`, { value });
  }
  return value;
}

/** The retry delay after a failure of a message delivered `reconsumeTimes` times before. */
export function retryDelayMs(reconsumeTimes: number, initialDelayMs: number, maxDelayMs: number): number {
  return Math.min(maxDelayMs, initialDelayMs * 2 ** Math.min(reconsumeTimes, 30));
}

interface Held {
  message: PoppedMessage;
  /** When its invisible time was last set (the POP, or the last extension). */
  hiddenAt: number;
}

/**
 * The messages of one lane fetched and not started, in offset order. After a handler failure the
 * lane waits for that message to come back (`waitingFor`) before it runs what was fetched behind
 * it: those stay held, so no delivery is charged to them, and FIFO holds.
 */
interface Lane {
  queue: Held[];
  busy: boolean;
  waitingFor?: { offset: number; giveUpAt: number };
}

/** Starts a run; `Consumer.run` checks the consumer is open first. */
export function startRun(target: RunTarget, handler: MessageHandler, options: RunOptions = {}): Running {
  if (typeof handler !== 'function') throw new InvalidArgumentError('handler must be a function', { value: handler });
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError('run options must be an object');
  const runner = new Runner(target, handler, options);
  return { stop: () => runner.stop(), done: runner.done };
}

class Runner {
  readonly done: Promise<void>;
  private readonly concurrency: number;
  private readonly pop: PopOptions;
  private readonly invisibleTimeMs: number;
  private readonly initialDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly lanes = new Map<string, Lane>();
  private readonly running = new Set<Promise<void>>();
  /** The messages whose handlers are running. */
  private readonly active = new Set<Held>();
  private stopping = false;
  private wake: (() => void) | undefined;
  private readonly extender: NodeJS.Timeout;

  constructor(
    private readonly target: RunTarget,
    private readonly handler: MessageHandler,
    private readonly options: RunOptions,
  ) {
    this.concurrency = positive(options.concurrency, 'concurrency', 1);
    this.invisibleTimeMs = positive(options.invisibleTimeMs, 'invisibleTimeMs', 30_000);
    const waitMs = options.waitMs ?? DEFAULT_RUN_WAIT_MS;
    this.pop = { invisibleTimeMs: this.invisibleTimeMs, waitMs };
    if (options.maxNum !== undefined) this.pop.maxNum = positive(options.maxNum, 'maxNum', 1);
    this.initialDelayMs = positive(
      options.retry?.initialDelayMs,
      'retry.initialDelayMs',
      DEFAULT_RETRY_INITIAL_DELAY_MS,
    );
    this.maxDelayMs = positive(options.retry?.maxDelayMs, 'retry.maxDelayMs', DEFAULT_RETRY_MAX_DELAY_MS);
    const signal = options.signal;
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw new InvalidArgumentError('signal must be an AbortSignal', { value: signal });
    }
    // Extends every held message whose hiding is a third gone: one timer for the whole run.
    const period = Math.max(1, Math.floor(this.invisibleTimeMs / 3));
    this.extender = setInterval(() => this.tend(period), period);
    this.extender.unref();
    const onAbort = () => {
      this.stop().catch(() => undefined);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    this.done = this.loop().finally(() => {
      clearInterval(this.extender);
      signal?.removeEventListener('abort', onAbort);
    });
    if (signal?.aborted) onAbort();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.done;
  }

  /** Messages fetched that could start now (in lanes not waiting for a retry). */
  private startable(): number {
    let count = 0;
    for (const lane of this.lanes.values()) if (lane.waitingFor === undefined) count += lane.queue.length;
    return count;
  }

  private async loop(): Promise<void> {
    while (!this.stopping && !this.target.closed) {
      // Fetch ahead by at most `concurrency` messages: what waits in a lane is hidden, and kept so.
      if (this.startable() >= this.concurrency) {
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
        this.wake = undefined;
        continue;
      }
      let batch: PoppedMessage[];
      try {
        batch = await this.target.pop(this.pop);
      } catch (error) {
        if (error instanceof ClosedError) break;
        this.fail(error, undefined, 'pop');
        await new Promise((resolve) => setTimeout(resolve, POP_FAILURE_PAUSE_MS));
        continue;
      }
      const now = Date.now();
      for (const message of batch) this.enqueue({ message, hiddenAt: now });
      if (this.stopping) break;
      this.dispatch();
    }
    // Fetched and not started: visible again at once, for this group's other clients or a next run.
    const left: Held[] = [];
    for (const lane of this.lanes.values()) left.push(...lane.queue.splice(0));
    await Promise.all([...left.map((held) => this.release(held.message)), ...this.running]);
  }

  private laneOf(message: PoppedMessage): string {
    return this.target.keyShared ? `${message.liteTopic}\u0000${message.key ?? ''}` : message.liteTopic;
  }

  /** Adds a fetched message to its lane in offset order: a redelivery goes before what was held behind it. */
  private enqueue(held: Held): void {
    const name = this.laneOf(held.message);
    let lane = this.lanes.get(name);
    if (lane === undefined) {
      lane = { queue: [], busy: false };
      this.lanes.set(name, lane);
    }
    const offset = held.message.offset;
    let at = lane.queue.length;
    while (at > 0 && (lane.queue[at - 1] as Held).message.offset > offset) at--;
    lane.queue.splice(at, 0, held);
    if (lane.waitingFor !== undefined && offset <= lane.waitingFor.offset) lane.waitingFor = undefined;
  }

  /** Starts handlers on idle lanes while there is room. */
  private dispatch(): void {
    if (this.stopping) return;
    for (const [name, lane] of this.lanes) {
      if (this.running.size >= this.concurrency) return;
      if (lane.busy || lane.waitingFor !== undefined) continue;
      const held = lane.queue.shift();
      if (held === undefined) {
        this.lanes.delete(name);
        continue;
      }
      lane.busy = true;
      this.active.add(held);
      const run: Promise<void> = this.handle(lane, held).finally(() => {
        this.running.delete(run);
        this.active.delete(held);
        lane.busy = false;
        if (lane.queue.length === 0 && lane.waitingFor === undefined) this.lanes.delete(name);
        this.dispatch();
        this.wake?.();
      });
      this.running.add(run);
    }
  }

  private async handle(lane: Lane, held: Held): Promise<void> {
    const { message } = held;
    let failure: { error: unknown } | undefined;
    try {
      await this.handler(message);
    } catch (error) {
      failure = { error };
    }
    // Settled from here on: no more extensions of its invisible time (one racing the ack would fail).
    this.active.delete(held);
    if (failure === undefined) {
      await this.target.ack(message).catch((error: unknown) => this.fail(error, message, 'ack'));
      return;
    }
    this.fail(failure.error, message, 'handler');
    if (message.reconsumeTimes >= this.target.maxReconsumeTimes) {
      await this.target.deadLetter(message).catch((error: unknown) => this.fail(error, message, 'dead letter'));
      return;
    }
    const delay = retryDelayMs(message.reconsumeTimes, this.initialDelayMs, this.maxDelayMs);
    // What the lane holds behind this message waits for its redelivery; should that not come (its
    // retry failed, or another client took it), the lane gives up after the delay and an invisible time.
    lane.waitingFor = { offset: message.offset, giveUpAt: Date.now() + delay + 2 * this.invisibleTimeMs };
    await this.target.changeInvisibleTime(message, delay).catch((error: unknown) => this.fail(error, message, 'retry'));
  }

  /**
   * Keeps held messages hidden (each whose hiding is `period` old is hidden for the full time
   * again), and releases the lanes that gave up waiting for a retried message.
   */
  private tend(period: number): void {
    const now = Date.now();
    const extendOne = (held: Held) => {
      if (now - held.hiddenAt < period) return;
      held.hiddenAt = now;
      this.target
        .changeInvisibleTime(held.message, this.invisibleTimeMs)
        .catch((error: unknown) => this.fail(error, held.message, 'extend'));
    };
    for (const [name, lane] of this.lanes) {
      if (lane.waitingFor !== undefined && now >= lane.waitingFor.giveUpAt) {
        for (const held of lane.queue.splice(0)) this.release(held.message).catch(() => undefined);
        lane.waitingFor = undefined;
        if (!lane.busy) this.lanes.delete(name);
        continue;
      }
      lane.queue.forEach(extendOne);
    }
    for (const held of this.active) extendOne(held);
    this.wake?.();
  }

  private release(message: PoppedMessage): Promise<void> {
    return this.target.changeInvisibleTime(message, 0).catch((error: unknown) => {
      // A closed consumer's messages were released by its close already.
      if (!(error instanceof ClosedError)) this.fail(error, message, 'release');
    });
  }

  private fail(error: unknown, message: PoppedMessage | undefined, during: string): void {
    if (this.options.onError !== undefined) this.options.onError(error, message);
    else this.target.report(error, `consumer.run ${during}`);
  }
}
