/**
 * Pattern walks over the js trie, mirroring `native/core/src/trie/walk.rs`: level by level, a
 * literal token is one edge lookup, the one-segment wildcard takes each child, and the trailing
 * wildcard takes a whole subtree without matching any name (counted in O(1) from the per-node name
 * counts). The order of levels and children is Rust's, so both engines return names in the same
 * order. As in Rust, a trailing wildcard copies the subtree's kept list (snapshot.ts), and a walk
 * first lays the nodes out again in walk order once walks have visited enough scattered nodes
 * (compact.ts), which changes its speed, not its answers.
 */
import { validatePattern } from '../../../common/dialect.js';
import { RopeBuilder } from '../../../common/name-rope.js';
import { afterWalk } from './compact.js';
import { mergedBlock, mergedIdsTo, mergedTextsTo } from './pending.js';
import { blockOf, type KeptList } from './snapshot.js';
import type { JsTopicTrie } from './trie.js';

/** No node: a missing child or the root's parent. */
export const NONE = -1;
export const ROOT = 0;
const DOLLAR = 36;

/** MQTT: a wildcard in the first level does not reach a first level starting with `$`. */
function skipsDollar(trie: JsTopicTrie, node: number, child: number): boolean {
  return (
    node === ROOT &&
    trie.dialect.name === 'mqtt' &&
    trie.segments.text(trie.segment[child] as number).charCodeAt(0) === DOLLAR
  );
}

/**
 * Children of a node scanned for a literal segment before its Map is asked, as in Rust: most nodes
 * have a few children, and reading them from the typed arrays costs less than a Map lookup.
 */
export const SCANNED_CHILDREN = 8;

/** The child of `node` along segment id `segment`, or `NONE`. */
export function childBySegment(trie: JsTopicTrie, node: number, segment: number): number {
  const { segment: segments, nextSibling } = trie;
  let child = trie.firstChild[node] as number;
  for (let scanned = 0; scanned < SCANNED_CHILDREN; scanned++) {
    if (child === NONE || segments[child] === segment) return child;
    child = nextSibling[child] as number;
  }
  return child === NONE ? NONE : (trie.children[node]?.get(segment) ?? NONE);
}

/**
 * Scratch for `reach`, shared by every trie (walks run to completion and never nest): the nodes
 * reached so far and the next level's, grown as needed and never shrunk, so a walk allocates no
 * arrays level by level (a walk over a small trie costs about as much as those allocations).
 */
let reachedNodes: Int32Array = new Int32Array(256);
let nextNodes: Int32Array = new Int32Array(256);
/** Nodes the walk under way (or the last one) visited on its way down, for compaction (compact.ts). */
let lastWalkVisited = 0;

function doubled(nodes: Int32Array): Int32Array {
  const grown = new Int32Array(nodes.length * 2);
  grown.set(nodes);
  return grown;
}

/**
 * Writes the children of `node` into `nextNodes` from `at`, last to first, but for those MQTT's `$`
 * rule skips; returns the position after them.
 */
function pushChildrenReversed(trie: JsTopicTrie, node: number, start: number): number {
  const first = trie.firstChild[node] as number;
  if (first === NONE) return start;
  const { prevSibling } = trie;
  let at = start;
  // The first child's previous link is the last child.
  for (let child = prevSibling[first] as number; ; child = prevSibling[child] as number) {
    if (!skipsDollar(trie, node, child)) {
      if (at === nextNodes.length) nextNodes = doubled(nextNodes);
      nextNodes[at++] = child;
    }
    if (child === first) return at;
  }
}

/**
 * What the segments before a trailing wildcard reach, in walk order: `nodes[0..length]`, valid until
 * the next walk; and whether a trailing wildcard follows.
 */
interface Reached {
  nodes: Int32Array;
  length: number;
  rest: boolean;
}

/**
 * Follows the segments of a valid pattern down from the root level by level, as Rust does: a
 * literal replaces each node by its child along that segment, the one-segment wildcard by its
 * children last to first (so they come out last child first). Stops before a trailing wildcard.
 * Counts the nodes it visits, for the compaction step the public walks take once their answer is
 * out (compact.ts: positions may change then). The segments are compared
 * with the dialect's wildcards as they come (what `tokenize` would make of them) rather than turned
 * into token objects.
 */
