/**
 * The broker suite: end-to-end send → POP → ack over 100,000 lite
 * topics of the parent `agents`, three groups (planner: shared, 4 clients; tools: exclusive, 4
 * clients; auditor: wildcard with patterns), both engines, the in-memory store and the on-disk store
 * (`flush: 'async'`). See broker-scenario.ts for the setup and broker-workload.ts for the traffic.
 *
 * 1. Throughput: a fixed number of messages sent with `sendBatch` as fast as the groups keep up;
 *    messages/s = messages ÷ (first send → last ack of the last group). Every delivery is checked
 *    (right group, exactly once, FIFO per lite topic, never redelivered) before a rate is reported.
 *    The same rounds also run broker-floor.ts, the least work any broker with this API does for the
 *    workload, through the same harness: its rate bounds what the broker can reach on the machine.
 * 2. Latency: every lite topic opened first (warm-up, not measured), then sends paced at half the
 *    configuration's measured median rate; send-to-pop latency = performance.now() when `pop`
 *    resolved − performance.now() just before the `sendBatch` that carried the message.
 *
 * Rounds are interleaved with the order reversed every other round; figures are medians over rounds.
 * Targets: broker-targets.ts.
 */

import type { EngineName } from '../ts/index.js';
import { printBrokerResult } from './broker-print.js';
import type { BrokerBenchConfig, BrokerBenchResult, LatencyRow, ThroughputRow } from './broker-result.js';
import { type Pace, runBroker, type StoreKind } from './broker-scenario.js';
import { checkBrokerTargets } from './broker-targets.js';
import { makeBrokerWorkload } from './broker-workload.js';
import { benchSeed, stats } from './lib.js';
import { figure } from './table.js';

const { median, quantiles, spreadPercent } = stats;

const SEED = benchSeed(20_250_505);
const CASES: readonly { engine: EngineName; store: StoreKind }[] = [
  { engine: 'native', store: 'memory' },
  { engine: 'js', store: 'memory' },
  { engine: 'native', store: 'disk' },
  { engine: 'js', store: 'disk' },
];
/** Throughput also runs the floor (broker-floor.ts): the ceiling of any broker with this API here. */
const THROUGHPUT_CASES: readonly { engine: EngineName; store: StoreKind }[] = [
  ...CASES,
  { engine: 'native', store: 'floor' },
];

function configFor(quick: boolean): BrokerBenchConfig {
  const common = { seed: SEED, bodyBytes: 128, sendBatch: 100, maxLagMessages: 10_000, pacedBatch: 32, loadShare: 0.5 };
  return quick
    ? { ...common, quick, topics: 10_000, messages: 20_000, pacedSeconds: 1, rounds: 1 }
    : { ...common, quick, topics: 100_000, messages: 150_000, pacedSeconds: 5, rounds: 5 };
}

const caseName = (c: { engine: EngineName; store: StoreKind }) => `${c.engine} ${c.store}`;
const errorText = (error: unknown) => (error instanceof Error ? (error.stack ?? error.message) : String(error));

/** Each case in `rounds` interleaved rounds, order reversed every other round; a failed case is not run again. */
async function interleaved<T>(
  config: BrokerBenchConfig,
  cases: typeof CASES,
  run: (c: (typeof CASES)[number], round: number) => Promise<T>,
) {
  const results = new Map<string, T[]>();
  const errors = new Map<string, string>();
  for (let round = 0; round < config.rounds; round++) {
    for (const c of round % 2 === 1 ? [...cases].reverse() : cases) {
      const name = caseName(c);
      if (errors.has(name)) continue;
      try {
        const figures = await run(c, round);
        results.set(name, [...(results.get(name) ?? []), figures]);
      } catch (error) {
        errors.set(name, errorText(error));
        console.log(`  round ${round + 1}/${config.rounds}, ${name}: failed: ${errorText(error).split('\n')[0]}`);
      }
    }
  }
  return { results, errors };
}

