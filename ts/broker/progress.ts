/**
 * Consumption progress of one group on one lite topic, with FIFO POP semantics (docs/BROKER.md, "POP, FIFO, ack"):
 * messages are handed out in offset order; while a handed-out message is unacked and invisible,
 * nothing after it is handed out; when its invisible time passes it is handed out again, before
 * anything after it, with its attempt (reconsume count) plus one. Acks advance `committed` past the
 * contiguous acked prefix. Every offset in [committed, next) has a `Delivery`.
 */
import type { BacklogQueue } from './backlog.js';
import { type CorruptHold, retryDelay } from './corrupt.js';
import type { EventQueue } from './events.js';
import { type BrokerContext, type ClientState, type GroupState, type LiteTopicInfo, maxOffsetOf } from './state.js';
import { NO_WAKE } from './wakes.js';

/**
 * A lite topic of a group as a POP or a dispatch sees it at one moment: what a progress needs, beyond
 * its own state, to hand out messages or to name the clients that may be handed some.
 */
export interface ProgressScope {
  readonly context: BrokerContext;
  readonly group: GroupState;
  readonly liteTopic: string;
  readonly lmq: string;
  /** The lite topic's kept info, when it has one (`liteOf`). */
  readonly info: LiteTopicInfo | undefined;
  readonly now: number;
}

/** A bucket of a key-shared lite topic withheld from its owner while another holder's deliveries drain. */
export interface WithheldBucket {
  bucket: number;
  owner: ClientState | undefined;
  /** The client holding hidden deliveries of it; undefined when restored from before a restart. */
  holder: ClientState | undefined;
}

/** One handed-out message of the lite topic. */
export interface Delivery {
  offset: number;
  /** Deliveries so far minus one: the `reconsumeTimes` of the current delivery. */
  attempt: number;
  /** Clock time (ms) from which it may be handed out again unless acked. */
  invisibleUntil: number;
  acked: boolean;
  /** Who holds the current delivery (for load counting); cleared when acked. */
  holder: { inflight: number } | undefined;
}

/** What `TopicProgress.holders` returns for a lite topic nobody holds (frozen: shared by all). */
const NO_HOLDERS: readonly ClientState[] = Object.freeze([]);

/** The invisible deadline of a delivery on its way to the dead-letter queue: never by time. */
export const MOVING_TO_DEAD_LETTERS = Number.MAX_SAFE_INTEGER;

/**
 * The slots of every empty window (frozen: never written, a window with a delivery has its own):
 * a window made for its first delivery, or emptied by its last ack, allocates no array for nothing.
 */
const NO_SLOTS = Object.freeze([]) as unknown as (Delivery | undefined)[];

/**
 * The deliveries of one progress by offset. FIFO hands offsets out in ascending runs and acks move
 * `committed` up from the front, so they sit in an array from the lowest kept offset, without a
 * hash per lookup; key-shared progress may leave gaps (undefined slots) and, replaying its journal,
 * set an offset below the lowest kept one (the array is then rebuilt). Emptied, it releases its
 * array: an idle progress keeps no storage for deliveries (a Map kept its table once made).
 */
export class DeliveryWindow {
  /** `slots[i]` is the delivery of offset `base + i`; slots below `head` are unused. */
  private slots: (Delivery | undefined)[] = NO_SLOTS;
  private base = 0;
  private head = 0;
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(offset: number): Delivery | undefined {
    const i = offset - this.base;
    return i >= this.head && i < this.slots.length ? this.slots[i] : undefined;
  }

  /**
   * Room for the offsets from `offset` on, `n` of them, about to be set in order (a run handed out
   * together): an empty window's array is made at that size instead of grown by each `set`.
   */
  reserve(offset: number, n: number): void {
    if (this.count !== 0 || n < 2) return;
    this.slots = new Array(n);
    this.base = offset;
    this.head = 0;
  }

