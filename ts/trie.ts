/**
 * The public topic-name trie: millions of lite topic names with stable ids, pattern expansion over
 * the stored names, paged listing and idle tracking, each in time proportional to its answer (see
 * docs/TRIE.md). Options `{ dialect?, engine?, maxNameBytes? }` as elsewhere in the package.
 */
import { type DialectName, type Engine, type EngineName, NO_LIMIT, type TopicTrieCore } from './engine/contract.js';
import { InvalidArgumentError, InvalidLiteTopicError, type InvalidPatternError, InvalidTopicError } from './errors.js';
import { invalidPattern, type PatternOptions, requireNameLimit, requireString, resolve } from './pattern.js';

export type { TopicTrieStats } from './engine/contract.js';

export interface TopicTrieOptions extends PatternOptions {
  /** Longest accepted lite topic name in UTF-8 bytes: 1..1024, default 64. Lite dialect only. */
  maxNameBytes?: number;
}

/** One page of `list`: pass `next` back as `after` for the following page; absent on the last. */
export interface TopicListPage {
  names: string[];
  next?: string;
}

/** The level separator of each dialect's names. */
const DIALECT_SEPARATORS: Record<DialectName, string> = { lite: '__', mqtt: '/', nats: '.' };

/** Largest id: ids are unsigned 32-bit integers. */
const MAX_ID = 0xffff_ffff;

function requireTimestamp(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidArgumentError(`${what} must be an integer from 0 to 2^53-1 ms (got ${String(value)})`, { value });
  }
  return value;
}

/** `undefined` → no limit; otherwise an integer from `min` to 2^32-1. */
function requireLimit(value: unknown, min: number): number {
  if (value === undefined) return NO_LIMIT;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > NO_LIMIT) {
    throw new InvalidArgumentError(`limit must be an integer from ${min} to ${NO_LIMIT} (got ${String(value)})`, {
      value,
    });
  }
  return value;
}

/** With the `u` flag a lone surrogate is its own code point, matched by `\p{Cs}`. */
const UNPAIRED_SURROGATE = /\p{Cs}/u;

/** Prefixes and cursors must be well-formed: an unpaired surrogate cannot cross to the native engine. */
function requireWellFormed(value: unknown, what: string): string {
  const text = requireString(value, what);
  if (UNPAIRED_SURROGATE.test(text)) throw new InvalidArgumentError(`${what} has an unpaired surrogate`, { value });
  return text;
}

/**
 * A set of topic names of one dialect. `add` gives each name an id that stays the same while the
 * name lives (ids are reused only after removal); `expand` answers "which stored names match this
 * pattern?" visiting only the subtrees the pattern can reach; `idleSince` answers "which names have
 * been idle too long?" without looking at the active ones.
 */
/**
 * The indices of `keys` in the order of their keys (UTF-16 code units, as `<` compares strings),
 * equal keys by index. The keys are sorted by `sort` without a comparator, which compares strings
 * natively; sorting indices with a comparator called back into JavaScript for every comparison,
 * several times slower over the names a broker restores. A map then gives each key its indices.
 */
function sortedOrder(keys: readonly string[]): number[] {
  const indices = new Map<string, number | number[]>();
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    const seen = indices.get(key);
    if (seen === undefined) indices.set(key, i);
    else if (typeof seen === 'number') indices.set(key, [seen, i]);
    else seen.push(i);
  }
  const order: number[] = [];
  for (const key of [...indices.keys()].sort()) {
    const at = indices.get(key) as number | number[];
    if (typeof at === 'number') order.push(at);
    else order.push(...at);
  }
  return order;
}

export class TopicTrie {
  readonly dialect: DialectName;
  readonly engine: EngineName;
  /** Longest accepted lite name, in UTF-8 bytes. */
  readonly maxNameBytes: number;
  private readonly core: TopicTrieCore;
  private readonly engineImpl: Engine;
  /** Reused by `expandIds` without `out`; grows when an answer does not fit. */
  private scratch = new Uint32Array(64);

  /** Throws `InvalidArgumentError` for an unknown dialect or engine, or a bad `maxNameBytes`. */
  constructor(options?: TopicTrieOptions) {
    const { engine, dialect } = resolve(options);
    const maxNameBytes = requireNameLimit(options?.maxNameBytes, 'maxNameBytes');
    this.dialect = dialect;
    this.engine = engine.name;
    this.maxNameBytes = maxNameBytes;
    this.engineImpl = engine;
    this.core = engine.createTopicTrie(dialect, maxNameBytes);
  }

