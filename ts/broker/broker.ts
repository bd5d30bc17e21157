/**
 * The broker facade (docs/BROKER.md): LITE parent topics, consumer groups bound to them,
 * producers sending to lite topics, consumers subscribing and POPping. Storage is a `CommitLog` in
 * `<dir>/log`, or memory without a directory; time is a clock plus a scheduler (see docs/BROKER.md:
 * with a manual clock, `tick()` runs what is due).
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { EngineName } from '../engine/contract.js';
import { getEngine } from '../engine/load.js';
import {
  ClosedError,
  GroupNotFoundError,
  InvalidArgumentError,
  QuotaExceededError,
  ReadOnlyError,
  TopicNotFoundError,
} from '../errors.js';
import { booleanOption, type Clock, systemClock } from '../log.js';
import { PatternIndex } from '../pattern.js';
import type { ConnectOptions, RemoteBroker } from '../remote/broker.js';
import { TopicTrie } from '../trie.js';
import { Admin } from './admin.js';
import { Consumer } from './consumer.js';
import { DEAD_LETTER_PREFIX, type DeadLetter, DeadLetters } from './deadletter.js';
import { Dispatcher } from './dispatcher.js';
import { type JournalContents, type NameCarrier, StateJournal } from './journal.js';
import { type JournalStorage, nodeJournalStorage } from './journal-storage.js';
import { checkKeyShared, type KeySharedOptions } from './key-shared.js';
import { newProgress } from './key-shared-progress.js';
import {
  DEFAULT_MAINTENANCE_INTERVAL_MS,
  DEFAULT_SESSION_TIMEOUT_MS,
  Lifecycle,
  type RetentionPolicy,
  releaseInflight,
} from './lifecycle.js';
import { messageId } from './message-id.js';
import { type BrokerMetrics, CHANNELS, Counters, renderPrometheus } from './metrics.js';
import { checkLiteTopic, requireName } from './names.js';
import type { BrokerParts } from './parts.js';
import {
  type JournalRecorder,
  journalRecorder,
  noRecorder,
  type RestoredState,
  replay,
  snapshot,
  type TopicAttributes,
} from './persist.js';
import { Popper } from './pop.js';
import type { TopicProgress } from './progress.js';
import { type BrokerLimits, checkQuota, countRefusals, resolveLimits } from './quota.js';
import { Registry } from './registry.js';
import { checkSendMessage } from './send-check.js';
import {
  type BrokerContext,
  ClientState,
  dropLite,
  type GroupConfig,
  GroupState,
  keptLite,
  type LiteTopicInfo,
  linkProgress,
  lmqOf,
  type ParentTopic,
  type SubModel,
} from './state.js';
import { lmqName, type MessageStore, openStore } from './store.js';
import { ManualScheduler, type Scheduler, SystemScheduler } from './timers.js';
import type { SendMessage, SendResult } from './types.js';

export interface BrokerOptions {
  /** Data directory; without one everything is kept in memory. */
  dir?: string;
  /** `native` or `js`; default: the active engine. */
  engine?: EngineName;
  /** Commit-log flush mode with a directory: `async` (default) or `sync`. */
  flush?: 'async' | 'sync';
  /**
   * Commit-log segment size (docs/FORMAT.md); default 256 MiB, and 64 MiB for the log in memory the
   * native engine keeps messages in without a directory.
   */
  segmentBytes?: number;
  /** Source of time; a manual clock makes the broker's timers run on `tick()` only. */
  clock?: Clock;
  /** `system`: real timers; `manual`: deadlines run on `tick()`. Default: manual iff a non-system clock is given. */
  timers?: 'system' | 'manual';
  limits?: Partial<BrokerLimits>;
  /** A client with queued events that does not POP for this long has them moved; default 30,000 ms. */
  stallTimeoutMs?: number;
  /** A custom store (fault injection in tests); replaces `dir` (and then nothing is persisted). */
  store?: MessageStore;
  /** Old segments are deleted by age or total size on each maintenance pass. */
  retention?: RetentionPolicy;
  /** A client that makes no call for this long is closed as by `close()`; 0: never. Default 120,000 ms. */
  sessionTimeoutMs?: number;
  /** Period of the maintenance pass (expiry, retention); default 1,000 ms. */
  maintenanceIntervalMs?: number;
  /** Compact the state journal once it is this large (bytes) and twice the state it holds; default 4 MiB. */
  stateCompactBytes?: number;
  /**
   * The file operations of the state journal (fault injection in tests, as `store` is for the
   * commit log); default the real file system.
   */
  stateStorage?: JournalStorage;
  /**
   * Where failures of background work go when nothing listens to the broker's `'error'` event;
   * default: a process warning (`process.emitWarning`).
   */
  logger?: BrokerLogger;
  /**
   * Opens `dir` without changing anything in it: no lock taken, nothing cut, written or compacted,
   * no timers run. Admin queries, `metrics()` and `readDeadLetters` answer; everything that would
   * change state throws `ReadOnlyError` (`READ_ONLY`). The log's `stats().recovery` (through
   * `admin.brokerInfo()`, or `litetopic inspect`) says what a writable open would do.
   */
  readOnly?: boolean;
  /**
   * Recovery cuts damaged records instead of refusing to open (docs/FORMAT.md, "Recovery"): a
   * deliberate repair, which loses what follows the damage.
   */
  repair?: boolean;
}

