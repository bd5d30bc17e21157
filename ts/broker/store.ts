/**
 * The message store the broker writes to and reads from: the part of `CommitLog` it uses. With a
 * directory the broker opens a `CommitLog`; without one it uses `MemoryStore`, a Map of queues with
 * the same offsets and the same answers. Every store answers every method, so the broker has one
 * code path over both.
 */
import { join } from 'node:path';
import type { EngineName } from '../engine/contract.js';
import { ClosedError } from '../errors.js';
import {
  type AppendRecord,
  type AppendResult,
  type Clock,
  CommitLog,
  type LmqPage,
  type LmqSummary,
  type ReadRequest,
  type StoredMessage,
} from '../log.js';

/**
 * What a caller keeps for one LMQ and hands to the store with its name (the broker's
 * `LiteTopicInfo`): a store may keep its own state of the LMQ there and find it again without
 * looking the name up in a map of every LMQ. The memory store keeps the LMQ's queue there; the
 * commit log, on the native engine, the LMQ's handle for its reads and appends. The state
 * is checked on every use (its store, its LMQ, not deleted), so a stale one costs a lookup, never a
 * wrong answer.
 */
export interface LmqKeeper {
  storeState: object | undefined;
}

/** A record to append; `keepers[i]`, when given, is kept for `lmqs[i]` (see `LmqKeeper`). */
export interface StoreRecord extends AppendRecord {
  keepers?: readonly (LmqKeeper | undefined)[];
}

/** A read of one LMQ in `readMany`, with the caller's `LmqKeeper` for it when it has one. */
export interface StoreReadRequest extends ReadRequest {
  keeper?: LmqKeeper | undefined;
}

export interface MessageStore {
  append(records: readonly StoreRecord[]): Promise<AppendResult[]>;
  /** Up to `maxNum` messages of `lmq` from `fromOffset` (or its minimum, if later), in offset order. */
  read(lmq: string, fromOffset: number, maxNum: number, keeper?: LmqKeeper): StoredMessage[];
  /** `read` of each request in one call (CommitLog: one engine call for all). */
  readMany(requests: readonly StoreReadRequest[]): StoredMessage[][];

  /** The next offset to be written (0 for an LMQ that does not exist). */
  maxOffset(lmq: string): number;
  /** The oldest offset still stored. */
  minOffset(lmq: string): number;
  listLmqs(prefix?: string, limit?: number, cursor?: string): LmqPage;
  /** Every LMQ under `prefix` (named without it) with its offsets and last write, in one call. */
  lmqSummaries(prefix: string): LmqSummary[];
  close(): Promise<void>;
  /**
   * Deletes LMQs (expiry), whether each existed; a later message to one starts again at offset 0
   * (CommitLog: one write for all).
   */
  deleteLmqs(lmqs: readonly string[]): Promise<boolean[]>;
  /** Store timestamp of the newest message of `lmq`, or undefined when it does not exist. */
  lastWriteTimestamp(lmq: string): number | undefined;
  /** Deletes old segments (retention); a store without segments deletes nothing. */
  retain(policy: { maxAgeMs?: number; maxBytes?: number }): Promise<{ segments: number; bytes: number }>;
  /** Set by the broker: hears failures of the store's background work (`CommitLog.onBackgroundError`). */
  onBackgroundError: ((error: unknown, during: string) => void) | undefined;
  /** Storage figures for admin queries (files and bytes on disk: none in memory). */
  stats(): { segments: number; segmentBytesOnDisk: number; lmqs: number; filesOpen: number };
}

/** The properties of a stored message sent without any (frozen: shared by all of them). */
const NO_PROPERTIES: Record<string, string> = Object.freeze({});

/** The messages of a queue that has none yet (frozen: shared by all of them). */
const NO_MESSAGES = Object.freeze([]) as unknown as StoredMessage[];

/** The messages of one LMQ in a `MemoryStore`, by offset; marked deleted when the LMQ is. */
class MemoryQueue {
  /**
   * Made with its first message, as an array of one: an empty array grown by its first `push` takes
   * room for 16, and most lite topics hold a message or two.
   */
  messages: StoredMessage[] = NO_MESSAGES;
  deleted = false;

  constructor(
    readonly store: MemoryStore,
    readonly lmq: string,
  ) {}
}

/** The store the broker uses when it has no directory: everything in memory, lost on close. */
export class MemoryStore implements MessageStore {
  private readonly queues = new Map<string, MemoryQueue>();
  private position = 0;
  private closed = false;
  /** Nothing runs in the background here; kept for the broker, which sets it on every store. */
  onBackgroundError: ((error: unknown, during: string) => void) | undefined;

  constructor(private readonly clock: Clock) {}

  async append(records: readonly StoreRecord[]): Promise<AppendResult[]> {
    this.checkOpen();
    const now = this.clock.now();
    const results: AppendResult[] = new Array(records.length);
    for (let r = 0; r < records.length; r++) {
      const record = records[r] as StoreRecord;
      const position = this.position++;
      const body = typeof record.body === 'string' ? Buffer.from(record.body) : Buffer.from(record.body);
      // Whoever hands a stored message out copies its properties: none share one empty object.
      const properties = record.properties === undefined ? NO_PROPERTIES : { ...record.properties };
      const offsets: number[] = new Array(record.lmqs.length);
      for (let i = 0; i < record.lmqs.length; i++) {
        const lmq = record.lmqs[i] as string;
        const queue = this.queueOf(lmq, record.keepers?.[i], true) as MemoryQueue;
        const messages = queue.messages;
        const offset = messages.length;
        offsets[i] = offset;
        const message: StoredMessage = {
          lmq,
          offset,
          position,
          storeTimestamp: now,
          bornTimestamp: record.bornTimestamp ?? now,
          key: record.key,
          tag: record.tag,
          properties,
          body,
        };
        if (offset === 0) queue.messages = [message];
        else messages.push(message);
      }
      results[r] = { position, offsets };
    }
    return results;
  }

