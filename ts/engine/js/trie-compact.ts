/**
 * Compaction of the js trie, mirroring `native/core/src/trie/compact.rs`: laying the nodes out
 * again in depth-first order, so that a walk reads a subtree from consecutive positions of each
 * typed array (and of `nodeText`) instead of one cache and TLB miss per node.
 *
 * Nodes are placed in order of creation, so the nodes of one tenant among a million names are spread
 * over the whole arrays: expanding such a tenant cost about 600 ns a name, where a linear scan costs
 * about 40 ns a name. After compaction a node's first child is the next position and a subtree is
 * one run of positions. Walks compact first when more than one in `SCATTERED_SHARE_DIVISOR` live
 * nodes were placed since the last compaction: a compaction costs the number of nodes and runs only
 * after that many placements, so it is amortized O(1) a placement. Name ids, child order and
 * therefore every answer stay the same; nothing outside the trie sees node positions.
 *
 * A compaction also records where each node's subtree ends and lists the names in that order
 * (`preorderTexts`, each node's first at `firstName`). Until a node is placed or freed, or a name
 * added or removed, inside it (`changed`, kept by trie.ts), a subtree is exactly the positions from
 * its node to that end and its names the run of `preorderTexts` from its first: a walk taking a
 * whole subtree copies that run instead of following links (a branch and a dependent load per node).
 * Subtrees changed since are walked by their links, as before.
 */
import type { JsTopicTrie } from './trie.js';
import { NONE, ROOT } from './trie-walk.js';

/** Walks compact the trie first when more than one in this many live nodes were placed since. */
const SCATTERED_SHARE_DIVISOR = 4;

/** Compacts when enough nodes were placed out of walk order since the last compaction. */
export function compactIfScattered(trie: JsTopicTrie): void {
  if (trie.placedSinceCompaction * SCATTERED_SHARE_DIVISOR > trie.liveNodes()) compact(trie);
}

/** The positions of every live node in depth-first pre-order, the root first. */
function preorder(trie: JsTopicTrie): Int32Array {
  const { firstChild, nextSibling, parent } = trie;
  const order = new Int32Array(trie.liveNodes());
  let at = 0;
  let node = ROOT;
  for (;;) {
    order[at++] = node;
    const first = firstChild[node] as number;
    if (first !== NONE) {
      node = first;
      continue;
    }
    // Up until a node with a next sibling; the walk ends back at the root.
    for (;;) {
      if (node === ROOT) return order;
      const next = nextSibling[node] as number;
      if (next !== NONE) {
        node = next;
        break;
      }
      node = parent[node] as number;
    }
  }
}

/**
 * Lays the nodes out in depth-first order (children in their list order) and drops freed positions.
 * The child Maps are kept and their values rewritten; `nameNodes` follows the moves.
 */
export function compact(trie: JsTopicTrie): void {
  const order = preorder(trie);
  const live = order.length;
  // Old position → new position, for rewriting the links.
  const moved = new Int32Array(trie.parent.length).fill(NONE);
  for (let at = 0; at < live; at++) moved[order[at] as number] = at;
  const relink = (link: number): number => (link === NONE ? NONE : (moved[link] as number));
  const capacity = trie.parent.length;
  const old = {
    parent: trie.parent,
    segment: trie.segment,
    names: trie.names,
    nodeName: trie.nodeName,
    firstChild: trie.firstChild,
    nextSibling: trie.nextSibling,
    prevSibling: trie.prevSibling,
    children: trie.children,
    nodeText: trie.nodeText,
  };
  const parent = new Int32Array(capacity);
  const segment = new Int32Array(capacity);
  const names = new Int32Array(capacity);
  const nodeName = new Int32Array(capacity);
  const firstChild = new Int32Array(capacity);
  const nextSibling = new Int32Array(capacity);
  const prevSibling = new Int32Array(capacity);
  const changed = new Uint8Array(capacity);
  const subtreeEnd = new Int32Array(capacity);
  const firstName = new Int32Array(capacity);
  const preorderTexts: string[] = [];
  const children: (Map<number, number> | undefined)[] = [];
  const nodeText: (string | undefined)[] = [];
  for (let at = 0; at < live; at++) {
    const from = order[at] as number;
    parent[at] = relink(old.parent[from] as number);
    segment[at] = old.segment[from] as number;
    names[at] = old.names[from] as number;
    nodeName[at] = old.nodeName[from] as number;
    firstChild[at] = relink(old.firstChild[from] as number);
    nextSibling[at] = relink(old.nextSibling[from] as number);
    prevSibling[at] = relink(old.prevSibling[from] as number);
    const map = old.children[from];
    if (map !== undefined) for (const [key, child] of map) map.set(key, moved[child] as number);
    children.push(map);
    const text = old.nodeText[from];
    nodeText.push(text);
    subtreeEnd[at] = at + 1;
    firstName[at] = preorderTexts.length;
    if (text !== undefined) preorderTexts.push(text);
  }
  // Pre-order: a subtree ends where its last descendant's does; children come after their parent.
  for (let at = live - 1; at > ROOT; at--) {
    const up = parent[at] as number;
    if ((subtreeEnd[at] as number) > (subtreeEnd[up] as number)) subtreeEnd[up] = subtreeEnd[at] as number;
  }
  trie.relaidOut(
    {
      parent,
      segment,
      names,
      nodeName,
      firstChild,
      nextSibling,
      prevSibling,
      changed,
      subtreeEnd,
      firstName,
      preorderTexts,
      children,
      nodeText,
    },
    moved,
  );
}
