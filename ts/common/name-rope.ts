/**
 * Lists of names kept as ropes: a list is a sequence of immutable chunks, and a list built from runs
 * of others shares their whole chunks instead of copying them. The trie's kept lists (the js engine's
 * and the native adapter's copies) are built this way, so laying a changed subtree down again costs
 * its runs and changed names, and an expand, changed or not, one copy of its answer. Both engines use
 * it, so it lives beside them.
 *
 * Chunks never leave a rope: an answer is always a new array.
 */

/**
 * Parts shorter than this do not become chunks of their own in a rope: next to each other they are
 * joined into one. A lay-down after a change cuts the chunks its changes fall in, so without this
 * a list laid down again and again would end as a chunk per few names, and every answer copied
 * from it would pay for each chunk; joining only the short parts as they come keeps the chunks at
 * least this long between the long ones, at the cost of copying the short parts once more, where
 * joining the whole rope once its chunks had become short copied every name in one call.
 */
const MIN_CHUNK_NAMES = 256;
/**
 * Names a chunk holds at most: 128,000 bytes of pointers, so that every chunk is an ordinary heap
 * object. V8 places an array over 128 KiB in pages of its own, mapped afresh for each one, so
 * building one costs a page fault per 4 KiB on top of the copy, and slicing a long run of it makes
 * another; chunks of this size come from pages already in use, and a run of a list is shared whole
 * more often.
 */
const MAX_CHUNK_NAMES = 16_000;
/** Arrays one `concat` call joins (its arguments go through the stack). */
const CONCAT_BATCH = 4096;

/** A list of names in chunks; `starts[i]` is where chunk `i` starts. */
export class NameRope {
  private readonly starts: number[];

  constructor(
    private readonly chunks: string[][],
    readonly size: number,
  ) {
    this.starts = new Array<number>(chunks.length);
    let at = 0;
    for (let i = 0; i < chunks.length; i++) {
      this.starts[i] = at;
      at += (chunks[i] as string[]).length;
    }
  }

  /** The chunk holding name `at`. */
  private chunkAt(at: number): number {
    const { starts } = this;
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >>> 1;
      if ((starts[mid] as number) <= at) low = mid;
      else high = mid - 1;
    }
    return low;
  }

  /**
   * Names `[from, from + count)` as a new array: one `slice` when they lie in one chunk (a small
   * answer, which a builder would cost more than the copy), else through a builder.
   */
  slice(from: number, count: number): string[] {
    if (count === 0) return [];
    const at = this.chunkAt(from);
    const chunk = this.chunks[at] as string[];
    const start = from - (this.starts[at] as number);
    if (start + count <= chunk.length) return chunk.slice(start, start + count);
    const answer = new RopeBuilder('answer');
    this.copyTo(answer, from, count);
    return answer.toArray();
  }

  /** Appends names `[from, from + count)` to `builder`: whole chunks shared, the ends sliced. */
  copyTo(builder: RopeBuilder, from: number, count: number): void {
    if (count === 0) return;
    const { chunks, starts } = this;
    const low = this.chunkAt(from);
    const to = from + count;
    for (let c = low; c < chunks.length; c++) {
      const start = starts[c] as number;
      if (start >= to) break;
      const chunk = chunks[c] as string[];
      const end = start + chunk.length;
      if (start >= from && end <= to) builder.share(chunk);
      else builder.fresh(chunk.slice(Math.max(from, start) - start, Math.min(to, end) - start));
    }
  }
}

/** Builds a rope, or an answer, from runs of ropes and single names. */
export class RopeBuilder {
  private readonly parts: string[][] = [];
  /** Short parts waiting to be joined into one chunk (a rope's), and the names they hold. */
  private pending: string[][] = [];
  private pendingNames = 0;
  /** Whether a part of `pending` belongs to another rope. */
  private pendingShared = false;
  /** The last part, while it collects single names. */
  private singles: string[] | undefined;
  /** Whether a part of `parts` belongs to another rope. */
  private shared = false;

  /** Whether short parts next to each other are joined as they come (see `MIN_CHUNK_NAMES`). */
  private readonly joinShortParts: boolean;

  /**
   * `'rope'` for a list that later answers and lists copy; `'answer'` for an answer, copied once
   * whole, whose short parts would only be copied twice.
   */
  constructor(makes: 'rope' | 'answer' = 'rope') {
    this.joinShortParts = makes === 'rope';
  }

  name(text: string): void {
    if (
      this.singles === undefined ||
      this.singles.length === MAX_CHUNK_NAMES ||
      this.pendingNames === MAX_CHUNK_NAMES
    ) {
      if (this.pendingNames === MAX_CHUNK_NAMES) this.flushPending();
      this.singles = [];
      this.add(this.singles, true);
    }
    this.singles.push(text);
    if (this.joinShortParts) this.pendingNames++;
  }

  /** A chunk of another rope, taken as it is. */
  share(chunk: string[]): void {
    this.singles = undefined;
    this.add(chunk, false);
  }

  /** An array made for this builder. */
  fresh(part: string[]): void {
    this.singles = undefined;
    this.add(part, true);
  }

  /** Takes `part` as a chunk of its own when it is long (or nothing is joined), else joins it with its short neighbours. */
  private add(part: string[], owned: boolean): void {
    if (!this.joinShortParts || part.length >= MIN_CHUNK_NAMES) {
      this.flushPending();
      this.parts.push(part);
      if (!owned) this.shared = true;
      return;
    }
    if (this.pendingNames + part.length > MAX_CHUNK_NAMES) this.flushPending();
    this.pending.push(part);
    this.pendingNames += part.length;
    if (!owned) this.pendingShared = true;
  }

  /** The short parts waiting, as one chunk. */
  private flushPending(): void {
    const { pending } = this;
    if (pending.length === 0) return;
    if (pending.length === 1) {
      this.parts.push(pending[0] as string[]);
      if (this.pendingShared) this.shared = true;
    } else {
      this.parts.push(joined(pending));
    }
    // Single names still to come go to a new part.
    this.singles = undefined;
    this.pending = [];
    this.pendingNames = 0;
    this.pendingShared = false;
  }

  /** The names as a rope. */
  toRope(): NameRope {
    this.flushPending();
    const { parts } = this;
    let size = 0;
    for (const part of parts) size += part.length;
    return new NameRope(parts, size);
  }

  /** The names as a new array. */
  toArray(): string[] {
    this.flushPending();
    const { parts } = this;
    if (parts.length === 1 && !this.shared) return parts[0] as string[];
    return joined(parts);
  }
}

/** The arrays one after another, in a new array. */
function joined(parts: string[][]): string[] {
  let all: string[] = [];
  for (let p = 0; p < parts.length; p += CONCAT_BATCH) all = all.concat(...parts.slice(p, p + CONCAT_BATCH));
  return all;
}
