/**
 * The three pattern dialects, mirroring `native/core/src/dialect.rs`: splitting, wildcards, what a
 * valid topic and a valid pattern are. Validation reports the first problem in a fixed order (empty,
 * length, characters left to right, then segments left to right) so both engines agree.
 */
import type { DialectName, Violation } from '../engine/contract.js';
import { MAX_MQTT_TOPIC_BYTES } from './limits.js';
import { empty, emptySegment, invalidChar, misplacedWildcard, partialWildcard, tooLong } from './violation.js';

export interface DialectRules {
  readonly name: DialectName;
  /** Numeric id used across the Node-API boundary (`Dialect::id` in Rust). */
  readonly id: number;
  readonly separator: string;
  /** Wildcard for exactly one segment. */
  readonly one: string;
  /** Trailing wildcard. */
  readonly rest: string;
  /** How many segments the trailing wildcard needs at least. */
  readonly restMinSegments: number;
}

export const DIALECTS: Readonly<Record<DialectName, DialectRules>> = {
  lite: { name: 'lite', id: 0, separator: '__', one: '*', rest: '**', restMinSegments: 1 },
  mqtt: { name: 'mqtt', id: 1, separator: '/', one: '+', rest: '#', restMinSegments: 0 },
  nats: { name: 'nats', id: 2, separator: '.', one: '*', rest: '>', restMinSegments: 1 },
};

/** `[A-Za-z0-9_-]` by character code, for the hot loops below. */
const LITE_NAME_CHAR = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c);
  LITE_NAME_CHAR[c] = /[A-Za-z0-9_-]/.test(ch) ? 1 : 0;
}

/** Whether every character of `s` from `from` on is in `[A-Za-z0-9_-]`. */
export function isLiteNameTail(s: string, from: number): boolean {
  return isLiteNameRange(s, from, s.length);
}

// U+0000, U+FFFD and unpaired surrogates (which reach the native engine as U+FFFD).
const UNPAIRED = '[\\uD800-\\uDBFF](?![\\uDC00-\\uDFFF])|(?<![\\uD800-\\uDBFF])[\\uDC00-\\uDFFF]';
const MQTT_FORBIDDEN = new RegExp(`[\\0\\uFFFD]|${UNPAIRED}`);
const NATS_FORBIDDEN = new RegExp(`[ \\t\\r\\n\\0\\uFFFD]|${UNPAIRED}`);

/** Strings up to this many UTF-16 code units cannot exceed MQTT's byte limit (3 bytes a unit at most). */
export const MQTT_SAFE_UNITS = Math.floor(MAX_MQTT_TOPIC_BYTES / 3);

/** UTF-8 byte length, computed only when the string could be over `limit`. */
function exceedsBytes(s: string, limit: number): boolean {
  return s.length * 3 > limit && Buffer.byteLength(s, 'utf8') > limit;
}

/** Whether `topic` is within MQTT's 65,535-byte limit. */
export function fitsMqttLength(topic: string): boolean {
  return topic.length <= MQTT_SAFE_UNITS || !exceedsBytes(topic, MAX_MQTT_TOPIC_BYTES);
}

/** Whether `s[start..end)` is free of U+0000, U+FFFD, unpaired surrogates and the dialect's extras. */
function isCleanRange(s: string, start: number, end: number, nats: boolean): boolean {
  for (let i = start; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) {
      if (c === 0) return false;
      if (nats ? c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a : c === 0x2b /* + */ || c === 0x23 /* # */) {
        return false;
      }
    } else if (c === 0xfffd) {
      return false;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      // A high surrogate must be followed by a low one inside the range; a lone low one is invalid.
      if (c > 0xdbff || i + 1 >= end) return false;
      const next = s.charCodeAt(i + 1);
      if (next < 0xdc00 || next > 0xdfff) return false;
      i++;
    }
  }
  return true;
}

/** Whether `s[start..end)` is one valid NATS token: non-empty and not a wildcard. */
function isNatsToken(s: string, start: number, end: number): boolean {
  const width = end - start;
  if (width === 0) return false;
  if (width === 1) {
    const c = s.charCodeAt(start);
    return c !== 42 /* * */ && c !== 62 /* > */;
  }
  return true;
}

/**
 * Whether the span `topic[start..end)` that a wildcard takes is valid topic text: one segment for the
 * one-segment wildcard, the rest of the topic for the trailing one (`rest`). Together with literal
 * segments (valid because the pattern is) this validates a topic without a separate pass.
 */
export function isValidSpan(dialect: DialectRules, topic: string, start: number, end: number, rest: boolean): boolean {
  switch (dialect.name) {
    case 'lite':
      return isLiteNameRange(topic, start, end);
    case 'mqtt':
      return isCleanRange(topic, start, end, false);
    case 'nats': {
      if (!isCleanRange(topic, start, end, true)) return false;
      if (!rest) return isNatsToken(topic, start, end);
      let tokenStart = start;
      for (;;) {
        const dot = topic.indexOf('.', tokenStart);
        const tokenEnd = dot === -1 || dot >= end ? end : dot;
        if (!isNatsToken(topic, tokenStart, tokenEnd)) return false;
        if (tokenEnd === end) return true;
        tokenStart = tokenEnd + 1;
      }
    }
  }
}

