/**
 * Names ordered by last activity, mirroring `native/core/src/trie/idle.rs`: a sorted list of sorted
 * blocks of (timestamp, id) keys. The oldest names are read from the front in time proportional to
 * the answer; an insert or removal finds its block by binary search and moves at most one block's
 * worth of keys, whatever order the timestamps arrive in. Appends (non-decreasing timestamps, the
 * usual case) fill blocks completely.
 *
 * Unlike Rust, each key also carries its name's text: the idle names are spread over the whole id
 * range (one in a hundred, say), so looking each text up by id costs a cache and TLB miss per name,
 * a cost that grows with the active names around them; reading the texts next to the keys does not.
 */
import { TRIE_IDLE_BLOCK_ENTRIES } from '../../../common/limits.js';
import { firstPairFrom } from '../../../common/pair-search.js';

/** One block: keys as parallel arrays, sorted by (timestamp, id), and each key's name. */
interface Block {
  timestamps: number[];
  ids: number[];
  texts: string[];
}

function lastBelow(block: Block, timestamp: number, id: number): boolean {
  const at = block.ids.length - 1;
  const t = block.timestamps[at] as number;
  return t < timestamp || (t === timestamp && (block.ids[at] as number) < id);
}

/** The first position in `block` whose key is not below (timestamp, id). */
function positionIn(block: Block, timestamp: number, id: number): number {
  return firstPairFrom(block.timestamps, block.ids, block.ids.length, timestamp, id);
}

export class IdleSet {
  /** Non-empty blocks, every key of a block below every key of the next. */
  private blocks: Block[] = [];

  /** The block that holds the key or where it belongs: the first whose last key is not below it. */
  private blockFor(timestamp: number, id: number): number {
    let low = 0;
    let high = this.blocks.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (lastBelow(this.blocks[mid] as Block, timestamp, id)) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  insert(timestamp: number, id: number, text: string): void {
    const at = this.blockFor(timestamp, id);
    if (at === this.blocks.length) {
      // Past every key: append, opening a new block when the last is full.
      const last = this.blocks[at - 1];
      if (last !== undefined && last.ids.length < TRIE_IDLE_BLOCK_ENTRIES) {
        last.timestamps.push(timestamp);
        last.ids.push(id);
        last.texts.push(text);
      } else {
        this.blocks.push({ timestamps: [timestamp], ids: [id], texts: [text] });
      }
      return;
    }
    const block = this.blocks[at] as Block;
    const position = positionIn(block, timestamp, id);
    block.timestamps.splice(position, 0, timestamp);
    block.ids.splice(position, 0, id);
    block.texts.splice(position, 0, text);
    if (block.ids.length > TRIE_IDLE_BLOCK_ENTRIES) {
      const half = block.ids.length >>> 1;
      this.blocks.splice(at + 1, 0, {
        timestamps: block.timestamps.splice(half),
        ids: block.ids.splice(half),
        texts: block.texts.splice(half),
      });
    }
  }

  /** Removes the key, which must be present. */
  remove(timestamp: number, id: number): void {
    const at = this.blockFor(timestamp, id);
    const block = this.blocks[at];
    if (block === undefined) throw new Error(`idle set: key (${timestamp}, ${id}) is missing`);
    const position = positionIn(block, timestamp, id);
    if (block.ids[position] !== id || block.timestamps[position] !== timestamp) {
      throw new Error(`idle set: key (${timestamp}, ${id}) is missing`);
    }
    block.timestamps.splice(position, 1);
    block.ids.splice(position, 1);
    block.texts.splice(position, 1);
    if (block.ids.length === 0) this.blocks.splice(at, 1);
  }

  /** The names whose timestamp is below `cutoffMs`, oldest first, at most `limit`. */
  olderThan(cutoffMs: number, limit: number): string[] {
    const out: string[] = [];
    for (const block of this.blocks) {
      const { timestamps, texts } = block;
      for (let i = 0; i < texts.length; i++) {
        if ((timestamps[i] as number) >= cutoffMs || out.length >= limit) return out;
        out.push(texts[i] as string);
      }
    }
    return out;
  }

  /** A rough figure: three 8-byte slots per key plus the block headers. */
  approximateBytes(): number {
    let keys = 0;
    for (const block of this.blocks) keys += block.ids.length;
    return keys * 24 + this.blocks.length * 96;
  }
}
