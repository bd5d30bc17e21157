/**
 * The public pattern API: validation, compiled matchers, one-shot matching, expansion and the reverse
 * pattern index. Every function takes `{ dialect?, engine? }`; the engine defaults to the active one
 * (see `engineInfo()`), so callers can run both engines side by side.
 */

import { DIALECTS } from './common/dialect.js';
import { MAX_LITE_TOPIC_BYTES, MAX_LITE_TOPIC_BYTES_CEILING } from './common/limits.js';
import type { DialectName, Engine, EngineName, PatternIndexCore, PatternIndexStats } from './engine/contract.js';
import { getEngine } from './engine/load.js';
import { InvalidArgumentError, InvalidPatternError, type ValidationReason } from './errors.js';

export type { DialectName, EngineName, PatternIndexStats };

export interface PatternOptions {
  /** `lite` (default: `__`, `*`, `**`), `mqtt` (`/`, `+`, `#`) or `nats` (`.`, `*`, `>`). */
  dialect?: DialectName;
  /** `native` or `js`; default: the active engine. */
  engine?: EngineName;
}

export interface LiteTopicOptions {
  /** Longest accepted name in UTF-8 bytes: 1..1024, default 64. */
  maxBytes?: number;
  engine?: EngineName;
}

/** The outcome of a validation: `{ ok: true }`, or what is wrong and where. */
export type ValidationResult =
  | { ok: true }
  | {
      ok: false;
      code: 'INVALID_PATTERN' | 'INVALID_LITE_TOPIC';
      reason: ValidationReason;
      message: string;
      /** JavaScript string index of the problem. */
      position: number;
      limit?: number;
      actual?: number;
    };

/** The engine and dialect of the options, checked. Internal: shared with ts/trie.ts. */
export function resolve(options: PatternOptions | undefined): { engine: Engine; dialect: DialectName } {
  const dialect = options?.dialect ?? 'lite';
  if (!Object.hasOwn(DIALECTS, dialect)) {
    throw new InvalidArgumentError(`dialect must be "lite", "mqtt" or "nats" (got ${JSON.stringify(dialect)})`, {
      value: dialect,
    });
  }
  return { engine: getEngine(options?.engine), dialect };
}

/** Internal: shared with ts/trie.ts. */
export function requireString(value: unknown, what: string): string {
  if (typeof value !== 'string') {
    throw new InvalidArgumentError(`${what} must be a string (got ${typeof value})`, { value });
  }
  return value;
}

function requireId(id: unknown): number {
  if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > 0xffff_ffff) {
    throw new InvalidArgumentError(`id must be an integer from 0 to 4294967295 (got ${String(id)})`, { value: id });
  }
  return id;
}

/** Validates a pattern in its dialect. */
export function validatePattern(pattern: string, options?: PatternOptions): ValidationResult {
  const { engine, dialect } = resolve(options);
  const violation = engine.validatePattern(requireString(pattern, 'pattern'), dialect);
  return violation === null ? { ok: true } : { ok: false, ...violation };
}

/**
 * A lite topic name length limit from the options: default 64, else an integer from 1 to 1024.
 * Internal: shared with ts/trie.ts.
 */
export function requireNameLimit(value: number | undefined, option: string): number {
  const limit = value ?? MAX_LITE_TOPIC_BYTES;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LITE_TOPIC_BYTES_CEILING) {
    throw new InvalidArgumentError(`${option} must be an integer from 1 to ${MAX_LITE_TOPIC_BYTES_CEILING}`, {
      value: limit,
      limit: MAX_LITE_TOPIC_BYTES_CEILING,
      actual: limit,
    });
  }
  return limit;
}

/** Validates a lite topic name: 1..`maxBytes` (default 64) UTF-8 bytes of `[A-Za-z0-9_-]`. */
export function validateLiteTopic(name: string, options?: LiteTopicOptions): ValidationResult {
  const maxBytes = requireNameLimit(options?.maxBytes, 'maxBytes');
  const violation = getEngine(options?.engine).validateLiteTopic(requireString(name, 'name'), maxBytes);
  return violation === null ? { ok: true } : { ok: false, ...violation };
}

/** The typed error for an invalid pattern, or undefined when it is valid. Internal: shared with ts/trie.ts. */
export function invalidPattern(engine: Engine, pattern: string, dialect: DialectName): InvalidPatternError | undefined {
  const violation = engine.validatePattern(pattern, dialect);
  if (violation === null) return undefined;
  return new InvalidPatternError(violation.message, {
    value: pattern,
    reason: violation.reason,
    position: violation.position,
    dialect,
  });
}

/** A compiled pattern. `matches` never throws: anything but a valid topic simply does not match. */
export class Matcher {
  readonly pattern: string;
  readonly dialect: DialectName;
  readonly engine: EngineName;
  /**
   * Whether `topic` matches. The engine's compiled function itself, not a method that calls it: on
   * the hot path of a message router one call level is a measurable share of the cost.
   */
  readonly matches: (topic: string) => boolean;

