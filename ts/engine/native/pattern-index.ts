/**
 * Native adapter for the reverse pattern index: one long-lived native handle, typed arrays across.
 * The binding exports free functions over the handle (see native/napi/src/pattern_index.rs for
 * why). A panic in the binding arrives as `INTERNAL_ERROR` and leaves the handle failed; every
 * method rethrows it typed (`toTypedError`).
 */

import { DIALECTS } from '../../common/dialect.js';
import type { DialectName, PatternIndexCore, PatternIndexStats } from '../contract.js';
import type { NativeBinding } from './binding.js';
import { toTypedError } from './log.js';

type Handle = ReturnType<NativeBinding['patternIndexNew']>;

export class NativePatternIndexAdapter implements PatternIndexCore {
  private readonly handle: Handle;
  /** Reused by `match`; grows when a topic matches more ids than it holds. */
  private scratch = new Uint32Array(64);

  constructor(
    private readonly binding: NativeBinding,
    dialect: DialectName,
  ) {
    try {
      this.handle = binding.patternIndexNew(DIALECTS[dialect].id);
    } catch (error) {
      throw toTypedError(error);
    }
  }

  add(pattern: string, id: number): 1 | 0 | -1 {
    try {
      return this.binding.patternIndexAdd(this.handle, pattern, id) as 1 | 0 | -1;
    } catch (error) {
      throw toTypedError(error);
    }
  }

  remove(pattern: string, id: number): boolean {
    try {
      return this.binding.patternIndexRemove(this.handle, pattern, id);
    } catch (error) {
      throw toTypedError(error);
    }
  }

  get size(): number {
    try {
      return this.binding.patternIndexSize(this.handle);
    } catch (error) {
      throw toTypedError(error);
    }
  }

  clear(): void {
    try {
      this.binding.patternIndexClear(this.handle);
    } catch (error) {
      throw toTypedError(error);
    }
  }

  match(topic: string): number[] {
    try {
      let count = this.binding.patternIndexMatchInto(this.handle, topic, this.scratch);
      if (count > this.scratch.length) {
        // Grow to the next power of two that fits, and ask again.
        this.scratch = new Uint32Array(2 ** Math.ceil(Math.log2(count)));
        count = this.binding.patternIndexMatchInto(this.handle, topic, this.scratch);
      }
      const ids = new Array<number>(count);
      for (let i = 0; i < count; i++) ids[i] = this.scratch[i] as number;
      return ids;
    } catch (error) {
      throw toTypedError(error);
    }
  }

  matchInto(topic: string, out: Uint32Array): number {
    try {
      return this.binding.patternIndexMatchInto(this.handle, topic, out);
    } catch (error) {
      throw toTypedError(error);
    }
  }

  matchCounts(topics: readonly string[], out: Uint32Array): number {
    try {
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
    } catch (error) {
      throw toTypedError(error);
    }
  }

  stats(): PatternIndexStats {
    try {
      const [entries = 0, nodes = 0, segments = 0, approximateBytes = 0] = this.binding.patternIndexStats(this.handle);
      return { entries, nodes, segments, approximateBytes };
    } catch (error) {
      throw toTypedError(error);
    }
  }
}
