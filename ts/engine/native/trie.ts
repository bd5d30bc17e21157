/**
 * Native adapter for the topic-name trie: one long-lived native handle; lists of names cross as
 * NUL-joined strings (NUL is invalid in every dialect's names), ids and expand plans in typed
 * arrays, so a bulk call crosses the boundary once whatever the size of its answer. The binding
 * exports free functions over the handle (see native/napi/src/pattern_index.rs for why). A panic in the
 * binding arrives as `INTERNAL_ERROR` and leaves the handle failed; every method rethrows it typed
 * (`toTypedError`).
 */

import { DIALECTS } from '../../common/dialect.js';
import { type NameRope, RopeBuilder } from '../../common/name-rope.js';
import type { DialectName, TopicTrieCore, TopicTrieStats } from '../contract.js';
import type { NativeBinding } from './binding.js';
import { toTypedError } from './log.js';

type Handle = ReturnType<NativeBinding['topicTrieNew']>;

/** Room for this many ids in `addAll` before its array grows. */
const INITIAL_BATCH_IDS = 256;
/** Room for this many plan words before `expand` grows its array. */
const INITIAL_PLAN_WORDS = 4096;
/** `topicTrieExpandPlan` writes the plan's length and the number of names before the plan. */
const PLAN_HEADER = 2;
/** Plan operations, as native/core/src/trie/plan.rs numbers them. */
const PLAN_NAME = 0;
const PLAN_NEW_NAME = 1;
const PLAN_COPY = 2;
const PLAN_LIST_START = 3;
const PLAN_LIST_END = 4;
const PLAN_FREE = 5;
const PLAN_NAMES_BY_ID = 6;

/**
 * Added to the id `topicTrieAdd` returns when the adapter is to keep the name as handed out: a new
 * name below a list the adapter holds, which the next expand of that list takes (native/napi/src/trie.rs).
 */
const KEEP_NAME = 2 ** 32;

/** Kept names per page of `namePages`: a power of two, so an id splits by shift and mask. */
const NAME_PAGE_BITS = 12;
const NAME_PAGE_SIZE = 1 << NAME_PAGE_BITS;
const NAME_PAGE_MASK = NAME_PAGE_SIZE - 1;
/** Stands for a page no id has come to yet; never written to (`keep` replaces it first). */
const EMPTY_PAGE: (string | undefined)[] = [];

function split(joined: string): string[] {
  return joined === '' ? [] : joined.split('\0');
}

/**
 * The native trie holds no JavaScript strings (that keeps a million names under its memory
 * budget), so a name that crosses to JavaScript is a new string, which costs more than the walk
 * that found it. The adapter therefore keeps each name it has been handed, by id, until the name is
 * removed, and a copy of each kept list of the trie (native/core/src/trie/snapshot.rs) as strings.
 * `expand` asks for a plan: the lists the walk laid down, as copies of runs of other lists and
 * names by id, and the answer as runs of lists and names; only the names this adapter has never
 * been handed cross as text. Replaying it costs about what the js engine's copy of its own lists
 * costs: an answer that is one run of one list is one `slice`. The cost is a string per name handed
 * out (a `**` over a million names keeps them all: the memory table in bench/RESULTS.md reports it)
 * and a pointer per name of each kept list.
 */
export class NativeTopicTrieAdapter implements TopicTrieCore {
  private readonly handle: Handle;
  /** Reused by `expand`: the plan header, then the plan. */
  private plan = new Uint32Array(INITIAL_PLAN_WORDS);
  /**
   * The names handed out so far, by id, in pages of `NAME_PAGE_SIZE` (undefined for an id not
   * handed out or removed since). Pages, not one array: ids come in no order, and growing one array
   * past a new id copies every name kept before it, a pause of tens of ms at a million names in
   * whichever expand first meets an id past the end.
   */
  private namePages: (string | undefined)[][] = [];
  /** Copies of the trie's kept lists, by index. */
  private lists: (NameRope | undefined)[] = [];
  /** Reused by `addAll`: the ids, and 1 for each name to keep as handed out (see `add`). */
  private ids = new Uint32Array(INITIAL_BATCH_IDS);
  private keepFlags = new Uint8Array(INITIAL_BATCH_IDS);

