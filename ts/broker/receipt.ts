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
const MAX_HANDLE_LENGTH = 4096;
/** Base-36 digits of the largest safe integer. */
const MAX_COUNT_DIGITS = 11;

/**
 * What every handle `epoch` issues to `group` starts with. A broker keeps it per group: making a
 * handle is then one concatenation, and reading one of its own needs no checks on the first fields.
 */
export function receiptPrefix(epoch: string, group: string): string {
  return `${PREFIX}${epoch}.${group}.`;
}

/** The handle of one delivery, `prefix` from `receiptPrefix`. */
export function encodeReceipt(prefix: string, offset: number, attempt: number, liteTopic: string): string {
  return `${prefix}${offset.toString(36)}.${attempt.toString(36)}.${liteTopic}`;
}

/**
 * The canonical base-36 count in `text` from `from` to `to` (no sign, no leading zero, a safe
 * integer), or -1. A loop over char codes: this runs twice per ack, where a regex test and
 * `parseInt` cost several times more.
 */
function count36(text: string, from: number, to: number): number {
  const length = to - from;
  if (length <= 0 || length > MAX_COUNT_DIGITS) return -1;
  let value = 0;
  for (let i = from; i < to; i++) {
    const code = text.charCodeAt(i);
    let digit: number;
    if (code >= 48 && code <= 57) digit = code - 48;
    else if (code >= 97 && code <= 122) digit = code - 87;
    else return -1;
    if (digit === 0 && i === from && length > 1) return -1;
    value = value * 36 + digit;
  }
  return Number.isSafeInteger(value) ? value : -1;
}

/**
 * The receipt `handle` encodes when it is a well-formed handle starting with `prefix` (from
 * `receiptPrefix(epoch, group)`), else undefined: `decodeReceipt` then says what is wrong with it.
 * `known`: a string the caller expects as its lite topic (the popped message's); when the handle
 * ends with exactly it, the receipt holds that string instead of a new slice of the handle, so maps
 * keyed by lite topic find it without hashing a new string (which cost more than the rest of a lookup).
 */
export function decodeOwnReceipt(
  handle: unknown,
  prefix: string,
  epoch: string,
  group: string,
  known?: unknown,
): Receipt | undefined {
  if (typeof handle !== 'string' || handle.length > MAX_HANDLE_LENGTH || !handle.startsWith(prefix)) return undefined;
  const offsetEnd = handle.indexOf('.', prefix.length);
  if (offsetEnd < 0) return undefined;
  const attemptEnd = handle.indexOf('.', offsetEnd + 1);
  if (attemptEnd < 0 || attemptEnd + 1 === handle.length) return undefined;
  const offset = count36(handle, prefix.length, offsetEnd);
  const attempt = count36(handle, offsetEnd + 1, attemptEnd);
  if (offset < 0 || attempt < 0) return undefined;
  const liteTopic =
    typeof known === 'string' && known.length === handle.length - attemptEnd - 1 && handle.endsWith(known)
      ? known
      : handle.slice(attemptEnd + 1);
  return { epoch, group, liteTopic, offset, attempt };
}

/** The receipt a handle encodes; `InvalidReceiptError` when it is not one of ours. */
export function decodeReceipt(handle: unknown): Receipt {
  const invalid = () => new InvalidReceiptError('not a receipt handle of this broker', { value: handle });
  if (typeof handle !== 'string' || handle.length > MAX_HANDLE_LENGTH) throw invalid();
  if (!handle.startsWith(PREFIX)) throw invalid();
  const fields: string[] = [];
  let at = PREFIX.length;
  for (let i = 0; i < 2; i++) {
    const dot = handle.indexOf('.', at);
    if (dot < 0) throw invalid();
    fields.push(handle.slice(at, dot));
    at = dot + 1;
  }
  const [epoch, group] = fields as [string, string];
  if (!EPOCH.test(epoch) || !GROUP_NAME.test(group)) throw invalid();
  const receipt = decodeOwnReceipt(handle, handle.slice(0, at), epoch, group);
  if (receipt === undefined) throw invalid();
  return receipt;
}
