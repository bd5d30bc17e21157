/**
 * Lite topic name checks for the broker: the length is a quota (`maxLiteTopicBytes`, a
 * `QuotaExceededError`), the characters are validation (`InvalidLiteTopicError` with position).
 */
import type { EngineName } from '../engine/contract.js';
import { MAX_LITE_TOPIC_BYTES_CEILING } from '../engine/js/limits.js';
import { getEngine } from '../engine/load.js';
import { InvalidArgumentError, InvalidLiteTopicError } from '../errors.js';
import { type BrokerLimits, checkQuota } from './quota.js';

export function checkLiteTopic(name: unknown, limits: BrokerLimits, engine: EngineName): string {
  if (typeof name !== 'string') throw new InvalidArgumentError('a lite topic must be a string', { value: name });
  const bytes = Buffer.byteLength(name, 'utf8');
  checkQuota(limits, 'maxLiteTopicBytes', bytes, name);
  const violation = getEngine(engine).validateLiteTopic(name, MAX_LITE_TOPIC_BYTES_CEILING);
  if (violation !== null) {
    const { message, reason, position, limit, actual } = violation;
    throw new InvalidLiteTopicError(message, { value: name, reason, position, limit, actual });
  }
  return name;
}