/**
 * Runs every case once on a tenth of the workload, untimed and unchecked for rates, so the timed rounds
 * meet compiled code as a running service does: the first case of a process otherwise runs much of
 * its hot path in V8's interpreter, and which case is first changes every other round.
 */
async function warmUp(config: BrokerBenchConfig, pace: Pace): Promise<void> {
  const messages = Math.max(1, Math.round(config.messages / 10));
  const topics = Math.max(1, Math.round(config.topics / 10));
  const work = makeBrokerWorkload(messages, topics, messages, config.bodyBytes, config.seed);
  for (const c of THROUGHPUT_CASES) {
    try {
      await runBroker(c.engine, c.store, work, pace);
    } catch (error) {
      // The timed rounds run the case again and report its failure.
      console.log(`  warm-up, ${caseName(c)}: failed: ${errorText(error).split('\n')[0]}`);
    }
  }
}

async function measureThroughput(config: BrokerBenchConfig): Promise<ThroughputRow[]> {
  const work = makeBrokerWorkload(config.messages, config.topics, config.messages, config.bodyBytes, config.seed);
  const pace: Pace = { kind: 'max', batch: config.sendBatch, maxLagMessages: config.maxLagMessages };
  await warmUp(config, pace);
  const { results, errors } = await interleaved(config, THROUGHPUT_CASES, async (c, round) => {
    const f = await runBroker(c.engine, c.store, work, pace);
    const rate = (f.messages / f.elapsedMs) * 1000;
    console.log(
      `  round ${round + 1}/${config.rounds}, ${caseName(c)}: ${figure(rate)} msgs/s end to end ` +
        `(${figure((f.deliveries / f.elapsedMs) * 1000)} deliveries/s, ${f.deliveries.toLocaleString('en-US')} ` +
        `popped and acked, all checked), ${figure((f.cpuMs / f.timedMessages) * 1000)} µs CPU per message, setup ${figure(f.setupMs)} ms`,
    );
    return f;
  });
  return THROUGHPUT_CASES.map((c) => {
    const runs = results.get(caseName(c)) ?? [];
    const rates = runs.map((f) => (f.messages / f.elapsedMs) * 1000);
    const rate = median(rates);
    const error = errors.get(caseName(c));
    return {
      ...c,
      messages: config.messages,
      deliveries: runs[0]?.deliveries ?? Number.NaN,
      roundRates: rates,
      messagesPerSecond: error === undefined ? rate : Number.NaN,
      deliveriesPerSecond:
        error === undefined ? median(runs.map((f) => (f.deliveries / f.elapsedMs) * 1000)) : Number.NaN,
      sentPerSecond: error === undefined ? median(runs.map((f) => (f.messages / f.sendMs) * 1000)) : Number.NaN,
      setupMs: median(runs.map((f) => f.setupMs)),
      cpuMicrosPerMessage: median(runs.map((f) => (f.cpuMs / f.timedMessages) * 1000)),
      spreadPercent: spreadPercent(rates),
      ...(error === undefined ? {} : { error }),
    };
  });
}

interface LatencyRound {
  achievedRate: number;
  messages: number;
  deliveries: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
  scheduleP99: number;
  byGroup: { group: string; p50: number; p99: number }[];
}

/** The values of several tallies in one array, and the largest of them (NaN when there are none). */
function pooled(parts: readonly Float64Array[]): { all: Float64Array; max: number } {
  const all = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  let max = Number.NaN;
  for (const part of parts) {
    all.set(part, at);
    at += part.length;
    for (const value of part) if (!(value <= max)) max = value;
  }
  return { all, max };
}

