/**
 * Reopen time of a large broker directory, reusing the log suite's approach
 * (bench/log-recovery.ts): a child process opens a broker, sends `messages` messages over `topics`
 * lite topics with `sendBatch`, and more until its log is just short of the next checkpoint (so the
 * reopen replays nearly a whole checkpoint interval: the worst case), gives one shared group
 * progress on every lite topic (consumers
 * subscribe from `min`, POP and ack some, leaving some in flight), reports what it holds, and waits to
 * be killed with SIGKILL, log and journal open. The parent then times `Broker.open` on the directory
 * (recovery after a kill), closes that broker cleanly (timed) and times `Broker.open` again (a clean
 * reopen). Each reopened broker is checked: every lite topic, every resolved send, the group's
 * progress, lag and in-flight deliveries must be back.
 *
 * Child side, run by `benchReopen`:
 *   node --import tsx bench/lifecycle-reopen.ts <native|js> <dir> <messages> <topics> <seed>
 * It prints JSON lines: `{ "sent": n }` as it goes, then one `WriterReport` once done.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Broker, CommitLogStats, SendMessage } from '../ts/index.js';
import { lib, runIfMain } from './lib.js';
import { diskUsage, removeDir, tempDir } from './log-disk.js';
import { figure } from './table.js';
import { mulberry32 } from './workload.js';

export const ENGINES = ['native', 'js'] as const;
export type Engine = (typeof ENGINES)[number];
export const PARENT = 'agents';
const GROUP = 'planner';
export const BODY_BYTES = 100;
const SEND_BATCH = 1000;
/** Subscriptions per client: the broker's default `maxLiteTopicsPerClient`. */
const TOPICS_PER_CLIENT = 2000;
/** Messages each lite topic's consumers POP and ack before the kill; one more is left in flight. */
const INVISIBLE_MS = 3_600_000;

/** `tenantT__agentA__sessionI`: distinct for every i, 100 tenants × 50 agents. */
export function liteTopicName(i: number): string {
  return `tenant${i % 100}__agent${Math.floor(i / 100) % 50}__session${i}`;
}

export interface WriterReport {
  sent: number;
  writeMs: number;
  liteTopics: number;
  groupLiteTopics: number;
  totalLag: number;
  inflight: number;
  acked: number;
  logBytes: number;
}

export interface ReopenRow {
  engine: Engine;
  /** `kill`: the writer was killed with SIGKILL; `clean`: after `close()` of the broker reopened from the kill. */
  shutdown: 'kill' | 'clean';
  messages: number;
  liteTopics: number;
  /** Apparent bytes of the directory (segments are preallocated). */
  dirBytes: number;
  /** Wall time of `Broker.open({ dir, engine })`, ms (warm page cache). */
  openMs: number;
  /** The commit log's recovery report (docs/FORMAT.md, "Recovery"). */
  checkpoint: string;
  replayedRecords: number;
  replayedBytes: number;
  recoveryMs: number;
  /** Group progress entries and in-flight deliveries restored from the state journal. */
  progress: number;
  inflight: number;
  /** For `clean`: how long the `close()` before it took (journal compaction, final checkpoint). */
  closeMs: number;
  writer?: WriterReport;
  error?: string;
}

/**
 * The broker's commit log statistics. `Broker` does not expose its log; the admin API reports only
 * files and bytes, so the recovery report is read from the store the broker holds (read only).
 */
export function logStats(broker: Broker): CommitLogStats | undefined {
  const inner = broker as unknown as { context?: { store?: { stats?: () => unknown } } };
  const stats = inner.context?.store?.stats?.() as CommitLogStats | undefined;
  return stats?.recovery === undefined ? undefined : stats;
}

/** What `untilCheckpointDue` reads of the broker's commit log (private fields of ts/log.ts). */
interface CheckpointView {
  bytesSinceCheckpoint: number;
  checkpointing: Promise<void> | undefined;
  options: { checkpointBytes: number };
}

/**
 * Sends more (`send(count)`) until the log is just short of starting its next checkpoint, so the
 * kill that follows leaves recovery nearly a whole checkpoint interval to replay: the worst case,
 * where the message count alone would leave whatever remainder it happens to.
 */
