/**
 * Compaction of the js trie, mirroring `native/core/src/trie/compact.rs`: laying the nodes out
 * again in depth-first order, so that a walk reads a subtree from consecutive positions of each
 * typed array (and of `nodeText`) instead of one cache and TLB miss per node.
 *
 * Nodes are placed in order of creation, so the nodes of one tenant among a million names are spread
 * over the whole arrays: a walk down through them costs a cache and TLB miss per node. After
 * compaction a node's first child is the next position and a subtree is one run of positions. A
 * trailing wildcard does not need it (its answers come from kept lists, snapshot.ts), but walks
 * through many nodes (`*__*__*__code`) do. A compaction costs a pass over every node, so a pass
 * starts only when more than one in `SCATTERED_SHARE_DIVISOR` live nodes were placed since the
 * last one and the walks since have visited as many nodes on their way down as are live: the
 * scattered walking has then cost about what the pass costs, and it never comes before the first
 * walks after a bulk of adds. The pass is done in steps, one after each walk in proportion to the
 * nodes the walk visited (`STEP_WORK_PER_VISIT`), so no walk holds the event loop for a visit of
 * every node and a walk down a few nodes pays next to nothing: a cursor follows the nodes in
 * depth-first order and swaps the next one into the next position.
 * Each move relinks the node's neighbours, children, parent's Map entry, name and records, so the
 * trie is whole between steps and names come and go between them as they please. Name ids, child
 * order, kept lists and therefore every answer stay the same; `changed`, `key` and `kept` move with
 * their nodes.
 */
import { LISTED } from './edits.js';
import type { JsTopicTrie } from './trie.js';
import { NONE, ROOT } from './walk.js';

/** A pass starts when more than one in this many live nodes were placed since the last one. */
const SCATTERED_SHARE_DIVISOR = 4;
/**
 * A walk that visited `v` nodes on its way down then takes a step of the pass of at most
 * `v * STEP_WORK_PER_VISIT` work (a node placed counts one, each node moved and child relinked one
 * more), as in Rust: the step costs about what the walk did, whatever the size of the trie. A
 * quarter where Rust has one: a move here writes a dozen parallel arrays at two positions each (a
 * cache miss apiece) where Rust writes one node, so a unit of work costs about four visits of a
 * walk, which reads two arrays a node.
 */
const STEP_WORK_PER_VISIT = 0.25;

/**
 * Called by every walk once its answer is out (node positions may change after): counts its
 * visits, starts a pass when enough nodes were placed out of walk order since the last and walks
 * have visited as many nodes since, and takes a step of the pass under way in proportion to the
 * walk's visits.
 */
export function afterWalk(trie: JsTopicTrie, visited: number): void {
  trie.walkedSinceCompaction += visited;
  if (trie.compactionLast === NONE) {
    const live = trie.liveNodes();
    if (trie.placedSinceCompaction * SCATTERED_SHARE_DIVISOR <= live || trie.walkedSinceCompaction < live) return;
    startCompaction(trie);
  }
  compactionStep(trie, Math.floor(visited * STEP_WORK_PER_VISIT));
}

/**
 * Lays every node out in depth-first order and drops freed positions in one pass, after finishing a
 * pass under way (changes since it started may have left gaps behind it).
 */
export function compact(trie: JsTopicTrie): void {
  compactionStep(trie, Number.POSITIVE_INFINITY);
  startCompaction(trie);
  compactionStep(trie, Number.POSITIVE_INFINITY);
}

/** Takes a step of at most `budget`, starting a pass if none is under way: for tests. */
export function compactPartly(trie: JsTopicTrie, budget: number): void {
  if (trie.compactionLast === NONE) startCompaction(trie);
  compactionStep(trie, budget);
}

function startCompaction(trie: JsTopicTrie): void {
  trie.compactionLast = ROOT;
  trie.compactionNext = 1;
  trie.placedSinceCompaction = 0;
  trie.walkedSinceCompaction = 0;
}

function compactionStep(trie: JsTopicTrie, budget: number): void {
  if (trie.compactionLast === NONE) return;
  let last = trie.compactionLast;
  let work = 0;
  while (work < budget) {
    const node = preorderSuccessor(trie, last);
    if (node === NONE) {
      finishCompaction(trie);
      return;
    }
    const to = trie.compactionNext;
    work++;
    if (node !== to) work += swapInto(trie, node, to);
    last = to;
    trie.compactionNext = to + 1;
  }
  trie.compactionLast = last;
}

