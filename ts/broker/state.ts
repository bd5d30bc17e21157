/**
 * The broker's in-memory model: parent topics, groups bound to them, clients and their
 * subscriptions, event queues and per-(group, lite topic) progress. Plain data shared by the
 * registry, the dispatcher and POP; each of those owns the rules for the fields it changes.
 */
import type { Matcher, PatternIndex } from '../pattern.js';
import type { TopicTrie } from '../trie.js';
import { BacklogQueue } from './backlog.js';
import { EventQueue } from './events.js';
import type { JournalNamed } from './journal.js';
import type { KeySharedConfig } from './key-shared.js';
import type { TopicProgress } from './progress.js';
import type { RecentAcks } from './recent-acks.js';
import { type LmqKeeper, lmqName } from './store.js';

export type SubModel = 'shared' | 'exclusive';

export interface ParentTopic {
  name: string;
  /** A lite topic with no new message for this long expires (lifecycle.ts); undefined: never. */
  liteTopicExpirationMs: number | undefined;
  /** Lite topics being deleted by expiry: sends to them wait until their LMQ is gone. */
  expiring: Map<string, Promise<void>>;
  /** Names of the existing lite topics of this parent. */
  trie: TopicTrie;
  groups: Set<GroupState>;
  /**
   * What the broker keeps of each existing lite topic it wrote to or dispatched from since it opened
   * (`LiteTopicInfo`), dropped with the lite topic (expiry, a failed first send).
   */
  lite: Map<string, LiteTopicInfo>;
}

/**
 * Kept per existing lite topic (`ParentTopic.lite`, at most one each) and referenced from the groups'
 * progress on it, so the dispatch of a message and its POP reach these without a lookup:
 * - the LMQ name: a fresh concatenation is a new string the store must flatten and hash on every
 *   lookup, which an arrival, a dispatch and a POP each made;
 * - the LMQ's next offset, which every dispatch decision compares with: asked of the store once,
 *   then raised by each arrival. Every message of a lite topic is stored through `sendBatch`, which
 *   offers it to the groups once its append resolves, so the store need not be asked again (on disk
 *   each question was a Node-API crossing).
 */
export class LiteTopicInfo implements LmqKeeper, JournalNamed {
  /** The LMQ's next offset as far as this broker knows, or -1 before it first asks the store. */
  stored = -1;
  /** Dropped from its parent: holders of this object look the lite topic up again. */
  dropped = false;
  /**
   * The broker's clock at its latest send since open (ms), or -1. Sends record it here, not in the
   * parent's trie (a Node-API crossing per name per send on native); expiry pushes it to the trie when
   * the trie offers the lite topic as idle (lifecycle.ts), so the trie may lag, never the decision.
   */
  lastWrite = -1;
  /** The last activity this broker set in the trie for it (-1: none since open). */
  touched = -1;
  /**
   * Each group's progress on the lite topic, by the group's `slot`: filled when the info is made and
   * kept whole after (every progress made while the info exists is set here too), so a send offers
   * its messages to every group without looking the name up in any group's map. Made as long as the
   * parent has groups: an array grown by its first store would take room for 16 (a group made later
   * grows it so, rarely).
   */
  readonly progress: (TopicProgress | undefined)[];
  /**
   * What the store keeps here for the LMQ (store.ts `LmqKeeper`): the memory store, its queue; the
   * native commit log, its handle.
   */
  storeState: object | undefined = undefined;
  /**
   * The lite topic's number in the state journal's hot records (journal.ts `JournalNamed`): one for
   * every group's progress of it, which reach it through `TopicProgress.lite`.
   */
  journalName = -1;
  journalFile = -1;

  constructor(
    readonly lmq: string,
    /** How many groups its parent has (`ParentTopic.groups`). */
    groups: number,
  ) {
    this.progress = new Array(groups);
  }

  /** The LMQ's next offset (the store's `maxOffset`, asked once). */
  maxOffset(store: { maxOffset(lmq: string): number }): number {
    if (this.stored < 0) this.stored = store.maxOffset(this.lmq);
    return this.stored;
  }

