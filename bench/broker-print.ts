/**
 * The broker suite's figures as tables: the same headers and cells feed the console (aligned text)
 * and bench/RESULTS.md (markdown).
 */
import type { BrokerBenchResult, LatencyRow, ThroughputRow } from './broker-result.js';
import { AUDITOR_PATTERNS } from './broker-workload.js';
import { cell, failure, printTables, type Table } from './table.js';
import { targetsTable } from './targets.js';

type PartialResult = Pick<BrokerBenchResult, 'config'> & Partial<Omit<BrokerBenchResult, 'config'>>;

const STORE_NAMES: Record<string, string> = {
  memory: 'memory',
  disk: "disk (flush 'async')",
  floor: 'floor: minimal broker, memory',
};
const storeName = (store: string) => STORE_NAMES[store] ?? store;

function throughputTable(rows: readonly ThroughputRow[], config: BrokerBenchResult['config']): Table {
  return {
    title: `End-to-end throughput (${config.messages.toLocaleString('en-US')} messages, ${config.topics.toLocaleString('en-US')} lite topics)`,
    note:
      `One producer: \`sendBatch\` of ${config.sendBatch}, at most ${config.maxLagMessages.toLocaleString('en-US')} messages ` +
      'sent but not yet acked by planner or tools. msgs/s = messages ÷ (first send → last ack of the last group); ' +
      "deliveries/s counts every pop+ack of every group; sent/s is the producer's view (until the last send resolved). " +
      'CPU µs/msg = CPU time of the process (all threads) over the run ÷ messages. ' +
      'Each case runs once untimed on a tenth of the workload before the rounds (warm-up: the rounds meet compiled ' +
      'code, as a running service does). Medians over rounds; spread = range of the rounds over the median. ' +
      'The floor row is not the broker: it is bench/broker-floor.ts, the least work any broker with this API does for ' +
      'this workload (trie, pattern match, stored message, one event per group, FIFO, message objects, one promise per ' +
      'ack; state in typed arrays by integer id; no journal, invisible time, timers, quotas or validation), run by the ' +
      'same harness and checks. Its rate bounds what a broker can reach on this machine.',
    headers: [
      'engine',
      'store',
      'msgs/s',
      'deliveries/s',
      'sent/s',
      'CPU µs/msg',
      'deliveries',
      'spread %',
      'setup ms',
      'note',
    ],
    rows: rows.map((r) => [
      r.engine,
      storeName(r.store),
      cell(r.messagesPerSecond),
      cell(r.deliveriesPerSecond),
      cell(r.sentPerSecond),
      cell(r.cpuMicrosPerMessage),
      cell(r.deliveries),
      cell(r.spreadPercent),
      cell(r.setupMs),
      failure(r.error),
    ]),
  };
}

function latencyTable(rows: readonly LatencyRow[], config: BrokerBenchResult['config']): Table {
  return {
    title: 'Send-to-pop latency under long poll',
    note:
      `After a warm-up that opens all ${config.topics.toLocaleString('en-US')} lite topics (not measured), ${config.pacedSeconds} s ` +
      `of sends paced at ${config.loadShare * 100}% of the case's median throughput, batches of at most ${config.pacedBatch} due messages. ` +
      'Latency = `performance.now()` when `pop` resolved − just before the `sendBatch` carrying the message, over every ' +
      'delivery of every group; "from schedule" counts from when the pace meant to send it (includes producer lag). ' +
      'Medians over rounds.',
    headers: [
      'engine',
      'store',
      'paced msgs/s',
      'achieved',
      'deliveries',
      'p50 ms',
      'p99 ms',
      'p99.9 ms',
      'max ms',
      'p99 from schedule',
      'p99 by group',
      'note',
    ],
    rows: rows.map((r) => [
      r.engine,
      storeName(r.store),
      cell(r.rate),
      cell(r.achievedRate),
      cell(r.deliveries),
      cell(r.p50Ms),
      cell(r.p99Ms),
      cell(r.p999Ms),
      cell(r.maxMs),
      cell(r.scheduleP99Ms),
      r.byGroup.map((g) => `${g.group} ${cell(g.p99Ms)}`).join(', '),
      failure(r.error),
    ]),
  };
}

/** The tables for whichever sections `result` holds. */
export function brokerTables(result: PartialResult): Table[] {
  const tables: Table[] = [];
  if (result.throughput) tables.push(throughputTable(result.throughput, result.config));
  if (result.latency) tables.push(latencyTable(result.latency, result.config));
  if (result.targets)
    tables.push(
      targetsTable(
        result.targets,
        'Ratios to js and to the floor row are paired by round: the median over rounds of the two cases run back to ' +
          `back in that round. Groups: planner (shared, 4 catch-all wildcard clients), tools (exclusive, 4 clients with a quarter of the names each), auditor (wildcard: ${AUDITOR_PATTERNS.map((p) => `\`${p}\``).join(', ')}).`,
      ),
    );
  return tables;
}

export function printBrokerResult(result: PartialResult): void {
  printTables(brokerTables(result));
}
