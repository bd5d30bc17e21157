/**
 * Events (docs/BROKER.md, "Dispatch"): "lite topic X has messages for group G", queued to exactly one client of G
 * at a time. A lite topic has at most one event per group: queued at a client, in the group's
 * backlog (no client had room), or none because nothing of it is deliverable (all handed out and
 * hidden, or nothing new). Every change that can make a lite topic deliverable — an arrival, an ack,
 * an invisible time passing, a subscription, a client leaving — calls `ready`, which queues the event
 * if it is missing, so events are never lost and never doubled. A progress that names its own
 * clients (key-shared) has one event at each of them instead.
 */
import { BacklogQueue } from './backlog.js';
import { MOVING_TO_DEAD_LETTERS, type TopicProgress } from './progress.js';
import { type BrokerContext, type ClientState, type GroupState, isExpiring, liteOf, maxOffsetOf } from './state.js';
import { lmqName } from './store.js';
import { NO_WAKE, WakeQueue } from './wakes.js';

/** Entries that no longer count a backlog queue may hold beyond twice the backlog before it is pruned. */
const PRUNE_SLACK = 64;

/** Pushes `progress` onto `queue`, pruning the queue once most of it no longer counts. */
function wait(queue: BacklogQueue, progress: TopicProgress, group: GroupState): void {
  queue.push(progress);
  pruneIfStale(queue, group);
}

/** Prunes `queue` once it holds more than twice the group's backlog (plus slack): most no longer counts. */
function pruneIfStale(queue: BacklogQueue, group: GroupState): void {
  if (queue.length > 2 * group.backlogSize + PRUNE_SLACK) queue.prune();
}

/**
 * `client` if it can take an event (open, not stalled, with room) and is less loaded than `best`
 * (queued events + unacked deliveries; a tie to the one chosen longest ago), else `best`. A function
 * of its own rather than a closure made on every dispatch.
 */
function lessLoaded(best: ClientState | undefined, client: ClientState, room: number): ClientState | undefined {
  if (client.closed || client.stalled || client.events.size >= room) return best;
  if (
    best === undefined ||
    client.load < best.load ||
    (client.load === best.load && client.lastChosen < best.lastChosen)
  ) {
    return client;
  }
  return best;
}

export class Dispatcher {
  /**
   * Counts retention passes. An LMQ's minimum offset moves only when retention deletes segments
   * (the broker runs it), so a lite topic asks the store for it once per pass instead of on every
   * `ready` and POP (a Node-API crossing each on disk).
   */
  private retained = 0;
  /** Every pending wake-up (see `armWake`), under one scheduler timer. */
  private readonly wakes: WakeQueue<GroupState>;

  constructor(private readonly context: BrokerContext) {
    this.wakes = new WakeQueue(context.scheduler, context.clock, (group, progress) => {
      progress.wake = NO_WAKE;
      progress.wakeAt = Number.POSITIVE_INFINITY;
      const at = this.context.clock.now();
      this.ready(group, progress.liteTopic, at);
      this.armWake(group, progress, at);
    });
  }

  /**
   * Queues the event of `liteTopic` for `group` if it has something deliverable and none is queued.
   * `storedBelow`, when given, is an offset the caller knows is stored (an arrival's offset + 1): below
   * it the store need not be asked for its `maxOffset`. `known` is the group's progress on the lite
   * topic when the caller has just looked it up (in the same synchronous step).
   */
  ready(
    group: GroupState,
    liteTopic: string,
    now = this.context.clock.now(),
    storedBelow = 0,
    known?: TopicProgress,
  ): void {
    const progress = known ?? group.progress.get(liteTopic);
    if (progress === undefined) return; // only a lite topic with progress is placed
    if (progress.queued) return;
    // An expiring lite topic's LMQ still holds its old messages until deleted; ready again after.
    if (!group.wants(progress) || isExpiring(group.parent, liteTopic)) {
      this.unbacklog(group, progress);
      return;
    }
    const { store } = this.context;
    const info = liteOf(group.parent, liteTopic, progress);
    const lmq = info?.lmq ?? lmqName(group.parent.name, liteTopic);
    this.skipRetired(progress, lmq);
    const clients = progress.readyClients({ context: this.context, group, liteTopic, lmq, info, now });
    if (clients !== undefined) {
      this.readyAt(group, progress, clients, now);
      return;
    }
    // One `now` for both decisions: with two readings, the clock could pass the deadline between
    // "not deliverable yet" and "deadline passed, no timer needed", and the lite topic would stay
    // blocked with neither an event nor a timer.
    if (
      !(progress.frontVisible(now) ?? (progress.next < storedBelow || progress.next < maxOffsetOf(store, info, lmq)))
    ) {
      this.unbacklog(group, progress);
      this.armWake(group, progress, now);
      return;
    }
    const client = this.choose(group, progress);
    if (client === undefined) this.toBacklog(group, progress);
    else this.enqueue(client, progress);
  }

