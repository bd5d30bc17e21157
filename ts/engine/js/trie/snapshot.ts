/**
 * Kept lists of the js trie, mirroring `native/core/src/trie/snapshot.rs`: the names of a subtree in
 * walk order, laid down by the first walk that takes the subtree whole and copied by later ones, so
 * that a trailing wildcard costs its answer however the nodes are placed in memory.
 *
 * A node's block is the names of its subtree in depth-first order, its own name first, then each
 * child's block in child order: `names[node]` entries. A walk that takes the whole subtree of a node
 * (the top) writes the top's block into a list of its own (texts and ids side by side), which the top
 * then holds (`kept`), and gives every node it visits a key saying where its block starts within its
 * parent's (edits.ts). A node whose subtree has not changed since finds its block by climbing to the
 * nearest node holding a list, adding its ancestors' positions on the way.
 *
 * Changes mark their node and its ancestors changed, and each node so marked records what its block
 * was (edits.ts). A walk whose top changed lays the top's block down again from the old one: it
 * copies the runs of the old block between the recorded children (texts sharing the old rope's
 * chunks, ids with `set`), lays the recorded children down again in their places and the new
 * children after them, so it costs the changes, their depth and the copy, not the subtree. A list a
 * child held is absorbed into the new one, so lists do not pile up.
 *
 * Lists hold ids and texts, not node positions, so compaction moves `key`, `kept` and `changed` with
 * their nodes and keeps every list.
 */
import { type NameRope, RopeBuilder } from '../../../common/name-rope.js';
import { CHANGED, childPosition, type Edits, type Entry, IN_PARENT, KEY_LIMIT, KeyMap, pushPiece } from './edits.js';
import { dropPendingAbove, PendingEdits } from './pending.js';
import type { JsTopicTrie } from './trie.js';
import { NONE } from './walk.js';

/** One kept list: a block of names in walk order, as texts (a rope, ts/common/name-rope.ts) and as ids. */
export interface KeptList {
  texts: NameRope;
  ids: Int32Array;
  /** Its edits since it was laid down, while it keeps them (pending.ts). */
  pending: PendingEdits | undefined;
}

/** Where a node's block lies: in list `list` of `trie.keptLists`, from `offset`. */
interface Location {
  list: number;
  offset: number;
}

/**
 * Where the block of `node` lies as last laid down: the list of the nearest node (itself or an
 * ancestor) holding one, at the sum of the positions on the way up; `NONE` for a node never laid
 * down. Valid for an unchanged node; for a changed one, its old block.
 */
export function locate(trie: JsTopicTrie, node: number): Location {
  const { kept, changed, parent } = trie;
  let offset = 0;
  let at = node;
  for (;;) {
    const list = kept[at] as number;
    if (list !== NONE) return { list, offset };
    if (((changed[at] as number) & IN_PARENT) === 0) return { list: NONE, offset: 0 };
    const up = parent[at] as number;
    offset += childPosition(trie, up, at);
    at = up;
  }
}

/**
 * The kept list holding the block of `node` and where the block starts, laying it down first when
 * the subtree changed since.
 */
export function blockOf(trie: JsTopicTrie, node: number): { list: KeptList; offset: number } {
  if (((trie.changed[node] as number) & CHANGED) !== 0) layDown(trie, node);
  const { list, offset } = locate(trie, node);
  const kept = trie.keptLists[list];
  if (kept === undefined) throw new Error('trie: an unchanged node lies in no kept list');
  return { list: kept, offset };
}

/** One node on the way down of `layDown` (see the Rust `Frame`). */
interface Frame {
  node: number;
  start: number;
  oldList: number;
  oldOffset: number;
  byRecord: boolean;
  entries: Entry[];
  nextEntry: number;
  oldAt: number;
  oldEnd: number;
  child: number;
  /** Where the child `nextStep` returned last lay in the old block when the record says so, else NONE. */
  childOldAt: number;
  pieces: number[];
  nextKey: number;
  /** The rank of the frame's fresh pieces in its new key map (edits.ts). */
  freshRank: number;
  /** The node's key map as it was laid down last (until `leave` replaces it). */
  map: KeyMap | undefined;
}

/** Copies for one lay-down: texts into a rope, ids written in place, runs joined while they continue. */
class Output {
  readonly ids: Int32Array;
  at = 0;
  private readonly texts = new RopeBuilder();
  private runList = NONE;
  private runOffset = 0;
  private runCount = 0;
  readonly freed: number[] = [];

  constructor(
    private readonly trie: JsTopicTrie,
    size: number,
  ) {
    this.ids = trie.takeIds(size);
  }

  /** Positions taken so far, the pending run included. */
  length(): number {
    return this.at + this.runCount;
  }

  name(id: number, text: string): void {
    this.flush();
    this.texts.name(text);
    this.ids[this.at++] = id;
  }

