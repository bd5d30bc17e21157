/**
 * The child lists of the js trie, mirroring `native/core/src/trie/nodes.rs`: first child, next and
 * previous sibling links, where the first child's previous link is the last child, so an append and
 * an unlink are O(1) and children stay in order of creation (the order both engines walk in).
 */

import type { JsTopicTrie } from './trie.js';
import { NONE } from './walk.js';

/** Appends `child` to `parent`'s child list. */
export function linkLast(trie: JsTopicTrie, parent: number, child: number): void {
  const first = trie.firstChild[parent] as number;
  if (first === NONE) {
    trie.firstChild[parent] = child;
    trie.prevSibling[child] = child;
    return;
  }
  const last = trie.prevSibling[first] as number;
  trie.nextSibling[last] = child;
  trie.prevSibling[child] = last;
  trie.prevSibling[first] = child;
}

/** Takes `child` out of its parent's child list. */
export function unlink(trie: JsTopicTrie, child: number): void {
  const parent = trie.parent[child] as number;
  const next = trie.nextSibling[child] as number;
  const prev = trie.prevSibling[child] as number;
  const first = trie.firstChild[parent] as number;
  if (first === child) {
    trie.firstChild[parent] = next;
    if (next !== NONE) trie.prevSibling[next] = prev;
  } else {
    trie.nextSibling[prev] = next;
    trie.prevSibling[next === NONE ? first : next] = prev;
  }
}
