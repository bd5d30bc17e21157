/**
 * The log suite's figures as tables: the same headers and cells feed the console (aligned text) and
 * bench/RESULTS.md (markdown).
 */
import type {
  AppendRow,
  FootprintSample,
  LmqScaleSample,
  LogBenchResult,
  ReadFloorRow,
  ReadRow,
} from './log-result.js';
import { perLmqAndMessage } from './log-targets.js';
import { cell, failure, figure, mebibytes, printTables, type Table, times } from './table.js';
import { targetsTable } from './targets.js';

const MIB = 2 ** 20;

function diskTable(result: Pick<LogBenchResult, 'config' | 'disk'>): Table {
  const { disk } = result;
  return {
    title: 'Disk under os.tmpdir()',
    note:
      `\`dd bs=1M conv=fdatasync\` in Node: ${mebibytes(disk.bytes)} written in 1 MiB writes, then one fdatasync; ` +
      'sync latency is the median of 200 × (4 KiB append + fdatasync), the floor under every synced commit.',
    headers: ['probe', 'GB/s', 'seconds', 'sync latency µs', 'free GiB'],
    rows: [
      [
        mebibytes(disk.bytes),
        figure(disk.bytesPerSecond / 1e9),
        figure(disk.seconds),
        figure(disk.syncLatencyMicros),
        figure(disk.freeBytes / 2 ** 30),
      ],
    ],
  };
}

function appendTable(rows: readonly AppendRow[], durable: boolean, config: LogBenchResult['config']): Table {
  const ofMode = rows.filter((r) => r.durable === durable);
  const note = durable
    ? `litetopic \`flush: 'sync'\` (\`appendBodies\`) and lmdb (synced commits, awaited through \`flushed\`): ${config.inFlightCalls} concurrent ` +
      `calls of ${config.callRecords} records in flight (${config.inFlightCalls * config.callRecords} records), so group ` +
      `commit can share syncs; better-sqlite3 WAL with \`synchronous=FULL\` and the plain file with fdatasync commit ` +
      `once per ${config.batchRecords} records (both synchronous, nothing in flight).`
    : `litetopic \`flush: 'async'\` (\`appendBodies\`: each batch's bodies copied back to back into one buffer, LMQs as indexes into the table of names), lmdb \`noSync\` (one transaction per event turn, up to ${config.lmdbWindowBatches} batches issued ` +
      `before the oldest is awaited), better-sqlite3 WAL with \`synchronous=OFF\` and one transaction per batch, the plain ` +
      `file (records padded to litetopic's size, the same bytes) one \`writeSync\` per batch. Batches of ${config.batchRecords}. On disk: allocated blocks after close ` +
      '(segments are sparse until written) over body bytes.';
  const headers = ['store', 'body B', 'records/s', 'MB/s (payload)', 'spread %', 'native ×'];
  if (!durable) headers.push('on disk ÷ payload');
  headers.push('note');
  return {
    title: `${durable ? 'Durable' : 'Non-durable'} append (${(durable ? config.durableRecords : config.records).toLocaleString('en-US')} records)`,
    note: `${note} native × is how many times faster litetopic native was, paired by round.`,
    headers,
    rows: ofMode.map((r) => [
      r.store,
      String(r.bodyBytes),
      cell(r.recordsPerSecond),
      cell(r.payloadBytesPerSecond / 1e6),
      cell(r.measurement?.spreadPercent ?? Number.NaN),
      cell(r.nativeSpeedup, times),
      ...(durable ? [] : [cell(r.allocatedBytes / r.payloadBytes)]),
      failure(r.error),
    ]),
  };
}

