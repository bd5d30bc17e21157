/**
 * The reverse pattern index, mirroring `native/core/src/pattern/pattern_index.rs`. Patterns without
 * wildcards match only the topic equal to them, so they live in one map keyed by their text: a topic
 * finds them with one lookup of itself. Patterns with wildcards form a trie (a node per pattern
 * prefix, its segment text interned), literal edges in a per-node map keyed by a hash of the
 * segment text and created only for nodes that have literal children, one `one`-wildcard child per
 * node, and at each node the ids whose pattern ends there (`exact`) or continues with the trailing
 * wildcard (`rest`). A lookup walks only the branches the topic's segments can take and hashes a
 * segment, in place, only when a node it reached has literal children; nodes, segments and map
 * entries are freed on removal. Where the native engine looks a segment up in its interner first,
 * this one hashes the characters: slicing a segment out and hashing the new string cost more than
 * the rest of a lookup.
 */

import { type DialectRules, isValidTopic, validatePattern } from '../../../common/dialect.js';
import type { PatternIndexCore, PatternIndexStats } from '../../contract.js';
import { Interner } from '../interner.js';
import { tokenize } from './pattern.js';

const NONE = -1;
const ROOT = 0;
/** A topic segment whose id the lookup has not needed yet. */
const UNRESOLVED = -1;

/**
 * The ids on one node: a lone id inline (most exact subscriptions have one subscriber, and an array
 * per leaf would cost about a hundred bytes), or an ascending array of two or more.
 */
type Ids = number | number[];

