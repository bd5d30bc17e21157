/**
 * Self-maintenance (docs/BROKER.md, "Expiry and retention", "Sessions"): idle lite topics expire, old segments retire, silent clients are
 * closed. Everything runs on the broker's scheduler, off the send and POP paths: one maintenance
 * timer every `maintenanceIntervalMs` (expiry, then retention) and one session timer per client.
 * With a manual clock they run on `broker.tick()`; `broker.runMaintenance()` runs a pass now.
 *
 * Expiry asks each parent's trie for names with no message since `now - liteTopicExpirationMs` (`idleSince`
 * answers from its idle index, without a scan of all lite topics), at most `EXPIRY_BATCH` per parent
 * per pass, in slices of `EXPIRY_SLICE` with a turn of the event loop between them (the idle index is
 * asked again for each slice), so a sweep never holds the loop for long. A send records its time
 * before it appends, and a name the trie offers is checked against that record (`idleOf`), so a topic
 * written to within the window is never chosen. An expired lite topic leaves the broker's memory at once (trie entry, progress,
 * in-flight deliveries, queued events, subscriptions, whose holders hear `unsubscribed` with reason
 * `expired`); its `drop` record is made durable before its LMQ is deleted, and sends to it wait
 * until then, so its new first message starts the lite topic again at offset 0 for everyone.
 */
import type { Dispatcher } from './dispatcher.js';
import type { TopicProgress } from './progress.js';
import type { Registry } from './registry.js';
import { type BrokerContext, type ClientState, dropLite, type ParentTopic } from './state.js';
import { lmqName } from './store.js';

/** Lite topics expired per parent per maintenance pass; more wait for the next pass. */
export const EXPIRY_BATCH = 1000;
/**
 * Lite topics forgotten (or LMQs deleted) per turn of the event loop: a pass yields between slices,
 * so sends and POPs are served in between and a sweep never holds the loop for long.
 */
export const EXPIRY_SLICE = 16;
/**
 * Lite topics of each group the revive safety net looks at per maintenance pass (see `revive`): a
 * pass over them holds the event loop well under a millisecond.
 */
export const REVIVE_SLICE = 4096;

/**
 * Those of `offered` (names the trie holds as last active before `cutoff`) with no send since
 * either: a send records its time in the lite topic's `LiteTopicInfo`, not in the trie, so a name
 * the trie offers may have been written since; its time goes to the trie now, which then no longer
 * offers it. Each lite topic costs one trie update per expiration window at most this way, against
 * one per send before.
 */
function idleOf(parent: ParentTopic, offered: readonly string[], cutoff: number): string[] {
  const idle: string[] = [];
  for (const name of offered) {
    const info = parent.lite.get(name);
    if (info !== undefined && info.lastWrite > info.touched) {
      parent.trie.touch(name, info.lastWrite);
      info.touched = info.lastWrite;
      if (info.lastWrite >= cutoff) continue;
    }
    idle.push(name);
  }
  return idle;
}

/** Lets the event loop run what is due (I/O, timers) before the next slice of background work. */
export function yieldTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export const DEFAULT_MAINTENANCE_INTERVAL_MS = 1000;
/** A client that makes no call for this long is closed; 0 turns sessions off. */
export const DEFAULT_SESSION_TIMEOUT_MS = 120_000;

export interface RetentionPolicy {
  /** Segments whose newest message is older than this are deleted. */
  maxAgeMs?: number;
  /** The oldest segments are deleted while the log is larger than this. */
  maxBytes?: number;
}

export interface LifecycleOptions {
  retention: RetentionPolicy | undefined;
  maintenanceIntervalMs: number;
  sessionTimeoutMs: number;
}

export class Lifecycle {
  private running: Promise<void> | undefined;
  private cancelTimer: (() => void) | undefined;
  /** The broker closed: a pass under way stops at its next slice. */
  private stopped = false;
  /** The last failure of a background pass (admin reports it). */
  lastError: unknown;
  /** Lite topics expired since open. */
  expiredCount = 0;

  constructor(
    private readonly context: BrokerContext,
    private readonly dispatcher: Dispatcher,
    private readonly registry: Registry,
    private readonly parents: ReadonlyMap<string, ParentTopic>,
    private readonly options: LifecycleOptions,
  ) {}

