/**
 * A binary min-heap of objects in an order of the caller's: a key-shared POP's merge of bucket scans
 * (key-shared-progress.ts). The dispatcher's wake-ups keep their own heap in typed arrays (wakes.ts).
 */
export class MinHeap<T> {
  private items: T[] = [];

  /** `before(a, b)`: whether `a` comes out before `b` (a strict order). */
  constructor(private readonly before: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.items.length;
  }

  /** The first item, or undefined when empty. */
  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    const items = this.items;
    let i = items.length;
    items.push(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const above = items[parent] as T;
      if (!this.before(item, above)) break;
      items[i] = above;
      i = parent;
    }
    items[i] = item;
  }

  /** Removes and returns the first item, or undefined when empty. */
  pop(): T | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0) this.down(last as T, 0);
    return top;
  }

  /** Replaces the first item by `item` (often the first one, changed) and restores the order. */
  replaceTop(item: T): void {
    if (this.items.length === 0) this.items.push(item);
    else this.down(item, 0);
  }

  private down(item: T, from: number): void {
    const items = this.items;
    const n = items.length;
    let i = from;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      const right = child + 1;
      if (right < n && this.before(items[right] as T, items[child] as T)) child = right;
      const below = items[child] as T;
      if (!this.before(below, item)) break;
      items[i] = below;
      i = child;
    }
    items[i] = item;
  }
}
