/**
 * `Broker.connect`: the broker facade over an Apache RocketMQ 5.5 cluster (docs/ROCKETMQ.md). The
 * same methods, option names, message shapes, events and error codes as the embedded broker where
 * RocketMQ has the feature; `UnsupportedError` (`UNSUPPORTED`) where it has not.
 *
 * Messages go through the proxy's gRPC port (grpc.ts); topics and groups are created on every
 * master broker over the remoting protocol (remoting.ts), found through the name server.
 */
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { GroupOptions, TopicOptions } from '../broker/broker.js';
import { DEFAULT_MAX_RECONSUME_TIMES } from '../broker/broker.js';
import { isName, requireName } from '../broker/names.js';
import { type BrokerLimits, resolveLimits } from '../broker/quota.js';
import { checkSendMessage } from '../broker/send-check.js';
import type { SendMessage, SendResult } from '../broker/types.js';
import { ClosedError, GroupNotFoundError, InvalidArgumentError, UnsupportedError } from '../errors.js';
import { RemoteConsumer } from './consumer.js';
import { GrpcClient } from './grpc.js';
import { resource, toProto } from './message.js';
import { RemotingAdmin } from './remoting.js';
import { checkStatus, type ProtoStatus } from './status.js';

export interface ConnectOptions {
  /** The RocketMQ proxy's gRPC endpoint, `host:port` (default port 8081). */
  endpoints: string;
  /** RocketMQ namespace: every topic and group name is taken within it. */
  namespace?: string;
  /** Name servers (`host:port`, default: the endpoint's host on 9876), for createTopic and createGroup. */
  nameServers?: string | readonly string[];
  /** Deadline of one call to the proxy, ms; default 10,000. */
  requestTimeoutMs?: number;
  /**
   * RocketMQ hands a stored or released message to its lite topic's consumers asynchronously. For
   * this long after this broker's last send or release, a POP of its consumers that finds nothing
   * waits for such a message even with `waitMs: 0` (so a POP right after a send finds it, as with
   * the embedded broker). 0 turns this off; default 1,000 ms.
   */
  dispatchGraceMs?: number;
  /** Queues of a new parent topic on each broker; lite topics are spread over them by name. Default 8. */
  queuesPerBroker?: number;
  /** Checked here before a call leaves (`maxLiteTopicBytes`, `maxPopNum`); other quotas are RocketMQ's. */
  limits?: Partial<BrokerLimits>;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
const DEFAULT_DISPATCH_GRACE_MS = 1_000;
/** Sends of one message refused by flow control before the refusal is the caller's. */
const MAX_SEND_ATTEMPTS = 6;
const FLOW_CONTROL_BACKOFF_MS = 50;
const FLOW_CONTROL_MAX_BACKOFF_MS = 1_000;
const DEFAULT_QUEUES_PER_BROKER = 8;
const NAMESRV_PORT = 9876;
/** Sends of one lite topic in flight at once in `sendBatch` is one (order); across lite topics, this many. */
const SEND_CONCURRENCY = 64;

let connections = 0;

/** What a consumer needs of its broker. */
export interface RemoteBrokerParts {
  readonly endpoint: string;
  readonly namespace: string;
  readonly requestTimeoutMs: number;
  readonly limits: BrokerLimits;
  /** Resolves once topics and groups created so far exist (calls are ordered after them). */
  settled(): Promise<void>;
  /** What is left of the dispatch grace since this broker last sent or released a message, ms. */
  graceLeftMs(): number;
  /** Records a release (a message made visible again now). */
  touched(): void;
  /** The group's parent topic and redelivery limit: from createGroup, or read from the brokers. */
  groupOf(name: string): Promise<RemoteGroup>;
  checkOpen(): void;
  release(consumer: RemoteConsumer): void;
  report(error: unknown, during: string): void;
}

export interface RemoteGroup {
  name: string;
  bindTopic: string;
  maxReconsumeTimes: number;
}

/**
 * A broker in a RocketMQ cluster. An `EventEmitter` like the embedded broker: `'error'` reports a
 * failure of background work (a consumer's heartbeat or telemetry stream).
 */
export class RemoteBroker extends EventEmitter {
  /** Always `rocketmq`: where the embedded broker names its engine. */
  readonly engine = 'rocketmq' as const;
  readonly readOnly = false;
  private closed = false;
  private readonly client: GrpcClient;
  private readonly admin: RemotingAdmin;
  private readonly groups = new Map<string, RemoteGroup>();
  private readonly topics = new Set<string>();
  private readonly consumers = new Map<string, RemoteConsumer>();
  /** createTopic and createGroup calls not yet done; later calls wait for them. */
  private pendingAdmin: Promise<void> = Promise.resolve();
  /** When this broker last sent or released a message (see `dispatchGraceMs`). */
  private lastVisibleAt = 0;
  private readonly parts: RemoteBrokerParts;

