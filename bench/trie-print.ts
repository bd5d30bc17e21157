/**
 * The trie suite's figures as tables: the same headers and cells feed the console (aligned text)
 * and bench/RESULTS.md (markdown).
 */
import type { Measurement } from './measure.js';
import { figure, mebibytes, printTables, type Table } from './table.js';
import { targetsTable } from './targets.js';
import type { TrieBenchResult } from './trie-result.js';

function memoryTable(result: Pick<TrieBenchResult, 'config' | 'memory'>): Table {
  return {
    title: `Build and memory (${result.config.names.toLocaleString('en-US')} names, fresh process per engine)`,
    note:
      'Deltas over a baseline taken after the names were generated and the engine loaded, after global.gc(); the ' +
      'native trie lives outside the JS heap, so its RSS growth is its cost. The "after expand(**)" columns are taken ' +
      'again once one `expand` has handed every name out and its answer was dropped: the native adapter keeps each name ' +
      'it hands out (one string per name, until the name is removed), which the js engine holds at its nodes from the start.',
    headers: [
      'engine',
      'names',
      'build ms',
      'rss Δ',
      'heapUsed Δ',
      'external Δ',
      'rss Δ after expand(**)',
      'heapUsed Δ after expand(**)',
      'stats().approximateBytes',
      'nodes',
    ],
    rows: result.memory.map((m) => [
      m.kind,
      figure(m.names),
      figure(m.buildMs),
      mebibytes(m.rssBytes),
      mebibytes(m.heapUsedBytes),
      mebibytes(m.externalBytes),
      mebibytes(m.rssAfterExpandAllBytes),
      mebibytes(m.heapUsedAfterExpandAllBytes),
      mebibytes(m.approximateBytes),
      figure(m.nodes),
    ]),
  };
}

function expandTable(rows: TrieBenchResult['expand']): Table {
  return {
    title: 'expand vs a linear scan with a compiled matcher (µs per call)',
    note:
      '`expand` returns the names (on native: a plan from the walk, carried out from the names and lists the adapter ' +
      'keeps; names it does not have yet cross as one NUL-joined string), `expandIds` fills ' +
      'a reused Uint32Array. The scan runs a compiled js Matcher over every stored name. The × columns are scan time ' +
      'over expand (names) time, paired by round. The tries do not change while they are measured: the first expand of a ' +
      'subtree keeps its list of names (both engines; the native adapter holds the strings), which later calls copy, ' +
      'and walks through many nodes lay the trie out again once they have visited as many nodes as it holds ' +
      '(docs/TRIE.md); "first" is one call of the pattern before the timed ones (after the patterns above it, whose ' +
      'names and lists it may share), which builds those lists and strings.',
    headers: [
      'pattern',
      'matched',
      'native µs',
      'js µs',
      'native first µs',
      'js first µs',
      'native ids µs',
      'js ids µs',
      'scan µs',
      'native ×',
      'js ×',
    ],
    rows: rows.map((r) => [
      r.pattern,
      figure(r.matched),
      figure(r.nativeNs / 1000),
      figure(r.jsNs / 1000),
      figure(r.nativeFirstNs / 1000),
      figure(r.jsFirstNs / 1000),
      figure(r.nativeIdsNs / 1000),
      figure(r.jsIdsNs / 1000),
      figure(r.scanNs / 1000),
      `${figure(r.nativeSpeedup)}×`,
      `${figure(r.jsSpeedup)}×`,
    ]),
  };
}

