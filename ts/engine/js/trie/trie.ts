/**
 * The topic-name trie, mirroring `native/core/src/trie/`: one node per name prefix over interned
 * segment ids; a name's terminal node holds its name id (`idOf` walks down). Nodes are parallel typed
 * arrays (parent, segment, names in the subtree, name id, and the child list as first child, next and
 * previous sibling links, in order of creation as in Rust); a node with more than eight children
 * also has a Map from segment to child. Name ids are allocated and freed exactly as in Rust, so both
 * engines hand out the same ids for the same history. Unlike Rust, the js engine keeps each name's text at its
 * terminal node (the string `add` was given) and in the idle set: `expand` and `idleSince` read the
 * texts where the walk already is instead of looking each up by id, at the cost of holding the
 * strings. As in Rust, a trailing wildcard copies a kept list of the subtree's names (snapshot.ts), and
 * walks through many scattered nodes eventually lay the nodes out again in depth-first order
 * (compact.ts). Walks live in walk.ts and list.ts.
 */

import { DIALECTS, type DialectRules, isValidTopic, validateLiteTopic } from '../../../common/dialect.js';
import type { DialectName, TopicTrieCore, TopicTrieStats } from '../../contract.js';
import { Interner } from '../interner.js';
import { beforeFreeingNode } from './compact.js';
import { CHANGED, type Edits, forgetEdits, type KeyMap, markChanged } from './edits.js';
import { IdleSet } from './idle.js';
import { listNames } from './list.js';
import { linkLast, unlink } from './nodes.js';
import { noteAdded, noteRemoved } from './pending.js';
import type { KeptList } from './snapshot.js';
import { childBySegment, countMatches, expandIdsInto, expandNames, NONE, ROOT, SCANNED_CHILDREN } from './walk.js';

/** Nodes a new trie has room for before its arrays grow. */
const INITIAL_NODES = 64;
/** Slots the kept lists' array starts with and grows by at least (it doubles). */
const KEPT_LISTS_STEP = 16;
/**
 * Ids arrays of freed lists kept for reuse (`takeIds`), as in Rust: a walk lays down at most a few
 * lists (one per top it takes whole), so a few spares cover the next walk's.
 */
const SPARE_ID_ARRAYS = 4;

export class JsTopicTrie implements TopicTrieCore {
  // Internal to the js engine (read by trie-walk.ts and trie-list.ts); nothing outside changes them.
  parent = new Int32Array(INITIAL_NODES);
  segment = new Int32Array(INITIAL_NODES);
  /** Names in each node's subtree, the node included. */
  names = new Int32Array(INITIAL_NODES);
  /** The id of the name ending at each node, `NONE` for a prefix that is not itself a name. */
  nodeName = new Int32Array(INITIAL_NODES);
  firstChild = new Int32Array(INITIAL_NODES);
  nextSibling = new Int32Array(INITIAL_NODES);
  /** For a first child: the last child of its parent (appends are O(1), as in Rust). */
  prevSibling = new Int32Array(INITIAL_NODES);
  /**
   * Kept-list flags (edits.ts): `CHANGED` for a node whose subtree had a node placed or freed, or a
   * name added or removed, since its block was last laid down in a kept list (and for every ancestor
   * of such a node, and every node never laid down); `IN_PARENT` for a node whose block lies in its
   * parent's as last laid down; `LISTED` for one with an entry in its parent's record.
   */
  changed = new Uint8Array(INITIAL_NODES);
  /** A node's key in its parent's key map: where its block starts within its parent's (edits.ts). */
  key = new Int32Array(INITIAL_NODES);
  /** Per changed node that was laid down: its old block and the children to take apart (edits.ts). */
  edits = new Map<number, Edits>();
  /** Per node laid down from its record: where its children's blocks start, by key (edits.ts). */
  keyMaps = new Map<number, KeyMap>();
  /** The kept list a node holds (an index into `keptLists`), `NONE` for most nodes. */
  kept = new Int32Array(INITIAL_NODES);
  /** Kept lists by index; freed slots are `undefined` and listed in `freeKeptLists`. */
  keptLists: (KeptList | undefined)[] = [];
  private freeKeptLists: number[] = [];
  /** Ids arrays of lists freed lately, for the next lay-downs to fill (`takeIds`). */
  private spareIds: Int32Array[] = [];
  /**
   * Per node with more than `SCANNED_CHILDREN` children: segment id → child. A node with fewer is
   * searched along its child list, as every lookup reads the first children first anyway.
   */
  children: (Map<number, number> | undefined)[] = [];
  /** Per node: the text of the name ending there, `undefined` for a prefix that is not a name. */
  nodeText: (string | undefined)[] = [undefined];
  /** Per name id: its terminal node (`NONE` for a free id) and last activity. */
  nameNodes: number[] = [];
  private lastActive: number[] = [];
  private freeNames: number[] = [];
  segments = new Interner();
  nameCount = 0;
  /** MQTT: names whose first level starts with `$`, which a leading wildcard does not reach. */
  dollarNames = 0;
  readonly dialect: DialectRules;
  nodeCount = 1;
  /**
   * Freed node positions; `staleFreeNodes` of the entries are positions a compaction pass has
   * filled since, or repeats (compact.ts).
   */
  freeNodes: number[] = [];
  staleFreeNodes = 0;
  /** The compaction pass under way (compact.ts): the node laid out last (`NONE`: no pass), and the position the next goes to. */
  compactionLast = NONE;
  compactionNext = 0;
  /** Nodes placed (new or in a freed position) since the last compaction: out of walk order. */
  placedSinceCompaction = 0;
  /** Nodes pattern walks visited on their way down since the last compaction (compact.ts). */
  walkedSinceCompaction = 0;
  private idle = new IdleSet();