  /** Skips offsets retention deleted, asking the store once per retention pass (see `retained`). */
  skipRetired(progress: TopicProgress, lmq: string): void {
    if (progress.retiredChecked === this.retained) return;
    progress.skipTo(this.context.store.minOffset(lmq));
    progress.retiredChecked = this.retained;
  }

  /**
   * `progress` was just made at an offset the store holds (an arrival's): nothing below it matters to
   * it, so it need not ask the store for the LMQ's minimum offset before the next retention pass.
   */
  startsAtStored(progress: TopicProgress): void {
    progress.retiredChecked = this.retained;
  }

  /** Retention deleted segments (or is about to): every lite topic checks its minimum offset again. */
  storeRetained(): void {
    this.retained++;
  }

  /**
   * Puts the lite topic of `progress` in the group's backlog, and in the drain list of the one client
   * that can take it (the exclusive holder, or the only subscriber of a group without catch-all
   * clients) or else in the group's open list. A POP then drains its own list and the open one,
   * never walking the lite topics that wait for other clients (with an exclusive group and full
   * clients that walk would be every waiting lite topic on every POP).
   */
  private toBacklog(group: GroupState, progress: TopicProgress): void {
    if (!progress.backlogged) {
      progress.backlogged = true;
      progress.backlogEntry = ++group.backlogEntries;
      progress.backlogList = undefined;
      group.backlogSize++;
      wait(group.backlog, progress, group);
    }
    let only: ClientState | undefined;
    if (group.catchAll.size === 0) only = progress.soleHolder;
    // The drain lists (`openBacklog`, `heldBacklog`): `backlogged` stays the one record of what
    // waits. A lite topic already waiting, offered again (a new message, no room yet), is not added
    // to the list it is in again: entries that count could not be pruned, and a list where a prune
    // leaves most entries would be pruned on every push. Its holders changing while it waits may
    // put it in a second list; a drain offers it once (the first offer takes it out of the backlog,
    // and the other entry no longer counts).
    let list: BacklogQueue;
    if (only === undefined) {
      group.openBacklog ??= new BacklogQueue();
      list = group.openBacklog;
    } else {
      only.heldBacklog ??= new BacklogQueue();
      list = only.heldBacklog;
    }
    if (progress.backlogList !== list) {
      progress.backlogList = list;
      wait(list, progress, group);
    }
  }

  /** Takes the lite topic of `progress` out of the group's backlog, if it is there. */
  unbacklog(group: GroupState, progress: TopicProgress): void {
    if (!progress.backlogged) return;
    progress.backlogged = false;
    group.backlogSize--;
  }

  /**
   * A progress that names its clients (key-shared: each client owning a bucket with something it may
   * be handed now) gets an event at each of them; a client without room leaves the lite topic in
   * the backlog.
   */
  private readyAt(group: GroupState, progress: TopicProgress, clients: ReadonlySet<ClientState>, now: number): void {
    const { limits } = this.context;
    let waiting = false;
    for (const client of clients) {
      if (client.events.size >= limits.maxEventsPerClient) waiting = true;
      else this.enqueue(client, progress);
    }
    if (waiting) this.toBacklog(group, progress);
    else this.unbacklog(group, progress);
    this.armWake(group, progress, now);
  }

  /**
   * The client to queue an event at: the exclusive holder, or among shared candidates with room and
   * not stalled the least loaded (queued events + unacked deliveries), ties to the one chosen longest ago.
   */
  private choose(group: GroupState, progress: TopicProgress): ClientState | undefined {
    const room = this.context.limits.maxEventsPerClient;
    let best: ClientState | undefined;
    const sole = progress.soleHolder;
    if (sole !== undefined) best = lessLoaded(best, sole, room);
    else if (progress.hasHolders) for (const client of progress.holders()) best = lessLoaded(best, client, room);
    const catchAll = group.catchAll.items;
    for (let i = 0; i < catchAll.length; i++) best = lessLoaded(best, catchAll[i] as ClientState, room);
    return best;
  }

  private enqueue(client: ClientState, progress: TopicProgress): void {
    const group = client.group;
    client.events.add(progress);
    this.unbacklog(group, progress);
    client.lastChosen = ++group.chooseCounter;
    if (client.events.size === 1) this.armStallCheck(client);
    this.wake(client);
  }

  /** Takes the event of `progress`'s lite topic off `client`'s queue (POP does this before it reads). */
  dequeue(client: ClientState, progress: TopicProgress): void {
    client.events.delete(progress);
  }

  /** Moves one event away from `client` (it no longer holds the lite topic, or it is leaving). */
  move(client: ClientState, liteTopic: string): void {
    const progress = client.group.progress.get(liteTopic);
    if (progress !== undefined && client.events.has(progress)) this.requeue(client, progress);
  }

  /** Moves all of `client`'s events to others, at once (close, stall). */
  withdraw(client: ClientState): void {
    for (const progress of [...client.events]) this.requeue(client, progress);
  }

  /** Takes the event of `progress` off `client`'s queue and offers it to the group again. */
  private requeue(client: ClientState, progress: TopicProgress): void {
    this.dequeue(client, progress);
    this.ready(client.group, progress.liteTopic, undefined, 0, progress);
  }

