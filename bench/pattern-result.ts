/**
 * What the pattern suite records (results/pattern.json): its configuration and figures. The runner
 * (pattern.ts) produces it; the tables (pattern-print.ts) and targets (pattern-targets.ts) read it.
 */
import type { Timing } from './measure.js';
import type { CrossingRow } from './pattern-crossing.js';
import type { MemorySample } from './pattern-memory.js';
import type { ReverseRow } from './pattern-reverse.js';
import type { SingleMatchRow } from './pattern-single.js';
import type { Target } from './targets.js';

export type { CrossingRow, MemorySample, ReverseRow, SingleMatchRow };

export interface PatternBenchConfig {
  quick: boolean;
  seed: number;
  timing: Timing;
  reverseSizes: number[];
  topicsPerIteration: number;
  memoryPatterns: number;
  /** Fresh processes per index in the memory section; the median is reported. */
  memoryRuns: number;
}

export interface PatternBenchResult {
  config: PatternBenchConfig;
  singleMatch: SingleMatchRow[];
  reverse: ReverseRow[];
  memory: MemorySample[];
  crossing: CrossingRow[];
  targets: Target[];
}
