/** The pattern engine's behaviour from the data tables in test/vectors, run on every engine. */
import { describe, expect, it } from 'vitest';
import {
  compilePattern,
  type DialectName,
  expand,
  InvalidPatternError,
  matches,
  matchesAny,
  validateLiteTopic,
  validatePattern,
} from '../ts/index.js';
import { ENGINES } from './engines.js';
import { modelMatches } from './model/matcher.js';
import matching from './vectors/matching.json';
import validation from './vectors/validation.json';

interface MatchRow {
  source: string;
  dialect: DialectName;
  pattern: string;
  match: string[];
  noMatch: string[];
}

interface ValidationRow {
  dialect?: DialectName;
  input: string;
  ok?: boolean;
  reason?: string;
  position?: number;
  limit?: number;
  actual?: number;
  maxBytes?: number;
}

const matchRows = matching.rows as MatchRow[];
const patternRows = validation.patterns as ValidationRow[];
const liteTopicRows = validation.liteTopics as ValidationRow[];

describe.each(ENGINES)('%s engine: matching tables', (engine) => {
  it.each(matchRows.map((r) => [`${r.dialect} ${r.pattern} (${r.source})`, r] as const))('%s', (_, row) => {
    const options = { dialect: row.dialect, engine };
    const matcher = compilePattern(row.pattern, options);
    expect(matcher.pattern).toBe(row.pattern);
    expect(matcher.dialect).toBe(row.dialect);
    expect(matcher.engine).toBe(engine);
    for (const topic of row.match) {
      expect(matcher.matches(topic), `${row.pattern} ~ ${JSON.stringify(topic)}`).toBe(true);
      expect(matches(row.pattern, topic, options)).toBe(true);
    }
    for (const topic of row.noMatch) {
      expect(matcher.matches(topic), `${row.pattern} !~ ${JSON.stringify(topic)}`).toBe(false);
      expect(matches(row.pattern, topic, options)).toBe(false);
    }
  });
});

describe.each(ENGINES)('%s engine: validation tables', (engine) => {
  it.each(patternRows.map((r) => [`${r.dialect} ${JSON.stringify(r.input)}`, r] as const))('pattern %s', (_, row) => {
    const result = validatePattern(row.input, { dialect: row.dialect as DialectName, engine });
    if (row.ok) {
      expect(result).toEqual({ ok: true });
      return;
    }
    expect(result).toMatchObject({ ok: false, code: 'INVALID_PATTERN', reason: row.reason, position: row.position });
    if (!result.ok) expect(result.message).toContain(row.reason === 'EMPTY' ? 'empty' : `position ${row.position}`);
  });

  it.each(liteTopicRows.map((r) => [JSON.stringify(r.input), r] as const))('lite topic %s', (_, row) => {
    const result = validateLiteTopic(row.input, { engine, ...(row.maxBytes ? { maxBytes: row.maxBytes } : {}) });
    if (row.ok) {
      expect(result).toEqual({ ok: true });
      return;
    }
    expect(result).toMatchObject({ ok: false, code: 'INVALID_LITE_TOPIC', reason: row.reason, position: row.position });
    if (row.limit !== undefined) expect(result).toMatchObject({ limit: row.limit, actual: row.actual });
  });
});