async function untilCheckpointDue(broker: Broker, send: (count: number) => Promise<void>): Promise<void> {
  const inner = broker as unknown as { context: { store: CheckpointView } };
  const log = inner.context.store;
  const every = log.options.checkpointBytes;
  if (typeof log.bytesSinceCheckpoint !== 'number' || !(every > 0))
    throw new Error('no commit log checkpoints to aim at');
  // Bytes per message, measured on a first small batch; stop within 1% of the interval.
  let perMessage = 0;
  for (;;) {
    await log.checkpointing; // one in flight restarted the count when it began
    const room = every - log.bytesSinceCheckpoint - every / 100;
    const count = perMessage === 0 ? 100 : Math.min(SEND_BATCH, Math.floor(room / perMessage));
    if (count <= 0) return;
    const before = log.bytesSinceCheckpoint;
    await send(count);
    if (log.bytesSinceCheckpoint > before)
      perMessage = Math.max(perMessage, (log.bytesSinceCheckpoint - before) / count);
  }
}

async function write(engine: Engine, dir: string, messages: number, topics: number, seed: number): Promise<void> {
  const broker = await lib.Broker.open({ dir, engine, flush: 'async', sessionTimeoutMs: 0 });
  broker.createTopic(PARENT);
  broker.createGroup(GROUP, { bindTopic: PARENT, subModel: 'shared' });
  const names = Array.from({ length: topics }, (_, i) => liteTopicName(i));
  const random = mulberry32(seed);
  const filler = Buffer.alloc(BODY_BYTES, 'x');
  const started = performance.now();
  let sent = 0;
  const send = async (count: number) => {
    const batch: SendMessage[] = new Array(count);
    for (let i = 0; i < count; i++) {
      const seq = sent + i;
      // The first `topics` messages open every lite topic in turn; later ones go anywhere.
      const topic = seq < topics ? seq : Math.floor(random() * topics);
      const body = Buffer.from(filler);
      body.writeUInt32LE(seq, 0);
      batch[i] = { liteTopic: names[topic] as string, body };
    }
    const results = await broker.sendBatch(PARENT, batch);
    sent += results.length;
    // Yield as a networked producer would, so background checkpoints and flushes complete.
    await new Promise<void>((resolve) => setImmediate(resolve));
  };
  const every = Math.max(SEND_BATCH, Math.floor(messages / 10 / SEND_BATCH) * SEND_BATCH);
  while (sent < messages) {
    await send(Math.min(SEND_BATCH, messages - sent));
    if (sent % every === 0 || sent === messages) console.log(JSON.stringify({ sent }));
  }
  await untilCheckpointDue(broker, send);
  const writeMs = performance.now() - started;
  // Group state: every lite topic subscribed from `min` (one `start` per lite topic in the journal),
  // then some POPs: each popped batch is acked but for its last message, which stays in flight.
  let acked = 0;
  for (let from = 0, c = 0; from < topics; from += TOPICS_PER_CLIENT, c++) {
    const consumer = broker.consumer({ group: GROUP, clientId: `c${c}` });
    await consumer.subscribe(names.slice(from, from + TOPICS_PER_CLIENT), { offset: { policy: 'min' } });
    for (let p = 0; p < 20; p++) {
      const popped = await consumer.pop({ maxNum: 32, invisibleTimeMs: INVISIBLE_MS, waitMs: 0 });
      for (const m of popped.slice(0, -1)) await consumer.ack(m);
      acked += Math.max(0, popped.length - 1);
    }
  }
  const info = broker.admin.brokerInfo();
  const group = broker.admin.groupInfo(GROUP, { topK: 0 });
  // Let the journal's writer hand everything to the OS (async flush writes at once, syncs every 200 ms).
  await new Promise((resolve) => setTimeout(resolve, 500));
  const report: WriterReport = {
    sent,
    writeMs,
    liteTopics: info.liteTopics,
    groupLiteTopics: group.liteTopics,
    totalLag: group.totalLag,
    inflight: info.inflight,
    acked,
    logBytes: logStats(broker)?.writePosition ?? Number.NaN,
  };
  console.log(JSON.stringify(report));
  setInterval(() => undefined, 60_000); // stay alive, broker open, until killed
}

function readReport(child: ChildProcess, onProgress: (sent: number) => void): Promise<WriterReport> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    lines.on('line', (line) => {
      const parsed = JSON.parse(line) as Partial<WriterReport>;
      if (parsed.writeMs === undefined) onProgress(parsed.sent ?? 0);
      else resolve(parsed as WriterReport);
    });
    child.once('exit', (code, signal) => reject(new Error(`writer exited (${code ?? signal}): ${stderr.trim()}`)));
  });
}

async function killedWriter(engine: Engine, dir: string, messages: number, topics: number, seed: number) {
  const script = join(__dirname, 'lifecycle-reopen.ts');
  const args = ['--import', 'tsx', script, engine, dir, String(messages), String(topics), String(seed)];
  const child = spawn(process.execPath, args, { cwd: join(__dirname, '..'), stdio: ['ignore', 'pipe', 'pipe'] });
  const started = performance.now();
  try {
    return await readReport(child, (sent) => {
      const rate = sent / ((performance.now() - started) / 1000);
      console.log(
        `  ${engine}: ${sent.toLocaleString('en-US')} / ${messages.toLocaleString('en-US')} sent (${figure(rate)} msgs/s)`,
      );
    });
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    if (child.exitCode === null) child.kill('SIGKILL');
    await exited;
  }
}

