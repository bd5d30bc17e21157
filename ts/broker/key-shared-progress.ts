/**
 * A key-shared group's progress on one lite topic (docs/BROKER.md, "Key-shared groups"). Like `TopicProgress` it keeps the
 * committed offset and every delivery after it, and commits only the contiguous acked prefix; but
 * messages are handed out per key instead of per lite topic, so offsets are handed out out of order.
 *
 * The window: every offset in [committed, next) has been examined — it either has a `Delivery` or is
 * skipped (never handed out yet, waiting for its key or bucket). `next` never passes
 * `committed + windowMessages`, so the memory for skipped offsets is bounded: one `hashes` entry
 * (offset → 32-bit key hash) per offset in the window. Keys are told apart by that 32-bit hash: two
 * keys with the same hash are ordered as one key, a stricter order, never a weaker one.
 *
 * The rules, applied at each POP and dispatch:
 * - A key is blocked from its first unacked delivery that is still hidden: nothing after it of that
 *   key is handed out (I2, FIFO per key). An expired delivery is handed out again before anything
 *   newer of its key (a redelivery goes first).
 * - A bucket's messages go only to its owner (`assignBuckets`), and only while no other client holds
 *   a hidden unacked delivery of that bucket: a bucket that changed owner is withheld until the old
 *   holder's deliveries of it are acked, released or expired (I1) — never longer than their
 *   invisible time. A delivery restored after a restart has no known holder and withholds its bucket
 *   the same way.
 * - A blocked key or withheld bucket is skipped, never waited on: other keys and buckets flow.
 *
 * The cost per POP and dispatch does not grow with the window. A key lives in one bucket, so the
 * window is kept as one queue of offsets per bucket (and, per bucket, its unacked handed-out
 * deliveries, which say who holds it): a dispatch scans, for each client that needs an event, its
 * buckets up to the first one with something to hand out; a POP merges the client's free buckets
 * by offset (heaps), scanning a bucket only once the merge reaches its first offset, which hands
 * out exactly what one walk of the whole window in offset order would. Acked offsets leave a
 * queue's front as scans pass them. A scan that reaches a bucket's end with nothing to hand out is
 * kept (`DeadEnd`) and resumed while its blockers stay hidden; otherwise a blocked key's newer
 * messages in its bucket are stepped over on each scan.
 *
 * The hashes come from the stored messages: `murmur3(utf8(key)) & 0xFFFF` computed from the stored key
 * is the very value the commit log keeps in the key's index entry (docs/FORMAT.md), but `CommitLog.read`
 * does not return index entries, and a message read once per window costs less than a new read path.
 */
import { type CorruptHold, holdCorrupt, readAround } from './corrupt.js';
import { MinHeap } from './heap.js';
import { assignBuckets, bucketOf, keyHash, keySharedMembers } from './key-shared.js';
import {
  type Delivery,
  MOVING_TO_DEAD_LETTERS,
  type ProgressScope,
  TopicProgress,
  type WithheldBucket,
} from './progress.js';
import { type ClientState, type GroupConfig, type GroupState, maxOffsetOf } from './state.js';
import type { MessageStore } from './store.js';

/** Reads messages of the lite topic from `from` (what `MessageStore.read` gives). */
export type KeyLoader = (from: number, max: number) => readonly { offset: number; key: string | undefined }[];

/** Messages read from the store per batch while the window grows. */
const LOAD_BATCH_MESSAGES = 256;

/** The holder of restored deliveries: nobody now open, so their buckets wait for them. */
const UNKNOWN_HOLDER = Object.freeze({ inflight: 0 }) as { inflight: number };

/** Consumed entries at the front of a bucket queue past which it is compacted (amortized O(1)). */
const COMPACT_AFTER = 256;

/** The offsets of the window in one bucket, in offset order; `start` skips the consumed front. */
interface BucketQueue {
  offsets: number[];
  start: number;
  /** Its deliveries handed out and not yet acked (entries acked or forgotten since are dropped when met). */
  open: Set<Delivery>;
  /** What the last scan that reached the end without a candidate found; see `DeadEnd`. */
  deadEnd: DeadEnd | undefined;
}

