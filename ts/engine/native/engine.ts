/**
 * The native engine: the Engine contract over the Rust core, through the generated binding. A panic
 * in the binding arrives as `INTERNAL_ERROR` and every entry point rethrows it typed (`toTypedError`).
 */

import { DIALECTS } from '../../common/dialect.js';
import type { Engine } from '../contract.js';
import type { NativeBinding } from './binding.js';
import { openNativeLog, openNativeMemoryLog, toTypedError } from './log.js';
import { nativeCompile, nativeExpand, toViolation } from './pattern.js';
import { NativePatternIndexAdapter } from './pattern-index.js';
import { NativeTopicTrieAdapter } from './trie.js';

export function createNativeEngine(binding: NativeBinding): Engine {
  return {
    name: 'native',
    openLog: (dir, options) => openNativeLog(binding, dir, options),
    openMemoryLog: (options) => openNativeMemoryLog(binding, options),
    validatePattern: (pattern, dialect) => {
      try {
        return toViolation(binding.validatePattern(pattern, DIALECTS[dialect].id));
      } catch (error) {
        throw toTypedError(error);
      }
    },
    validateLiteTopic: (name, maxBytes) => {
      try {
        return toViolation(binding.validateLiteTopic(name, maxBytes));
      } catch (error) {
        throw toTypedError(error);
      }
    },
    compile: (pattern, dialect) => nativeCompile(binding, pattern, dialect),
    matches: (pattern, topic, dialect) => {
      try {
        return binding.matches(pattern, topic, DIALECTS[dialect].id);
      } catch (error) {
        throw toTypedError(error);
      }
    },
    expand: (patterns, candidates, dialect) => nativeExpand(binding, patterns, candidates, dialect),
    createPatternIndex: (dialect) => new NativePatternIndexAdapter(binding, dialect),
    createTopicTrie: (dialect, maxNameBytes) => new NativeTopicTrieAdapter(binding, dialect, maxNameBytes),
    sealFrames: (bytes, start, end) => {
      try {
        return binding.sealFrames(bytes, start, end);
      } catch (error) {
        throw toTypedError(error);
      }
    },
  };
}
