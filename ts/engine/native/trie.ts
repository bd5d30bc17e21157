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

function split(joined: string): string[] {
  return joined === '' ? [] : joined.split('\0');
}

export class NativeTopicTrieAdapter implements TopicTrieCore {
  private readonly handle: Handle;
  /** Reused by `expand`: the name count, then where each name ends in the joined answer. */
  private ends = new Uint32Array(INITIAL_EXPAND_ENDS);

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
    return this.binding.topicTrieRemove(this.handle, name);
  }

  idOf(name: string): number {
    return this.binding.topicTrieIdOf(this.handle, name);
  }

  nameOf(id: number): string | undefined {
    return this.binding.topicTrieNameOf(this.handle, id) ?? undefined;
  }

  get size(): number {
    return this.binding.topicTrieSize(this.handle);
  }

  expand(pattern: string): string[] | null {
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
  }

  stats(): TopicTrieStats {
    const [names = 0, nodes = 0, segments = 0, approximateBytes = 0] = this.binding.topicTrieStats(this.handle);
    return { names, nodes, segments, approximateBytes };
  }
}