/** The logger a broker reports background failures to when it has no `'error'` listener. */
export interface BrokerLogger {
  error(message: string, error: unknown): void;
}

/** What a broker's `'error'` event carries besides the error: the background work that failed. */
export interface BackgroundErrorInfo {
  during: string;
}

export interface TopicOptions {
  /** A lite topic with no new message for this long is deleted (docs/BROKER.md, "Expiry"). */
  liteTopicExpirationMs?: number;
}

export interface GroupOptions {
  bindTopic: string;
  /** `shared` (default) or `exclusive`. */
  subModel?: SubModel;
  /** Subscriptions are patterns (shared groups only). */
  wildcard?: boolean;
  /** A message that would be delivered with a higher `reconsumeTimes` goes to the dead-letter queue; default 16. */
  maxReconsumeTimes?: number;
  /** Pattern dialect; only `lite` applies to lite topic names. */
  dialect?: 'lite';
  /**
   * Key-shared consumption (shared groups): each lite topic is spread over the group's clients by
   * message key, in order per key (docs/BROKER.md, "Key-shared groups").
   */
  keyShared?: KeySharedOptions;
}

export const DEFAULT_STALL_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_RECONSUME_TIMES = 16;

/** The broker's state journal inside the data directory (docs/FORMAT.md, "Broker state"). */
const STATE_FILE = 'broker-state';
/** `TopicTrie.addMany` in the order given: a send's new lite topics, added in one engine call. */
const GIVEN_ORDER = { order: 'given' } as const;

function topicAttributes(liteTopicExpirationMs: number | undefined): TopicAttributes {
  return liteTopicExpirationMs === undefined ? {} : { liteTopicExpirationMs };
}

function checkRetention(value: unknown): RetentionPolicy | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object') {
    throw new InvalidArgumentError('retention must be { maxAgeMs?, maxBytes? }', { value });
  }
  const policy = value as RetentionPolicy;
  for (const key of Object.keys(policy)) {
    if (key !== 'maxAgeMs' && key !== 'maxBytes') throw new InvalidArgumentError(`unknown retention option ${key}`);
  }
  const out: RetentionPolicy = {};
  if (policy.maxAgeMs !== undefined) out.maxAgeMs = optionalCount(policy.maxAgeMs, 'retention.maxAgeMs', 0);
  if (policy.maxBytes !== undefined) out.maxBytes = optionalCount(policy.maxBytes, 'retention.maxBytes', 0);
  return out;
}

function optionalCount(value: unknown, what: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidArgumentError(`${what} must be a non-negative integer (got ${String(value)})`, { value });
  }
  return value;
}

/**
 * The embedded broker. It is an `EventEmitter`: `'error'` (error, { during }) reports a failure of
 * background work (maintenance, the state journal failing or a compaction of it, a dead-letter move,
 * a corrupt record met by a POP). Without a listener such failures go to the `logger` option, or
 * become process warnings; they never throw into the event loop.
 */
export class Broker extends EventEmitter {
  readonly engine: EngineName;
  /** Opened with `readOnly`: every call that would change state throws `ReadOnlyError`. */
  get readOnly(): boolean {
    return this.openedReadOnly;
  }

  /** Admin queries (docs/BROKER.md, "Admin"). */
  readonly admin: Admin;
  private closed = false;
  private openedReadOnly = false;
  private readonly parents = new Map<string, ParentTopic>();
  private readonly groups = new Map<string, GroupState>();
  /** clientId → its state: a client belongs to one group. */
  private readonly clients = new Map<string, ClientState>();
  private readonly dispatcher: Dispatcher;
  private readonly registry: Registry;
  private readonly popper: Popper;
  private readonly deadLetters: DeadLetters;
  private readonly lifecycle: Lifecycle;
  private readonly parts: BrokerParts;
  private journal: StateJournal | undefined;
  /** Sends and dead-letter moves under way: `close()` lets them finish before the journal closes. */
  private readonly inflight = new Set<Promise<unknown>>();