  constructor(
    dialectName: DialectName,
    private readonly maxNameBytes: number,
  ) {
    this.dialect = DIALECTS[dialectName];
    this.reset();
  }

  private reset(): void {
    this.parent = new Int32Array(INITIAL_NODES);
    this.segment = new Int32Array(INITIAL_NODES);
    this.names = new Int32Array(INITIAL_NODES);
    this.nodeName = new Int32Array(INITIAL_NODES);
    this.firstChild = new Int32Array(INITIAL_NODES);
    this.nextSibling = new Int32Array(INITIAL_NODES);
    this.prevSibling = new Int32Array(INITIAL_NODES);
    this.changed = new Uint8Array(INITIAL_NODES);
    this.key = new Int32Array(INITIAL_NODES);
    this.edits = new Map();
    this.keyMaps = new Map();
    this.kept = new Int32Array(INITIAL_NODES);
    this.keptLists = [];
    this.freeKeptLists = [];
    this.spareIds = [];
    this.children = [];
    this.nodeText = [undefined];
    this.nameNodes = [];
    this.lastActive = [];
    this.freeNames = [];
    this.segments = new Interner();
    this.nameCount = 0;
    this.dollarNames = 0;
    this.nodeCount = 1;
    this.freeNodes = [];
    this.staleFreeNodes = 0;
    this.compactionLast = NONE;
    this.compactionNext = 0;
    this.placedSinceCompaction = 0;
    this.idle = new IdleSet();
    this.parent[ROOT] = NONE;
    this.segment[ROOT] = NONE;
    this.nodeName[ROOT] = NONE;
    this.firstChild[ROOT] = NONE;
    this.kept[ROOT] = NONE;
    this.changed[ROOT] = CHANGED;
    this.walkedSinceCompaction = 0;
  }

  get size(): number {
    return this.nameCount;
  }

  isName(node: number): boolean {
    return (this.nodeName[node] as number) !== NONE;
  }

  /** Nodes in use, the root included. */
  liveNodes(): number {
    return this.nodeCount - (this.freeNodes.length - this.staleFreeNodes);
  }

  isFreeNode(node: number): boolean {
    return node !== ROOT && node < this.nodeCount && this.parent[node] === NONE;
  }

  /** A position for a new node: a freed one (skipping those a compaction pass filled since), else a new one. */
  private takeFreeNode(): number {
    for (let free = this.freeNodes.pop(); free !== undefined; free = this.freeNodes.pop()) {
      if (this.isFreeNode(free)) return free;
      this.staleFreeNodes--;
    }
    const node = this.nodeCount++;
    if (node >= this.parent.length) this.grow();
    return node;
  }

  /** A position past the others for a compaction's swap, given back by `dropSpareNode`. */
  spareNode(): number {
    const node = this.nodeCount++;
    if (node >= this.parent.length) this.grow();
    this.parent[node] = NONE;
    return node;
  }

  dropSpareNode(): void {
    this.nodeCount--;
  }

  /** Follows a compaction's move of the node where name `id` ends. */
  nameMoved(id: number, node: number): void {
    this.nameNodes[id] = node;
  }

