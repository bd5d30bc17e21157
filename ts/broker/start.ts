/**
 * Where a group starts reading a lite topic it has no progress on yet (docs/BROKER.md, "Subscriptions"):
 * `min` (the oldest stored), `max` (after the current last message, the default), an explicit
 * offset, the last N messages, or the first message stored at or after a timestamp.
 */
import { InvalidArgumentError } from '../errors.js';
import type { MessageStore } from './store.js';

export type StartPosition = { policy: 'min' | 'max' } | { offset: number } | { tailN: number } | { timestamp: number };

export const DEFAULT_START: StartPosition = { policy: 'max' };

function count(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidArgumentError(`${what} must be an integer from 0 to 2^53-1 (got ${String(value)})`, { value });
  }
  return value;
}

/** The checked form of a caller's `offset` option. */
export function requireStart(value: unknown): StartPosition {
  if (value === undefined) return DEFAULT_START;
  if (value === null || typeof value !== 'object') {
    throw new InvalidArgumentError('offset must be { policy }, { offset }, { tailN } or { timestamp }', { value });
  }
  const keys = Object.keys(value);
  const option = value as Record<string, unknown>;
  if (keys.length === 1 && keys[0] === 'policy' && (option.policy === 'min' || option.policy === 'max')) {
    return { policy: option.policy };
  }
  if (keys.length === 1 && keys[0] === 'offset') return { offset: count(option.offset, 'offset.offset') };
  if (keys.length === 1 && keys[0] === 'tailN') return { tailN: count(option.tailN, 'offset.tailN') };
  if (keys.length === 1 && keys[0] === 'timestamp') return { timestamp: count(option.timestamp, 'offset.timestamp') };
  throw new InvalidArgumentError(
    'offset must be { policy: "min" | "max" }, { offset: n }, { tailN: n } or { timestamp: ms }',
    { value },
  );
}

/** The offset `start` denotes in `lmq` now, within [minOffset, maxOffset]. */
export function startOffset(store: MessageStore, lmq: string, start: StartPosition): number {
  const min = store.minOffset(lmq);
  const max = store.maxOffset(lmq);
  if ('policy' in start) return start.policy === 'min' ? min : max;
  if ('offset' in start) return Math.min(Math.max(start.offset, min), max);
  if ('tailN' in start) return Math.max(min, max - start.tailN);
  // Store timestamps never decrease along an LMQ, so a binary search finds the first one at or after.
  let low = min;
  let high = max;
  while (low < high) {
    const mid = Math.floor((low + high) / 2);
    const message = store.read(lmq, mid, 1)[0];
    if (message !== undefined && message.storeTimestamp < start.timestamp) low = mid + 1;
    else high = mid;
  }
  return low;
}