  private constructor(
    private readonly context: BrokerContext,
    engine: EngineName,
    lifecycle: { retention: RetentionPolicy | undefined; maintenanceIntervalMs: number; sessionTimeoutMs: number },
  ) {
    super();
    this.engine = engine;
    this.dispatcher = new Dispatcher(context);
    this.registry = new Registry(context, this.dispatcher);
    this.deadLetters = new DeadLetters(context, this.dispatcher, messageId);
    this.popper = new Popper(context, this.dispatcher, this.deadLetters, (work) => this.track(work));
    this.lifecycle = new Lifecycle(context, this.dispatcher, this.registry, this.parents, lifecycle);
    this.parts = {
      registry: this.registry,
      popper: this.popper,
      checkOpen: () => this.checkOpen(),
      liteTopics: (names) => names.map((name) => checkLiteTopic(name, context.limits)),
      settle: () => context.journal.settle(),
      seen: (client) => {
        client.lastSeenAt = context.clock.now();
      },
      deadLetter: (client, handle) => this.track(this.popper.deadLetter(client, handle)),
      leave: (client, release) => {
        const liteTopics = [...client.topics];
        this.registry.close(client);
        // A key-shared client that leaves gives its buckets up at once: its messages go to their new owners.
        if (release || client.group.keyShared !== undefined) {
          releaseInflight(context, this.dispatcher, client, liteTopics);
        }
      },
      report: (error, during) => context.report(error, during),
    };
    this.admin = new Admin({
      engine,
      context,
      parents: this.parents,
      groups: this.groups,
      clients: this.clients,
      registry: this.registry,
      dispatcher: this.dispatcher,
      expiredLiteTopics: () => this.lifecycle.expiredCount,
      checkOpen: () => this.checkOpen(),
      checkWritable: () => this.checkWritable(),
    });
  }

  /**
   * The same API on an Apache RocketMQ 5.5 cluster (docs/ROCKETMQ.md): a broker whose methods,
   * options, messages, events and error codes are this one's where RocketMQ has the feature. Needs
   * the optional packages `rocketmq-client-nodejs`, `@grpc/grpc-js` and `@grpc/proto-loader`
   * (else `DEPENDENCY_MISSING`).
   */
  static async connect(options: ConnectOptions): Promise<RemoteBroker> {
    // Loaded here, not at the top: the embedded broker never needs the remote client's modules.
    const { RemoteBroker } = await import('../remote/broker.js');
    return RemoteBroker.connect(options);
  }

  static async open(options: BrokerOptions = {}): Promise<Broker> {
    if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options must be an object');
    const engineImpl = getEngine(options.engine);
    const engine = engineImpl.name;
    const clock = options.clock ?? systemClock;
    if (typeof clock.now !== 'function') throw new InvalidArgumentError('clock must have a now() method');
    const timers = options.timers ?? (clock === systemClock ? 'system' : 'manual');
    if (timers !== 'system' && timers !== 'manual') {
      throw new InvalidArgumentError('timers must be "system" or "manual"', { value: timers });
    }
    const limits = resolveLimits(options.limits);
    const stallTimeoutMs = optionalCount(options.stallTimeoutMs, 'stallTimeoutMs', DEFAULT_STALL_TIMEOUT_MS);
    if (options.dir !== undefined && typeof options.dir !== 'string') {
      throw new InvalidArgumentError('dir must be a string', { value: options.dir });
    }
    const sessionTimeoutMs = optionalCount(options.sessionTimeoutMs, 'sessionTimeoutMs', DEFAULT_SESSION_TIMEOUT_MS);
    const maintenanceIntervalMs = optionalCount(
      options.maintenanceIntervalMs,
      'maintenanceIntervalMs',
      DEFAULT_MAINTENANCE_INTERVAL_MS,
    );
    if (maintenanceIntervalMs === 0) throw new InvalidArgumentError('maintenanceIntervalMs must be positive');
    const retention = checkRetention(options.retention);
    const flush = options.flush ?? 'async';
    const readOnly = booleanOption(options.readOnly, 'readOnly');
    const repair = booleanOption(options.repair, 'repair');
    if (readOnly && (options.dir === undefined || options.store !== undefined)) {
      throw new InvalidArgumentError('readOnly needs a data directory (dir) and no custom store');
    }
    if (readOnly && repair) throw new InvalidArgumentError('a read-only open cannot repair: repair writes');
    const journalPath =
      options.dir !== undefined && options.store === undefined ? join(options.dir, STATE_FILE) : undefined;
    const stateStorage = options.stateStorage ?? nodeJournalStorage;
    const logger = checkLogger(options.logger);
    let broker: Broker | undefined;
    const report = (error: unknown, during: string): void => reportBackground(broker, logger, error, during);
    // The state journal is read and replayed while the commit log recovers (on the thread pool with
    // the native engine), before the log holds the directory's lock: a guess, used only if the file
    // read again under the lock has the same bytes (another owner may have been writing meanwhile).
    const guessing = journalPath === undefined ? undefined : readState(journalPath, stateStorage);
    guessing?.catch(() => undefined); // a failed guess is only a guess: the read under the lock decides
    let store: MessageStore;
    try {
      store =
        options.store ??
        (await openStore(options.dir, { engine, flush, clock, segmentBytes: options.segmentBytes, readOnly, repair }));
    } catch (error) {
      await guessing?.catch(() => undefined); // let the read finish before the caller retries
      throw error;
    }
    let journal: StateJournal | undefined;
    let restored: RestoredState | undefined;
    if (readOnly && journalPath !== undefined) {
      // Read-only: the journal's state is replayed into memory and the file is never opened for
      // writing; no lock is held, so what was read is all there is to go by.
      try {
        restored = (await (guessing ?? readState(journalPath, stateStorage))).state;
      } catch (error) {
        await store.close();
        throw error;
      }
    } else if (journalPath !== undefined) {
      try {
        await mkdir(dirname(journalPath), { recursive: true });
        const read = await readLocked(journalPath, stateStorage, guessing);
        const opened = await StateJournal.open(
          journalPath,
          {
            flush,
            compactBytes: options.stateCompactBytes,
            storage: stateStorage,
            report,
            seal: (bytes, start, end) => engineImpl.sealFrames(bytes, start, end),
          },
          read.contents,
        );
        journal = opened.journal;
        restored = read.state;
      } catch (error) {
        await store.close();
        throw error;
      }
    }
    const recorder: JournalRecorder = journal === undefined ? noRecorder : journalRecorder(journal);
    // Read-only, nothing runs on its own: no expiry, redelivery or session timeout can change state.
    const scheduler: Scheduler =
      timers === 'manual' || readOnly ? new ManualScheduler(clock) : new SystemScheduler(clock);
    // The epoch names the directory's broker in receipt handles: kept across restarts, so handles
    // of deliveries still current after a restart are honoured.
    const epoch = restored?.epoch ?? randomBytes(6).toString('hex');
    const counters = new Counters();
    countRefusals(limits, (quota) => counters.refused(quota));
    const context: BrokerContext = {
      store,
      clock,
      scheduler,
      limits,
      epoch,
      stallTimeoutMs,
      journal: recorder,
      report,
      counters,
    };
    const opened = new Broker(context, engine, { retention, maintenanceIntervalMs, sessionTimeoutMs });
    broker = opened;
    // Failures of the store's own background work (the commit log's flush, checkpoint, next segment).
    store.onBackgroundError = (error, during) => report(error, `store ${during}`);
    opened.journal = journal;
    try {
      if (restored !== undefined) opened.restore(restored);
      if (journal !== undefined) {
        if (restored?.epoch === undefined) recorder.record(['epoch', epoch]);
        journal.watch(
          (names) => opened.snapshotRecords(names),
          () => opened.stateEntries(),
        );
      }
    } catch (error) {
      // What the open took (the directory's lock, the journal's file) goes with it.
      await journal?.close().catch(() => undefined);
      await store.close().catch(() => undefined);
      throw error;
    }
    opened.openedReadOnly = readOnly;
    if (!readOnly) opened.lifecycle.start();
    return opened;
  }