  constructor(
    private readonly binding: NativeBinding,
    dialect: DialectName,
    maxNameBytes: number,
  ) {
    try {
      this.handle = binding.topicTrieNew(DIALECTS[dialect].id, maxNameBytes);
    } catch (error) {
      throw toTypedError(error);
    }
  }

  add(name: string, timestampMs: number | undefined): number {
    try {
      const added = this.binding.topicTrieAdd(this.handle, name, timestampMs);
      if (added < KEEP_NAME) return added;
      // Kept now, so that the plan that takes it names it by id rather than rebuilding its text.
      const id = added - KEEP_NAME;
      this.keep(id, name);
      return id;
    } catch (error) {
      throw toTypedError(error);
    }
  }

  remove(name: string): boolean {
    try {
      const id = this.binding.topicTrieRemove(this.handle, name);
      if (id < 0) return false;
      // A later name may take this id.
      const page = this.namePages[id >>> NAME_PAGE_BITS];
      if (page !== undefined && page !== EMPTY_PAGE) page[id & NAME_PAGE_MASK] = undefined;
      return true;
    } catch (error) {
      throw toTypedError(error);
    }
  }

  idOf(name: string): number {
    try {
      return this.binding.topicTrieIdOf(this.handle, name);
    } catch (error) {
      throw toTypedError(error);
    }
  }

  /** One call for the batch; a name holding NUL is invalid, so the names before it are added alone. */
  addAll(names: readonly string[], timestampsMs: Float64Array, out: Float64Array): number {
    const invalid = names.findIndex((name) => name.includes('\0'));
    const count = invalid < 0 ? names.length : invalid;
    if (count > 0) {
      const ids = this.batchIds(count);
      const keep = this.keepFlags;
      let failed: number;
      try {
        failed = this.binding.topicTrieAddJoined(
          this.handle,
          names.slice(0, count).join('\0'),
          timestampsMs,
          ids,
          keep,
        );
      } catch (error) {
        throw toTypedError(error);
      }
      for (let i = 0; i < (failed < 0 ? count : failed); i++) {
        out[i] = ids[i] as number;
        if (keep[i] === 1) this.keep(ids[i] as number, names[i] as string);
      }
      if (failed >= 0) return failed;
    }
    return invalid;
  }

  /** The reused id array of the batch calls, with room for `count` ids (and `keepFlags` as long). */
  private batchIds(count: number): Uint32Array {
    if (this.ids.length < count) {
      this.ids = new Uint32Array(Math.max(count, 2 * this.ids.length));
      this.keepFlags = new Uint8Array(this.ids.length);
    }
    return this.ids;
  }

  nameOf(id: number): string | undefined {
    try {
      return this.binding.topicTrieNameOf(this.handle, id) ?? undefined;
    } catch (error) {
      throw toTypedError(error);
    }
  }

  get size(): number {
    try {
      return this.binding.topicTrieSize(this.handle);
    } catch (error) {
      throw toTypedError(error);
    }
  }

  expand(pattern: string): string[] | null {
    try {
      const { binding, handle } = this;
      let plan = this.plan;
      const text = binding.topicTrieExpandPlan(handle, pattern, plan) as string | null;
      if (text === null) return null;
      const length = plan[0] as number;
      const count = plan[1] as number;
      const end = PLAN_HEADER + length;
      if (end > plan.length) {
        const fitted = plan.length - PLAN_HEADER;
        const rest = new Uint32Array(length - fitted);
        binding.topicTriePlanCopy(handle, rest, fitted);
        const grown = new Uint32Array(end + (end >> 1));
        grown.set(plan);
        grown.set(rest, plan.length);
        this.plan = plan = grown;
      }
      // One run of a list held already: its copy is the answer.
      if (length === 4 && plan[PLAN_HEADER] === PLAN_COPY) {
        return (this.lists[plan[PLAN_HEADER + 1] as number] as NameRope).slice(plan[PLAN_HEADER + 2] as number, count);
      }
      const merged = this.mergedAnswer(plan, end, count);
      if (merged !== undefined) return merged;
      return this.replay(plan, end, text, count);
    } catch (error) {
      throw toTypedError(error);
    }
  }