/** Page faults of the churn expands; none for a run recorded before they were counted. */
function churnFaultTables(churn: NonNullable<TrieBenchResult['churn']>): Table[] {
  if (churn.rows.some((r) => r.nativeChangedFaults === undefined)) return [];
  const count = (faults: number | undefined) => figure(faults ?? 0);
  return [
    {
      title: 'Churn: minor page faults per expand (median over rounds)',
      note:
        'Counted around the changed and unchanged calls above (process.resourceUsage()): pages the call touched for ' +
        'the first time, each a trip into the kernel. An answer over 16,384 names (128 KiB of pointers) is a large ' +
        'object that V8 maps afresh for every answer, a fault per 4 KiB page, in both engines; faults past those are ' +
        "the lay-down's.",
      headers: ['pattern', 'matched', 'native changed', 'native unchanged', 'js changed', 'js unchanged'],
      rows: churn.rows.map((r) => [
        r.pattern,
        figure(r.matched),
        count(r.nativeChangedFaults),
        count(r.nativeUnchangedFaults),
        count(r.jsChangedFaults),
        count(r.jsUnchangedFaults),
      ]),
    },
  ];
}

function churnTables(churn: NonNullable<TrieBenchResult['churn']>): Table[] {
  const ms = (us: number) => figure(us / 1000);
  const replicas = churn.replicas ?? 1;
  const replicated =
    replicas > 1
      ? `Each engine keeps ${replicas} tries with the same history, and each figure of a round is the median of ` +
        'their calls (a call the scheduler held up does not make the round; a cost of the change comes in every ' +
        'trie alike). '
      : '';
  return [
    {
      title: `Churn: first expand after adding ${churn.names.toLocaleString('en-US')} names (ms)`,
      note:
        `${replicas > 1 ? `The median of one call on each of ${replicas} tries` : 'One call each'}, right after the ` +
        'names were added (the tenant first, nothing walked before it): nothing is laid out again; the walk lays ' +
        'down the lists later expands copy (docs/TRIE.md).',
      headers: ['engine', 'pattern', 'matched', 'ms'],
      rows: churn.first.map((f) => [f.engine, f.pattern, figure(f.matched), figure(f.ms)]),
    },
    {
      title: `Churn: ${churn.rounds} rounds of +1,000 and −1,000 names, expand after each (ms per call)`,
      note:
        'Before the rounds, 100 smaller rounds on a throwaway trie of 20,000 names per engine warm the code a live ' +
        'broker runs after every change (after the first expands above, which stay cold). ' +
        'Each round adds 1,000 new names and removes 1,000 live ones in both engines, then expands each pattern once ' +
        '("changed"); both engines then look the same 2,000 names up, which changes nothing, and expand each pattern ' +
        'once more ("unchanged": the same call on an unchanged trie after as much traffic, so both meet the caches ' +
        'alike) and five times back to back ("repeated", median: everything in cache), the engines back to back. ' +
        'Every call is timed alone (the time an expand holds the event loop), after a young-generation collection. ' +
        replicated +
        'changed÷unchanged and native÷js are paired by round: median and worst round.',
      headers: [
        'pattern',
        'matched',
        'native changed',
        'native worst',
        'native unchanged',
        'native repeated',
        'js changed',
        'js worst',
        'js unchanged',
        'js repeated',
        'native changed÷unchanged (worst)',
        'js changed÷unchanged (worst)',
        'native÷js changed (worst)',
        'native÷js unchanged (worst)',
        'native÷js repeated',
      ],
      rows: churn.rows.map((r) => [
        r.pattern,
        figure(r.matched),
        ms(r.nativeChangedUs),
        ms(r.nativeWorstChangedUs),
        ms(r.nativeUnchangedUs),
        r.nativeRepeatedUs === undefined ? '' : ms(r.nativeRepeatedUs),
        ms(r.jsChangedUs),
        ms(r.jsWorstChangedUs),
        ms(r.jsUnchangedUs),
        r.jsRepeatedUs === undefined ? '' : ms(r.jsRepeatedUs),
        `${figure(r.nativeChangedRatio)}× (${figure(r.nativeWorstChangedRatio)}×)`,
        `${figure(r.jsChangedRatio)}× (${figure(r.jsWorstChangedRatio)}×)`,
        `${figure(r.nativeOverJsChanged)}× (${figure(r.nativeOverJsWorstChanged)}×)`,
        `${figure(r.nativeOverJsUnchanged)}× (${figure(r.nativeOverJsWorstUnchanged)}×)`,
        r.nativeOverJsRepeated === undefined ? '' : `${figure(r.nativeOverJsRepeated)}×`,
      ]),
    },
    ...churnFaultTables(churn),
    ...churnLongestTables(churn),
    {
      title: 'Churn: the longest single add or remove of the rounds (ms)',
      ...((churn.replicas ?? 1) > 1
        ? { note: "Of the second half's rounds (the table above), on one trie per engine." }
        : {}),
      headers: ['engine', 'ms'],
      rows: Object.entries(churn.worstChangeUs).map(([engine, us]) => [engine, ms(us)]),
    },
  ];
}

