/**
 * Machine-readable results (<out>/results/<suite>.json) and <out>/RESULTS.md, which is regenerated
 * from them after every written run: nothing in it is typed by hand. <out> is bench/ in a source
 * checkout, or the directory `litetopic bench --out` names (./litetopic-bench from an installed
 * package, which must not write into its own directory).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import type { EngineInfo } from '../ts/index.js';
import { writeCharts } from './charts.js';
import { lib, PACKAGE_ROOT, type SkippedPeer } from './lib.js';

const { engineInfo } = lib;

import type { BrokerBenchResult } from './broker.js';
import { brokerTables } from './broker-print.js';
import type { KeySharedBenchResult } from './keyshared.js';
import { keySharedTables } from './keyshared-print.js';
import type { LifecycleBenchResult } from './lifecycle.js';
import { lifecycleTables } from './lifecycle-print.js';
import type { LogBenchResult } from './log.js';
import { logTables } from './log-print.js';
import { isNumericColumn, type Timing } from './measure.js';
import type { PatternBenchResult, TargetCheck } from './pattern.js';
import { patternTables, type Table } from './pattern-print.js';
import { type RocketmqBenchResult, rocketmqTables } from './rocketmq.js';
import type { TrieBenchResult } from './trie.js';
import { trieTables } from './trie-print.js';

export interface Environment {
  date: string;
  cpu: string;
  cores: number;
  memoryBytes: number;
  platform: string;
  node: string;
  packageVersion: string;
  engine: EngineInfo;
}

interface RecordOf<S extends string, R> {
  suite: S;
  command: string;
  environment: Environment;
  result: R;
  /** Peers that could not be loaded: their rows and the targets against them are not in `result`. */
  skippedPeers?: SkippedPeer[];
}

export type SuiteRecord =
  | RecordOf<'pattern', PatternBenchResult>
  | RecordOf<'trie', TrieBenchResult>
  | RecordOf<'log', LogBenchResult>
  | RecordOf<'broker', BrokerBenchResult>
  | RecordOf<'lifecycle', LifecycleBenchResult>
  | RecordOf<'keyshared', KeySharedBenchResult>
  | RecordOf<'rocketmq', RocketmqBenchResult>;

export function environment(): Environment {
  const manifest = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string };
  return {
    date: new Date().toISOString(),
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    cores: cpus().length,
    memoryBytes: totalmem(),
    platform: `${process.platform}-${process.arch}`,
    node: process.version,
    packageVersion: manifest.version,
    engine: engineInfo(),
  };
}

/** Writes <out>/results/<suite>.json; returns the file. */
export function writeRecord(record: SuiteRecord, out: string): string {
  const dir = join(out, 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${record.suite}.json`);
  writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`);
  return file;
}

/** The stored records of the given suites, skipping any that has not had a full run yet. */
export function readRecords(suites: readonly SuiteRecord['suite'][], out: string): SuiteRecord[] {
  return suites
    .map((suite) => join(out, 'results', `${suite}.json`))
    .filter((file) => existsSync(file))
    .map((file) => JSON.parse(readFileSync(file, 'utf8')) as SuiteRecord);
}

/** Puts names like `t__a__*` in code spans, where markdown leaves `_` and `*` alone. */
function codeSpans(text: string): string {
  return text.replace(/[\w*'-]*[_*][\w*'-]*/g, '`$&`');
}

/** Width in characters as markdown formatters count it (code points, so `Δ` and `×` count one). */
function width(text: string): number {
  return [...text].length;
}

/** A markdown table padded the way biome formats one, so the generated file passes `biome check`. */
function markdownTable(table: Table): string {
  const escapeCell = (cell: string) => codeSpans(cell.replace(/\|/g, '\\|'));
  const header = table.headers.map(escapeCell);
  const body = table.rows.map((row) => table.headers.map((_, i) => escapeCell(row[i] ?? '')));
  const numeric = table.headers.map((_, i) => isNumericColumn(table.rows.map((r) => r[i] ?? '')));
  const widths = header.map((h, i) => Math.max(3, width(h), ...body.map((row) => width(row[i] ?? ''))));
  const pad = (cell: string, i: number) => {
    const fill = ' '.repeat((widths[i] ?? 0) - width(cell));
    return numeric[i] ? fill + cell : cell + fill;
  };
  const line = (cells: readonly string[]) => `| ${cells.map(pad).join(' | ')} |`;
  const rule = widths.map((w, i) => (numeric[i] ? `${'-'.repeat(w - 1)}:` : '-'.repeat(w)));
  const lines = [line(header), `| ${rule.join(' | ')} |`, ...body.map(line)];
  return [`### ${table.title}`, '', ...(table.note ? [table.note, ''] : []), ...lines].join('\n');
}