  /**
   * Adds `name` and returns its id. A new name's last activity is `timestampMs`, or 0 when omitted
   * (so a name never touched is idle for any cutoff above 0); for a name already there, a given
   * timestamp counts as `touch`. Throws `InvalidLiteTopicError` (lite) or `InvalidTopicError` (MQTT,
   * NATS) for an invalid name, and then adds nothing.
   */
  add(name: string, timestampMs?: number): number {
    requireString(name, 'name');
    if (timestampMs !== undefined) requireTimestamp(timestampMs, 'timestampMs');
    const id = this.core.add(name, timestampMs);
    if (id >= 0) return id;
    if (id === -1) {
      const violation = this.engineImpl.validateLiteTopic(name, this.maxNameBytes);
      if (violation !== null) {
        const { message, reason, position, limit, actual } = violation;
        const details = { value: name, reason, position, limit, actual };
        throw new InvalidLiteTopicError(message, details);
      }
    }
    throw new InvalidTopicError(`${JSON.stringify(name)} is not a valid ${this.dialect} topic name`, {
      value: name,
      dialect: this.dialect,
    });
  }

  /**
   * Adds many names at once, as when restoring them, and returns their ids in the order given (the
   * same id twice for a name given twice). `timestampsMs[i]`, when given, is the last activity of
   * `names[i]` as in `add`. By default (`order: 'segments'`) the names are added in segment order
   * (the order `list` pages in), so the nodes of each subtree are placed next to each other: later
   * walks of the trie read them from consecutive memory. `order: 'given'` adds them in the order
   * given, as that many `add` calls would, in one engine call and without sorting: what a batch of a
   * few new names (a send) wants. Both engines give the same ids for the same history. Throws like
   * `add` at the first invalid name in that order; the names added before it stay.
   */
  addMany(
    names: readonly string[],
    timestampsMs?: readonly number[],
    options?: { order?: 'segments' | 'given' },
  ): Uint32Array {
    if (!Array.isArray(names)) throw new InvalidArgumentError('names must be an array of strings', { value: names });
    if (timestampsMs !== undefined && (!Array.isArray(timestampsMs) || timestampsMs.length !== names.length)) {
      throw new InvalidArgumentError('timestampsMs must be an array as long as names', { value: timestampsMs });
    }
    const order = options?.order ?? 'segments';
    if (order !== 'segments' && order !== 'given') {
      throw new InvalidArgumentError('order must be "segments" or "given"', { value: order });
    }
    for (const name of names) requireString(name, 'name');
    for (const timestamp of timestampsMs ?? []) requireTimestamp(timestamp, 'timestampsMs');
    if (order === 'given') return this.addInOrder(names, timestampsMs, undefined);
    // Segment order is the order of the names with each separator replaced by NUL, which no valid
    // name holds and which sorts before every other character (lite splits left to right, as
    // `replaceAll` does).
    const separator = DIALECT_SEPARATORS[this.dialect];
    return this.addInOrder(names, timestampsMs, sortedOrder(names.map((name) => name.replaceAll(separator, '\0'))));
  }

  /**
   * Adds `names[order[0]]`, `names[order[1]]`, ... (or the names as given, without `order`) in one
   * engine call; returns their ids by the names' places (see `addMany`).
   */
  private addInOrder(
    names: readonly string[],
    timestampsMs: readonly number[] | undefined,
    order: readonly number[] | undefined,
  ): Uint32Array {
    const ids = new Uint32Array(names.length);
    if (names.length === 0) return ids;
    const place = (i: number): number => (order === undefined ? i : (order[i] as number));
    const ordered = order === undefined ? names : order.map((at) => names[at] as string);
    const timestamps = new Float64Array(names.length).fill(-1);
    if (timestampsMs !== undefined)
      for (let i = 0; i < names.length; i++) timestamps[i] = timestampsMs[place(i)] as number;
    const added = new Float64Array(names.length);
    const failed = this.core.addAll(ordered, timestamps, added);
    const done = failed < 0 ? names.length : failed;
    for (let i = 0; i < done; i++) ids[place(i)] = added[i] as number;
    // The first invalid name in that order: `add` throws its typed error.
    if (failed >= 0) this.add(ordered[failed] as string, timestampsMs?.[place(failed)]);
    return ids;
  }

