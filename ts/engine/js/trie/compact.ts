/**
 * Compaction of the js trie, mirroring `native/core/src/trie/compact.rs`: laying the nodes out
 * again in depth-first order, so that a walk reads a subtree from consecutive positions of each
 * typed array (and of `nodeText`) instead of one cache and TLB miss per node.
 *
 * Nodes are placed in order of creation, so the nodes of one tenant among a million names are spread
 * over the whole arrays: a walk down through them costs a cache and TLB miss per node. After
 * compaction a node's first child is the next position and a subtree is one run of positions. A
 * trailing wildcard does not need it (its answers come from kept lists, snapshot.ts), but walks
 * through many nodes (`*__*__*__code`) do. Compaction costs a pass over every node, so a walk
 * compacts first only when more than one in `SCATTERED_SHARE_DIVISOR` live nodes were placed since
 * the last compaction and the walks since have visited as many nodes as are live: the scattered
 * walking has then cost about what the compaction costs, and it never comes before the first walks
 * after a bulk of adds. Name ids, child order, kept lists and therefore every answer stay the same;
 * `changed`, `key` and `kept` move with their nodes, and the records and key maps of edits.ts follow.
 */
import type { JsTopicTrie } from './trie.js';
import { NONE, nextAfterSubtree, ROOT } from './walk.js';

/** Walks compact the trie first when more than one in this many live nodes were placed since. */
const SCATTERED_SHARE_DIVISOR = 4;

/**
 * Compacts when enough nodes were placed out of walk order since the last compaction, and the walks
 * since have visited at least as many nodes on their way down as are live: a compaction costs about
 * a walk over every node, so it waits until walking the scattered nodes has cost as much (a trie
 * only added to and expanded under `**` is never laid out again: its answers come from kept lists).
 */
export function compactIfScattered(trie: JsTopicTrie): void {
  const live = trie.liveNodes();
  if (trie.placedSinceCompaction * SCATTERED_SHARE_DIVISOR > live && trie.walkedSinceCompaction >= live) compact(trie);
}

/** The positions of every live node in depth-first pre-order, the root first. */
function preorder(trie: JsTopicTrie): Int32Array {
  const { firstChild } = trie;
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
    node = nextAfterSubtree(trie, node, ROOT);
    if (node === NONE) return order;
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
  // Rewrites one child Map entry in place (`forEach`, unlike `for…of`, makes no entry arrays).
  const remap = (child: number, segment: number, map: Map<number, number>): void => {
    map.set(segment, moved[child] as number);
  };
  const capacity = trie.parent.length;
  // One array at a time, read in order and written at each node's new position: one array of a
  // million-name trie fits the caches and TLB where all of them together do not, and writes to
  // scattered positions do not stall the way scattered reads do (gathering every field of a node at
  // once from its old position took several seconds for a million names).
  const gather = (source: Int32Array, links: boolean): Int32Array<ArrayBuffer> => {
    const target = new Int32Array(capacity);
    for (let from = 0; from < capacity; from++) {
      const to = moved[from] as number;
      if (to === NONE) continue;
      const value = source[from] as number;
      target[to] = links && value !== NONE ? (moved[value] as number) : value;
    }
    return target;
  };
  const parent = gather(trie.parent, true);
  const segment = gather(trie.segment, false);
  const names = gather(trie.names, false);
  const nodeName = gather(trie.nodeName, false);
  const firstChild = gather(trie.firstChild, true);
  const nextSibling = gather(trie.nextSibling, true);
  const prevSibling = gather(trie.prevSibling, true);
  const key = gather(trie.key, false);
  const kept = gather(trie.kept, false);
  const changed = new Uint8Array(capacity);
  for (let from = 0; from < capacity; from++) {
    const to = moved[from] as number;
    if (to !== NONE) changed[to] = trie.changed[from] as number;
  }
  const children: (Map<number, number> | undefined)[] = [];
  for (let at = 0; at < live; at++) {
    const map = trie.children[order[at] as number];
    if (map !== undefined) map.forEach(remap);
    children.push(map);
  }
  const nodeText: (string | undefined)[] = [];
  for (let at = 0; at < live; at++) nodeText.push(trie.nodeText[order[at] as number]);
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
      key,
      kept,
      children,
      nodeText,
    },
    moved,
  );
}