  /** Ends a compaction pass: drops the freed positions past the last live node and the stale free entries. */
  dropTrailingFreeNodes(): void {
    while (this.nodeCount > 1 && this.parent[this.nodeCount - 1] === NONE) this.nodeCount--;
    const free = this.freeNodes.filter((node) => this.isFreeNode(node)).sort((a, b) => a - b);
    this.freeNodes = free.filter((node, at) => at === 0 || free[at - 1] !== node);
    this.staleFreeNodes = 0;
  }

  /**
   * Stores a new kept list and returns its index. The array grows in a step of its own, so that
   * storing a list is always a store within it into a free slot: the lay-down that calls this is
   * long optimized when the first list past the end comes, and a store past the end (or a read
   * made only then) would meet it without type feedback and throw it back to the interpreter for
   * the next several expands.
   */
  keepList(list: KeptList): number {
    if (this.freeKeptLists.length === 0) this.growKeptLists();
    const index = this.freeKeptLists.pop() as number;
    this.keptLists[index] = list;
    return index;
  }

  private growKeptLists(): void {
    const { keptLists, freeKeptLists } = this;
    const from = keptLists.length;
    const to = Math.max(KEPT_LISTS_STEP, from * 2);
    for (let index = from; index < to; index++) keptLists.push(undefined);
    // Lowest index on top: lists take the indices in order.
    for (let index = to - 1; index >= from; index--) freeKeptLists.push(index);
  }

  freeKeptList(index: number): void {
    const list = this.keptLists[index];
    this.keptLists[index] = undefined;
    this.freeKeptLists.push(index);
    if (list !== undefined) this.keepSpareIds(list.ids);
  }

  /** Keeps the ids array of a freed list (its whole buffer) for a later lay-down, the oldest going past `SPARE_ID_ARRAYS`. */
  private keepSpareIds(ids: Int32Array): void {
    const whole = ids.length * 4 === ids.buffer.byteLength ? ids : new Int32Array(ids.buffer);
    if (whole.length === 0) return;
    if (this.spareIds.length === SPARE_ID_ARRAYS) this.spareIds.shift();
    this.spareIds.push(whole);
  }

  /**
   * An array of `size` ids to fill: a view of the smallest spare one that fits without holding more
   * than twice that, else of a new one with an eighth more room, so that it fits the list after the
   * next few changes too. A lay-down after a change builds a list about the size of the one it
   * frees, and a new array costs its pages' first touches (a fault each for a large one) and their
   * zeroing on top of the copy.
   */
  takeIds(size: number): Int32Array {
    const spares = this.spareIds;
    let best = -1;
    for (let at = 0; at < spares.length; at++) {
      const length = (spares[at] as Int32Array).length;
      if (length >= size && length <= 2 * size && (best < 0 || length < (spares[best] as Int32Array).length)) best = at;
    }
    if (best < 0) return new Int32Array(size + (size >>> 3)).subarray(0, size);
    const spare = spares[best] as Int32Array;
    spares[best] = spares[spares.length - 1] as Int32Array;
    spares.pop();
    return spare.length === size ? spare : spare.subarray(0, size);
  }

  /** 0 when valid, else -1 (invalid lite name) or -2 (invalid MQTT or NATS topic). */
  private check(name: string): number {
    if (this.dialect.name === 'lite') return validateLiteTopic(name, this.maxNameBytes) === null ? 0 : -1;
    return isValidTopic(this.dialect, name) ? 0 : -2;
  }

  add(name: string, timestampMs: number | undefined): number {
    const problem = this.check(name);
    if (problem !== 0) return problem;
    let node = ROOT;
    for (const segment of name.split(this.dialect.separator)) node = this.childOrInsert(node, segment);
    return this.addAt(node, name, timestampMs);
  }

  /** Adds the valid `name`, whose path ends at `node`, or touches it when it is there. */
  private addAt(node: number, name: string, timestampMs: number | undefined): number {
    const existing = this.nodeName[node] as number;
    if (existing !== NONE) {
      if (timestampMs !== undefined) this.touchId(existing, timestampMs);
      return existing;
    }
    const timestamp = timestampMs ?? 0;
    // Before the name and the counts change: a node laid down records them as they were.
    markChanged(this, node);
    const id = this.allocateName(node, name, timestamp);
    noteAdded(this, node, id);
    this.idle.insert(timestamp, id, name);
    this.adjustCounts(node, 1);
    this.nameCount++;
    if (this.isDollar(name)) this.dollarNames++;
    return id;
  }

