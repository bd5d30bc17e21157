/**
 * Pending edits of a kept list, mirroring `native/core/src/trie/pending.rs`: the names added and
 * removed in its subtree since it was laid down, each with its place in the list's walk order, kept
 * as the changes come. An expand of a changed subtree *below* a list's holder is then one merge pass
 * over the holder's old list and the edits inside the subtree's old range, instead of a lay-down,
 * which visits every changed node of the subtree and builds a list of the subtree's own. Nothing is
 * laid down, so the subtree stays changed and its records stay as they were: the holder's own
 * expand lays it all down as before, and the edits go with its old list.
 *
 * Places are positions in the old list. A change makes one of three edits: a removed name that the
 * list holds (skip its position); a name at a node of the list that was not a name then (inserted
 * where the node's old block starts, ancestors starting there first); a name at a node placed since
 * (its nearest laid-down ancestor, the anchor, gains new children after its old ones; anchors ending
 * at one place come deepest first): a merge takes the name of an anchor's only such edit as it is,
 * and walks the new children of an anchor with more for their order.
 * A removed name that an edit inserted takes that edit back. Edits are kept only while complete: a
 * change recorded in a list drops the edits of the lists above it, as does a lay-down below them,
 * and a list drops its edits once they outnumber an eighth of its names (at least
 * `MIN_PENDING_EDITS`, at most `MAX_PENDING_EDITS`). A list keeps its edits sorted by place
 * (`PendingEdits`), so a merge reads only those inside its subtree's range.
 */
import type { RopeBuilder } from '../../../common/name-rope.js';
import { firstPairFrom } from '../../../common/pair-search.js';
import { CHANGED, IN_PARENT } from './edits.js';
import { firstNewChild, type KeptList, locate } from './snapshot.js';
import type { JsTopicTrie } from './trie.js';
import { NONE, ROOT } from './walk.js';

/** Edits a list keeps however short it is. */
const MIN_PENDING_EDITS = 64;
/** Edits a list keeps however long it is: an insert moves those after it, a removal looks for its name among them. */
const MAX_PENDING_EDITS = 4096;
/** An edit's order is `kind * KIND_STEP + depth`: the kinds in the order a merge takes them at one place. */
const KIND_STEP = 2 ** 30;
const NEW_CHILDREN = 0;
const OWN_NAME = 1;
const REMOVED = 2;
const DEPTH_LIMIT = KIND_STEP - 1;
/** Room a list's edits take at their first, doubled as they grow (up to the list's limit). */
const FIRST_EDITS_ROOM = 16;
/** The arrays of a list without edits yet, shared: the first insert replaces them (never written). */
const NO_PLACES = new Uint32Array(0);
const NO_IDS = new Int32Array(0);

/**
 * The edits of a kept list (see the module comment and the Rust `PendingEdit`), sorted by place
 * and order, in parallel typed arrays: a merge finds the edits inside its range by a binary search
 * and reads them in order from a few cache lines, where edits as objects, made one per change among
 * everything else the changes allocate, lay scattered over the heap and had to be filtered and
 * sorted at every merge. An insert moves the edits after it, at most a list's limit of them.
 */
export class PendingEdits {
  /** How many edits there are; the arrays have room for more. */
  length = 0;
  /** The position in the old list. */
  at = NO_PLACES;
  /** The kind and a depth: `DEPTH_LIMIT` less the anchor's for new children, the node's for an own name. */
  order = NO_PLACES;
  /** The name added or removed. */
  ids = NO_IDS;
  /** The text of a name added (a merge's answer takes it from here), `undefined` for one removed. */
  texts: (string | undefined)[] = [];

