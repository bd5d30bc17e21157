/**
 * Kept lists of the js trie, mirroring `native/core/src/trie/snapshot.rs`: the names of a subtree in
 * walk order, laid down by the first walk that takes the subtree whole and copied by later ones, so
 * that a trailing wildcard costs its answer however the nodes are placed in memory.
 *
 * A node's block is the names of its subtree in depth-first order, its own name first, then each
 * child's block in child order: `names[node]` entries. A walk that takes the whole subtree of a node
 * (the top) writes the top's block into a list of its own (texts and ids side by side) and records,
 * at every node it visits, where that node's block starts within its parent's block (`delta`). The
 * top then holds the list (`kept`); a node whose subtree has not changed since finds its block by
 * climbing to the nearest node holding a list and adding the deltas on the way.
 *
 * Changes mark their node and its ancestors `changed` (every ancestor of a changed node is changed,
 * so marking stops at the first one already marked). A walk whose top changed lays the top's block
 * down again: it follows the links only through changed nodes and copies the block of each
 * unchanged child from where it lies, so it costs the changed paths and the copy, not the subtree.
 * A list an unchanged child held is absorbed into the new one (its block now lies there), so lists
 * do not pile up: at most one per top walked, each the size of its subtree's answer.
 *
 * Lists hold ids and texts, not node positions, so compaction moves `delta`, `kept` and `changed`
 * with their nodes and keeps every list.
 */
import type { JsTopicTrie } from './trie.js';
import { NONE } from './walk.js';

/** One kept list: a block of names in walk order, as texts and as ids. */
export interface KeptList {
  texts: string[];
  ids: Int32Array;
}

/** Where a node's block lies: in list `list` of `trie.keptLists`, from `offset`. */
interface Location {
  list: number;
  offset: number;
}

/**
 * Where the block of `node`, which has not changed since it was laid down, lies: the list of the
 * nearest node (itself or an ancestor) holding one, at the sum of the deltas on the way up.
 */
function locate(trie: JsTopicTrie, node: number): Location {
  const { kept, delta, parent } = trie;
  let offset = 0;
  let at = node;
  for (;;) {
    const list = kept[at] as number;
    if (list !== NONE) return { list, offset };
    offset += delta[at] as number;
    at = parent[at] as number;
    // Only a node never laid down lies nowhere; its children were all placed after it, so none is
    // unchanged and its old location is never read.
    if (at === NONE) return { list: NONE, offset: 0 };
  }
}

/**
 * The kept list holding the block of `node` and where the block starts, laying it down first when
 * the subtree changed since.
 */
export function blockOf(trie: JsTopicTrie, node: number): { list: KeptList; offset: number } {
  if (trie.changed[node] !== 0) layDown(trie, node);
  const { list, offset } = locate(trie, node);
  const kept = trie.keptLists[list];
  if (kept === undefined) throw new Error('trie: an unchanged node lies in no kept list');
  return { list: kept, offset };
}

/** Scratch stacks of `layDown`, one entry per level of the walk, shared (walks never nest). */
let nodeStack = new Int32Array(64);
/** Where each level's node's block starts in the new list. */
let startStack = new Int32Array(64);
/** Where each level's node's old block lay (list, offset): valid only for a node laid down before. */
let oldListStack = new Int32Array(64);
let oldOffsetStack = new Int32Array(64);

function grownStacks(): void {
  const grow = (old: Int32Array<ArrayBuffer>): Int32Array<ArrayBuffer> => {
    const next = new Int32Array(old.length * 2);
    next.set(old);
    return next;
  };
  nodeStack = grow(nodeStack);
  startStack = grow(startStack);
  oldListStack = grow(oldListStack);
  oldOffsetStack = grow(oldOffsetStack);
}

/**
 * Lays the block of the changed node `top` down into a new list that `top` then holds: the names
 * of changed nodes from the nodes, the blocks of unchanged children copied from their lists. Every
 * node visited becomes unchanged; the lists of visited or copied nodes (the top's previous one
 * included) are freed once the copies are done.
 */
function layDown(trie: JsTopicTrie, top: number): void {
  const { names, nodeName, nodeText, firstChild, nextSibling, changed, delta, kept } = trie;
  const size = names[top] as number;
  const texts = new Array<string>(size);
  const ids = new Int32Array(size);
  const freed: number[] = [];
  let at = 0;
  let depth = 0;
  // Enters a changed node: its old location from its parent's (read before its delta is rewritten)
  // or its own list, its start, and its own name.
  const enter = (node: number, parentDepth: number): void => {
    if (depth === nodeStack.length) grownStacks();
    const ownList = kept[node] as number;
    if (ownList !== NONE) {
      oldListStack[depth] = ownList;
      oldOffsetStack[depth] = 0;
      freed.push(ownList);
      kept[node] = NONE;
    } else if (parentDepth >= 0) {
      oldListStack[depth] = oldListStack[parentDepth] as number;
      oldOffsetStack[depth] = (oldOffsetStack[parentDepth] as number) + (delta[node] as number);
    } else {
      // The top's old block lies where its ancestors' deltas lead (changes rewrite no delta).
      const old = locate(trie, node);
      oldListStack[depth] = old.list;
      oldOffsetStack[depth] = old.offset;
    }
    if (parentDepth >= 0) delta[node] = at - (startStack[parentDepth] as number);
    nodeStack[depth] = node;
    startStack[depth] = at;
    changed[node] = 0;
    const id = nodeName[node] as number;
    if (id !== NONE) {
      texts[at] = nodeText[node] as string;
      ids[at] = id;
      at++;
    }
    depth++;
  };
  // Unchanged blocks lying one after another in the same list are copied as one run.
  let runList = NONE;
  let runOffset = 0;
  let runCount = 0;
  const flush = (): void => {
    if (runCount === 0) return;
    const source = trie.keptLists[runList] as KeptList;
    for (let k = 0; k < runCount; k++) texts[at + k] = source.texts[runOffset + k] as string;
    ids.set(source.ids.subarray(runOffset, runOffset + runCount), at);
    at += runCount;
    runCount = 0;
  };
  enter(top, -1);
  // The child to visit next at each level is found from the last one visited: a changed child is
  // entered (one level down); an unchanged one is copied whole and the walk goes on to its sibling.
  let child = firstChild[top] as number;
  while (depth > 0) {
    if (child === NONE) {
      // This level is done: back to the parent, at the sibling after this node.
      depth--;
      if (depth === 0) break;
      child = nextSibling[nodeStack[depth] as number] as number;
      continue;
    }
    const level = depth - 1;
    if (changed[child] !== 0) {
      flush();
      enter(child, level);
      child = firstChild[child] as number;
      continue;
    }
    // Unchanged: its block lies in its own list, or in its parent's old block at its delta.
    const count = names[child] as number;
    let list = kept[child] as number;
    let offset = 0;
    if (list !== NONE) {
      freed.push(list);
      kept[child] = NONE;
    } else {
      list = oldListStack[level] as number;
      offset = (oldOffsetStack[level] as number) + (delta[child] as number);
    }
    delta[child] = at + runCount - (startStack[level] as number);
    if (runCount > 0 && runList === list && runOffset + runCount === offset) {
      runCount += count;
    } else {
      flush();
      runList = list;
      runOffset = offset;
      runCount = count;
    }
    child = nextSibling[child] as number;
  }
  flush();
  if (at !== size) throw new Error(`trie: laid down ${at} names where the counts say ${size}`);
  for (const list of freed) trie.freeKeptList(list);
  kept[top] = trie.keepList({ texts, ids });
}
