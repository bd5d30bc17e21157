/**
 * RocketMQ's remoting protocol, as much of it as creating topics and groups needs: the name server
 * lists the brokers (GET_BROKER_CLUSTER_INFO), and each master broker creates or updates a topic
 * (UPDATE_AND_CREATE_TOPIC) or a subscription group (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP). This is
 * the interface RocketMQ's own admin tool uses; no extra process is needed. A consumer of a group
 * made elsewhere reads the group's configuration (GET_SUBSCRIPTIONGROUP_CONFIG) for its parent topic.
 *
 * A frame is a 4-byte big-endian length of what follows, a 4-byte word whose high byte is the
 * header's serialization (0: JSON) and whose low 24 bits are the header's length, the JSON header
 * (`code`, `opaque`, `flag`, `extFields`, ...) and the body.
 */
import { connect, type Socket } from 'node:net';
import { RemoteError } from '../errors.js';

const GET_BROKER_CLUSTER_INFO = 106;
const UPDATE_AND_CREATE_TOPIC = 17;
const UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200;
const GET_SUBSCRIPTIONGROUP_CONFIG = 352;
/** ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST. */
const SUBSCRIPTION_GROUP_NOT_EXIST = 26;
const SUCCESS = 0;
/** The response bit of a header's `flag`. */
const RESPONSE_FLAG = 1;
/** RocketMQ's `Version` ordinal the header announces (any 5.x release is accepted). */
const PROTOCOL_VERSION = 500;
/** Read and write permission of a topic (PermName.PERM_READ | PERM_WRITE). */
const PERM_READ_WRITE = 6;

interface Header {
  code: number;
  opaque: number;
  flag: number;
  remark?: string | null;
  extFields?: Record<string, string>;
}

interface Response {
  header: Header;
  body: Buffer;
}

/** One remoting connection: requests matched to their responses by `opaque`. */
class RemotingConnection {
  private readonly socket: Socket;
  private readonly pending = new Map<number, { resolve: (r: Response) => void; reject: (e: Error) => void }>();
  private buffered: Buffer = Buffer.alloc(0);
  private nextOpaque = 1;
  private failure: Error | undefined;

  /** Failed (closed or refused): a new connection is needed. */
  get failed(): boolean {
    return this.failure !== undefined;
  }

  constructor(readonly address: string) {
    const [host, port] = splitAddress(address);
    this.socket = connect({ host, port });
    this.socket.on('data', (chunk) => this.receive(chunk));
    this.socket.on('error', (error) => this.fail(new RemoteError(`${address}: ${error.message}`, { cause: error })));
    this.socket.on('close', () => this.fail(new RemoteError(`${address}: connection closed`)));
  }

