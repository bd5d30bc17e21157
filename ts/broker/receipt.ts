/**
 * Receipt handles: opaque strings naming one delivery of one message to one group. A handle encodes
 * the broker instance, the group, the lite topic, the offset and the delivery attempt; the broker
 * accepts it only while that attempt is the current delivery, so a handle from before a redelivery
 * (or from another broker instance) is detected as stale instead of acking the wrong delivery.
 */
import { InvalidReceiptError } from '../errors.js';

export interface Receipt {
  /** The broker instance that issued it (random per `Broker.open`). */
  epoch: string;
  group: string;
  liteTopic: string;
  offset: number;
  /** 0 for the first delivery; the message's `reconsumeTimes`. */
  attempt: number;
}

/**
 * `2.<epoch>.<group>.<offset>.<attempt>.<lite topic>`, numbers in base 36. The lite topic goes last
 * because it may hold any character; the fields before it cannot hold a dot (the epoch is hex, group
 * names are [A-Za-z0-9_-]). Plain string building and slicing: a handle is made for every delivery
 * and read for every ack, where JSON and base64 cost several times more.
 */
const PREFIX = '2.';
const GROUP_NAME = /^[A-Za-z0-9_-]{1,127}$/;
const EPOCH = /^[0-9a-f]{1,64}$/;
const BASE36 = /^(0|[1-9a-z][0-9a-z]*)$/;

export function encodeReceipt(receipt: Receipt): string {
  return `${PREFIX}${receipt.epoch}.${receipt.group}.${receipt.offset.toString(36)}.${receipt.attempt.toString(36)}.${receipt.liteTopic}`;
}

/** A canonical base-36 count (no sign, no leading zero, a safe integer), or -1. */
function count36(text: string): number {
  if (text.length === 0 || text.length > 11 || !BASE36.test(text)) return -1;
  const value = Number.parseInt(text, 36);
  return Number.isSafeInteger(value) ? value : -1;
}

/** The receipt a handle encodes; `InvalidReceiptError` when it is not one of ours. */
export function decodeReceipt(handle: unknown): Receipt {
  const invalid = () => new InvalidReceiptError('not a receipt handle of this broker', { value: handle });
  if (typeof handle !== 'string' || handle.length > 4096) throw invalid();
  if (!handle.startsWith(PREFIX)) return decodeVersion1(handle, invalid);
  const fields: string[] = [];
  let at = PREFIX.length;
  for (let i = 0; i < 4; i++) {
    const dot = handle.indexOf('.', at);
    if (dot < 0) throw invalid();
    fields.push(handle.slice(at, dot));
    at = dot + 1;
  }
  const [epoch, group, offsetText, attemptText] = fields as [string, string, string, string];
  const liteTopic = handle.slice(at);
  const offset = count36(offsetText);
  const attempt = count36(attemptText);
  if (!EPOCH.test(epoch) || !GROUP_NAME.test(group) || offset < 0 || attempt < 0 || liteTopic.length === 0) {
    throw invalid();
  }
  return { epoch, group, liteTopic, offset, attempt };
}

/**
 * Handles of litetopic 0.1.0 before this format: base64url of the JSON array
 * `[1, epoch, group, liteTopic, offset, attempt]`. Still accepted, so deliveries in flight across an
 * in-place upgrade can be acked (the broker id is kept across restarts for the same reason).
 */
function decodeVersion1(handle: string, invalid: () => InvalidReceiptError): Receipt {
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(handle, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (!Array.isArray(fields) || fields.length !== 6 || fields[0] !== 1) throw invalid();
  const [, epoch, group, liteTopic, offset, attempt] = fields as unknown[];
  if (typeof epoch !== 'string' || typeof group !== 'string' || typeof liteTopic !== 'string') throw invalid();
  if (!isCount(offset) || !isCount(attempt)) throw invalid();
  return { epoch, group, liteTopic, offset, attempt };
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
