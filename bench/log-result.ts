/**
 * What the log suite records (results/log.json): its configuration and figures. The runner
 * (log.ts) produces it; the tables (log-print.ts) and targets (log-targets.ts) read it.
 */
import type { EngineName } from '../ts/index.js';
import type { DiskProbe } from './log-disk.js';
import type { FootprintSample } from './log-footprint.js';
import type { LmqScaleSample } from './log-lmqs.js';
import type { RecoveryRow } from './log-recovery.js';
import type { StoreName } from './log-stores.js';
import type { Measurement } from './measure.js';
import type { Target } from './targets.js';

export type { FootprintSample, LmqScaleSample, RecoveryRow };

export interface LogBenchConfig {
  quick: boolean;
  seed: number;
  records: number;
  /**
   * Records of the durable cases (the workload's first ones): a synced append runs at the disk's sync
   * rate, which a shorter run measures as well, and lmdb's synced 1 KiB rate would otherwise take
   * minutes per round.
   */
  durableRecords: number;
  lmqs: number;
  batchRecords: number;
  bodySizes: number[];
  rounds: number;
  /** Full read passes per store and round (the round's figure is their median). */
  readPasses: number;
  /** Durable appends: records per concurrent call and calls in flight (1,000 records in flight). */
  callRecords: number;
  inFlightCalls: number;
  /** Non-durable lmdb: batches issued before the oldest is awaited (see log-stores.ts). */
  lmdbWindowBatches: number;
  recoverBytes: number;
  /** Why `recoverBytes` is below what was asked, when it is. */
  recoverNote?: string;
  checkpointBytes: number;
  probeBytes: number;
  /** The many-LMQ probe (bench/log-lmqs.ts): LMQs of one record each, then the first `scaleExtraLmqs` get 9 more. */
  scaleLmqs: number;
  scaleExtraLmqs: number;
  /** The descriptor limit the probe runs under where a shell can lower it (20,000: the target's limit). */
  scaleOpenFilesLimit: number;
}

export interface AppendRow {
  store: StoreName;
  bodyBytes: number;
  durable: boolean;
  /** Records appended per run. */
  records: number;
  /** Per-record figures; null when the store failed (see `error`). */
  measurement: Measurement | null;
  recordsPerSecond: number;
  /** Body bytes per second. */
  payloadBytesPerSecond: number;
  /** How many times faster litetopic native was, paired by round. */
  nativeSpeedup: number;
  /** What the store left on disk after closing, in the first round. */
  apparentBytes: number;
  allocatedBytes: number;
  payloadBytes: number;
  error?: string;
}

export interface ReadRow {
  store: StoreName;
  bodyBytes: number;
  measurement: Measurement | null;
  recordsPerSecond: number;
  nativeSpeedup: number;
  error?: string;
}

/** The copy-plus-checksum floor under the native warm read (bench/log-floor.ts), one body size. */
export interface ReadFloorRow {
  bodyBytes: number;
  measurement: Measurement | null;
  recordsPerSecond: number;
  /** The native read's speed as a share of the floor's, paired by round. */
  nativeShare: number;
  error?: string;
}

export interface LogBenchResult {
  config: LogBenchConfig;
  disk: DiskProbe & { freeBytes: number };
  append: AppendRow[];
  read: ReadRow[];
  /** Absent from runs recorded before the floor was measured in the suite. */
  readFloor?: ReadFloorRow[];
  footprint: (FootprintSample | { store: StoreName; error: string })[];
  /** Absent from runs recorded before the probe existed. */
  lmqScale?: (LmqScaleSample | { engine: EngineName; error: string })[];
  recovery: RecoveryRow[];
  targets: Target[];
}
