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
}
