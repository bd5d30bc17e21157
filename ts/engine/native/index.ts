/** Native adapter for the reverse pattern index: one long-lived native object, typed arrays across. */
import type { DialectName, PatternIndexCore, PatternIndexStats } from '../contract.js';
import { DIALECTS } from '../js/dialect.js';
import type { NativeBinding } from './binding.js';

export class NativePatternIndexAdapter implements PatternIndexCore {
  private readonly native: InstanceType<NativeBinding['NativePatternIndex']>;
  /** Reused by `match`; grows when a topic matches more ids than it holds. */
  private scratch = new Uint32Array(64);

  constructor(binding: NativeBinding, dialect: DialectName) {
    this.native = new binding.NativePatternIndex(DIALECTS[dialect].id);
  }

  add(pattern: string, id: number): 1 | 0 | -1 {
    return this.native.add(pattern, id) as 1 | 0 | -1;
  }

  remove(pattern: string, id: number): boolean {
    return this.native.remove(pattern, id);
  }

  get size(): number {
    return this.native.size;
  }

  clear(): void {
    this.native.clear();
  }

  match(topic: string): number[] {
    let count = this.native.matchInto(topic, this.scratch);
    if (count > this.scratch.length) {
      // Grow to the next power of two that fits, and ask again.
      this.scratch = new Uint32Array(2 ** Math.ceil(Math.log2(count)));
      count = this.native.matchInto(topic, this.scratch);
    }
    return Array.from(this.scratch.subarray(0, count));
  }

  matchInto(topic: string, out: Uint32Array): number {
    return this.native.matchInto(topic, out);
  }

  matchCounts(topics: readonly string[], out: Uint32Array): number {
    const total = this.native.matchCountsJoined(topics.join('\0'), out);
    if (total >= 0) return total;
    // A topic contained NUL (so it matches nothing): count one by one.
    let sum = 0;
    const none = new Uint32Array(0);
    for (let i = 0; i < topics.length; i++) {
      const topic = topics[i] as string;
      const count = topic.includes('\0') ? 0 : this.native.matchInto(topic, none);
      out[i] = count;
      sum += count;
    }
    return sum;
  }

  stats(): PatternIndexStats {
    const [entries = 0, nodes = 0, segments = 0, approximateBytes = 0] = this.native.stats();
    return { entries, nodes, segments, approximateBytes };
  }
}
