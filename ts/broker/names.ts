/**
 * Lite topic name checks for the broker: the length is a quota (`maxLiteTopicBytes`, a
 * `QuotaExceededError`), the characters are validation (`InvalidLiteTopicError` with position).
 */

import { validateLiteTopic } from '../common/dialect.js';
import { MAX_LITE_TOPIC_BYTES_CEILING } from '../common/limits.js';
import { InvalidArgumentError, InvalidLiteTopicError } from '../errors.js';
import { type BrokerLimits, checkQuota } from './quota.js';

/**
 * Checks a lite topic name whatever the broker's engine: the check always runs in JavaScript, as it is
 * a pure function both engines compute identically (test/pattern.property.test.ts compares them
 * field by field), and a Node-API crossing per message would cost more than the check.
 */
export function checkLiteTopic(name: unknown, limits: BrokerLimits): string {
  if (typeof name !== 'string') throw new InvalidArgumentError('a lite topic must be a string', { value: name });
  const bytes = name.length <= 21 ? utf8Length(name) : Buffer.byteLength(name, 'utf8');
  checkQuota(limits, 'maxLiteTopicBytes', bytes, name);
  const violation = validateLiteTopic(name, MAX_LITE_TOPIC_BYTES_CEILING);
  if (violation !== null) {
    const { message, reason, position, limit, actual } = violation;
    throw new InvalidLiteTopicError(message, { value: name, reason, position, limit, actual });
  }
  return name;
}

/** UTF-8 length of a short string without a call into Node's C++ (lone surrogates count 3, as Buffer does). */
function utf8Length(name: string): number {
  let bytes = 0;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < name.length) {
      const next = name.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** Topic, group and namespace names: 1 to 127 characters of [A-Za-z0-9_-]. */
const NAME = /^[A-Za-z0-9_-]{1,127}$/;

/** Whether `value` is a topic, group or namespace name. */
export function isName(value: string): boolean {
  return NAME.test(value);
}

/** `value` if it is a topic or group name, else `InvalidArgumentError` naming `what`. */
export function requireName(value: unknown, what: string): string {
  if (typeof value !== 'string' || !NAME.test(value)) {
    throw new InvalidArgumentError(`${what} must be 1..127 characters of [A-Za-z0-9_-] (got ${String(value)})`, {
      value,
    });
  }
  return value;
}
