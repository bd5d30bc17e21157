/**
 * What changed in a subtree since its block was laid down, mirroring `native/core/src/trie/edits.rs`:
 * kept so that laying it down again costs the changes and a copy of the rest, not a visit of every
 * child (snapshot.ts lays down).
 *
 * Between two lay-downs a subtree changes in three ways only: a node gains or loses its own name, a
 * child is appended after the others (a new node), and a child is unlinked (pruned). So the new block
 * is the old one with the changed and pruned children's old ranges cut out, the changed ones laid
 * down again in their place, and the new children after the rest. When a node that was laid down
 * first changes, it records its old size and whether it was a name (`Edits`), and, in its parent's
 * record, where its block lay in the parent's old block (`Entry`).
 *
 * Keys: a child finds its block from its parent's by its key (`trie.key`). A parent laid down from
 * its record keeps a `KeyMap` from ranges of its children's keys to where their blocks now start, so
 * the children of an untouched run keep their keys; a child laid down again (or new) takes a fresh
 * key past those in use. When the fresh keys would run out, the parent's children take their
 * positions as keys again and the map goes.
 */
import type { JsTopicTrie } from './trie.js';
import { NONE } from './walk.js';

/** `trie.changed` flag: the subtree changed since the node's block was laid down, or it never was. */
export const CHANGED = 1;
/** `trie.changed` flag: the node's block lies in its parent's as last laid down, where its key says. */
export const IN_PARENT = 2;
/** `trie.changed` flag: the node's old range has an entry in its parent's record. */
export const LISTED = 4;
/** Keys stay below this, as in Rust (the bits of `Node::kept` below its flags). */
export const KEY_LIMIT = 2 ** 28 - 1;

/** A child's old block within its parent's old block; `node` is `NONE` once the child is pruned. */
export interface Entry {
  node: number;
  at: number;
  size: number;
}

/** A changed node's state as last laid down. */
export interface Edits {
  oldNames: number;
  oldNamed: boolean;
  children: Entry[];
}

/** Numbers per piece in a key map's flat array: key, position, length, rank. */
const PIECE = 4;
/**
 * The counts by rank of the `KeyMap` being built, shared by every map (one is built at a time) and
 * grown as needed: a lay-down builds a map per changed node it visits, and an array of its own for
 * each cost an allocation apiece.
 */
let rankStarts = new Int32Array(64);

/**
 * Where the blocks of a node's children start, by key: pieces `[key, at, len, rank]` flat, in
 * position order, and their indices in key order.
 *
 * The key order comes without comparing keys. A map is built (`leave` in snapshot.ts) from parts
 * of the previous map's pieces, in position order, and from fresh pieces, whose keys are past all
 * of those and rise with their positions. Each part carries the rank of its piece in the previous
 * map's key order, and parts of one piece come in rising key order, so ordering the pieces by that
 * rank, stably, orders them by key: one counting pass over the pieces, where a sort per lay-down
 * cost a node laid down again and again (its map holds a piece or two per child ever laid down)
 * more than the rest of its lay-down. Built, a piece's rank becomes its place in this map's key
 * order, for the next map.
 */
export class KeyMap {
  private readonly byKey: Int32Array;

  /** `ranks`: the ranks the pieces carry run below it (the fresh pieces' rank, the largest). */
  constructor(
    readonly pieces: number[],
    readonly nextKey: number,
    ranks: number,
  ) {
    const count = pieces.length / PIECE;
    if (rankStarts.length < ranks + 2) rankStarts = new Int32Array(Math.max(ranks + 2, 2 * rankStarts.length));
    const starts = rankStarts;
    starts.fill(0, 0, ranks + 2);
    for (let p = 3; p < pieces.length; p += PIECE) (starts[(pieces[p] as number) + 1] as number)++;
    for (let r = 1; r < ranks + 2; r++) starts[r] = (starts[r] as number) + (starts[r - 1] as number);
    const byKey = new Int32Array(count);
    for (let i = 0; i < count; i++) {
      const rank = pieces[i * PIECE + 3] as number;
      byKey[starts[rank] as number] = i;
      starts[rank] = (starts[rank] as number) + 1;
    }
    for (let k = 0; k < count; k++) pieces[(byKey[k] as number) * PIECE + 3] = k;
    this.byKey = byKey;
  }

  /** The rank fresh pieces take in the next map built from this one's: past every piece's. */
  get freshRank(): number {
    return this.byKey.length;
  }

