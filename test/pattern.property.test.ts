/**
 * Property tests: native ≡ js ≡ the naive model (test/model/matcher.ts) on random patterns and topics
 * of all three dialects, and expand ≡ filter. The two engines must agree on every field of a failed
 * validation, message included; the model decides validity and matching.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compilePattern, expand, matches, validateLiteTopic, validatePattern } from '../ts/index.js';
import { anyPattern, anyTopic, DIALECT_NAMES, densePattern, denseTopic, hostileString } from './arbitraries.js';
import { ENGINES } from './engines.js';
import { modelExpand, modelMatches, modelValidPattern, modelValidTopic } from './model/matcher.js';

const RUNS = { numRuns: 3000 };

describe.each(DIALECT_NAMES)('%s dialect', (dialect) => {
  it('validation: every engine agrees with the model, and the engines agree on every field', () => {
    fc.assert(
      fc.property(anyPattern(dialect), (pattern) => {
        const results = ENGINES.map((engine) => validatePattern(pattern, { dialect, engine }));
        for (const result of results) expect(result.ok).toBe(modelValidPattern(dialect, pattern));
        for (const result of results.slice(1)) expect(result).toEqual(results[0]);
      }),
      RUNS,
    );
  });

  it('matching: matches() and compiled matchers of every engine equal the model', () => {
    fc.assert(
      fc.property(
        fc.oneof(densePattern(dialect), anyPattern(dialect)),
        fc.oneof(denseTopic(dialect), anyTopic(dialect)),
        (pattern, topic) => {
          const expected = modelMatches(dialect, pattern, topic);
          const compiled = modelValidPattern(dialect, pattern);
          for (const engine of ENGINES) {
            expect(matches(pattern, topic, { dialect, engine })).toBe(expected);
            if (compiled) expect(compilePattern(pattern, { dialect, engine }).matches(topic)).toBe(expected);
          }
        },
      ),
      RUNS,
    );
  });

  it('a topic the model calls invalid never matches the widest pattern', () => {
    const widest = dialect === 'lite' ? '**' : dialect === 'mqtt' ? '#' : '>';
    fc.assert(
      fc.property(hostileString, (topic) => {
        const expected = modelValidTopic(dialect, topic) && !(dialect === 'mqtt' && topic.startsWith('$'));
        for (const engine of ENGINES) expect(matches(widest, topic, { dialect, engine })).toBe(expected);
      }),
      RUNS,
    );
  });

  it('expand equals filter over the candidates', () => {
    fc.assert(
      fc.property(
        fc.array(anyPattern(dialect), { maxLength: 4 }),
        fc.array(anyTopic(dialect), { maxLength: 12 }),
        (patterns, candidates) => {
          const expected = modelExpand(dialect, patterns, candidates);
          for (const engine of ENGINES) expect(expand(patterns, candidates, { dialect, engine })).toEqual(expected);
        },
      ),
      { numRuns: 1000 },
    );
  });
});

it('lite topic validation agrees between engines and with [A-Za-z0-9_-]{1,maxBytes}', () => {
  fc.assert(
    fc.property(hostileString, fc.integer({ min: 1, max: 12 }), (name, maxBytes) => {
      const results = ENGINES.map((engine) => validateLiteTopic(name, { maxBytes, engine }));
      const valid = /^[A-Za-z0-9_-]+$/.test(name) && name.length <= maxBytes;
      for (const result of results) expect(result.ok).toBe(valid);
      for (const result of results.slice(1)) expect(result).toEqual(results[0]);
    }),
    RUNS,
  );
});