  /** The last freed name id, else a new one: Rust's order. */
  private allocateName(node: number, name: string, timestamp: number): number {
    const id = this.freeNames.pop() ?? this.nameNodes.length;
    this.nameNodes[id] = node;
    this.lastActive[id] = timestamp;
    this.nodeName[node] = id;
    this.nodeText[node] = name;
    return id;
  }

  remove(name: string): boolean {
    const id = this.idOf(name);
    if (id === NONE) return false;
    const node = this.nameNodes[id] as number;
    markChanged(this, node);
    noteRemoved(this, node, id);
    this.idle.remove(this.lastActive[id] as number, id);
    this.nodeName[node] = NONE;
    this.nodeText[node] = undefined;
    this.nameNodes[id] = NONE;
    this.freeNames.push(id);
    this.adjustCounts(node, -1);
    this.nameCount--;
    if (this.isDollar(name)) this.dollarNames--;
    this.prune(node);
    return true;
  }

  idOf(name: string): number {
    if (this.nameCount === 0) return NONE;
    let node = ROOT;
    for (const segment of name.split(this.dialect.separator)) {
      const id = this.segments.get(segment);
      const child = id === undefined ? NONE : childBySegment(this, node, id);
      if (child === NONE) return NONE;
      node = child;
    }
    return this.nodeName[node] as number;
  }

  nameOf(id: number): string | undefined {
    const node = this.nameNodes[id];
    return node === undefined || node === NONE ? undefined : this.nodeText[node];
  }

  expand(pattern: string): string[] | null {
    return expandNames(this, pattern);
  }

  expandInto(pattern: string, out: Uint32Array): number {
    return expandIdsInto(this, pattern, out);
  }

  count(pattern: string): number {
    return countMatches(this, pattern);
  }

  list(prefix: string, limit: number, after: string | undefined): { names: string[]; more: boolean } {
    const { ids, more } = listNames(this, prefix, limit, after);
    return { names: ids.map((id) => this.nameOf(id) as string), more };
  }

  touch(name: string, timestampMs: number): boolean {
    const id = this.idOf(name);
    if (id === NONE) return false;
    this.touchId(id, timestampMs);
    return true;
  }

  /** The last activity becomes the later of the two. */
  private touchId(id: number, timestampMs: number): void {
    const old = this.lastActive[id] as number;
    if (timestampMs > old) {
      this.idle.remove(old, id);
      this.idle.insert(timestampMs, id, this.nameOf(id) as string);
      this.lastActive[id] = timestampMs;
    }
  }

  idleSince(cutoffMs: number, limit: number): string[] {
    return this.idle.olderThan(cutoffMs, limit);
  }

  /**
   * `add` of each name in turn. The names come in segment order (`TopicTrie.addMany`), so a name
   * mostly shares its first segments with the one before: the nodes of the last name's path are
   * taken again for them instead of being looked up from the root. Adding places nodes and never
   * frees or moves one, so that path stays valid through the batch.
   */
  addAll(names: readonly string[], timestampsMs: Float64Array, out: Float64Array): number {
    const { separator } = this.dialect;
    let pathTexts: string[] = [];
    const pathNodes: number[] = [];
    for (let i = 0; i < names.length; i++) {
      const name = names[i] as string;
      if (this.check(name) !== 0) return i;
      const segments = name.split(separator);
      const limit = Math.min(segments.length, pathTexts.length);
      let shared = 0;
      while (shared < limit && segments[shared] === pathTexts[shared]) shared++;
      let node = shared === 0 ? ROOT : (pathNodes[shared - 1] as number);
      for (let depth = shared; depth < segments.length; depth++) {
        node = this.childOrInsert(node, segments[depth] as string);
        pathNodes[depth] = node;
      }
      pathTexts = segments;
      const timestamp = timestampsMs[i] as number;
      out[i] = this.addAt(node, name, timestamp >= 0 ? timestamp : undefined);
    }
    return -1;
  }

  clear(): void {
    this.reset();
  }