/**
 * A bucket's queue up to `end` has nothing to hand out while every one of `blockers` stays hidden
 * and unacked: each offset before `end` is acked, or of a key in `blocked`, blocked by one of them.
 * A scan starts at `end` with that state instead of from the front, so a key stuck on a large
 * backlog in an otherwise idle bucket is not looked at again on every arrival and ack.
 */
interface DeadEnd {
  end: number;
  blocked: Set<number>;
  blockers: Delivery[];
}

/**
 * One bucket's scan during one POP or dispatch: the bucket's offsets in order from `at`, skipping
 * acked ones, and keys blocked by a hidden delivery (or by a delivery that went to the dead letters).
 */
interface Cursor {
  bucket: number;
  queue: BucketQueue;
  /** Index in `queue.offsets` of the current candidate, or of the next offset to look at. */
  at: number;
  /** The current candidate offset, or -1 when the bucket has none (yet). */
  offset: number;
  /** Key hashes blocked in this scan. */
  blocked: Set<number> | undefined;
  /** The hidden deliveries that blocked them. */
  blockers: Delivery[];
  /** Nothing was handed out from this scan: its end may be kept as the bucket's `deadEnd`. */
  clean: boolean;
}

export class KeySharedProgress extends TopicProgress {
  /** Offset → 32-bit key hash, for offsets of the window that were read. */
  readonly hashes = new Map<number, number>();
  /** Unacked deliveries; entries acked or forgotten since are dropped when met. */
  private readonly open = new Set<Delivery>();
  /** Per bucket, its offsets of the window and its open deliveries. */
  private readonly queues: (BucketQueue | undefined)[];
  /** Offsets below this (and at or past `committed`) are in the bucket queues. */
  private indexed: number;
  /**
   * The lowest offset held as corrupt whose retry time is ahead, for the scan under way (set by
   * `readyClients` and `take`, lowered by `hold` during it): nothing from it on is handed out and
   * the window does not grow past it, so the message's unknown key cannot be overtaken.
   */
  private stop = Number.POSITIVE_INFINITY;
  /** The owners of the buckets, cached for `found`, the live clients in the order last met. */
  private assignment: { found: ClientState[]; owners: (ClientState | undefined)[]; members: ClientState[] } | undefined;

  constructor(
    start: number,
    liteTopic: string,
    readonly buckets: number,
    readonly windowMessages: number,
  ) {
    super(start, liteTopic);
    this.indexed = start;
    this.queues = new Array<BucketQueue | undefined>(buckets).fill(undefined);
  }

  /**
   * Per bucket, its owner among the group's live clients of `liteTopic`, and those clients sorted by
   * client id. Recomputed only when the live clients change: one pass over the group's clients of
   * the lite topic otherwise, with no sorting and no hashing.
   */
  owners(group: GroupState, liteTopic: string): { owners: (ClientState | undefined)[]; members: ClientState[] } {
    const cached = this.assignment;
    if (cached !== undefined && sameLiveClients(group, liteTopic, cached.found)) return cached;
    const members = keySharedMembers(group, liteTopic);
    const found: ClientState[] = [];
    forEachLiveClient(group, liteTopic, (client) => found.push(client));
    const indexes = assignBuckets(
      members.map((m) => m.clientId),
      liteTopic,
      this.buckets,
    );
    const owners = Array.from(indexes, (i) => (i < 0 ? undefined : members[i]));
    this.assignment = { found, owners, members };
    return this.assignment;
  }

  /**
   * Who holds hidden unacked deliveries of `bucket`: undefined for nobody, the client when one
   * holds them all, UNKNOWN_HOLDER for several or for deliveries restored after a restart.
   */
  private holderOf(bucket: number, now: number): { inflight: number } | undefined {
    const open = this.queues[bucket]?.open;
    if (open === undefined) return undefined;
    let holder: { inflight: number } | undefined;
    for (const delivery of open) {
      if (delivery.acked || this.delivery(delivery.offset) !== delivery) {
        open.delete(delivery);
        continue;
      }
      // A delivery moving to the dead-letter queue blocks its key, but is held by no client.
      if (delivery.invisibleUntil <= now || delivery.invisibleUntil === MOVING_TO_DEAD_LETTERS) continue;
      const by = delivery.holder ?? UNKNOWN_HOLDER;
      if (holder === undefined) holder = by;
      else if (holder !== by) return UNKNOWN_HOLDER;
    }
    return holder;
  }

