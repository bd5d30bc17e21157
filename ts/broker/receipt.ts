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

const VERSION = 1;

export function encodeReceipt(receipt: Receipt): string {
  const fields = [VERSION, receipt.epoch, receipt.group, receipt.liteTopic, receipt.offset, receipt.attempt];
  return Buffer.from(JSON.stringify(fields), 'utf8').toString('base64url');
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** The receipt a handle encodes; `InvalidReceiptError` when it is not one of ours. */
export function decodeReceipt(handle: unknown): Receipt {
  const invalid = () => new InvalidReceiptError('not a receipt handle of this broker', { value: handle });
  if (typeof handle !== 'string' || handle.length === 0 || handle.length > 4096) throw invalid();
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(handle, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (!Array.isArray(fields) || fields.length !== 6 || fields[0] !== VERSION) throw invalid();
  const [, epoch, group, liteTopic, offset, attempt] = fields as unknown[];
  if (typeof epoch !== 'string' || typeof group !== 'string' || typeof liteTopic !== 'string') throw invalid();
  if (!isCount(offset) || !isCount(attempt)) throw invalid();
  return { epoch, group, liteTopic, offset, attempt };
}