  read(lmq: string, fromOffset: number, maxNum: number, keeper?: LmqKeeper): StoredMessage[] {
    this.checkOpen();
    const queue = this.queueOf(lmq, keeper, false);
    return queue === undefined ? [] : queue.messages.slice(fromOffset, fromOffset + maxNum);
  }

  readMany(requests: readonly StoreReadRequest[]): StoredMessage[][] {
    return requests.map((request) => this.read(request.lmq, request.fromOffset, request.maxNum, request.keeper));
  }

  /**
   * The message at `offset` of `lmq`, or undefined: what `read(lmq, offset, 1, keeper)` holds,
   * without an array. A POP reading this store (not a subclass that reads otherwise) asks it for
   * each message it hands out instead of reading runs.
   */
  messageAt(lmq: string, offset: number, keeper?: LmqKeeper): StoredMessage | undefined {
    this.checkOpen();
    const messages = this.queueOf(lmq, keeper, false)?.messages;
    return messages !== undefined && offset < messages.length ? messages[offset] : undefined;
  }

  maxOffset(lmq: string): number {
    return this.queues.get(lmq)?.messages.length ?? 0;
  }

  /**
   * The queue of `lmq`: the one `keeper` holds when it is this store's, of that LMQ and not deleted,
   * else looked up (and made, with `create`), and then held by `keeper`.
   */
  private queueOf(lmq: string, keeper: LmqKeeper | undefined, create: boolean): MemoryQueue | undefined {
    const held = keeper?.storeState;
    if (held instanceof MemoryQueue && held.store === this && held.lmq === lmq && !held.deleted) return held;
    let queue = this.queues.get(lmq);
    if (queue === undefined) {
      if (!create) return undefined;
      queue = new MemoryQueue(this, lmq);
      this.queues.set(lmq, queue);
    }
    if (keeper !== undefined) keeper.storeState = queue;
    return queue;
  }

  async deleteLmqs(lmqs: readonly string[]): Promise<boolean[]> {
    this.checkOpen();
    return lmqs.map((lmq) => {
      const queue = this.queues.get(lmq);
      if (queue === undefined) return false;
      queue.deleted = true;
      return this.queues.delete(lmq);
    });
  }

  lastWriteTimestamp(lmq: string): number | undefined {
    const messages = this.queues.get(lmq)?.messages;
    return messages === undefined ? undefined : messages[messages.length - 1]?.storeTimestamp;
  }

  minOffset(_lmq: string): number {
    return 0;
  }

  lmqSummaries(prefix: string): LmqSummary[] {
    const out: LmqSummary[] = [];
    for (const [name, { messages }] of this.queues) {
      if (!name.startsWith(prefix)) continue;
      const lastWriteTimestamp = messages[messages.length - 1]?.storeTimestamp;
      out.push({ name: name.slice(prefix.length), minOffset: 0, maxOffset: messages.length, lastWriteTimestamp });
    }
    return out;
  }

  /** Messages in memory live until their lite topic expires: there are no segments to delete. */
  async retain(_policy: { maxAgeMs?: number; maxBytes?: number }): Promise<{ segments: number; bytes: number }> {
    this.checkOpen();
    return { segments: 0, bytes: 0 };
  }

  stats(): { segments: number; segmentBytesOnDisk: number; lmqs: number; filesOpen: number } {
    return { segments: 0, segmentBytesOnDisk: 0, lmqs: this.queues.size, filesOpen: 0 };
  }

  listLmqs(prefix = '', limit = 1000, cursor?: string): LmqPage {
    const names = [...this.queues.keys()]
      .filter(
        (name) =>
          name.startsWith(prefix) &&
          (cursor === undefined || Buffer.compare(Buffer.from(name), Buffer.from(cursor)) > 0),
      )
      .sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    const page = names.slice(0, limit);
    const last = page[page.length - 1];
    return names.length > limit && last !== undefined ? { lmqs: page, cursor: last } : { lmqs: page };
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private checkOpen(): void {
    if (this.closed) throw new ClosedError('the store is closed');
  }
}

/**
 * A `CommitLog` in `<dir>/log`. Without a directory, a `CommitLog` in anonymous memory on an engine
 * that has one (native), else a `MemoryStore`.
 */
export async function openStore(
  dir: string | undefined,
  options: {
    engine?: EngineName;
    flush?: 'async' | 'sync';
    clock: Clock;
    segmentBytes?: number | undefined;
    readOnly?: boolean;
    repair?: boolean;
  },
): Promise<MessageStore> {
  if (dir === undefined) {
    const { engine, clock, segmentBytes } = options;
    const log = await CommitLog.openInMemory({ engine, clock, segmentBytes });
    return log ?? new MemoryStore(options.clock);
  }
  const { segmentBytes, ...rest } = options;
  return CommitLog.open(join(dir, 'log'), segmentBytes === undefined ? rest : { ...rest, segmentBytes });
}

/** The LMQ of a lite topic: `%LMQ%$<parent>$<lite>`. */
export function lmqName(parent: string, liteTopic: string): string {
  return `%LMQ%$${parent}$${liteTopic}`;
}
