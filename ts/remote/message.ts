/**
 * litetopic's message shapes to and from RocketMQ's protobuf `Message`: a lite topic travels in
 * `system_properties.lite_topic`, the key in `keys`, properties as `user_properties`; a received
 * message's `delivery_attempt` (1 the first time) is litetopic's `reconsumeTimes` + 1.
 */
import { randomBytes } from 'node:crypto';
import type { PoppedMessage, SendMessage } from '../broker/types.js';

export interface ProtoResource {
  resourceNamespace: string;
  name: string;
}

interface ProtoTimestamp {
  seconds: number;
  nanos: number;
}

/** A received `apache.rocketmq.v2.Message` as proto-loader decodes it (longs as numbers, enums as names). */
export interface ProtoMessage {
  topic: ProtoResource;
  userProperties: Record<string, string>;
  systemProperties: {
    tag?: string;
    keys: string[];
    messageId: string;
    storeTimestamp?: ProtoTimestamp | null;
    bornTimestamp?: ProtoTimestamp | null;
    receiptHandle?: string;
    queueOffset?: number;
    deliveryAttempt?: number;
    liteTopic?: string;
  };
  body: Buffer;
}

/**
 * A topic or group name within a namespace. The 5.5 proxy ignores the protocol's namespace field,
 * so the name carries it the way RocketMQ's clients write it: `namespace%name`.
 */
export function resource(namespace: string, name: string): ProtoResource {
  return { resourceNamespace: '', name: namespace === '' ? name : `${namespace}%${name}` };
}

export function duration(ms: number): { seconds: number; nanos: number } {
  return { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1_000_000 };
}

function millis(timestamp: ProtoTimestamp | null | undefined): number {
  return timestamp === null || timestamp === undefined
    ? 0
    : timestamp.seconds * 1000 + Math.floor(timestamp.nanos / 1e6);
}

/**
 * Message ids in the layout of RocketMQ's gRPC clients (version 01): a per-process random node id
 * in place of the MAC address, the process id, seconds since 2021-01-01 and a sequence number, as
 * 34 upper-case hex digits. Unique per process and second up to 2^32 sends.
 */
const MESSAGE_ID_EPOCH_MS = Date.UTC(2021, 0, 1);
const node = randomBytes(6).toString('hex').toUpperCase();
const pid = (process.pid & 0xffff).toString(16).toUpperCase().padStart(4, '0');
let sequence = 0;

export function newMessageId(now: number): string {
  const seconds = Math.floor((now - MESSAGE_ID_EPOCH_MS) / 1000) >>> 0;
  sequence = (sequence + 1) >>> 0;
  const hex = (value: number) => value.toString(16).toUpperCase().padStart(8, '0');
  return `01${node}${pid}${hex(seconds)}${hex(sequence)}`;
}

/** The protobuf message that sends `message` to `topic` (a LITE parent). */
export function toProto(namespace: string, topic: string, message: SendMessage, now: number): unknown {
  const body = typeof message.body === 'string' ? Buffer.from(message.body) : Buffer.from(message.body);
  const seconds = Math.floor(now / 1000);
  return {
    topic: resource(namespace, topic),
    userProperties: message.properties ?? {},
    systemProperties: {
      tag: message.tag,
      keys: message.key === undefined ? [] : [message.key],
      messageId: newMessageId(now),
      bodyEncoding: 'IDENTITY',
      messageType: 'LITE',
      bornTimestamp: { seconds, nanos: (now - seconds * 1000) * 1_000_000 },
      bornHost: '127.0.0.1',
      liteTopic: message.liteTopic,
    },
    body,
  };
}

/** A received message as litetopic hands it out; `topic` is the parent without its namespace. */
export function fromProto(message: ProtoMessage, receiptHandle: string): PoppedMessage {
  const system = message.systemProperties;
  const popped: PoppedMessage = {
    messageId: system.messageId,
    topic: message.topic.name,
    liteTopic: system.liteTopic ?? '',
    offset: Number(system.queueOffset ?? 0),
    body: Buffer.from(message.body),
    properties: userProperties(message.userProperties),
    storeTimestamp: millis(system.storeTimestamp),
    reconsumeTimes: Math.max(0, (system.deliveryAttempt ?? 1) - 1),
    receiptHandle,
  };
  if (system.keys.length > 0) popped.key = system.keys[0] as string;
  if (system.tag !== undefined && system.tag !== '') popped.tag = system.tag;
  return popped;
}

/** RocketMQ's internal properties (`INNER_*`, set by the broker's multi-dispatch) are not the sender's. */
function userProperties(properties: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(properties)) if (!key.startsWith('INNER_')) out[key] = value;
  return out;
}
