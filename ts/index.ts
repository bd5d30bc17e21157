/**
 * litetopic: the lite topic message model of Apache RocketMQ 5.5, embedded in Node.js, with a Rust
 * core behind Node-API and a pure TypeScript fallback. This release provides the engines, the
 * pattern engine, the topic-name trie, the commit log and the broker; see README.md.
 */
export {
  Admin,
  type BrokerInfo,
  type ClientInfo,
  type CorruptRecordInfo,
  type GroupInfo,
  type LiteTopicInfo,
  type LiteTopicLag,
  type TopicInfo,
  type WithheldBucketInfo,
} from './broker/admin.js';
export {
  type BackgroundErrorInfo,
  Broker,
  type BrokerLogger,
  type BrokerOptions,
  DEFAULT_MAX_RECONSUME_TIMES,
  DEFAULT_STALL_TIMEOUT_MS,
  type GroupOptions,
  type TopicOptions,
} from './broker/broker.js';
export {
  Consumer,
  type ConsumerEvents,
  type StreamedMessage,
  type StreamOptions,
  type SubscribeOptions,
  type UnsubscribedEvent,
} from './broker/consumer.js';
export { CorruptMessageError } from './broker/corrupt.js';
export type { DeadLetter } from './broker/deadletter.js';
export type { JournalFile, JournalStorage } from './broker/journal-storage.js';
export {
  DEFAULT_KEY_SHARED_BUCKETS,
  type KeySharedOptions,
  MAX_KEY_SHARED_BUCKETS,
  MIN_KEY_SHARED_BUCKETS,
} from './broker/key-shared.js';
export type { RetentionPolicy } from './broker/lifecycle.js';
export type { BrokerMetrics, GroupMetrics, LatencySummary, TopicMetrics } from './broker/metrics.js';
export { type BrokerLimits, DEFAULT_LIMITS } from './broker/quota.js';
export type { UnsubscribeReason } from './broker/registry.js';
export {
  DEFAULT_RETRY_INITIAL_DELAY_MS,
  DEFAULT_RETRY_MAX_DELAY_MS,
  DEFAULT_RUN_WAIT_MS,
  type MessageHandler,
  type Running,
  type RunOptions,
} from './broker/run.js';
export type { StartPosition } from './broker/start.js';
export type { SubModel } from './broker/state.js';
export {
  type LmqKeeper,
  MemoryStore,
  type MessageStore,
  type StoreReadRequest,
  type StoreRecord,
} from './broker/store.js';
export {
  DEFAULT_INVISIBLE_TIME_MS,
  type PopOptions,
  type PoppedMessage,
  type SendMessage,
  type SendResult,
} from './broker/types.js';
export {
  DEFAULT_SEGMENT_BYTES,
  MAX_APPEND_RECORDS,
  MAX_FIELD_BYTES,
  MAX_LITE_TOPIC_BYTES,
  MAX_LITE_TOPIC_BYTES_CEILING,
  MAX_LMQ_NAME_BYTES,
  MAX_LMQS_PER_RECORD,
  MAX_MQTT_TOPIC_BYTES,
  MAX_READ_RECORDS,
  MAX_SEGMENT_BYTES,
  MIN_SEGMENT_BYTES,
} from './common/limits.js';
export type { DialectName, EngineName, LogCorruption, LogRecoveryStats } from './engine/contract.js';
export { type EngineInfo, type EngineRequest, engineInfo, nativeAvailable } from './engine/load.js';
export {
  ClosedError,
  DependencyMissingError,
  EngineUnavailableError,
  ERROR_CODES,
  type ErrorCode,
  GroupNotFoundError,
  InternalError,
  InvalidArgumentError,
  InvalidLiteTopicError,
  InvalidPatternError,
  InvalidReceiptError,
  InvalidTopicError,
  LitetopicError,
  type LitetopicErrorDetails,
  LogCorruptError,
  LogIoError,
  LogLockedError,
  QuotaExceededError,
  ReadOnlyError,
  RemoteError,
  TopicNotFoundError,
  UnsupportedError,
  UnsupportedFormatError,
  VALIDATION_REASONS,
  type ValidationReason,
} from './errors.js';
export {
  type AppendRecord,
  type AppendResult,
  type BodyAppendResult,
  type BodyBatch,
  type BodyReadResult,
  type Clock,
  CommitLog,
  type CommitLogOptions,
  type CommitLogStats,
  DEFAULT_CHECKPOINT_BYTES,
  DEFAULT_FLUSH_INTERVAL_MS,
  type LmqPage,
  type LmqSummary,
  type ReadRequest,
  type StoredMessage,
  systemClock,
} from './log.js';
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
export { type ConnectOptions, RemoteBroker } from './remote/broker.js';
export { RemoteConsumer } from './remote/consumer.js';
export { type TopicListPage, TopicTrie, type TopicTrieOptions, type TopicTrieStats } from './trie.js';
