/**
 * Admin queries (docs/BROKER.md, "Admin"), `broker.admin`: counts for the broker, a parent, a lite topic, a
 * client and a group (lag per lite topic, the top-K lite topics by lag and by oldest unconsumed
 * message), and a way to push dispatch by hand. Answers are plain data, the same on both engines.
 * Group queries cost the group's progress entries; nothing here runs on the send or POP path.
 */
import { GroupNotFoundError, InvalidArgumentError, TopicNotFoundError } from '../errors.js';
import { isCorrupt } from './corrupt.js';
import type { Dispatcher } from './dispatcher.js';
import type { TopicProgress } from './progress.js';
import type { Registry } from './registry.js';
import type { BrokerContext, ClientState, GroupState, ParentTopic } from './state.js';
import { lmqName } from './store.js';

export const DEFAULT_TOP_K = 10;
const MAX_TOP_K = 10_000;

export interface BrokerInfo {
  engine: string;
  topics: number;
  liteTopics: number;
  groups: number;
  /** Open clients. */
  clients: number;
  /** (client, lite topic) subscription references. */
  subscriptions: number;
  /** Events queued at clients plus those waiting in group backlogs. */
  queuedEvents: number;
  /** Handed-out, unacked deliveries (including those restored with no holder yet). */
  inflight: number;
  /** Segment files and their bytes (0 in memory). */
  storageFiles: number;
  storageBytes: number;
  /** Lite topics deleted by expiry since open. */
  expiredLiteTopics: number;
}

export interface TopicInfo {
  name: string;
  liteTopics: number;
  groups: string[];
  liteTopicExpirationMs: number | undefined;
}

export interface LiteTopicInfo {
  parent: string;
  liteTopic: string;
  minOffset: number;
  maxOffset: number;
  /** Store timestamp of its newest message. */
  lastWriteTimestamp: number | undefined;
  subscribers: { group: string; clientId: string }[];
  /** Offsets some group found corrupt and holds it at (docs/BROKER.md, "Corrupt records"), by group. */
  corrupt: CorruptRecordInfo[];
}

/** A message a group could not read, holding its lite topic (docs/BROKER.md, "Corrupt records"). */
export interface CorruptRecordInfo {
  group: string;
  liteTopic: string;
  offset: number;
  /** Where the log found the damage, when it said: segment file and commit-log position. */
  file: string | undefined;
  position: number | undefined;
  /** Clock time it was first found corrupt. */
  foundAt: number;
  /** Reads of it that failed so far. */
  failures: number;
  /** Clock time from which a POP reads it again (the pause doubles per failure, up to 5 minutes). */
  retryAt: number;
  /** What the log said. */
  message: string;
}

export interface ClientInfo {
  clientId: string;
  group: string;
  liteTopics: string[];
  patterns: string[];
  queuedEvents: string[];
  inflight: number;
  lastPopAt: number;
  lastSeenAt: number;
  stalled: boolean;
  /** Key-shared groups: per lite topic it holds, the buckets it owns (withheld ones included). */
  keySharedBuckets?: { liteTopic: string; buckets: number[] }[];
}

/** A bucket of a key-shared lite topic withheld from its new owner while the old holder drains it. */
export interface WithheldBucketInfo {
  liteTopic: string;
  bucket: number;
  /** The client it belongs to now (undefined when no client holds the lite topic). */
  owner: string | undefined;
  /** The client whose hidden deliveries it waits for; undefined for deliveries from before a restart. */
  holder: string | undefined;
}

export interface LiteTopicLag {
  liteTopic: string;
  /** First offset not acked by the group. */
  committedOffset: number;
  maxOffset: number;
  /** Messages not acked: `maxOffset - committedOffset`. */
  lag: number;
  /** Store timestamp of the oldest message not acked, or undefined with no lag. */
  oldestUnconsumedTimestamp: number | undefined;
}