  /** Arms the maintenance timer. */
  start(): void {
    const { clock, scheduler } = this.context;
    this.cancelTimer = scheduler.at(clock.now() + this.options.maintenanceIntervalMs, () => {
      this.start();
      if (this.running === undefined) this.runMaintenance().catch(() => undefined);
    });
  }

  stop(): void {
    this.stopped = true;
    this.cancelTimer?.();
  }

  /** Resolves once the running pass, if any, has ended (whatever its outcome). */
  async idle(): Promise<void> {
    await this.running?.catch(() => undefined);
  }

  /** Runs one maintenance pass now, or waits for the one running. */
  runMaintenance(): Promise<void> {
    if (this.running === undefined) {
      this.running = this.pass()
        .catch((error: unknown) => {
          this.lastError = error;
          this.context.report(error, 'maintenance');
          throw error;
        })
        .finally(() => {
          this.running = undefined;
        });
    }
    return this.running;
  }

  private async pass(): Promise<void> {
    const now = this.context.clock.now();
    const deletions: Promise<void>[] = [];
    for (const parent of [...this.parents.values()]) {
      // Slice by slice, asking the idle index again each time: a lite topic written to while the
      // pass yielded is no longer idle and is not chosen.
      for (let expired = 0; expired < EXPIRY_BATCH; ) {
        const expiration = parent.liteTopicExpirationMs;
        if (expiration === undefined || expiration <= 0 || now - expiration < 0) break;
        if (this.stopped || this.parents.get(parent.name) !== parent) break;
        // Idle for `expiration` or more: last message at or before now - expiration.
        const cutoff = now - expiration + 1;
        const offered = parent.trie.idleSince(cutoff, Math.min(EXPIRY_SLICE, EXPIRY_BATCH - expired));
        if (offered.length === 0) break;
        const names = idleOf(parent, offered, cutoff);
        if (names.length > 0) {
          const deletion = this.expire(parent, names);
          // Handled now, reported by the Promise.all below: a slice failing while later slices are
          // still yielding must not surface as an unhandled rejection.
          deletion.catch(() => undefined);
          deletions.push(deletion);
          expired += names.length;
        }
        await yieldTurn();
      }
    }
    await Promise.all(deletions);
    if (this.stopped) return;
    this.revive(now);
    const retention = this.options.retention;
    const { store } = this.context;
    if (retention !== undefined) {
      // Before and after: a lite topic handed out offsets while segments were going re-checks.
      this.dispatcher.storeRetained();
      await store.retain(retention);
      this.dispatcher.storeRetained();
    }
  }

  /**
   * The safety net under redelivery (RocketMQ keeps a revive service for the same reason): a lite
   * topic whose first unacked delivery is past its invisible time but that has no event queued, no
   * backlog entry and no wake timer is offered again. The wake timer does this; this pass guarantees
   * it even if a timer is lost (one was, to a clock race now fixed: docs/BROKER.md, "Redelivery
   * wake-ups"). Cost: each pass looks at the next `REVIVE_SLICE` lite topics of each group, from
   * where the last pass stopped, so a pass holds the event loop for a bounded time however many lite
   * topics there are, and every one is looked at once per `size / REVIVE_SLICE` passes.
   */
  private revive(now: number): void {
    for (const parent of this.parents.values()) {
      for (const group of parent.groups) {
        if (group.keyShared !== undefined) continue; // key-shared keeps its own per-key wakes
        // A Map iterator goes on over entries added since and skips deleted ones; once at the end it
        // stays there, so the next pass starts again from the first lite topic.
        let cursor: Iterator<TopicProgress> | undefined = group.reviveCursor ?? group.progress.values();
        for (let left = REVIVE_SLICE; left > 0; left--) {
          const step = cursor.next();
          if (step.done === true) {
            cursor = undefined;
            break;
          }
          const progress = step.value;
          if (progress.committed >= progress.next || progress.wakeAt !== Number.POSITIVE_INFINITY) continue;
          if (progress.queued || progress.backlogged) continue;
          if (progress.firstDeadline() <= now) this.dispatcher.ready(group, progress.liteTopic);
        }
        group.reviveCursor = cursor;
      }
    }
  }