function reach(trie: JsTopicTrie, pattern: string): Reached {
  lastWalkVisited = 0;
  const { separator, one, rest } = trie.dialect;
  const segments = pattern.split(separator);
  let length = 0;
  if (trie.size > 0) reachedNodes[length++] = ROOT;
  for (let i = 0; i < segments.length && length > 0; i++) {
    const text = segments[i] as string;
    let next = 0;
    if (text === one) {
      for (let f = 0; f < length; f++) next = pushChildrenReversed(trie, reachedNodes[f] as number, next);
    } else if (text === rest) {
      return { nodes: reachedNodes, length, rest: true };
    } else {
      const segment = trie.segments.get(text);
      if (segment === undefined) return { nodes: reachedNodes, length: 0, rest: false };
      // A literal keeps at most one node per node: no growth needed.
      if (nextNodes.length < length) nextNodes = new Int32Array(reachedNodes.length);
      for (let f = 0; f < length; f++) {
        const child = childBySegment(trie, reachedNodes[f] as number, segment);
        if (child !== NONE) nextNodes[next++] = child;
      }
    }
    const swap = reachedNodes;
    reachedNodes = nextNodes;
    nextNodes = swap;
    length = next;
    lastWalkVisited += length;
  }
  return { nodes: reachedNodes, length, rest: false };
}

/**
 * The node after `from`'s subtree in depth-first order, staying inside `top`'s subtree: its next
 * sibling, or the next sibling of its nearest ancestor that has one; NONE once the walk is back at
 * `top`. Follows links instead of keeping a stack (an MQTT name can be too deep to recurse).
 */
export function nextAfterSubtree(trie: JsTopicTrie, from: number, top: number): number {
  const { nextSibling, parent } = trie;
  for (let node = from; node !== top; node = parent[node] as number) {
    const next = nextSibling[node] as number;
    if (next !== NONE) return next;
  }
  return NONE;
}

/**
 * Where the names a trailing wildcard takes at `node` lie: its block in a kept list (laid down first
 * if the subtree changed), less its own name but for MQTT's `#`, which also matches the parent level.
 */
function restBlock(trie: JsTopicTrie, node: number): { list: KeptList; from: number; to: number } {
  const { list, offset } = blockOf(trie, node);
  return { list, from: offset + ownNameSkipped(trie, node), to: offset + (trie.names[node] as number) };
}

/** 1 when a trailing wildcard at `node` leaves out its own name (all but MQTT's `#`), else 0. */
function ownNameSkipped(trie: JsTopicTrie, node: number): number {
  return trie.dialect.name !== 'mqtt' && trie.isName(node) ? 1 : 0;
}

/** Whether the names under `node` are taken child by child: MQTT's root, whose `$` children a wildcard skips. */
function byChild(trie: JsTopicTrie, node: number): boolean {
  return node === ROOT && trie.dialect.name === 'mqtt';
}

/**
 * Writes the ids of the names `pattern` matches into `out` as far as it has room and returns how many
 * there are in all, or -1 for an invalid pattern. The count is known before the walk (the per-node
 * name counts), so when `out` has room the walk writes straight into it; otherwise it writes into an
 * array of that size and copies what fits.
 */
export function expandIdsInto(trie: JsTopicTrie, pattern: string, out: Uint32Array): number {
  if (validatePattern(trie.dialect, pattern) !== null) return -1;
  const { nodes, length, rest } = reach(trie, pattern);
  const count = answerCount(trie, nodes, length, rest);
  const target = count <= out.length ? out : new Uint32Array(count);
  const { nodeName, firstChild, nextSibling } = trie;
  let at = 0;
  const copy = (node: number): void => {
    const merged = mergedBlock(trie, node);
    if (merged !== undefined) {
      at = mergedIdsTo(merged.list, merged.pieces, ownNameSkipped(trie, node), target, at);
      return;
    }
    const { list, from, to } = restBlock(trie, node);
    target.set(list.ids.subarray(from, to), at);
    at += to - from;
  };
  for (let f = 0; f < length; f++) {
    const node = nodes[f] as number;
    if (!rest) {
      const id = nodeName[node] as number;
      if (id !== NONE) target[at++] = id;
    } else if (byChild(trie, node)) {
      for (let child = firstChild[node] as number; child !== NONE; child = nextSibling[child] as number) {
        if (!skipsDollar(trie, node, child)) copy(child);
      }
    } else {
      copy(node);
    }
  }
  if (at !== count) throw new Error(`trie: the walk found ${at} names where the counts say ${count}`);
  if (target !== out) out.set(target.subarray(0, out.length));
  afterWalk(trie, lastWalkVisited);
  return count;
}

