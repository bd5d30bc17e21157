/**
 * The Engine contract: what the native and the js engine both provide. The public API
 * (`ts/pattern.ts`) and, later, the broker talk to this interface only, never to the binding.
 * Inputs reaching an engine are already type-checked by the public API.
 */
import type { ValidationReason } from '../errors.js';

export type EngineName = 'native' | 'js';
export type DialectName = 'lite' | 'mqtt' | 'nats';

/** A failed validation, identical between engines (a test compares them field by field). */
export interface Violation {
  code: 'INVALID_PATTERN' | 'INVALID_LITE_TOPIC';
  reason: ValidationReason;
  /** JavaScript string index (UTF-16 code units) of the problem. */
  position: number;
  message: string;
  /** For `TOO_LONG`: the limit and the actual size in UTF-8 bytes. */
  limit?: number;
  actual?: number;
}

/** A compiled, valid pattern. */
export interface CompiledMatcher {
  /** False for anything but a matching topic, non-strings included; never throws. */
  matches(topic: string): boolean;
}

/** Shape and memory figures of a pattern index. */
export interface PatternIndexStats {
  entries: number;
  nodes: number;
  segments: number;
  /** The engine's own estimate of the memory it holds for the index, in bytes. */
  approximateBytes: number;
}

/** The pattern index as an engine implements it. */
export interface PatternIndexCore {
  /** 1 added, 0 already present, -1 invalid pattern (nothing changed). */
  add(pattern: string, id: number): 1 | 0 | -1;
  remove(pattern: string, id: number): boolean;
  readonly size: number;
  clear(): void;
  /** The ids matching `topic`, ascending and distinct. */
  match(topic: string): number[];
  /** Fills `out` as far as it has room; returns the full count. */
  matchInto(topic: string, out: Uint32Array): number;
  /** `out[i]` = number of ids matching `topics[i]`; `out.length === topics.length`. Returns the sum. */
  matchCounts(topics: readonly string[], out: Uint32Array): number;
  stats(): PatternIndexStats;
}

/** Shape and memory figures of a topic-name trie. */
export interface TopicTrieStats {
  names: number;
  nodes: number;
  segments: number;
  /** The engine's own estimate of the memory it holds for the trie, in bytes. */
  approximateBytes: number;
}

/** `limit` value meaning "no limit" for `TopicTrieCore.list` and `idleSince`. */
export const NO_LIMIT = 0xffff_ffff;

/** The topic-name trie as an engine implements it (ts/trie.ts validates arguments first). */
export interface TopicTrieCore {
  /** The name's id; -1 for an invalid lite name, -2 for an invalid MQTT or NATS topic (nothing changed). */
  add(name: string, timestampMs: number | undefined): number;
  remove(name: string): boolean;
  /** The id, or -1 when the name is not stored. */
  idOf(name: string): number;
  /**
   * `add` of each name (at least one) in order, with last activity `timestampsMs[i]` (none where it
   * is negative), the ids into `out`. Returns -1 when every name was added, else the index of the
   * first invalid name: the names before it stay added.
   */
  addAll(names: readonly string[], timestampsMs: Float64Array, out: Float64Array): number;
  /** `id` is an integer from 0 to 2^32-1. */
  nameOf(id: number): string | undefined;
  readonly size: number;
  /** Every stored name the pattern matches, or null for an invalid pattern. */
  expand(pattern: string): string[] | null;
  /** Fills `out` with matching ids as far as it has room; the full count, or -1 for an invalid pattern. */
  expandInto(pattern: string, out: Uint32Array): number;
  /** How many names match, or -1 for an invalid pattern. */
  count(pattern: string): number;
  /** Up to `limit` names in list order under `prefix` ('' for all), strictly after `after`. */
  list(prefix: string, limit: number, after: string | undefined): { names: string[]; more: boolean };
  touch(name: string, timestampMs: number): boolean;
  /** Names whose last activity is before `cutoffMs`, oldest first (ties by id), at most `limit`. */
  idleSince(cutoffMs: number, limit: number): string[];
  clear(): void;
  stats(): TopicTrieStats;
}

