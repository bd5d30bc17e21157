/**
 * The broker suite's figures as tables: the same headers and cells feed the console (aligned text)
 * and bench/RESULTS.md (markdown), as the other suites' *-print.ts files do.
 */
import type { BrokerBenchResult, LatencyRow, ThroughputRow } from './broker.js';
import { AUDITOR_PATTERNS } from './broker-workload.js';
import { figureTargetsTable } from './log-targets.js';
import { figure, textTable } from './measure.js';
import type { Table } from './pattern-print.js';

type PartialResult = Pick<BrokerBenchResult, 'config'> & Partial<Omit<BrokerBenchResult, 'config'>>;

function cell(value: number, format: (v: number) => string = figure): string {
  return Number.isFinite(value) ? format(value) : '—';
}

function failure(error: string | undefined): string {
  return error === undefined ? '' : `failed: ${error.split('\n')[0]?.slice(0, 120)}`;
}

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
      'Medians over rounds; spread = range of the rounds over the median. ' +
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
      figureTargetsTable(
        'Targets (issue #5)',
        result.targets,
        `Groups: planner (shared, 4 catch-all wildcard clients), tools (exclusive, 4 clients with a quarter of the names each), auditor (wildcard: ${AUDITOR_PATTERNS.map((p) => `\`${p}\``).join(', ')}).`,
      ),
    );
  return tables;
}

export function printBrokerResult(result: PartialResult): void {
  for (const table of brokerTables(result)) {
    console.log(`\n## ${table.title}`);
    if (table.note) console.log(table.note);
    console.log(textTable(table.headers, table.rows));
  }
}