function readTable(rows: readonly ReadRow[], floors: readonly ReadFloorRow[]): Table {
  const floorRows = floors.map((r) => [
    'floor: copy + checksum',
    String(r.bodyBytes),
    cell(r.recordsPerSecond),
    cell(r.measurement?.spreadPercent ?? Number.NaN),
    cell(r.nativeShare, times),
    failure(r.error),
  ]);
  return {
    title: 'Warm read back by LMQ',
    note:
      'Right after appending: every LMQ read in full, in offset order (litetopic `readBodies(lmq, from, 1000, into)` until a ' +
      'short page, every page into one reused 4 MiB buffer; lmdb `getRange` over `[lmq, 0]..[lmq, max]`; sqlite `SELECT body … WHERE lmq = ? ORDER BY seq`), every ' +
      "body's length summed and checked. The plain file has no index to read by. The floor the machine sets under " +
      'such a read, whatever the store: right after each round’s native read, the same records, each LMQ in offset ' +
      'order, copied out of a read-only mapping of the segment files and the copy checksummed, nothing else done ' +
      '(`log_append floor`, native/core/examples/log_append.rs, built with cargo; fastest of three passes). Its ' +
      'native × is the native read’s speed as a share of the floor’s, paired by round.',
    headers: ['store', 'body B', 'records/s', 'spread %', 'native ×', 'note'],
    rows: [
      ...rows.map((r) => [
        r.store,
        String(r.bodyBytes),
        cell(r.recordsPerSecond),
        cell(r.measurement?.spreadPercent ?? Number.NaN),
        cell(r.nativeSpeedup, times),
        failure(r.error),
      ]),
      ...floorRows,
    ],
  };
}

/** Calls per record: fractions far below one keep two significant digits rather than showing 0.00. */
function perRecord(calls: number): string {
  return calls >= 0.1 ? figure(calls) : calls.toPrecision(2);
}

/** `logAppend 1,000, logRead 10,000`: which binding functions the counted calls went to. */
function callNames(crossings: NonNullable<FootprintSample['crossings']>): string {
  const all = { ...crossings.appendByFunction };
  for (const [name, n] of Object.entries(crossings.readByFunction)) all[name] = (all[name] ?? 0) + n;
  return Object.entries(all)
    .map(([name, n]) => `${name} ${n.toLocaleString('en-US')}`)
    .join(', ');
}

function footprintTable(result: Pick<LogBenchResult, 'config' | 'footprint'>): Table {
  return {
    title: `Memory and native calls (${result.config.records.toLocaleString('en-US')} records of 100 B, fresh process per store)`,
    note:
      'Growth over a baseline taken after the workload was built and the store loaded, after global.gc(), once every ' +
      'record was appended and read back. RssFile counts mapped file pages (the native engine maps its segments). ' +
      'Native calls: every function of the addon wrapped as `process.dlopen` returns it, counted per record.',
    headers: [
      'store',
      'rss Δ',
      'anon Δ',
      'file Δ',
      'heapUsed Δ',
      'external Δ',
      'index bytes',
      'calls/record append',
      'calls/record read',
      'note',
    ],
    rows: result.footprint.map((f) =>
      'error' in f
        ? [f.store, '—', '—', '—', '—', '—', '—', '—', '—', failure(f.error)]
        : [
            f.store,
            mebibytes(f.rssBytes),
            mebibytes(f.rssAnonBytes),
            mebibytes(f.rssFileBytes),
            mebibytes(f.heapUsedBytes),
            mebibytes(f.externalBytes),
            mebibytes(f.indexBytes),
            f.crossings ? perRecord(f.crossings.append / f.records) : '—',
            f.crossings ? perRecord(f.crossings.read / f.records) : '—',
            f.crossings ? callNames(f.crossings) : '',
          ],
    ),
  };
}