  private constructor(
    endpoint: string,
    private readonly namespace: string,
    nameServers: readonly string[],
    requestTimeoutMs: number,
    private readonly queuesPerBroker: number,
    private readonly limits: BrokerLimits,
    private readonly dispatchGraceMs: number,
  ) {
    super();
    this.client = new GrpcClient(endpoint, clientId('producer'), requestTimeoutMs);
    this.admin = new RemotingAdmin(nameServers);
    this.parts = {
      endpoint,
      namespace,
      requestTimeoutMs,
      limits,
      settled: () => this.pendingAdmin,
      graceLeftMs: () => Math.max(0, this.lastVisibleAt + this.dispatchGraceMs - Date.now()),
      touched: () => {
        this.lastVisibleAt = Date.now();
      },
      groupOf: (name) => this.groupOf(name),
      checkOpen: () => this.checkOpen(),
      release: (consumer) => {
        if (this.consumers.get(consumer.clientId) === consumer) this.consumers.delete(consumer.clientId);
      },
      report: (error, during) => this.report(error, during),
    };
  }

  /** Connects to a RocketMQ proxy; see `ConnectOptions`. Throws `DEPENDENCY_MISSING` without the optional packages. */
  static async connect(options: ConnectOptions): Promise<RemoteBroker> {
    if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options must be an object');
    const endpoint = checkEndpoint(options.endpoints, 8081);
    const namespace = options.namespace ?? '';
    if (typeof namespace !== 'string' || (namespace !== '' && !isName(namespace))) {
      throw new InvalidArgumentError('namespace must be 1..127 characters of [A-Za-z0-9_-]', { value: namespace });
    }
    const host = endpoint.slice(0, endpoint.lastIndexOf(':'));
    const given = options.nameServers ?? `${host}:${NAMESRV_PORT}`;
    const nameServers = (typeof given === 'string' ? given.split(/[;,]/) : [...given]).map((address) =>
      checkEndpoint(address.trim(), NAMESRV_PORT),
    );
    const requestTimeoutMs = positive(options.requestTimeoutMs, 'requestTimeoutMs', DEFAULT_REQUEST_TIMEOUT_MS);
    const queuesPerBroker = positive(options.queuesPerBroker, 'queuesPerBroker', DEFAULT_QUEUES_PER_BROKER);
    const limits = resolveLimits(options.limits);
    const grace = options.dispatchGraceMs ?? DEFAULT_DISPATCH_GRACE_MS;
    if (!Number.isSafeInteger(grace) || grace < 0) {
      throw new InvalidArgumentError('dispatchGraceMs must be a non-negative integer', { value: grace });
    }
    return new RemoteBroker(endpoint, namespace, nameServers, requestTimeoutMs, queuesPerBroker, limits, grace);
  }

  /**
   * Creates or updates a LITE parent topic on every broker of the cluster. Returns a promise (the
   * embedded broker's returns nothing; awaiting it there is harmless). Later calls wait for it.
   */
  createTopic(name: string, options: TopicOptions = {}): Promise<void> {
    this.checkOpen();
    requireName(name, 'topic');
    const attributes: Record<string, string> = { 'message.type': 'LITE' };
    if (options.liteTopicExpirationMs !== undefined) {
      const ms = options.liteTopicExpirationMs;
      if (!Number.isSafeInteger(ms) || ms <= 0) {
        throw new InvalidArgumentError('liteTopicExpirationMs must be a positive integer', { value: ms });
      }
      // RocketMQ counts lite topic expiry in whole minutes.
      attributes['lite.topic.expiration'] = String(Math.max(1, Math.ceil(ms / 60_000)));
    }
    this.topics.add(name);
    return this.enqueueAdmin(() =>
      this.admin.createTopic({ name: this.wrap(name), queues: this.queuesPerBroker, attributes }),
    );
  }

