/**
 * Native adapter for the topic-name trie: one long-lived native handle; lists of names cross as
 * NUL-joined strings (NUL is invalid in every dialect's names), ids and node positions in typed
 * arrays, so a bulk call crosses the boundary once whatever the size of its answer (`expand` once
 * more per 60 KiB of new names, see `topicTrieExpandFirst`). The binding exports free functions
 * over the handle (see native/napi/src/pattern_index.rs for why). A panic in the binding arrives as
 * `INTERNAL_ERROR` and leaves the handle failed; every method rethrows it typed (`toTypedError`).
 */

import { DIALECTS } from '../../common/dialect.js';
import type { DialectName, TopicTrieCore, TopicTrieStats } from '../contract.js';
import type { NativeBinding } from './binding.js';
import { toTypedError } from './log.js';

type Handle = ReturnType<NativeBinding['topicTrieNew']>;

/** Room for the ends of this many names, less one, before `expand` grows its array. */
const INITIAL_EXPAND_ENDS = 1024;
/** Room for this many ids in `addAll` before its array grows. */
const INITIAL_BATCH_IDS = 256;
/** Room for this many runs of node positions before `expand` grows its run array. */
const INITIAL_EXPAND_RUNS = 256;
/** `topicTrieExpandRuns` writes the layout epoch and the number of runs before the runs. */
const RUNS_HEADER = 2;
/** Each run is (start, end, names). */
const RUN_SIZE = 3;
/**
 * At most this many kept whole runs are joined by one `concat` (which copies each as one block);
 * more are copied name by name, so that the call's argument list stays small.
 */
const MAX_CONCAT_RUNS = 4096;
/**
 * Kept whole runs are joined by `concat` when they hold at least this many names on average:
 * for shorter runs its per-array cost exceeds copying name by name (`tenant7__agent0__**`, 3,304
 * names in 256 runs, took 18 µs by `concat` and 12 µs by the copy; `tenant7__**`, 16,822 names in
 * 64 runs, 95 µs and 113 µs).
 */
const MIN_CONCAT_RUN_NAMES = 32;

function split(joined: string): string[] {
  return joined === '' ? [] : joined.split('\0');
}

/**
 * The native trie holds no JavaScript strings (that keeps a million names under its memory
 * budget), so a name that crosses to JavaScript is a new string, which costs more than the walk
 * that found it. The adapter therefore keeps each name it has handed out, by the position of the
 * node the name ends at, until the name is removed or the nodes move (a compaction, which changes
 * the trie's layout epoch). `expand` asks the walk only where the matches sit, as runs of
 * positions (a whole subtree under a trailing wildcard is one run once the trie is laid out), and
 * reads the names it keeps along them, as the js engine reads the strings its nodes hold; only
 * when one is missing does the walk write the answer out again. The cost is one string per name
 * handed out (the names the caller was given; a `**` over everything keeps them all), one array
 * slot per node position up to the highest reached, and a pointer per name of each whole run kept
 * (`runNames`). docs/TRIE.md has the figures.
 */
