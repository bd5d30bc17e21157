/** The pure-TypeScript engine: the same contract as the native one, with no native code at all. */

import { DIALECTS, isValidTopic, validateLiteTopic, validatePattern } from '../../common/dialect.js';
import { sealFrames } from '../../common/frames.js';
import type { CompiledMatcher, DialectName, Engine } from '../contract.js';
import { openJsLog } from './log/log.js';
import { compile } from './pattern/pattern.js';
import { JsPatternIndex } from './pattern/pattern-index.js';
import { JsTopicTrie } from './trie/trie.js';

function expand(patterns: readonly string[], candidates: readonly string[], dialectName: DialectName): number[] {
  const dialect = DIALECTS[dialectName];
  const matchers: CompiledMatcher[] = [];
  for (const pattern of patterns) {
    if (validatePattern(dialect, pattern) === null) matchers.push(compile(pattern, dialect));
  }
  const found: number[] = [];
  if (matchers.length === 0) return found;
  const seen = new Set<string>();
  for (let i = 0; i < candidates.length; i++) {
    const candidate = candidates[i] as string;
    if (seen.has(candidate)) continue;
    for (const matcher of matchers) {
      if (matcher.matches(candidate)) {
        seen.add(candidate);
        found.push(i);
        break;
      }
    }
  }
  return found;
}

export const jsEngine: Engine = {
  name: 'js',
  openLog: (dir, options) => openJsLog(dir, options),
  validatePattern: (pattern, dialect) => validatePattern(DIALECTS[dialect], pattern),
  validateLiteTopic: (name, maxBytes) => validateLiteTopic(name, maxBytes),
  compile: (pattern, dialect) => compile(pattern, DIALECTS[dialect]),
  matches(pattern, topic, dialectName) {
    const dialect = DIALECTS[dialectName];
    if (!isValidTopic(dialect, topic) || validatePattern(dialect, pattern) !== null) return false;
    return compile(pattern, dialect).matches(topic);
  },
  expand,
  createPatternIndex: (dialect) => new JsPatternIndex(DIALECTS[dialect]),
  createTopicTrie: (dialect, maxNameBytes) => new JsTopicTrie(dialect, maxNameBytes),
  sealFrames,
};
