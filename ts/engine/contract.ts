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

/** The reverse index as an engine implements it. */
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

export interface Engine {
  readonly name: EngineName;
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
}
