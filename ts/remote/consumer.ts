/**
 * A consumer on RocketMQ: one gRPC client of type LITE_PUSH_CONSUMER. Its settings go up the
 * telemetry stream (which also brings the unsubscribe notices down), subscriptions are
 * SyncLiteSubscription calls, and POP / ack / changeInvisibleTime are ReceiveMessage /
 * AckMessage / ChangeInvisibleDuration, which the 5.5 proxy serves for lite consumers by the
 * broker's lite POP. A POP asks every broker of the parent topic, since lite topics are spread
 * over them.
 */
import { EventEmitter } from 'node:events';
import type { ClientDuplexStream } from '@grpc/grpc-js';
import { DEFAULT_MAX_RECONSUME_TIMES } from '../broker/broker.js';
import type { ConsumerEvents, SubscribeOptions } from '../broker/consumer.js';
import { checkLiteTopic } from '../broker/names.js';
import { type MessageHandler, type Running, type RunOptions, type RunTarget, startRun } from '../broker/run.js';
import { requireStart, type StartPosition } from '../broker/start.js';
import { type StreamedMessage, type StreamOptions, streamMessages } from '../broker/stream.js';
import { DEFAULT_INVISIBLE_TIME_MS, type PopOptions, type PoppedMessage } from '../broker/types.js';
import { ClosedError, InvalidArgumentError, InvalidReceiptError, QuotaExceededError, RemoteError } from '../errors.js';
import { clientId as newClientId, type RemoteBrokerParts, type RemoteGroup } from './broker.js';
import { GrpcClient } from './grpc.js';
import { duration, fromProto, type ProtoMessage, resource } from './message.js';
import { type ProtoStatus, statusError } from './status.js';

const HEARTBEAT_INTERVAL_MS = 10_000;
/** How often the broker list of the parent topic is looked up again (brokers may join). */
const ROUTE_REFRESH_MS = 30_000;
const DEFAULT_POP_NUM = 32;
/** First wait before a dropped telemetry stream is opened again; doubled per failed attempt. */
const TELEMETRY_RETRY_MS = 1_000;
const TELEMETRY_MAX_RETRY_MS = 30_000;
/** Fields of the shortest receipt handle a RocketMQ broker decodes. */
const RECEIPT_HANDLE_MIN_FIELDS = 8;

interface Handle {
  /** RocketMQ's current receipt handle (changeInvisibleTime gets a new one). */
  current: string;
  messageId: string;
  liteTopic: string;
}

export class RemoteConsumer extends EventEmitter<ConsumerEvents> {
  private readonly client: GrpcClient;
  private telemetryStream: ClientDuplexStream<unknown, unknown> | undefined;
  private readonly ready: Promise<void>;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  /** @internal Telemetry streams reopened with the subscription synced on them (for tests). */
  reconnects = 0;
  private readonly topics = new Set<string>();
  /** The handle handed out → what acking it needs now. */
  private readonly handles = new Map<string, Handle>();
  /** The handle handed out → the last call on it still under way (see `inTurn`). */
  private readonly pending = new Map<string, Promise<void>>();
  private route: { brokers: string[]; at: number } | undefined;
  private nextBroker = 0;
  private isClosed = false;
  /** `close` has begun (it releases the in-flight messages before it marks the consumer closed). */
  private closing = false;
  private resolvedGroup: RemoteGroup | undefined;
  /** The group's `lite.sub.client.quota` from the proxy's settings; 0 when it sent none. */
  private groupQuota = 0;

  /** @internal Use `broker.consumer()`. */
  constructor(
    private readonly parts: RemoteBrokerParts,
    private readonly groupName: string,
    readonly clientId: string,
  ) {
    super();
    this.client = new GrpcClient(parts.endpoint, newClientId(`${groupName}@${clientId}`), parts.requestTimeoutMs);
    this.ready = this.start();
    this.ready.catch(() => undefined); // the first call that waits for it sees the failure
  }

  get group(): string {
    return this.groupName;
  }

  /** The group's parent topic and limits, known once `ready` resolved. */
  private get groupInfo(): RemoteGroup {
    if (this.resolvedGroup === undefined) throw new ClosedError('the consumer did not start');
    return this.resolvedGroup;
  }

  get liteTopics(): string[] {
    return [...this.topics];
  }

  /** RocketMQ has no patterns: always empty. */
  get patterns(): string[] {
    return [];
  }

  get closed(): boolean {
    return this.isClosed;
  }