  /** Inserts an edit after those with a lower or equal place and order. */
  insert(at: number, order: number, id: number, text: string | undefined): void {
    if (this.length === this.at.length) this.grow();
    // Orders are integers: after every edit at or below (at, order) is at (at, order + 1).
    const low = this.firstFrom(at, order + 1);
    const end = this.length;
    this.at.copyWithin(low + 1, low, end);
    this.order.copyWithin(low + 1, low, end);
    this.ids.copyWithin(low + 1, low, end);
    const { texts } = this;
    for (let i = end; i > low; i--) texts[i] = texts[i - 1];
    this.at[low] = at;
    this.order[low] = order;
    this.ids[low] = id;
    texts[low] = text;
    this.length = end + 1;
  }

  /** Removes the edit at index `index`, keeping the others in order. */
  removeAt(index: number): void {
    const end = this.length;
    this.at.copyWithin(index, index + 1, end);
    this.order.copyWithin(index, index + 1, end);
    this.ids.copyWithin(index, index + 1, end);
    const { texts } = this;
    for (let i = index; i < end - 1; i++) texts[i] = texts[i + 1];
    texts[end - 1] = undefined;
    this.length = end - 1;
  }

  /** The index of the edit that added the name `id`, or -1. */
  addedAt(id: number): number {
    const { ids, order } = this;
    for (let i = this.length - 1; i >= 0; i--) {
      if (ids[i] === id && kindOf(order[i] as number) !== REMOVED) return i;
    }
    return -1;
  }

  /** The index of the first edit whose place and order are at least `at` and `order` (any order by default). */
  firstFrom(at: number, order = 0): number {
    return firstPairFrom(this.at, this.order, this.length, at, order);
  }

  private grow(): void {
    const room = Math.max(FIRST_EDITS_ROOM, this.at.length * 2);
    const at = new Uint32Array(room);
    at.set(this.at);
    this.at = at;
    const order = new Uint32Array(room);
    order.set(this.order);
    this.order = order;
    const ids = new Int32Array(room);
    ids.set(this.ids);
    this.ids = ids;
  }
}

function kindOf(order: number): number {
  return Math.floor(order / KIND_STEP);
}

function depthOf(order: number): number {
  const low = order % KIND_STEP;
  return kindOf(order) === NEW_CHILDREN ? DEPTH_LIMIT - low : low;
}

function depth(trie: JsTopicTrie, start: number): number {
  let levels = 0;
  for (let node = start; node !== ROOT; node = trie.parent[node] as number) levels++;
  return levels;
}

function isLaidDown(trie: JsTopicTrie, node: number): boolean {
  return ((trie.changed[node] as number) & IN_PARENT) !== 0 || (trie.kept[node] as number) !== NONE;
}

/** The nearest ancestor of `node` (itself included) that was laid down; NONE when none was. */
function anchorOf(trie: JsTopicTrie, start: number): number {
  let node = start;
  while (!isLaidDown(trie, node)) {
    if (node === ROOT) return NONE;
    node = trie.parent[node] as number;
  }
  return node;
}

/**
 * The list where the old block of the laid-down `node` lies and where, when that list keeps edits;
 * drops the edits of the lists above it, which would miss this change.
 */
function pendingList(trie: JsTopicTrie, node: number): { list: KeptList; offset: number } | undefined {
  const { list, offset } = locate(trie, node);
  if (list === NONE) return undefined;
  let holder = node;
  while ((trie.kept[holder] as number) === NONE) holder = trie.parent[holder] as number;
  dropPendingAbove(trie, holder);
  const kept = trie.keptLists[list] as KeptList;
  return kept.pending === undefined ? undefined : { list: kept, offset };
}

function pushPending(list: KeptList, at: number, order: number, id: number, text: string | undefined): void {
  const limit = Math.min(MAX_PENDING_EDITS, Math.max(MIN_PENDING_EDITS, list.ids.length >>> 3));
  if (list.pending !== undefined && list.pending.length < limit) list.pending.insert(at, order, id, text);
  else list.pending = undefined;
}