describe.each(ENGINES)('%s engine: behaviour', (engine) => {
  it('names the offending character and its position', () => {
    const result = validateLiteTopic('tenant7/session', { engine });
    expect(result).toMatchObject({ ok: false, position: 7 });
    if (!result.ok) expect(result.message).toBe('lite topic name has invalid character "/" (U+002F) at position 7');
  });

  it('compilePattern throws a typed InvalidPatternError', () => {
    let caught: unknown;
    try {
      compilePattern('pay__r*fund', { engine });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(InvalidPatternError);
    expect(caught).toMatchObject({
      code: 'INVALID_PATTERN',
      reason: 'PARTIAL_WILDCARD',
      position: 6,
      value: 'pay__r*fund',
      dialect: 'lite',
    });
  });

  it('never throws from matches for invalid patterns or topics', () => {
    // Per dialect: pairs where the pattern or the topic is invalid but would otherwise match.
    const invalidPairs = {
      lite: [
        ['a__', 'a__'],
        ['**__a', 'x__a'],
        ['pa*', 'pa*'],
        ['**', 'a b'],
      ],
      mqtt: [
        ['a/#/b', 'a/x/b'],
        ['a+', 'a+'],
        ['#', 'a/+'],
        ['#', '\uD800'],
      ],
      nats: [
        ['a..b', 'a..b'],
        ['a.>.b', 'a.x.b'],
        ['>', 'a.*'],
        ['>', 'a b'],
      ],
    } as const;
    for (const dialect of ['lite', 'mqtt', 'nats'] as const) {
      for (const [pattern, topic] of [['', ''], ['a', '\uD800'], ...invalidPairs[dialect]]) {
        expect(matches(pattern, topic, { dialect, engine }), `${pattern} ${topic}`).toBe(false);
        expect(matchesAny([pattern], topic, { dialect, engine })).toBe(false);
      }
      const matcher = compilePattern(dialect === 'mqtt' ? '#' : '**', { dialect, engine });
      expect(matcher.matches(undefined as unknown as string)).toBe(false);
      expect(matcher.matches('')).toBe(false);
    }
  });

  it('handles 64 KiB topics and 1000-level topics', () => {
    const big = 'x'.repeat(64 * 1024);
    expect(matches('**', big, { engine })).toBe(true);
    expect(matches('*__x', big, { engine })).toBe(false);
    expect(matches('#', big, { dialect: 'mqtt', engine })).toBe(false); // over MQTT's 65,535 bytes
    expect(matches('#', big.slice(1), { dialect: 'mqtt', engine })).toBe(true);
    expect(matches('>', big, { dialect: 'nats', engine })).toBe(true);
    const levels = Array.from({ length: 1000 }, (_, i) => `s${i}`);
    const deep = levels.join('__');
    expect(matches('s0__**', deep, { engine })).toBe(true);
    expect(matches(deep, deep, { engine })).toBe(true);
    const starred = [...levels.slice(0, 999), '*'].join('__');
    expect(matches(starred, deep, { engine })).toBe(true);
    expect(matches(starred, `${deep}__more`, { engine })).toBe(false);
    expect(matches(levels.join('/'), levels.join('/'), { dialect: 'mqtt', engine })).toBe(true);
    expect(matches(`${'*.'.repeat(999)}*`, levels.join('.'), { dialect: 'nats', engine })).toBe(true);
  });

  it('rejects long adversarial topics without backtracking blow-up', () => {
    // Each of these would take exponential time under an ambiguous pattern translation.
    const runs = `${'a_'.repeat(32 * 1024)}!`;
    const underscores = `${'_a'.repeat(32 * 1024)}__`;
    for (const topic of [runs, runs.slice(0, -1), underscores, underscores.slice(0, -2)]) {
      for (const pattern of ['*__*__*__x', '*__**', '*', '*__*', 'a__*__b']) {
        expect(matches(pattern, topic, { engine })).toBe(modelMatches('lite', pattern, topic));
      }
    }
    expect(matches('*', runs.slice(0, -1), { engine })).toBe(true);
    expect(matches('*__**', underscores, { engine })).toBe(true);
  });

  it('expand keeps first-seen order, drops duplicates and ignores invalid patterns', () => {
    const candidates = ['pay__b', 'pay__a', 'x__a', 'pay__b', 'pay__a__c', 'pay'];
    expect(expand(['pay__*', 'bad__', 'x__a'], candidates, { engine })).toEqual(['pay__b', 'pay__a', 'x__a']);
    expect(expand(['bad__', 'a**'], candidates, { engine })).toEqual([]);
    expect(expand([], candidates, { engine })).toEqual([]);
    expect(expand(['**'], [], { engine })).toEqual([]);
    expect(expand(['**'], ['a\0b', 'ok', ''], { engine })).toEqual(['ok']);
    expect(expand(['a\0**', '**'], ['a', 'b'], { engine })).toEqual(['a', 'b']);
  });

  it('matchesAny is true when any valid pattern matches', () => {
    expect(matchesAny(['x__*', 'pay__**'], 'pay__a__b', { engine })).toBe(true);
    expect(matchesAny(['x__*', 'pay__'], 'pay__a', { engine })).toBe(false);
    expect(matchesAny([], 'pay', { engine })).toBe(false);
  });
});
