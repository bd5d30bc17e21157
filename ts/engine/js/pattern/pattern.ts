/**
 * One compiled pattern and its matcher, mirroring `native/core/src/pattern/`. Matching never throws:
 * an invalid topic does not match.
 *
 * Compilation picks the cheapest test for the pattern's shape: an exact name is one string
 * comparison; a lite pattern with wildcards is one anchored RegExp (V8 runs it as native code); MQTT
 * and NATS patterns use a literal prefix with `startsWith` or a walk over the topic that allocates
 * nothing. The walks do not validate the whole topic up front: the parts compared with literals are
 * valid because the pattern is, and so are the separators, so only the spans a wildcard takes are
 * checked, and a topic that fails on its literals is rejected at the first mismatch.
 */

import { type DialectRules, fitsMqttLength, isValidSpan } from '../../../common/dialect.js';
import type { CompiledMatcher } from '../../contract.js';

/** A token of a compiled pattern: a literal segment, or one of the two wildcards. */
export type Token = { kind: 'literal'; text: string } | { kind: 'one' } | { kind: 'rest' };

/** Splits a valid pattern into tokens. */
export function tokenize(pattern: string, dialect: DialectRules): Token[] {
  return pattern.split(dialect.separator).map((segment): Token => {
    if (segment === dialect.one) return { kind: 'one' };
    if (segment === dialect.rest) return { kind: 'rest' };
    return { kind: 'literal', text: segment };
  });
}

/** Compiles a pattern already known to be valid for `dialect`. */
export function compile(pattern: string, dialect: DialectRules): CompiledMatcher {
  const tokens = tokenize(pattern, dialect);
  const wildcards = tokens.filter((t) => t.kind !== 'literal').length;
  if (wildcards === 0) {
    // A valid pattern without wildcards is itself a valid topic, and the only one it matches.
    return { matches: (topic) => topic === pattern };
  }
  if (dialect.name === 'lite') return liteRegExpMatcher(tokens);
  const last = tokens[tokens.length - 1] as Token;
  if (wildcards === 1 && last.kind === 'rest' && tokens.length > 1) {
    return prefixMatcher(pattern.slice(0, pattern.length - dialect.rest.length), dialect);
  }
  return walkMatcher(tokens, dialect);
}

const LITERAL = 0;
const ONE = 1;
const REST = 2;

/**
 * A lite segment that `__` follows: runs of `[A-Za-z0-9-]` joined by single `_`, optionally after one
 * leading `_`, so no `__` inside and no final `_` (splitting would have cut there). Written as runs
 * rather than one character at a time because V8 scans a run in a tight loop; after each run only a
 * `_` can continue, so there is exactly one way to match and no backtracking blow-up.
 */
const INNER_SEGMENT = '(?:_?[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*)?';
/** The last lite segment: the same, but it may end with one `_` (`a___` is `a`,`_`). */
const LAST_SEGMENT = `${INNER_SEGMENT}_?`;

/**
 * Lite patterns with wildcards compile to one anchored RegExp: V8 runs it as native code, which beats
 * a JavaScript loop over character codes. The translation is exact for left-to-right splitting: a
 * segment that a separator follows cannot end in `_`, the trailing wildcard takes any rest of
 * `[A-Za-z0-9_-]` (every such rest splits into at least one segment), and literals are literal
 * (their characters need no escaping). It has no lookaround and no ambiguous repetition, so it runs in
 * linear time (test/pattern.test.ts feeds it 64 KiB adversarial topics). The property tests hold it to
 * the reference model.
 */
function liteRegExpMatcher(tokens: readonly Token[]): CompiledMatcher {
  let source = '^';
  tokens.forEach((token, i) => {
    if (i > 0) source += '__';
    const last = i === tokens.length - 1;
    if (token.kind === 'literal') source += token.text;
    else if (token.kind === 'one') source += last ? LAST_SEGMENT : INNER_SEGMENT;
    else source += '[A-Za-z0-9_-]*';
  });
  const regExp = new RegExp(`${source}$`);
  const first = tokens[0] as Token;
  if (first.kind === 'literal') {
    // Sibling names tend to differ at the end of a segment (tenant1, tenant2; session41, session42),
    // so one character compared there turns most non-matching topics away before the RegExp runs,
    // as a Boyer-Moore search starts from the end of its literal. A topic too short to hold the
    // literal yields NaN, which matches nothing.
    const at = first.text.length - 1;
    const code = first.text.charCodeAt(at);
    // `typeof` first: RegExp.test would turn a non-string into one and might match it.
    return { matches: (topic) => typeof topic === 'string' && topic.charCodeAt(at) === code && regExp.test(topic) };
  }
  // A pattern of several segments contains `__`, so only a lone `*` or `**` could meet the empty
  // string, which is no topic.
  if (tokens.length > 1) return { matches: (topic) => typeof topic === 'string' && regExp.test(topic) };
  return { matches: (topic) => typeof topic === 'string' && topic.length > 0 && regExp.test(topic) };
}

/**
 * MQTT and NATS: literal levels followed by the trailing wildcard. The prefix (with its final
 * separator) is compared as a string; the separators are single characters, so a topic that starts
 * with the prefix splits into the same leading levels.
 */
function prefixMatcher(prefix: string, dialect: DialectRules): CompiledMatcher {
  const from = prefix.length;
  if (dialect.name === 'nats') {
    return {
      matches: (topic) =>
        typeof topic === 'string' && topic.startsWith(prefix) && isValidSpan(dialect, topic, from, topic.length, true),
    };
  }
  // MQTT `a/#` also matches `a` itself (but `/#` does not match the empty string, which is no topic).
  const parent = prefix.slice(0, prefix.length - 1);
  return {
    matches: (topic) =>
      typeof topic === 'string' &&
      ((topic === parent && parent.length > 0) ||
        (topic.startsWith(prefix) && isValidSpan(dialect, topic, from, topic.length, true) && fitsMqttLength(topic))),
  };
}

function walkMatcher(tokens: readonly Token[], dialect: DialectRules): CompiledMatcher {
  const separator = dialect.separator;
  const separatorLength = separator.length;
  const restMin = dialect.restMinSegments;
  const isMqtt = dialect.name === 'mqtt';
  const dollarRule = isMqtt && (tokens[0] as Token).kind !== 'literal';
  const kinds = tokens.map((t) => (t.kind === 'literal' ? LITERAL : t.kind === 'one' ? ONE : REST));
  const texts = tokens.map((t) => (t.kind === 'literal' ? t.text : ''));
  const count = tokens.length;
  return {
    matches(topic: string): boolean {
      if (typeof topic !== 'string' || topic.length === 0) return false;
      if (dollarRule && topic.charCodeAt(0) === 36 /* $ */) return false;
      if (isMqtt && !fitsMqttLength(topic)) return false;
      // `position` is where the next segment starts, or -1 once the topic has no segments left.
      let position = 0;
      for (let i = 0; i < count; i++) {
        const kind = kinds[i];
        if (kind === REST) {
          if (position === -1) return restMin === 0;
          return isValidSpan(dialect, topic, position, topic.length, true);
        }
        if (position === -1) return false;
        const end = topic.indexOf(separator, position);
        const stop = end === -1 ? topic.length : end;
        if (kind === LITERAL) {
          const text = texts[i] as string;
          if (stop - position !== text.length || !topic.startsWith(text, position)) return false;
        } else if (!isValidSpan(dialect, topic, position, stop, false)) {
          return false;
        }
        position = end === -1 ? -1 : end + separatorLength;
      }
      return position === -1;
    },
  };
}