  position(key: number): number {
    const { pieces, byKey } = this;
    let low = 0;
    let high = byKey.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((pieces[(byKey[mid] as number) * PIECE] as number) <= key) low = mid + 1;
      else high = mid;
    }
    if (low === 0) throw new Error('trie: a child key below every piece');
    const piece = (byKey[low - 1] as number) * PIECE;
    return (pieces[piece + 1] as number) + key - (pieces[piece] as number);
  }

  /**
   * Appends the pieces that map positions `[from, to)` of the old block, moved to start at `toAt`,
   * each with the rank of the piece it comes from.
   */
  moved(from: number, to: number, toAt: number, out: number[]): void {
    const { pieces } = this;
    let low = 0;
    let high = pieces.length / PIECE;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((pieces[mid * PIECE + 1] as number) + (pieces[mid * PIECE + 2] as number) <= from) low = mid + 1;
      else high = mid;
    }
    for (let p = low * PIECE; p < pieces.length; p += PIECE) {
      const at = pieces[p + 1] as number;
      if (at >= to) break;
      const start = Math.max(at, from);
      const end = Math.min(at + (pieces[p + 2] as number), to);
      pushPiece(out, (pieces[p] as number) + start - at, toAt + start - from, end - start, pieces[p + 3] as number);
    }
  }
}

/**
 * Appends a piece of rank `rank` (see `KeyMap`), joined to the last one when both continue it (its
 * keys then follow the last one's directly, so the last one's rank orders both).
 */
export function pushPiece(out: number[], key: number, at: number, len: number, rank: number): void {
  const last = out.length - PIECE;
  if (last >= 0) {
    const lastLen = out[last + 2] as number;
    if ((out[last] as number) + lastLen === key && (out[last + 1] as number) + lastLen === at) {
      out[last + 2] = lastLen + len;
      return;
    }
  }
  out.push(key, at, len, rank);
}

/** Where the block of `child` starts within its parent's block, from its key. */
export function childPosition(trie: JsTopicTrie, parent: number, child: number): number {
  const key = trie.key[child] as number;
  const map = trie.keyMaps.get(parent);
  return map === undefined ? key : map.position(key);
}

/**
 * Marks `node` and its ancestors changed. Must come before the change touches names or counts: a
 * node that was laid down records its state then. Every ancestor of a changed node is changed, so
 * marking stops at the first one already marked.
 */
export function markChanged(trie: JsTopicTrie, start: number): void {
  const { changed, parent, names } = trie;
  for (let node = start; node !== NONE; node = parent[node] as number) {
    const flags = changed[node] as number;
    if ((flags & CHANGED) !== 0) return;
    changed[node] = flags | CHANGED;
    const edits = recordOf(trie, node);
    edits.oldNames = names[node] as number;
    edits.oldNamed = trie.isName(node);
    listInParent(trie, node);
  }
}

function recordOf(trie: JsTopicTrie, node: number): Edits {
  let edits = trie.edits.get(node);
  if (edits === undefined) {
    edits = { oldNames: trie.names[node] as number, oldNamed: trie.isName(node), children: [] };
    trie.edits.set(node, edits);
  }
  return edits;
}

/** Records `node`'s old range in its parent's record, once per lay-down of the parent. */
function listInParent(trie: JsTopicTrie, node: number): void {
  const flags = trie.changed[node] as number;
  if ((flags & IN_PARENT) === 0 || (flags & LISTED) !== 0) return;
  const parent = trie.parent[node] as number;
  const at = childPosition(trie, parent, node);
  trie.changed[node] = flags | LISTED;
  // The parent is unchanged until the marking reaches it, so it may have no record yet.
  recordOf(trie, parent).children.push({ node, at, size: trie.names[node] as number });
}

/**
 * Forgets what the edits hold of `node`, which is being freed: its own record and key map, and in its
 * parent's record its old range stays as one to cut out.
 */
export function forgetEdits(trie: JsTopicTrie, node: number): void {
  trie.edits.delete(node);
  trie.keyMaps.delete(node);
  if (((trie.changed[node] as number) & LISTED) === 0) return;
  const entry = trie.edits.get(trie.parent[node] as number)?.children.find((e) => e.node === node);
  if (entry === undefined) throw new Error("trie: a listed node has no entry in its parent's record");
  entry.node = NONE;
}