  set(offset: number, delivery: Delivery): void {
    if (this.count === 0) {
      // Reserved from this offset (`reserve`), or a new array of one.
      if (this.slots === NO_SLOTS || offset !== this.base) {
        this.slots = [delivery];
        this.base = offset;
      } else {
        this.slots[0] = delivery;
      }
      this.head = 0;
      this.count = 1;
      return;
    }
    let i = offset - this.base;
    if (i < 0) {
      // Below everything kept: rebuild from `offset` (journal replay of key-shared progress only).
      const kept = this.slots.slice(this.head);
      const gap = this.base + this.head - offset;
      this.slots = [];
      for (let k = 0; k < gap; k++) this.slots.push(undefined);
      for (const slot of kept) this.slots.push(slot);
      this.base = offset;
      this.head = 0;
      i = 0;
    } else if (i < this.head) {
      this.head = i;
    }
    while (this.slots.length <= i) this.slots.push(undefined);
    if (this.slots[i] === undefined) this.count++;
    this.slots[i] = delivery;
  }

  delete(offset: number): boolean {
    const i = offset - this.base;
    if (i < this.head || i >= this.slots.length || this.slots[i] === undefined) return false;
    this.slots[i] = undefined;
    if (--this.count === 0) {
      this.slots = NO_SLOTS;
      this.head = 0;
      return true;
    }
    if (i === this.head) {
      while (this.slots[this.head] === undefined) this.head++;
      // Drop the unused front once it is most of the array (amortised O(1) per delivery).
      if (this.head >= 16 && this.head * 2 >= this.slots.length) {
        this.slots = this.slots.slice(this.head);
        this.base += this.head;
        this.head = 0;
      }
    }
    return true;
  }

  /** The deliveries kept, in offset order. */
  *values(): IterableIterator<Delivery> {
    for (let i = this.head; i < this.slots.length; i++) {
      const delivery = this.slots[i];
      if (delivery !== undefined) yield delivery;
    }
  }
}

/** What `ack` found. */
export type AckOutcome = 'acked' | 'already-acked' | 'stale' | 'unknown' | 'below-committed';

export class TopicProgress {
  /** Every offset below this is acked. */
  committed: number;
  /** The first offset never handed out. */
  next: number;
  /**
   * Deliveries of the offsets in [committed, next): made on first use, dropped once empty. A reopen
   * restores a progress per lite topic of every group, most of them with nothing in flight.
   */
  private window: DeliveryWindow | undefined;
  /**
   * The dispatcher's pending wake-up of the topic for when its first hidden message becomes visible
   * (wakes.ts): current while this holds its arming number; `NO_WAKE` cancels it.
   */
  wake = NO_WAKE;
  /** The deadline of that wake-up (Infinity: none). */
  wakeAt = Number.POSITIVE_INFINITY;
  /** The dispatcher's retention count when `skipTo` last ran (-1: never; see `Dispatcher.skipRetired`). */
  retiredChecked = -1;
  /**
   * The client event queue it waits in and its place there (events.ts), -1 for none; a key-shared
   * lite topic waiting at more clients keeps its places in the others in `otherEventQueues`.
   */
  eventQueue: EventQueue | undefined;
  eventPlace = -1;
  otherEventQueues: Map<EventQueue, number> | undefined;
  /**
   * Whether it waits in the group's backlog (`GroupState.backlog` holds exactly the progress that
   * says so). Kept here, next to the progress every dispatch looks up anyway, with its event queue
   * above, so a dispatch does not look the lite topic up again in one more map per question.
   */
  backlogged = false;
  /** The number it waits in the backlog under, while `backlogged` (backlog.ts). */
  backlogEntry = 0;
  /** The drain list it was last added to under that number (dispatcher.ts `toBacklog`). */
  backlogList: BacklogQueue | undefined;
  /**
   * The group's clients holding this lite topic: the one record of who holds it (the registry changes
   * it on subscribe and unsubscribe through `addHolder` and `dropHolder`), so a dispatch reads the
   * holders of the lite topic it is deciding on without looking its name up. One holder (always so
   * in an exclusive group) is `soleHolder`, with no set; two or more are `holderSet`; none, neither.
   */
  soleHolder: ClientState | undefined;
  private holderSet: Set<ClientState> | undefined;
  /** The group forgot this progress (its lite topic expired): an event still naming it is void. */
  removed = false;
  /** The lite topic's kept info (state.ts `liteOf`), from the first dispatch that found one. */
  lite: LiteTopicInfo | undefined;
  /** The lite topic's number in the state journal's hot records (journal.ts `JournalNamed`). */
  journalName = -1;
  journalFile = -1;
  /**
   * Offsets found corrupt (corrupt.ts), by offset; undefined while there is none, so a progress
   * without one pays a single check per POP. Nothing at or after a held offset is handed out until
   * its retry time; the first read after that either clears it or holds it again, longer.
   */
  private held: Map<number, CorruptHold> | undefined;