/** Records the name `id` added at `node` (after the marking, so that records hold old sizes). */
export function noteAdded(trie: JsTopicTrie, node: number, id: number): void {
  const anchor = anchorOf(trie, node);
  if (anchor === NONE) return;
  const found = pendingList(trie, anchor);
  if (found === undefined) return;
  const levels = depth(trie, anchor);
  const text = trie.nodeText[node];
  if (anchor === node) {
    pushPending(found.list, found.offset, OWN_NAME * KIND_STEP + levels, id, text);
    return;
  }
  const record = trie.edits.get(anchor);
  if (record === undefined) {
    found.list.pending = undefined;
    return;
  }
  pushPending(found.list, found.offset + record.oldNames, NEW_CHILDREN * KIND_STEP + (DEPTH_LIMIT - levels), id, text);
}

/** Records the name `id` removed from `node` (after the marking, before the node goes). */
export function noteRemoved(trie: JsTopicTrie, node: number, id: number): void {
  const anchor = anchorOf(trie, node);
  if (anchor === NONE) return;
  const found = pendingList(trie, anchor);
  if (found === undefined) return;
  const pending = found.list.pending as PendingEdits;
  // A name added since: its edit goes back.
  const added = pending.addedAt(id);
  if (added >= 0) {
    pending.removeAt(added);
    return;
  }
  // Else the list holds it, at the start of its node's old block (Rust asserts so in debug builds).
  if (anchor !== node || found.list.ids[found.offset] !== id) {
    found.list.pending = undefined;
    return;
  }
  pushPending(found.list, found.offset, REMOVED * KIND_STEP, id, undefined);
}

/** Drops the edits of every list held above `top`, whose block is being laid down into a list of its own. */
export function dropPendingAbove(trie: JsTopicTrie, top: number): void {
  for (let node = top; node !== ROOT; ) {
    node = trie.parent[node] as number;
    const list = trie.kept[node] as number;
    if (list !== NONE) (trie.keptLists[list] as KeptList).pending = undefined;
  }
}

/** Whether an edit at `at` of order `order` belongs to the block `[start, end)` of a node at depth `levels`. */
function isInside(at: number, order: number, start: number, end: number, levels: number): boolean {
  const kind = kindOf(order);
  if (kind === REMOVED) return at < end;
  if (at > start && at < end) return true;
  if (kind === OWN_NAME) return at === start && depthOf(order) >= levels;
  return at === end && depthOf(order) >= levels;
}

/**
 * A changed block merged from the old list holding it: `pieces` are pairs of (offset, count) for
 * runs and (id, NONE) for names, and `texts` the texts of those names in order.
 */
export interface MergedBlock {
  list: KeptList;
  pieces: number[];
  texts: string[];
}

