/**
 * POP, ack and change of invisible time (docs/BROKER.md, "POP, FIFO, ack"). POP drains the client's queued events: for
 * each it first takes the event off the queue, then hands out what the lite topic's FIFO rules allow,
 * then asks the dispatcher to queue the event again if anything is still deliverable. Because the
 * event is removed before the read and re-checked after, an ack (or arrival) during the read that
 * queues the lite topic again is never undone by the POP: no event is lost.
 */

import { ClosedError, InvalidArgumentError, InvalidReceiptError } from '../errors.js';
import { CommitLog, type StoredMessage } from '../log.js';
import { holdCorrupt, isCorrupt } from './corrupt.js';
import type { DeadLetters } from './deadletter.js';
import type { Dispatcher } from './dispatcher.js';
import { messageId } from './message-id.js';
import { CHANNELS } from './metrics.js';
import { type Delivery, MOVING_TO_DEAD_LETTERS, type ProgressScope, type TopicProgress } from './progress.js';
import { checkQuota } from './quota.js';
import { decodeOwnReceipt, decodeReceipt, encodeReceipt, type Receipt, receiptPrefix } from './receipt.js';
import { RecentAcks } from './recent-acks.js';
import {
  type BrokerContext,
  type ClientState,
  type GroupState,
  isExpiring,
  type LiteTopicInfo,
  liteOf,
} from './state.js';
import { lmqName, MemoryStore, type StoreReadRequest } from './store.js';
import { DEFAULT_INVISIBLE_TIME_MS, type PopOptions, type PoppedMessage } from './types.js';

/** Recently acked handles kept per group, so a second ack of a committed message stays harmless. */
const RECENT_ACKS_PER_GROUP = 65_536;

/** Taken offsets this close together are read with one store read. */
const READ_GAP_MESSAGES = 16;

/** Longest invisible time or wait, ms: a day; longer is almost certainly a unit mistake. */
const MAX_TIME_MS = 86_400_000;

function requireTime(value: unknown, what: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_TIME_MS) {
    throw new InvalidArgumentError(`${what} must be an integer from 0 to ${MAX_TIME_MS} ms (got ${String(value)})`, {
      value,
    });
  }
  return value;
}

/** Deliveries of one lite topic a POP handed out, still to read. */
interface HandedOut {
  liteTopic: string;
  lmq: string;
  /** The lite topic's kept info, handed to the store with the LMQ (store.ts `LmqKeeper`). */
  info: LiteTopicInfo | undefined;
  progress: TopicProgress;
  taken: Delivery[];
}

/** What the reads of one lite topic's deliveries found: its messages, and the first corrupt offset. */
interface ReadOutcome {
  stored: (offset: number) => StoredMessage | undefined;
  /** The lowest offset taken whose record is corrupt (-1: none), and the error that said so. */
  corrupt: number;
  error: unknown;
}

/** Whether `taken` (non-empty) is one ascending run of offsets, as FIFO hands them out. */
function isRun(taken: readonly Delivery[]): boolean {
  const first = (taken[0] as Delivery).offset;
  return (
    (taken[taken.length - 1] as Delivery).offset - first + 1 === taken.length &&
    taken.every((d, i) => d.offset === first + i)
  );
}

/** The message of each offset in `messages`, read as one run asked from `first`. */
function inRun(messages: readonly StoredMessage[], first: number): (offset: number) => StoredMessage | undefined {
  const from = messages[0]?.offset ?? first;
  return (offset) => {
    const message = messages[offset - from];
    return message?.offset === offset ? message : undefined;
  };
}

/**
 * A popped message as POP hands it out, with the delivery it is (its group's progress, offset and
 * attempt) in private fields: an ack of the message itself reaches the delivery without decoding its
 * receipt handle and looking its lite topic up (`Popper.ack`). Copies of it (a spread, a structured
 * clone) have none of it and are acked by their handle; so is a message whose handle was replaced.
 */
