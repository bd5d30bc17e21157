/**
 * Pattern walks over the js trie, mirroring `native/core/src/trie/walk.rs`: a literal token is one
 * edge lookup, the one-segment wildcard takes each child, and the trailing wildcard takes a whole
 * subtree without matching any name (counted in O(1) from the per-node name counts). The stack
 * discipline and child order are Rust's, so both engines return names in the same order.
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
  const map = trie.children[node];
  if (map === undefined) return;
  if (token.kind === 'literal') {
    const child = segment === NONE ? undefined : map.get(segment);
    if (child !== undefined) stack.push(child, next);
    return;
  }
  for (const child of map.values()) if (!skipsDollar(trie, node, child)) stack.push(child, next);
}

/** Appends every name in the subtree of `top`, `top` included, depth first, children in order. */
function collectSubtree(trie: JsTopicTrie, top: number, out: number[]): void {
  if (trie.isName(top)) out.push(top);
  const first = trie.children[top];
  if (first === undefined) return;
  // Iterators, not recursion: an MQTT name can be tens of thousands of levels deep.
  const iterators: Iterator<number>[] = [first.values()];
  while (iterators.length > 0) {
    const step = (iterators[iterators.length - 1] as Iterator<number>).next();
    if (step.done === true) {
      iterators.pop();
      continue;
    }
    const node = step.value;
    if (trie.isName(node)) out.push(node);
    const map = trie.children[node];
    if (map !== undefined) iterators.push(map.values());
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
      if (trie.isName(node)) out.push(node);
    } else if (token.kind !== 'rest') {
      pushNext(trie, node, token, literals[at] as number, at + 1, stack);
    } else if (trie.dialect.name === 'mqtt' && node !== ROOT) {
      // MQTT's `#` also matches the parent level: the node itself.
      collectSubtree(trie, node, out);
    } else {
      const map = trie.children[node];
      if (map !== undefined) {
        for (const child of map.values()) if (!skipsDollar(trie, node, child)) collectSubtree(trie, child, out);
      }
    }
  }
  return out;
}

/**
 * `collectSubtree`, handing out names instead of ids: each written as the walk reaches it, from the
 * text of its parent and its own segment, rather than rebuilt from parent links afterwards. `path`
 * is the text of `top`.
 */
function collectSubtreeNames(trie: JsTopicTrie, top: number, path: string, out: string[]): void {
  if (trie.isName(top)) out.push(path);
  const first = trie.children[top];
  if (first === undefined) return;
  const separator = trie.dialect.separator;
  const iterators: Iterator<number>[] = [first.values()];
  /** The text of the node whose children each iterator runs over. */
  const prefixes: string[] = [path];
  while (iterators.length > 0) {
    const step = (iterators[iterators.length - 1] as Iterator<number>).next();
    if (step.done === true) {
      iterators.pop();
      prefixes.pop();
      continue;
    }
    const node = step.value;
    const text = `${prefixes[prefixes.length - 1] as string}${separator}${trie.segments.text(trie.segment[node] as number)}`;
    if (trie.isName(node)) out.push(text);
    const map = trie.children[node];
    if (map !== undefined) {
      iterators.push(map.values());
      prefixes.push(text);
    }
  }
}

/**
 * The names `expandIds` would return the ids of, in the same order, or null for an invalid
 * pattern. The walk keeps the text of each level as it goes down (a node on the stack with token
 * index `at` is `at` levels deep), so a name costs one concatenation instead of a walk up its parents.
 */
export function expandNames(trie: JsTopicTrie, pattern: string): string[] | null {
  if (validatePattern(trie.dialect, pattern) !== null) return null;
  const tokens = tokenize(pattern, trie.dialect);
  const literals = literalIds(trie, tokens);
  const separator = trie.dialect.separator;
  const out: string[] = [];
  /** `paths[d]`: the text of the node last reached at depth d (the root's is empty). */
  const paths: string[] = [''];
  const stack: number[] = trie.size > 0 ? [ROOT, 0] : [];
  while (stack.length > 0) {
    const at = stack.pop() as number;
    const node = stack.pop() as number;
    if (at > 0) {
      const text = trie.segments.text(trie.segment[node] as number);
      paths[at] = at === 1 ? text : `${paths[at - 1] as string}${separator}${text}`;
    }
    const path = paths[at] as string;
    const token = tokens[at];
    if (token === undefined) {
      if (trie.isName(node)) out.push(path);
    } else if (token.kind !== 'rest') {
      pushNext(trie, node, token, literals[at] as number, at + 1, stack);
    } else if (trie.dialect.name === 'mqtt' && node !== ROOT) {
      // MQTT's `#` also matches the parent level: the node itself.
      collectSubtreeNames(trie, node, path, out);
    } else {
      const map = trie.children[node];
      if (map !== undefined) {
        for (const child of map.values()) {
          if (skipsDollar(trie, node, child)) continue;
          const text = trie.segments.text(trie.segment[child] as number);
          collectSubtreeNames(trie, child, node === ROOT ? text : `${path}${separator}${text}`, out);
        }
      }
    }
  }
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
