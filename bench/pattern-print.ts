/**
 * The pattern suite's figures as tables: the same headers and cells feed the console (aligned text)
 * and bench/RESULTS.md (markdown), so the two never disagree.
 */
import type { PatternBenchResult } from './pattern-result.js';
import { figure, mebibytes, printTables, type Table } from './table.js';
import { targetsTable } from './targets.js';

function singleTable(rows: PatternBenchResult['singleMatch']): Table {
  const regexpOf = (shape: string) => rows.find((r) => r.shape === shape && r.implementation.startsWith('RegExp'));
  return {
    title: 'Single compiled match (one Matcher, a batch of topics)',
    note: 'Each batch is half topics the pattern matches, half ordinary workload names.',
    headers: ['shape', 'pattern', 'implementation', 'median ns/call', 'ops/s', 'spread %', 'vs RegExp', 'hits/batch'],
    rows: rows.map((r) => [
      r.shape,
      r.pattern,
      r.implementation,
      figure(r.medianNs),
      figure(r.opsPerSecond),
      figure(r.spreadPercent),
      `${figure(r.opsPerSecond / (regexpOf(r.shape)?.opsPerSecond ?? Number.NaN))}×`,
      `${r.hits}/${r.batch}`,
    ]),
  };
}

function reverseTable(rows: PatternBenchResult['reverse']): Table {
  const qlobberOf = (row: PatternBenchResult['reverse'][number]) =>
    rows.find(
      (r) =>
        r.workload === row.workload && r.subscriptions === row.subscriptions && r.implementation.startsWith('qlobber'),
    );
  // Without qlobber (a peer that was not installed) there is nothing to compare with.
  const compared = rows.some((r) => r.implementation.startsWith('qlobber'));
  return {
    title: 'Reverse lookup (topics/s, distinct matching ids counted)',
    note:
      'agent-bus: the subscriptions and topics of bench/workload.ts. distinct names: 200,000 distinct workload ' +
      'names, subscriptions made from them (80% one name, 20% a wildcard over one session or tool), topics drawn ' +
      'from 50,000 of the names: many distinct names, few ids per topic.',
    headers: [
      'workload',
      'subscriptions',
      'implementation',
      'topics/s',
      'median ns/topic',
      'spread %',
      ...(compared ? ['vs qlobber'] : []),
      'ids/topic',
    ],
    rows: rows.map((r) => [
      r.workload ?? 'agent-bus',
      figure(r.subscriptions),
      r.implementation,
      figure(r.opsPerSecond),
      figure(r.medianNs),
      figure(r.spreadPercent),
      ...(compared ? [`${figure(r.opsPerSecond / (qlobberOf(r)?.opsPerSecond ?? Number.NaN))}×`] : []),
      figure(r.matchesPerTopic),
    ]),
  };
}

function memoryTable(rows: PatternBenchResult['memory']): Table {
  return {
    title: 'Index memory (fresh process per index, after global.gc())',
    note:
      'Deltas over a baseline taken after the subscriptions were generated and the engine loaded; median of ' +
      'several processes in a full run. rss after a GC still counts pages V8 keeps committed, and a JS-heap index ' +
      'reuses pages freed before the baseline, so its rss Δ can come out below its heapUsed Δ.',
    headers: [
      'implementation',
      'patterns',
      'heapUsed Δ',
      'rss Δ',
      'external Δ',
      'stats().approximateBytes',
      'build ms',
    ],
    rows: rows.map((r) => [
      r.kind,
      figure(r.patterns),
      mebibytes(r.heapUsedBytes),
      mebibytes(r.rssBytes),
      mebibytes(r.externalBytes),
      mebibytes(r.approximateBytes),
      figure(r.buildMs),
    ]),
  };
}

function crossingTable(rows: PatternBenchResult['crossing']): Table {
  const operations = [...new Set(rows.map((r) => r.operation))];
  const of = (operation: string, engine: string) =>
    rows.find((r) => r.operation === operation && r.engine === engine)?.medianNs ?? Number.NaN;
  return {
    title: 'Crossing cost (median ns per call or per topic, 10k-subscription index)',
    note:
      'native − js on the first two rows is what one trip across Node-API costs (the second with a string ' +
      'argument). The last row is what one matchCounts call per 1024 topics saves per topic over one matchInto ' +
      'call per topic: on native mostly crossings, on both engines also the ids matchCounts need not copy out.',
    headers: ['operation', 'native ns', 'js ns', 'native − js ns'],
    rows: [
      ...operations.map((op) => [
        op,
        figure(of(op, 'native')),
        figure(of(op, 'js')),
        figure(of(op, 'native') - of(op, 'js')),
      ]),
      savedByBatching(operations, of),
    ],
  };
}

/** The derived row: per-call `matchInto` minus batched `matchCounts`, per topic. */
function savedByBatching(operations: readonly string[], of: (operation: string, engine: string) => number): string[] {
  const single = operations.find((op) => op.startsWith('matchInto')) ?? '';
  const batched = operations.find((op) => op.startsWith('matchCounts')) ?? '';
  const saved = (engine: string) => of(single, engine) - of(batched, engine);
  return ['matchInto − matchCounts per topic', figure(saved('native')), figure(saved('js')), ''];
}

/** How the paired ratios of the targets table are taken. */
export const PAIRED_NOTE =
  'Speed ratios are paired by round: the median over rounds of the ratio of the two cases measured back to back in that round, which keeps the VM’s drift between rounds out of the comparison (the tables above divide overall medians instead).';

/** The tables for whichever sections `result` holds, in suite order. */
export function patternTables(result: Partial<PatternBenchResult>): Table[] {
  const tables: Table[] = [];
  if (result.singleMatch) tables.push(singleTable(result.singleMatch));
  if (result.reverse) tables.push(reverseTable(result.reverse));
  if (result.memory) tables.push(memoryTable(result.memory));
  if (result.crossing) tables.push(crossingTable(result.crossing));
  if (result.targets) tables.push(targetsTable(result.targets, PAIRED_NOTE));
  return tables;
}

export function printPatternResult(result: Partial<PatternBenchResult>): void {
  printTables(patternTables(result));
}