function lowerBound(ids: readonly number[], id: number): number {
  let low = 0;
  let high = ids.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((ids[mid] as number) < id) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** `ids` with `id` added, or null when it was already there. */
function withId(ids: Ids | undefined, id: number): Ids | null {
  if (ids === undefined) return id;
  if (typeof ids === 'number') {
    if (ids === id) return null;
    return ids < id ? [ids, id] : [id, ids];
  }
  const at = lowerBound(ids, id);
  if (ids[at] === id) return null;
  ids.splice(at, 0, id);
  return ids;
}

/** `ids` without `id` (undefined when none is left), or null when it was not there. */
function withoutId(ids: Ids | undefined, id: number): Ids | undefined | null {
  if (ids === undefined) return null;
  if (typeof ids === 'number') return ids === id ? undefined : null;
  const at = lowerBound(ids, id);
  if (ids[at] !== id) return null;
  ids.splice(at, 1);
  return ids.length === 1 ? (ids[0] as number) : ids;
}

/**
 * FNV-1a over the UTF-16 code units of `text` from `start` to `end`, cut to 30 bits so that V8 keeps
 * it as a small integer. A lookup hashes a topic segment in place this way rather than slicing it
 * out and interning it: no string is made and no string hash computed per segment.
 */
export function segmentHash(text: string, start: number, end: number): number {
  let hash = 0x811c9dc5;
  for (let i = start; i < end; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash & 0x3fffffff;
}

function idCount(ids: Ids): number {
  return typeof ids === 'number' ? 1 : ids.length;
}

export class JsPatternIndex implements PatternIndexCore {
  /** Ids of the patterns without wildcards, by pattern text. */
  private literals = new Map<string, Ids>();
  // Nodes as parallel arrays (struct of arrays): far less memory than an object per node.
  private parent: number[] = [NONE];
  private segment: number[] = [NONE];
  private oneChild: number[] = [NONE];
  /** Literal children by `segmentHash` of their segment: the first of those with that hash. */
  private children: (Map<number, number> | undefined)[] = [undefined];
  /** The next child of the same parent whose segment has the same hash, or `NONE`. */
  private sameHash: number[] = [NONE];
  private exact: (Ids | undefined)[] = [undefined];
  private rest: (Ids | undefined)[] = [undefined];
  private freeNodes: number[] = [];
  private segments = new Interner();
  private entries = 0;
  /** Largest id added since creation or `clear()` (decides the dedup strategy). */
  private maxId = 0;
  // Scratch reused by every lookup.
  // Lengths are kept in counters: setting an array's length is a call into the runtime.
  /** Per topic segment: its start, its end, and its hash (`UNRESOLVED` until a node needs it). */
  private readonly topicSegments: number[] = [];
  private readonly stack: number[] = [];
  private readonly lists: Ids[] = [];
  private listCount = 0;
  private found = new Uint32Array(64);
  private stamps = new Uint32Array(0);
  private generation = 0;

  constructor(private readonly dialect: DialectRules) {}

  get size(): number {
    return this.entries;
  }

  /** Whether a valid pattern has no wildcard, so it matches only the topic equal to it. */
  private isLiteral(pattern: string): boolean {
    for (const segment of pattern.split(this.dialect.separator)) {
      if (segment === this.dialect.one || segment === this.dialect.rest) return false;
    }
    return true;
  }

  add(pattern: string, id: number): 1 | 0 | -1 {
    if (validatePattern(this.dialect, pattern) !== null) return -1;
    if (this.isLiteral(pattern)) {
      const ids = withId(this.literals.get(pattern), id);
      if (ids === null) return 0;
      this.literals.set(pattern, ids);
      this.entries++;
      if (id > this.maxId) this.maxId = id;
      return 1;
    }
    const { node, rest } = this.locate(pattern, true);
    const lists = rest ? this.rest : this.exact;
    const ids = withId(lists[node], id);
    if (ids === null) return 0;
    lists[node] = ids;
    this.entries++;
    if (id > this.maxId) this.maxId = id;
    return 1;
  }

  remove(pattern: string, id: number): boolean {
    if (validatePattern(this.dialect, pattern) !== null) return false;
    if (this.isLiteral(pattern)) return this.removeLiteral(pattern, id);
    const { node, rest } = this.locate(pattern, false);
    if (node === NONE) return false;
    const lists = rest ? this.rest : this.exact;
    const ids = withoutId(lists[node], id);
    if (ids === null) return false;
    lists[node] = ids;
    this.entries--;
    this.prune(node);
    return true;
  }

  private removeLiteral(pattern: string, id: number): boolean {
    const ids = withoutId(this.literals.get(pattern), id);
    if (ids === null) return false;
    if (ids === undefined) this.literals.delete(pattern);
    else this.literals.set(pattern, ids);
    this.entries--;
    // Nothing left: drop the arrays too, so an emptied index is as small as a new one.
    if (this.entries === 0) this.clear();
    return true;
  }

  /**
   * Follows a valid pattern's tokens from the root to the node its ids hang on, creating missing
   * nodes when `insert` is set and otherwise stopping at `NONE`. `rest` says whether the pattern
   * ends with the trailing wildcard (whose ids live on the node before it).
   */
  private locate(pattern: string, insert: boolean): { node: number; rest: boolean } {
    let node = ROOT;
    for (const token of tokenize(pattern, this.dialect)) {
      if (token.kind === 'rest') return { node, rest: true };
      if (insert) {
        node = token.kind === 'one' ? this.oneChildOrInsert(node) : this.literalChildOrInsert(node, token.text);
        continue;
      }
      if (token.kind === 'one') node = this.oneChild[node] as number;
      else {
        const text = token.text;
        node = this.literalChild(node, segmentHash(text, 0, text.length), text, 0, text.length);
      }
      if (node === NONE) break;
    }
    return { node, rest: false };
  }

  clear(): void {
    this.literals = new Map();
    this.parent = [NONE];
    this.segment = [NONE];
    this.oneChild = [NONE];
    this.children = [undefined];
    this.sameHash = [NONE];
    this.exact = [undefined];
    this.rest = [undefined];
    this.freeNodes = [];
    this.segments = new Interner();
    this.entries = 0;
    this.maxId = 0;
    this.found = new Uint32Array(64);
    this.stamps = new Uint32Array(0);
    // Slots past `listCount` would otherwise keep the old id arrays reachable.
    this.lists.length = 0;
    this.listCount = 0;
  }

  /**
   * Fills `this.lists` with the ids of the literal pattern equal to the topic and of every trie
   * node the topic reaches, walking only the branches the topic's segments can take. A topic equal to
   * a literal pattern is valid (a valid pattern without wildcards is a valid topic); any other is
   * checked only when it reached some list, since for most topics the check would cost as much as
   * the rest of the lookup.
   */
  private collectLists(topic: string): void {
    this.listCount = 0;
    if (this.entries === 0 || typeof topic !== 'string') return;
    if (!this.isUnused(ROOT)) this.walk(topic);
    const literal = this.literals.get(topic);
    if (literal !== undefined) this.lists[this.listCount++] = literal;
    else if (this.listCount > 0 && !isValidTopic(this.dialect, topic)) this.listCount = 0;
  }

  private walk(topic: string): void {
    const lists = this.lists;
    const segments = this.topicSegments;
    const separator = this.dialect.separator;
    let slots = 0;
    let start = 0;
    for (;;) {
      const end = topic.indexOf(separator, start);
      segments[slots] = start;
      segments[slots + 1] = end === -1 ? topic.length : end;
      segments[slots + 2] = UNRESOLVED;
      slots += 3;
      if (end === -1) break;
      start = end + separator.length;
    }
    const total = slots / 3;
    const restMin = this.dialect.restMinSegments;
    // MQTT: a topic starting with `$` is not matched by a leading wildcard.
    const dollar = this.dialect.name === 'mqtt' && topic.charCodeAt(0) === 36;
    // No reset needed: every walk pops the stack empty.
    const stack = this.stack;
    stack.push(ROOT, 0);
    while (stack.length > 0) {
      const depth = stack.pop() as number;
      const node = stack.pop() as number;
      const rootOfDollar = dollar && depth === 0;
      const restIds = this.rest[node];
      if (restIds !== undefined && !rootOfDollar && total - depth >= restMin) lists[this.listCount++] = restIds;
      if (depth === total) {
        const exactIds = this.exact[node];
        if (exactIds !== undefined) lists[this.listCount++] = exactIds;
        continue;
      }
      const one = this.oneChild[node] as number;
      if (one !== NONE && !rootOfDollar) stack.push(one, depth + 1);
      if (this.children[node] === undefined) continue;
      const slot = depth * 3;
      const segmentStart = segments[slot] as number;
      const segmentEnd = segments[slot + 1] as number;
      let hash = segments[slot + 2] as number;
      if (hash === UNRESOLVED) {
        hash = segmentHash(topic, segmentStart, segmentEnd);
        segments[slot + 2] = hash;
      }
      const child = this.literalChild(node, hash, topic, segmentStart, segmentEnd);
      if (child !== NONE) stack.push(child, depth + 1);
    }
  }

  /** The child of `node` on the segment `text[start, end)` (whose `segmentHash` is `hash`), or `NONE`. */
  private literalChild(node: number, hash: number, text: string, start: number, end: number): number {
    let child = this.children[node]?.get(hash) ?? NONE;
    while (child !== NONE) {
      const segment = this.segments.text(this.segment[child] as number);
      if (segment.length === end - start && text.startsWith(segment, start)) return child;
      child = this.sameHash[child] as number;
    }
    return NONE;
  }

  /**
   * Whether ids are small enough, relative to the number of entries, for a stamp per possible id
   * (at most 32 bytes per entry plus 16 KiB). Then duplicates are removed in linear time.
   */
  private idsAreDense(): boolean {
    return this.maxId < 8 * this.entries + 4096;
  }

  /** Counts the distinct ids of `this.lists` by stamping, appending them to `found` when asked. */
  private distinctByStamp(collect: boolean): number {
    if (this.stamps.length <= this.maxId) {
      const grown = new Uint32Array(Math.max(this.maxId + 1, this.stamps.length * 2));
      grown.set(this.stamps);
      this.stamps = grown;
    }
    this.generation = (this.generation + 1) >>> 0;
    if (this.generation === 0) {
      // Wrapped around: old stamps could collide with the new generation.
      this.stamps.fill(0);
      this.generation = 1;
    }
    const stamps = this.stamps;
    const generation = this.generation;
    let count = 0;
    for (let list = 0; list < this.listCount; list++) {
      const ids = this.lists[list] as Ids;
      if (typeof ids === 'number') {
        if (stamps[ids] !== generation) {
          stamps[ids] = generation;
          if (collect) this.pushFound(count, ids);
          count++;
        }
        continue;
      }
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i] as number;
        if (stamps[id] !== generation) {
          stamps[id] = generation;
          if (collect) this.pushFound(count, id);
          count++;
        }
      }
    }
    return count;
  }

  /** Copies `ids` into `found` from slot `at`; returns the slot after the last one written. */
  private appendFound(ids: Ids, at: number): number {
    if (typeof ids === 'number') {
      this.pushFound(at, ids);
      return at + 1;
    }
    for (let i = 0; i < ids.length; i++) this.pushFound(at + i, ids[i] as number);
    return at + ids.length;
  }

  private pushFound(at: number, id: number): void {
    if (at === this.found.length) {
      const grown = new Uint32Array(this.found.length * 2);
      grown.set(this.found);
      this.found = grown;
    }
    this.found[at] = id;
  }

  /** Collects the matching ids, ascending and distinct, into `this.found`; returns the count. */
  private collect(topic: string): number {
    this.collectLists(topic);
    const lists = this.lists;
    if (this.listCount === 0) return 0;
    // One list is already ascending and distinct.
    if (this.listCount === 1) return this.appendFound(lists[0] as Ids, 0);
    if (this.idsAreDense()) {
      const count = this.distinctByStamp(true);
      this.found.subarray(0, count).sort();
      return count;
    }
    let count = 0;
    for (let list = 0; list < this.listCount; list++) count = this.appendFound(lists[list] as Ids, count);
    const found = this.found.subarray(0, count).sort();
    let kept = 1;
    for (let i = 1; i < count; i++) {
      if (found[i] !== found[kept - 1]) found[kept++] = found[i] as number;
    }
    return kept;
  }

  /** The ids matching `topic`, ascending and distinct, as a new array. */
  match(topic: string): number[] {
    const count = this.collect(topic);
    return Array.from(this.found.subarray(0, count));
  }

  matchInto(topic: string, out: Uint32Array): number {
    const count = this.collect(topic);
    out.set(this.found.subarray(0, Math.min(count, out.length)));
    return count;
  }

  /** Counts the distinct ids matching `topic` without ordering them. */
  private count(topic: string): number {
    this.collectLists(topic);
    if (this.listCount === 0) return 0;
    if (this.listCount === 1) return idCount(this.lists[0] as Ids);
    return this.idsAreDense() ? this.distinctByStamp(false) : this.collect(topic);
  }

  matchCounts(topics: readonly string[], out: Uint32Array): number {
    let total = 0;
    for (let i = 0; i < topics.length; i++) {
      const count = this.count(topics[i] as string);
      out[i] = count;
      total += count;
    }
    return total;
  }

  stats(): PatternIndexStats {
    let idSlots = 0;
    let maps = 0;
    for (let node = 0; node < this.parent.length; node++) {
      const exact = this.exact[node];
      const rest = this.rest[node];
      idSlots += (exact === undefined ? 0 : idCount(exact)) + (rest === undefined ? 0 : idCount(rest));
      maps += this.children[node]?.size ?? 0;
    }
    let literalChars = 0;
    for (const [pattern, ids] of this.literals) {
      literalChars += pattern.length;
      idSlots += idCount(ids);
    }
    maps += this.literals.size;
    return {
      entries: this.entries,
      nodes: this.parent.length - this.freeNodes.length,
      segments: this.segments.size,
      // Six array slots of 8 bytes per node, 8 per id, about 40 per map entry, literal pattern
      // text as UTF-16.
      approximateBytes:
        this.parent.length * 48 +
        idSlots * 8 +
        maps * 40 +
        literalChars * 2 +
        this.stamps.byteLength +
        this.segments.approximateBytes(),
    };
  }

  private allocateNode(parent: number, segment: number): number {
    const node = this.freeNodes.pop() ?? this.parent.length;
    this.parent[node] = parent;
    this.segment[node] = segment;
    this.oneChild[node] = NONE;
    this.children[node] = undefined;
    this.sameHash[node] = NONE;
    this.exact[node] = undefined;
    this.rest[node] = undefined;
    return node;
  }

  private literalChildOrInsert(node: number, text: string): number {
    const hash = segmentHash(text, 0, text.length);
    const known = this.literalChild(node, hash, text, 0, text.length);
    if (known !== NONE) return known;
    const child = this.allocateNode(node, this.segments.acquire(text));
    let map = this.children[node];
    if (map === undefined) {
      map = new Map();
      this.children[node] = map;
    }
    this.sameHash[child] = map.get(hash) ?? NONE;
    map.set(hash, child);
    return child;
  }

  /** Takes `child` out of its parent's literal children. */
  private unlinkLiteralChild(parent: number, child: number): void {
    const map = this.children[parent] as Map<number, number>;
    const text = this.segments.text(this.segment[child] as number);
    const hash = segmentHash(text, 0, text.length);
    const next = this.sameHash[child] as number;
    let before = map.get(hash) as number;
    if (before === child) {
      if (next === NONE) map.delete(hash);
      else map.set(hash, next);
    } else {
      while (this.sameHash[before] !== child) before = this.sameHash[before] as number;
      this.sameHash[before] = next;
    }
    if (map.size === 0) this.children[parent] = undefined;
  }

  private oneChildOrInsert(node: number): number {
    const known = this.oneChild[node] as number;
    if (known !== NONE) return known;
    const child = this.allocateNode(node, NONE);
    this.oneChild[node] = child;
    return child;
  }

  private isUnused(node: number): boolean {
    return (
      this.oneChild[node] === NONE &&
      this.children[node] === undefined &&
      this.exact[node] === undefined &&
      this.rest[node] === undefined
    );
  }

  /** Frees `node` and its ancestors while they hold nothing. */
  private prune(start: number): void {
    let node = start;
    while (node !== ROOT && this.isUnused(node)) {
      const parent = this.parent[node] as number;
      const segment = this.segment[node] as number;
      if (segment === NONE) this.oneChild[parent] = NONE;
      else {
        this.unlinkLiteralChild(parent, node);
        this.segments.release(segment);
      }
      this.parent[node] = NONE;
      this.freeNodes.push(node);
      node = parent;
    }
    // Nothing left: drop the arrays too, so an emptied index is as small as a new one.
    if (this.entries === 0) this.clear();
  }
}