export class NativeTopicTrieAdapter implements TopicTrieCore {
  private readonly handle: Handle;
  /** Reused by `expand`: the name count, then where each name ends in the joined answer. */
  private ends = new Uint32Array(INITIAL_EXPAND_ENDS);
  /** Reused by `expand`: the node position of each name of a written answer. */
  private positions = new Uint32Array(INITIAL_EXPAND_ENDS);
  /** Reused by `expand`: the layout epoch, the number of runs, then the runs as (start, end, names). */
  private runs = new Uint32Array(RUNS_HEADER + RUN_SIZE * INITIAL_EXPAND_RUNS);
  /**
   * Name by node position in layout epoch `epoch`; only a position where that name ends now holds
   * one (`remove` clears its position; a new epoch starts empty).
   */
  private byPosition: (string | undefined)[] = [];
  /**
   * The names of whole subtrees read as one run (by the position the run starts at), in run order,
   * so that a later `expand` copies them without skipping the positions of prefix nodes, as the js
   * engine copies a run of its name list. Such runs exist only while nothing was placed since the
   * last compaction; a run is taken as it is only while it holds as many names as the walk counts
   * in it (a name added at an existing prefix node adds one), and all are dropped on a removal and
   * with the epoch.
   */
  private runNames = new Map<number, string[]>();
  private epoch = -1;
  /** Reused by `addAll`. */
  private ids = new Uint32Array(INITIAL_BATCH_IDS);

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
      return this.binding.topicTrieAdd(this.handle, name, timestampMs);
    } catch (error) {
      throw toTypedError(error);
    }
  }

  remove(name: string): boolean {
    try {
      const position = this.binding.topicTrieRemove(this.handle, name);
      if (position < 0) return false;
      // A later name may end at this position.
      if (position < this.byPosition.length) this.byPosition[position] = undefined;
      if (this.runNames.size > 0) this.runNames.clear();
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
      let failed: number;
      try {
        failed = this.binding.topicTrieAddJoined(this.handle, names.slice(0, count).join('\0'), timestampsMs, ids);
      } catch (error) {
        throw toTypedError(error);
      }
      for (let i = 0; i < (failed < 0 ? count : failed); i++) out[i] = ids[i] as number;
      if (failed >= 0) return failed;
    }
    return invalid;
  }

  /** The reused id array of the batch calls, with room for `count` ids. */
  private batchIds(count: number): Uint32Array {
    if (this.ids.length < count) this.ids = new Uint32Array(Math.max(count, 2 * this.ids.length));
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
      let runs = this.runs;
      let count = binding.topicTrieExpandRuns(handle, pattern, runs);
      if (count < 0) return null;
      const end = RUNS_HEADER + RUN_SIZE * (runs[1] as number);
      if (end > runs.length) {
        this.runs = runs = new Uint32Array(end + (end >> 1));
        count = binding.topicTrieExpandRuns(handle, pattern, runs);
      }
      if (runs[0] !== this.epoch) {
        // The nodes moved: the names kept belong to the old positions.
        this.byPosition = [];
        this.runNames.clear();
        this.epoch = runs[0] as number;
      }
      // Long runs: joined as blocks from the names kept per run, once kept (see `runNames`).
      const runCount = (end - RUNS_HEADER) / RUN_SIZE;
      const joinable = runCount <= MAX_CONCAT_RUNS && count >= runCount * MIN_CONCAT_RUN_NAMES;
      if (joinable) {
        const wholes = this.keptWholeRuns(runs, end, count);
        if (wholes !== undefined) return Array.prototype.concat.apply([], wholes) as string[];
      }
      const { byPosition: known, runNames } = this;
      const names = new Array<string>(count);
      let found = 0;
      for (let r = RUNS_HEADER; r < end && found < count; r += RUN_SIZE) {
        const start = runs[r] as number;
        const stop = runs[r + 1] as number;
        const inRun = runs[r + 2] as number;
        const first = found;
        const last = Math.min(stop, known.length);
        for (let at = start; at < last; at++) {
          const name = known[at];
          if (name !== undefined) names[found++] = name;
        }
        if (joinable && stop - start > 1 && found - first === inRun) runNames.set(start, names.slice(first, found));
      }
      // Only positions where a matched name ends hold one, so all are known when the counts agree.
      return found === count ? names : this.expandWritten(pattern, count);
    } catch (error) {
      throw toTypedError(error);
    }
  }

  /**
   * The kept names of every run of `runs` (up to `end`), when each run is a whole subtree whose
   * names are kept (see `runNames`) and they add up to `count`; otherwise undefined.
   */
  private keptWholeRuns(runs: Uint32Array, end: number, count: number): string[][] | undefined {
    if (this.runNames.size === 0) return undefined;
    const wholes: string[][] = [];
    let total = 0;
    for (let r = RUNS_HEADER; r < end; r += RUN_SIZE) {
      const whole = this.runNames.get(runs[r] as number);
      if (whole === undefined || whole.length !== runs[r + 2] || (runs[r + 1] as number) - (runs[r] as number) < 2) {
        return undefined;
      }
      wholes.push(whole);
      total += whole.length;
    }
    return total === count ? wholes : undefined;
  }

  /**
   * The `count` matching names as the walk writes them (new strings), in the order of the runs
   * (the trie has not changed since they were asked for), kept by position for later calls.
   */
  private expandWritten(pattern: string, count: number): string[] {
    const { binding, handle } = this;
    if (this.positions.length < count) this.positions = new Uint32Array(count + (count >> 1));
    if (this.ends.length <= count) this.ends = new Uint32Array(count + 1 + (count >> 1));
    const { ends, positions } = this;
    let text = binding.topicTrieExpandFirst(handle, pattern, ends, positions) as string;
    const names = new Array<string>(count);
    // Cutting at known offsets costs less than split('\0'), which searches for the separators.
    let start = 0;
    for (let i = 0; i < count; i++) {
      const end = ends[i + 1] as number;
      const name = text.slice(start, end);
      names[i] = name;
      this.keep(positions[i] as number, name);
      start = end + 1;
      if (start > text.length && i + 1 < count) {
        // That was the last name of this string.
        text = binding.topicTrieExpandNext(handle) as string;
        start = 0;
      }
    }
    return names;
  }

  private keep(position: number, name: string): void {
    let known = this.byPosition;
    if (position >= known.length) {
      // A write far past the end would turn the array into a dictionary, and growing it a slot
      // at a time costs tens of ms at a million nodes: make a filled array half again as long.
      const grown = new Array<string | undefined>(Math.max(position + 1, known.length + (known.length >> 1), 1024));
      grown.fill(undefined);
      for (let at = 0; at < known.length; at++) grown[at] = known[at];
      this.byPosition = known = grown;
    }
    known[position] = name;
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
      this.byPosition = [];
      this.runNames.clear();
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
