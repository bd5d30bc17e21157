/**
 * Native adapter for the topic-name trie: one long-lived native object; lists of names cross as one
 * NUL-joined string (NUL is invalid in every dialect's names), ids in typed arrays, so a bulk call
 * crosses the boundary once whatever the size of its answer.
 */
import type { DialectName, TopicTrieCore, TopicTrieStats } from '../contract.js';
import { DIALECTS } from '../js/dialect.js';
import type { NativeBinding } from './binding.js';

function split(joined: string): string[] {
  return joined === '' ? [] : joined.split('\0');
}

export class NativeTopicTrieAdapter implements TopicTrieCore {
  private readonly native: InstanceType<NativeBinding['NativeTopicTrie']>;

  constructor(binding: NativeBinding, dialect: DialectName, maxNameBytes: number) {
    this.native = new binding.NativeTopicTrie(DIALECTS[dialect].id, maxNameBytes);
  }

  add(name: string, timestampMs: number | undefined): number {
    return this.native.add(name, timestampMs);
  }

  remove(name: string): boolean {
    return this.native.remove(name);
  }

  idOf(name: string): number {
    return this.native.idOf(name);
  }

  nameOf(id: number): string | undefined {
    return this.native.nameOf(id) ?? undefined;
  }

  get size(): number {
    return this.native.size;
  }

  expand(pattern: string): string[] | null {
    const joined = this.native.expandJoined(pattern);
    return joined === null || joined === undefined ? null : split(joined);
  }

  expandInto(pattern: string, out: Uint32Array): number {
    return this.native.expandInto(pattern, out);
  }

  count(pattern: string): number {
    return this.native.count(pattern);
  }

  list(prefix: string, limit: number, after: string | undefined): { names: string[]; more: boolean } {
    const page = this.native.listJoined(prefix, limit, after);
    return { names: split(page.names), more: page.more };
  }

  touch(name: string, timestampMs: number): boolean {
    return this.native.touch(name, timestampMs);
  }

  idleSince(cutoffMs: number, limit: number): string[] {
    return split(this.native.idleSinceJoined(cutoffMs, limit));
  }

  clear(): void {
    this.native.clear();
  }

  stats(): TopicTrieStats {
    const [names = 0, nodes = 0, segments = 0, approximateBytes = 0] = this.native.stats();
    return { names, nodes, segments, approximateBytes };
  }
}
