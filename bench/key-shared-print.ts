/**
 * The key-shared suite's figures as tables: the same headers and cells feed the console (aligned
 * text) and bench/RESULTS.md (markdown).
 */
import type { KeySharedBenchResult, PauseRow, PhaseRow } from './key-shared-result.js';
import { cell, failure, figure, printTables, type Table, times } from './table.js';
import { targetsTable } from './targets.js';

const percent = (v: number) => `${figure(v * 100)}%`;

function phaseTable(rows: readonly PhaseRow[], result: KeySharedBenchResult): Table {
  const { config } = result;
  const failed = (engine: string) => result.runs.find((r) => r.engine === engine)?.error;
  return {
    title: `Throughput by clients (one lite topic, ${config.keys.toLocaleString('en-US')} keys, ${config.processMs} ms per message)`,
    note:
      `Each client is one async loop: \`pop\` (long poll, \`maxNum\` ${config.popMax}, \`waitMs\` ${config.waitMs}), then for each ` +
      `message in turn await a ${config.processMs} ms \`setTimeout\` and ack it: one message at a time per client, clients ` +
      `concurrent. A producer keeps about ${config.backlog.toLocaleString('en-US')} messages sent but not acked. msgs/s = acks ` +
      `over ${config.phaseMs / 1000} s after the phase's last join and ${config.settleMs} ms; × 1 client = paired by round; ` +
      'timer = measured mean length of the 1 ms timer; busy = msgs/s ÷ (clients × 1 per timer), the share of ' +
      "the clients' time spent processing; CPU = this process's CPU time over the phase's wall time (100% = one core); ready ≥ = fewest messages sent but not yet handed out during the phase " +
      '(above 0: the phase was saturated). "timers only" = the same client loops with no broker (only the timer), ' +
      `${config.controlMs / 1000} s per phase: the ceiling. Medians over rounds; spread = range of the rounds over the median.`,
    headers: [
      'clients',
      'engine',
      'msgs/s',
      '× 1 client',
      'timer ms',
      'busy',
      'CPU',
      'empty pops',
      'ready ≥',
      'spread %',
      'note',
    ],
    rows: rows.map((r) => [
      String(r.clients),
      r.engine,
      cell(r.messagesPerSecond),
      cell(r.speedup, times),
      cell(r.timerMs),
      cell(r.efficiency, percent),
      cell(r.cpuShare, percent),
      cell(r.emptyPops),
      cell(r.minReady, (v) => v.toLocaleString('en-US')),
      cell(r.spreadPercent),
      failure(failed(r.engine), 100),
    ]),
  };
}

function pauseTable(rows: readonly PauseRow[], config: KeySharedBenchResult['config']): Table {
  return {
    title: 'Pause a join causes on moved buckets',
    note:
      `Clients join one at a time, ${config.joinGapMs} ms apart. For each bucket whose owner a join changed ` +
      "(`keySharedBuckets` of `admin.clientInfo` before and after): time from just before the new client's `subscribe` " +
      'to the first `pop` of that bucket by its new owner resolving. It includes the old holder finishing what it ' +
      `holds of the bucket (up to ${config.popMax} messages of ${config.processMs} ms) and the new owner finishing its ` +
      'current batch. withheld = moved buckets `groupInfo().keyShared.withheld` listed right after the join. kept = ' +
      'the same time for buckets the join did not move (their next delivery), as a baseline. Over every round.',
    headers: [
      'join',
      'engine',
      'joins',
      'moved',
      'withheld',
      'p50 ms',
      'p99 ms',
      'max ms',
      'kept p50 ms',
      'kept p99 ms',
      'unresolved',
    ],
    rows: rows.map((r) => [
      r.join,
      r.engine,
      cell(r.joins),
      cell(r.moved),
      cell(r.withheld),
      cell(r.p50Ms),
      cell(r.p99Ms),
      cell(r.maxMs),
      cell(r.keptP50Ms),
      cell(r.keptP99Ms),
      cell(r.unresolved),
    ]),
  };
}

export function keySharedTables(result: KeySharedBenchResult): Table[] {
  return [
    phaseTable(result.phases, result),
    pauseTable(result.pauses, result.config),
    targetsTable(result.targets, invariantsNote(result)),
  ];
}

export function printKeySharedResult(result: KeySharedBenchResult): void {
  printTables(keySharedTables(result));
}

/** How I1 and I2 are checked, and the first violations if any. */
function invariantsNote(result: KeySharedBenchResult): string {
  const firsts = result.runs.flatMap((r) => r.violations.first.map((f) => `${r.engine}: ${f}`));
  return (
    'I1 and I2 are checked on every delivery as it is popped: no other client holds an unacked message of its key ' +
    "(or bucket), and a first delivery of a key is the message right after that key's previous one." +
    (firsts.length === 0 ? '' : ` First violations: ${firsts.join('; ')}.`)
  );
}
