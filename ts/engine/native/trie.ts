/**
 * Native adapter for the topic-name trie: one long-lived native handle; lists of names cross as one
 * NUL-joined string (NUL is invalid in every dialect's names), ids in typed arrays, so a bulk call
 * crosses the boundary once whatever the size of its answer. The binding exports free functions
 * over the handle (see native/napi/src/index.rs for why).
 */
import type { DialectName, TopicTrieCore, TopicTrieStats } from '../contract.js';
import { DIALECTS } from '../js/dialect.js';
import type { NativeBinding } from './binding.js';

type Handle = ReturnType<NativeBinding['topicTrieNew']>;

function split(joined: string): string[] {
  return joined === '' ? [] : joined.split('\0');
}

export class NativeTopicTrieAdapter implements TopicTrieCore {
  private readonly handle: Handle;

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
    const joined = this.binding.topicTrieExpandJoined(this.handle, pattern);
    return joined === null || joined === undefined ? null : split(joined);
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