class Popped implements PoppedMessage {
  messageId: string;
  topic: string;
  liteTopic: string;
  offset: number;
  body: Buffer;
  declare key?: string;
  declare tag?: string;
  properties: Record<string, string>;
  storeTimestamp: number;
  reconsumeTimes: number;
  receiptHandle: string;
  readonly #group: GroupState;
  readonly #progress: TopicProgress;
  readonly #offset: number;
  readonly #attempt: number;
  /** The handle it was handed out with: a message carrying another one is acked by that one. */
  readonly #handle: string;

  constructor(
    group: GroupState,
    progress: TopicProgress,
    delivery: Delivery,
    message: StoredMessage,
    copy: boolean,
    receiptHandle: string,
  ) {
    this.messageId = messageId(message.position);
    this.topic = group.parent.name;
    this.liteTopic = progress.liteTopic;
    this.offset = delivery.offset;
    this.body = copy ? Buffer.from(message.body) : message.body;
    this.properties = copy ? { ...message.properties } : message.properties;
    this.storeTimestamp = message.storeTimestamp;
    this.reconsumeTimes = delivery.attempt;
    this.receiptHandle = receiptHandle;
    if (message.key !== undefined) this.key = message.key;
    if (message.tag !== undefined) this.tag = message.tag;
    this.#group = group;
    this.#progress = progress;
    this.#offset = delivery.offset;
    this.#attempt = delivery.attempt;
    this.#handle = receiptHandle;
  }

  /**
   * `message` itself when it is a `Popped` of `group` acked by the handle it was handed out with
   * (`handle`, as the caller read it from the message) and whose progress the group has not
   * forgotten; else undefined (the handle decides). Its delivery is then read with `progressOf`,
   * `offsetOf` and `attemptOf`: an ack makes no object to carry it.
   */
  static known(message: unknown, handle: string, group: GroupState): Popped | undefined {
    if (!(message instanceof Popped) || handle !== message.#handle || message.#group !== group) return undefined;
    return message.#progress.removed ? undefined : message;
  }

  static progressOf(message: Popped): TopicProgress {
    return message.#progress;
  }

  static offsetOf(message: Popped): number {
    return message.#offset;
  }

  static attemptOf(message: Popped): number {
    return message.#attempt;
  }
}

export class Popper {
  /**
   * Whether a popped body and properties must be copies. A `CommitLog` read returns bytes and objects
   * of its own (both engines copy the records out of the log into a new buffer per read), which the
   * POP can hand out as they are; the memory store, or any other, returns the messages it keeps,
   * which a consumer must not be able to change.
   */
  private readonly copyBodies: boolean;
  /**
   * The store when it is a `MemoryStore` reading as its own class does: its messages are handed out
   * by offset (`messageAt`), with no read, no runs and no outcomes. A subclass that changes `read` or
   * `readMany` (tests failing chosen reads) is read as any other store.
   */
  private readonly direct: MemoryStore | undefined;
  /** The last failure to move a message to a dead-letter queue in the background (admin reports it). */
  lastMoveError: unknown;

  constructor(
    private readonly context: BrokerContext,
    private readonly dispatcher: Dispatcher,
    private readonly deadLetters: DeadLetters,
    /** Keeps work a POP starts and nobody awaits (a dead-letter move) until it ends: `close()` waits. */
    private readonly track: (work: Promise<unknown>) => void = () => undefined,
  ) {
    this.copyBodies = !(context.store instanceof CommitLog);
    const store = context.store;
    this.direct =
      store instanceof MemoryStore &&
      store.read === MemoryStore.prototype.read &&
      store.readMany === MemoryStore.prototype.readMany
        ? store
        : undefined;
  }