export interface GroupInfo {
  group: string;
  bindTopic: string;
  subModel: string;
  wildcard: boolean;
  maxReconsumeTimes: number;
  clients: string[];
  /** Lite topics the group has progress on. */
  liteTopics: number;
  totalLag: number;
  /** With the `liteTopic` option: that lite topic's lag. */
  liteTopic?: LiteTopicLag;
  topByLag: LiteTopicLag[];
  topByOldest: LiteTopicLag[];
  /** Key-shared groups: the settings and every bucket withheld while draining. */
  keyShared?: { buckets: number; windowMessages: number; withheld: WithheldBucketInfo[] };
  /** Offsets of its lite topics it found corrupt and waits at, by lite topic and offset. */
  corrupt: CorruptRecordInfo[];
}

/** What the admin reads: the broker's maps and parts. */
export interface AdminSource {
  readonly engine: string;
  readonly context: BrokerContext;
  readonly parents: ReadonlyMap<string, ParentTopic>;
  readonly groups: ReadonlyMap<string, GroupState>;
  readonly clients: ReadonlyMap<string, ClientState>;
  readonly registry: Registry;
  readonly dispatcher: Dispatcher;
  expiredLiteTopics(): number;
  checkOpen(): void;
  /** `checkOpen`, and refuses a change to a broker opened read-only (`ReadOnlyError`). */
  checkWritable(): void;
}

export class Admin {
  /** @internal Use `broker.admin`. */
  constructor(private readonly source: AdminSource) {}

  brokerInfo(): BrokerInfo {
    const { source } = this;
    source.checkOpen();
    let liteTopics = 0;
    for (const parent of source.parents.values()) liteTopics += parent.trie.size;
    let queuedEvents = 0;
    let inflight = 0;
    for (const group of source.groups.values()) {
      queuedEvents += group.backlogSize;
      for (const progress of group.progress.values()) {
        for (const delivery of progress.keptDeliveries()) if (!delivery.acked) inflight++;
      }
    }
    let clients = 0;
    for (const client of source.clients.values()) {
      if (client.closed) continue;
      clients++;
      queuedEvents += client.events.size;
    }
    const stats = source.context.store.stats();
    return {
      engine: source.engine,
      topics: source.parents.size,
      liteTopics,
      groups: source.groups.size,
      clients,
      subscriptions: source.registry.subscriptionCount,
      queuedEvents,
      inflight,
      storageFiles: stats.segments,
      storageBytes: stats.segmentBytesOnDisk,
      expiredLiteTopics: source.expiredLiteTopics(),
    };
  }

  topicInfo(parent: string): TopicInfo {
    const topic = this.parent(parent);
    return {
      name: topic.name,
      liteTopics: topic.trie.size,
      groups: [...topic.groups].map((g) => g.name).sort(),
      liteTopicExpirationMs: topic.liteTopicExpirationMs,
    };
  }

  /** Null when the lite topic does not exist. */
  liteTopicInfo(parent: string, liteTopic: string): LiteTopicInfo | null {
    const topic = this.parent(parent);
    if (!topic.trie.has(liteTopic)) return null;
    const { store } = this.source.context;
    const lmq = lmqName(topic.name, liteTopic);
    const subscribers: { group: string; clientId: string }[] = [];
    for (const group of topic.groups) {
      for (const client of group.holdersOf(liteTopic) ?? [])
        subscribers.push({ group: group.name, clientId: client.clientId });
      for (const client of group.catchAll) subscribers.push({ group: group.name, clientId: client.clientId });
    }
    return {
      parent: topic.name,
      liteTopic,
      minOffset: store.minOffset(lmq),
      maxOffset: store.maxOffset(lmq),
      lastWriteTimestamp: store.lastWriteTimestamp(lmq),
      subscribers,
      corrupt: [...topic.groups]
        .flatMap((group) => corruptOf(group.name, liteTopic, group.progress.get(liteTopic)))
        .sort((a, b) => compare(a.group, b.group) || a.offset - b.offset),
    };
  }

  /** Null when no open client of `group` has this id. */
  clientInfo(group: string, clientId: string): ClientInfo | null {
    const client = this.group(group).clients.get(clientId);
    if (client === undefined || client.closed) return null;
    return {
      clientId,
      group: client.group.name,
      liteTopics: [...client.topics].sort(),
      patterns: [...client.patterns.keys()],
      queuedEvents: [...client.events].map((progress) => progress.liteTopic),
      inflight: client.inflight,
      lastPopAt: client.lastPopAt,
      lastSeenAt: client.lastSeenAt,
      stalled: client.stalled,
      ...(client.group.keyShared === undefined ? {} : { keySharedBuckets: this.bucketsOf(client) }),
    };
  }