/** How the interleaved suites time their short cases (bench/measure.ts). */
function timingMethod(timing: Timing): string {
  return (
    `${timing.timeMs} ms per case in ${timing.rounds} interleaved rounds (each figure is the median of ` +
    `the rounds' medians; spread = range of the rounds' medians over that median)`
  );
}

/** `workload` is the suite's own line about its inputs (seed, sizes); `method` how it timed them. */
function environmentSection(record: SuiteRecord, workload: string, method: string): string {
  const env = record.environment;
  return [
    `- Date: ${env.date}`,
    `- Machine: ${env.cpu}, ${env.cores} cores, ${(env.memoryBytes / 2 ** 30).toFixed(1)} GiB memory, ${env.platform}`,
    `- Node ${env.node}, litetopic ${env.packageVersion}, default engine ${env.engine.active}`,
    `- Reproduce: \`${record.command}\``,
    `- Workload: ${workload}; ${method}`,
    ...(record.skippedPeers?.length ? [`- ${skippedPeersLine(record.skippedPeers)}`] : []),
  ].join('\n');
}

/** Which peers a run went without: their rows and the targets against them are missing. */
function skippedPeersLine(peers: readonly SkippedPeer[]): string {
  const list = peers.map((p) => `${p.peer} (${p.reason})`).join(', ');
  return `Peers skipped: ${list}; their rows and the targets measured against them are left out`;
}

/** One sentence on the targets: all met, or which were missed or undecided. */
function verdict(targets: readonly TargetCheck[], issue: string): string {
  const names = (pass: boolean | null) =>
    targets
      .filter((t) => t.pass === pass)
      .map((t) => codeSpans(t.name))
      .join('; ');
  const misses = names(false);
  const undecided = names(null);
  return [
    misses === '' ? `Every measured target of issue #${issue} is met.` : `Missed: ${misses}.`,
    ...(undecided === '' ? [] : [`Undecided (memory delta below noise): ${undecided}.`]),
  ].join(' ');
}

function patternSection(record: RecordOf<'pattern', PatternBenchResult>): string {
  const tables = patternTables(record.result);
  const { config } = record.result;
  return [
    '## Pattern engine',
    '',
    environmentSection(
      record,
      `seed ${config.seed}; ${config.topicsPerIteration} topics per reverse-lookup iteration${config.quick ? ' (quick run)' : ''}`,
      timingMethod(config.timing),
    ),
    '',
    'Workload: agent-bus names `tenantT__agentA__sessionS[__tool[__phase]]` (3–5 segments, Zipf tenants, agents and',
    'tools); subscriptions 80% exact names, 20% wildcards (`t__a__s__*`, `t__a__**`, `t__a__*__tool`, `t__**`,',
    '`*__*__*__tool`), ids standing for subscribers of about two patterns each (bench/workload.ts). Before timing,',
    "every single-match implementation is checked against `matches()` on its batch, and both engines' ids and counts",
    record.skippedPeers?.some((p) => p.peer === 'qlobber')
      ? 'against each other on every topic and against a linear scan of the subscriptions on the first 50 topics ' +
        '(qlobber, the usual reference, was skipped); every timed iteration checks its match count.'
      : "against qlobber's, topic by topic; every timed iteration checks its match count.",
    '',
    verdict(record.result.targets, '2'),
    '',
    ...tables.map((t) => `${markdownTable(t)}\n`),
  ].join('\n');
}

function trieSection(record: RecordOf<'trie', TrieBenchResult>): string {
  const { config } = record.result;
  return [
    '## Topic-name trie',
    '',
    environmentSection(
      record,
      `seed ${config.seed}; ${config.names.toLocaleString('en-US')} distinct agent-bus names${config.quick ? ' (quick run)' : ''}`,
      timingMethod(config.timing),
    ),
    '',
    'Workload: distinct agent-bus names `tenantT__agentA__sessionS[__tool[__phase]]` (3–5 segments, Zipf tenants,',
    'agents and tools; bench/workload.ts). The expand patterns run from one stored name of `tenant7` (an ordinary',
    'tenant, about 2% of the names) through its session, agent and whole tenant to a leading wildcard, plus the',
    'hottest tenant, `tenant0`; every timed iteration checks its match count against the linear scan. Speed targets',
    "against the scan are paired by round; the memory and 36 µs targets compare this run's figure with the bar.",
    '',
    verdict(record.result.targets, '3'),
    '',
    ...trieTables(record.result).map((t) => `${markdownTable(t)}\n`),
  ].join('\n');
}