/** Whether the UTF-16 code unit `c` is in `[A-Za-z0-9_-]`. */
function isLiteNameCode(c: number): boolean {
  return c < 128 && LITE_NAME_CHAR[c] === 1;
}

/** Whether every character of `s[start..end)` is in `[A-Za-z0-9_-]`. */
function isLiteNameRange(s: string, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    if (!isLiteNameCode(s.charCodeAt(i))) return false;
  }
  return true;
}

/**
 * Whether `topic` is a topic this dialect can match. Lite name lengths are not checked here: they
 * are configurable and enforced where names enter (`validateLiteTopic`, the broker's quotas).
 */
export function isValidTopic(dialect: DialectRules, topic: string): boolean {
  if (topic.length === 0) return false;
  if (dialect.name === 'mqtt' && !fitsMqttLength(topic)) return false;
  return isValidSpan(dialect, topic, 0, topic.length, true);
}

/** The first character (code point) of `s` for which `forbidden` holds, with its index. */
function findForbidden(s: string, forbidden: (codePoint: number) => boolean): [number, number] | undefined {
  for (let i = 0; i < s.length; ) {
    const codePoint = s.codePointAt(i) as number;
    if (forbidden(codePoint)) return [i, codePoint];
    i += codePoint > 0xffff ? 2 : 1;
  }
  return undefined;
}

const isSurrogateOrReplacement = (cp: number) => cp === 0xfffd || (cp >= 0xd800 && cp <= 0xdfff);
const FORBIDDEN_IN_PATTERN: Record<DialectName, (codePoint: number) => boolean> = {
  lite: (cp) => !(cp < 128 && (LITE_NAME_CHAR[cp] === 1 || cp === 42)),
  mqtt: (cp) => cp === 0 || isSurrogateOrReplacement(cp),
  nats: (cp) => cp === 0x20 || cp === 0x09 || cp === 0x0d || cp === 0x0a || cp === 0 || isSurrogateOrReplacement(cp),
};
const FORBIDDEN_FAST: Record<DialectName, RegExp | undefined> = {
  lite: undefined,
  mqtt: MQTT_FORBIDDEN,
  nats: NATS_FORBIDDEN,
};

/** Validates a pattern; `null` when valid, else the first problem. */
export function validatePattern(dialect: DialectRules, pattern: string): Violation | null {
  const what = 'pattern';
  if (pattern.length === 0) return empty('INVALID_PATTERN', what);
  if (dialect.name === 'mqtt' && exceedsBytes(pattern, MAX_MQTT_TOPIC_BYTES)) {
    return tooLong('INVALID_PATTERN', what, pattern, Buffer.byteLength(pattern, 'utf8'), MAX_MQTT_TOPIC_BYTES);
  }
  const fast = FORBIDDEN_FAST[dialect.name];
  const mayHaveForbidden = fast === undefined ? !isLiteNameOrStar(pattern) : fast.test(pattern);
  if (mayHaveForbidden) {
    const found = findForbidden(pattern, FORBIDDEN_IN_PATTERN[dialect.name]);
    if (found !== undefined) return invalidChar('INVALID_PATTERN', what, found[0], found[1]);
  }
  const segments = pattern.split(dialect.separator);
  let start = 0;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i] as string;
    const problem = checkPatternSegment(dialect, segment, start, i === segments.length - 1);
    if (problem !== null) return problem;
    start += segment.length + dialect.separator.length;
  }
  return null;
}

function isLiteNameOrStar(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128 || (LITE_NAME_CHAR[c] === 0 && c !== 42)) return false;
  }
  return true;
}

function checkPatternSegment(dialect: DialectRules, segment: string, start: number, isLast: boolean): Violation | null {
  if (segment.length === 0 && dialect.name !== 'mqtt') return emptySegment(start);
  if (segment === dialect.rest) return isLast ? null : misplacedWildcard(dialect.rest, start);
  // NATS treats `*` and `>` as wildcards only when they are a whole token; `a*` is literal.
  if (segment === dialect.one || dialect.name === 'nats') return null;
  const at = dialect.name === 'lite' ? segment.indexOf('*') : firstOf(segment, '+', '#');
  return at === -1 ? null : partialWildcard(segment, start + at);
}

function firstOf(s: string, a: string, b: string): number {
  const i = s.indexOf(a);
  const j = s.indexOf(b);
  if (i === -1) return j;
  if (j === -1) return i;
  return Math.min(i, j);
}

/** Validates a lite topic name: 1..`maxBytes` UTF-8 bytes of `[A-Za-z0-9_-]`. */
export function validateLiteTopic(name: string, maxBytes: number): Violation | null {
  const what = 'lite topic name';
  if (name.length === 0) return empty('INVALID_LITE_TOPIC', what);
  if (!isLiteNameTail(name, 0)) {
    const found = findForbidden(name, (cp) => cp >= 128 || LITE_NAME_CHAR[cp] === 0) as [number, number];
    return invalidChar('INVALID_LITE_TOPIC', what, found[0], found[1]);
  }
  // Only ASCII is left, so the length in bytes is the length in code units.
  return name.length > maxBytes ? tooLong('INVALID_LITE_TOPIC', what, name, name.length, maxBytes) : null;
}