/** The block of the changed `node` as pieces of the old list holding it; `undefined` when the block must be laid down. */
export function mergedBlock(trie: JsTopicTrie, node: number): MergedBlock | undefined {
  const flags = trie.changed[node] as number;
  if ((flags & CHANGED) === 0 || (flags & IN_PARENT) === 0 || (trie.kept[node] as number) !== NONE) return undefined;
  const { list: index, offset: start } = locate(trie, node);
  const list = index === NONE ? undefined : trie.keptLists[index];
  const record = trie.edits.get(node);
  if (list?.pending === undefined || record === undefined) return undefined;
  const pending = list.pending;
  const end = start + record.oldNames;
  const levels = depth(trie, node);
  // The edits that may belong to the block lie at places from its start to its end, in order.
  const first = pending.firstFrom(start);
  const last = pending.firstFrom(end + 1);
  const { at: places, order: orders, ids, texts: editTexts } = pending;
  let inside = 0;
  for (let e = first; e < last; e++) {
    if (isInside(places[e] as number, orders[e] as number, start, end, levels)) inside++;
  }
  // Past an eighth of the names, laying the block down (once) costs less than merging them at
  // every expand until the holder is laid down.
  if (inside > Math.max(MIN_PENDING_EDITS, (end - start) >>> 3)) return undefined;
  const pieces: number[] = [];
  const texts: string[] = [];
  let at = start;
  let walkedAt = NONE;
  let walkedOrder = NONE;
  for (let e = first; e < last; e++) {
    const place = places[e] as number;
    const order = orders[e] as number;
    if (!isInside(place, order, start, end, levels)) continue;
    if (place > at) {
      pieces.push(at, place - at);
      at = place;
    }
    const kind = kindOf(order);
    if (kind === REMOVED) {
      at++;
    } else if (kind === OWN_NAME) {
      pieces.push(ids[e] as number, NONE);
      texts.push(editTexts[e] as string);
    } else if (place !== walkedAt || order !== walkedOrder) {
      // Edits of one place and order belong to the block alike, so the next one is the next index.
      if (e + 1 === last || places[e + 1] !== place || orders[e + 1] !== order) {
        // An anchor that gained one name: its new children hold that name only (every name added
        // below them made an edit naming the anchor, and a name removed took its edit back), so
        // the walk is left out.
        pieces.push(ids[e] as number, NONE);
        texts.push(editTexts[e] as string);
        continue;
      }
      // One walk per anchor, however many names it gained.
      walkedAt = place;
      walkedOrder = order;
      newChildrenNames(trie, anchorOf(trie, trie.nameNodes[ids[e] as number] as number), pieces, texts);
    }
  }
  if (end > at) pieces.push(at, end - at);
  return { list, pieces, texts };
}

/**
 * Appends (id, NONE) to `pieces` and the text to `texts` for each name below the children of `anchor`
 * placed since its last lay-down, depth first.
 */
function newChildrenNames(trie: JsTopicTrie, anchor: number, pieces: number[], texts: string[]): void {
  const { firstChild, nextSibling, nodeName, nodeText } = trie;
  const stack: number[] = [];
  for (let child = firstNewChild(trie, anchor); child !== NONE; child = nextSibling[child] as number) stack.push(child);
  stack.reverse();
  while (stack.length > 0) {
    const node = stack.pop() as number;
    const id = nodeName[node] as number;
    if (id !== NONE) {
      pieces.push(id, NONE);
      texts.push(nodeText[node] as string);
    }
    const from = stack.length;
    for (let child = firstChild[node] as number; child !== NONE; child = nextSibling[child] as number)
      stack.push(child);
    reverseFrom(stack, from);
  }
}

function reverseFrom(items: number[], from: number): void {
  for (let i = from, j = items.length - 1; i < j; i++, j--) {
    const swap = items[i] as number;
    items[i] = items[j] as number;
    items[j] = swap;
  }
}

/** Copies the texts of a merged block into `out`, without its first `skip` names. */
export function mergedTextsTo(merged: MergedBlock, skip: number, out: RopeBuilder): void {
  const { list, pieces, texts } = merged;
  let left = skip;
  let nextText = 0;
  for (let p = 0; p < pieces.length; p += 2) {
    const first = pieces[p] as number;
    const count = pieces[p + 1] as number;
    if (count === NONE) {
      const text = texts[nextText++] as string;
      if (left > 0) left--;
      else out.name(text);
    } else if (count > left) {
      list.texts.copyTo(out, first + left, count - left);
      left = 0;
    } else {
      left -= count;
    }
  }
}

/** Writes the ids of a merged block into `target` from `at`, without its first `skip`; returns the end. */
export function mergedIdsTo(list: KeptList, pieces: number[], skip: number, target: Uint32Array, at: number): number {
  let left = skip;
  let to = at;
  for (let p = 0; p < pieces.length; p += 2) {
    const first = pieces[p] as number;
    const count = pieces[p + 1] as number;
    if (count === NONE) {
      if (left > 0) left--;
      else target[to++] = first;
    } else if (count > left) {
      target.set(list.ids.subarray(first + left, first + count), to);
      to += count - left;
      left = 0;
    } else {
      left -= count;
    }
  }
  return to;
}