  async subscribe(items: readonly string[], options?: SubscribeOptions): Promise<void> {
    this.checkOpen();
    const start = requireStart(options?.offset);
    const list = this.liteTopicList(items);
    await this.ready;
    this.checkClientQuota(new Set([...this.topics, ...list]).size, list);
    await this.sync0('PARTIAL_ADD', list, start);
    for (const name of list) this.topics.add(name);
  }

  async unsubscribe(items: readonly string[]): Promise<void> {
    this.checkOpen();
    const list = this.liteTopicList(items);
    await this.sync0('PARTIAL_REMOVE', list, undefined);
    for (const name of list) this.topics.delete(name);
  }

  /**
   * Complete add: the subscription becomes exactly `items`. RocketMQ takes a start position only
   * with a partial add, so the lite topics new to this client are added with it first.
   */
  async sync(items: readonly string[], options?: SubscribeOptions): Promise<void> {
    this.checkOpen();
    const start = requireStart(options?.offset);
    const list = this.liteTopicList(items);
    await this.ready;
    this.checkClientQuota(new Set(list).size, list);
    const added = list.filter((name) => !this.topics.has(name));
    if (added.length > 0) await this.sync0('PARTIAL_ADD', added, start);
    await this.sync0('COMPLETE_ADD', list, undefined);
    this.topics.clear();
    for (const name of list) this.topics.add(name);
  }

  /** POP: up to `maxNum` messages of this client's lite topics, from every broker; waits up to `waitMs`. */
  async pop(options: PopOptions = {}): Promise<PoppedMessage[]> {
    this.checkOpen();
    const { maxNum, invisibleTimeMs, waitMs } = this.popOptions(options);
    await this.ready;
    let popped: PoppedMessage[];
    try {
      popped = await this.popFrom(await this.brokers(), maxNum, invisibleTimeMs, waitMs);
    } catch (error) {
      // A POP under way when the consumer closes ends empty, as on the embedded broker; the proxy
      // answers one that reaches it after the close as a call of an unknown client.
      if (this.isClosed) return [];
      throw error;
    }
    if (!this.closing) return popped;
    // Answered while the consumer closes: the close makes its in-flight messages visible again, and
    // the proxy may hand them straight to this long poll. It ends empty and gives them back too
    // (if the client is already gone, they come back at their invisible time).
    await Promise.allSettled(popped.map((message) => this.changeInvisibleTime(message, 0)));
    return [];
  }

  private async popFrom(
    brokers: string[],
    maxNum: number,
    invisibleTimeMs: number,
    waitMs: number,
  ): Promise<PoppedMessage[]> {
    const found = await this.quickRounds(brokers, maxNum, invisibleTimeMs);
    if (found.length > 0) return found;
    // Nothing ready. RocketMQ hands a stored or released message to its lite topic's consumers
    // asynchronously: right after this broker sent or released one, a POP that asked for no wait
    // still waits out the dispatch grace for it.
    const wait = Math.max(waitMs, this.parts.graceLeftMs());
    if (wait === 0) return found;
    // A long poll on every broker at once; what comes beyond maxNum is made visible again.
    const rounds = await Promise.all(brokers.map((broker) => this.receive(broker, maxNum, invisibleTimeMs, wait)));
    const all = rounds.flat();
    for (const extra of all.slice(maxNum)) await this.changeInvisibleTime(extra, 0).catch(() => undefined);
    const popped = all.slice(0, maxNum);
    // What arrived with the first message may be followed at once by more.
    if (popped.length > 0 && popped.length < maxNum) {
      popped.push(...(await this.quickRounds(brokers, maxNum - popped.length, invisibleTimeMs)));
    }
    return popped;
  }

  /**
   * Rounds over the brokers without waiting, starting at a different one each time, until a round
   * finds nothing more: one lite POP hands out what the broker's dispatch has queued for this
   * client so far, not always everything ready.
   */
  private async quickRounds(brokers: string[], maxNum: number, invisibleTimeMs: number): Promise<PoppedMessage[]> {
    const found: PoppedMessage[] = [];
    for (let before = -1; found.length > before && found.length < maxNum; ) {
      before = found.length;
      for (let i = 0; i < brokers.length && found.length < maxNum; i++) {
        const broker = brokers[(this.nextBroker + i) % brokers.length] as string;
        found.push(...(await this.receive(broker, maxNum - found.length, invisibleTimeMs, 0)));
      }
    }
    this.nextBroker++;
    return found;
  }

