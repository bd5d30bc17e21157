/**
 * The error registry. Every failure a caller can cause is a `LitetopicError` subclass with a stable
 * `code` (Node's `error.code` convention), the offending `value` and, for limits, `limit` and
 * `actual`. Messages may change between versions; codes may not. The Rust core keeps the same list
 * (`native/core/src/error.rs`) and a test compares the two.
 */

/** Every stable error code, in registry order. */
export const ERROR_CODES = [
  'INVALID_PATTERN',
  'INVALID_LITE_TOPIC',
  'INVALID_ARGUMENT',
  'ENGINE_UNAVAILABLE',
  'INVALID_TOPIC',
  'LOG_CORRUPT',
  'LOG_LOCKED',
  'UNSUPPORTED_FORMAT',
  'IO_ERROR',
  'CLOSED',
  'QUOTA_EXCEEDED',
  'TOPIC_NOT_FOUND',
  'GROUP_NOT_FOUND',
  'INVALID_RECEIPT',
  'READ_ONLY',
  'INTERNAL_ERROR',
  'DEPENDENCY_MISSING',
  'UNSUPPORTED',
  'REMOTE_ERROR',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** Why a pattern or a lite topic name failed validation: a finer, equally stable sub-code. */
export const VALIDATION_REASONS = [
  'EMPTY',
  'TOO_LONG',
  'INVALID_CHARACTER',
  'EMPTY_SEGMENT',
  'PARTIAL_WILDCARD',
  'MISPLACED_WILDCARD',
] as const;

export type ValidationReason = (typeof VALIDATION_REASONS)[number];

export interface LitetopicErrorDetails {
  value?: unknown;
  limit?: number;
  actual?: number;
  cause?: unknown;
}

/** Base class of every error litetopic throws on purpose. */
export class LitetopicError extends Error {
  readonly code: ErrorCode;
  /** The offending input, when there is one. */
  readonly value?: unknown;
  /** For limits: the limit that was exceeded. */
  readonly limit?: number;
  /** For limits: the actual figure. */
  readonly actual?: number;

  constructor(code: ErrorCode, message: string, details: LitetopicErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.code = code;
    if ('value' in details) this.value = details.value;
    if (details.limit !== undefined) this.limit = details.limit;
    if (details.actual !== undefined) this.actual = details.actual;
  }
}

/** A pattern that is not valid in its dialect. `reason` and `position` say what and where. */
export class InvalidPatternError extends LitetopicError {
  readonly reason: ValidationReason;
  readonly position: number;
  readonly dialect: string;

  constructor(
    message: string,
    details: { value: string; reason: ValidationReason; position: number; dialect: string },
  ) {
    super('INVALID_PATTERN', message, { value: details.value });
    this.reason = details.reason;
    this.position = details.position;
    this.dialect = details.dialect;
  }
}

/** A lite topic name that is empty, too long or has a character outside `[A-Za-z0-9_-]`. */
export class InvalidLiteTopicError extends LitetopicError {
  readonly reason: ValidationReason;
  readonly position: number;

  constructor(
    message: string,
    details: { value: string; reason: ValidationReason; position: number; limit?: number; actual?: number },
  ) {
    super('INVALID_LITE_TOPIC', message, details);
    this.reason = details.reason;
    this.position = details.position;
  }
}

/**
 * A topic name that is not valid in its MQTT or NATS dialect (lite names raise `InvalidLiteTopicError`
 * with a reason and position instead). docs/PATTERNS.md gives the rules.
 */
export class InvalidTopicError extends LitetopicError {
  readonly dialect: string;

  constructor(message: string, details: { value: string; dialect: string }) {
    super('INVALID_TOPIC', message, { value: details.value });
    this.dialect = details.dialect;
  }
}

/** An argument of the wrong type or out of its range: a programming error in the caller. */
export class InvalidArgumentError extends LitetopicError {
  constructor(message: string, details: LitetopicErrorDetails = {}) {
    super('INVALID_ARGUMENT', message, details);
  }
}

/** The native engine was asked for and cannot be loaded; the message says why and where. */
export class EngineUnavailableError extends LitetopicError {
  constructor(message: string, details: LitetopicErrorDetails = {}) {
    super('ENGINE_UNAVAILABLE', message, details);
  }
}

/**
 * Stored data failed a check: a bad checksum, magic or layout where valid data must be, or segment
 * files that do not follow each other. `file` and `position` say where.
 */
export class LogCorruptError extends LitetopicError {
  readonly file?: string;
  readonly position?: number;

  constructor(message: string, details: { file?: string; position?: number; cause?: unknown } = {}) {
    super('LOG_CORRUPT', message, { cause: details.cause });
    if (details.file !== undefined) this.file = details.file;
    if (details.position !== undefined) this.position = details.position;
  }
}

/** The data directory is locked by a live process (`pid`, possibly this one). */
export class LogLockedError extends LitetopicError {
  readonly dir: string;
  readonly pid?: number;

  constructor(message: string, details: { dir: string; pid?: number }) {
    super('LOG_LOCKED', message, { value: details.dir });
    this.dir = details.dir;
    if (details.pid !== undefined) this.pid = details.pid;
  }
}

/** A file written in a format version this release does not know (docs/FORMAT.md). */
export class UnsupportedFormatError extends LitetopicError {
  readonly file: string;
  readonly version: number;

  constructor(message: string, details: { file: string; version: number }) {
    super('UNSUPPORTED_FORMAT', message, { value: details.version });
    this.file = details.file;
    this.version = details.version;
  }
}

/**
 * The operating system refused a read, write, sync or file operation. After a failed write or sync
 * the log stays failed (every later call raises this error) until it is reopened.
 */
export class LogIoError extends LitetopicError {
  /** The system error code (`EIO`, `ENOSPC`, ...) when there is one. */
  readonly errno?: string;

  constructor(message: string, details: { errno?: string; cause?: unknown } = {}) {
    super('IO_ERROR', message, { cause: details.cause });
    if (details.errno !== undefined) this.errno = details.errno;
  }
}

/** The object was closed; nothing was done. */
export class ClosedError extends LitetopicError {
  constructor(message: string) {
    super('CLOSED', message);
  }
}

/** A broker quota would be exceeded; nothing changed. `quota` names it (e.g. `maxLiteTopicsPerClient`). */
export class QuotaExceededError extends LitetopicError {
  readonly quota: string;

  constructor(message: string, details: { quota: string; limit: number; actual: number; value?: unknown }) {
    super('QUOTA_EXCEEDED', message, details);
    this.quota = details.quota;
  }
}

/** The parent topic does not exist (or is not a LITE topic). */
export class TopicNotFoundError extends LitetopicError {
  constructor(message: string, details: { value: string }) {
    super('TOPIC_NOT_FOUND', message, details);
  }
}

/** The consumer group does not exist. */
export class GroupNotFoundError extends LitetopicError {
  constructor(message: string, details: { value: string }) {
    super('GROUP_NOT_FOUND', message, details);
  }
}

/** A receipt handle that is unknown or stale (its message was redelivered since); nothing changed. */
export class InvalidReceiptError extends LitetopicError {
  constructor(message: string, details: { value: unknown }) {
    super('INVALID_RECEIPT', message, details);
  }
}

/** A write (append, deletion, retention, checkpoint) to a commit log opened with `readOnly`; nothing was done. */
export class ReadOnlyError extends LitetopicError {
  constructor(message: string) {
    super('READ_ONLY', message);
  }
}

/**
 * A bug in litetopic: an internal check failed (in the native engine, a Rust panic, caught where it
 * would cross into Node). The commit log it happened in is failed (every later call raises this
 * error) until it is reopened, which recovers from what is on disk.
 */
export class InternalError extends LitetopicError {
  constructor(message: string, details: { cause?: unknown } = {}) {
    super('INTERNAL_ERROR', message, details);
  }
}

/**
 * An optional package a feature needs is not installed (`Broker.connect` needs
 * `rocketmq-client-nodejs`, `@grpc/grpc-js` and `@grpc/proto-loader`); `value` names the package.
 */
export class DependencyMissingError extends LitetopicError {
  constructor(message: string, details: { value: string; cause?: unknown }) {
    super('DEPENDENCY_MISSING', message, details);
  }
}

/**
 * The broker behind this object cannot do what was asked (a RocketMQ cluster has no key-shared
 * groups, patterns or local admin queries; docs/ROCKETMQ.md lists them); nothing was done.
 */
export class UnsupportedError extends LitetopicError {
  constructor(message: string, details: { value?: unknown } = {}) {
    super('UNSUPPORTED', message, details);
  }
}

/**
 * A remote broker (RocketMQ) refused a call for a reason litetopic has no code of its own for, or
 * could not be reached. `status` is RocketMQ's status code (or the gRPC status name) when known.
 */
export class RemoteError extends LitetopicError {
  readonly status?: string;

  constructor(message: string, details: { status?: string; cause?: unknown } = {}) {
    super('REMOTE_ERROR', message, { cause: details.cause });
    if (details.status !== undefined) this.status = details.status;
  }
}