  /** A send to the lite topic at `now` (ms, the broker's clock). */
  written(now: number): void {
    if (now > this.lastWrite) this.lastWrite = now;
  }

  /** A message of the lite topic was stored at `offset`: the next offset is at least one past it. */
  arrived(offset: number): void {
    if (offset >= this.stored) this.stored = offset + 1;
  }
}

/** The LMQ of `liteTopic`: the kept string (see `LiteTopicInfo`), else a new one. */
export function lmqOf(parent: ParentTopic, liteTopic: string): string {
  return parent.lite.get(liteTopic)?.lmq ?? lmqName(parent.name, liteTopic);
}

/** Whether `liteTopic` is being deleted by expiry (almost never: no lookup while nothing expires). */
export function isExpiring(parent: ParentTopic, liteTopic: string): boolean {
  return parent.expiring.size > 0 && parent.expiring.has(liteTopic);
}

/** The kept info of `liteTopic`, an existing lite topic of `parent` (in its trie), made on first use. */
export function keptLite(parent: ParentTopic, liteTopic: string): LiteTopicInfo {
  let info = parent.lite.get(liteTopic);
  if (info === undefined) {
    info = new LiteTopicInfo(lmqName(parent.name, liteTopic), parent.groups.size);
    // Progress made before the info (a subscription by name before the first message, a restart).
    for (const group of parent.groups) {
      if (group.unkept === 0) continue;
      const progress = group.progress.get(liteTopic);
      if (progress === undefined) continue;
      linkProgress(info, group, progress);
      group.unkept--;
    }
    parent.lite.set(liteTopic, info);
  }
  return info;
}

/**
 * Links `progress` of `group` and its lite topic's `info` both ways: the info holds it by the group's
 * slot (`LiteTopicInfo.progress`) and it reaches the info (`TopicProgress.lite`, also where its
 * journal number is kept).
 */
export function linkProgress(info: LiteTopicInfo, group: GroupState, progress: TopicProgress): void {
  info.progress[group.slot] = progress;
  progress.lite = info;
}

/** Keeps `progress`, just made for `group`, in its lite topic's info when there is one (see `LiteTopicInfo.progress`). */
export function keepProgress(group: GroupState, progress: TopicProgress): void {
  const info = group.parent.lite.get(progress.liteTopic);
  if (info !== undefined) linkProgress(info, group, progress);
  else group.unkept++;
}

/** Forgets the kept info of `liteTopic` (it no longer exists); progress holding it looks again. */
export function dropLite(parent: ParentTopic, liteTopic: string, progressKept: boolean): void {
  const info = parent.lite.get(liteTopic);
  if (info === undefined) return;
  info.dropped = true;
  parent.lite.delete(liteTopic);
  if (!progressKept) return;
  // The groups keep the progress it held: the next info of the name finds it again.
  for (const group of parent.groups) if (info.progress[group.slot] !== undefined) group.unkept++;
}

/**
 * The kept info of `liteTopic` for a group's `progress` on it, held by the progress too; undefined
 * while the lite topic does not exist (a subscription may name one before its first message).
 */
export function liteOf(parent: ParentTopic, liteTopic: string, progress: TopicProgress): LiteTopicInfo | undefined {
  const held = progress.lite;
  if (held !== undefined && !held.dropped) return held;
  const info = parent.lite.get(liteTopic) ?? (parent.trie.has(liteTopic) ? keptLite(parent, liteTopic) : undefined);
  progress.lite = info;
  return info;
}

/** The next offset of `lmq`, through its kept info when there is one (see `LiteTopicInfo`). */
export function maxOffsetOf(
  store: { maxOffset(lmq: string): number },
  info: LiteTopicInfo | undefined,
  lmq: string,
): number {
  return info === undefined ? store.maxOffset(lmq) : info.maxOffset(store);
}

/** A POP waiting for events (long poll). */
export interface PopWaiter {
  /** Tries again; true when the waiter is done (it resolved). */
  retry(): boolean;
  /** Ends the wait with whatever is ready (possibly nothing). */
  finish(): void;
}