  constructor(
    start: number,
    /** The lite topic this is the progress on. */
    readonly liteTopic: string,
  ) {
    this.committed = start;
    this.next = start;
  }

  /**
   * Whether the group's one event of the lite topic is queued at a client (dispatcher.ts): then
   * nothing more is queued for it. Never so for key-shared progress, whose events are one per bucket
   * owner (`KeySharedProgress` says so).
   */
  get queued(): boolean {
    return this.eventQueue !== undefined;
  }

  /** Whether any client holds the lite topic. */
  get hasHolders(): boolean {
    return this.soleHolder !== undefined || this.holderSet !== undefined;
  }

  /**
   * The clients holding the lite topic: the set itself when there are two or more, so a caller that
   * adds or drops holders while it walks them walks a copy.
   */
  holders(): readonly ClientState[] | ReadonlySet<ClientState> {
    if (this.soleHolder !== undefined) return [this.soleHolder];
    return this.holderSet ?? NO_HOLDERS;
  }

  /** `client` holds the lite topic now (the registry, on subscribe). */
  addHolder(client: ClientState): void {
    const sole = this.soleHolder;
    if (sole === client || this.holderSet?.has(client) === true) return;
    if (sole === undefined && this.holderSet === undefined) {
      this.soleHolder = client;
      return;
    }
    this.holderSet ??= new Set(sole === undefined ? [] : [sole]);
    this.soleHolder = undefined;
    this.holderSet.add(client);
  }

  /** `client` no longer holds the lite topic (the registry, on unsubscribe). */
  dropHolder(client: ClientState): void {
    if (this.soleHolder === client) {
      this.soleHolder = undefined;
      return;
    }
    const set = this.holderSet;
    if (set === undefined || !set.delete(client)) return;
    if (set.size > 1) return;
    this.holderSet = undefined;
    this.soleHolder = set.values().next().value;
  }

  /** The deliveries, to add to (made if there is none; readers use `delivery` and `keptDeliveries`). */
  get deliveries(): DeliveryWindow {
    if (this.window === undefined) this.window = new DeliveryWindow();
    return this.window;
  }

  /** The kept delivery of `offset`, if any. */
  delivery(offset: number): Delivery | undefined {
    return this.window?.get(offset);
  }

  /** Every kept delivery (acked or not), in offset order. */
  keptDeliveries(): Iterable<Delivery> {
    return this.window?.values() ?? [];
  }

  /** Skips offsets the store no longer holds (retention) so the group does not wait for them. */
  skipTo(minOffset: number): void {
    if (this.committed >= minOffset) return;
    for (let offset = this.committed; offset < Math.min(minOffset, this.next); offset++) this.forget(offset);
    this.committed = minOffset;
    if (this.next < minOffset) this.next = minOffset;
  }

  /**
   * Whether something can be handed out now: an expired unacked delivery before any hidden one, or,
   * with nothing hidden, an offset below `maxOffset` never handed out.
   */
  deliverable(now: number, maxOffset: number): boolean {
    return this.frontVisible(now) ?? this.next < maxOffset;
  }

  /**
   * What the first unacked delivery decides: true when its invisible time has passed, false while
   * it is hidden, undefined when every delivery is acked (then only offsets never handed out can
   * be, which needs the store's `maxOffset`: the dispatcher asks the store only then).
   */
  frontVisible(now: number): boolean | undefined {
    const deadline = this.firstDeadline(now);
    return deadline === Number.POSITIVE_INFINITY ? undefined : deadline <= now;
  }

