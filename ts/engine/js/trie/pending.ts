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
 * `MIN_PENDING_EDITS`, at most `MAX_PENDING_EDITS`: a merge scans them all).
 */
import type { RopeBuilder } from '../../../common/name-rope.js';
import { CHANGED, IN_PARENT } from './edits.js';
import { firstNewChild, type KeptList, locate } from './snapshot.js';
import type { JsTopicTrie } from './trie.js';
import { NONE, ROOT } from './walk.js';

/** Edits a list keeps however short it is. */
const MIN_PENDING_EDITS = 64;
/** Edits a list keeps however long it is: a merge below it scans them all (see the Rust `MAX_PENDING_EDITS`). */
const MAX_PENDING_EDITS = 4096;
/** `PendingEdit.order` is `kind * KIND_STEP + depth`: the kinds in the order a merge takes them at one place. */
const KIND_STEP = 2 ** 30;
const NEW_CHILDREN = 0;
const OWN_NAME = 1;
const REMOVED = 2;
const DEPTH_LIMIT = KIND_STEP - 1;

/** One edit of a kept list (see the module comment and the Rust `PendingEdit`). */
export interface PendingEdit {
  /** The position in the old list. */
  at: number;
  /** The kind and a depth: `DEPTH_LIMIT` less the anchor's for new children, the node's for an own name. */
  order: number;
  /** The name added or removed. */
  id: number;
}

function kindOf(edit: PendingEdit): number {
  return Math.floor(edit.order / KIND_STEP);
}