/** Options an engine receives for a commit log, already validated by ts/log.ts. */
export interface LogOpenOptions {
  /** Size of new segments in bytes (MIN_SEGMENT_BYTES..MAX_SEGMENT_BYTES). */
  segmentBytes: number;
  /** Time stamped into new segment headers and the lock file. */
  nowMs: number;
  /**
   * Read without writing anything: no lock, no cut, no removal, no new segment, files opened (and
   * mapped) read-only; writes throw `ReadOnlyError`. The recovery stats say what a writable open
   * would do.
   */
  readOnly: boolean;
  /** Cut the log at the first corrupt record or segment header instead of refusing to open. */
  repair: boolean;
}

/**
 * A batch of records encoded by `ts/common/log-record.ts` (docs/FORMAT.md): complete records
 * back to back, with their LMQ offsets, store timestamp and CRC still to be filled in by the engine.
 */
export interface EncodedBatch {
  bytes: Uint8Array;
  /** Number of records. */
  count: number;
  /** `starts[i]` is the byte offset of record i in `bytes`; `starts[count]` is the end. */
  starts: Uint32Array;
  /** Every record's LMQ names, flattened in record order (the js engine keys its queues by string). */
  lmqs: string[];
  /** `lmqStarts[i]` is the index in `lmqs` (and in `offsets`) of record i's first LMQ. */
  lmqStarts: Uint32Array;
  /** Out: the position of each written record. */
  positions: Float64Array;
  /** Out: the offset each written record got in each of its LMQs, aligned with `lmqs`. */
  offsets: Float64Array;
}

/**
 * Records that carry only a body, laid out flat (what `CommitLog.appendBodies` takes): record `i`
 * goes to the LMQ `lmqs[lmqIndex[i]]` and its body is `bodies` from `bodyEnds[i - 1]` (0 for the
 * first) to `bodyEnds[i]`. The number of records is `lmqIndex.length`.
 */
export interface BodyBatch {
  lmqs: readonly string[];
  lmqIndex: Uint32Array;
  bodies: Uint8Array;
  bodyEnds: Uint32Array;
  /**
   * `keepers[k]`, when given, is an object the caller keeps for `lmqs[k]` (see
   * `ReadRequest.keeper`): the log may keep there what finds that LMQ again without its name.
   */
  keepers?: readonly ({ storeState: object | undefined } | undefined)[] | undefined;
}

/** What a read returns: the records' bytes back to back, already checked, and where they came from. */
export interface LogReadResult {
  /**
   * Records as stored (docs/FORMAT.md), back to back from `bytesAt`; decoded lazily by ts/log.ts.
   * The results of one `readMany` may share one view (each from its own `bytesAt`): a view per LMQ
   * of every POP costs more than the decoding of its one or two records.
   */
  bytes: Uint8Array;
  /** Where in `bytes` the first record starts. */
  bytesAt: number;
  /** Offset of the first record (reads start at the LMQ's minimum when asked below it). */
  firstOffset: number;
  /** The position of record i is `positions[positionsAt + i]` (shared as `bytes` may be). */
  positions: Float64Array;
  positionsAt: number;
  count: number;
}

/** The bodies of a read (what `CommitLog.readBodies` returns). */
export interface BodyReadResult {
  /** Offset of the first record (reads start at the LMQ's minimum when asked below it). */
  firstOffset: number;
  count: number;
  /** The records' bodies back to back: record i's ends at `bodyEnds[i]` and starts where the one before ends. */
  bodies: Buffer;
  bodyEnds: Uint32Array;
  /** The position of each record. */
  positions: Float64Array;
}