  /**
   * Carries out the plan in `plan` up to `end`: the lists it makes and the answer of `count` names.
   * Lists are ropes (ts/common/name-rope.ts): a run of another list shares its chunks.
   */
  private replay(plan: Uint32Array, end: number, text: string, count: number): string[] {
    const { lists } = this;
    let out = new RopeBuilder('answer');
    const answer = out;
    // An answer of single names only (a pattern without a trailing wildcard) goes straight into an
    // array of its size, as the js engine's does: through the builder it was pushed into growing
    // chunks and then copied once more. The array is made at the answer's first name, and handed
    // to the builder if a run of a list follows.
    let direct: string[] | undefined;
    let directAt = 0;
    let answerCopied = false;
    let building = -1;
    // The new names in plan order: one `split` makes them all, cheaper than a `slice` each.
    const newNames = text === '' ? [] : text.split('\0');
    let nextNew = 0;
    for (let p = PLAN_HEADER; p < end; ) {
      const operation = plan[p];
      if (operation === PLAN_NAME || operation === PLAN_NEW_NAME) {
        let name: string;
        if (operation === PLAN_NAME) {
          name = this.nameById(plan[p + 1] as number);
          p += 2;
        } else {
          name = newNames[nextNew++] as string;
          this.keep(plan[p + 1] as number, name);
          p += 3;
        }
        if (out !== answer) {
          out.name(name);
        } else {
          if (!answerCopied && direct === undefined) direct = new Array<string>(count);
          if (direct !== undefined) direct[directAt++] = name;
          else out.name(name);
        }
        continue;
      }
      switch (operation) {
        case PLAN_COPY:
          if (out === answer) {
            answerCopied = true;
            if (direct !== undefined) for (let i = 0; i < directAt; i++) answer.name(direct[i] as string);
            direct = undefined;
          }
          (lists[plan[p + 1] as number] as NameRope).copyTo(out, plan[p + 2] as number, plan[p + 3] as number);
          p += 4;
          break;
        case PLAN_LIST_START:
          building = plan[p + 1] as number;
          out = new RopeBuilder();
          p += 3;
          break;
        case PLAN_LIST_END:
          lists[building] = out.toRope();
          out = answer;
          p += 1;
          break;
        case PLAN_FREE:
          lists[plan[p + 1] as number] = undefined;
          p += 2;
          break;
        case PLAN_NAMES_BY_ID:
          // The whole answer, as pairs of id and place in rising order of id: the names are read
          // from the pages one after another and written to their places, where reading them in
          // answer order would jump about the pages for each one.
          direct = this.namesById(plan, p + 2, plan[p + 1] as number);
          directAt = direct.length;
          p += 2 + 2 * direct.length;
          break;
        default:
          throw new Error(`trie: unknown plan operation ${plan[p]}`);
      }
    }
    const names = direct ?? answer.toArray();
    const length = direct !== undefined ? directAt : names.length;
    if (length !== count) throw new Error(`trie: a plan of ${length} names where ${count} match`);
    return names;
  }