  /**
   * The queue of `bucket`, made at its first offset: a lite topic holds per-bucket state only for
   * the buckets its window has touched, not for every bucket of the group.
   */
  private queueOf(bucket: number): BucketQueue {
    let queue = this.queues[bucket];
    if (queue === undefined) {
      queue = { offsets: [], start: 0, open: new Set<Delivery>(), deadEnd: undefined };
      this.queues[bucket] = queue;
    }
    return queue;
  }

  /** Whether `owner` may be handed messages of `bucket`: nobody else holds hidden ones of it. */
  private free(bucket: number, owner: ClientState, now: number): boolean {
    const holder = this.holderOf(bucket, now);
    return holder === undefined || holder === owner;
  }

  /** The key hash of `offset` (in the window), read from the store if not known. */
  private hashAt(offset: number, load: KeyLoader): number {
    const known = this.hashes.get(offset);
    if (known !== undefined) return known;
    for (const message of load(offset, Math.min(LOAD_BATCH_MESSAGES, Math.max(1, this.next - offset)))) {
      if (message.offset < this.next && !this.hashes.has(message.offset))
        this.hashes.set(message.offset, keyHash(message.key));
    }
    // An offset the store no longer has (retention) hashes as the reserved key.
    if (!this.hashes.has(offset)) this.hashes.set(offset, 0);
    return this.hashes.get(offset) as number;
  }

  /** Puts `offset` of key hash `hash` at the end of its bucket's queue. */
  private admit(offset: number, hash: number): void {
    // A held offset read after all (its retry came and the read worked) is no longer held.
    if (this.corruptHold(offset) !== undefined) this.unhold(offset);
    this.hashes.set(offset, hash);
    const queue = this.queueOf(bucketOf(hash, this.buckets));
    queue.offsets.push(offset);
    const delivery = this.delivery(offset);
    if (delivery !== undefined && !delivery.acked) {
      this.open.add(delivery);
      queue.open.add(delivery);
    }
  }

  /**
   * Puts the offsets of [committed, next) not in the bucket queues yet into them: after a restart,
   * `restore` moves `next` past offsets whose keys were not read. It stops where `extend` does, at
   * a record held as corrupt (`stop`, which a load that meets one lowers): that record's key is
   * unknown, so neither it nor anything after it may join a bucket until a read of it works.
   */
  private index(load: KeyLoader): void {
    let from = Math.max(this.indexed, this.committed);
    while (from < Math.min(this.next, this.stop)) {
      let expect = from;
      for (const message of load(from, Math.min(LOAD_BATCH_MESSAGES, Math.min(this.next, this.stop) - from))) {
        const end = Math.min(this.next, this.stop);
        if (message.offset >= end) break;
        if (message.offset < expect) continue;
        // Offsets the store no longer has (retention) hash as the reserved key.
        while (expect < message.offset) this.admit(expect++, 0);
        this.admit(expect++, keyHash(message.key));
      }
      const end = Math.min(this.next, this.stop);
      if (expect === from) {
        const gap = Math.min(end, from + LOAD_BATCH_MESSAGES);
        while (expect < gap) this.admit(expect++, 0);
      }
      if (expect === from) break;
      from = expect;
    }
    if (from > this.indexed) this.indexed = from;
  }

  /** Grows the window by one batch read from the store; false when it cannot grow. */
  private extend(maxOffset: number, load: KeyLoader): boolean {
    const limit = Math.min(maxOffset, this.committed + this.windowMessages, this.stop);
    if (this.next >= limit) return false;
    const from = this.next;
    const messages = load(from, Math.min(LOAD_BATCH_MESSAGES, limit - from));
    // The load may have found a corrupt offset (and lowered `stop`): the window ends before it.
    const end = Math.min(limit, this.stop);
    for (const message of messages) {
      if (message.offset >= end) break;
      if (message.offset < this.next) continue;
      // Offsets the store no longer has (retention) hash as the reserved key.
      while (this.next < message.offset) this.admit(this.next++, 0);
      this.admit(this.next++, keyHash(message.key));
    }
    this.indexed = this.next;
    return this.next > from;
  }