  /** Recreates persisted topics, groups and progress (a restart). */
  private restore(restored: RestoredState): void {
    const maxOffsets = new Map<string, Map<string, number>>();
    for (const [name, attributes] of restored.topics) maxOffsets.set(name, this.addTopic(name, attributes));
    for (const [name, config] of restored.groups) {
      const parent = this.parents.get(config.bindTopic);
      if (parent === undefined) continue;
      // The replayed map becomes the group's (100,000s of lite topics are not copied one by one).
      const progress = restored.progress.get(name) ?? new Map<string, TopicProgress>();
      const stored = maxOffsets.get(parent.name);
      for (const [liteTopic, entry] of progress) {
        // An LMQ shorter than the committed offset was deleted after the record: that progress is void.
        if ((stored?.get(liteTopic) ?? 0) < entry.committed) progress.delete(liteTopic);
      }
      this.addGroup(name, parent, config, progress);
      if (config.wildcard) (this.groups.get(name) as GroupState).restoredUnoffered = true;
    }
  }

  /** Entries of the state a snapshot writes: topics, groups and every group's progress. */
  private stateEntries(): number {
    let entries = this.parents.size;
    for (const group of this.groups.values()) entries += 1 + group.progress.size;
    return entries;
  }

  private snapshotRecords(names: NameCarrier): Iterable<Buffer> {
    return snapshot(
      this.context.epoch,
      this.parents.values(),
      this.groups.values(),
      (parent) => topicAttributes(parent.liteTopicExpirationMs),
      names,
    );
  }

  /**
   * Creates a LITE parent topic, or updates the attributes of an existing one (topics are
   * persisted: after a restart they exist already). Lite topics already in the store are found.
   */
  createTopic(name: string, options: TopicOptions = {}): void {
    this.checkWritable();
    this.context.journal.check();
    requireName(name, 'topic name');
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('topic options must be an object');
    const expiration = options.liteTopicExpirationMs;
    if (expiration !== undefined) optionalCount(expiration, 'liteTopicExpirationMs', 0);
    const existing = this.parents.get(name);
    if (existing !== undefined) {
      if (existing.liteTopicExpirationMs === expiration) return;
      existing.liteTopicExpirationMs = expiration;
    } else {
      this.addTopic(name, topicAttributes(expiration));
    }
    this.context.journal.record(['topic', name, topicAttributes(expiration)]);
  }

