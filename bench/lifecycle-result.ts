/**
 * What the lifecycle suite records (results/lifecycle.json): its configuration and figures. The
 * runner (lifecycle.ts) produces it; the tables (lifecycle-print.ts) and targets
 * (lifecycle-targets.ts) read it.
 */
import type { ExpiryConfig, ExpiryRow } from './lifecycle-expiry.js';
import type { ReopenRow } from './lifecycle-reopen.js';
import type { Target } from './targets.js';

export type { ExpiryRow, ReopenRow };

export interface LifecycleBenchConfig {
  quick: boolean;
  seed: number;
  messages: number;
  liteTopics: number;
  /** Why `messages` is below what was asked, when it is. */
  scaleNote?: string;
  expiry: ExpiryConfig;
  /** 1-minute load average before the suite and after it (the machine is shared; 2 cores here). */
  loadAverage?: [number, number];
}

export interface LifecycleBenchResult {
  config: LifecycleBenchConfig;
  reopen: ReopenRow[];
  expiry: ExpiryRow[];
  targets: Target[];
}
