/**
 * A key-shared group's progress on one lite topic (DESIGN.md §9). Like `TopicProgress` it keeps the
 * committed offset and every delivery after it, and commits only the contiguous acked prefix; but
 * messages are handed out per key instead of per lite topic, so offsets are handed out out of order.
 *
 * The window: every offset in [committed, next) has been examined — it either has a `Delivery` or is
 * skipped (never handed out yet, waiting for its key or bucket). `next` never passes
 * `committed + windowMessages`, so the memory for skipped offsets is bounded: one `hashes` entry
 * (offset → 32-bit key hash) per offset in the window. Keys are told apart by that 32-bit hash: two
 * keys with the same hash are ordered as one key, a stricter order, never a weaker one.
 *
 * The rules, checked on a walk of the window in offset order at each POP and dispatch:
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
 * The hashes come from the stored messages: `murmur3(utf8(key)) & 0xFFFF` computed from the stored key
 * is the very value the commit log keeps in the key's index entry (docs/FORMAT.md), but `CommitLog.read`
 * does not return index entries, and a message read once per window costs less than a new read path.
 */
import { assignBuckets, bucketOf, keyHash, keySharedMembers } from './key-shared.js';
import { type Delivery, MOVING_TO_DEAD_LETTERS, TopicProgress } from './offsets.js';
import type { ClientState, GroupConfig, GroupState } from './state.js';
import type { MessageStore } from './store.js';

/** Reads messages of the lite topic from `from` (what `MessageStore.read` gives). */
export type KeyLoader = (from: number, max: number) => readonly { offset: number; key: string | undefined }[];

/** Messages read from the store per batch while the window grows. */
const LOAD_BATCH_MESSAGES = 256;

/** The holder of restored deliveries: nobody now open, so their buckets wait for them. */
const UNKNOWN_HOLDER = Object.freeze({ inflight: 0 }) as { inflight: number };

const CONTINUE = 0;
const BLOCK_KEY = 1;
const STOP = 2;
type Verdict = typeof CONTINUE | typeof BLOCK_KEY | typeof STOP;

/** A bucket withheld from its owner while another client's deliveries of it drain. */
export interface WithheldBucket {
  bucket: number;
  owner: ClientState | undefined;
  /** The client holding hidden deliveries of it; undefined when restored from before a restart. */
  holder: ClientState | undefined;
}

export class KeySharedProgress extends TopicProgress {
  /** Offset → 32-bit key hash, for offsets of the window that were read. */
  readonly hashes = new Map<number, number>();
  /** Unacked deliveries; entries acked or forgotten since are dropped when met. */
  private readonly open = new Set<Delivery>();
  private assignment: { signature: string; owners: (ClientState | undefined)[] } | undefined;

  constructor(
    start: number,
    readonly buckets: number,
    readonly windowMessages: number,
  ) {
    super(start);
  }

  /** Per bucket, its owner among `members` (sorted by client id); cached while membership holds. */
  owners(members: readonly ClientState[], assign: (ids: string[]) => Int32Array): (ClientState | undefined)[] {
    const signature = members.map((m) => m.id).join(',');
    if (this.assignment?.signature !== signature) {
      const indexes = assign(members.map((m) => m.clientId));
      const owners = Array.from(indexes, (i) => (i < 0 ? undefined : members[i]));
      this.assignment = { signature, owners };
    }
    return this.assignment.owners;
  }

  /** Per bucket, who holds a hidden unacked delivery of it (UNKNOWN_HOLDER for restored ones). */
  private holders(now: number, load: KeyLoader): Map<number, { inflight: number }> {
    const holders = new Map<number, { inflight: number }>();
    for (const delivery of this.open) {
      if (delivery.acked || this.deliveries.get(delivery.offset) !== delivery) {
        this.open.delete(delivery);
        continue;
      }
      // A delivery moving to the dead-letter queue blocks its key, but is held by no client.
      if (delivery.invisibleUntil <= now || delivery.invisibleUntil === MOVING_TO_DEAD_LETTERS) continue;
      const bucket = bucketOf(this.hashAt(delivery.offset, load), this.buckets);
      const holder = delivery.holder ?? UNKNOWN_HOLDER;
      const known = holders.get(bucket);
      holders.set(bucket, known === undefined || known === holder ? holder : UNKNOWN_HOLDER);
    }
    return holders;
  }

  /** The key hash of `offset` (in the window), read from the store if not known (after a restart). */
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

  /** Grows the window by one batch read from the store; false when it cannot grow. */
  private extend(maxOffset: number, load: KeyLoader): boolean {
    const limit = Math.min(maxOffset, this.committed + this.windowMessages);
    if (this.next >= limit) return false;
    const from = this.next;
    const messages = load(from, Math.min(LOAD_BATCH_MESSAGES, limit - from));
    for (const message of messages) {
      if (message.offset >= limit) break;
      this.hashes.set(message.offset, keyHash(message.key));
      this.next = message.offset + 1;
    }
    return this.next > from;
  }

  /**
   * Walks the window in offset order (growing it as far as allowed) and offers `visit` each message
   * that its bucket's owner may be handed now, with its delivery if it was handed out before.
   */
  private walk(
    now: number,
    maxOffset: number,
    owners: readonly (ClientState | undefined)[],
    load: KeyLoader,
    visit: (offset: number, owner: ClientState, delivery: Delivery | undefined) => Verdict,
  ): void {
    const holders = this.holders(now, load);
    const blocked = new Set<number>();
    for (let offset = this.committed; ; offset++) {
      if (offset >= this.next && !this.extend(maxOffset, load)) return;
      const delivery = this.deliveries.get(offset);
      if (delivery?.acked === true) continue;
      const hash = this.hashAt(offset, load);
      if (blocked.has(hash)) continue;
      const bucket = bucketOf(hash, this.buckets);
      const owner = owners[bucket];
      const holder = holders.get(bucket);
      const hidden = delivery !== undefined && delivery.invisibleUntil > now;
      if (owner === undefined || hidden || (holder !== undefined && holder !== owner)) {
        blocked.add(hash);
        continue;
      }
      const verdict = visit(offset, owner, delivery);
      if (verdict === STOP) return;
      if (verdict === BLOCK_KEY) blocked.add(hash);
    }
  }

