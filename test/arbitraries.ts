/**
 * fast-check generators for patterns and topics. Two kinds: structured ones (segments from a small
 * alphabet joined by the dialect's separator, so matches are frequent) and hostile ones (pieces that
 * include every separator, wildcard, `$`, whitespace, NUL, non-ASCII and unpaired surrogates).
 */
import fc from 'fast-check';
import type { DialectName } from '../ts/index.js';

export const DIALECT_NAMES: readonly DialectName[] = ['lite', 'mqtt', 'nats'];

const SYNTAX = {
  lite: { separator: '__', one: '*', rest: '**' },
  mqtt: { separator: '/', one: '+', rest: '#' },
  nats: { separator: '.', one: '*', rest: '>' },
} as const;

const HOSTILE_PIECES = [
  'a',
  'b',
  'ab',
  '_',
  '__',
  '___',
  '-',
  '*',
  '**',
  '+',
  '#',
  '/',
  '.',
  '>',
  '$',
  ' ',
  '\t',
  '\0',
  'é',
  '😀',
  '\uD800',
  '\uDC00',
  '\uFFFD',
  'A',
  '0',
];

/** Any string built from pieces that stress every dialect's rules. */
export const hostileString = fc
  .array(fc.constantFrom(...HOSTILE_PIECES), { minLength: 0, maxLength: 10 })
  .map((pieces) => pieces.join(''));

/** A topic of 1..6 segments from a small alphabet (including the empty segment and `$x`). */
export function structuredTopic(dialect: DialectName): fc.Arbitrary<string> {
  const words = ['a', 'b', 'c', '', '$x', '_b', 'b_'];
  return fc
    .array(fc.constantFrom(...words), { minLength: 1, maxLength: 6 })
    .map((segments) => segments.join(SYNTAX[dialect].separator));
}

/** A pattern of 1..5 segments from the same alphabet plus both wildcards, anywhere. */
export function structuredPattern(dialect: DialectName): fc.Arbitrary<string> {
  const { one, rest } = SYNTAX[dialect];
  const words = ['a', 'b', 'c', '', '$x', '_b', one, one, rest];
  return fc
    .array(fc.constantFrom(...words), { minLength: 1, maxLength: 5 })
    .map((segments) => segments.join(SYNTAX[dialect].separator));
}

export function anyTopic(dialect: DialectName): fc.Arbitrary<string> {
  return fc.oneof({ weight: 3, arbitrary: structuredTopic(dialect) }, { weight: 1, arbitrary: hostileString });
}

export function anyPattern(dialect: DialectName): fc.Arbitrary<string> {
  return fc.oneof({ weight: 3, arbitrary: structuredPattern(dialect) }, { weight: 1, arbitrary: hostileString });
}

/**
 * Patterns and topics over a two-word alphabet with at most four segments, so random subscriptions
 * overlap often: what an index test needs to meet the same id in several matching lists.
 */
export function densePattern(dialect: DialectName): fc.Arbitrary<string> {
  const { one, rest } = SYNTAX[dialect];
  return fc
    .array(fc.constantFrom('a', 'b', one, one, rest), { minLength: 1, maxLength: 4 })
    .map((segments) => segments.join(SYNTAX[dialect].separator));
}

export function denseTopic(dialect: DialectName): fc.Arbitrary<string> {
  return fc
    .array(fc.constantFrom('a', 'b'), { minLength: 1, maxLength: 4 })
    .map((segments) => segments.join(SYNTAX[dialect].separator));
}
