/**
 * Pattern walks over the js trie, mirroring `native/core/src/trie/walk.rs`: level by level, a
 * literal token is one edge lookup, the one-segment wildcard takes each child, and the trailing
 * wildcard takes a whole subtree without matching any name (counted in O(1) from the per-node name
 * counts). The order of levels and children is Rust's, so both engines return names in the same
 * order. (Rust also lays its nodes out again in walk order now and then, compact.rs; the js engine
 * keeps creation order, which changes its speed, not its answers.)
 */
import { validatePattern } from './dialect.js';
import { tokenize } from './pattern.js';
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
const SCANNED_CHILDREN = 8;

/** The child of `node` along segment id `segment`, or `NONE`. */
function childBySegment(trie: JsTopicTrie, node: number, segment: number): number {
  const { segment: segments, nextSibling } = trie;
  let child = trie.firstChild[node] as number;
  for (let scanned = 0; scanned < SCANNED_CHILDREN; scanned++) {
    if (child === NONE || segments[child] === segment) return child;
    child = nextSibling[child] as number;
  }
  return child === NONE ? NONE : (trie.children[node]?.get(segment) ?? NONE);
}

/** Appends the children of `node` to `out` last to first, but for those MQTT's `$` rule skips. */
function pushChildrenReversed(trie: JsTopicTrie, node: number, out: number[]): void {
  const first = trie.firstChild[node] as number;
  if (first === NONE) return;
  const { prevSibling } = trie;
  // The first child's previous link is the last child.
  for (let child = prevSibling[first] as number; ; child = prevSibling[child] as number) {
    if (!skipsDollar(trie, node, child)) out.push(child);
    if (child === first) return;
  }
}

/** What the tokens before a trailing wildcard reach, in walk order, and whether one follows. */
interface Reached {
  frontier: number[];
  rest: boolean;
}

/**
 * Follows the tokens of a valid pattern down from the root level by level, as Rust does: a literal
 * replaces each node by its child along that segment, the one-segment wildcard by its children last
 * to first (so they come out last child first). Stops before a trailing wildcard.
 */
function reach(trie: JsTopicTrie, pattern: string): Reached {
  const tokens = tokenize(pattern, trie.dialect);
  let frontier: number[] = trie.size > 0 ? [ROOT] : [];
  for (const token of tokens) {
    if (token.kind === 'rest') return { frontier, rest: true };
    const next: number[] = [];
    if (token.kind === 'literal') {
      const segment = trie.segments.get(token.text);
      if (segment === undefined) return { frontier: next, rest: false };
      for (const node of frontier) {
        const child = childBySegment(trie, node, segment);
        if (child !== NONE) next.push(child);
      }
    } else {
      for (const node of frontier) pushChildrenReversed(trie, node, next);
    }
    frontier = next;
    if (frontier.length === 0) break;
  }
  return { frontier, rest: false };
}

/**
 * Appends the id of every name in the subtree of `top`, `top` included, depth first, children in
 * order. Follows the parent and sibling links instead of keeping a stack, as Rust does (an MQTT
 * name can be tens of thousands of levels deep, too deep to recurse).
 */
function collectSubtree(trie: JsTopicTrie, top: number, out: number[]): void {
  const { nodeName, firstChild, nextSibling, parent } = trie;
  let node = top;
  for (;;) {
    const id = nodeName[node] as number;
    if (id !== NONE) out.push(id);
    const first = firstChild[node] as number;
    if (first !== NONE) {
      node = first;
      continue;
    }
    for (;;) {
      if (node === top) return;
      const next = nextSibling[node] as number;
      if (next !== NONE) {
        node = next;
        break;
      }
      node = parent[node] as number;
    }
  }
}

/** The ids of every stored name `pattern` matches, or null for an invalid pattern. */
export function expandIds(trie: JsTopicTrie, pattern: string): number[] | null {
  if (validatePattern(trie.dialect, pattern) !== null) return null;
  const { frontier, rest } = reach(trie, pattern);
  const out: number[] = [];
  const { nodeName, firstChild, nextSibling } = trie;
  for (const node of frontier) {
    if (!rest) {
      const id = nodeName[node] as number;
      if (id !== NONE) out.push(id);
    } else if (trie.dialect.name === 'mqtt' && node !== ROOT) {
      // MQTT's `#` also matches the parent level: the node itself.
      collectSubtree(trie, node, out);
    } else {
      for (let child = firstChild[node] as number; child !== NONE; child = nextSibling[child] as number) {
        if (!skipsDollar(trie, node, child)) collectSubtree(trie, child, out);
      }
    }
  }
  return out;
}

/**
 * The names `expandIds` would return the ids of, in the same order, or null for an invalid
 * pattern: each id's text, kept since `add`, so a name costs an array read.
 */
export function expandNames(trie: JsTopicTrie, pattern: string): string[] | null {
  const ids = expandIds(trie, pattern);
  if (ids === null) return null;
  const { nameText } = trie;
  const out = new Array<string>(ids.length);
  for (let i = 0; i < ids.length; i++) out[i] = nameText[ids[i] as number] as string;
  return out;
}

/** How many stored names `pattern` matches, or -1 for an invalid pattern. */
export function countMatches(trie: JsTopicTrie, pattern: string): number {
  if (validatePattern(trie.dialect, pattern) !== null) return -1;
  const { frontier, rest } = reach(trie, pattern);
  let total = 0;
  for (const node of frontier) total += rest ? restCount(trie, node) : trie.isName(node) ? 1 : 0;
  return total;
}

/** Names the trailing wildcard takes below (and, in MQTT, at) `node`. */
function restCount(trie: JsTopicTrie, node: number): number {
  const names = trie.names[node] as number;
  if (trie.dialect.name !== 'mqtt') return names - (trie.isName(node) ? 1 : 0);
  return node === ROOT ? trie.size - trie.dollarNames : names;
}