function depthOf(edit: PendingEdit): number {
  const low = edit.order % KIND_STEP;
  return kindOf(edit) === NEW_CHILDREN ? DEPTH_LIMIT - low : low;
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

function pushPending(list: KeptList, edit: PendingEdit): void {
  const limit = Math.min(MAX_PENDING_EDITS, Math.max(MIN_PENDING_EDITS, list.ids.length >>> 3));
  if (list.pending !== undefined && list.pending.length < limit) list.pending.push(edit);
  else list.pending = undefined;
}

/** Records the name `id` added at `node` (after the marking, so that records hold old sizes). */
export function noteAdded(trie: JsTopicTrie, node: number, id: number): void {
  const anchor = anchorOf(trie, node);
  if (anchor === NONE) return;
  const found = pendingList(trie, anchor);
  if (found === undefined) return;
  const levels = depth(trie, anchor);
  if (anchor === node) {
    pushPending(found.list, { at: found.offset, order: OWN_NAME * KIND_STEP + levels, id });
    return;
  }
  const record = trie.edits.get(anchor);
  if (record === undefined) {
    found.list.pending = undefined;
    return;
  }
  pushPending(found.list, {
    at: found.offset + record.oldNames,
    order: NEW_CHILDREN * KIND_STEP + (DEPTH_LIMIT - levels),
    id,
  });
}

/** Records the name `id` removed from `node` (after the marking, before the node goes). */
export function noteRemoved(trie: JsTopicTrie, node: number, id: number): void {
  const anchor = anchorOf(trie, node);
  if (anchor === NONE) return;
  const found = pendingList(trie, anchor);
  if (found === undefined) return;
  const pending = found.list.pending as PendingEdit[];
  // A name added since: its edit goes back.
  for (let at = pending.length - 1; at >= 0; at--) {
    const edit = pending[at] as PendingEdit;
    if (edit.id === id && kindOf(edit) !== REMOVED) {
      pending[at] = pending[pending.length - 1] as PendingEdit;
      pending.pop();
      return;
    }
  }
  // Else the list holds it, at the start of its node's old block (Rust asserts so in debug builds).
  if (anchor !== node || found.list.ids[found.offset] !== id) {
    found.list.pending = undefined;
    return;
  }
  pushPending(found.list, { at: found.offset, order: REMOVED * KIND_STEP, id });
}

/** Drops the edits of every list held above `top`, whose block is being laid down into a list of its own. */
export function dropPendingAbove(trie: JsTopicTrie, top: number): void {
  for (let node = top; node !== ROOT; ) {
    node = trie.parent[node] as number;
    const list = trie.kept[node] as number;
    if (list !== NONE) (trie.keptLists[list] as KeptList).pending = undefined;
  }
}

/**
 * The block of the changed `node` as pieces of the old list holding it: pairs of (offset, count) for
 * runs and (id, NONE) for names. `undefined` when the block must be laid down.
 */
export function mergedBlock(trie: JsTopicTrie, node: number): { list: KeptList; pieces: number[] } | undefined {
  const flags = trie.changed[node] as number;
  if ((flags & CHANGED) === 0 || (flags & IN_PARENT) === 0 || (trie.kept[node] as number) !== NONE) return undefined;
  const { list: index, offset: start } = locate(trie, node);
  const list = index === NONE ? undefined : trie.keptLists[index];
  const record = trie.edits.get(node);
  if (list?.pending === undefined || record === undefined) return undefined;
  const end = start + record.oldNames;
  const levels = depth(trie, node);
  const edits = list.pending.filter((edit) => {
    const inside = edit.at > start && edit.at < end;
    const kind = kindOf(edit);
    if (kind === REMOVED) return edit.at >= start && edit.at < end;
    if (kind === OWN_NAME) return inside || (edit.at === start && depthOf(edit) >= levels);
    return inside || (edit.at === end && depthOf(edit) >= levels);
  });
  // Past an eighth of the names, laying the block down (once) costs less than merging them at
  // every expand until the holder is laid down.
  if (edits.length > Math.max(MIN_PENDING_EDITS, (end - start) >>> 3)) return undefined;
  edits.sort((a, b) => a.at - b.at || a.order - b.order);
  const pieces: number[] = [];
  let at = start;
  let walkedAt = NONE;
  let walkedOrder = NONE;
  for (let i = 0; i < edits.length; i++) {
    const edit = edits[i] as PendingEdit;
    if (edit.at > at) {
      pieces.push(at, edit.at - at);
      at = edit.at;
    }
    const kind = kindOf(edit);
    if (kind === REMOVED) at++;
    else if (kind === OWN_NAME) pieces.push(edit.id, NONE);
    else if (edit.at !== walkedAt || edit.order !== walkedOrder) {
      const next = edits[i + 1];
      if (next === undefined || next.at !== edit.at || next.order !== edit.order) {
        // An anchor that gained one name: its new children hold that name only (every name added
        // below them made an edit naming the anchor, and a name removed took its edit back), so
        // the walk is left out.
        pieces.push(edit.id, NONE);
        continue;
      }
      // One walk per anchor, however many names it gained.
      walkedAt = edit.at;
      walkedOrder = edit.order;
      newChildrenNames(trie, anchorOf(trie, trie.nameNodes[edit.id] as number), pieces);
    }
  }
  if (end > at) pieces.push(at, end - at);
  return { list, pieces };
}

/** Appends (id, NONE) for each name below the children of `anchor` placed since its last lay-down, depth first. */
function newChildrenNames(trie: JsTopicTrie, anchor: number, pieces: number[]): void {
  const { firstChild, nextSibling, nodeName } = trie;
  const stack: number[] = [];
  for (let child = firstNewChild(trie, anchor); child !== NONE; child = nextSibling[child] as number) stack.push(child);
  stack.reverse();
  while (stack.length > 0) {
    const node = stack.pop() as number;
    const id = nodeName[node] as number;
    if (id !== NONE) pieces.push(id, NONE);
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
export function mergedTextsTo(
  trie: JsTopicTrie,
  list: KeptList,
  pieces: number[],
  skip: number,
  out: RopeBuilder,
): void {
  let left = skip;
  for (let p = 0; p < pieces.length; p += 2) {
    const first = pieces[p] as number;
    const count = pieces[p + 1] as number;
    if (count === NONE) {
      if (left > 0) left--;
      else out.name(trie.nodeText[trie.nameNodes[first] as number] as string);
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