  /** Checked POP options. */
  options(options: PopOptions | undefined): { maxNum: number; invisibleTimeMs: number; waitMs: number } {
    if (options !== undefined && (options === null || typeof options !== 'object')) {
      throw new InvalidArgumentError('pop options must be an object', { value: options });
    }
    const maxNum = options?.maxNum ?? this.context.limits.maxPopNum;
    if (typeof maxNum !== 'number' || !Number.isInteger(maxNum) || maxNum < 1) {
      throw new InvalidArgumentError(`maxNum must be a positive integer (got ${String(maxNum)})`, { value: maxNum });
    }
    checkQuota(this.context.limits, 'maxPopNum', maxNum, maxNum);
    return {
      maxNum,
      invisibleTimeMs: requireTime(options?.invisibleTimeMs, 'invisibleTimeMs', DEFAULT_INVISIBLE_TIME_MS),
      waitMs: requireTime(options?.waitMs, 'waitMs', 0),
    };
  }

  /** POP with long poll: resolves with messages as soon as some are ready, or with [] after `waitMs`. */
  async pop(client: ClientState, maxNum: number, invisibleTimeMs: number, waitMs: number): Promise<PoppedMessage[]> {
    const messages = await this.popOrWait(client, maxNum, invisibleTimeMs, waitMs);
    if (messages.length === 0) return messages;
    // Under `sync` the deliveries are durable before anyone sees them: a restart continues their attempts.
    await this.context.journal.settle();
    const { counters, clock } = this.context;
    const now = clock.now();
    const group = client.group.name;
    for (const m of messages) counters.delivered(group, m.reconsumeTimes, now - m.storeTimestamp);
    if (CHANNELS.pop.hasSubscribers) CHANNELS.pop.publish({ group, clientId: client.clientId, messages });
    return messages;
  }

  private popOrWait(
    client: ClientState,
    maxNum: number,
    invisibleTimeMs: number,
    waitMs: number,
  ): Promise<PoppedMessage[]> {
    const ready = this.popNow(client, maxNum, invisibleTimeMs);
    if (ready.length > 0 || waitMs === 0 || client.closed) return Promise.resolve(ready);
    return new Promise((resolve, reject) => {
      const leave = () => {
        cancel();
        const at = client.waiters.indexOf(waiter);
        if (at >= 0) client.waiters.splice(at, 1);
      };
      const done = (messages: PoppedMessage[]) => {
        leave();
        resolve(messages);
      };
      const waiter = {
        retry: () => {
          let messages: PoppedMessage[];
          try {
            messages = client.closed ? [] : this.popNow(client, maxNum, invisibleTimeMs);
          } catch (error) {
            // A read that failed (not a corrupt record, which is held) fails this POP, as it would
            // have failed one made now, instead of escaping from the dispatcher's wake-up.
            leave();
            reject(error);
            return true;
          }
          if (messages.length === 0) return false;
          done(messages);
          return true;
        },
        finish: () => done([]),
      };
      const cancel = this.context.scheduler.at(this.context.clock.now() + waitMs, () => waiter.finish(), true);
      client.waiters.push(waiter);
    });
  }