  async ack(messageOrHandle: PoppedMessage | string): Promise<void> {
    this.checkOpen();
    await this.ready;
    const given = handleOf(messageOrHandle);
    await this.inTurn(given, async () => {
      const handle = this.handleInfo(given, messageOrHandle);
      const response = await this.client.call<{
        status: ProtoStatus;
        entries: { status: ProtoStatus }[];
      }>('ackMessage', {
        group: this.resource(this.groupInfo.name),
        topic: this.resource(this.groupInfo.bindTopic),
        entries: [{ messageId: handle.messageId, receiptHandle: handle.current, liteTopic: handle.liteTopic }],
      });
      const status = response.entries[0]?.status;
      if (status !== undefined && status.code !== 'OK') throw this.receiptError(status, given);
      this.handles.delete(given);
    });
  }

  async changeInvisibleTime(messageOrHandle: PoppedMessage | string, invisibleTimeMs: number): Promise<void> {
    this.checkOpen();
    if (!Number.isSafeInteger(invisibleTimeMs) || invisibleTimeMs < 0) {
      throw new InvalidArgumentError('invisibleTimeMs must be a non-negative integer', { value: invisibleTimeMs });
    }
    await this.ready;
    const given = handleOf(messageOrHandle);
    await this.inTurn(given, async () => {
      const handle = this.handleInfo(given, messageOrHandle);
      const response = await this.client.raw<{ status: ProtoStatus; receiptHandle: string }>(
        'changeInvisibleDuration',
        {
          group: this.resource(this.groupInfo.name),
          topic: this.resource(this.groupInfo.bindTopic),
          receiptHandle: handle.current,
          invisibleDuration: duration(invisibleTimeMs),
          messageId: handle.messageId,
          liteTopic: handle.liteTopic,
        },
      );
      if (response.status.code !== 'OK') throw this.receiptError(response.status, given);
      this.handles.set(given, { ...handle, current: response.receiptHandle });
      if (invisibleTimeMs === 0) this.parts.touched();
    });
  }

  /** To the group's dead-letter queue now (RocketMQ's %DLQ% topic of the group). */
  async deadLetter(messageOrHandle: PoppedMessage | string): Promise<void> {
    this.checkOpen();
    await this.ready;
    const given = handleOf(messageOrHandle);
    const attempt = typeof messageOrHandle === 'object' ? messageOrHandle.reconsumeTimes + 1 : 1;
    await this.inTurn(given, async () => {
      const handle = this.handleInfo(given, messageOrHandle);
      const response = await this.client.raw<{ status: ProtoStatus }>('forwardMessageToDeadLetterQueue', {
        group: this.resource(this.groupInfo.name),
        topic: this.resource(this.groupInfo.bindTopic),
        receiptHandle: handle.current,
        messageId: handle.messageId,
        deliveryAttempt: attempt,
        maxDeliveryAttempts: this.groupInfo.maxReconsumeTimes + 1,
        liteTopic: handle.liteTopic,
      });
      if (response.status.code !== 'OK') throw this.receiptError(response.status, given);
      this.handles.delete(given);
    });
  }

  /**
   * Runs the calls on one handed-out handle one after another. RocketMQ gives a message a new
   * receipt handle with every change of its invisible time and refuses the old one from then on, so
   * an ack or extension sent while another change is under way would go with a handle about to expire.
   */
  private async inTurn(given: string, call: () => Promise<void>): Promise<void> {
    const before = this.pending.get(given) ?? Promise.resolve();
    const mine = before.then(call, call);
    const settled = mine.catch(() => undefined);
    this.pending.set(given, settled);
    try {
      await mine;
    } finally {
      if (this.pending.get(given) === settled) this.pending.delete(given);
    }
  }

  heartbeat(): void {
    this.checkOpen();
  }

  run(handler: MessageHandler, options?: RunOptions): Running {
    this.checkOpen();
    return startRun(this.settler(), handler, options);
  }

  /** As the embedded consumer's `messages()`: POPs with long poll until closed or aborted. */
  messages(options?: StreamOptions): AsyncGenerator<StreamedMessage, void, undefined> {
    return streamMessages(this.settler(), options, (pop) => this.popOptions(pop));
  }

