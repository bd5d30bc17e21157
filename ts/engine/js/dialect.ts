/**
 * The three pattern dialects, mirroring `native/core/src/dialect.rs`: splitting, wildcards, what a
 * valid topic and a valid pattern are. Validation reports the first problem in a fixed order (empty,
 * length, characters left to right, then segments left to right) so both engines agree.
 */
import type { DialectName, Violation } from '../contract.js';
import { empty, emptySegment, invalidChar, misplacedWildcard, partialWildcard, tooLong } from './error.js';
import { MAX_MQTT_TOPIC_BYTES } from './limits.js';

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
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128 || LITE_NAME_CHAR[c] === 0) return false;
  }
  return true;
}

// U+0000, U+FFFD and unpaired surrogates (which reach the native engine as U+FFFD).
const UNPAIRED = '[\\uD800-\\uDBFF](?![\\uDC00-\\uDFFF])|(?<![\\uD800-\\uDBFF])[\\uDC00-\\uDFFF]';
const MQTT_FORBIDDEN = new RegExp(`[\\0\\uFFFD]|${UNPAIRED}`);
const MQTT_TOPIC_FORBIDDEN = new RegExp(`[\\0\\uFFFD+#]|${UNPAIRED}`);
const NATS_FORBIDDEN = new RegExp(`[ \\t\\r\\n\\0\\uFFFD]|${UNPAIRED}`);

/** UTF-8 byte length, computed only when the string could be over `limit`. */
function exceedsBytes(s: string, limit: number): boolean {
  // A UTF-16 code unit encodes to at most 3 UTF-8 bytes.
  return s.length * 3 > limit && Buffer.byteLength(s, 'utf8') > limit;
}

/**
 * Whether `topic` is a topic this dialect can match. Lite name lengths are not checked here: they
 * are configurable and enforced where names enter (`validateLiteTopic`, the broker's quotas).
 */
export function isValidTopic(dialect: DialectRules, topic: string): boolean {
  if (topic.length === 0) return false;
  switch (dialect.name) {
    case 'lite':
      return isLiteNameTail(topic, 0);
    case 'mqtt':
      return !MQTT_TOPIC_FORBIDDEN.test(topic) && !exceedsBytes(topic, MAX_MQTT_TOPIC_BYTES);
    case 'nats': {
      if (NATS_FORBIDDEN.test(topic)) return false;
      let start = 0;
      for (;;) {
        const end = topic.indexOf('.', start);
        const stop = end === -1 ? topic.length : end;
        const width = stop - start;
        if (width === 0) return false;
        if (width === 1) {
          const c = topic.charCodeAt(start);
          if (c === 42 /* * */ || c === 62 /* > */) return false;
        }
        if (end === -1) return true;
        start = end + 1;
      }
    }
  }
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
