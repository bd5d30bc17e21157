/** The broker's public message shapes. */

/** What a producer sends to a parent topic. */
export interface SendMessage {
  /** The lite topic: 1..`maxLiteTopicBytes` UTF-8 bytes of `[A-Za-z0-9_-]`; created by its first message. */
  liteTopic: string;
  body: Uint8Array | string;
  key?: string;
  tag?: string;
  properties?: Record<string, string>;
}

export interface SendResult {
  /** Unique within the data directory: the message's commit-log position in hex. */
  messageId: string;
  liteTopic: string;
  /** Its offset in the lite topic. */
  offset: number;
}

/** One message handed out by POP. */
export interface PoppedMessage {
  messageId: string;
  /** The parent topic. */
  topic: string;
  liteTopic: string;
  offset: number;
  body: Buffer;
  key?: string;
  tag?: string;
  properties: Record<string, string>;
  storeTimestamp: number;
  /** Earlier deliveries of this message to the group (0 the first time). */
  reconsumeTimes: number;
  /** Needed to ack it or change its invisible time; valid until it is redelivered. */
  receiptHandle: string;
}

export interface PopOptions {
  /** 1..`maxPopNum` (default 32). */
  maxNum?: number;
  /** How long the messages stay hidden from the group, ms; default 30,000. */
  invisibleTimeMs?: number;
  /** With nothing ready, wait this long (ms) for an arrival; default 0 (return at once). */
  waitMs?: number;
}

export const DEFAULT_INVISIBLE_TIME_MS = 30_000;
