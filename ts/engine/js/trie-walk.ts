/**
 * Pattern walks over the js trie, mirroring `native/core/src/trie/walk.rs`: a literal token is one
 * edge lookup, the one-segment wildcard takes each child, and the trailing wildcard takes a whole
 * subtree without matching any name (counted in O(1) from the per-node name counts). The stack
 * discipline and child order are Rust's, so both engines return names in the same order. (Rust also
 * lays its nodes out again in walk order now and then, compact.rs; the js engine keeps creation order,
 * which changes its speed, not its answers.)
 */
import { validatePattern } from './dialect.js';
import { type Token, tokenize } from './pattern.js';
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
 * The segment id of each literal token, looked up once per walk instead of once per node (`NONE`
 * for a segment no name has, and for wildcards).
 */
function literalIds(trie: JsTopicTrie, tokens: readonly Token[]): number[] {
  return tokens.map((token) => (token.kind === 'literal' ? (trie.segments.get(token.text) ?? NONE) : NONE));
}

/** Pushes (node, next token) pairs: the literal's child, or every child for the one-segment wildcard. */
function pushNext(trie: JsTopicTrie, node: number, token: Token, segment: number, next: number, stack: number[]): void {
  if (token.kind === 'literal') {
    const child = segment === NONE ? undefined : trie.children[node]?.get(segment);
    if (child !== undefined) stack.push(child, next);
    return;
  }
  const { nextSibling } = trie;
  for (let child = trie.firstChild[node] as number; child !== NONE; child = nextSibling[child] as number) {
    if (!skipsDollar(trie, node, child)) stack.push(child, next);
  }
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
  const tokens = tokenize(pattern, trie.dialect);
  const literals = literalIds(trie, tokens);
  const out: number[] = [];
  const stack: number[] = trie.size > 0 ? [ROOT, 0] : [];
  while (stack.length > 0) {
    const at = stack.pop() as number;
    const node = stack.pop() as number;
    const token = tokens[at];
    if (token === undefined) {
      if (trie.isName(node)) out.push(trie.nodeName[node] as number);
    } else if (token.kind !== 'rest') {
      pushNext(trie, node, token, literals[at] as number, at + 1, stack);
    } else if (trie.dialect.name === 'mqtt' && node !== ROOT) {
      // MQTT's `#` also matches the parent level: the node itself.
      collectSubtree(trie, node, out);
    } else {
      const { nextSibling } = trie;
      for (let child = trie.firstChild[node] as number; child !== NONE; child = nextSibling[child] as number) {
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
  const tokens = tokenize(pattern, trie.dialect);
  const literals = literalIds(trie, tokens);
  const stack: number[] = trie.size > 0 ? [ROOT, 0] : [];
  let total = 0;
  while (stack.length > 0) {
    const at = stack.pop() as number;
    const node = stack.pop() as number;
    const token = tokens[at];
    if (token === undefined) total += trie.isName(node) ? 1 : 0;
    else if (token.kind !== 'rest') pushNext(trie, node, token, literals[at] as number, at + 1, stack);
    else total += restCount(trie, node);
  }
  return total;
}

/** Names the trailing wildcard takes below (and, in MQTT, at) `node`. */
function restCount(trie: JsTopicTrie, node: number): number {
  const names = trie.names[node] as number;
  if (trie.dialect.name !== 'mqtt') return names - (trie.isName(node) ? 1 : 0);
  return node === ROOT ? trie.size - trie.dollarNames : names;
}