async function measureLatency(config: BrokerBenchConfig, throughput: readonly ThroughputRow[]): Promise<LatencyRow[]> {
  const rateOf = (c: (typeof CASES)[number]) => {
    const row = throughput.find((r) => r.engine === c.engine && r.store === c.store);
    return Math.max(1, Math.round((row?.messagesPerSecond ?? Number.NaN) * config.loadShare));
  };
  const { results, errors } = await interleaved(config, CASES, async (c, round) => {
    const rate = rateOf(c);
    if (!Number.isFinite(rate)) throw new Error('no throughput figure to pace from');
    const timed = Math.max(1, Math.round(rate * config.pacedSeconds));
    const work = makeBrokerWorkload(config.topics + timed, config.topics, config.topics, config.bodyBytes, config.seed);
    const pace: Pace = {
      kind: 'paced',
      batch: config.pacedBatch,
      maxLagMessages: config.maxLagMessages,
      rate,
      warmupMessages: config.topics,
    };
    const f = await runBroker(c.engine, c.store, work, pace);
    const { all, max } = pooled(f.tallies.map((t) => t.latencies));
    const [p50, p99, p999] = quantiles(all, [0.5, 0.99, 0.999]) as [number, number, number];
    const figures: LatencyRound = {
      achievedRate: (f.timedMessages / f.sendMs) * 1000,
      messages: f.timedMessages,
      deliveries: all.length,
      p50,
      p99,
      p999,
      max,
      scheduleP99: quantiles(pooled(f.tallies.map((t) => t.scheduleLatencies)).all, [0.99])[0] as number,
      byGroup: f.tallies.map((t) => {
        const [groupP50, groupP99] = quantiles(t.latencies, [0.5, 0.99]) as [number, number];
        return { group: t.group, p50: groupP50, p99: groupP99 };
      }),
    };
    console.log(
      `  round ${round + 1}/${config.rounds}, ${caseName(c)} at ${figure(rate)} msgs/s (achieved ${figure(figures.achievedRate)}): ` +
        `send-to-pop p50 ${figure(figures.p50)} ms, p99 ${figure(figures.p99)} ms over ${figures.deliveries.toLocaleString('en-US')} deliveries`,
    );
    return figures;
  });
  return CASES.map((c) => {
    const runs = results.get(caseName(c)) ?? [];
    const error = errors.get(caseName(c));
    const med = (pick: (r: LatencyRound) => number) => (error === undefined ? median(runs.map(pick)) : Number.NaN);
    return {
      ...c,
      rate: rateOf(c),
      achievedRate: med((r) => r.achievedRate),
      messages: runs[0]?.messages ?? Number.NaN,
      deliveries: runs[0]?.deliveries ?? Number.NaN,
      p50Ms: med((r) => r.p50),
      p99Ms: med((r) => r.p99),
      p999Ms: med((r) => r.p999),
      maxMs: med((r) => r.max),
      scheduleP99Ms: med((r) => r.scheduleP99),
      byGroup: (runs[0]?.byGroup ?? []).map((g, i) => ({
        group: g.group,
        p50Ms: med((r) => r.byGroup[i]?.p50 ?? Number.NaN),
        p99Ms: med((r) => r.byGroup[i]?.p99 ?? Number.NaN),
      })),
      roundP99Ms: runs.map((r) => r.p99),
      ...(error === undefined ? {} : { error }),
    };
  });
}

/** Runs the broker suite, prints its tables and returns the figures. */
export async function runBrokerBench(options: { quick: boolean }): Promise<BrokerBenchResult> {
  const config = configFor(options.quick);
  console.log(
    `\n# broker${config.quick ? ' (quick)' : ''}: seed ${config.seed}, ${config.topics.toLocaleString('en-US')} lite topics, ` +
      `${config.messages.toLocaleString('en-US')} messages of ${config.bodyBytes} B per throughput run, ${config.rounds} interleaved rounds`,
  );
  console.log('throughput (send as fast as the groups keep up):');
  const throughput = await measureThroughput(config);
  printBrokerResult({ config, throughput });
  console.log(
    `latency (paced at ${config.loadShare * 100}% of each case's median throughput, after a warm-up that opens every lite topic):`,
  );
  const latency = await measureLatency(config, throughput);
  printBrokerResult({ config, latency });
  const targets = checkBrokerTargets(throughput, latency);
  printBrokerResult({ config, targets });
  return { config, throughput, latency, targets };
}
