/**
 * What the key-shared suite records (results/key-shared.json): its configuration and figures, and
 * those of one run (key-shared-run.ts). The runner (key-shared.ts) produces them; the tables
 * (key-shared-print.ts) and targets (key-shared-targets.ts) read them.
 */
import type { EngineName } from '../ts/index.js';
import type { Target } from './targets.js';

/** The row of the harness alone (no broker): the ceiling. */
export const TIMERS_ONLY = 'timers only';

export interface KeySharedRunConfig {
  keys: number;
  buckets: number;
  /** Clients of each measured phase, increasing. */
  phases: number[];
  processMs: number;
  popMax: number;
  waitMs: number;
  invisibleTimeMs: number;
  /** Measured time of each phase, after its last join and `settleMs`. */
  phaseMs: number;
  settleMs: number;
  /** Time after each join before the next one (or before the phase's settle). */
  joinGapMs: number;
  /** The producer keeps sent − acked at about this many messages. */
  backlog: number;
  sendBatch: number;
  seed: number;
}

export interface PhaseFigures {
  clients: number;
  acks: number;
  ms: number;
  messagesPerSecond: number;
  /** Mean measured length of a 1 ms "processing" timer, ms. */
  timerMs: number;
  /** messagesPerSecond ÷ (clients × 1000 ÷ timerMs): the share of the clients' time spent processing. */
  efficiency: number;
  /** Pops that came back empty during the phase. */
  emptyPops: number;
  /** Least sent − delivered (messages not yet handed out) the producer saw during the phase. */
  minReady: number;
  /** CPU time of this process (user + system) over the phase's wall time: 1 = one core busy. */
  cpuShare: number;
}

export interface JoinFigures {
  /** Clients before this join. */
  from: number;
  moved: number;
  /** Moved buckets `groupInfo().keyShared.withheld` listed right after the join. */
  withheld: number;
  /** Per moved bucket: join → its first delivery to its new owner, ms. */
  pausesMs: number[];
  /** Moved buckets not delivered to their new owner before they moved again or the run ended. */
  unresolved: number;
  /** The same for buckets that kept their owner: join → next delivery of them (a baseline). */
  keptMs: number[];
  /** How long the new client's `subscribe` took, and the admin reads after it (the bench's own cost), ms. */
  subscribeMs: number;
  adminMs: number;
}

export interface Violations {
  i1Key: number;
  i1Bucket: number;
  i2: number;
  duplicates: number;
  redeliveries: number;
  first: string[];
}

export interface KeySharedRunResult {
  engine: EngineName;
  phases: PhaseFigures[];
  joins: JoinFigures[];
  sent: number;
  deliveries: number;
  violations: Violations;
}

export interface KeySharedBenchConfig extends KeySharedRunConfig {
  quick: boolean;
  rounds: number;
  /** Length of each phase of the harness-alone control, ms. */
  controlMs: number;
}

export interface PhaseRow {
  engine: EngineName | typeof TIMERS_ONLY;
  clients: number;
  messagesPerSecond: number;
  /** Median over rounds of this phase's rate ÷ the 1-client rate of the same round. */
  speedup: number;
  timerMs: number;
  efficiency: number;
  emptyPops: number;
  minReady: number;
  cpuShare: number;
  spreadPercent: number;
  roundRates: number[];
}

export interface PauseRow {
  engine: EngineName;
  /** Clients before → after, or "all". */
  join: string;
  joins: number;
  moved: number;
  withheld: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  unresolved: number;
  keptP50Ms: number;
  keptP99Ms: number;
}

export interface EngineRuns {
  engine: EngineName;
  deliveries: number;
  sent: number;
  violations: KeySharedRunResult['violations'];
  error?: string;
}

export interface KeySharedBenchResult {
  config: KeySharedBenchConfig;
  phases: PhaseRow[];
  pauses: PauseRow[];
  runs: EngineRuns[];
  targets: Target[];
}
