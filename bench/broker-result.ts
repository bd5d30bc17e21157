/**
 * What the broker suite records (results/broker.json): its configuration and figures. The runner
 * (broker.ts) produces it; the tables (broker-print.ts) and targets (broker-targets.ts) read it.
 */
import type { EngineName } from '../ts/index.js';
import type { StoreKind } from './broker-scenario.js';
import type { Target } from './targets.js';

export interface BrokerBenchConfig {
  quick: boolean;
  seed: number;
  topics: number;
  /** Messages of each throughput run. */
  messages: number;
  bodyBytes: number;
  sendBatch: number;
  /** Most messages sent but not yet acked by the planner or tools group (flow control). */
  maxLagMessages: number;
  /** Largest batch of due messages a paced send carries. */
  pacedBatch: number;
  /** Length of the paced (measured) phase of a latency run, s. */
  pacedSeconds: number;
  /** Paced rate as a share of the configuration's median throughput. */
  loadShare: number;
  rounds: number;
}

export interface ThroughputRow {
  engine: EngineName;
  store: StoreKind;
  messages: number;
  deliveries: number;
  /** End-to-end messages/s per round. */
  roundRates: number[];
  messagesPerSecond: number;
  deliveriesPerSecond: number;
  /** Messages/s until the last send resolved (the producer's view). */
  sentPerSecond: number;
  setupMs: number;
  /** CPU time of the process per message over the timed phase, µs (median over rounds). */
  cpuMicrosPerMessage: number;
  spreadPercent: number;
  error?: string;
}

export interface LatencyRow {
  engine: EngineName;
  store: StoreKind;
  /** Rate asked for, messages/s; achieved: timed messages over the paced phase. */
  rate: number;
  achievedRate: number;
  messages: number;
  deliveries: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  /** p99 counted from the scheduled send time: includes any lag of the producer behind the pace. */
  scheduleP99Ms: number;
  byGroup: { group: string; p50Ms: number; p99Ms: number }[];
  roundP99Ms: number[];
  error?: string;
}

export interface BrokerBenchResult {
  config: BrokerBenchConfig;
  throughput: ThroughputRow[];
  latency: LatencyRow[];
  targets: Target[];
}