  /**
   * A client that takes every lite topic (a wildcard client without patterns) joins `group`: it gets
   * the backlog, and the first such client after a restart has every restored lite topic offered
   * once (nothing else asks for them by name), redeliveries that came due meanwhile included.
   */
  joinAll(group: GroupState, client: ClientState): void {
    group.catchAll.add(client);
    if (group.restoredUnoffered) {
      group.restoredUnoffered = false;
      for (const liteTopic of [...group.progress.keys()]) this.ready(group, liteTopic);
    }
    this.drainBacklog(group, client);
  }

  /**
   * Places backlog events while clients have room; with `client`, stops once that one is full. A
   * client that is not catch-all drains the lite topics only it can take, then the group's open ones;
   * otherwise (no client, or a catch-all one, which can take anything) the whole backlog is walked.
   */
  drainBacklog(group: GroupState, client?: ClientState, now = this.context.clock.now()): void {
    const open = group.openBacklog;
    const held = client?.heldBacklog;
    if (client === undefined || client.catchAll) {
      this.drain(group, group.backlog, client, now);
    } else {
      if (held !== undefined) this.drain(group, held, client, now);
      if (open !== undefined) this.drain(group, open, client, now);
    }
    // Entries that no longer wait (placed elsewhere, expired) are dropped as met; queues a drain does
    // not walk (the open list of a group with catch-all clients only, the whole backlog of one
    // without) are pruned here too, so each stays within a constant factor of the backlog.
    for (const list of [group.backlog, open, held]) if (list !== undefined) pruneIfStale(list, group);
  }

  /**
   * Offers each entry of `list` present now once, in order, taking each from the front: `ready`
   * puts a lite topic it cannot place back at the end of a list (waiting under a new number), where
   * the count stops the walk before reaching it again; entries of lite topics placed meanwhile no
   * longer count and are skipped.
   */
  private drain(group: GroupState, list: BacklogQueue, client: ClientState | undefined, now: number): void {
    const room = this.context.limits.maxEventsPerClient;
    for (let left = list.length; left > 0; left--) {
      if (client !== undefined && client.events.size >= room) return;
      // Undefined: no longer waiting under that entry, or forgotten by the group (its lite topic expired).
      const progress = list.shift();
      if (progress === undefined) continue;
      this.unbacklog(group, progress);
      this.ready(group, progress.liteTopic, now, 0, progress);
    }
  }

  /**
   * Keeps one wake-up per (group, lite topic) for the moment its first hidden delivery becomes
   * visible again; at that moment the lite topic is ready. None while nothing is hidden.
   */
  armWake(group: GroupState, progress: TopicProgress, now = this.context.clock.now()): void {
    const first = progress.firstDeadline(now);
    // A deadline already passed needs no timer: the lite topic is deliverable and `ready` queues it.
    // A delivery moving to the dead-letter queue is woken by the move, not by time.
    const deadline = first > now && first < MOVING_TO_DEAD_LETTERS ? first : Number.POSITIVE_INFINITY;
    if (deadline === progress.wakeAt) return;
    progress.wakeAt = deadline;
    progress.wake = deadline === Number.POSITIVE_INFINITY ? NO_WAKE : this.wakes.add(deadline, group, progress);
  }

  /** Runs waiting POPs of `client` once the current synchronous work is done (one wake per batch). */
  private wake(client: ClientState): void {
    if (client.waiters.length === 0 || client.wakeScheduled) return;
    client.wakeScheduled = true;
    queueMicrotask(() => {
      client.wakeScheduled = false;
      while (client.events.size > 0) {
        const waiter = client.waiters[0];
        if (waiter === undefined || !waiter.retry()) break;
      }
    });
  }

  /**
   * After the stall timeout, a client that has not POPped since its queue filled loses its events.
   * The check runs from the latest moment its queue filled (`stallSince`); a check already pending
   * is kept rather than replaced, and when it comes due before that moment it waits again until
   * then: a client whose queue empties and fills with every POP would otherwise make and cancel a
   * timer each time.
   */
  private armStallCheck(client: ClientState): void {
    const now = this.context.clock.now();
    client.stallSince = now;
    if (client.cancelStallCheck === undefined) this.stallCheckAt(client, now + this.context.stallTimeoutMs);
  }

  private stallCheckAt(client: ClientState, at: number): void {
    client.cancelStallCheck = this.context.scheduler.at(at, () => {
      client.cancelStallCheck = undefined;
      if (client.closed || client.events.size === 0) return;
      const now = this.context.clock.now();
      const due = client.stallSince + this.context.stallTimeoutMs;
      if (now < due) {
        this.stallCheckAt(client, due);
        return;
      }
      if (client.lastPopAt > client.stallSince || client.waiters.length > 0) {
        client.stallSince = now;
        this.stallCheckAt(client, now + this.context.stallTimeoutMs);
        return;
      }
      client.stalled = true;
      this.withdraw(client);
    });
  }
}
