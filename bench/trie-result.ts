/**
 * What the trie suite records (results/trie.json): its configuration and figures. The runner
 * (trie.ts) produces it; the tables (trie-print.ts) and targets (trie-targets.ts) read it.
 */
import type { Measurement, Timing } from './measure.js';
import type { Target } from './targets.js';
import type { ChurnResult } from './trie-churn.js';
import type { TrieMemorySample } from './trie-memory.js';

export type { ChurnResult, TrieMemorySample };

export interface TrieBenchConfig {
  quick: boolean;
  seed: number;
  names: number;
  timing: Timing;
}

export interface ExpandRow {
  pattern: string;
  matched: number;
  nativeNs: number;
  jsNs: number;
  /**
   * The first `expand` of this pattern on each trie, once (after the tries were laid out and after
   * the patterns above it in the table): on native it builds the strings the later calls reuse.
   */
  nativeFirstNs: number;
  jsFirstNs: number;
  /** expandIds into a reused Uint32Array: the batched path without building strings. */
  nativeIdsNs: number;
  jsIdsNs: number;
  scanNs: number;
  /** Scan time over expand time (names), paired by round (see `pairedSpeedup`). */
  nativeSpeedup: number;
  jsSpeedup: number;
  /** js time over native time (names), paired by round; absent from runs recorded before it was. */
  nativeOverJsSpeedup?: number;
  /** Whether the pattern is selective (one name, session, agent or tenant of ordinary size). */
  selective: boolean;
}

export interface TrieBenchResult {
  config: TrieBenchConfig;
  memory: TrieMemorySample[];
  expand: ExpandRow[];
  smallShape: Measurement[];
  idle: Measurement[];
  /** Absent from runs recorded before the suite measured the trie under churn. */
  churn?: ChurnResult;
  targets: Target[];
}