/** Opens `dir`, fills `row` with what it took and what came back, and checks it against the writer. */
async function reopen(row: ReopenRow, dir: string, writer: WriterReport): Promise<Broker> {
  const started = performance.now();
  const broker = await lib.Broker.open({ dir, engine: row.engine, flush: 'async', sessionTimeoutMs: 0 });
  row.openMs = performance.now() - started;
  const stats = logStats(broker);
  if (stats !== undefined) {
    row.checkpoint = stats.recovery.checkpoint;
    row.replayedRecords = stats.recovery.replayedRecords;
    row.replayedBytes = Math.max(0, stats.writePosition - stats.recovery.replayedFrom);
    row.recoveryMs = stats.recovery.durationMs;
  }
  const info = broker.admin.brokerInfo();
  const group = broker.admin.groupInfo(GROUP, { topK: 0 });
  row.progress = group.liteTopics;
  row.inflight = info.inflight;
  const problems: string[] = [];
  if (info.liteTopics !== writer.liteTopics) problems.push(`${info.liteTopics} of ${writer.liteTopics} lite topics`);
  // Every send the writer saw resolve is in the page cache, so it survives the kill (one index entry each).
  if (stats !== undefined && stats.indexEntries < writer.sent)
    problems.push(`${stats.indexEntries} index entries, ${writer.sent} sends resolved`);
  if (group.liteTopics !== writer.groupLiteTopics)
    problems.push(`group progress on ${group.liteTopics} of ${writer.groupLiteTopics} lite topics`);
  if (group.totalLag !== writer.totalLag) problems.push(`group lag ${group.totalLag}, writer saw ${writer.totalLag}`);
  if (info.inflight !== writer.inflight) problems.push(`${info.inflight} in flight, writer had ${writer.inflight}`);
  if (problems.length > 0) row.error = problems.join('; ');
  return broker;
}

function emptyRow(engine: Engine, shutdown: ReopenRow['shutdown'], messages: number, topics: number): ReopenRow {
  return {
    engine,
    shutdown,
    messages,
    liteTopics: topics,
    dirBytes: Number.NaN,
    openMs: Number.NaN,
    checkpoint: '—',
    replayedRecords: Number.NaN,
    replayedBytes: Number.NaN,
    recoveryMs: Number.NaN,
    progress: Number.NaN,
    inflight: Number.NaN,
    closeMs: Number.NaN,
  };
}

/** For one engine: write, kill, reopen (after the kill), close, reopen (clean). */
export async function benchReopen(engine: Engine, messages: number, topics: number, seed: number) {
  const dir = tempDir(`lifecycle-${engine}`);
  const killed = emptyRow(engine, 'kill', messages, topics);
  const clean = emptyRow(engine, 'clean', messages, topics);
  try {
    const writer = await killedWriter(engine, dir, messages, topics, seed);
    if (writer.sent < messages) throw new Error(`the writer sent ${writer.sent} of ${messages} messages`);
    // It sent more, up to just short of the log's next checkpoint (`untilCheckpointDue`).
    killed.messages = writer.sent;
    clean.messages = writer.sent;
    killed.writer = writer;
    killed.dirBytes = diskUsage(dir).apparentBytes;
    const first = await reopen(killed, dir, writer);
    const closing = performance.now();
    await first.close();
    clean.closeMs = performance.now() - closing;
    clean.dirBytes = diskUsage(dir).apparentBytes;
    const second = await reopen(clean, dir, writer);
    await second.close();
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    for (const row of [killed, clean]) if (!Number.isFinite(row.openMs)) row.error ??= text;
  } finally {
    removeDir(dir);
  }
  return [killed, clean];
}

function main(argv: readonly string[]): Promise<void> {
  const [engine, dir, ...rest] = argv;
  const numbers = rest.map(Number);
  if (
    !ENGINES.includes(engine as Engine) ||
    dir === undefined ||
    numbers.length !== 3 ||
    !numbers.every(Number.isSafeInteger)
  ) {
    throw new Error(`usage: lifecycle-reopen.ts <native|js> <dir> <messages> <topics> <seed> (got ${argv.join(' ')})`);
  }
  const [messages, topics, seed] = numbers as [number, number, number];
  return write(engine as Engine, dir, messages, topics, seed);
}

runIfMain(module, () => main(process.argv.slice(2)));