function logSection(record: RecordOf<'log', LogBenchResult>): string {
  const { config, targets } = record.result;
  const counted = targets.filter((t) => !t.expectation);
  const missed = counted.filter((t) => t.pass === false).map((t) => codeSpans(t.name));
  const failed = counted.filter((t) => t.pass === null).map((t) => codeSpans(t.name));
  return [
    '## Commit log',
    '',
    environmentSection(
      record,
      `seed ${config.seed}; ${config.records.toLocaleString('en-US')} records over ${config.lmqs.toLocaleString('en-US')} ` +
        `LMQs, bodies of ${config.bodySizes.join(' and ')} bytes${config.quick ? ' (quick run)' : ''}`,
      `each store appends the whole workload once per round into a fresh directory, ${config.rounds} interleaved ` +
        'rounds with the order reversed every other round; each figure is the median over rounds, ratios are paired ' +
        'by round, spread = range of the rounds over the median',
    ),
    '',
    'Workload: LMQs `%LMQ%$agents$t<i>__a<j>` (100 tenants × 100 agents), each record in one LMQ drawn uniformly,',
    'bodies cut from a seeded random pool, no key, tag or properties (bench/log-workload.ts). Every run is checked:',
    'the store must hold every record after appending, and every read pass must return every record and body byte.',
    'All stores run in one process on the same disk, in temporary directories under `os.tmpdir()`.',
    '',
    [
      missed.length === 0 ? 'Every measured target of issue #4 is met.' : `Missed: ${missed.join('; ')}.`,
      ...(failed.length === 0 ? [] : [`Not measured (the store failed): ${failed.join('; ')}.`]),
    ].join(' '),
    '',
    ...logTables(record.result).map((t) => `${markdownTable(t)}\n`),
  ].join('\n');
}

function brokerSection(record: RecordOf<'broker', BrokerBenchResult>): string {
  const { config, targets } = record.result;
  const missed = targets.filter((t) => t.pass === false).map((t) => codeSpans(t.name));
  const failed = targets.filter((t) => t.pass === null).map((t) => codeSpans(t.name));
  return [
    '## Broker',
    '',
    environmentSection(
      record,
      `seed ${config.seed}; ${config.topics.toLocaleString('en-US')} lite topics, ${config.messages.toLocaleString('en-US')} ` +
        `messages of ${config.bodyBytes} B per throughput run${config.quick ? ' (quick run)' : ''}`,
      `each case runs once per round on a fresh broker, ${config.rounds} interleaved rounds with the order reversed every ` +
        'other round; each figure is the median over rounds (the machine is shared and noisy)',
    ),
    '',
    'Workload: lite topics `tenantT__agentA__sessionS` (5% with a fourth segment `error`) of the parent `agents`, Zipf',
    'tenants and agents, opened throughout the run; one producer with `sendBatch`; every client long-polls `pop`',
    '(`maxNum` 32, `waitMs` 1000) and acks everything (bench/broker-workload.ts, bench/broker-scenario.ts). Each delivery',
    'is checked: the right group, exactly once, FIFO with no gap per lite topic, never redelivered; a rate is reported',
    'only when every group received and acked exactly what it should.',
    '',
    [
      missed.length === 0 ? 'Every measured target of issue #5 is met.' : `Missed: ${missed.join('; ')}.`,
      ...(failed.length === 0 ? [] : [`Not measured (the run failed): ${failed.join('; ')}.`]),
    ].join(' '),
    '',
    ...brokerTables(record.result).map((t) => `${markdownTable(t)}\n`),
  ].join('\n');
}

