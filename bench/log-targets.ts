/**
 * The targets of issue 4 ("Figures"), checked against one run. Absolute targets (records/s, GB/s)
 * are stated as the measured figure over the bar; comparisons with lmdb are paired by round.
 */
import type { AppendRow, LogBenchResult, ReadRow } from './log.js';
import { figure, pairedSpeedup } from './measure.js';
import type { TargetCheck } from './pattern.js';
import type { Table } from './pattern-print.js';

/** A target with its figure and its bar as text, for the report. */
export interface LogTarget extends TargetCheck {
  measured: string;
  required: string;
  /** An expectation the issue states without a number; reported, not a target. */
  expectation?: boolean;
}

const NON_DURABLE_RECORDS_PER_SECOND = 5e6;
const NON_DURABLE_BYTES_PER_SECOND = 1e9;
const NON_DURABLE_OVER_LMDB = 10;
const DURABLE_RECORDS_PER_SECOND = 1e6;
const DURABLE_BYTES_PER_SECOND = 0.45e9;
const DURABLE_OVER_LMDB = 3;
const READ_RECORDS_PER_SECOND = 5e6;
const SMALL_BODY_BYTES = 100;
const LARGE_BODY_BYTES = 1024;

function target(name: string, value: number, bar: number, measured: string, required: string): LogTarget {
  const known = Number.isFinite(value);
  return {
    name,
    ratio: value / bar,
    target: 1,
    strict: false,
    pass: known ? value >= bar : null,
    measured: known ? measured : '—',
    required,
  };
}

const millions = (value: number) => `${figure(value / 1e6)} M records/s`;
const gigabytes = (value: number) => `${figure(value / 1e9)} GB/s`;
const times = (value: number) => `${figure(value)}×`;
const count = (value: number | null) => (value === null ? '—' : value.toLocaleString('en-US'));

function appendRow(rows: readonly AppendRow[], store: string, bodyBytes: number, durable: boolean) {
  return rows.find((r) => r.store === store && r.bodyBytes === bodyBytes && r.durable === durable);
}

function readRow(rows: readonly ReadRow[], store: string, bodyBytes: number) {
  return rows.find((r) => r.store === store && r.bodyBytes === bodyBytes);
}

function appendTargets(rows: readonly AppendRow[], durable: boolean): LogTarget[] {
  const mode = durable ? 'durable' : 'non-durable';
  const perSecond = durable ? DURABLE_RECORDS_PER_SECOND : NON_DURABLE_RECORDS_PER_SECOND;
  const bytes = durable ? DURABLE_BYTES_PER_SECOND : NON_DURABLE_BYTES_PER_SECOND;
  const overLmdb = durable ? DURABLE_OVER_LMDB : NON_DURABLE_OVER_LMDB;
  const out: LogTarget[] = [];
  const small = appendRow(rows, 'litetopic native', SMALL_BODY_BYTES, durable);
  if (small) {
    const rps = small.recordsPerSecond;
    out.push(target(`${mode} append, native, 100 B`, rps, perSecond, millions(rps), `≥ ${millions(perSecond)}`));
  }
  const large = appendRow(rows, 'litetopic native', LARGE_BODY_BYTES, durable);
  if (large) {
    const bps = large.payloadBytesPerSecond;
    out.push(target(`${mode} append, native, 1 KiB`, bps, bytes, gigabytes(bps), `≥ ${gigabytes(bytes)}`));
  }
  for (const row of rows.filter((r) => r.store === 'lmdb' && r.durable === durable)) {
    const x = row.nativeSpeedup;
    out.push(
      target(`${mode} append, native / lmdb, ${row.bodyBytes} B`, x, overLmdb, times(x), `≥ ${times(overLmdb)}`),
    );
  }
  return out;
}

export function checkLogTargets(result: Omit<LogBenchResult, 'targets'>): LogTarget[] {
  const out = [...appendTargets(result.append, false), ...appendTargets(result.append, true)];
  for (const bodyBytes of result.config.bodySizes) {
    const row = readRow(result.read, 'litetopic native', bodyBytes);
    if (row === undefined) continue;
    const rps = row.recordsPerSecond;
    out.push(
      target(
        `warm read by LMQ, native, ${bodyBytes} B`,
        rps,
        READ_RECORDS_PER_SECOND,
        millions(rps),
        `≥ ${millions(READ_RECORDS_PER_SECOND)}`,
      ),
    );
  }
  for (const sample of result.lmqScale ?? []) out.push(lmqScaleTarget(result.config, sample));
  // The issue expects the js engine ahead of sqlite without naming a factor.
  for (const bodyBytes of result.config.bodySizes) {
    const js = appendRow(result.append, 'litetopic js', bodyBytes, false);
    const sqlite = appendRow(result.append, 'better-sqlite3', bodyBytes, false);
    if (js?.measurement && sqlite?.measurement) {
      const x = pairedSpeedup(js.measurement, sqlite.measurement);
      out.push({
        ...target(`non-durable append, js / sqlite, ${bodyBytes} B`, x, 1, times(x), '> 1× (expected)'),
        expectation: true,
      });
    }
  }
  return out;
}

/**
 * "A million LMQs must work on a machine with ulimit -n 20,000 and vm.max_map_count 65,530": the
 * probe's process appended to every LMQ and read one back under that descriptor limit, holding
 * fewer descriptors and mappings than the limits allow. A run whose process saw a higher limit (a
 * shell could not lower it) or a smaller LMQ count than asked is not counted.
 */
function lmqScaleTarget(
  config: LogBenchResult['config'],
  sample: NonNullable<LogBenchResult['lmqScale']>[number],
): LogTarget {
  const maxMaps = 65_530;
  const name = `${figure(config.scaleLmqs)} LMQs under ulimit -n ${figure(config.scaleOpenFilesLimit)}, ${sample.engine}`;
  const required = `works; descriptors < ${figure(config.scaleOpenFilesLimit)}, mappings < ${figure(maxMaps)}`;
  if ('error' in sample) return { name, ratio: 0, target: 1, strict: false, pass: null, measured: '—', required };
  const underLimit = sample.openFilesLimit !== null && sample.openFilesLimit <= config.scaleOpenFilesLimit;
  const held =
    sample.descriptors !== null &&
    sample.mappings !== null &&
    sample.descriptors < config.scaleOpenFilesLimit &&
    sample.mappings < maxMaps;
  const counted = underLimit && sample.lmqs === config.scaleLmqs;
  return {
    name,
    ratio: held ? 1 : 0,
    target: 1,
    strict: false,
    pass: counted ? held : null,
    measured: underLimit
      ? `${count(sample.descriptors)} descriptors, ${count(sample.mappings)} mappings`
      : `not counted: ran under ulimit -n ${count(sample.openFilesLimit)}`,
    required,
  };
}

/** The targets table every suite with `LogTarget`s prints: figure, bar and verdict per target. */
export function figureTargetsTable(title: string, targets: readonly LogTarget[], note?: string): Table {
  const verdict = (t: LogTarget) => {
    if (t.pass === null) return 'n/a (failed)';
    if (t.expectation) return t.pass ? 'as expected' : 'not as expected';
    return t.pass ? 'PASS' : 'FAIL';
  };
  return {
    title,
    ...(note === undefined ? {} : { note }),
    headers: ['target', 'measured', 'required', 'result'],
    rows: targets.map((t) => [t.name, t.measured, t.required, verdict(t)]),
  };
}