  /** Drains `client`'s events into at most `maxNum` messages, without waiting. */
  popNow(client: ClientState, maxNum: number, invisibleTimeMs: number): PoppedMessage[] {
    const group = client.group;
    const now = this.context.clock.now();
    client.lastPopAt = now;
    if (client.stalled) {
      client.stalled = false;
      this.dispatcher.drainBacklog(group, client);
    }
    const out: PoppedMessage[] = [];
    const touched: TopicProgress[] = [];
    // Deliveries past maxReconsumeTimes, per lite topic (emptied after each).
    const dying: Delivery[] = [];
    // What was handed out, read once every event is taken (one store call for all, where it can).
    const handed: HandedOut[] = [];
    let count = 0;
    // One scope for every lite topic of this POP, set for each before its take (which reads it
    // then and keeps nothing of it).
    const scope: { -readonly [K in keyof ProgressScope]: ProgressScope[K] } = {
      context: this.context,
      group,
      liteTopic: '',
      lmq: '',
      info: undefined,
      now,
    };
    try {
      // Rounds: take from the queued events, then read what was taken. A read that queues an event
      // again (an ack staged inside it) is taken up by the next round while room is left.
      for (;;) {
        if (count >= maxNum || client.events.size === 0) {
          if (handed.length === 0) break;
          this.read(group, handed, out, now);
          handed.length = 0;
          // What a corrupt record made the POP release leaves room for other lite topics.
          count = out.length;
          continue;
        }
        const progress = client.events.first() as TopicProgress; // the queue is not empty
        const liteTopic = progress.liteTopic;
        // Off the queue first: anything that queues it again from here on stays queued.
        this.dispatcher.dequeue(client, progress);
        touched.push(progress);
        if (isExpiring(group.parent, liteTopic)) continue;
        const info = liteOf(group.parent, liteTopic, progress);
        const lmq = info?.lmq ?? lmqName(group.parent.name, liteTopic);
        this.dispatcher.skipRetired(progress, lmq);
        scope.liteTopic = liteTopic;
        scope.lmq = lmq;
        scope.info = info;
        const taken = progress.take(scope, client, maxNum - count, invisibleTimeMs, dying);
        if (dying.length > 0) {
          for (const delivery of dying) this.moveInBackground(group, liteTopic, lmq, progress, delivery, now);
          dying.length = 0;
        }
        if (taken.length === 0) continue;
        this.dispatcher.armWake(group, progress, now);
        handed.push({ liteTopic, lmq, info, progress, taken });
        count += taken.length;
      }
    } finally {
      // Even when a read fails, every lite topic taken off the queue is offered again: an event
      // consumed here is never lost (docs/BROKER.md, "No lost events").
      // With this POP's `now`: a deadline reached since then only means a wake timer due at once.
      for (const progress of touched) this.dispatcher.ready(group, progress.liteTopic, now, 0, progress);
      this.dispatcher.drainBacklog(group, client, now);
    }
    return out;
  }

  /**
   * Reads what a POP handed out into `out`, in the order it was handed out, and journals the
   * deliveries it made. Each FIFO lite topic's deliveries are one ascending run; with a store that
   * reads many LMQs at once (a `CommitLog`: one engine call), all those runs are read together; the
   * memory store's messages are taken by offset (`direct`).
   *
   * A corrupt record (`LOG_CORRUPT`) fails only its own lite topic, and only from its offset: what was
   * read below it is delivered, what was taken at or after it is released (its attempt and the
   * journal not charged), and the group holds the lite topic at it (corrupt.ts). Any other failure
   * is thrown, the round's deliveries journaled and hidden as handed out.
   */
  private read(group: GroupState, handed: readonly HandedOut[], out: PoppedMessage[], now: number): void {
    const { journal } = this.context;
    const direct = this.direct;
    let outcomes: ReadOutcome[] | undefined;
    if (direct === undefined) {
      try {
        outcomes = this.readAll(handed);
      } catch (error) {
        // Not a corrupt record (the store failed or closed): the deliveries stand, hidden until their
        // invisible time as before, so a waiting POP does not meet the same failure again at once.
        for (const { progress, taken } of handed) {
          const record: number[] = [];
          for (const d of taken) record.push(d.offset, d.attempt, d.invisibleUntil);
          journal.hot('deliver', group, progress, record);
        }
        throw error;
      }
    }
    for (let i = 0; i < handed.length; i++) {
      const { liteTopic, lmq, info, progress, taken } = handed[i] as HandedOut;
      const outcome = outcomes?.[i];
      const corrupt = outcome === undefined ? -1 : outcome.corrupt;
      // Sized for every delivery (cut short should a corrupt record release some): one allocation,
      // none when nothing keeps journal records.
      const record: number[] | undefined = journal.keeps ? new Array(3 * taken.length) : undefined;
      let recorded = 0;
      for (const delivery of taken) {
        if (corrupt >= 0 && delivery.offset >= corrupt) {
          progress.release(delivery, now);
          continue;
        }
        if (record !== undefined) {
          record[recorded] = delivery.offset;
          record[recorded + 1] = delivery.attempt;
          record[recorded + 2] = delivery.invisibleUntil;
        }
        recorded += 3;
        const message =
          outcome === undefined
            ? (direct as MemoryStore).messageAt(lmq, delivery.offset, info)
            : outcome.stored(delivery.offset);
        if (message === undefined) continue;
        progress.unhold(delivery.offset);
        out.push(this.popped(group, progress, delivery, message));
      }
      if (record !== undefined) {
        record.length = recorded;
        if (recorded > 0) journal.hot('deliver', group, progress, record);
      }
      if (corrupt >= 0) {
        holdCorrupt(this.context, group, liteTopic, progress, corrupt, outcome?.error, now);
        this.dispatcher.armWake(group, progress, now);
      }
    }
  }