  /** Creates or updates a lite consumer group bound to `options.bindTopic`; see `createTopic` on the promise. */
  createGroup(name: string, options: GroupOptions): Promise<void> {
    this.checkOpen();
    requireName(name, 'group');
    if (options === null || typeof options !== 'object') throw new InvalidArgumentError('group options are required');
    requireName(options.bindTopic, 'bindTopic');
    const subModel = options.subModel ?? 'shared';
    if (subModel !== 'shared' && subModel !== 'exclusive') {
      throw new InvalidArgumentError('subModel must be "shared" or "exclusive"', { value: subModel });
    }
    if (options.wildcard === true) {
      throw new UnsupportedError('RocketMQ 5.5.0 has no lite topic patterns: wildcard groups are refused', {
        value: name,
      });
    }
    if (options.keyShared !== undefined) {
      throw new UnsupportedError('RocketMQ has no key-shared lite groups', { value: name });
    }
    const maxReconsumeTimes = options.maxReconsumeTimes ?? DEFAULT_MAX_RECONSUME_TIMES;
    if (!Number.isSafeInteger(maxReconsumeTimes) || maxReconsumeTimes < 0) {
      throw new InvalidArgumentError('maxReconsumeTimes must be a non-negative integer', { value: maxReconsumeTimes });
    }
    this.groups.set(name, { name, bindTopic: options.bindTopic, maxReconsumeTimes });
    return this.enqueueAdmin(() =>
      this.admin.createGroup({
        name: this.wrap(name),
        maxReconsumeTimes,
        attributes: {
          'lite.bind.topic': this.wrap(options.bindTopic),
          'lite.sub.model': subModel === 'shared' ? 'Shared' : 'Exclusive',
          'lite.sub.client.quota': String(this.limits.maxLiteTopicsPerClient),
          'lite.sub.client.max.event.cnt': String(Math.max(10, this.limits.maxEventsPerClient)),
        },
      }),
    );
  }

  /** Sends one message; resolves once RocketMQ stored it. */
  async send(topic: string, message: SendMessage): Promise<SendResult> {
    this.checkOpen();
    requireName(topic, 'topic');
    checkSendMessage(message, this.limits);
    await this.pendingAdmin;
    const request = { messages: [toProto(this.namespace, topic, message, Date.now())] };
    let entry: { status: ProtoStatus; messageId: string; offset: number } | undefined;
    // A busy broker refuses with TOO_MANY_REQUESTS (flow control) without storing the message: the
    // same message (same id) is sent again after a backoff, as RocketMQ's own clients do.
    for (let attempt = 1; ; attempt++) {
      const response = await this.client.raw<{
        status: ProtoStatus;
        entries: { status: ProtoStatus; messageId: string; offset: number }[];
      }>('sendMessage', request);
      entry = response.entries[0];
      const status = entry?.status ?? response.status;
      if (status.code !== 'TOO_MANY_REQUESTS' || attempt === MAX_SEND_ATTEMPTS) {
        checkStatus(response.status, 'sendMessage');
        checkStatus(entry?.status, 'sendMessage');
        break;
      }
      await sleep(Math.min(FLOW_CONTROL_MAX_BACKOFF_MS, FLOW_CONTROL_BACKOFF_MS * 2 ** (attempt - 1)));
    }
    this.lastVisibleAt = Date.now();
    return { messageId: entry?.messageId ?? '', liteTopic: message.liteTopic, offset: Number(entry?.offset ?? 0) };
  }