  /**
   * Forgets `names` now; deletes their LMQs once the forgetting is durable, in one store call when
   * the store can (deleting a sweep's LMQs one by one would hold the event loop once per LMQ).
   */
  private expire(parent: ParentTopic, names: readonly string[]): Promise<void> {
    for (const name of names) {
      parent.trie.remove(name);
      dropLite(parent, name, false);
      for (const group of parent.groups) {
        const progress = group.progress.get(name);
        progress?.dropAll();
        if (progress !== undefined) progress.removed = true;
        group.progress.delete(name);
        // Its events go (key-shared groups may have one at each client).
        if (progress !== undefined)
          for (const client of group.clients.values()) this.dispatcher.dequeue(client, progress);
        if (progress !== undefined) this.dispatcher.unbacklog(group, progress);
        for (const client of [...(progress?.holders() ?? [])]) this.registry.expire(client, name);
      }
      this.context.journal.record(['drop', parent.name, name]);
      this.expiredCount++;
      this.context.counters.expired(parent.name, 1);
    }
    const self: { done?: Promise<void> } = {};
    const done = (async () => {
      await Promise.resolve(); // `self.done` is set before the finally below can run
      try {
        await this.context.journal.durable();
        await this.context.store.deleteLmqs(names.map((name) => lmqName(parent.name, name)));
        await yieldTurn();
      } finally {
        for (const name of names) if (parent.expiring.get(name) === self.done) parent.expiring.delete(name);
        // A client that subscribed meanwhile may now read the topic's new messages.
        for (const name of names) for (const group of parent.groups) this.dispatcher.ready(group, name);
      }
    })();
    self.done = done;
    for (const name of names) parent.expiring.set(name, done);
    return done;
  }

  /** Starts watching `client`'s session. */
  watch(client: ClientState): void {
    if (this.options.sessionTimeoutMs > 0) this.armSession(client, client.lastSeenAt + this.options.sessionTimeoutMs);
  }

  private armSession(client: ClientState, atMs: number): void {
    client.cancelSessionCheck = this.context.scheduler.at(atMs, () => {
      client.cancelSessionCheck = undefined;
      if (client.closed) return;
      const now = this.context.clock.now();
      if (client.waiters.length > 0) client.lastSeenAt = now; // a waiting long poll is a live session
      const deadline = client.lastSeenAt + this.options.sessionTimeoutMs;
      if (deadline > now) this.armSession(client, deadline);
      else this.expireSession(client);
    });
  }

  /** Closes a silent client as `close()` would, and makes its in-flight messages visible to others now. */
  private expireSession(client: ClientState): void {
    const liteTopics = [...client.topics];
    this.registry.close(client);
    releaseInflight(this.context, this.dispatcher, client, liteTopics);
    client.notify('sessionExpired', undefined);
  }
}

/**
 * Makes the in-flight messages of `client` (closed) visible to its group now, so they are delivered
 * again at once (a session expiry, or a key-shared client leaving). In a key-shared group the
 * buckets of `liteTopics` (those it held) move to the remaining clients, so each is made ready.
 */
export function releaseInflight(
  context: BrokerContext,
  dispatcher: Dispatcher,
  client: ClientState,
  liteTopics: readonly string[],
): void {
  const group = client.group;
  const now = context.clock.now();
  for (const [liteTopic, progress] of group.progress) {
    if (client.inflight === 0) break;
    const released: number[] = [];
    for (const delivery of progress.keptDeliveries()) {
      if (delivery.holder !== client || delivery.acked) continue;
      delivery.holder = undefined;
      client.inflight--;
      delivery.invisibleUntil = now;
      released.push(delivery.offset, delivery.attempt, now);
    }
    if (released.length === 0) continue;
    context.journal.hot('deliver', group, progress, released);
    dispatcher.armWake(group, progress);
    dispatcher.ready(group, liteTopic);
  }
  if (group.keyShared !== undefined) for (const liteTopic of liteTopics) dispatcher.ready(group, liteTopic);
}
