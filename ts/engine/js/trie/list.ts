/**
 * Listing names page by page, mirroring `native/core/src/trie/list.rs`. Order: segment by segment,
 * segments compared by UTF-16 code units (JavaScript's `<`), a name before its extensions. A page
 * resumes strictly after a cursor name, which need not still exist; each visited node's children
 * are sorted when the page reaches them.
 */
import type { JsTopicTrie } from './trie.js';
import { childBySegment, NONE, ROOT } from './walk.js';

function compareSegments(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A node's children in list order and how many of them the page has taken. */
interface Frame {
  children: number[];
  taken: number;
}

function segmentText(trie: JsTopicTrie, node: number): string {
  return trie.segments.text(trie.segment[node] as number);
}

function sortedChildren(trie: JsTopicTrie, node: number): number[] {
  const children: number[] = [];
  const { firstChild, nextSibling } = trie;
  for (let c = firstChild[node] as number; c !== NONE; c = nextSibling[c] as number) children.push(c);
  return children.sort((a, b) => compareSegments(segmentText(trie, a), segmentText(trie, b)));
}

function child(trie: JsTopicTrie, node: number, text: string): number {
  const segment = trie.segments.get(text);
  return segment === undefined ? NONE : childBySegment(trie, node, segment);
}

/**
 * Compares a cursor with a prefix over the prefix's segments: negative when the cursor sorts before
 * every name under the prefix, positive after all of them, 0 when it starts with the prefix.
 */
function comparePaths(cursor: readonly string[], prefix: readonly string[]): number {
  for (let i = 0; i < prefix.length; i++) {
    const c = cursor[i];
    // A proper prefix of the prefix sorts before its extensions.
    if (c === undefined) return -1;
    const order = compareSegments(c, prefix[i] as string);
    if (order !== 0) return order;
  }
  return 0;
}

/** Sets up `frames` to continue strictly after the name `rest` continues from `top` with. */
function framesAfter(trie: JsTopicTrie, top: number, rest: readonly string[], frames: Frame[]): void {
  let node = top;
  for (const segment of rest) {
    const children = sortedChildren(trie, node);
    let from = 0;
    while (from < children.length && compareSegments(segmentText(trie, children[from] as number), segment) <= 0) from++;
    frames.push({ children, taken: from });
    const previous = children[from - 1];
    // The cursor is not stored: its later siblings are already in the frame.
    if (previous === undefined || segmentText(trie, previous) !== segment) return;
    node = previous;
  }
  // The cursor's own extensions come right after it.
  frames.push({ children: sortedChildren(trie, node), taken: 0 });
}

/**
 * Up to `limit` ids of names made of the whole segments of `prefix` and any others (`prefix` itself
 * included; all names when it is empty), in list order, strictly after `after` when given.
 */
export function listNames(
  trie: JsTopicTrie,
  prefix: string,
  limit: number,
  after: string | undefined,
): { ids: number[]; more: boolean } {
  const ids: number[] = [];
  const separator = trie.dialect.separator;
  const prefixSegments = prefix === '' ? [] : prefix.split(separator);
  let top = ROOT;
  for (const segment of prefixSegments) {
    top = child(trie, top, segment);
    if (top === NONE) return { ids, more: false };
  }
  const frames: Frame[] = [];
  const afterSegments = after === undefined ? [] : after.split(separator);
  const order = after === undefined ? -1 : comparePaths(afterSegments, prefixSegments);
  if (order > 0) return { ids, more: false };
  if (order < 0) {
    // No cursor, or one before every name under the prefix: from the beginning.
    if (top !== ROOT && trie.isName(top)) {
      if (limit === 0) return { ids, more: true };
      ids.push(trie.nodeName[top] as number);
    }
    frames.push({ children: sortedChildren(trie, top), taken: 0 });
  } else {
    framesAfter(trie, top, afterSegments.slice(prefixSegments.length), frames);
  }
  while (frames.length > 0) {
    const frame = frames[frames.length - 1] as Frame;
    const next = frame.children[frame.taken];
    if (next === undefined) {
      frames.pop();
      continue;
    }
    // Every node but the root holds at least one name, so one more follows.
    if (ids.length === limit) return { ids, more: true };
    frame.taken++;
    if (trie.isName(next)) ids.push(trie.nodeName[next] as number);
    if (trie.firstChild[next] !== NONE) frames.push({ children: sortedChildren(trie, next), taken: 0 });
  }
  return { ids, more: false };
}
