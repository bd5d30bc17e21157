/**
 * The lifecycle suite's targets and tables: the same headers and cells feed the console (aligned
 * text) and bench/RESULTS.md (markdown).
 */
import type { ExpiryRow, LifecycleBenchResult, ReopenRow } from './lifecycle-result.js';
import { failure as failureCell, figure, printTables, type Table } from './table.js';
import { targetsTable } from './targets.js';

type PartialResult = Pick<LifecycleBenchResult, 'config'> & Partial<Omit<LifecycleBenchResult, 'config'>>;

/** Counts as whole numbers, other figures as `figure` writes them; `—` when unknown. */
const cell = (value: number, format: (v: number) => string = figure) =>
  Number.isFinite(value) ? (Number.isInteger(value) ? value.toLocaleString('en-US') : format(value)) : '—';
const mib = (bytes: number) => cell(bytes / 2 ** 20);
const failure = (error: string | undefined) => failureCell(error, 160);

function reopenTable(rows: readonly ReopenRow[]): Table {
  return {
    title: 'Reopen (`Broker.open`) of a large directory',
    note:
      'A child process sends every message with `sendBatch` (1,000 per call, 100 B bodies, flush `async`, checkpoints ' +
      'every 64 MiB of log as the broker does by default), then more until the log is within 1% of starting its next ' +
      'checkpoint (the worst case for the reopen: nearly a whole interval to replay; "messages" counts them all), ' +
      'subscribes one shared group to every lite topic from `min`, ' +
      'POPs and acks some (the last message of each POP stays in flight) and is killed with SIGKILL. "kill" times ' +
      '`Broker.open` on that directory; that broker is then closed ("close ms") and "clean" times `Broker.open` again. ' +
      "Both in the parent process with the directory in the page cache. Checkpoint, replay and recovery ms are the log's " +
      '`stats().recovery`; progress and in flight are what the state journal restored, checked against the writer.',
    headers: [
      'engine',
      'shutdown',
      'messages',
      'lite topics',
      'dir MiB',
      'open ms',
      'checkpoint',
      'replayed records',
      'replayed MiB',
      'log recovery ms',
      'progress',
      'in flight',
      'close ms',
      'write msgs/s',
      'note',
    ],
    rows: rows.map((r) => [
      r.engine,
      r.shutdown === 'kill' ? 'SIGKILL' : 'clean',
      cell(r.messages),
      cell(r.liteTopics),
      mib(r.dirBytes),
      cell(r.openMs),
      r.checkpoint,
      cell(r.replayedRecords),
      mib(r.replayedBytes),
      cell(r.recoveryMs),
      cell(r.progress),
      cell(r.inflight),
      cell(r.closeMs),
      r.writer === undefined ? '' : cell(r.writer.sent / (r.writer.writeMs / 1000)),
      failure(r.error),
    ]),
  };
}

function sweepTable(rows: readonly ExpiryRow[], config: LifecycleBenchResult['config']): Table {
  const e = config.expiry;
  return {
    title: 'Expiry sweeps (`broker.runMaintenance()`)',
    note:
      `${e.topics.toLocaleString('en-US')} lite topics on disk, one in ten last written 2 h ago on the broker's clock, ` +
      "`liteTopicExpirationMs` 1 h; a sweep expires at most 1,000 per parent (the broker's batch). Sweeps run every " +
      `${e.sweepEveryMs} ms in the "sweeping" windows (the broker's default interval is 1 s); each is timed from the call ` +
      'until it resolves (the `drop` records durable and the LMQs deleted). Only sweeps that expired something count. ' +
      `"all expired in" runs from the first sweep to the last idle lite topic gone, "off" windows included.`,
    headers: [
      'engine',
      'lite topics',
      'idle',
      'setup s',
      'sweeps',
      'sweep p50 ms',
      'sweep p99 ms',
      'sweep max ms',
      'expired',
      'all expired in s',
      'unsubscribed events',
      'note',
    ],
    rows: rows.map((r) => [
      r.engine,
      cell(r.topics),
      cell(r.idle),
      cell(r.setupMs / 1000),
      cell(r.sweeps),
      cell(r.sweepP50Ms),
      cell(r.sweepP99Ms),
      cell(r.sweepMaxMs),
      cell(r.expired),
      cell(r.expireAllMs / 1000),
      cell(r.unsubscribedEvents),
      failure(r.error),
    ]),
  };
}

function latencyTable(rows: readonly ExpiryRow[], config: LifecycleBenchResult['config']): Table {
  const e = config.expiry;
  return {
    title: 'Send-to-pop latency with expiry off and while sweeping (same run, interleaved)',
    note:
      `One producer paced at ${e.rate.toLocaleString('en-US')} msgs/s over ${e.loadTopics.toLocaleString('en-US')} active lite topics ` +
      `(\`sendBatch\` of the messages due), two long-polling clients (\`waitMs\` 100) acking everything; ${e.windowMs} ms windows ` +
      'alternate between no sweep and sweeping, after one warm-up window. Latency = `pop` resolved − just before the ' +
      "`sendBatch`, counted in the window the message was sent in. p99 ms is over all of the phase's deliveries; " +
      '"median window p99" takes each window\'s own p99 and gives their median (the lower middle one of an even count), ' +
      'the figure the target compares, since one window with a stall from elsewhere sets the pooled p99. ' +
      'Event-loop delay from `perf_hooks.monitorEventLoopDelay`, one per window: the highest window p99 and the max.',
    headers: [
      'engine',
      'phase',
      'windows',
      'deliveries',
      'p50 ms',
      'p99 ms',
      'max ms',
      'median window p99 ms',
      'window p99 range ms',
      'loop delay p99 ms',
      'loop delay max ms',
    ],
    rows: rows.flatMap((r) =>
      r.phases.map((p) => [
        r.engine,
        p.phase,
        cell(p.windows),
        cell(p.deliveries),
        cell(p.p50Ms),
        cell(p.p99Ms),
        cell(p.maxMs),
        cell(p.medianWindowP99Ms),
        p.windowP99Ms.length === 0 ? '—' : `${cell(Math.min(...p.windowP99Ms))}–${cell(Math.max(...p.windowP99Ms))}`,
        cell(p.loopP99Ms),
        cell(p.loopMaxMs),
      ]),
    ),
  };
}

/** The tables for whichever sections `result` holds. */
export function lifecycleTables(result: PartialResult): Table[] {
  const tables: Table[] = [];
  if (result.reopen) tables.push(reopenTable(result.reopen));
  if (result.expiry) tables.push(sweepTable(result.expiry, result.config), latencyTable(result.expiry, result.config));
  if (result.targets) tables.push(targetsTable(result.targets));
  return tables;
}

export function printLifecycleResult(result: PartialResult): void {
  printTables(lifecycleTables(result));
}