  /**
   * Moves `cursor` to the next offset of its bucket that may be handed out now (`offset`, or -1 at
   * the end of the queue). Offsets below `committed` and acked ones at the front are dropped from
   * the queue for good; a hidden delivery blocks its key for the rest of the scan.
   */
  private advance(cursor: Cursor, now: number, load: KeyLoader): void {
    const { queue } = cursor;
    const offsets = queue.offsets;
    for (let at = cursor.at; at < offsets.length; at++) {
      const offset = offsets[at] as number;
      const delivery = offset < this.committed ? undefined : this.delivery(offset);
      if (offset < this.committed || delivery?.acked === true) {
        if (at === queue.start) queue.start++;
        continue;
      }
      const hash = this.hashAt(offset, load);
      // Checked after the hash is read, which may find this very record corrupt (and lower `stop`).
      if (offset >= this.stop) {
        // Held behind a corrupt offset: nothing of the bucket from here on, and no dead end kept.
        cursor.at = at;
        cursor.offset = -1;
        return;
      }
      if (cursor.blocked?.has(hash) === true) continue;
      if (delivery !== undefined && delivery.invisibleUntil > now) {
        block(cursor, hash, delivery);
        continue;
      }
      cursor.at = at;
      cursor.offset = offset;
      return;
    }
    cursor.at = offsets.length;
    cursor.offset = -1;
    if (cursor.clean) {
      queue.deadEnd = { end: offsets.length, blocked: new Set(cursor.blocked), blockers: [...cursor.blockers] };
    }
  }

  /** A scan of `bucket` from its front, moved to its first candidate. */
  private cursor(bucket: number, now: number, load: KeyLoader): Cursor {
    const queue = this.queueOf(bucket);
    if (queue.start >= COMPACT_AFTER && queue.start * 2 >= queue.offsets.length) {
      queue.offsets = queue.offsets.slice(queue.start);
      if (queue.deadEnd !== undefined) queue.deadEnd.end -= queue.start;
      queue.start = 0;
    }
    const cursor: Cursor = {
      bucket,
      queue,
      at: queue.start,
      offset: -1,
      blocked: undefined,
      blockers: [],
      clean: true,
    };
    const dead = queue.deadEnd;
    if (dead !== undefined && dead.end > queue.start) {
      if (dead.blockers.every((d) => !d.acked && d.invisibleUntil > now && this.delivery(d.offset) === d)) {
        cursor.at = dead.end;
        cursor.blocked = new Set(dead.blocked);
        cursor.blockers = [...dead.blockers];
      } else queue.deadEnd = undefined;
    }
    this.advance(cursor, now, load);
    return cursor;
  }

  /** Its events are one per bucket owner, each at its own client: none stands for the group's. */
  override get queued(): boolean {
    return false;
  }

  /**
   * The members of the lite topic without its event that could be handed something now (the
   * dispatcher queues them one). Scans only the buckets of those clients, each up to its first
   * candidate.
   */
  override readyClients(scope: ProgressScope): Set<ClientState> {
    const { context, group, liteTopic, info, lmq, now } = scope;
    const { owners, members } = this.owners(group, liteTopic);
    // Only clients without the event need one: with every member holding it, nothing to look at.
    const wanted = new Set<ClientState>();
    for (const client of members) if (!client.events.has(this)) wanted.add(client);
    return this.clientsWithWork(now, maxOffsetOf(context.store, info, lmq), owners, wanted, this.keys(scope));
  }

  /** The reads of the window's keys, a corrupt record holding the lite topic where it is met. */
  private keys(scope: ProgressScope): KeyLoader {
    const { context, group, liteTopic, lmq, now } = scope;
    return keyLoader(context.store, lmq, (offset, error) =>
      holdCorrupt(context, group, liteTopic, this, offset, error, now),
    );
  }