  /** What `run()` and `messages()` call on this consumer. */
  private settler(): RunTarget {
    const consumer = this;
    return {
      get closed() {
        return consumer.isClosed;
      },
      pop: (pop) => this.pop(pop),
      ack: (message) => this.ack(message),
      changeInvisibleTime: (message, ms) => this.changeInvisibleTime(message, ms),
      deadLetter: (message) => this.deadLetter(message),
      get maxReconsumeTimes() {
        return consumer.resolvedGroup?.maxReconsumeTimes ?? DEFAULT_MAX_RECONSUME_TIMES;
      },
      keyShared: false,
      report: (error, during) => this.parts.report(error, during),
    };
  }

  /**
   * Drops the subscription and ends the telemetry stream and heartbeat. In-flight messages are made
   * visible again now unless `release: false`.
   */
  async close(options: { release?: boolean } = {}): Promise<void> {
    if (options === null || typeof options !== 'object') {
      throw new InvalidArgumentError('close options must be an object');
    }
    if (this.isClosed) return;
    this.closing = true;
    if (options.release ?? true) {
      await Promise.allSettled([...this.handles.keys()].map((handle) => this.changeInvisibleTime(handle, 0)));
    }
    this.isClosed = true;
    this.parts.release(this);
    try {
      await this.ready;
      await this.client.raw('syncLiteSubscription', {
        action: 'COMPLETE_REMOVE',
        topic: this.resource(this.groupInfo.bindTopic),
        group: this.resource(this.groupInfo.name),
        liteTopicSet: [],
      });
      await this.client.raw('notifyClientTermination', { group: this.resource(this.groupInfo.name) });
    } catch {
      // Closing anyway: the proxy drops a client whose stream ends.
    } finally {
      // After `ready`: a start still under way when close began has set its timer and stream by now.
      clearInterval(this.heartbeatTimer);
      clearTimeout(this.reconnectTimer);
      this.telemetryStream?.end();
      this.telemetryStream?.cancel();
      this.client.close();
      this.handles.clear();
      this.pending.clear();
    }
  }

  /** Telemetry handshake (the proxy learns this client's type and group), then a first heartbeat. */
  private async start(): Promise<void> {
    this.resolvedGroup = await this.parts.groupOf(this.groupName);
    await this.openTelemetry();
    await this.sendHeartbeat();
    if (this.isClosed) return; // closed while starting: no heartbeat to keep
    this.heartbeatTimer = setInterval(() => {
      this.sendHeartbeat().catch((error: unknown) => {
        if (!this.isClosed) this.parts.report(error, 'a RocketMQ heartbeat');
      });
    }, HEARTBEAT_INTERVAL_MS);
    this.heartbeatTimer.unref();
  }