  /**
   * The earliest time something hidden becomes visible (the first unacked delivery), or Infinity.
   * `now` matters only to key-shared progress, which looks past deadlines already reached.
   */
  firstDeadline(_now?: number): number {
    // A held offset decides once everything before it is acked: the lite topic waits for its retry.
    const hold = this.held === undefined ? undefined : this.firstHold();
    const end = hold === undefined ? this.next : Math.min(this.next, hold.offset);
    for (let offset = this.committed; offset < end; offset++) {
      const delivery = this.delivery(offset) as Delivery;
      if (!delivery.acked) return delivery.invisibleUntil;
    }
    return hold === undefined ? Number.POSITIVE_INFINITY : hold.retryAt;
  }

  /** Whether an unacked delivery is still hidden: nothing of the topic may be handed out. */
  blocked(now: number): boolean {
    const deadline = this.firstDeadline();
    return deadline !== Number.POSITIVE_INFINITY && deadline > now;
  }

  /**
   * Hands `client` up to `max` messages of the lite topic, hidden for `invisibleMs`. A delivery that
   * would go past the group's `maxReconsumeTimes` goes to `dying` instead (hidden until moved to the
   * dead-letter queue). This progress: in FIFO order, see `takeInOrder`.
   */
  take(scope: ProgressScope, client: ClientState, max: number, invisibleMs: number, dying: Delivery[]): Delivery[] {
    const maxOffset = maxOffsetOf(scope.context.store, scope.info, scope.lmq);
    return this.takeInOrder(
      scope.now,
      max,
      maxOffset,
      invisibleMs,
      client,
      scope.group.config.maxReconsumeTimes,
      dying,
    );
  }

  /**
   * The clients an event of the lite topic is queued at, when the progress decides that itself; this
   * progress leaves it to the dispatcher (undefined): one event for the whole group, at one of the
   * lite topic's holders.
   */
  readyClients(_scope: ProgressScope): ReadonlySet<ClientState> | undefined {
    return undefined;
  }

  /** Whether `changeInvisibleTime` may hide `delivery` again once its invisible time has passed. */
  mayHideAgain(_delivery: Delivery, _now: number): boolean {
    return true;
  }

  /** The buckets of the lite topic `client` owns, for progress that hands out by key; else undefined. */
  ownedBuckets(_group: GroupState, _liteTopic: string, _client: ClientState): number[] | undefined {
    return undefined;
  }

  /** Buckets withheld from their owner (progress that hands out by key); none here. */
  withheldBuckets(_scope: ProgressScope): WithheldBucket[] {
    return [];
  }

  /**
   * Hands out up to `max` messages in FIFO order: expired deliveries first (attempt + 1), then new
   * offsets below `maxOffset`; stops at the first hidden one.
   */
  protected takeInOrder(
    now: number,
    max: number,
    maxOffset: number,
    invisibleMs: number,
    holder: { inflight: number },
    maxAttempt = Number.POSITIVE_INFINITY,
    dying: Delivery[] = [],
  ): Delivery[] {
    // Made with its first delivery: most takes hand out one message, and an array grown by `push`
    // from empty reserves room for seventeen.
    let taken: Delivery[] | undefined;
    const stop = this.held === undefined ? Number.POSITIVE_INFINITY : this.barrier(now);
    const end = Math.min(this.next, stop);
    for (let offset = this.committed; offset < end && (taken?.length ?? 0) < max; offset++) {
      const delivery = this.delivery(offset) as Delivery;
      if (delivery.acked) continue;
      if (delivery.invisibleUntil > now) return taken ?? [];
      if (delivery.attempt >= maxAttempt) {
        // Delivering it again would go beyond maxReconsumeTimes: it goes to the dead-letter queue,
        // hidden (and blocking its lite topic) until the move is done.
        if (delivery.holder !== undefined) delivery.holder.inflight--;
        delivery.holder = undefined;
        delivery.invisibleUntil = MOVING_TO_DEAD_LETTERS;
        dying.push(delivery);
        return taken ?? [];
      }
      delivery.attempt++;
      this.hand(delivery, now + invisibleMs, holder);
      if (taken === undefined) taken = [delivery];
      else taken.push(delivery);
    }
    // Offsets never handed out, as one run: the arrays holding it are sized for it once (an array
    // grown by `push` past its first element reserves room for seventeen more).
    const had = taken?.length ?? 0;
    const fresh = Math.min(max - had, Math.min(maxOffset, stop) - this.next);
    if (fresh <= 0) return taken ?? [];
    if (taken === undefined) taken = new Array<Delivery>(fresh);
    else taken.length = had + fresh;
    const window = this.deliveries;
    window.reserve(this.next, fresh);
    for (let k = 0; k < fresh; k++) {
      const delivery: Delivery = { offset: this.next, attempt: 0, invisibleUntil: 0, acked: false, holder: undefined };
      this.hand(delivery, now + invisibleMs, holder);
      window.set(this.next, delivery);
      this.next++;
      taken[had + k] = delivery;
    }
    return taken;
  }