  /**
   * Sends messages one call each: the proxy spreads lite topics over queues and brokers by name only
   * for single-message calls, so a lite topic's messages go one after another (in order) while
   * different lite topics go in parallel. Resolves in the order given; the first failure rejects
   * (messages already sent stay sent).
   */
  async sendBatch(topic: string, messages: readonly SendMessage[]): Promise<SendResult[]> {
    this.checkOpen();
    requireName(topic, 'topic');
    if (!Array.isArray(messages)) throw new InvalidArgumentError('messages must be an array', { value: messages });
    for (const message of messages) checkSendMessage(message, this.limits);
    const lanes = new Map<string, number[]>();
    messages.forEach((message, i) => {
      const lane = lanes.get(message.liteTopic);
      if (lane === undefined) lanes.set(message.liteTopic, [i]);
      else lane.push(i);
    });
    const results: SendResult[] = new Array(messages.length);
    const queue = [...lanes.values()];
    const worker = async () => {
      for (let lane = queue.shift(); lane !== undefined; lane = queue.shift()) {
        for (const i of lane) results[i] = await this.send(topic, messages[i] as SendMessage);
      }
    };
    await Promise.all(Array.from({ length: Math.min(SEND_CONCURRENCY, queue.length) }, worker));
    return results;
  }

  /**
   * A consumer: client `clientId` of `group`. A group made elsewhere is looked up on the brokers by
   * the consumer's first call, which rejects with `GROUP_NOT_FOUND` if no broker has it.
   */
  consumer(options: { group: string; clientId: string }): RemoteConsumer {
    this.checkOpen();
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('consumer options are required');
    const group = requireName(options.group, 'group');
    const id = options.clientId;
    if (typeof id !== 'string' || id.length === 0) {
      throw new InvalidArgumentError('clientId must be a non-empty string', { value: id });
    }
    const existing = this.consumers.get(id);
    if (existing !== undefined && !existing.closed) {
      throw new InvalidArgumentError(`client ${id} is already open in group ${existing.group}`, { value: id });
    }
    const consumer = new RemoteConsumer(this.parts, group, id);
    this.consumers.set(id, consumer);
    return consumer;
  }

  /** Nothing to run: RocketMQ keeps its own time. Present so code written for manual timers runs. */
  tick(): void {
    this.checkOpen();
  }

  /** Closes every consumer (their streams and timers) and the connections. Safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pendingAdmin.catch(() => undefined);
    await Promise.allSettled([...this.consumers.values()].map((consumer) => consumer.close()));
    this.consumers.clear();
    this.client.close();
    this.admin.close();
  }

  private async groupOf(name: string): Promise<RemoteGroup> {
    await this.pendingAdmin.catch(() => undefined);
    const known = this.groups.get(name);
    if (known !== undefined) return known;
    const config = await this.admin.group(this.wrap(name));
    const bound = config?.attributes['lite.bind.topic'];
    if (config === undefined || bound === undefined) {
      throw new GroupNotFoundError(`group ${name} does not exist (or is not a lite group)`, { value: name });
    }
    const prefix = this.namespace === '' ? '' : `${this.namespace}%`;
    const group = {
      name,
      bindTopic: bound.startsWith(prefix) ? bound.slice(prefix.length) : bound,
      maxReconsumeTimes: config.retryMaxTimes,
    };
    this.groups.set(name, group);
    return group;
  }

  private enqueueAdmin(work: () => Promise<void>): Promise<void> {
    const next = this.pendingAdmin.catch(() => undefined).then(work);
    this.pendingAdmin = next;
    // Callers of the embedded broker's synchronous createTopic may not await: an unheard failure
    // is reported as a background error, and the next call that waits for it sees it too.
    next.catch(() => undefined);
    return next;
  }

  private wrap(name: string): string {
    return resource(this.namespace, name).name;
  }

  private checkOpen(): void {
    if (this.closed) throw new ClosedError('the broker is closed');
  }

  private report(error: unknown, during: string): void {
    if (this.listenerCount('error') > 0) this.emit('error', error, { during });
    else {
      const message = `litetopic broker (rocketmq): ${during} failed: ${error instanceof Error ? error.message : String(error)}`;
      process.emitWarning(message, { code: 'LITETOPIC_BACKGROUND_ERROR', detail: String(error) });
    }
  }
}

/** A RocketMQ client id, unique per connection: `host@pid@n@role`. */
export function clientId(role: string): string {
  return `${hostname()}@${process.pid}@${++connections}@${role}`;
}

function checkEndpoint(value: unknown, defaultPort: number): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new InvalidArgumentError('endpoints must be "host:port"', { value });
  }
  return /:\d+$/.test(value) ? value : `${value}:${defaultPort}`;
}

function positive(value: unknown, what: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new InvalidArgumentError(`${what} must be a positive integer`, { value });
  }
  return value;
}