function lifecycleSection(record: RecordOf<'lifecycle', LifecycleBenchResult>): string {
  const { config, targets } = record.result;
  const missed = targets.filter((t) => t.pass === false).map((t) => codeSpans(t.name));
  const failed = targets.filter((t) => t.pass === null).map((t) => codeSpans(t.name));
  return [
    '## Broker lifecycle: reopen and expiry',
    '',
    environmentSection(
      record,
      `seed ${config.seed}; reopen of ${config.messages.toLocaleString('en-US')} messages over ${config.liteTopics.toLocaleString('en-US')} ` +
        `lite topics; expiry of ${config.expiry.idle.toLocaleString('en-US')} idle among ${config.expiry.topics.toLocaleString('en-US')}` +
        `${config.scaleNote ? ` (scaled down: ${config.scaleNote})` : ''}${config.quick ? ' (quick run)' : ''}`,
      'each case runs once per engine (bench/lifecycle*.ts); the machine is shared and noisy' +
        (config.loadAverage
          ? ` (1-minute load average ${config.loadAverage.map((l) => l.toFixed(1)).join(' before, ')} after)`
          : ''),
    ),
    '',
    [
      missed.length === 0 ? 'Every measured target of issue #6 is met.' : `Missed: ${missed.join('; ')}.`,
      ...(failed.length === 0 ? [] : [`Not measured (the run failed): ${failed.join('; ')}.`]),
    ].join(' '),
    '',
    ...lifecycleTables(record.result).map((t) => `${markdownTable(t)}\n`),
  ].join('\n');
}

function keySharedSection(record: RecordOf<'keyshared', KeySharedBenchResult>): string {
  const { config, targets } = record.result;
  const missed = targets.filter((t) => t.pass === false).map((t) => codeSpans(t.name));
  const failed = targets.filter((t) => t.pass === null).map((t) => codeSpans(t.name));
  return [
    '## Key-shared consumption',
    '',
    environmentSection(
      record,
      `seed ${config.seed}; one lite topic, ${config.keys.toLocaleString('en-US')} uniform keys, ${config.buckets} buckets, ` +
        `clients ${config.phases.join(' → ')}, ${config.processMs} ms per message${config.quick ? ' (quick run)' : ''}`,
      `each engine runs every phase once per round on a fresh in-memory broker with system timers, ${config.rounds} ` +
        'rounds with the engine order reversed every other round; rates are medians over rounds (the machine is shared and noisy)',
    ),
    '',
    'Workload: one hot lite topic of the parent `agents`, a key-shared group (`keyShared: { buckets }`), the in-memory',
    'store; a producer keeps a backlog of keyed messages and clients join one at a time, never leaving',
    '(bench/keyshared.ts, bench/keyshared-run.ts). Every delivery is checked for I1, I2 and exactly once as it is popped.',
    '',
    [
      missed.length === 0 ? 'Every measured target of issue #7 is met.' : `Missed: ${missed.join('; ')}.`,
      ...(failed.length === 0 ? [] : [`Not measured (the run failed): ${failed.join('; ')}.`]),
    ].join(' '),
    '',
    ...keySharedTables(record.result).map((t) => `${markdownTable(t)}\n`),
  ].join('\n');
}

function rocketmqSection(record: RecordOf<'rocketmq', RocketmqBenchResult>): string {
  const { config } = record.result;
  return [
    '## Embedded and RocketMQ',
    '',
    environmentSection(
      record,
      `${config.liteTopics} lite topics, ${config.messages} messages of ${config.bodyBytes} B${config.quick ? ' (quick run)' : ''}`,
      'one run per backend: single sends at 1 and at ' +
        `${config.sendConcurrency} in flight, then sends and one consumer together (POP 32, long poll, acks in parallel)`,
    ),
    '',
    'The RocketMQ cluster is the test cluster of `npm run test:rocketmq` (name server, two brokers, proxy, on the',
    'same machine as the client); docs/ROCKETMQ.md, "Sending", says where its time goes.',
    '',
    ...rocketmqTables(record.result).map((t) => `${markdownTable(t)}\n`),
  ].join('\n');
}

function section(record: SuiteRecord): string {
  if (record.suite === 'pattern') return patternSection(record);
  if (record.suite === 'log') return logSection(record);
  if (record.suite === 'broker') return brokerSection(record);
  if (record.suite === 'lifecycle') return lifecycleSection(record);
  if (record.suite === 'keyshared') return keySharedSection(record);
  if (record.suite === 'rocketmq') return rocketmqSection(record);
  return trieSection(record);
}

/** Rewrites <out>/RESULTS.md from the stored records, and the charts in <out>/charts/. */
export function writeResultsMarkdown(records: readonly SuiteRecord[], out: string): string {
  mkdirSync(out, { recursive: true });
  const file = join(out, 'RESULTS.md');
  const body = [
    '# Benchmark results',
    '',
    '<!-- Generated by `npm run bench` or `litetopic bench` (bench/report.ts) from results/*.json; do not edit by hand. -->',
    '',
    ...records.map(section),
  ].join('\n');
  writeFileSync(file, `${body.trimEnd()}\n`);
  writeCharts(file); // <out>/charts/<section>.svg, one bar chart per suite
  return file;
}