  stats(): TopicTrieStats {
    let maps = 0;
    for (const map of this.children) if (map !== undefined) maps += 64 + map.size * 24;
    let texts = 0;
    for (const text of this.nodeText) if (text !== undefined) texts += 16 + text.length;
    const approximateBytes =
      this.parent.length * 24 +
      maps +
      this.nameNodes.length * 8 * 3 +
      this.nodeText.length * 8 +
      texts +
      this.freeNodes.length * 8 +
      this.segments.approximateBytes() +
      this.idle.approximateBytes();
    return {
      names: this.nameCount,
      nodes: this.liveNodes(),
      segments: this.segments.size,
      approximateBytes,
    };
  }

  private isDollar(name: string): boolean {
    return this.dialect.name === 'mqtt' && name.charCodeAt(0) === 36; /* $ */
  }

  private adjustCounts(node: number, delta: number): void {
    for (let n = node; n !== NONE; n = this.parent[n] as number) this.names[n] = (this.names[n] as number) + delta;
  }

  private childOrInsert(parent: number, text: string): number {
    const known = this.segments.get(text);
    if (known !== undefined) {
      const child = childBySegment(this, parent, known);
      if (child !== NONE) return child;
    }
    const segment = this.segments.acquire(text);
    const child = this.takeFreeNode();
    this.placedSinceCompaction++;
    this.nodeText[child] = undefined;
    this.parent[child] = parent;
    this.segment[child] = segment;
    this.names[child] = 0;
    this.nodeName[child] = NONE;
    this.firstChild[child] = NONE;
    this.nextSibling[child] = NONE;
    this.children[child] = undefined;
    this.changed[child] = CHANGED;
    this.key[child] = 0;
    this.kept[child] = NONE;
    markChanged(this, parent);
    linkLast(this, parent, child);
    this.indexChild(parent, child, segment);
    return child;
  }

  /** Records a new child in its parent's Map, making the Map when the parent passes `SCANNED_CHILDREN`. */
  private indexChild(parent: number, child: number, segment: number): void {
    const map = this.children[parent];
    if (map !== undefined) {
      map.set(segment, child);
      return;
    }
    let count = 0;
    const { firstChild, nextSibling } = this;
    for (let c = firstChild[parent] as number; c !== NONE && count <= SCANNED_CHILDREN; c = nextSibling[c] as number) {
      count++;
    }
    if (count <= SCANNED_CHILDREN) return;
    const made = new Map<number, number>();
    for (let c = firstChild[parent] as number; c !== NONE; c = nextSibling[c] as number) {
      made.set(this.segment[c] as number, c);
    }
    this.children[parent] = made;
  }

  private grow(): void {
    const capacity = this.parent.length * 2;
    const grown = <T extends Int32Array | Float64Array>(old: T, make: (n: number) => T): T => {
      const next = make(capacity);
      next.set(old);
      return next;
    };
    this.parent = grown(this.parent, (n) => new Int32Array(n));
    this.segment = grown(this.segment, (n) => new Int32Array(n));
    this.names = grown(this.names, (n) => new Int32Array(n));
    this.nodeName = grown(this.nodeName, (n) => new Int32Array(n));
    this.firstChild = grown(this.firstChild, (n) => new Int32Array(n));
    this.nextSibling = grown(this.nextSibling, (n) => new Int32Array(n));
    this.prevSibling = grown(this.prevSibling, (n) => new Int32Array(n));
    const changed = new Uint8Array(capacity);
    changed.set(this.changed);
    this.changed = changed;
    this.key = grown(this.key, (n) => new Int32Array(n));
    this.kept = grown(this.kept, (n) => new Int32Array(n));
  }

  /** Frees `node` and its ancestors while they are neither names nor prefixes of names. */
  private prune(start: number): void {
    let node = start;
    while (node !== ROOT && this.names[node] === 0) {
      const parent = this.parent[node] as number;
      forgetEdits(this, node);
      beforeFreeingNode(this, node);
      const map = this.children[parent];
      if (map !== undefined) {
        map.delete(this.segment[node] as number);
        if (map.size <= SCANNED_CHILDREN) this.children[parent] = undefined;
      }
      unlink(this, node);
      this.segments.release(this.segment[node] as number);
      this.children[node] = undefined;
      this.parent[node] = NONE;
      const list = this.kept[node] as number;
      if (list !== NONE) {
        this.freeKeptList(list);
        this.kept[node] = NONE;
      }
      this.freeNodes.push(node);
      this.changed[node] = CHANGED;
      markChanged(this, parent);
      node = parent;
    }
    // Nothing left: start afresh, so an emptied trie is as small as a new one (as in Rust).
    if (this.nameCount === 0) this.reset();
  }
}