  /** Removes `name`; false if it was not there. Its nodes, segments and id are freed. */
  remove(name: string): boolean {
    return this.core.remove(requireString(name, 'name'));
  }

  has(name: string): boolean {
    return typeof name === 'string' && this.core.idOf(name) >= 0;
  }

  /** The id of a stored name, else undefined. */
  idOf(name: string): number | undefined {
    if (typeof name !== 'string') return undefined;
    const id = this.core.idOf(name);
    return id >= 0 ? id : undefined;
  }

  /** The name with this id, else undefined. */
  nameOf(id: number): string | undefined {
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > MAX_ID) return undefined;
    return this.core.nameOf(id);
  }

  /** Number of names. */
  get size(): number {
    return this.core.size;
  }

  private checkedPattern(pattern: string): string {
    requireString(pattern, 'pattern');
    return pattern;
  }

  private invalid(pattern: string): InvalidPatternError {
    return invalidPattern(this.engineImpl, pattern, this.dialect) as InvalidPatternError;
  }

  /**
   * Every stored name `pattern` matches. Order: depth-first trie order, the same in both engines for
   * the same history of calls, otherwise unspecified. Throws `InvalidPatternError`.
   */
  expand(pattern: string): string[] {
    const names = this.core.expand(this.checkedPattern(pattern));
    if (names === null) throw this.invalid(pattern);
    return names;
  }

  /**
   * The ids of the names `expand` returns, in the same order. With `out`: fills it as far as it
   * has room and returns the full count (grow it and ask again when the count is larger).
   */
  expandIds(pattern: string): Uint32Array;
  expandIds(pattern: string, out: Uint32Array): number;
  expandIds(pattern: string, out?: Uint32Array): Uint32Array | number {
    this.checkedPattern(pattern);
    if (out !== undefined && !(out instanceof Uint32Array)) {
      throw new InvalidArgumentError('out must be a Uint32Array', { value: out });
    }
    let count = this.core.expandInto(pattern, out ?? this.scratch);
    if (count < 0) throw this.invalid(pattern);
    if (out !== undefined) return count;
    if (count > this.scratch.length) {
      this.scratch = new Uint32Array(2 ** Math.ceil(Math.log2(count)));
      count = this.core.expandInto(pattern, this.scratch);
    }
    return this.scratch.slice(0, count);
  }

  /** How many stored names `pattern` matches, without listing them. Throws `InvalidPatternError`. */
  count(pattern: string): number {
    const count = this.core.count(this.checkedPattern(pattern));
    if (count < 0) throw this.invalid(pattern);
    return count;
  }

  /**
   * One page of names in list order (docs/TRIE.md: segment by segment, UTF-16 order, a name before
   * its extensions). `prefix` is whole segments (`tenant1`, `tenant1__agent7`; the prefix itself is
   * listed when it is a name); `limit` at least 1, default all; `after` is a previous page's `next`.
   */
  list(prefix?: string, limit?: number, after?: string): TopicListPage {
    const from = prefix === undefined ? '' : requireWellFormed(prefix, 'prefix');
    const max = requireLimit(limit, 1);
    const cursor = after === undefined ? undefined : requireWellFormed(after, 'after');
    const page = this.core.list(from, max, cursor);
    const last = page.names[page.names.length - 1];
    return page.more && last !== undefined ? { names: page.names, next: last } : { names: page.names };
  }

  /**
   * Records activity of `name` at `timestampMs` (integer ms from 0): its last activity becomes the
   * later of the two. False if the name is not stored.
   */
  touch(name: string, timestampMs: number): boolean {
    requireString(name, 'name');
    return this.core.touch(name, requireTimestamp(timestampMs, 'timestampMs'));
  }

  /**
   * Names whose last activity is before `cutoffMs`, oldest first (equal timestamps by id), at most
   * `limit` (default all). Costs the answer, not the number of names.
   */
  idleSince(cutoffMs: number, limit?: number): string[] {
    return this.core.idleSince(requireTimestamp(cutoffMs, 'cutoffMs'), requireLimit(limit, 0));
  }

  /** Removes every name and frees the memory. */
  clear(): void {
    this.core.clear();
  }

  /** Names, trie nodes, distinct segments and the engine's estimate of the bytes it holds. */
  stats(): ReturnType<TopicTrieCore['stats']> {
    return this.core.stats();
  }
}