  protected hand(delivery: Delivery, invisibleUntil: number, holder: { inflight: number }): void {
    if (delivery.holder !== undefined) delivery.holder.inflight--;
    delivery.holder = holder;
    holder.inflight++;
    delivery.invisibleUntil = invisibleUntil;
  }

  /** Acks one delivery if `attempt` is its current one; advances `committed` over the acked prefix. */
  ack(offset: number, attempt: number): AckOutcome {
    if (offset < this.committed) return 'below-committed';
    const delivery = this.delivery(offset);
    if (delivery === undefined) return 'unknown';
    if (delivery.attempt !== attempt) return 'stale';
    if (delivery.acked) return 'already-acked';
    delivery.acked = true;
    if (delivery.holder !== undefined) delivery.holder.inflight--;
    delivery.holder = undefined;
    while (this.delivery(this.committed)?.acked === true) this.forget(this.committed++);
    return 'acked';
  }

  /**
   * Replays a delivery from the state journal: `offset` handed out for the `attempt`-th time, hidden
   * until `invisibleUntil`. An offset past `next` means the group skipped retired offsets first.
   */
  restore(offset: number, attempt: number, invisibleUntil: number, acked: boolean): void {
    if (offset < this.committed) return;
    if (offset > this.next) this.skipTo(offset);
    let delivery = this.delivery(offset);
    if (delivery === undefined) {
      delivery = { offset, attempt, invisibleUntil, acked: false, holder: undefined };
      this.deliveries.set(offset, delivery);
      if (offset === this.next) this.next++;
    }
    delivery.attempt = attempt;
    delivery.invisibleUntil = invisibleUntil;
    if (acked) this.settle(offset);
  }

  /** Marks `offset` done whatever its attempt (journal replay, dead letters); advances `committed`. */
  settle(offset: number): void {
    const delivery = this.delivery(offset);
    if (delivery === undefined || delivery.acked) return;
    delivery.acked = true;
    if (delivery.holder !== undefined) delivery.holder.inflight--;
    delivery.holder = undefined;
    while (this.delivery(this.committed)?.acked === true) this.forget(this.committed++);
  }

  /**
   * Undoes the hand-out of `delivery` by a POP that did not deliver it (a corrupt record at or before
   * it): a first delivery is taken back as if never handed out, a redelivery gets its attempt back
   * and is visible again. Its holder no longer counts it, and the journal never heard of it.
   */
  release(delivery: Delivery, now: number): void {
    if (delivery.holder !== undefined) delivery.holder.inflight--;
    delivery.holder = undefined;
    if (delivery.attempt > 0) {
      delivery.attempt--;
      delivery.invisibleUntil = now;
    } else {
      this.unhand(delivery.offset);
    }
  }

  /**
   * Takes back the first delivery of `offset`. FIFO releases a suffix of what it handed out, so
   * `next` moves back to the lowest offset released and [committed, next) keeps a delivery each.
   */
  protected unhand(offset: number): void {
    this.removeDelivery(offset);
    if (offset < this.next) this.next = offset;
  }

  /** Removes the kept delivery of `offset`, with no other change. */
  protected removeDelivery(offset: number): void {
    const window = this.window;
    if (window === undefined) return;
    window.delete(offset);
    if (window.size === 0) this.window = undefined;
  }