  /** Adds a parent with the lite topics the store holds; returns each stored lite topic's max offset. */
  private addTopic(name: string, attributes: TopicAttributes): Map<string, number> {
    const trie = new TopicTrie({ engine: this.engine, maxNameBytes: this.context.limits.maxLiteTopicBytes });
    const { store, clock } = this.context;
    const prefix = lmqName(name, '');
    const maxOffsets = new Map<string, number>();
    const names: string[] = [];
    const lastWrites: number[] = [];
    // One call for every lite topic, rather than three per lite topic (a reopen with many).
    for (const lmq of store.lmqSummaries(prefix)) {
      maxOffsets.set(lmq.name, lmq.maxOffset);
      if (lmq.name.startsWith(DEAD_LETTER_PREFIX)) continue;
      names.push(lmq.name);
      // Idle since its last message, so expiry counts from there and not from this open.
      lastWrites.push(lmq.lastWriteTimestamp ?? clock.now());
    }
    // At once, so each subtree's nodes lie together (`addMany`).
    trie.addMany(names, lastWrites);
    this.parents.set(name, {
      name,
      liteTopicExpirationMs: attributes.liteTopicExpirationMs,
      trie,
      groups: new Set(),
      expiring: new Map(),
      lite: new Map(),
    });
    return maxOffsets;
  }

  /**
   * Creates a consumer group bound to a parent topic. Groups are persisted: creating an existing
   * one again updates `maxReconsumeTimes` and refuses a different binding, model or wildcard flag.
   */
  createGroup(name: string, options: GroupOptions): void {
    this.checkWritable();
    this.context.journal.check();
    requireName(name, 'group name');
    if (options === null || typeof options !== 'object') throw new InvalidArgumentError('group options are required');
    const parent = this.parent(options.bindTopic);
    const subModel = options.subModel ?? 'shared';
    if (subModel !== 'shared' && subModel !== 'exclusive') {
      throw new InvalidArgumentError('subModel must be "shared" or "exclusive"', { value: subModel });
    }
    const wildcard = options.wildcard ?? false;
    if (typeof wildcard !== 'boolean')
      throw new InvalidArgumentError('wildcard must be a boolean', { value: wildcard });
    if (wildcard && subModel === 'exclusive') {
      throw new InvalidArgumentError('wildcard groups are shared; exclusive wildcard groups are not supported', {
        value: options,
      });
    }
    const dialect = options.dialect ?? 'lite';
    if (dialect !== 'lite')
      throw new InvalidArgumentError('lite topic names use the "lite" dialect', { value: dialect });
    const maxReconsumeTimes = optionalCount(
      options.maxReconsumeTimes,
      'maxReconsumeTimes',
      DEFAULT_MAX_RECONSUME_TIMES,
    );
    const keyShared = checkKeyShared(options.keyShared);
    if (keyShared !== undefined && subModel !== 'shared') {
      throw new InvalidArgumentError('keyShared needs subModel "shared"', { value: subModel });
    }
    const config: GroupConfig = { bindTopic: parent.name, subModel, wildcard, maxReconsumeTimes, dialect };
    if (keyShared !== undefined) config.keyShared = keyShared;
    const existing = this.groups.get(name);
    if (existing !== undefined) {
      const old = existing.config;
      if (
        old.bindTopic !== config.bindTopic ||
        old.subModel !== subModel ||
        old.wildcard !== wildcard ||
        JSON.stringify(old.keyShared) !== JSON.stringify(keyShared)
      ) {
        throw new InvalidArgumentError(
          `group ${name} already exists with another binding, model, wildcard flag or key-shared setting`,
          { value: name },
        );
      }
      if (old.maxReconsumeTimes === maxReconsumeTimes) return;
      old.maxReconsumeTimes = maxReconsumeTimes;
    } else {
      this.addGroup(name, parent, config);
    }
    this.context.journal.record(['group', name, config]);
  }

  private addGroup(
    name: string,
    parent: ParentTopic,
    config: GroupConfig,
    progress?: Map<string, TopicProgress>,
  ): void {
    const index = config.wildcard ? new PatternIndex({ engine: this.engine, dialect: config.dialect }) : undefined;
    const group = new GroupState(name, parent, { ...config }, index, progress);
    group.slot = parent.groups.size;
    this.groups.set(name, group);
    parent.groups.add(group);
  }

  /** Sends one message; resolves once stored (durable under `flush: 'sync'`). */
  async send(topic: string, message: SendMessage): Promise<SendResult> {
    return (await this.sendBatch(topic, [message]))[0] as SendResult;
  }

  /**
   * Sends messages in order. Every message is checked (and the lite-topic quota for the batch as a
   * whole) before anything is stored, so a batch refused by a check stores none of them. A batch the
   * store fails (`IO_ERROR`: a full disk, an I/O error) may have stored a prefix of itself, which
   * the groups receive after a restart (docs/BROKER.md, "Restart"): sends are at least once.
   */
  sendBatch(topic: string, messages: readonly SendMessage[]): Promise<SendResult[]> {
    return this.track(this.storeBatch(topic, messages));
  }

  /** Keeps `work` in `inflight` until it settles. */
  private track<T>(work: Promise<T>): Promise<T> {
    this.inflight.add(work);
    const done = () => this.inflight.delete(work);
    work.then(done, done);
    return work;
  }

