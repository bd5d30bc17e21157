/**
 * Segment strings interned to dense ids, reference-counted by the edges that use them, so segments of
 * removed patterns or names are forgotten and their ids reused. Shared by the pattern index and the
 * topic-name trie. Mirrors `native/core/src/interner.rs`.
 */
export class Interner {
  private readonly ids = new Map<string, number>();
  private readonly strings: string[] = [];
  private readonly uses: number[] = [];
  private readonly free: number[] = [];

  get(segment: string): number | undefined {
    return this.ids.get(segment);
  }

  /** Returns the id of `segment`, interning it if new, and counts one more use. */
  acquire(segment: string): number {
    const known = this.ids.get(segment);
    if (known !== undefined) {
      this.uses[known] = (this.uses[known] as number) + 1;
      return known;
    }
    const id = this.free.pop() ?? this.strings.length;
    this.strings[id] = segment;
    this.uses[id] = 1;
    this.ids.set(segment, id);
    return id;
  }

  /** Counts one use fewer; forgets the segment when none remain. */
  release(id: number): void {
    const left = (this.uses[id] as number) - 1;
    this.uses[id] = left;
    if (left === 0) {
      this.ids.delete(this.strings[id] as string);
      this.strings[id] = '';
      this.free.push(id);
    }
  }

  /** The string of a live id. */
  text(id: number): string {
    return this.strings[id] as string;
  }

  get size(): number {
    return this.ids.size;
  }

  /** A rough figure: strings as UTF-16 plus map and array slots. */
  approximateBytes(): number {
    let chars = 0;
    for (const s of this.strings) chars += s.length;
    return chars * 2 + this.ids.size * 40 + this.strings.length * 24;
  }
}