  /** Reads every lite topic's deliveries; see `read`. Throws only what is not a corrupt record. */
  private readAll(handed: readonly HandedOut[]): ReadOutcome[] {
    const { store } = this.context;
    const runs: StoreReadRequest[] = [];
    const runOf = new Array<number>(handed.length).fill(-1);
    if (handed.length > 1) {
      handed.forEach(({ lmq, info, taken }, i) => {
        if (!isRun(taken)) return;
        runOf[i] = runs.length;
        runs.push({ lmq, fromOffset: (taken[0] as Delivery).offset, maxNum: taken.length, keeper: info });
      });
    }
    let batch: StoredMessage[][] | undefined;
    if (runs.length > 0) {
      try {
        batch = store.readMany(runs);
      } catch (error) {
        if (!isCorrupt(error)) throw error;
        // One of the runs is corrupt: each lite topic is read on its own to find which.
      }
    }
    return handed.map(({ lmq, info, taken }, i) => {
      const run = runOf[i] as number;
      if (batch !== undefined && run >= 0) {
        return {
          stored: inRun(batch[run] as StoredMessage[], (taken[0] as Delivery).offset),
          corrupt: -1,
          error: undefined,
        };
      }
      try {
        return { stored: this.stored(lmq, taken, info), corrupt: -1, error: undefined };
      } catch (error) {
        if (!isCorrupt(error)) throw error;
        return this.readEach(lmq, taken);
      }
    });
  }

  /**
   * The deliveries of `taken` read one by one, in offset order, up to the first corrupt record:
   * everything at or after it is released anyway, so nothing past it is read.
   */
  private readEach(lmq: string, taken: readonly Delivery[]): ReadOutcome {
    const stored = new Map<number, StoredMessage>();
    const offsets = taken.map((d) => d.offset).sort((a, b) => a - b);
    for (const offset of offsets) {
      try {
        for (const message of this.context.store.read(lmq, offset, 1)) {
          if (message.offset === offset) stored.set(offset, message);
        }
      } catch (error) {
        if (!isCorrupt(error)) throw error;
        return { stored: (o) => stored.get(o), corrupt: offset, error };
      }
    }
    return { stored: (o) => stored.get(o), corrupt: -1, error: undefined };
  }

  /**
   * The stored messages of `taken`, by offset. FIFO deliveries are one ascending run: one read, found
   * by position. Key-shared deliveries are scattered over the window: read in runs, not the span.
   */
  private stored(
    lmq: string,
    taken: Delivery[],
    info: LiteTopicInfo | undefined,
  ): (offset: number) => StoredMessage | undefined {
    const first = (taken[0] as Delivery).offset;
    if (isRun(taken)) return inRun(this.context.store.read(lmq, first, taken.length, info), first);
    const stored = new Map<number, StoredMessage>();
    const offsets = taken.map((d) => d.offset).sort((a, b) => a - b);
    for (let i = 0; i < offsets.length; ) {
      const first = offsets[i] as number;
      let last = first;
      while (i + 1 < offsets.length && (offsets[i + 1] as number) - last <= READ_GAP_MESSAGES)
        last = offsets[++i] as number;
      i++;
      for (const message of this.context.store.read(lmq, first, last - first + 1, info)) {
        stored.set(message.offset, message);
      }
    }
    return (offset) => stored.get(offset);
  }