  /** `sendBatch`. */
  private async storeBatch(topic: string, messages: readonly SendMessage[]): Promise<SendResult[]> {
    this.checkWritable();
    const parent = this.parent(topic);
    if (!Array.isArray(messages) || messages.length === 0) {
      throw new InvalidArgumentError('messages must be a non-empty array', { value: messages });
    }
    const names = messages.map((message) => checkSendMessage(message, this.context.limits));
    if (parent.expiring.size > 0) {
      // A lite topic being deleted by expiry: wait until its LMQ is gone, then it starts again at 0.
      const waits = names.map((name) => parent.expiring.get(name)).filter((p) => p !== undefined);
      if (waits.length > 0) {
        await Promise.allSettled(waits);
        this.checkOpen();
      }
    }
    // A failed journal could not keep the groups' starting offsets of new lite topics: refused
    // before anything below changes.
    this.context.journal.check();
    // A kept info means an existing lite topic (`ParentTopic.lite`): no trie lookup for those.
    const kept = names.map((name) => parent.lite.get(name));
    const unknown = new Set<string>();
    for (let i = 0; i < names.length; i++) if (kept[i] === undefined) unknown.add(names[i] as string);
    const now = this.context.clock.now();
    // In the trie before the append, so concurrent sends count them against the quota too; every
    // name's last write is recorded before the append, so expiry never picks a lite topic being
    // written to (it checks `LiteTopicInfo.lastWrite` before it expires what the trie calls idle).
    const newNames = unknown.size === 0 ? unknown : this.addLiteTopics(parent, unknown, now);
    const created = [...newNames];
    const infos = names.map((name, i) => kept[i] ?? keptLite(parent, name));
    for (let i = 0; i < infos.length; i++) {
      const info = infos[i] as LiteTopicInfo;
      info.written(now);
      // The trie holds `now` for the names it was given above (`unknown`): their infos say so.
      if (kept[i] === undefined) info.touched = now;
    }
    const records = messages.map((message, i) => ({
      lmqs: [(infos[i] as LiteTopicInfo).lmq],
      keepers: [infos[i]],
      body: message.body,
      key: message.key,
      tag: message.tag,
      properties: message.properties,
    }));
    let results: Awaited<ReturnType<MessageStore['append']>>;
    try {
      results = await this.context.store.append(records);
    } catch (error) {
      for (const name of created) {
        if (this.context.store.maxOffset(lmqOf(parent, name)) === 0) {
          parent.trie.remove(name);
          dropLite(parent, name, true);
        }
      }
      throw error;
    }
    const fresh = newNames;
    const matched = this.patternMatches(parent, created);
    const arrived = this.context.clock.now();
    const sent = results.map((result, i) => {
      const liteTopic = names[i] as string;
      const offset = result.offsets[0] as number;
      const info = infos[i] as LiteTopicInfo;
      info.arrived(offset);
      this.arrive(parent, info, liteTopic, offset, fresh.delete(liteTopic), matched, arrived);
      return { messageId: messageId(result.position), liteTopic, offset };
    });
    await this.context.journal.settle(); // the groups' starting offsets of new lite topics
    this.context.counters.sent(parent.name, sent.length);
    if (CHANNELS.send.hasSubscribers) CHANNELS.send.publish({ topic: parent.name, results: sent });
    return sent;
  }

  /**
   * Adds `names` (lite topics of a send without a kept info: new ones, or ones this broker has not
   * sent to since it opened) to `parent`'s trie at `now` and returns the new ones, refused whole by
   * `maxLiteTopicsPerBroker`. When even all of them fit, they are added at once: when every name in
   * the trie has a kept info (`ParentTopic.lite` holds a subset of the trie's names, so equal sizes
   * say so) none of `names` is there, so all are new, added in one engine call (`addMany` in the
   * order given: sorting them would cost more than it saves); otherwise the trie's size after each
   * add tells the new ones. When they may not fit, the new ones are found first and counted. May
   * return `names` itself.
   */
  private addLiteTopics(parent: ParentTopic, names: Set<string>, now: number): Set<string> {
    const { trie } = parent;
    let existing = 0;
    for (const p of this.parents.values()) existing += p.trie.size;
    const created = new Set<string>();
    if (existing + names.size <= this.context.limits.maxLiteTopicsPerBroker) {
      let size = trie.size;
      if (size === parent.lite.size) {
        if (names.size === 1) for (const name of names) trie.add(name, now);
        else trie.addMany([...names], new Array<number>(names.size).fill(now), GIVEN_ORDER);
        return names;
      }
      for (const name of names) {
        trie.add(name, now);
        const after = trie.size;
        if (after > size) created.add(name);
        size = after;
      }
      return created;
    }
    for (const name of names) if (!trie.has(name)) created.add(name);
    checkQuota(this.context.limits, 'maxLiteTopicsPerBroker', existing + created.size, [...created]);
    for (const name of names) trie.add(name, now);
    return created;
  }