  /** The hold on `offset`, if it is held as corrupt. */
  corruptHold(offset: number): CorruptHold | undefined {
    return this.held?.get(offset);
  }

  /** Every offset held as corrupt (at or after `committed`), in offset order. */
  corruptHolds(): CorruptHold[] {
    if (this.held === undefined) return [];
    this.dropPassedHolds();
    return [...(this.held?.values() ?? [])].sort((a, b) => a.offset - b.offset);
  }

  /**
   * Holds `offset` after a failed read at `now`: nothing at or after it is handed out until its retry
   * time, which doubles with every failure. Undefined (nothing held) when the offset is already done.
   */
  hold(offset: number, now: number, error: () => CorruptHold['error']): CorruptHold | undefined {
    if (offset < this.committed || this.delivery(offset)?.acked === true) return undefined;
    if (this.held === undefined) this.held = new Map();
    let hold = this.held.get(offset);
    if (hold === undefined) {
      hold = { offset, error: error(), foundAt: now, failures: 0, retryAt: now };
      this.held.set(offset, hold);
    }
    hold.failures++;
    hold.retryAt = now + retryDelay(hold.failures);
    return hold;
  }

  /** `offset` was read after all: it is no longer held. */
  unhold(offset: number): void {
    if (this.held === undefined || !this.held.delete(offset)) return;
    if (this.held.size === 0) this.held = undefined;
  }

  /**
   * Moves the group past the held `offset` as if it had been acked (`admin.skipCorrupt`, and its
   * journal record on replay): the offset gets an acked delivery, so `committed` passes it once
   * everything before it is acked.
   */
  skipCorrupt(offset: number): void {
    this.unhold(offset);
    if (offset < this.committed) return;
    if (this.delivery(offset) === undefined) this.restore(offset, 0, 0, true);
    else this.settle(offset);
  }

  /** The lowest held offset whose retry time is still ahead: nothing from it on is handed out. */
  protected barrier(now: number): number {
    this.dropPassedHolds();
    let stop = Number.POSITIVE_INFINITY;
    if (this.held !== undefined) {
      for (const hold of this.held.values()) if (hold.retryAt > now && hold.offset < stop) stop = hold.offset;
    }
    return stop;
  }

  /** The earliest retry time of a hold after `after`, or Infinity. */
  protected nextRetry(after: number): number {
    let first = Number.POSITIVE_INFINITY;
    if (this.held !== undefined) {
      for (const hold of this.held.values()) if (hold.retryAt > after && hold.retryAt < first) first = hold.retryAt;
    }
    return first;
  }

  /** The lowest hold, or undefined. */
  protected firstHold(): CorruptHold | undefined {
    this.dropPassedHolds();
    let first: CorruptHold | undefined;
    if (this.held !== undefined)
      for (const hold of this.held.values()) if (first === undefined || hold.offset < first.offset) first = hold;
    return first;
  }

  /** Forgets holds the group has moved past (skipped, acked, retired by retention). */
  private dropPassedHolds(): void {
    if (this.held === undefined) return;
    for (const offset of this.held.keys()) {
      if (offset < this.committed || this.delivery(offset)?.acked === true) this.held.delete(offset);
    }
    if (this.held.size === 0) this.held = undefined;
  }

  /** Forgets every delivery (the lite topic expired); their holders no longer count them. */
  dropAll(): void {
    this.held = undefined;
    for (let offset = this.committed; offset < this.next; offset++) this.forget(offset);
    this.wake = NO_WAKE;
    this.wakeAt = Number.POSITIVE_INFINITY;
  }

  /** The current, unacked delivery of `offset` at `attempt`, else undefined. */
  current(offset: number, attempt: number): Delivery | undefined {
    const delivery = this.delivery(offset);
    return delivery !== undefined && delivery.attempt === attempt && !delivery.acked ? delivery : undefined;
  }

  protected forget(offset: number): void {
    const window = this.window;
    if (window === undefined) return;
    const delivery = window.get(offset);
    if (delivery?.holder !== undefined && !delivery.acked) delivery.holder.inflight--;
    window.delete(offset);
    if (window.size === 0) this.window = undefined; // nothing in flight: keep no storage for deliveries
  }
}