/** The wide walk of the rounds and the longest expands; none for a run recorded before the wide walk. */
function churnLongestTables(churn: NonNullable<TrieBenchResult['churn']>): Table[] {
  const { wide, longestExpand } = churn;
  if (wide === undefined || longestExpand === undefined) return [];
  const ms = (us: number) => figure(us / 1000);
  const replicas = churn.replicas ?? 1;
  return [
    {
      title: `Churn: the longest single expand of the rounds (ms)`,
      note:
        `${replicas > 1 ? `Every timed call of as many rounds again of the same changes, on one trie per engine (the other ${replicas - 1} dropped and their heap collected first: ${replicas} tries' heap lengthens the collections that land in a call), ` : 'Every timed call of the rounds above, then of as many rounds again of the same changes, '}each followed by one expand of the session, agent and tenant and one of \`${wide.pattern}\` per engine (a walk down every node of the first three levels; its first call came before them). ` +
        'The names were added in random order, so walks like it start a compaction pass in the first of those rounds and carry it on a step after each (docs/TRIE.md): a step costs about what its walk did, in that call. ' +
        `The wide walk matched ${figure(wide.matched)} names (median over rounds).`,
      headers: [
        'engine',
        'longest session/agent/tenant expand',
        'matched',
        'ms',
        `${wide.pattern} median ms`,
        `${wide.pattern} longest ms`,
        'longest ÷ median',
      ],
      rows: (['native', 'js'] as const).map((engine) => {
        const { narrow } = longestExpand[engine];
        const median = engine === 'native' ? wide.nativeMedianUs : wide.jsMedianUs;
        const worst = engine === 'native' ? wide.nativeWorstUs : wide.jsWorstUs;
        return [
          engine,
          `\`${narrow.pattern}\``,
          figure(narrow.matched),
          ms(narrow.us),
          ms(median),
          ms(worst),
          `${figure(worst / median)}×`,
        ];
      }),
    },
  ];
}

function timesTable(title: string, rows: readonly Measurement[], note?: string): Table {
  return {
    title,
    ...(note === undefined ? {} : { note }),
    headers: ['case', 'median µs', 'spread %'],
    rows: rows.map((m) => [m.name, figure(m.medianNs / 1000), figure(m.spreadPercent)]),
  };
}

/** The tables for whichever sections `result` holds, in suite order. */
export function trieTables(result: Partial<TrieBenchResult>): Table[] {
  const tables: Table[] = [];
  if (result.memory && result.config) tables.push(memoryTable({ config: result.config, memory: result.memory }));
  if (result.expand) tables.push(expandTable(result.expand));
  if (result.smallShape) {
    tables.push(
      timesTable(
        '1,000 names × 5 patterns (one iteration expands all five)',
        result.smallShape,
        'The shape the RocketMQ design measured at about 360 µs.',
      ),
    );
  }
  if (result.idle) {
    tables.push(
      timesTable(
        'idleSince with 1% idle',
        result.idle,
        'The same idle count among all the names and among a tenth of them: the cost follows the answer.',
      ),
    );
  }
  if (result.churn) tables.push(...churnTables(result.churn));
  if (result.targets) {
    tables.push(
      targetsTable(
        result.targets,
        'Ratios are paired by round (the median round, or the worst where the name says so); a record made before ' +
          'the unchanged-trie expands kept their pair compares the medians of the expand table above.',
      ),
    );
  }
  return tables;
}

export function printTrieResult(result: Partial<TrieBenchResult>): void {
  printTables(trieTables(result));
}