  private bucketsOf(client: ClientState): { liteTopic: string; buckets: number[] }[] {
    const topics = client.catchAll ? [...client.group.progress.keys()] : [...client.topics];
    const out: { liteTopic: string; buckets: number[] }[] = [];
    for (const liteTopic of topics.sort()) {
      const buckets = client.group.progress.get(liteTopic)?.ownedBuckets(client.group, liteTopic, client);
      if (buckets !== undefined) out.push({ liteTopic, buckets });
    }
    return out;
  }

  private withheld(group: GroupState): WithheldBucketInfo[] {
    const out: WithheldBucketInfo[] = [];
    const { context } = this.source;
    for (const [liteTopic, progress] of group.progress) {
      const lmq = lmqName(group.parent.name, liteTopic);
      const scope = { context, group, liteTopic, lmq, info: undefined, now: context.clock.now() };
      for (const w of progress.withheldBuckets(scope)) {
        out.push({ liteTopic, bucket: w.bucket, owner: w.owner?.clientId, holder: w.holder?.clientId });
      }
    }
    return out.sort((a, b) => compare(a.liteTopic, b.liteTopic) || a.bucket - b.bucket);
  }

  groupInfo(group: string, options: { liteTopic?: string; topK?: number } = {}): GroupInfo {
    const state = this.group(group);
    const topK = options.topK ?? DEFAULT_TOP_K;
    if (!Number.isInteger(topK) || topK < 0 || topK > MAX_TOP_K) {
      throw new InvalidArgumentError(`topK must be an integer from 0 to ${MAX_TOP_K}`, { value: topK });
    }
    const lags: LiteTopicLag[] = [];
    let totalLag = 0;
    for (const liteTopic of state.progress.keys()) {
      const lag = this.lag(state, liteTopic);
      totalLag += lag.lag;
      if (lag.lag > 0) lags.push(lag);
    }
    const byLag = [...lags].sort((a, b) => b.lag - a.lag || compare(a.liteTopic, b.liteTopic)).slice(0, topK);
    const byOldest = [...lags]
      .sort(
        (a, b) =>
          (a.oldestUnconsumedTimestamp ?? Infinity) - (b.oldestUnconsumedTimestamp ?? Infinity) ||
          compare(a.liteTopic, b.liteTopic),
      )
      .slice(0, topK);
    const info: GroupInfo = {
      group: state.name,
      bindTopic: state.config.bindTopic,
      subModel: state.config.subModel,
      wildcard: state.config.wildcard,
      maxReconsumeTimes: state.config.maxReconsumeTimes,
      clients: [...state.clients.keys()].sort(),
      liteTopics: state.progress.size,
      totalLag,
      topByLag: byLag,
      topByOldest: byOldest,
      corrupt: [],
    };
    if (options.liteTopic !== undefined) info.liteTopic = this.lag(state, options.liteTopic);
    const keyShared = state.keyShared;
    if (keyShared !== undefined) info.keyShared = { ...keyShared, withheld: this.withheld(state) };
    for (const [liteTopic, progress] of state.progress)
      info.corrupt.push(...corruptOf(state.name, liteTopic, progress));
    info.corrupt.sort((a, b) => compare(a.liteTopic, b.liteTopic) || a.offset - b.offset);
    return info;
  }

