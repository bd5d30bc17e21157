/**
 * Native adapter for the reverse pattern index: one long-lived native handle, typed arrays across.
 * The binding exports free functions over the handle (see native/napi/src/index.rs for why).
 */
import type { DialectName, PatternIndexCore, PatternIndexStats } from '../contract.js';
import { DIALECTS } from '../js/dialect.js';
import type { NativeBinding } from './binding.js';

type Handle = ReturnType<NativeBinding['patternIndexNew']>;

export class NativePatternIndexAdapter implements PatternIndexCore {
  private readonly handle: Handle;
  /** Reused by `match`; grows when a topic matches more ids than it holds. */
  private scratch = new Uint32Array(64);

  constructor(
    private readonly binding: NativeBinding,
    dialect: DialectName,
  ) {
    this.handle = binding.patternIndexNew(DIALECTS[dialect].id);
  }

  add(pattern: string, id: number): 1 | 0 | -1 {
    return this.binding.patternIndexAdd(this.handle, pattern, id) as 1 | 0 | -1;
  }

  remove(pattern: string, id: number): boolean {
    return this.binding.patternIndexRemove(this.handle, pattern, id);
  }

  get size(): number {
    return this.binding.patternIndexSize(this.handle);
  }

  clear(): void {
    this.binding.patternIndexClear(this.handle);
  }

  match(topic: string): number[] {
    let count = this.binding.patternIndexMatchInto(this.handle, topic, this.scratch);
    if (count > this.scratch.length) {
      // Grow to the next power of two that fits, and ask again.
      this.scratch = new Uint32Array(2 ** Math.ceil(Math.log2(count)));
      count = this.binding.patternIndexMatchInto(this.handle, topic, this.scratch);
    }
    const ids = new Array<number>(count);
    for (let i = 0; i < count; i++) ids[i] = this.scratch[i] as number;
    return ids;
  }

  matchInto(topic: string, out: Uint32Array): number {
    return this.binding.patternIndexMatchInto(this.handle, topic, out);
  }

  matchCounts(topics: readonly string[], out: Uint32Array): number {
    const total = this.binding.patternIndexMatchCountsJoined(this.handle, topics.join('\0'), out);
    if (total >= 0) return total;
    // A topic contained NUL (so it matches nothing): count one by one.
    let sum = 0;
    const none = new Uint32Array(0);
    for (let i = 0; i < topics.length; i++) {
      const topic = topics[i] as string;
      const count = topic.includes('\0') ? 0 : this.binding.patternIndexMatchInto(this.handle, topic, none);
      out[i] = count;
      sum += count;
    }
    return sum;
  }

  stats(): PatternIndexStats {
    const [entries = 0, nodes = 0, segments = 0, approximateBytes = 0] = this.binding.patternIndexStats(this.handle);
    return { entries, nodes, segments, approximateBytes };
  }
}