/** How many names the reached nodes hold (from the per-node counts, before any walk). */
function answerCount(trie: JsTopicTrie, nodes: Int32Array, length: number, rest: boolean): number {
  let count = 0;
  for (let f = 0; f < length; f++)
    count += rest ? restCount(trie, nodes[f] as number) : trie.isName(nodes[f] as number) ? 1 : 0;
  return count;
}

/**
 * The names of the ids `expandIdsInto` writes, in the same order, or null for an invalid pattern: the
 * same walk, reading the texts kept at the nodes since `add`. Without a trailing wildcard the
 * answer's size is known before the walk (the per-node name counts), so its array is allocated once
 * at that size: growing it by `push` copies it several times, and an array over 128 KiB (16,384
 * names) is a fresh large object each time, whose pages the kernel must fault in and zero. With one,
 * the blocks' ropes are joined by one `concat`.
 */
export function expandNames(trie: JsTopicTrie, pattern: string): string[] | null {
  if (validatePattern(trie.dialect, pattern) !== null) return null;
  const { nodes, length, rest } = reach(trie, pattern);
  const { nodeText, firstChild, nextSibling } = trie;
  const count = answerCount(trie, nodes, length, rest);
  if (!rest) {
    const names = new Array<string>(count);
    let at = 0;
    for (let f = 0; f < length; f++) {
      const text = nodeText[nodes[f] as number];
      if (text !== undefined) names[at++] = text;
    }
    if (at !== count) throw new Error(`trie: the walk found ${at} names where the counts say ${count}`);
    afterWalk(trie, lastWalkVisited);
    return names;
  }
  const out = new RopeBuilder('answer');
  const copy = (node: number): void => {
    // A changed block below a kept list's holder is merged from that list and its edits
    // (pending.ts), nothing laid down.
    const merged = mergedBlock(trie, node);
    if (merged !== undefined) {
      mergedTextsTo(merged, ownNameSkipped(trie, node), out);
      return;
    }
    const { list, from, to } = restBlock(trie, node);
    list.texts.copyTo(out, from, to - from);
  };
  for (let f = 0; f < length; f++) {
    const node = nodes[f] as number;
    if (byChild(trie, node)) {
      for (let child = firstChild[node] as number; child !== NONE; child = nextSibling[child] as number) {
        if (!skipsDollar(trie, node, child)) copy(child);
      }
    } else {
      copy(node);
    }
  }
  const names = out.toArray();
  if (names.length !== count)
    throw new Error(`trie: the walk found ${names.length} names where the counts say ${count}`);
  afterWalk(trie, lastWalkVisited);
  return names;
}

/** How many stored names `pattern` matches, or -1 for an invalid pattern. */
export function countMatches(trie: JsTopicTrie, pattern: string): number {
  if (validatePattern(trie.dialect, pattern) !== null) return -1;
  const { nodes, length, rest } = reach(trie, pattern);
  let total = 0;
  for (let f = 0; f < length; f++)
    total += rest ? restCount(trie, nodes[f] as number) : trie.isName(nodes[f] as number) ? 1 : 0;
  afterWalk(trie, lastWalkVisited);
  return total;
}

/** Names the trailing wildcard takes below (and, in MQTT, at) `node`. */
function restCount(trie: JsTopicTrie, node: number): number {
  const names = trie.names[node] as number;
  if (trie.dialect.name !== 'mqtt') return names - (trie.isName(node) ? 1 : 0);
  return node === ROOT ? trie.size - trie.dollarNames : names;
}