  /**
   * Opens a telemetry stream, sends this client's settings and resolves when the proxy answers with
   * its own. Should the stream end or fail later (the proxy restarted, the connection dropped), it
   * is opened again (see `reconnect`): without it the proxy would not know this client's settings
   * and could not tell it of evictions.
   */
  private async openTelemetry(): Promise<void> {
    const stream = this.client.telemetry();
    this.telemetryStream = stream;
    let answered = false;
    const settled = new Promise<void>((resolve, reject) => {
      stream.on(
        'data',
        (command: {
          command?: string;
          status?: ProtoStatus;
          settings?: { subscription?: { liteSubscriptionQuota?: number } };
          notifyUnsubscribeLiteCommand?: { liteTopic: string };
        }) => {
          if (command.command === 'settings') {
            this.groupQuota = Number(command.settings?.subscription?.liteSubscriptionQuota ?? 0);
            answered = true;
            resolve();
          } else if (command.command === 'notifyUnsubscribeLiteCommand' && command.notifyUnsubscribeLiteCommand) {
            const liteTopic = command.notifyUnsubscribeLiteCommand.liteTopic;
            this.topics.delete(liteTopic);
            this.emit('unsubscribed', { liteTopic, reason: 'evicted' });
          } else if (command.status && command.status.code !== 'OK') reject(statusError(command.status, 'telemetry'));
        },
      );
      const dropped = (error: Error | undefined) => {
        reject(error ?? new RemoteError('the telemetry stream ended', { status: 'UNAVAILABLE' }));
        // Once a stream is replaced or the consumer closes (which cancels it), its end is no news.
        if (this.isClosed || this.telemetryStream !== stream) return;
        this.telemetryStream = undefined;
        if (error !== undefined) this.parts.report(error, 'the RocketMQ telemetry stream');
        // A stream that never answered belongs to a start or a reconnect, which handle its failure.
        if (answered) this.reconnect(TELEMETRY_RETRY_MS);
      };
      stream.on('error', (error: Error) => dropped(error));
      stream.on('end', () => dropped(undefined));
    });
    stream.write({
      settings: {
        clientType: 'LITE_PUSH_CONSUMER',
        accessPoint: { scheme: 'IPv4', addresses: [endpointAddress(this.parts.endpoint)] },
        requestTimeout: duration(this.parts.requestTimeoutMs),
        subscription: {
          group: this.resource(this.groupInfo.name),
          subscriptions: [
            { topic: this.resource(this.groupInfo.bindTopic), expression: { type: 'TAG', expression: '*' } },
          ],
        },
        userAgent: { language: 'NODE_JS', version: '1.0.8', platform: process.platform, hostname: 'litetopic' },
      },
    });
    settled.catch(() => undefined); // a late failure after the deadline has no one to tell
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new RemoteError('the proxy sent no settings on the telemetry stream', { status: 'DEADLINE_EXCEEDED' }),
          ),
        this.parts.requestTimeoutMs,
      );
    });
    try {
      await Promise.race([settled, timedOut]);
    } catch (error) {
      if (this.telemetryStream === stream) this.telemetryStream = undefined;
      stream.cancel();
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Opens the telemetry stream again after `delayMs`, then syncs the subscription (the proxy may
   * have forgotten it with the client); a failed attempt is reported and retried, each wait twice
   * the last, up to `TELEMETRY_MAX_RETRY_MS`.
   */
  private reconnect(delayMs: number): void {
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (this.isClosed) return;
      this.openTelemetry()
        .then(() => this.sync0('COMPLETE_ADD', [...this.topics], undefined))
        .then(() => {
          this.reconnects++;
        })
        .catch((error: unknown) => {
          if (this.isClosed) return;
          this.parts.report(error, 'reopening the RocketMQ telemetry stream');
          this.reconnect(Math.min(delayMs * 2, TELEMETRY_MAX_RETRY_MS));
        });
    }, delayMs);
    this.reconnectTimer.unref();
  }

  private sendHeartbeat(): Promise<unknown> {
    return this.client.call('heartbeat', {
      group: this.resource(this.groupInfo.name),
      clientType: 'LITE_PUSH_CONSUMER',
    });
  }

  private async sync0(action: string, liteTopics: string[], start: StartPosition | undefined): Promise<void> {
    await this.ready;
    const request: Record<string, unknown> = {
      action,
      topic: this.resource(this.groupInfo.bindTopic),
      group: this.resource(this.groupInfo.name),
      liteTopicSet: liteTopics,
    };
    if (start !== undefined) request.offsetOption = offsetOption(start);
    await this.client.call('syncLiteSubscription', request);
  }

  /** The brokers holding the parent topic's queues, by name (looked up again every ROUTE_REFRESH_MS). */
  private async brokers(): Promise<string[]> {
    const now = Date.now();
    if (this.route !== undefined && now - this.route.at < ROUTE_REFRESH_MS) return this.route.brokers;
    const response = await this.client.call<{ status: ProtoStatus; messageQueues: { broker: { name: string } }[] }>(
      'queryRoute',
      {
        topic: this.resource(this.groupInfo.bindTopic),
        endpoints: { scheme: 'IPv4', addresses: [endpointAddress(this.parts.endpoint)] },
      },
    );
    const brokers = [...new Set(response.messageQueues.map((queue) => queue.broker.name))].sort();
    this.route = { brokers, at: now };
    return brokers;
  }

  private async receive(broker: string, maxNum: number, invisibleTimeMs: number, waitMs: number) {
    if (this.isClosed) return [];
    const messages = await this.client.receive<ProtoMessage>(
      {
        group: this.resource(this.groupInfo.name),
        messageQueue: {
          topic: this.resource(this.groupInfo.bindTopic),
          id: -1,
          permission: 'READ_WRITE',
          broker: { name: broker },
        },
        filterExpression: { type: 'TAG', expression: '*' },
        batchSize: maxNum,
        invisibleDuration: duration(invisibleTimeMs),
        autoRenew: false,
        longPollingTimeout: duration(waitMs),
      },
      waitMs + this.parts.requestTimeoutMs,
    );
    return messages.map((message) => {
      const receipt = message.systemProperties.receiptHandle ?? '';
      const popped = fromProto(message, receipt);
      popped.topic = this.groupInfo.bindTopic;
      this.handles.set(receipt, { current: receipt, messageId: popped.messageId, liteTopic: popped.liteTopic });
      return popped;
    });
  }

  private handleInfo(given: string, messageOrHandle: PoppedMessage | string): Handle {
    const known = this.handles.get(given);
    if (known !== undefined) return known;
    // The proxy answers a handle it cannot decode with INTERNAL_SERVER_ERROR, not as a bad receipt.
    if (!isReceiptHandle(given)) throw new InvalidReceiptError('not a RocketMQ receipt handle', { value: given });
    if (typeof messageOrHandle === 'object') {
      return { current: given, messageId: messageOrHandle.messageId, liteTopic: messageOrHandle.liteTopic };
    }
    return { current: given, messageId: '', liteTopic: '' };
  }

  private receiptError(status: ProtoStatus, handle: string): Error {
    const error = statusError(status, 'receipt');
    if (error instanceof InvalidReceiptError) return new InvalidReceiptError(error.message, { value: handle });
    return error;
  }

  private popOptions(options: PopOptions) {
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('pop options must be an object');
    const maxNum = options.maxNum ?? DEFAULT_POP_NUM;
    if (!Number.isSafeInteger(maxNum) || maxNum < 1 || maxNum > this.parts.limits.maxPopNum) {
      throw new InvalidArgumentError(`maxNum must be an integer from 1 to ${this.parts.limits.maxPopNum}`, {
        value: maxNum,
      });
    }
    const invisibleTimeMs = options.invisibleTimeMs ?? DEFAULT_INVISIBLE_TIME_MS;
    const waitMs = options.waitMs ?? 0;
    for (const [what, value] of [
      ['invisibleTimeMs', invisibleTimeMs],
      ['waitMs', waitMs],
    ] as const) {
      if (!Number.isSafeInteger(value) || value < 0) {
        throw new InvalidArgumentError(`${what} must be a non-negative integer`, { value });
      }
    }
    return { maxNum, invisibleTimeMs, waitMs };
  }

  /**
   * Lite topics one client may hold, checked before anything is sent (as the embedded broker and
   * RocketMQ's own clients do): the smaller of `limits.maxLiteTopicsPerClient` and the group's
   * `lite.sub.client.quota`, which the proxy sends with the client's settings.
   */
  private checkClientQuota(actual: number, names: string[]): void {
    const local = this.parts.limits.maxLiteTopicsPerClient;
    const limit = this.groupQuota > 0 ? Math.min(local, this.groupQuota) : local;
    if (actual > limit) {
      throw new QuotaExceededError(`maxLiteTopicsPerClient is ${limit}; this would make it ${actual}`, {
        quota: 'maxLiteTopicsPerClient',
        limit,
        actual,
        value: names,
      });
    }
  }

  private liteTopicList(items: readonly string[]): string[] {
    if (!Array.isArray(items)) throw new InvalidArgumentError('expected an array of strings', { value: items });
    return items.map((name) => checkLiteTopic(name, this.parts.limits));
  }

  private resource(name: string) {
    return resource(this.parts.namespace, name);
  }

  private checkOpen(): void {
    this.parts.checkOpen();
    if (this.isClosed) throw new ClosedError('the consumer is closed');
  }
}