  /** Up to `maxNum` (default 32) dead letters of `group` from `fromOffset` (default 0). */
  readDeadLetters(group: string, options: { fromOffset?: number; maxNum?: number } = {}): DeadLetter[] {
    this.checkOpen();
    return this.deadLetters.read(this.group(group), options.fromOffset ?? 0, options.maxNum ?? 32);
  }

  /** Sends dead letter `offset` of `group` again to its original lite topic, key and properties. */
  async resendDeadLetter(group: string, offset: number): Promise<SendResult> {
    this.checkWritable();
    const state = this.group(group);
    const [letter] = this.deadLetters.read(state, offset, 1);
    if (letter === undefined || letter.offset !== offset) {
      throw new InvalidArgumentError(`group ${group} has no dead letter at offset ${offset}`, { value: offset });
    }
    return this.send(state.parent.name, DeadLetters.resendable(letter));
  }

  /**
   * What the broker has counted since it opened (per parent topic and per group), refusals per
   * quota, gauges read now (lag, in flight, clients, lite topics) and the send-to-POP latency.
   */
  metrics(): BrokerMetrics {
    this.checkOpen();
    const { counters, store } = this.context;
    const topics = [...this.parents.values()].map((parent) => ({
      topic: parent.name,
      sent: counters.sentTo(parent.name),
      expired: counters.expiredIn(parent.name),
      liteTopics: parent.trie.size,
    }));
    const groups = [...this.groups.values()].map((group) => {
      let lag = 0;
      for (const [liteTopic, progress] of group.progress) {
        const lmq = lmqOf(group.parent, liteTopic);
        lag += Math.max(0, store.maxOffset(lmq) - Math.max(progress.committed, store.minOffset(lmq)));
      }
      let inFlight = 0;
      for (const client of group.clients.values()) inFlight += client.inflight;
      return {
        group: group.name,
        topic: group.parent.name,
        ...counters.groupCounts(group.name),
        lag,
        inFlight,
        clients: group.clients.size,
      };
    });
    return {
      topics,
      groups,
      quotaRefusals: counters.quotaRefusals(),
      sendToPopLatency: counters.latencySummary(),
    };
  }

  /** `metrics()` in the Prometheus text exposition format, for a `/metrics` endpoint. */
  metricsText(): string {
    return renderPrometheus(this.metrics());
  }

  /** Runs a maintenance pass (expiry, retention) now, or waits for the running one. */
  runMaintenance(): Promise<void> {
    this.checkWritable();
    return this.lifecycle.runMaintenance();
  }

  /** A consumer: client `clientId` of `group`. A clientId belongs to one group at a time. */
  consumer(options: { group: string; clientId: string }): Consumer {
    this.checkWritable();
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('consumer options are required');
    const group = this.groups.get(options.group);
    if (group === undefined) {
      throw new GroupNotFoundError(`group ${String(options.group)} does not exist`, { value: String(options.group) });
    }
    const clientId = options.clientId;
    if (typeof clientId !== 'string' || clientId.length === 0) {
      throw new InvalidArgumentError('clientId must be a non-empty string', { value: clientId });
    }
    const existing = this.clients.get(clientId);
    if (existing !== undefined && !existing.closed) {
      throw new InvalidArgumentError(`client ${clientId} is already open in group ${existing.group.name}`, {
        value: clientId,
      });
    }
    const client = new ClientState(clientId, group, group.nextClientId++, this.context.clock.now());
    this.lifecycle.watch(client);
    this.clients.set(clientId, client);
    group.clients.set(clientId, client);
    group.byId.set(client.id, client);
    if (client.catchAll) this.dispatcher.joinAll(group, client);
    return new Consumer(this.parts, client);
  }

  /**
   * Runs every timer the clock has reached: invisible times ending, long-poll deadlines, stall checks.
   * Only needed with manual timers; with system timers they run on their own and this does nothing.
   */
  tick(): void {
    this.checkOpen();
    this.context.scheduler.runDue();
  }

  /**
   * Closes every consumer (waiting POPs resolve empty), the state journal and the store. Calls made
   * from now on reject with `CLOSED`; sends and dead-letter moves under way finish first (durably
   * under `flush: 'sync'`), and what POPs and acks recorded is written before the journal closes.
   * Safe to call twice.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.lifecycle.stop();
    // A stopped pass ends at its next slice; its deletions finish before the journal and store close,
    // and so do the sends (their arrivals record where the groups start on new lite topics).
    await Promise.allSettled([this.lifecycle.idle(), ...this.inflight]);
    for (const client of this.clients.values()) this.registry.close(client);
    // POPs that ran meanwhile may have started dead-letter moves: those finish too.
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
    this.context.scheduler.clear();
    try {
      await this.journal?.close();
    } finally {
      await this.context.store.close();
    }
  }

  /**
   * Per group slot, the new lite topics of a send that some pattern of the group matches: one
   * engine call per wildcard group and send (`matchCounts`), then the ids only for those matched.
   */
  private patternMatches(parent: ParentTopic, created: readonly string[]): (Set<string> | undefined)[] {
    const matched: (Set<string> | undefined)[] = [];
    if (created.length === 0) return matched;
    let counts: Uint32Array | undefined;
    for (const group of parent.groups) {
      const index = group.patternIndex;
      if (index === undefined || index.size === 0) continue;
      counts ??= new Uint32Array(created.length);
      if (index.matchCounts(created, counts) === 0) continue;
      const names = new Set<string>();
      created.forEach((name, i) => {
        if ((counts as Uint32Array)[i] !== 0) names.add(name);
      });
      matched[group.slot] = names;
    }
    return matched;
  }

