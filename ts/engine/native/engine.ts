/** The native engine: the Engine contract over the Rust core, through the generated binding. */
import type { Engine } from '../contract.js';
import { DIALECTS } from '../js/dialect.js';
import type { NativeBinding } from './binding.js';
import { NativePatternIndexAdapter } from './index.js';
import { openNativeLog } from './log.js';
import { nativeCompile, nativeExpand, toViolation } from './pattern.js';
import { NativeTopicTrieAdapter } from './trie.js';

export function createNativeEngine(binding: NativeBinding): Engine {
  return {
    name: 'native',
    openLog: (dir, options) => openNativeLog(binding, dir, options),
    validatePattern: (pattern, dialect) => toViolation(binding.validatePattern(pattern, DIALECTS[dialect].id)),
    validateLiteTopic: (name, maxBytes) => toViolation(binding.validateLiteTopic(name, maxBytes)),
    compile: (pattern, dialect) => nativeCompile(binding, pattern, dialect),
    matches: (pattern, topic, dialect) => binding.matches(pattern, topic, DIALECTS[dialect].id),
    expand: (patterns, candidates, dialect) => nativeExpand(binding, patterns, candidates, dialect),
    createPatternIndex: (dialect) => new NativePatternIndexAdapter(binding, dialect),
    createTopicTrie: (dialect, maxNameBytes) => new NativeTopicTrieAdapter(binding, dialect, maxNameBytes),
  };
}