export class ClientState {
  /** The numeric id used in the group's pattern index. */
  readonly id: number;
  /** Lite topics it is subscribed to: explicit ones, or in wildcard groups those its patterns match. */
  readonly topics = new Set<string>();
  /** Wildcard groups: its patterns, compiled. Empty = catch-all (every lite topic of the parent). */
  readonly patterns = new Map<string, Matcher>();
  /**
   * Queued events: lite topics with messages for the group, in arrival order, each once, as the
   * group's progress on each (so a POP takes an event without looking its lite topic up).
   */
  readonly events = new EventQueue();
  /** Unacked deliveries it holds. */
  inflight = 0;
  /** Clock time of its last POP. */
  lastPopAt: number;
  /** Clock time of its last call (the implicit heartbeat) or `heartbeat()`. */
  lastSeenAt: number;
  cancelSessionCheck: (() => void) | undefined;
  /** Stopped POPping for the stall timeout while it had events; chosen again once it POPs. */
  stalled = false;
  closed = false;
  readonly waiters: PopWaiter[] = [];
  /** A microtask to run the waiters is already queued. */
  wakeScheduled = false;
  cancelStallCheck: (() => void) | undefined;
  /** When its stall check counts from: its queue last filled, or the check last found it POPping. */
  stallSince = 0;
  /** Told about evictions and expiries (the Consumer's `emit`). */
  notify: (event: string, payload: unknown) => void = () => undefined;
  /** Order of the last time it was chosen for an event: ties go to the one chosen longest ago. */
  lastChosen = 0;
  /** The dispatcher's drain list of backlog entries only this client can take (see `GroupState.openBacklog`). */
  heldBacklog: BacklogQueue | undefined;

  constructor(
    readonly clientId: string,
    readonly group: GroupState,
    id: number,
    now: number,
  ) {
    this.id = id;
    this.lastPopAt = now;
    this.lastSeenAt = now;
  }

  /** A catch-all client: a wildcard client without patterns receives every lite topic of its parent. */
  get catchAll(): boolean {
    return this.group.wildcard && this.patterns.size === 0;
  }

  get load(): number {
    return this.events.size + this.inflight;
  }
}

export interface GroupConfig {
  bindTopic: string;
  subModel: SubModel;
  wildcard: boolean;
  maxReconsumeTimes: number;
  dialect: 'lite';
  /** Key-shared consumption (docs/BROKER.md, "Key-shared groups"); absent for plain groups. */
  keyShared?: KeySharedConfig;
}

/**
 * A group's catch-all clients, in the order they joined: what a Set of them answers, kept in an
 * array replaced on each change (joins and leaves are rare, walks happen on every dispatch). A
 * dispatch walks `items` by index: walking a Set made an iterator result per client, and a change
 * during a walk leaves the array being walked as it was.
 */
export class ClientList implements Iterable<ClientState> {
  private list: readonly ClientState[] = [];

  get size(): number {
    return this.list.length;
  }

  /** The clients now (not changed later: a change makes a new array). */
  get items(): readonly ClientState[] {
    return this.list;
  }

  has(client: ClientState): boolean {
    return this.list.includes(client);
  }

  add(client: ClientState): void {
    if (!this.has(client)) this.list = [...this.list, client];
  }

  delete(client: ClientState): boolean {
    if (!this.has(client)) return false;
    this.list = this.list.filter((c) => c !== client);
    return true;
  }

  [Symbol.iterator](): Iterator<ClientState> {
    return this.list[Symbol.iterator]();
  }
}