  /**
   * Moves `group` past the corrupt message at `offset` of `liteTopic`, as if it had been acked: its
   * lite topic goes on with the next message. Journaled, so it holds across a restart; nothing is
   * dead-lettered (the bytes are bad). Only an offset the group holds as corrupt (listed by
   * `groupInfo` and `liteTopicInfo`) can be skipped: any other is refused with `INVALID_ARGUMENT` and
   * nothing changes, so a healthy message is never skipped by mistake.
   */
  async skipCorrupt(group: string, liteTopic: string, offset: number): Promise<void> {
    this.source.checkWritable();
    // A failed journal could not keep the skip: refused before anything changes.
    this.source.context.journal.check();
    const state = this.group(group);
    if (typeof liteTopic !== 'string') {
      throw new InvalidArgumentError('liteTopic must be a string', { value: liteTopic });
    }
    if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0) {
      throw new InvalidArgumentError(`offset must be a non-negative integer (got ${String(offset)})`, {
        value: offset,
      });
    }
    const progress = state.progress.get(liteTopic);
    const held = progress?.corruptHolds().some((hold) => hold.offset === offset) === true;
    if (progress === undefined || !held) {
      throw new InvalidArgumentError(
        `offset ${offset} of lite topic ${liteTopic} is not held as corrupt by group ${state.name}`,
        { value: offset },
      );
    }
    const { context, dispatcher } = this.source;
    progress.skipCorrupt(offset);
    context.journal.record(['skip', state.name, liteTopic, offset]);
    const now = context.clock.now();
    dispatcher.armWake(state, progress, now);
    dispatcher.ready(state, liteTopic, now, 0, progress);
    await context.journal.settle();
  }

  /**
   * Queues events for every lite topic of `group` (or of one client) that has something
   * deliverable and no event yet; returns the number of events queued afterwards.
   */
  triggerDispatch(group: string, clientId?: string): number {
    const state = this.group(group);
    let client: ClientState | undefined;
    if (clientId !== undefined) {
      client = state.clients.get(clientId);
      if (client === undefined)
        throw new InvalidArgumentError(`no client ${clientId} in group ${group}`, { value: clientId });
    }
    const { dispatcher } = this.source;
    dispatcher.drainBacklog(state);
    const topics = client !== undefined && !client.catchAll ? client.topics : state.progress.keys();
    for (const liteTopic of [...topics]) dispatcher.ready(state, liteTopic);
    if (client !== undefined) return client.events.size;
    let queued = 0;
    for (const c of state.clients.values()) queued += c.events.size;
    return queued;
  }

  private lag(group: GroupState, liteTopic: string): LiteTopicLag {
    const { store } = this.source.context;
    const lmq = lmqName(group.parent.name, liteTopic);
    const maxOffset = store.maxOffset(lmq);
    const progress = group.progress.get(liteTopic);
    const committedOffset = Math.min(maxOffset, Math.max(progress?.committed ?? maxOffset, store.minOffset(lmq)));
    const lag = maxOffset - committedOffset;
    let oldest: number | undefined;
    try {
      oldest = lag > 0 ? store.read(lmq, committedOffset, 1)[0]?.storeTimestamp : undefined;
    } catch (error) {
      // A corrupt oldest message has no timestamp to give; POP finds it and holds the lite topic.
      if (!isCorrupt(error)) throw error;
    }
    return { liteTopic, committedOffset, maxOffset, lag, oldestUnconsumedTimestamp: oldest };
  }

  private parent(name: string): ParentTopic {
    this.source.checkOpen();
    const parent = this.source.parents.get(name);
    if (parent === undefined)
      throw new TopicNotFoundError(`topic ${String(name)} does not exist`, { value: String(name) });
    return parent;
  }

  private group(name: string): GroupState {
    this.source.checkOpen();
    const group = this.source.groups.get(name);
    if (group === undefined)
      throw new GroupNotFoundError(`group ${String(name)} does not exist`, { value: String(name) });
    return group;
  }
}

/** The corrupt offsets `progress` (of `group` on `liteTopic`) holds, as admin lists them. */
function corruptOf(group: string, liteTopic: string, progress: TopicProgress | undefined): CorruptRecordInfo[] {
  if (progress === undefined) return [];
  return progress.corruptHolds().map((hold) => ({
    group,
    liteTopic,
    offset: hold.offset,
    file: hold.error.file,
    position: hold.error.position,
    foundAt: hold.foundAt,
    failures: hold.failures,
    retryAt: hold.retryAt,
    message: hold.error.cause instanceof Error ? hold.error.cause.message : hold.error.message,
  }));
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