function handleOf(messageOrHandle: PoppedMessage | string): string {
  if (typeof messageOrHandle === 'string') return messageOrHandle;
  if (messageOrHandle !== null && typeof messageOrHandle === 'object') return messageOrHandle.receiptHandle;
  throw new InvalidArgumentError('expected a popped message or a receipt handle', { value: messageOrHandle });
}

/**
 * Whether `text` has the shape of a RocketMQ receipt handle: at least eight fields separated by
 * spaces, of which the first three (start offset, retrieve time, invisible time) are numbers.
 */
function isReceiptHandle(text: string): boolean {
  const fields = text.split(' ');
  return fields.length >= RECEIPT_HANDLE_MIN_FIELDS && fields.slice(0, 3).every((field) => /^\d+$/.test(field));
}

function offsetOption(start: StartPosition): Record<string, unknown> {
  if ('policy' in start) return { policy: start.policy === 'min' ? 'MIN' : 'MAX' };
  if ('offset' in start) return { offset: start.offset };
  if ('tailN' in start) return { tailN: start.tailN };
  return { timestamp: start.timestamp };
}

function endpointAddress(endpoint: string): { host: string; port: number } {
  const colon = endpoint.lastIndexOf(':');
  return { host: endpoint.slice(0, colon), port: Number(endpoint.slice(colon + 1)) };
}
