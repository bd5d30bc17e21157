/**
 * One compiled pattern and its matcher, mirroring `native/core/src/pattern/`. Matching never throws:
 * an invalid topic does not match. Compilation picks the cheapest test for the pattern's shape (an
 * exact name is one string comparison, a literal prefix with a trailing wildcard is one `startsWith`
 * plus the topic check), and falls back to a walk over the topic that allocates nothing.
 */
import type { CompiledMatcher } from '../contract.js';
import { type DialectRules, isValidTopic } from './dialect.js';

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
  const last = tokens[tokens.length - 1] as Token;
  if (wildcards === 1 && last.kind === 'rest' && tokens.length > 1) {
    return prefixMatcher(pattern.slice(0, pattern.length - dialect.rest.length), dialect);
  }
  return walkMatcher(tokens, dialect);
}

/**
 * Literal segments followed by the trailing wildcard. The prefix (with its final separator) is
 * compared as a string: non-final segments of a valid pattern never end in the separator's
 * character, so a topic that starts with the prefix splits into the same leading segments.
 */
function prefixMatcher(prefix: string, dialect: DialectRules): CompiledMatcher {
  if (dialect.restMinSegments === 0) {
    // MQTT `a/#` also matches `a` itself.
    const parent = prefix.slice(0, prefix.length - dialect.separator.length);
    return {
      matches: (topic) => (topic === parent || topic.startsWith(prefix)) && isValidTopic(dialect, topic),
    };
  }
  // The remainder after the prefix is at least one segment (possibly empty in lite, where the topic
  // check accepts it, or rejected by the NATS topic check).
  return { matches: (topic) => topic.startsWith(prefix) && isValidTopic(dialect, topic) };
}

function walkMatcher(tokens: readonly Token[], dialect: DialectRules): CompiledMatcher {
  const separator = dialect.separator;
  const separatorLength = separator.length;
  const restMin = dialect.restMinSegments;
  const first = tokens[0] as Token;
  const dollarRule = dialect.name === 'mqtt' && first.kind !== 'literal';
  const kinds = tokens.map((t) => (t.kind === 'literal' ? 0 : t.kind === 'one' ? 1 : 2));
  const texts = tokens.map((t) => (t.kind === 'literal' ? t.text : ''));
  const count = tokens.length;
  return {
    matches(topic: string): boolean {
      if (!isValidTopic(dialect, topic)) return false;
      if (dollarRule && topic.charCodeAt(0) === 36 /* $ */) return false;
      // `position` is where the next segment starts, or -1 once the topic has no segments left.
      let position = 0;
      for (let i = 0; i < count; i++) {
        const kind = kinds[i];
        if (kind === 2) return restMin === 0 || position !== -1;
        if (position === -1) return false;
        const end = topic.indexOf(separator, position);
        if (kind === 0) {
          const text = texts[i] as string;
          const stop = end === -1 ? topic.length : end;
          if (stop - position !== text.length || !topic.startsWith(text, position)) return false;
        }
        position = end === -1 ? -1 : end + separatorLength;
      }
      return position === -1;
    },
  };
}