  /**
   * The answer of a plan of runs of lists held already and names handed before only (a changed
   * subtree merged from its holder's list and edits, docs/TRIE.md), or `undefined` for any other
   * plan. The names are read from their pages first, all in one loop: they were added lately and
   * lie scattered over the pages, each a cache miss, and read one at a time between the copies of
   * the runs each waited for its miss alone, where loads one after another overlap.
   */
  private mergedAnswer(plan: Uint32Array, end: number, count: number): string[] | undefined {
    const names: string[] = [];
    let runs = 0;
    for (let p = PLAN_HEADER; p < end; ) {
      const operation = plan[p];
      if (operation === PLAN_NAME) {
        names.push(this.nameById(plan[p + 1] as number));
        p += 2;
      } else if (operation === PLAN_COPY) {
        runs++;
        p += 4;
      } else {
        return undefined;
      }
    }
    // Names only (a pattern without a trailing wildcard): they are the answer, in order.
    if (runs === 0) return names.length === count ? names : undefined;
    const { lists } = this;
    const answer = new RopeBuilder('answer');
    let nextName = 0;
    for (let p = PLAN_HEADER; p < end; ) {
      if (plan[p] === PLAN_NAME) {
        answer.name(names[nextName++] as string);
        p += 2;
      } else {
        (lists[plan[p + 1] as number] as NameRope).copyTo(answer, plan[p + 2] as number, plan[p + 3] as number);
        p += 4;
      }
    }
    const answerNames = answer.toArray();
    if (answerNames.length !== count)
      throw new Error(`trie: a plan of ${answerNames.length} names where ${count} match`);
    return answerNames;
  }

  /** The answer of `count` pairs of id and place from `plan[from]` on (`PLAN_NAMES_BY_ID`). */
  private namesById(plan: Uint32Array, from: number, count: number): string[] {
    const pages = this.namePages;
    const names = new Array<string>(count);
    const end = from + 2 * count;
    for (let p = from; p < end; p += 2) {
      const id = plan[p] as number;
      names[plan[p + 1] as number] = (pages[id >>> NAME_PAGE_BITS] as (string | undefined)[])[
        id & NAME_PAGE_MASK
      ] as string;
    }
    return names;
  }

  /** A name handed out before (the plan names it by id only then). */
  private nameById(id: number): string {
    return (this.namePages[id >>> NAME_PAGE_BITS] as (string | undefined)[])[id & NAME_PAGE_MASK] as string;
  }

  private keep(id: number, name: string): void {
    const pages = this.namePages;
    const at = id >>> NAME_PAGE_BITS;
    let page = pages[at];
    if (page === undefined || page === EMPTY_PAGE) {
      // Pages between stand empty until an id of theirs comes (no holes in `pages`).
      while (pages.length <= at) pages.push(EMPTY_PAGE);
      page = new Array<string | undefined>(NAME_PAGE_SIZE).fill(undefined);
      pages[at] = page;
    }
    page[id & NAME_PAGE_MASK] = name;
  }

  expandInto(pattern: string, out: Uint32Array): number {
    try {
      return this.binding.topicTrieExpandInto(this.handle, pattern, out);
    } catch (error) {
      throw toTypedError(error);
    }
  }

  count(pattern: string): number {
    try {
      return this.binding.topicTrieCount(this.handle, pattern);
    } catch (error) {
      throw toTypedError(error);
    }
  }

  list(prefix: string, limit: number, after: string | undefined): { names: string[]; more: boolean } {
    try {
      const page = this.binding.topicTrieListJoined(this.handle, prefix, limit, after);
      return { names: split(page.names), more: page.more };
    } catch (error) {
      throw toTypedError(error);
    }
  }

  touch(name: string, timestampMs: number): boolean {
    try {
      return this.binding.topicTrieTouch(this.handle, name, timestampMs);
    } catch (error) {
      throw toTypedError(error);
    }
  }

  idleSince(cutoffMs: number, limit: number): string[] {
    try {
      return split(this.binding.topicTrieIdleSinceJoined(this.handle, cutoffMs, limit));
    } catch (error) {
      throw toTypedError(error);
    }
  }

  clear(): void {
    try {
      this.binding.topicTrieClear(this.handle);
      this.namePages = [];
      this.lists = [];
    } catch (error) {
      throw toTypedError(error);
    }
  }

  stats(): TopicTrieStats {
    try {
      const [names = 0, nodes = 0, segments = 0, approximateBytes = 0] = this.binding.topicTrieStats(this.handle);
      return { names, nodes, segments, approximateBytes };
    } catch (error) {
      throw toTypedError(error);
    }
  }
}