  request(code: number, extFields: Record<string, string>, body?: Buffer, timeoutMs = 5_000): Promise<Response> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    const opaque = this.nextOpaque++;
    const header = Buffer.from(
      JSON.stringify({ code, language: 'JAVA', version: PROTOCOL_VERSION, opaque, flag: 0, extFields }),
    );
    const payload = body ?? Buffer.alloc(0);
    const frame = Buffer.alloc(8);
    frame.writeUInt32BE(4 + header.length + payload.length, 0);
    frame.writeUInt32BE(header.length & 0xffffff, 4); // serialization byte 0: JSON
    return new Promise<Response>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(opaque);
        reject(new RemoteError(`${this.address}: request ${code} timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(opaque, {
        resolve: (response) => {
          clearTimeout(timer);
          resolve(response);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      this.socket.write(Buffer.concat([frame, header, payload]));
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private receive(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    while (this.buffered.length >= 4) {
      const length = this.buffered.readUInt32BE(0);
      if (this.buffered.length < 4 + length) return;
      const frame = this.buffered.subarray(4, 4 + length);
      this.buffered = this.buffered.subarray(4 + length);
      const headerLength = frame.readUInt32BE(0) & 0xffffff;
      const header = JSON.parse(frame.subarray(4, 4 + headerLength).toString('utf8')) as Header;
      if ((header.flag & RESPONSE_FLAG) === 0) continue; // a request from the server: none is expected
      const waiter = this.pending.get(header.opaque);
      this.pending.delete(header.opaque);
      waiter?.resolve({ header, body: Buffer.from(frame.subarray(4 + headerLength)) });
    }
  }

  private fail(error: Error): void {
    this.failure ??= error;
    for (const waiter of this.pending.values()) waiter.reject(error);
    this.pending.clear();
  }
}

function splitAddress(address: string): [string, number] {
  const colon = address.lastIndexOf(':');
  return [address.slice(0, colon), Number(address.slice(colon + 1))];
}

/**
 * RocketMQ answers with fastjson, which writes numeric map keys bare (`{0:"host:port"}`); they are
 * quoted before `JSON.parse`.
 */
function parseFastJson(text: string): unknown {
  return JSON.parse(text.replace(/([{,])(-?\d+):/g, '$1"$2":'));
}

function check(response: Response, what: string): void {
  if (response.header.code !== SUCCESS) {
    throw new RemoteError(`${what}: ${response.header.remark ?? `code ${response.header.code}`}`, {
      status: String(response.header.code),
    });
  }
}

export interface TopicSpec {
  name: string;
  /** Queues per broker; lite topics are spread over them (and over brokers) by name. */
  queues: number;
  /** `+key=value` attributes, comma-separated as RocketMQ's admin tool writes them. */
  attributes: Record<string, string>;
}

export interface GroupSpec {
  name: string;
  maxReconsumeTimes: number;
  attributes: Record<string, string>;
}

/** Creates topics and groups on every master broker of the name server's cluster(s). */
export class RemotingAdmin {
  private readonly connections = new Map<string, RemotingConnection>();

  constructor(private readonly nameServers: readonly string[]) {}

  /** The master address of every broker the name server knows, by broker name. */
  async brokers(): Promise<Map<string, string>> {
    let lastError: unknown;
    for (const address of this.nameServers) {
      try {
        const response = await this.connection(address).request(GET_BROKER_CLUSTER_INFO, {});
        check(response, `cluster info from ${address}`);
        const info = parseFastJson(response.body.toString('utf8')) as {
          brokerAddrTable?: Record<string, { brokerAddrs?: Record<string, string> }>;
        };
        const masters = new Map<string, string>();
        for (const [name, data] of Object.entries(info.brokerAddrTable ?? {})) {
          const master = data.brokerAddrs?.['0'];
          if (master !== undefined) masters.set(name, master);
        }
        return masters;
      } catch (error) {
        lastError = error;
      }
    }
    throw lastError instanceof Error ? lastError : new RemoteError('no name server answered');
  }

  async createTopic(topic: TopicSpec): Promise<void> {
    const attributes = Object.entries(topic.attributes)
      .map(([key, value]) => `+${key}=${value}`)
      .join(',');
    await this.onEveryBroker('create topic', (connection) =>
      connection.request(UPDATE_AND_CREATE_TOPIC, {
        topic: topic.name,
        defaultTopic: 'TBW102',
        readQueueNums: String(topic.queues),
        writeQueueNums: String(topic.queues),
        perm: String(PERM_READ_WRITE),
        topicFilterType: 'SINGLE_TAG',
        topicSysFlag: '0',
        order: 'false',
        attributes,
      }),
    );
  }

  async createGroup(group: GroupSpec): Promise<void> {
    const attributes: Record<string, string> = {};
    for (const [key, value] of Object.entries(group.attributes)) attributes[`+${key}`] = value;
    const body = Buffer.from(
      JSON.stringify({
        groupName: group.name,
        consumeEnable: true,
        consumeFromMinEnable: true,
        consumeBroadcastEnable: true,
        retryQueueNums: 1,
        retryMaxTimes: group.maxReconsumeTimes,
        brokerId: 0,
        whichBrokerWhenConsumeSlowly: 1,
        notifyConsumerIdsChangedEnable: true,
        attributes,
      }),
    );
    await this.onEveryBroker('create group', (connection) =>
      connection.request(UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body),
    );
  }

  /**
   * A group's configuration from the first broker that has it (attribute names without their `+`),
   * or undefined when no broker has it.
   */
  async group(name: string): Promise<{ retryMaxTimes: number; attributes: Record<string, string> } | undefined> {
    for (const address of (await this.brokers()).values()) {
      const response = await this.connection(address).request(GET_SUBSCRIPTIONGROUP_CONFIG, { group: name });
      if (response.header.code === SUBSCRIPTION_GROUP_NOT_EXIST) continue;
      check(response, `group ${name}`);
      const config = parseFastJson(response.body.toString('utf8')) as {
        retryMaxTimes?: number;
        attributes?: Record<string, string>;
      };
      return { retryMaxTimes: config.retryMaxTimes ?? 16, attributes: config.attributes ?? {} };
    }
    return undefined;
  }

  close(): void {
    for (const connection of this.connections.values()) connection.close();
    this.connections.clear();
  }

  private async onEveryBroker(what: string, send: (connection: RemotingConnection) => Promise<Response>) {
    const brokers = await this.brokers();
    if (brokers.size === 0) throw new RemoteError(`${what}: the name server lists no broker`);
    await Promise.all(
      [...brokers].map(async ([name, address]) => check(await send(this.connection(address)), `${what} on ${name}`)),
    );
  }

  private connection(address: string): RemotingConnection {
    let connection = this.connections.get(address);
    if (connection === undefined || connection.failed) {
      connection = new RemotingConnection(address);
      this.connections.set(address, connection);
    }
    return connection;
  }
}
