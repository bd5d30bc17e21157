/**
 * litetopic: the lite topic message model of Apache RocketMQ 5.5, embedded in Node.js, with a Rust
 * core behind Node-API and a pure TypeScript fallback. This release provides the engines and the
 * pattern engine; see README.md.
 */
export type { DialectName, EngineName } from './engine/contract.js';
export {
  MAX_LITE_TOPIC_BYTES,
  MAX_LITE_TOPIC_BYTES_CEILING,
  MAX_MQTT_TOPIC_BYTES,
} from './engine/js/limits.js';
export { type EngineInfo, type EngineRequest, engineInfo, nativeAvailable } from './engine/load.js';
export {
  EngineUnavailableError,
  ERROR_CODES,
  type ErrorCode,
  InvalidArgumentError,
  InvalidLiteTopicError,
  InvalidPatternError,
  InvalidTopicError,
  LitetopicError,
  VALIDATION_REASONS,
  type ValidationReason,
} from './errors.js';
export {
  compilePattern,
  expand,
  type LiteTopicOptions,
  Matcher,
  matches,
  matchesAny,
  PatternIndex,
  type PatternIndexStats,
  type PatternOptions,
  type ValidationResult,
  validateLiteTopic,
  validatePattern,
} from './pattern.js';
export { type TopicListPage, TopicTrie, type TopicTrieOptions, type TopicTrieStats } from './trie.js';