  copy(list: number, offset: number, count: number): void {
    if (this.runCount > 0 && this.runList === list && this.runOffset + this.runCount === offset) {
      this.runCount += count;
      return;
    }
    this.flush();
    this.runList = list;
    this.runOffset = offset;
    this.runCount = count;
  }

  flush(): void {
    const count = this.runCount;
    if (count === 0) return;
    const source = this.trie.keptLists[this.runList] as KeptList;
    const from = this.runOffset;
    source.texts.copyTo(this.texts, from, count);
    this.ids.set(source.ids.subarray(from, from + count), this.at);
    this.at += count;
    this.runCount = 0;
  }

  /** The texts, as a rope. */
  rope(): NameRope {
    this.flush();
    return this.texts.toRope();
  }
}

/**
 * Lays the block of the changed node `top` down into a new list that `top` then holds: runs of old
 * blocks copied, changed and new nodes visited (edits.ts says which). Every node visited becomes
 * unchanged; the lists of visited or copied nodes (the top's previous one included) are freed once
 * the copies are done.
 */
function layDown(trie: JsTopicTrie, top: number): void {
  const { kept } = trie;
  const size = trie.names[top] as number;
  const out = new Output(trie, size);
  const old = locate(trie, top);
  const ownList = kept[top] as number;
  if (ownList !== NONE) {
    out.freed.push(ownList);
    kept[top] = NONE;
  }
  let depth = 0;
  enter(trie, top, old.list, old.offset, out, frameAt(depth++));
  while (depth > 0) {
    const frame = frames[depth - 1] as Frame;
    const child = nextStep(trie, frame, out);
    if (child === NONE) {
      leave(trie, frame);
      depth--;
      continue;
    }
    if (visit(trie, child, frame, out, frames[depth])) depth++;
  }
  const texts = out.rope();
  if (out.at !== size || texts.size !== size) {
    throw new Error(`trie: laid down ${out.at} names where the counts say ${size}`);
  }
  for (const list of out.freed) trie.freeKeptList(list);
  dropPendingAbove(trie, top);
  kept[top] = trie.keepList({ texts, ids: out.ids, pending: new PendingEdits() });
}

/** The frames of `layDown` by depth, reused (lay-downs never nest): the first one visits every node. */
const frames: Frame[] = [];
/** Shared by frames that take no record (they never write to it). */
const NO_ENTRIES: Entry[] = [];

function frameAt(depth: number): Frame {
  while (frames.length <= depth) {
    frames.push({
      node: NONE,
      start: 0,
      oldList: NONE,
      oldOffset: 0,
      byRecord: false,
      entries: NO_ENTRIES,
      nextEntry: 0,
      oldAt: 0,
      oldEnd: 0,
      child: NONE,
      childOldAt: NONE,
      pieces: [],
      nextKey: 0,
      freshRank: 0,
      map: undefined,
    });
  }
  return frames[depth] as Frame;
}

/**
 * Starts laying down `node`, whose old block is at (`oldList`, `oldOffset`), in `frame`: its state
 * and its own name.
 */
function enter(trie: JsTopicTrie, node: number, oldList: number, oldOffset: number, out: Output, frame: Frame): void {
  const record = oldList === NONE ? undefined : trie.edits.get(node);
  trie.edits.delete(node);
  const map = trie.keyMaps.get(node);
  const nextKey = map !== undefined ? map.nextKey : (record?.oldNames ?? 0);
  // Fresh keys for this lay-down come to at most its names; past the key range, every child takes
  // its position as its key again.
  const byRecord = record !== undefined && nextKey + (trie.names[node] as number) <= KEY_LIMIT;
  frame.node = node;
  frame.start = out.length();
  frame.oldList = oldList;
  frame.oldOffset = oldOffset;
  frame.byRecord = byRecord;
  frame.entries = NO_ENTRIES;
  frame.nextEntry = 0;
  frame.oldAt = 0;
  frame.oldEnd = 0;
  frame.child = trie.firstChild[node] as number;
  frame.nextKey = nextKey;
  frame.map = map;
  // Without a map the old block's positions are its children's keys, all of one rank.
  frame.freshRank = map !== undefined ? map.freshRank : 1;
  if (byRecord && record !== undefined) {
    // A map of its own: the frame's array is kept by the key map it becomes.
    frame.pieces = [];
    frame.entries = record.children.sort((a, b) => a.at - b.at);
    frame.oldAt = record.oldNamed ? 1 : 0;
    frame.oldEnd = record.oldNames;
    frame.child = gainedChildren(trie, node, record) ? firstNewChild(trie, node) : NONE;
  }
  trie.changed[node] = (trie.changed[node] as number) & ~CHANGED;
  const id = trie.nodeName[node] as number;
  // A name the old block starts with is copied with the run it continues (see the Rust `enter`).
  if (frame.oldAt === 1 && id !== NONE && (trie.keptLists[oldList] as KeptList).ids[oldOffset] === id) frame.oldAt = 0;
  else if (id !== NONE) out.name(id, trie.nodeText[node] as string);
}

