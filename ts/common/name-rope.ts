/**
 * Lists of names kept as ropes: a list is a sequence of immutable chunks, and a list built from runs
 * of others shares their whole chunks instead of copying them. The trie's kept lists (the js engine's
 * and the native adapter's copies) are built this way, so laying a changed subtree down again costs
 * its runs and changed names, and an expand, changed or not, one copy of its answer. Both engines use
 * it, so it lives beside them.
 *
 * Chunks never leave a rope: an answer is always a new array.
 */

/** A rope is joined into chunks of `MAX_CHUNK_NAMES` when its chunks hold fewer names than this on average. */
const MIN_AVERAGE_CHUNK_NAMES = 64;
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

  /** Appends names `[from, from + count)` to `builder`: whole chunks shared, the ends sliced. */
  copyTo(builder: RopeBuilder, from: number, count: number): void {
    if (count === 0) return;
    const { chunks, starts } = this;
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >>> 1;
      if ((starts[mid] as number) <= from) low = mid;
      else high = mid - 1;
    }
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
  private parts: string[][] = [];
  private singles: string[] | undefined;
  private shared = false;
  private size = 0;

  name(text: string): void {
    if (this.singles === undefined || this.singles.length === MAX_CHUNK_NAMES) {
      this.singles = [];
      this.parts.push(this.singles);
    }
    this.singles.push(text);
    this.size++;
  }

  /** A chunk of another rope, taken as it is. */
  share(chunk: string[]): void {
    this.parts.push(chunk);
    this.singles = undefined;
    this.shared = true;
    this.size += chunk.length;
  }

  /** An array made for this builder. */
  fresh(part: string[]): void {
    this.parts.push(part);
    this.singles = undefined;
    this.size += part.length;
  }

  /** The names as a rope, joined into chunks as large as they may be when its chunks have become small. */
  toRope(): NameRope {
    const { parts, size } = this;
    if (parts.length > 1 && size < parts.length * MIN_AVERAGE_CHUNK_NAMES) return new NameRope(chunked(parts), size);
    return new NameRope(parts, size);
  }

  /** The names as a new array. */
  toArray(): string[] {
    const { parts } = this;
    if (parts.length === 1 && !this.shared) return parts[0] as string[];
    return joined(parts);
  }
}

/** The arrays one after another, in new chunks of `MAX_CHUNK_NAMES` (the last one shorter). */
function chunked(parts: string[][]): string[][] {
  const chunks: string[][] = [];
  let pending: string[][] = [];
  let pendingNames = 0;
  for (const part of parts) {
    for (let from = 0; from < part.length; ) {
      const take = Math.min(part.length - from, MAX_CHUNK_NAMES - pendingNames);
      pending.push(from === 0 && take === part.length ? part : part.slice(from, from + take));
      pendingNames += take;
      from += take;
      if (pendingNames === MAX_CHUNK_NAMES) {
        chunks.push(joined(pending));
        pending = [];
        pendingNames = 0;
      }
    }
  }
  if (pendingNames > 0) chunks.push(joined(pending));
  return chunks;
}

/** The arrays one after another, in a new array. */
function joined(parts: string[][]): string[] {
  let all: string[] = [];
  for (let p = 0; p < parts.length; p += CONCAT_BATCH) all = all.concat(...parts.slice(p, p + CONCAT_BATCH));
  return all;
}