  /**
   * Offers a stored message to every group; `now` is when the append resolved (one reading per
   * batch). The first message of a lite topic the send `created` attaches the clients whose patterns
   * match it (`matched`, from `patternMatches`).
   */
  private arrive(
    parent: ParentTopic,
    info: LiteTopicInfo,
    liteTopic: string,
    offset: number,
    created: boolean,
    matched: readonly (Set<string> | undefined)[],
    now: number,
  ): void {
    for (const group of parent.groups) {
      if (created && matched[group.slot]?.has(liteTopic) === true) {
        for (const id of (group.patternIndex as PatternIndex).match(liteTopic)) {
          const client = group.byId.get(id) as ClientState;
          try {
            this.registry.attachArrived(client, liteTopic, offset);
          } catch (error) {
            if (!(error instanceof QuotaExceededError)) throw error;
            client.notify('quotaExceeded', error);
          }
        }
      }
      // The info holds every progress of the lite topic (`LiteTopicInfo.progress`): none there is none.
      let progress = info.progress[group.slot];
      if (progress === undefined) {
        // No progress means no holder (subscribing makes progress): only catch-all clients want it.
        if (group.catchAll.size === 0) continue;
        progress = newProgress(group.config, liteTopic, offset);
        linkProgress(info, group, progress);
        this.dispatcher.startsAtStored(progress);
        group.progress.set(liteTopic, progress);
        this.context.journal.hot('start', group, progress, offset);
      }
      this.dispatcher.ready(group, liteTopic, now, offset + 1, progress);
    }
  }

  private group(name: unknown): GroupState {
    const group = typeof name === 'string' ? this.groups.get(name) : undefined;
    if (group === undefined)
      throw new GroupNotFoundError(`group ${String(name)} does not exist`, { value: String(name) });
    return group;
  }

  private parent(name: unknown): ParentTopic {
    const parent = typeof name === 'string' ? this.parents.get(name) : undefined;
    if (parent === undefined)
      throw new TopicNotFoundError(`topic ${String(name)} does not exist`, { value: String(name) });
    return parent;
  }

  private checkOpen(): void {
    if (this.closed) throw new ClosedError('the broker is closed');
  }

  /** `checkOpen`, and refuses a change to a broker opened read-only. */
  private checkWritable(): void {
    this.checkOpen();
    if (this.openedReadOnly) throw new ReadOnlyError('the broker was opened read-only');
  }
}

function checkLogger(value: unknown): BrokerLogger | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof (value as BrokerLogger).error !== 'function') {
    throw new InvalidArgumentError('logger must have an error(message, error) method', { value });
  }
  return value as BrokerLogger;
}

/** Emits a background failure as `'error'`, or logs it when nobody listens (an unheard `'error'` would throw). */
function reportBackground(
  broker: Broker | undefined,
  logger: BrokerLogger | undefined,
  error: unknown,
  during: string,
) {
  if (broker !== undefined && broker.listenerCount('error') > 0) {
    broker.emit('error', error, { during } satisfies BackgroundErrorInfo);
    return;
  }
  const message = `litetopic broker: ${during} failed: ${error instanceof Error ? error.message : String(error)}`;
  if (logger !== undefined) logger.error(message, error);
  else process.emitWarning(message, { code: 'LITETOPIC_BACKGROUND_ERROR', detail: String(error) });
}

interface ReadState {
  bytes: Buffer;
  contents: JournalContents;
  state: RestoredState;
}

/** The journal's bytes, records and the state they replay to, read without changing the file. */
async function readState(path: string, storage: JournalStorage): Promise<ReadState> {
  const bytes = await StateJournal.readBytes(path, storage);
  const contents = StateJournal.decode(path, bytes);
  return { bytes, contents, state: replay(contents.records, path) };
}

/**
 * The journal as read while the directory's lock is held: the guess read before, when the file
 * still has exactly its bytes (the common case: only the replay's work was done early), else read
 * and replayed now.
 */
async function readLocked(
  path: string,
  storage: JournalStorage,
  guessing: Promise<ReadState> | undefined,
): Promise<ReadState> {
  const bytes = await StateJournal.readBytes(path, storage);
  const guess = await guessing?.catch(() => undefined);
  if (guess?.bytes.equals(bytes)) return guess;
  const contents = StateJournal.decode(path, bytes);
  return { bytes, contents, state: replay(contents.records, path) };
}