/** One LMQ of a `readMany`: what `read` takes. */
export interface ReadRequest {
  lmq: string;
  fromOffset: number;
  maxNum: number;
  /**
   * An object of the caller's kept for this LMQ and passed with every read of it (a broker's kept
   * record of a lite topic): the log may keep in its `storeState` what finds the LMQ again without
   * looking its name up (the native engine: the LMQ's handle). Checked on every use, so one kept by
   * another log, or for another LMQ, costs a lookup, never a wrong read.
   */
  keeper?: { storeState: object | undefined } | undefined;
}

/** Damage recovery found where valid data must be (docs/FORMAT.md, "Recovery"). */
export interface LogCorruption {
  file: string;
  position: number;
  message: string;
}

/**
 * How the last open recovered the log (docs/FORMAT.md, "Recovery"). After a read-only open, what a
 * writable open would do: nothing was done.
 */
export interface LogRecoveryStats {
  checkpoint: 'none' | 'loaded' | 'invalid';
  /** Position replay started from. */
  replayedFrom: number;
  replayedRecords: number;
  /** Where the log was cut, or -1 when nothing was cut. */
  cutPosition: number;
  cutBytes: number;
  removedSegments: number;
  /** The segment files removed: after the cut, unusable, or half-prepared. */
  removedFiles: string[];
  /**
   * Damage found where valid records must be: what a read-only open would have a writable one refuse
   * (the readable log ends there), or what a repair cut. Null when there was none.
   */
  corruption: LogCorruption | null;
  /** The open was read-only. */
  readOnly: boolean;
  durationMs: number;
}

/** Figures an engine reports about its log. */
export interface LogCoreStats {
  segments: number;
  /** Bytes of segment files on disk. */
  segmentBytesOnDisk: number;
  /** Next write position. */
  writePosition: number;
  /** Everything before this position is durable. */
  durablePosition: number;
  lmqs: number;
  /** Index entries held in memory. */
  indexEntries: number;
  /** The engine's estimate of the memory its index holds, in bytes. */
  indexBytes: number;
  /** File descriptors the log holds open. */
  filesOpen: number;
  /** Whether a spare segment is ready for the next roll. */
  spareReady: boolean;
  recovery: LogRecoveryStats;
}

/**
 * A commit log as an engine implements it. `ts/log.ts` validates every argument, encodes records,
 * groups flushes, schedules segment preparation and checkpoints, and decodes what reads return.
 * Engine failures throw `LitetopicError`s with the log codes (LOG_CORRUPT, IO_ERROR, ...).
 */
