/**
 * The log suite's targets, checked against one run: the native engine as a share of the floors the
 * machine sets, measured in the same rounds and paired by round (a plain file for appends, with one
 * fdatasync per batch when durable; a copy-plus-checksum of the same records for the warm read),
 * the memory of an idle LMQ, and a million LMQs working under the descriptor and mapping limits.
 */
import type { AppendRow, LogBenchResult } from './log-result.js';
import { pairedSpeedup } from './measure.js';
import { figure } from './table.js';
import { ratioTarget, type Target } from './targets.js';

/** Native append as a share of the plain file's speed, durable or not. */
const APPEND_SHARE_OF_FLOOR = 0.8;
/** Native warm read by LMQ as a share of the copy-plus-checksum floor's speed. */
const READ_SHARE_OF_FLOOR = 0.7;
/** What an idle LMQ may cost natively, bytes of resident memory. */
const IDLE_LMQ_BYTES = 100;

const count = (value: number | null) => (value === null ? '—' : value.toLocaleString('en-US'));

function appendRow(rows: readonly AppendRow[], store: string, bodyBytes: number, durable: boolean) {
  return rows.find((r) => r.store === store && r.bodyBytes === bodyBytes && r.durable === durable);
}

/** Bytes per LMQ and per message from the many-LMQ probe's two phases (bench/log-lmqs.ts). */
export function perLmqAndMessage(lmqs: number, extra: number, afterLmqs: number, afterExtra: number) {
  const perMessage = (afterExtra - afterLmqs) / extra;
  return { perLmq: (afterLmqs - perMessage * lmqs) / lmqs, perMessage };
}

export function checkLogTargets(result: Omit<LogBenchResult, 'targets'>): Target[] {
  const out: Target[] = [];
  for (const durable of [false, true]) {
    const floor = durable ? 'plain file + fdatasync' : 'plain file';
    for (const bodyBytes of result.config.bodySizes) {
      // The plain file's row says how many times faster native was than it: native's share of it.
      const x = appendRow(result.append, 'fs append', bodyBytes, durable)?.nativeSpeedup ?? Number.NaN;
      const name = `${durable ? 'durable' : 'non-durable'} append, native / ${floor}, ${bodyBytes} B`;
      out.push(ratioTarget(name, x, APPEND_SHARE_OF_FLOOR));
    }
  }
  for (const floor of result.readFloor ?? []) {
    const x = floor.nativeShare;
    const name = `warm read by LMQ, native / copy + checksum, ${floor.bodyBytes} B`;
    out.push(ratioTarget(name, x, READ_SHARE_OF_FLOOR));
  }
  for (const sample of result.lmqScale ?? []) {
    out.push(lmqScaleTarget(result.config, sample));
    if (sample.engine === 'native' && !('error' in sample)) out.push(idleLmqTarget(sample));
  }
  // The js engine is expected ahead of sqlite, without a factor named.
  for (const bodyBytes of result.config.bodySizes) {
    const js = appendRow(result.append, 'litetopic js', bodyBytes, false);
    const sqlite = appendRow(result.append, 'better-sqlite3', bodyBytes, false);
    if (js?.measurement && sqlite?.measurement) {
      const x = pairedSpeedup(js.measurement, sqlite.measurement);
      const expected = ratioTarget(`non-durable append, js / sqlite, ${bodyBytes} B`, x, 1, true);
      out.push({ ...expected, required: `${expected.required} (expected)`, expectation: true });
    }
  }
  return out;
}

/**
 * An idle LMQ's cost: the probe's resident growth per LMQ once the growth its messages explain
 * (the second phase's per message) is taken out, so what is left is what holding a name costs.
 */
function idleLmqTarget(sample: Exclude<NonNullable<LogBenchResult['lmqScale']>[number], { error: string }>): Target {
  const rss = perLmqAndMessage(sample.lmqs, sample.extraRecords, sample.rssAfterLmqs, sample.rssAfterExtra).perLmq;
  const index = perLmqAndMessage(
    sample.lmqs,
    sample.extraRecords,
    sample.indexBytesAfterLmqs,
    sample.indexBytesAfterExtra,
  ).perLmq;
  const known = Number.isFinite(rss);
  return {
    name: 'idle LMQ, native (resident bytes, its messages taken out)',
    ratio: IDLE_LMQ_BYTES / rss,
    target: 1,
    strict: false,
    pass: known ? rss < IDLE_LMQ_BYTES : null,
    measured: known ? `${Math.round(rss)} B (index estimate ${Math.round(index)} B)` : '—',
    required: `< ${IDLE_LMQ_BYTES} B`,
  };
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
): Target {
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