  private popped(
    group: GroupState,
    progress: TopicProgress,
    delivery: Delivery,
    message: StoredMessage,
  ): PoppedMessage {
    const handle = encodeReceipt(this.prefix(group), delivery.offset, delivery.attempt, progress.liteTopic);
    return new Popped(group, progress, delivery, message, this.copyBodies, handle);
  }

  /**
   * Acks one delivery. Stale or unknown handles throw `InvalidReceiptError`; a repeated ack is
   * harmless. `message`: the popped message the caller acks, when it acks by message: a message
   * as POP handed it out names its delivery itself (`Popped`), another one its lite topic.
   */
  ack(client: ClientState, handle: string, message?: unknown): Promise<void> {
    if (client.closed) throw new ClosedError('the consumer is closed');
    const group = client.group;
    const known = Popped.known(message, handle, group);
    if (known !== undefined) {
      return this.ackDelivery(
        client,
        handle,
        Popped.progressOf(known),
        Popped.offsetOf(known),
        Popped.attemptOf(known),
      );
    }
    const liteTopic =
      message !== null && typeof message === 'object' ? (message as PoppedMessage).liteTopic : undefined;
    const receipt = this.resolve(client, handle, liteTopic);
    return this.ackDelivery(client, handle, group.progress.get(receipt.liteTopic), receipt.offset, receipt.attempt);
  }

  /** `ack` of delivery `attempt` of `offset` of `progress` (undefined: a lite topic the group does not know). */
  private ackDelivery(
    client: ClientState,
    handle: string,
    progress: TopicProgress | undefined,
    offset: number,
    attempt: number,
  ): Promise<void> {
    const group = client.group;
    const outcome = progress?.ack(offset, attempt) ?? 'unknown';
    const recent = this.recent(group);
    if (outcome === 'already-acked') return this.context.journal.settle();
    if (outcome === 'below-committed' && recent.has(progress as TopicProgress, offset, attempt)) {
      return this.context.journal.settle();
    }
    if (outcome !== 'acked' || progress === undefined) {
      throw new InvalidReceiptError(`receipt handle is ${outcome === 'stale' ? 'stale' : 'unknown'}`, {
        value: handle,
      });
    }
    const liteTopic = progress.liteTopic;
    this.context.journal.hot('ack', group, progress, offset);
    this.context.counters.acked(group.name);
    recent.add(progress, offset, attempt);
    const now = this.context.clock.now();
    this.dispatcher.armWake(group, progress, now);
    this.dispatcher.ready(group, liteTopic, now, 0, progress);
    // Under `sync` the ack resolves once durable: an acked message is never delivered again.
    const settled = this.context.journal.settle();
    if (!CHANNELS.ack.hasSubscribers) return settled;
    return settled.then(() => {
      CHANNELS.ack.publish({ group: group.name, clientId: client.clientId, liteTopic, offset });
    });
  }

