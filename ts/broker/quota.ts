/**
 * Broker quotas (docs/BROKER.md, "Quotas"; defaults from RocketMQ 5.5) and the checks every adding path makes
 * before it changes anything. A check takes the figure the operation would reach, so a batch is
 * judged as a whole and never overshoots.
 */
import { InvalidArgumentError, QuotaExceededError } from '../errors.js';

/** Every configurable bound of the broker. Counts are plain numbers; sizes say their unit. */
export interface BrokerLimits {
  /** Lite topics one client may hold (explicit or expanded from patterns). */
  maxLiteTopicsPerClient: number;
  /** Patterns one client of a wildcard group may hold. */
  maxPatternsPerClient: number;
  /** (client, lite topic) subscription references across the broker. */
  maxSubscriptionsPerBroker: number;
  /** Lite topics across every parent of the broker. */
  maxLiteTopicsPerBroker: number;
  /** Events queued to one client; more wait in the group's backlog, never lost. */
  maxEventsPerClient: number;
  /** Longest lite topic name, in UTF-8 bytes (1..1024). */
  maxLiteTopicBytes: number;
  /** Most messages one POP may ask for. */
  maxPopNum: number;
}

export const DEFAULT_LIMITS: Readonly<BrokerLimits> = Object.freeze({
  maxLiteTopicsPerClient: 2000,
  maxPatternsPerClient: 64,
  maxSubscriptionsPerBroker: 100_000,
  maxLiteTopicsPerBroker: 1_000_000,
  maxEventsPerClient: 100,
  maxLiteTopicBytes: 64,
  maxPopNum: 32,
});

/** Upper bound of `maxLiteTopicBytes`: the pattern engine's name ceiling. */
const LITE_TOPIC_BYTES_CEILING = 1024;

/** The defaults overridden by `given`, each a positive integer. */
export function resolveLimits(given: Partial<BrokerLimits> | undefined): BrokerLimits {
  if (given === undefined) return { ...DEFAULT_LIMITS };
  if (given === null || typeof given !== 'object') throw new InvalidArgumentError('limits must be an object');
  const limits: BrokerLimits = { ...DEFAULT_LIMITS };
  for (const [key, value] of Object.entries(given)) {
    if (!Object.hasOwn(DEFAULT_LIMITS, key)) {
      throw new InvalidArgumentError(`unknown limit ${JSON.stringify(key)}`, { value: key });
    }
    if (value === undefined) continue;
    const ceiling = key === 'maxLiteTopicBytes' ? LITE_TOPIC_BYTES_CEILING : Number.MAX_SAFE_INTEGER;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > ceiling) {
      throw new InvalidArgumentError(`limits.${key} must be an integer from 1 to ${ceiling} (got ${String(value)})`, {
        value,
      });
    }
    limits[key as keyof BrokerLimits] = value;
  }
  return limits;
}

/**
 * Who counts refusals of a broker's limits: every quota check of a broker passes its own limits
 * object, so the object names the broker without every caller carrying its counters.
 */
const refusalCounters = new WeakMap<BrokerLimits, (quota: string) => void>();

/** Routes the refusals of `limits` (one broker's, from `resolveLimits`) to `count`. */
export function countRefusals(limits: BrokerLimits, count: (quota: string) => void): void {
  refusalCounters.set(limits, count);
}

/** Throws `QuotaExceededError` when `actual` (the figure after the operation) is above the limit. */
export function checkQuota(limits: BrokerLimits, quota: keyof BrokerLimits, actual: number, value?: unknown): void {
  const limit = limits[quota];
  if (actual > limit) {
    refusalCounters.get(limits)?.(quota);
    throw new QuotaExceededError(`${quota} is ${limit}; this would make it ${actual}`, { quota, limit, actual, value });
  }
}