  /** Prefer `compilePattern()`. Throws `InvalidPatternError` for an invalid pattern. */
  constructor(pattern: string, options?: PatternOptions) {
    const { engine, dialect } = resolve(options);
    requireString(pattern, 'pattern');
    const error = invalidPattern(engine, pattern, dialect);
    if (error !== undefined) throw error;
    this.pattern = pattern;
    this.dialect = dialect;
    this.engine = engine.name;
    this.matches = engine.compile(pattern, dialect).matches;
  }
}

/** Compiles a pattern; throws `InvalidPatternError` (code `INVALID_PATTERN`) when it is invalid. */
export function compilePattern(pattern: string, options?: PatternOptions): Matcher {
  return new Matcher(pattern, options);
}

/** Whether `topic` matches `pattern`. Invalid patterns and topics never match; nothing throws for them. */
export function matches(pattern: string, topic: string, options?: PatternOptions): boolean {
  const { engine, dialect } = resolve(options);
  if (typeof pattern !== 'string' || typeof topic !== 'string') return false;
  return engine.matches(pattern, topic, dialect);
}

function stringsOnly(values: readonly unknown[], what: string): string[] {
  if (!Array.isArray(values)) throw new InvalidArgumentError(`${what} must be an array of strings`, { value: values });
  return values.filter((v): v is string => typeof v === 'string');
}

/** Whether any valid pattern in `patterns` matches `topic`. */
export function matchesAny(patterns: readonly string[], topic: string, options?: PatternOptions): boolean {
  const { engine, dialect } = resolve(options);
  if (typeof topic !== 'string') return false;
  return engine.expand(stringsOnly(patterns, 'patterns'), [topic], dialect).length > 0;
}

/**
 * The candidates matched by any valid pattern, in first-seen order, without duplicates. Invalid
 * patterns are ignored: they never match and never widen the result.
 */
export function expand(patterns: readonly string[], candidates: readonly string[], options?: PatternOptions): string[] {
  const { engine, dialect } = resolve(options);
  const names = stringsOnly(candidates, 'candidates');
  const found = engine.expand(stringsOnly(patterns, 'patterns'), names, dialect);
  return found.map((i) => names[i] as string);
}

/**
 * The pattern index: subscriptions (pattern, id) in, "which ids match this topic?" out, without
 * scanning the patterns. An id may be added under several patterns; it is reported once. Patterns
 * without wildcards are kept by their text, so a topic finds them with one hash lookup however many
 * there are; patterns with wildcards form a trie that a lookup walks only along the branches the
 * topic's segments can take.
 */
export class PatternIndex {
  readonly dialect: DialectName;
  readonly engine: EngineName;
  private readonly core: PatternIndexCore;
  private readonly engineImpl: Engine;

  constructor(options?: PatternOptions) {
    const { engine, dialect } = resolve(options);
    this.dialect = dialect;
    this.engine = engine.name;
    this.engineImpl = engine;
    this.core = engine.createPatternIndex(dialect);
  }

  /** Adds `id` under `pattern`; false if that entry already existed. Throws `InvalidPatternError`. */
  add(pattern: string, id: number): boolean {
    requireString(pattern, 'pattern');
    requireId(id);
    const outcome = this.core.add(pattern, id);
    if (outcome === -1) throw invalidPattern(this.engineImpl, pattern, this.dialect) as InvalidPatternError;
    return outcome === 1;
  }

  /** Removes `id` from under `pattern`; false if it was not there. */
  remove(pattern: string, id: number): boolean {
    requireString(pattern, 'pattern');
    requireId(id);
    return this.core.remove(pattern, id);
  }

  /** Ids of every entry whose pattern matches `topic`, ascending, without duplicates. */
  match(topic: string): number[] {
    return typeof topic === 'string' ? this.core.match(topic) : [];
  }

  /** Writes the matching ids into `out` as far as it has room; returns how many there are in all. */
  matchInto(topic: string, out: Uint32Array): number {
    if (!(out instanceof Uint32Array)) throw new InvalidArgumentError('out must be a Uint32Array', { value: out });
    return typeof topic === 'string' ? this.core.matchInto(topic, out) : 0;
  }

  /**
   * One call for many topics: `out[i]` receives the number of ids matching `topics[i]`. Returns the
   * total. `out` needs at least `topics.length` slots.
   */
  matchCounts(topics: readonly string[], out: Uint32Array): number {
    if (!Array.isArray(topics)) throw new InvalidArgumentError('topics must be an array of strings', { value: topics });
    if (!(out instanceof Uint32Array)) throw new InvalidArgumentError('out must be a Uint32Array', { value: out });
    if (out.length < topics.length) {
      throw new InvalidArgumentError(`out has ${out.length} slots for ${topics.length} topics`, {
        limit: out.length,
        actual: topics.length,
      });
    }
    if (topics.length === 0) return 0;
    const strings = topics.every((t) => typeof t === 'string')
      ? topics
      : topics.map((t) => (typeof t === 'string' ? t : ''));
    return this.core.matchCounts(strings, out.subarray(0, topics.length));
  }

  /** Number of (pattern, id) entries. */
  get size(): number {
    return this.core.size;
  }

  clear(): void {
    this.core.clear();
  }

  /**
   * Entries; the nodes and distinct segments of the trie, which holds only the patterns with
   * wildcards; and the engine's estimate of the bytes it holds.
   */
  stats(): PatternIndexStats {
    return this.core.stats();
  }
}