  /** Which of `wanted` could be handed something now; see `readyClients`. */
  private clientsWithWork(
    now: number,
    maxOffset: number,
    owners: readonly (ClientState | undefined)[],
    wanted: ReadonlySet<ClientState>,
    load: KeyLoader,
  ): Set<ClientState> {
    const found = new Set<ClientState>();
    if (wanted.size === 0) return found;
    this.stop = this.barrier(now);
    this.index(load);
    // The buckets scanned to their end without a candidate: the window may grow under them. Buckets
    // with no queue yet (nothing of theirs in the window) wait without one, so a dispatch does not
    // make per-bucket state for every bucket of its clients.
    const waiting: Cursor[] = [];
    const unmade: number[] = [];
    /** Scans `bucket` to its first candidate; true once every wanted client has been found. */
    const scan = (bucket: number): boolean => {
      const cursor = this.cursor(bucket, now, load);
      if (cursor.offset >= 0) return found.add(owners[bucket] as ClientState).size >= wanted.size;
      waiting.push(cursor);
      return false;
    };
    for (let bucket = 0; bucket < this.buckets; bucket++) {
      const owner = owners[bucket];
      if (owner === undefined || !wanted.has(owner) || found.has(owner) || !this.free(bucket, owner, now)) continue;
      if (this.queues[bucket] === undefined) unmade.push(bucket);
      else if (scan(bucket)) return found;
    }
    while ((waiting.length > 0 || unmade.length > 0) && this.extend(maxOffset, load)) {
      let left = 0;
      for (const bucket of unmade) {
        if (found.has(owners[bucket] as ClientState)) continue;
        if (this.queues[bucket] === undefined) unmade[left++] = bucket;
        else if (scan(bucket)) return found;
      }
      unmade.length = left;
      let kept = 0;
      for (const cursor of waiting) {
        const owner = owners[cursor.bucket] as ClientState;
        if (found.has(owner)) continue;
        this.advance(cursor, now, load);
        if (cursor.offset < 0) waiting[kept++] = cursor;
        else if (found.add(owner).size >= wanted.size) return found;
      }
      waiting.length = kept;
    }
    return found;
  }

  /**
   * Hands `client` up to `max` messages of its buckets in offset order: a key's expired deliveries
   * again (attempt + 1), then its new messages. A delivery that would exceed the group's
   * `maxReconsumeTimes` goes to `dying` (hidden until moved to the dead-letter queue) and blocks its
   * key meanwhile.
   *
   * Each of the client's buckets that it may be handed now is scanned on its own (a key lives in one
   * bucket, so the order per key is the bucket's), and the scans are merged by offset: the cost is
   * the client's buckets, not the window.
   */
  override take(
    scope: ProgressScope,
    client: ClientState,
    max: number,
    invisibleMs: number,
    dying: Delivery[],
  ): Delivery[] {
    const taken: Delivery[] = [];
    if (max <= 0) return taken;
    const { now, group } = scope;
    const maxOffset = maxOffsetOf(scope.context.store, scope.info, scope.lmq);
    const { owners } = this.owners(group, scope.liteTopic);
    const load = this.keys(scope);
    const maxAttempt = group.config.maxReconsumeTimes;
    this.stop = this.barrier(now);
    this.index(load);
    // The client's buckets not scanned yet, by the first offset of their queue (a lower bound of
    // their first candidate): a bucket is scanned only once the merge reaches that offset, so a
    // client owning many buckets pays for the few it takes from, not for all of them.
    const pending = new MinHeap<{ offset: number; bucket: number }>(byOffset);
    const empty: number[] = [];
    for (let bucket = 0; bucket < this.buckets; bucket++) {
      if (owners[bucket] !== client) continue;
      const queue = this.queues[bucket];
      if (queue !== undefined && queue.start < queue.offsets.length)
        pending.push({ offset: queue.offsets[queue.start] as number, bucket });
      else empty.push(bucket);
    }
    const heap = new MinHeap<Cursor>(byOffset);
    const waiting: Cursor[] = [];
    for (;;) {
      const cursor = heap.peek();
      const first = pending.peek();
      if (first !== undefined && (cursor === undefined || first.offset < cursor.offset)) {
        const { bucket } = pending.pop() as { offset: number; bucket: number };
        if (!this.free(bucket, client, now)) continue;
        const scanned = this.cursor(bucket, now, load);
        if (scanned.offset >= 0) heap.push(scanned);
        else waiting.push(scanned);
        continue;
      }
      if (cursor === undefined) {
        // Every bucket of the client is scanned to the end of the window: grow it and go on.
        if ((waiting.length === 0 && empty.length === 0) || !this.extend(maxOffset, load)) return taken;
        let kept = 0;
        for (const w of waiting) {
          this.advance(w, now, load);
          if (w.offset >= 0) heap.push(w);
          else waiting[kept++] = w;
        }
        waiting.length = kept;
        kept = 0;
        for (const bucket of empty) {
          const queue = this.queues[bucket];
          if (queue !== undefined && queue.start < queue.offsets.length)
            pending.push({ offset: queue.offsets[queue.start] as number, bucket });
          else empty[kept++] = bucket;
        }
        empty.length = kept;
        continue;
      }
      const offset = cursor.offset;
      const delivery = this.delivery(offset);
      if (delivery === undefined) {
        const fresh: Delivery = { offset, attempt: 0, invisibleUntil: 0, acked: false, holder: undefined };
        this.deliveries.set(offset, fresh);
        this.hand(fresh, now + invisibleMs, client);
        cursor.queue.open.add(fresh);
        cursor.clean = false;
        taken.push(fresh);
      } else if (delivery.attempt >= maxAttempt) {
        if (delivery.holder !== undefined) delivery.holder.inflight--;
        delivery.holder = undefined;
        delivery.invisibleUntil = MOVING_TO_DEAD_LETTERS;
        dying.push(delivery);
        cursor.clean = false;
        block(cursor, this.hashAt(offset, load), delivery);
      } else {
        delivery.attempt++;
        this.hand(delivery, now + invisibleMs, client);
        cursor.queue.open.add(delivery);
        cursor.clean = false;
        taken.push(delivery);
      }
      if (taken.length >= max) return taken;
      // The rest of the key follows in this scan: a handed-out delivery blocks it only in later ones.
      cursor.at++;
      this.advance(cursor, now, load);
      if (cursor.offset >= 0) heap.replaceTop(cursor);
      else {
        heap.pop();
        waiting.push(cursor);
      }
    }
  }