/**
 * Whether `node`, laid down from `record`, has children placed since, from the counts: its names
 * now less its own, those of its recorded children now and those of its other old children (as
 * they were: unrecorded, so unchanged) are the names of the new children, and a node holds names.
 * The recorded children's counts are read by the lay-down anyway; the new children's links, read
 * only to find them, lie apart from the rest and cost two cache misses a node.
 */
function gainedChildren(trie: JsTopicTrie, node: number, record: Edits): boolean {
  const { names, nodeName } = trie;
  let known = ((nodeName[node] as number) !== NONE ? 1 : 0) + record.oldNames - (record.oldNamed ? 1 : 0);
  for (const entry of record.children) {
    known += entry.node === NONE ? -entry.size : (names[entry.node] as number) - entry.size;
  }
  return (names[node] as number) !== known;
}

/** The first of `node`'s children placed since its block was laid down (they follow the others). */
export function firstNewChild(trie: JsTopicTrie, node: number): number {
  const { firstChild, prevSibling, changed } = trie;
  const first = firstChild[node] as number;
  if (first === NONE) return NONE;
  let child = prevSibling[first] as number;
  let newest = NONE;
  while (((changed[child] as number) & IN_PARENT) === 0) {
    newest = child;
    if (child === first) break;
    child = prevSibling[child] as number;
  }
  return newest;
}

/** Copies what the frame has to copy before its next child to visit, and returns that child; NONE when done. */
function nextStep(trie: JsTopicTrie, frame: Frame, out: Output): number {
  if (frame.byRecord) {
    while (frame.nextEntry < frame.entries.length) {
      const entry = frame.entries[frame.nextEntry++] as Entry;
      copyOld(frame, entry.at, out);
      frame.oldAt = entry.at + entry.size;
      if (entry.node !== NONE) {
        frame.childOldAt = entry.at;
        return entry.node;
      }
    }
    copyOld(frame, frame.oldEnd, out);
    frame.oldAt = frame.oldEnd;
  }
  const child = frame.child;
  if (child !== NONE) frame.child = trie.nextSibling[child] as number;
  frame.childOldAt = NONE;
  return child;
}

/** Copies positions `[frame.oldAt, to)` of the frame's old block, and maps their keys. */
function copyOld(frame: Frame, to: number, out: Output): void {
  const from = frame.oldAt;
  if (to <= from) return;
  const at = out.length() - frame.start;
  const map = frame.map;
  if (map !== undefined) map.moved(from, to, at, frame.pieces);
  else pushPiece(frame.pieces, from, at, to - from, 0);
  out.copy(frame.oldList, frame.oldOffset + from, to - from);
}

/**
 * Takes `child` of the frame's node into the new block: copies its block when it has not changed,
 * else enters it in the next frame (and returns true). Gives it its key in the new block.
 */
function visit(trie: JsTopicTrie, child: number, frame: Frame, out: Output, next: Frame | undefined): boolean {
  const { changed, kept } = trie;
  const names = trie.names[child] as number;
  const at = out.length() - frame.start;
  let key = at;
  if (frame.byRecord) {
    key = frame.nextKey;
    frame.nextKey += names;
    pushPiece(frame.pieces, key, at, names, frame.freshRank);
  }
  const flags = changed[child] as number;
  // Its old block: a list it holds, else in the parent's old block (read before the key goes).
  let oldList = kept[child] as number;
  let oldOffset = 0;
  if (oldList !== NONE) {
    out.freed.push(oldList);
    kept[child] = NONE;
  } else if ((flags & IN_PARENT) !== 0 && frame.oldList !== NONE) {
    // A recorded child's entry says where it lay: the parent's key map has not changed since the
    // entry was made, and asking it again costs a search of its pieces.
    oldList = frame.oldList;
    oldOffset =
      frame.oldOffset + (frame.childOldAt !== NONE ? frame.childOldAt : childPosition(trie, frame.node, child));
  }
  changed[child] = (flags & CHANGED) | IN_PARENT;
  trie.key[child] = key;
  if ((flags & CHANGED) === 0) {
    if (oldList === NONE) throw new Error('trie: an unchanged node lies in no kept list');
    out.copy(oldList, oldOffset, names);
    return false;
  }
  enter(trie, child, oldList, oldOffset, out, next ?? frameAt(frames.length));
  return true;
}

/** Finishes laying down the frame's node: its new key map. */
function leave(trie: JsTopicTrie, frame: Frame): void {
  if (frame.byRecord) trie.keyMaps.set(frame.node, new KeyMap(frame.pieces, frame.nextKey, frame.freshRank));
  else trie.keyMaps.delete(frame.node);
}