  /** Hides the delivery for `ms` more from now (0: visible now). Same errors as `ack`. */
  changeInvisibleTime(client: ClientState, handle: string, ms: unknown): Promise<void> {
    const time = requireTime(ms, 'invisibleTimeMs', Number.NaN);
    const receipt = this.resolve(client, handle);
    const group = client.group;
    const progress = group.progress.get(receipt.liteTopic);
    const delivery = progress?.current(receipt.offset, receipt.attempt);
    if (progress === undefined || delivery === undefined || delivery.invisibleUntil === MOVING_TO_DEAD_LETTERS) {
      throw new InvalidReceiptError('receipt handle is stale, unknown or already acked', { value: handle });
    }
    const now = this.context.clock.now();
    if (time > 0 && !progress.mayHideAgain(delivery, now)) {
      // Key-shared: its bucket may have gone to another client meanwhile; two holders would follow.
      throw new InvalidReceiptError('the delivery expired; a key-shared message cannot be hidden again', {
        value: handle,
      });
    }
    delivery.invisibleUntil = now + time;
    this.context.journal.hot('deliver', group, progress, [delivery.offset, delivery.attempt, delivery.invisibleUntil]);
    this.dispatcher.armWake(group, progress);
    this.dispatcher.ready(group, receipt.liteTopic);
    return this.context.journal.settle();
  }

  /** Moves the current delivery `handle` names to the dead-letter queue (`Consumer.deadLetter`). */
  deadLetter(client: ClientState, handle: string): Promise<void> {
    const receipt = this.resolve(client, handle);
    const group = client.group;
    const progress = group.progress.get(receipt.liteTopic);
    const delivery = progress?.current(receipt.offset, receipt.attempt);
    if (progress === undefined || delivery === undefined || delivery.invisibleUntil === MOVING_TO_DEAD_LETTERS) {
      throw new InvalidReceiptError('receipt handle is stale, unknown or already acked', { value: handle });
    }
    if (delivery.holder !== undefined) delivery.holder.inflight--;
    delivery.holder = undefined;
    delivery.invisibleUntil = MOVING_TO_DEAD_LETTERS;
    return this.deadLetters.move(group, receipt.liteTopic, progress, delivery);
  }

  /**
   * A failed move leaves the message visible again; the next POP of its lite topic retries. A message
   * whose record is corrupt is not moved: the move would fail the same way at once, on every POP
   * (its failure makes the lite topic ready again, inside this POP). It is read here first, and a
   * corrupt one holds its lite topic like a corrupt record met by a read (`admin.skipCorrupt`).
   */
  private moveInBackground(
    group: GroupState,
    liteTopic: string,
    lmq: string,
    progress: TopicProgress,
    delivery: Delivery,
    now: number,
  ): void {
    try {
      this.context.store.read(lmq, delivery.offset, 1);
    } catch (error) {
      if (isCorrupt(error)) {
        delivery.invisibleUntil = now;
        holdCorrupt(this.context, group, liteTopic, progress, delivery.offset, error, now);
        return;
      }
    }
    const move = this.deadLetters.move(group, liteTopic, progress, delivery).catch((error: unknown) => {
      this.lastMoveError = error;
      this.context.report(error, 'dead-letter move');
    });
    this.track(move);
  }

  /** The receipt `handle` of a delivery to `client`'s group; `liteTopic` as `decodeOwnReceipt` takes it. */
  private resolve(client: ClientState, handle: string, liteTopic?: unknown): Receipt {
    if (client.closed) throw new ClosedError('the consumer is closed');
    const group = client.group;
    const receipt =
      decodeOwnReceipt(handle, this.prefix(group), this.context.epoch, group.name, liteTopic) ?? decodeReceipt(handle);
    if (receipt.epoch !== this.context.epoch || receipt.group !== group.name) {
      throw new InvalidReceiptError('receipt handle is from another broker or group', { value: handle });
    }
    return receipt;
  }

  /** What every receipt handle of `group` starts with (`receiptPrefix`), kept with the group. */
  private prefix(group: GroupState): string {
    group.receiptPrefix ??= receiptPrefix(this.context.epoch, group.name);
    return group.receiptPrefix;
  }

  /** The group's recent acks, kept with the group (so they go with it). */
  private recent(group: GroupState): RecentAcks {
    group.recentAcks ??= new RecentAcks(RECENT_ACKS_PER_GROUP);
    return group.recentAcks;
  }
}