  /** Buckets withheld from their owner while another holder's deliveries drain. */
  withheld(now: number, owners: readonly (ClientState | undefined)[], load: KeyLoader): WithheldBucket[] {
    // As a POP would: a held record not yet due for its retry bounds the index, so a query does not
    // read it again and push its retry back.
    this.stop = this.barrier(now);
    this.index(load);
    const out: WithheldBucket[] = [];
    for (let bucket = 0; bucket < this.buckets; bucket++) {
      const holder = this.holderOf(bucket, now);
      const owner = owners[bucket];
      if (holder === undefined || holder === owner) continue;
      out.push({ bucket, owner, holder: holder === UNKNOWN_HOLDER ? undefined : (holder as ClientState) });
    }
    return out;
  }

  override takeInOrder(): Delivery[] {
    throw new Error('assertion: a key-shared lite topic is taken by key, never in order');
  }

  /** A delivery whose time ran out may have changed owner meanwhile: hiding it again could make two holders. */
  override mayHideAgain(delivery: Delivery, now: number): boolean {
    return delivery.invisibleUntil > now;
  }

  override ownedBuckets(group: GroupState, liteTopic: string, client: ClientState): number[] {
    const buckets: number[] = [];
    this.owners(group, liteTopic).owners.forEach((owner, bucket) => {
      if (owner === client) buckets.push(bucket);
    });
    return buckets;
  }

  override withheldBuckets(scope: ProgressScope): WithheldBucket[] {
    return this.withheld(scope.now, this.owners(scope.group, scope.liteTopic).owners, this.keys(scope));
  }

  /** Something could be handed to someone: a hidden delivery expired, or the window can grow. */
  override deliverable(now: number, maxOffset: number): boolean {
    return (
      this.firstDeadline(Number.NEGATIVE_INFINITY) <= now ||
      this.next < maxOffset ||
      this.next - this.committed > this.open.size
    );
  }

  /**
   * The earliest invisible deadline after `now` of any unacked delivery: its end may unblock a key or
   * a bucket. Unlike plain FIFO, a deadline already passed does not hide later ones: other keys stay
   * hidden past it, and each of their ends needs its own wake.
   */
  override firstDeadline(now = Number.NEGATIVE_INFINITY): number {
    // A held offset's retry time is one too: the lite topic may go on past it then.
    let first = this.nextRetry(now);
    for (const delivery of this.open) {
      if (delivery.acked || this.delivery(delivery.offset) !== delivery) this.open.delete(delivery);
      else if (delivery.invisibleUntil > now && delivery.invisibleUntil < first) first = delivery.invisibleUntil;
    }
    return first;
  }

