/**
 * Reopen after a crash: a child process writes a large log (1 KiB bodies over the suite's LMQs) and
 * is killed with SIGKILL without closing; the parent then times `CommitLog.open` on the directory,
 * once for a log checkpointed every `checkpointBytes` as it grew and once for a log never
 * checkpointed. Every append the child saw resolve must be in the reopened index.
 *
 * Child side, run by `benchRecovery`:
 *   node --import tsx bench/log-recovery.ts <native|js> <dir> <bytes> <checkpointBytes> <seed>
 * (compiled: node dist/bench/log-recovery.js ...; ./lib.ts `scriptArgs`)
 * It prints one JSON line (records, bytes written) once the log is that large and waits to be killed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { AppendRecord } from '../ts/index.js';
import { lib, PACKAGE_ROOT, runIfMain, scriptArgs } from './lib.js';
import { diskUsage, removeDir, tempDir } from './log-disk.js';
import { bodySource, lmqName } from './log-workload.js';
import { mulberry32 } from './workload.js';

const ENGINES = ['native', 'js'] as const;
type Engine = (typeof ENGINES)[number];
const BODY_BYTES = 1024;
const BATCH_RECORDS = 1000;

export interface RecoveryRow {
  engine: Engine;
  /** `checkpointBytes` the writer ran with; 0: never checkpointed (the log was not closed). */
  checkpointBytes: number;
  /** Log bytes written (the writer's final write position). */
  logBytes: number;
  records: number;
  /** Wall time of `CommitLog.open`, ms, in this (warm-cache) process. */
  openMs: number;
  /** What the reopened log reports (docs/FORMAT.md, "Recovery"). */
  checkpoint: string;
  replayedRecords: number;
  replayedBytes: number;
  recoveryMs: number;
  error?: string;
}

interface WriterReport {
  records: number;
  writePosition: number;
}

async function writeUntil(engine: Engine, dir: string, bytes: number, checkpointBytes: number, seed: number) {
  const log = await lib.CommitLog.open(dir, { engine, checkpointBytes });
  const random = mulberry32(seed);
  const body = bodySource(BODY_BYTES, seed + 1);
  const names = Array.from({ length: 10_000 }, (_, i) => lmqName(i));
  let records = 0;
  while (log.stats().writePosition < bytes) {
    const batch: AppendRecord[] = [];
    for (let i = 0; i < BATCH_RECORDS; i++) {
      batch.push({ lmqs: [names[Math.floor(random() * names.length)] as string], body: body() });
    }
    const written = await log.append(batch);
    records += written.length;
    // A producer fed from the network yields between batches; a loop that never did would starve the
    // background checkpoints, whose completions run on the event loop.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  const report: WriterReport = { records, writePosition: log.stats().writePosition };
  process.stdout.write(`${JSON.stringify(report)}\n`);
  // Stay alive, log open, until the parent kills this process.
  setInterval(() => undefined, 60_000);
}

function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    lines.once('line', resolve);
    child.once('exit', (code, signal) =>
      reject(new Error(`writer exited (${code ?? signal}) early: ${stderr.trim()}`)),
    );
  });
}

async function killedWriter(engine: Engine, dir: string, bytes: number, checkpointBytes: number, seed: number) {
  const args = [...scriptArgs('log-recovery'), engine, dir, String(bytes), String(checkpointBytes), String(seed)];
  const child = spawn(process.execPath, args, { cwd: PACKAGE_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    return JSON.parse(await firstLine(child)) as WriterReport;
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    if (child.exitCode === null) child.kill('SIGKILL');
    await exited;
  }
}

async function recoverOnce(engine: Engine, bytes: number, checkpointBytes: number, seed: number): Promise<RecoveryRow> {
  const dir = tempDir(`recover-${engine}`);
  const row: RecoveryRow = {
    engine,
    checkpointBytes,
    logBytes: 0,
    records: 0,
    openMs: Number.NaN,
    checkpoint: '—',
    replayedRecords: 0,
    replayedBytes: 0,
    recoveryMs: Number.NaN,
  };
  try {
    const written = await killedWriter(engine, dir, bytes, checkpointBytes, seed);
    row.logBytes = written.writePosition;
    row.records = written.records;
    if (diskUsage(dir).allocatedBytes === 0) throw new Error('the writer left nothing on disk');
    const started = performance.now();
    const log = await lib.CommitLog.open(dir, { engine });
    row.openMs = performance.now() - started;
    const stats = log.stats();
    row.checkpoint = stats.recovery.checkpoint;
    row.replayedRecords = stats.recovery.replayedRecords;
    row.replayedBytes = Math.max(0, stats.writePosition - stats.recovery.replayedFrom);
    row.recoveryMs = stats.recovery.durationMs;
    // Every append the writer saw resolve is in the page cache, so it must survive the kill.
    if (stats.indexEntries < written.records) {
      throw new Error(`reopened with ${stats.indexEntries} index entries, ${written.records} appends had resolved`);
    }
    await log.close();
  } catch (error) {
    row.error = error instanceof Error ? error.message : String(error);
  } finally {
    removeDir(dir);
  }
  return row;
}

/** For each engine, a log of `bytes` checkpointed every `checkpointBytes`, then one never checkpointed. */
export async function benchRecovery(bytes: number, checkpointBytes: number, seed: number): Promise<RecoveryRow[]> {
  const rows: RecoveryRow[] = [];
  for (const engine of ENGINES) {
    for (const every of [checkpointBytes, 0]) rows.push(await recoverOnce(engine, bytes, every, seed));
  }
  return rows;
}

function main(argv: readonly string[]): Promise<void> {
  const [engine, dir, bytes, checkpointBytes, seed] = argv;
  const numbers = [bytes, checkpointBytes, seed].map(Number);
  if (!ENGINES.includes(engine as Engine) || dir === undefined || !numbers.every(Number.isSafeInteger)) {
    throw new Error(
      `usage: log-recovery.ts <native|js> <dir> <bytes> <checkpointBytes> <seed> (got ${argv.join(' ')})`,
    );
  }
  const [size, every, seedNumber] = numbers as [number, number, number];
  return writeUntil(engine as Engine, dir, size, every, seedNumber);
}

runIfMain(module, () => main(process.argv.slice(2)));
