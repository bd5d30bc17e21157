/**
 * Native adapter for the topic-name trie: one long-lived native handle; lists of names cross as
 * NUL-joined strings (NUL is invalid in every dialect's names), ids in typed arrays, so a bulk call
 * crosses the boundary once whatever the size of its answer (`expand` once more per 60 KiB of names,
 * see `topicTrieExpandFirst`). The binding exports free functions over the handle (see
 * native/napi/src/index.rs for why).
 */
import type { DialectName, TopicTrieCore, TopicTrieStats } from '../contract.js';
import { DIALECTS } from '../js/dialect.js';
import type { NativeBinding } from './binding.js';

type Handle = ReturnType<NativeBinding['topicTrieNew']>;

/** Room for the ends of this many names, less one, before `expand` grows its array. */
const INITIAL_EXPAND_ENDS = 1024;
/** Room for this many ids before `expand` grows its id array. */
const INITIAL_EXPAND_IDS = 1024;
/**
 * `expand` fetches the names it does not hold yet by id while they are fewer than this share of
 * the answer (1 / divisor), and otherwise has the walk write the whole answer again, which costs
 * less per name than rebuilding each from its parents.
 */
const FETCH_BY_ID_DIVISOR = 4;

function split(joined: string): string[] {
  return joined === '' ? [] : joined.split('\0');
}

/**
 * The native trie holds no JavaScript strings (that keeps a million names under its memory
 * budget), so a name that crosses to JavaScript is a new string, which costs more than the walk
 * that found it. The adapter therefore keeps each name it has handed out, by id, until the name
 * is removed: a later `expand` reaching it walks for ids only and returns the same string, as the
 * js engine returns the strings its nodes hold. The cost is one string per name handed out (the
 * names the caller was given; a `**` over everything keeps them all) and one array slot per id.
 */
export class NativeTopicTrieAdapter implements TopicTrieCore {
  private readonly handle: Handle;
  /** Reused by `expand`: the name count, then where each name ends in the joined answer. */
  private ends = new Uint32Array(INITIAL_EXPAND_ENDS);
  /** Reused by `expand`: the ids of the answer. */
  private ids = new Uint32Array(INITIAL_EXPAND_IDS);
  /** Name by id, for the names handed out since their id was last given to a new name. */
  private names: (string | undefined)[] = [];

  constructor(
    private readonly binding: NativeBinding,
    dialect: DialectName,
    maxNameBytes: number,
  ) {
    this.handle = binding.topicTrieNew(DIALECTS[dialect].id, maxNameBytes);
  }

  add(name: string, timestampMs: number | undefined): number {
    return this.binding.topicTrieAdd(this.handle, name, timestampMs);
  }

  remove(name: string): boolean {
    const id = this.binding.topicTrieRemove(this.handle, name);
    if (id < 0) return false;
    // The id may go to a new name from now on.
    if (id < this.names.length) this.names[id] = undefined;
    return true;
  }

  idOf(name: string): number {
    return this.binding.topicTrieIdOf(this.handle, name);
  }

  nameOf(id: number): string | undefined {
    const known = this.names[id];
    if (known !== undefined) return known;
    const name = this.binding.topicTrieNameOf(this.handle, id) ?? undefined;
    if (name !== undefined) this.remember(id, name);
    return name;
  }

  private remember(id: number, name: string): void {
    const names = this.names;
    // Grown a slot at a time: a write far past the end would turn the array into a dictionary.
    while (names.length <= id) names.push(undefined);
    names[id] = name;
  }

  get size(): number {
    return this.binding.topicTrieSize(this.handle);
  }

  expand(pattern: string): string[] | null {
    let count = this.binding.topicTrieExpandInto(this.handle, pattern, this.ids);
    if (count < 0) return null;
    if (count > this.ids.length) {
      this.ids = new Uint32Array(count + (count >> 1));
      count = this.binding.topicTrieExpandInto(this.handle, pattern, this.ids);
    }
    const { ids, names: known } = this;
    const names = new Array<string>(count);
    let missing = 0;
    for (let i = 0; i < count; i++) {
      const name = known[ids[i] as number];
      if (name === undefined) missing++;
      else names[i] = name;
    }
    if (missing > 0) this.fill(pattern, names, missing);
    return names;
  }

  /** Puts the `missing` names `names` lacks (those of `this.ids`) into it, and remembers them. */
  private fill(pattern: string, names: string[], missing: number): void {
    const { ids, names: known } = this;
    const count = names.length;
    // Either the walk writes every name again, in the order it gave the ids (the trie has not
    // changed since), or the missing ones are fetched by id, in the order they are missing.
    const whole = missing * FETCH_BY_ID_DIVISOR >= count;
    let source: string[];
    if (whole) {
      source = this.expandWritten(pattern) as string[];
    } else {
      const wanted = new Uint32Array(missing);
      for (let i = 0, w = 0; i < count; i++) {
        if (known[ids[i] as number] === undefined) wanted[w++] = ids[i] as number;
      }
      source = split(this.binding.topicTrieNamesJoined(this.handle, wanted, missing));
    }
    for (let i = 0, w = 0; i < count; i++) {
      if (names[i] !== undefined) continue;
      const name = source[whole ? i : w++] as string;
      names[i] = name;
      this.remember(ids[i] as number, name);
    }
  }

  /** Every matching name as written by the walk, as new strings, in the walk's order. */
  private expandWritten(pattern: string): string[] | null {
    const { binding, handle } = this;
    const ends = this.ends;
    let text = binding.topicTrieExpandFirst(handle, pattern, ends);
    if (text === null || text === undefined) return null;
    const count = ends[0] as number;
    if (count >= ends.length) {
      // More names than room for their ends: split this answer, and make room for the next.
      this.ends = new Uint32Array(count + 1 + (count >> 1));
      const names = split(text);
      for (let more = binding.topicTrieExpandNext(handle); more != null; more = binding.topicTrieExpandNext(handle)) {
        for (const name of split(more)) names.push(name);
      }
      return names;
    }
    // Cutting at known offsets costs less than split('\0'), which searches for the separators.
    const names = new Array<string>(count);
    let start = 0;
    for (let i = 0; i < count; i++) {
      const end = ends[i + 1] as number;
      names[i] = text.slice(start, end);
      start = end + 1;
      if (start > text.length && i + 1 < count) {
        // That was the last name of this string.
        text = binding.topicTrieExpandNext(handle) as string;
        start = 0;
      }
    }
    return names;
  }

  expandInto(pattern: string, out: Uint32Array): number {
    return this.binding.topicTrieExpandInto(this.handle, pattern, out);
  }

  count(pattern: string): number {
    return this.binding.topicTrieCount(this.handle, pattern);
  }

  list(prefix: string, limit: number, after: string | undefined): { names: string[]; more: boolean } {
    const page = this.binding.topicTrieListJoined(this.handle, prefix, limit, after);
    return { names: split(page.names), more: page.more };
  }

  touch(name: string, timestampMs: number): boolean {
    return this.binding.topicTrieTouch(this.handle, name, timestampMs);
  }

  idleSince(cutoffMs: number, limit: number): string[] {
    return split(this.binding.topicTrieIdleSinceJoined(this.handle, cutoffMs, limit));
  }

  clear(): void {
    this.binding.topicTrieClear(this.handle);
    this.names = [];
  }

  stats(): TopicTrieStats {
    const [names = 0, nodes = 0, segments = 0, approximateBytes = 0] = this.binding.topicTrieStats(this.handle);
    return { names, nodes, segments, approximateBytes };
  }
}