/** The node after `node` in depth-first pre-order, `NONE` after the last. */
export function preorderSuccessor(trie: JsTopicTrie, node: number): number {
  const first = trie.firstChild[node] as number;
  if (first !== NONE) return first;
  const { nextSibling, parent } = trie;
  for (let at = node; at !== ROOT; at = parent[at] as number) {
    const next = nextSibling[at] as number;
    if (next !== NONE) return next;
  }
  return NONE;
}

/**
 * Keeps the cursor of a pass under way on a live node when `node`, which has no children, is about
 * to be freed: the pass goes on from the node before it (its previous sibling's last descendant,
 * or its parent when it is the first child).
 */
export function beforeFreeingNode(trie: JsTopicTrie, node: number): void {
  if (trie.compactionLast !== node) return;
  const parent = trie.parent[node] as number;
  if (trie.firstChild[parent] === node) {
    trie.compactionLast = parent;
    return;
  }
  let last = trie.prevSibling[node] as number;
  for (let first = trie.firstChild[last] as number; first !== NONE; first = trie.firstChild[last] as number) {
    last = trie.prevSibling[first] as number;
  }
  trie.compactionLast = last;
}

/**
 * Puts `node` at position `to`: into it when free, else swapping places with the node there
 * (through a spare position at the end). Returns the work done: moves and children relinked.
 */
function swapInto(trie: JsTopicTrie, node: number, to: number): number {
  if (to === trie.nodeCount) {
    // Nodes the pass placed were freed since, and new ones took their positions: `to` is past the others.
    trie.freeNodes.push(trie.spareNode());
  }
  if (trie.isFreeNode(to)) {
    // Its entry in the free list goes stale; `node`'s old position takes its place.
    trie.staleFreeNodes++;
    const relinked = moveNode(trie, node, to);
    trie.freeNodes.push(node);
    return relinked;
  }
  const spare = trie.spareNode();
  let relinked = moveNode(trie, node, spare);
  relinked += moveNode(trie, to, node);
  relinked += moveNode(trie, spare, to);
  trie.dropSpareNode();
  return relinked;
}

/**
 * Moves the node at `from` to the unused position `to` and frees `from`: rewrites the links to it
 * (parent, siblings, children, the parent's Map), its name's node and its records. Returns the
 * work done: one, and one per child relinked.
 */
function moveNode(trie: JsTopicTrie, from: number, to: number): number {
  const parent = trie.parent[from] as number;
  const first = trie.firstChild[from] as number;
  const next = trie.nextSibling[from] as number;
  const prev = trie.prevSibling[from] as number;
  const segment = trie.segment[from] as number;
  const name = trie.nodeName[from] as number;
  const flags = trie.changed[from] as number;
  trie.parent[to] = parent;
  trie.segment[to] = segment;
  trie.names[to] = trie.names[from] as number;
  trie.nodeName[to] = name;
  trie.firstChild[to] = first;
  trie.nextSibling[to] = next;
  trie.prevSibling[to] = prev;
  trie.changed[to] = flags;
  trie.key[to] = trie.key[from] as number;
  trie.kept[to] = trie.kept[from] as number;
  trie.children[to] = trie.children[from];
  trie.nodeText[to] = trie.nodeText[from];
  trie.parent[from] = NONE;
  trie.children[from] = undefined;
  trie.nodeText[from] = undefined;
  trie.kept[from] = NONE;
  trie.nodeName[from] = NONE;
  if (trie.firstChild[parent] === from) trie.firstChild[parent] = to;
  else trie.nextSibling[prev] = to;
  // The last child: the first child's `prevSibling` points at it (itself when alone).
  if (next !== NONE) trie.prevSibling[next] = to;
  else trie.prevSibling[trie.firstChild[parent] as number] = to;
  trie.children[parent]?.set(segment, to);
  let relinked = 1;
  for (let child = first; child !== NONE; child = trie.nextSibling[child] as number) {
    trie.parent[child] = to;
    relinked++;
  }
  if (name !== NONE) trie.nameMoved(name, to);
  const record = trie.edits.get(from);
  if (record !== undefined) {
    trie.edits.delete(from);
    trie.edits.set(to, record);
  }
  const map = trie.keyMaps.get(from);
  if (map !== undefined) {
    trie.keyMaps.delete(from);
    trie.keyMaps.set(to, map);
  }
  if ((flags & LISTED) !== 0) {
    const entry = trie.edits.get(parent)?.children.find((e) => e.node === from);
    if (entry === undefined) throw new Error("trie: a listed node has no entry in its parent's record");
    entry.node = to;
  }
  return relinked;
}

/** Ends a pass: drops the freed positions past the last live node and the free list's stale entries. */
function finishCompaction(trie: JsTopicTrie): void {
  trie.compactionLast = NONE;
  trie.dropTrailingFreeNodes();
}