  /** The clients that could be handed something now (the dispatcher queues them an event). */
  readyClients(
    now: number,
    maxOffset: number,
    owners: readonly (ClientState | undefined)[],
    memberCount: number,
    load: KeyLoader,
  ): Set<ClientState> {
    const found = new Set<ClientState>();
    if (memberCount === 0) return found;
    this.walk(now, maxOffset, owners, load, (_offset, owner) => {
      found.add(owner);
      return found.size >= memberCount ? STOP : BLOCK_KEY;
    });
    return found;
  }

  /**
   * Hands `client` up to `max` messages of its buckets in offset order: a key's expired deliveries
   * again (attempt + 1), then its new messages. A delivery that would exceed `maxAttempt` goes to
   * `dying` (hidden until moved to the dead-letter queue) and blocks its key meanwhile.
   */
  takeFor(
    client: ClientState,
    now: number,
    max: number,
    maxOffset: number,
    invisibleMs: number,
    owners: readonly (ClientState | undefined)[],
    load: KeyLoader,
    maxAttempt: number,
    dying: Delivery[],
  ): Delivery[] {
    const taken: Delivery[] = [];
    if (max <= 0) return taken;
    this.walk(now, maxOffset, owners, load, (offset, owner, delivery) => {
      if (owner !== client) return BLOCK_KEY;
      if (delivery === undefined) {
        const fresh: Delivery = { offset, attempt: 0, invisibleUntil: 0, acked: false, holder: undefined };
        this.deliveries.set(offset, fresh);
        this.hand(fresh, now + invisibleMs, client);
        taken.push(fresh);
      } else if (delivery.attempt >= maxAttempt) {
        if (delivery.holder !== undefined) delivery.holder.inflight--;
        delivery.holder = undefined;
        delivery.invisibleUntil = MOVING_TO_DEAD_LETTERS;
        dying.push(delivery);
        return BLOCK_KEY;
      } else {
        delivery.attempt++;
        this.hand(delivery, now + invisibleMs, client);
        taken.push(delivery);
      }
      return taken.length >= max ? STOP : CONTINUE;
    });
    return taken;
  }

  /** Buckets withheld from their owner while another holder's deliveries drain. */
  withheld(now: number, owners: readonly (ClientState | undefined)[], load: KeyLoader): WithheldBucket[] {
    const out: WithheldBucket[] = [];
    for (const [bucket, holder] of this.holders(now, load)) {
      const owner = owners[bucket];
      if (holder === owner) continue;
      out.push({ bucket, owner, holder: holder === UNKNOWN_HOLDER ? undefined : (holder as ClientState) });
    }
    return out.sort((a, b) => a.bucket - b.bucket);
  }

  override take(): Delivery[] {
    throw new Error('assertion: a key-shared lite topic is taken with takeFor');
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
    let first = Number.POSITIVE_INFINITY;
    for (const delivery of this.open) {
      if (delivery.acked || this.deliveries.get(delivery.offset) !== delivery) this.open.delete(delivery);
      else if (delivery.invisibleUntil > now && delivery.invisibleUntil < first) first = delivery.invisibleUntil;
    }
    return first;
  }

  /** Journal replay: deliveries come out of offset order, so a gap is skipped messages, not retired ones. */
  override restore(offset: number, attempt: number, invisibleUntil: number, acked: boolean): void {
    if (offset < this.committed) return;
    if (offset >= this.next) this.next = offset + 1;
    let delivery = this.deliveries.get(offset);
    if (delivery === undefined) {
      delivery = { offset, attempt, invisibleUntil, acked: false, holder: undefined };
      this.deliveries.set(offset, delivery);
    }
    delivery.attempt = attempt;
    delivery.invisibleUntil = invisibleUntil;
    this.open.add(delivery);
    if (acked) this.settle(offset);
  }

  protected override hand(delivery: Delivery, invisibleUntil: number, holder: { inflight: number }): void {
    super.hand(delivery, invisibleUntil, holder);
    this.open.add(delivery);
  }

  protected override forget(offset: number): void {
    super.forget(offset);
    this.hashes.delete(offset);
  }
}

/** Fresh progress from `start` for a group: per key when the group is key-shared. */
export function newProgress(config: GroupConfig | undefined, start: number): TopicProgress {
  const keyShared = config?.keyShared;
  return keyShared === undefined
    ? new TopicProgress(start)
    : new KeySharedProgress(start, keyShared.buckets, keyShared.windowMessages);
}

/** A `KeyLoader` over one LMQ of the store. */
export function keyLoader(store: MessageStore, lmq: string): KeyLoader {
  return (from, max) => store.read(lmq, from, max);
}

/** The owner of each bucket of `liteTopic` among the group's live clients of it. */
export function bucketOwners(
  progress: KeySharedProgress,
  group: GroupState,
  liteTopic: string,
): { owners: (ClientState | undefined)[]; members: ClientState[] } {
  const members = keySharedMembers(group, liteTopic);
  const owners = progress.owners(members, (ids) => assignBuckets(ids, liteTopic, progress.buckets));
  return { owners, members };
}
