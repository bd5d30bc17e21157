/**
 * Validation failures as the js engine builds them, word for word as `native/core/src/error.rs`
 * and `dialect.rs` do, so both engines report the same reason, position and message.
 */

import type { Violation } from '../engine/contract.js';
import type { ValidationReason } from '../errors.js';

type Code = Violation['code'];

function isSurrogate(codePoint: number): boolean {
  return codePoint >= 0xd800 && codePoint <= 0xdfff;
}

/**
 * Describes a character for a message: `"x" (U+0078)`, `U+0009` for controls and space, and a note
 * for unpaired surrogates, which reach the native engine as U+FFFD.
 */
export function describeChar(codePoint: number): string {
  if (codePoint === 0xfffd || isSurrogate(codePoint)) return '(unpaired surrogate or U+FFFD)';
  const hex = `U+${codePoint.toString(16).toUpperCase().padStart(4, '0')}`;
  const isControl = codePoint < 0x20 || (codePoint >= 0x7f && codePoint <= 0x9f);
  if (isControl || codePoint === 0x20) return hex;
  return `"${String.fromCodePoint(codePoint)}" (${hex})`;
}

/** UTF-8 length of one code point; an unpaired surrogate counts as U+FFFD, as it is encoded. */
export function utf8Length(codePoint: number): number {
  if (codePoint < 0x80) return 1;
  if (codePoint < 0x800) return 2;
  return codePoint < 0x10000 ? 3 : 4;
}

function violation(code: Code, reason: ValidationReason, position: number, message: string): Violation {
  return { code, reason, position, message };
}

export function empty(code: Code, what: string): Violation {
  return violation(code, 'EMPTY', 0, `${what} is empty`);
}

export function tooLong(code: Code, what: string, input: string, actual: number, limit: number): Violation {
  // The position is that of the first character that does not fit within the limit.
  let bytes = 0;
  let position = input.length;
  for (let i = 0; i < input.length; ) {
    const codePoint = input.codePointAt(i) as number;
    bytes += utf8Length(codePoint);
    if (bytes > limit) {
      position = i;
      break;
    }
    i += codePoint > 0xffff ? 2 : 1;
  }
  return {
    code,
    reason: 'TOO_LONG',
    position,
    limit,
    actual,
    message: `${what} is ${actual} bytes, longer than the limit of ${limit} bytes`,
  };
}

export function invalidChar(code: Code, what: string, position: number, codePoint: number): Violation {
  return violation(
    code,
    'INVALID_CHARACTER',
    position,
    `${what} has invalid character ${describeChar(codePoint)} at position ${position}`,
  );
}

export function emptySegment(position: number): Violation {
  return violation(
    'INVALID_PATTERN',
    'EMPTY_SEGMENT',
    position,
    `pattern has an empty segment at position ${position}`,
  );
}

export function misplacedWildcard(wildcard: string, position: number): Violation {
  return violation(
    'INVALID_PATTERN',
    'MISPLACED_WILDCARD',
    position,
    `pattern has "${wildcard}" at position ${position}, but it may only be the last segment`,
  );
}

export function partialWildcard(segment: string, position: number): Violation {
  return violation(
    'INVALID_PATTERN',
    'PARTIAL_WILDCARD',
    position,
    `pattern mixes a wildcard with other characters in segment "${segment}" at position ${position}`,
  );
}