  /** Journal replay: deliveries come out of offset order, so a gap is skipped messages, not retired ones. */
  override restore(offset: number, attempt: number, invisibleUntil: number, acked: boolean): void {
    if (offset < this.committed) return;
    if (offset >= this.next) this.next = offset + 1;
    let delivery = this.delivery(offset);
    if (delivery === undefined) {
      delivery = { offset, attempt, invisibleUntil, acked: false, holder: undefined };
      this.deliveries.set(offset, delivery);
    }
    delivery.attempt = attempt;
    delivery.invisibleUntil = invisibleUntil;
    this.open.add(delivery);
    // An offset already in the bucket queues joins its bucket's open set now; others when indexed.
    const hash = offset < this.indexed ? this.hashes.get(offset) : undefined;
    if (hash !== undefined) {
      const queue = this.queueOf(bucketOf(hash, this.buckets));
      queue.open.add(delivery);
      queue.deadEnd = undefined;
    }
    if (acked) this.settle(offset);
  }

  override hold(offset: number, now: number, error: () => CorruptHold['error']): CorruptHold | undefined {
    const hold = super.hold(offset, now, error);
    if (hold !== undefined && offset < this.stop) this.stop = offset;
    return hold;
  }

  /** A released first delivery goes back to being a skipped offset of the window (`next` stays). */
  protected override unhand(offset: number): void {
    this.removeDelivery(offset);
  }

  protected override hand(delivery: Delivery, invisibleUntil: number, holder: { inflight: number }): void {
    super.hand(delivery, invisibleUntil, holder);
    this.open.add(delivery);
  }

  override dropAll(): void {
    super.dropAll();
    // Forgotten offsets in [committed, next) read as never handed out: no dead end holds any more.
    for (const queue of this.queues) if (queue !== undefined) queue.deadEnd = undefined;
  }

  protected override forget(offset: number): void {
    super.forget(offset);
    this.hashes.delete(offset);
  }
}

/** Heap order of a POP's merge: the smallest offset first. */
const byOffset = (a: { offset: number }, b: { offset: number }) => a.offset < b.offset;

/** Blocks key `hash` for the rest of `cursor`'s scan, because of hidden delivery `by`. */
function block(cursor: Cursor, hash: number, by: Delivery): void {
  if (cursor.blocked === undefined) cursor.blocked = new Set();
  cursor.blocked.add(hash);
  cursor.blockers.push(by);
}

/** Fresh progress on `liteTopic` from `start` for a group: per key when the group is key-shared. */
export function newProgress(config: GroupConfig | undefined, liteTopic: string, start: number): TopicProgress {
  const keyShared = config?.keyShared;
  return keyShared === undefined
    ? new TopicProgress(start, liteTopic)
    : new KeySharedProgress(start, liteTopic, keyShared.buckets, keyShared.windowMessages);
}

/**
 * A `KeyLoader` over one LMQ of the store. With `onCorrupt`, a corrupt record does not fail the load:
 * it is missing from what is returned and `onCorrupt` hears of it (corrupt.ts `readAround`).
 */
export function keyLoader(
  store: MessageStore,
  lmq: string,
  onCorrupt?: (offset: number, error: unknown) => void,
): KeyLoader {
  if (onCorrupt === undefined) return (from, max) => store.read(lmq, from, max);
  return (from, max) => readAround(store, lmq, from, max, onCorrupt);
}

/** Calls `visit` for each live client of `group` for `liteTopic`, in the group's own order. */
function forEachLiveClient(group: GroupState, liteTopic: string, visit: (client: ClientState) => void): void {
  for (const client of group.holdersOf(liteTopic) ?? []) if (!client.closed && !client.stalled) visit(client);
  for (const client of group.catchAll) if (!client.closed && !client.stalled) visit(client);
}

/** Whether the live clients of `group` for `liteTopic` are exactly `found`, in that order. */
function sameLiveClients(group: GroupState, liteTopic: string, found: readonly ClientState[]): boolean {
  let i = 0;
  for (const client of group.holdersOf(liteTopic) ?? []) {
    if (client.closed || client.stalled) continue;
    if (found[i++] !== client) return false;
  }
  for (const client of group.catchAll) {
    if (client.closed || client.stalled) continue;
    if (found[i++] !== client) return false;
  }
  return i === found.length;
}