export interface LogCore {
  /**
   * Writes records `from..batch.count` of the batch, stamping `storeTimestampMs`, assigning LMQ
   * offsets and checksums, and fills `batch.positions` / `batch.offsets` for them. Stops early, at a
   * record boundary, when the active segment is full and no spare segment is ready; returns the index
   * after the last record written (so `batch.count` when all were). Never blocks on file creation.
   */
  append(batch: EncodedBatch, from: number, storeTimestampMs: number): number;
  /**
   * `append` for a body-only batch, checked by the caller (every `lmqIndex` inside `lmqs`, body
   * ends in order and inside `bodies`; the names are the engine's to check): records
   * `from..lmqIndex.length`, born when stored, each with one LMQ, so `positions[i]` and
   * `offsets[i]` are record i's. An engine without it gets the records encoded by ts/log.ts.
   */
  appendBodies?(
    batch: BodyBatch,
    from: number,
    storeTimestampMs: number,
    positions: Float64Array,
    offsets: Float64Array,
  ): number;
  /** Creates, sizes, heads and syncs the next segment off the event loop, unless one is ready. */
  prepareSegment(nowMs: number): Promise<void>;
  /** Makes everything written so far durable, off the event loop; resolves to the durable position. */
  sync(): Promise<number>;
  readonly writePosition: number;
  /** Whether a spare segment is ready for the next roll (ts/log.ts prepares one when not). */
  readonly spareReady: boolean;
  read(lmq: string, fromOffset: number, maxNum: number): LogReadResult;
  /**
   * `read` for the bodies alone, each record checked whole first; an engine without it has its
   * bodies cut out of `read`'s records by ts/log.ts.
   */
  /** `CommitLog.readBodies`, into `into` when given and large enough (see there). */
  readBodies?(lmq: string, fromOffset: number, maxNum: number, into?: Uint8Array): BodyReadResult;
  /** `read` of each request, in order (native: one call and one buffer for all). */
  readMany(requests: readonly ReadRequest[]): LogReadResult[];
  /** Next offset to be written; 0 for an unknown LMQ. */
  maxOffset(lmq: string): number;
  /** Oldest offset still stored; equal to maxOffset when empty; 0 for an unknown LMQ. */
  minOffset(lmq: string): number;
  /** Store timestamp of the LMQ's newest record; -1 for an unknown LMQ. */
  lastWriteTimestamp(lmq: string): number;
  readonly lmqCount: number;
  /**
   * Every LMQ whose name starts with `prefix`, in UTF-8 byte order, in one call: `names` holds each
   * name with `prefix` removed; `values` three numbers per name, what `minOffset`, `maxOffset` and
   * `lastWriteTimestamp` answer for it. A broker reopening a directory reads every lite topic so.
   */
  lmqSummaries(prefix: string): { names: string[]; values: Float64Array };
  /** Up to `limit` LMQ names starting with `prefix`, in UTF-8 byte order, strictly after `after`. */
  listLmqs(prefix: string, limit: number, after: string | undefined): { names: string[]; more: boolean };
  /**
   * Detaches every segment (never the active one) whose records are all older than `cutoffMs` (-1:
   * no age rule), then the oldest ones until the log is at most `maxBytes` (-1: no size rule), drops
   * the index entries pointing into them, and deletes their files off the event loop.
   */
  retain(cutoffMs: number, maxBytes: number): Promise<{ segments: number; bytes: number }>;
  /** Writes a checkpoint as of a durable position (syncing first), off the event loop. */
  checkpoint(nowMs: number): Promise<void>;
  stats(): LogCoreStats;
  /** Syncs, releases files and mappings and removes the lock. The handle is unusable afterwards. */
  close(): Promise<void>;
}

export interface Engine {
  readonly name: EngineName;
  /** Opens (creating if needed), locks and recovers the commit log in `dir`. */
  openLog(dir: string, options: LogOpenOptions): Promise<LogCore>;
  /**
   * Opens a new, empty commit log whose segments live in anonymous memory: no directory, no lock,
   * nothing durable, everything freed when it closes or the process ends. Engines without one leave
   * it out.
   */
  openMemoryLog?(options: { segmentBytes: number; nowMs: number }): Promise<LogCore>;
  validatePattern(pattern: string, dialect: DialectName): Violation | null;
  validateLiteTopic(name: string, maxBytes: number): Violation | null;
  /** Compiles a pattern already known to be valid. */
  compile(pattern: string, dialect: DialectName): CompiledMatcher;
  matches(pattern: string, topic: string, dialect: DialectName): boolean;
  /** Indexes of the candidates matched by any valid pattern, in candidate order, each distinct value once. */
  expand(patterns: readonly string[], candidates: readonly string[], dialect: DialectName): number[];
  createPatternIndex(dialect: DialectName): PatternIndexCore;
  /** `maxNameBytes` bounds lite names only (MQTT has its own limit, NATS none). */
  createTopicTrie(dialect: DialectName, maxNameBytes: number): TopicTrieCore;
  /**
   * Fills in the CRC-32C of every frame in `bytes[start, end)`: frames back to back, each a u32
   * payload length, four bytes for the payload's CRC-32C (written here), then the payload, all
   * little-endian (the broker's state journal seals each run of records it writes so). Returns how
   * many frames it sealed, or -1 when the range is outside `bytes` or a frame runs past `end`.
   */
  sealFrames(bytes: Uint8Array, start: number, end: number): number;
}