function lmqScaleTable(config: LogBenchResult['config'], rows: NonNullable<LogBenchResult['lmqScale']>): Table {
  const first = rows.find((r): r is LmqScaleSample => !('error' in r));
  const lmqs = first?.lmqs ?? Number.NaN;
  const extra = first?.extraRecords ?? Number.NaN;
  const whole = (value: number | null) =>
    value === null || !Number.isFinite(value) ? '—' : Math.round(value).toLocaleString('en-US');
  return {
    title: `${figure(lmqs)} LMQs (fresh process per engine)`,
    note:
      `Each engine appends one record (16 B body) to each of ${figure(lmqs)} LMQs, then ${figure(extra)} more spread ` +
      `evenly over the first ${figure(config.scaleExtraLmqs)} of them, in a fresh process whose descriptor limit a ` +
      `shell lowered to ${figure(config.scaleOpenFilesLimit)}, without background checkpoints ` +
      '(the limit it saw is shown). Per message: the second phase’s growth over its records; per LMQ: the first ' +
      'phase’s growth less that many messages, over the LMQs (a name is a key of the index, about ' +
      `${first ? Math.round(first.meanNameBytes) : '—'} bytes here). Index bytes are the log’s own estimate ` +
      '(`stats().indexBytes`). RSS is the process’s growth after global.gc(): per LMQ, the first phase’s over its ' +
      'LMQs (each with its one message); per message, the second phase’s over its records (the js engine’s heap ' +
      'grows in steps, so its figure moves more). Descriptors and mappings are the whole process’s ' +
      '(/proc/self/fd, /proc/self/maps) after both phases: none of them is per LMQ.',
    headers: [
      'engine',
      'LMQs',
      'records',
      'ulimit -n',
      'vm.max_map_count',
      'descriptors',
      'mappings',
      'index bytes',
      'index B/LMQ',
      'index B/message',
      'rss Δ',
      'rss B/LMQ (1 message each)',
      'rss B/message',
      'append s',
      'note',
    ],
    rows: rows.map((r) => {
      if ('error' in r)
        return [r.engine, '—', '—', '—', '—', '—', '—', '—', '—', '—', '—', '—', '—', '—', failure(r.error)];
      const index = perLmqAndMessage(r.lmqs, r.extraRecords, r.indexBytesAfterLmqs, r.indexBytesAfterExtra);
      const rssPerMessage = (r.rssAfterExtra - r.rssAfterLmqs) / r.extraRecords;
      return [
        r.engine,
        figure(r.lmqs),
        figure(r.lmqs + r.extraRecords),
        whole(r.openFilesLimit),
        whole(r.maxMapCount),
        whole(r.descriptors),
        whole(r.mappings),
        mebibytes(r.indexBytesAfterExtra),
        whole(index.perLmq),
        whole(index.perMessage),
        mebibytes(r.rssAfterExtra),
        whole(r.rssAfterLmqs / r.lmqs),
        whole(rssPerMessage),
        cell(r.appendSeconds),
        '',
      ];
    }),
  };
}

function recoveryTable(result: Pick<LogBenchResult, 'config' | 'recovery'>): Table {
  const { config } = result;
  return {
    title: 'Reopen after SIGKILL',
    note:
      `A child process appends 1 KiB records until the log holds ${mebibytes(config.recoverBytes)}, checkpointing every ` +
      `${mebibytes(config.checkpointBytes)} or never, and is killed without closing; this process then times ` +
      '`CommitLog.open` (page cache warm, one sample) and checks every resolved append is indexed.' +
      (config.recoverNote ? ` Scaled down: ${config.recoverNote}.` : ''),
    headers: [
      'engine',
      'checkpoints',
      'log MiB',
      'records',
      'open ms',
      'checkpoint',
      'replayed records',
      'replayed MiB',
      'note',
    ],
    rows: result.recovery.map((r) => [
      r.engine,
      r.checkpointBytes === 0 ? 'none' : `every ${mebibytes(r.checkpointBytes)}`,
      cell(r.logBytes / MIB),
      figure(r.records),
      cell(r.openMs),
      r.checkpoint,
      figure(r.replayedRecords),
      cell(r.replayedBytes / MIB),
      failure(r.error),
    ]),
  };
}

/** The tables for whichever sections `result` holds, in suite order. */
export function logTables(result: Partial<LogBenchResult> & Pick<LogBenchResult, 'config'>): Table[] {
  const tables: Table[] = [];
  if (result.disk) tables.push(diskTable({ config: result.config, disk: result.disk }));
  if (result.append)
    tables.push(appendTable(result.append, false, result.config), appendTable(result.append, true, result.config));
  if (result.read) tables.push(readTable(result.read, result.readFloor ?? []));
  if (result.footprint) tables.push(footprintTable({ config: result.config, footprint: result.footprint }));
  if (result.lmqScale) tables.push(lmqScaleTable(result.config, result.lmqScale));
  if (result.recovery) tables.push(recoveryTable({ config: result.config, recovery: result.recovery }));
  if (result.targets)
    tables.push(
      targetsTable(
        result.targets,
        'Every share of a floor is paired by round with the floor measured in the same run. An expectation without a ' +
          'number is reported, not counted as a target.',
      ),
    );
  return tables;
}

export function printLogResult(result: Partial<LogBenchResult> & Pick<LogBenchResult, 'config'>): void {
  printTables(logTables(result));
}