export class GroupState {
  readonly clients = new Map<string, ClientState>();
  /** Clients by their pattern-index id. */
  readonly byId = new Map<number, ClientState>();
  /** Catch-all clients: wildcard clients without patterns, which receive every lite topic. */
  readonly catchAll = new ClientList();
  /** Wildcard groups: pattern → client ids, to find the clients of a new lite topic without a scan. */
  readonly patternIndex: PatternIndex | undefined;
  /** Lite topic → the group's progress on it (a restart hands over the replayed map as it is). */
  readonly progress: Map<string, TopicProgress>;
  /**
   * Lite topics with messages ready but no client with room, in the order they began to wait; placed
   * as clients make room. Those that wait are exactly those whose progress is `backlogged`
   * (backlog.ts: an entry of one that left no longer counts), and there are `backlogSize` of them.
   */
  readonly backlog = new BacklogQueue();
  backlogSize = 0;
  /** The number the next lite topic to wait in the backlog is given (`TopicProgress.backlogEntry`). */
  backlogEntries = 0;
  /**
   * The dispatcher's drain list of backlog entries any client may take (dispatcher.ts `toBacklog`):
   * entries of lite topics that no longer wait are skipped and forgotten as a drain meets them.
   */
  openBacklog: BacklogQueue | undefined;
  /** Where the maintenance pass's revive safety net goes on over `progress` (lifecycle.ts `revive`). */
  reviveCursor: Iterator<TopicProgress> | undefined;
  /** What POP keeps of the group (pop.ts): its receipt handles' prefix and its recent acks, made on first use. */
  receiptPrefix: string | undefined;
  recentAcks: RecentAcks | undefined;
  /**
   * Restored from the journal and not yet offered to a client that takes every lite topic (a
   * wildcard client without patterns): nothing queues events for the restored progress until some
   * client asks for its lite topics, which such a client never does by name.
   */
  restoredUnoffered = false;
  /** Its place among its parent's groups (`LiteTopicInfo.progress`); groups are never removed. */
  slot = -1;
  /**
   * At least how many of its progress objects no `LiteTopicInfo` holds: made before their lite topic
   * had one (a subscription by name before the first message, a restart) or left by a dropped info.
   * While it is 0, a new info needs no lookup in this group's map (`keptLite`).
   */
  unkept = 0;
  /** Ids for the pattern index. */
  nextClientId = 0;
  /** Its number in the state journal's hot records (journal.ts `JournalNamed`). */
  journalName = -1;
  journalFile = -1;
  chooseCounter = 0;

  constructor(
    readonly name: string,
    readonly parent: ParentTopic,
    readonly config: GroupConfig,
    patternIndex: PatternIndex | undefined,
    progress: Map<string, TopicProgress> = new Map(),
  ) {
    this.patternIndex = patternIndex;
    this.progress = progress;
    this.unkept = progress.size;
  }

  get wildcard(): boolean {
    return this.config.wildcard;
  }

  /** Key-shared settings, or undefined when the group consumes each lite topic FIFO as a whole. */
  get keyShared(): KeySharedConfig | undefined {
    return this.config.keyShared;
  }

  get exclusive(): boolean {
    return this.config.subModel === 'exclusive';
  }

  /**
   * The clients holding `liteTopic` (at most one in an exclusive group), or undefined when none
   * does. A held lite topic always has progress: subscribing makes it, and expiry lets every holder
   * go before it forgets it.
   */
  holdersOf(liteTopic: string): readonly ClientState[] | ReadonlySet<ClientState> | undefined {
    return this.progress.get(liteTopic)?.holders();
  }

  /** Whether any client of the group wants the lite topic of `progress`. */
  wants(progress: TopicProgress): boolean {
    return this.catchAll.size > 0 || progress.hasHolders;
  }
}

/** What the broker's parts share: storage, time and bounds. */
export interface BrokerContext {
  readonly store: import('./store.js').MessageStore;
  readonly clock: import('../log.js').Clock;
  readonly scheduler: import('./timers.js').Scheduler;
  readonly limits: import('./quota.js').BrokerLimits;
  /** Random per broker instance; part of every receipt handle. */
  readonly epoch: string;
  /** A client that has events but does not POP for this long has them moved to others. */
  readonly stallTimeoutMs: number;
  /** Where changes to persisted state are recorded (the state journal, or nothing in memory). */
  readonly journal: import('./persist.js').JournalRecorder;
  /**
   * Reports a failure of background work (maintenance, journal, dead-letter moves, reads met by a
   * POP): the broker emits it as `'error'`, or hands it to its logger when nobody listens.
   */
  readonly report: (error: unknown, during: string) => void;
  /** What the broker counts (`broker.metrics()`). */
  readonly counters: import('./metrics.js').Counters;
}
