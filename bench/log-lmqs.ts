/**
 * A million LMQs, child side. A million LMQs must work under `ulimit -n` 20,000 and
 * `vm.max_map_count` 65,530 (no file, mapping or handle per LMQ), and that the index's cost be
 * reported per LMQ and per stored message. In a fresh process, one engine:
 * 1. appends one record (16 B body) to each of `lmqs` LMQs, in batches of 1,000;
 * 2. appends `extraPerLmq` more records to each of the first `extraLmqs` of them.
 *
 * It then prints one JSON line: the log's own index estimate, the process's memory growth after
 * each phase (after global.gc()), the descriptors and mappings the process holds, and the limits
 * it ran under. Per message is the second phase's growth over its records; per LMQ is the first
 * phase's growth less that many messages, over the LMQs. Names are made batch by batch and dropped,
 * so the caller's copies are not counted. Run by `runLogBench` (bench/log.ts) under `ulimit -n`:
 *   node --expose-gc --import tsx bench/log-lmqs.ts <native|js> <lmqs> <extraLmqs> <extraPerLmq>
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { AppendRecord, CommitLog, EngineName } from '../ts/index.js';
import { lib, runIfMain } from './lib.js';
import { removeDir, tempDir } from './log-disk.js';
import { collectedMemory } from './measure.js';

export interface LmqScaleSample {
  engine: EngineName;
  lmqs: number;
  /** Records of the second phase. */
  extraRecords: number;
  /** Mean UTF-8 length of the LMQ names (each is a key of the index). */
  meanNameBytes: number;
  /** The soft `ulimit -n` the process ran under, and the machine's `vm.max_map_count` (null off Linux). */
  openFilesLimit: number | null;
  maxMapCount: number | null;
  /** After both phases: descriptors open, memory mappings, and what the log says it holds. */
  descriptors: number | null;
  mappings: number | null;
  filesOpen: number;
  segments: number;
  /** `stats().indexBytes` after each phase. */
  indexBytesAfterLmqs: number;
  indexBytesAfterExtra: number;
  /** RSS and heap growth over the open log's baseline, after each phase. */
  rssAfterLmqs: number;
  rssAfterExtra: number;
  heapAfterLmqs: number;
  heapAfterExtra: number;
  /** Seconds spent appending, both phases. */
  appendSeconds: number;
}

const BATCH = 1000;
const BODY = Buffer.alloc(16, 0x61);

function lmqName(i: number): string {
  return `%LMQ%$agents$tenant${Math.floor(i / 1000)}__agent${i % 1000}`;
}

/** A /proc figure, or null where there is none. */
function procFigure(read: () => number): number | null {
  try {
    const value = read();
    return Number.isFinite(value) ? value : null;
  } catch {
    return null;
  }
}

async function appendAll(log: CommitLog, count: number, nameOf: (k: number) => string): Promise<void> {
  for (let at = 0; at < count; at += BATCH) {
    const batch: AppendRecord[] = [];
    for (let k = at; k < Math.min(count, at + BATCH); k++) batch.push({ lmqs: [nameOf(k)], body: BODY });
    await log.append(batch);
  }
}

async function sample(engine: EngineName, lmqs: number, extraLmqs: number, extraPerLmq: number) {
  const dir = tempDir(`lmqs-${engine}`);
  try {
    // No background checkpoints: one in flight when a phase's memory is read holds buffers that grow
    // with the LMQ count, so the per-LMQ figure would depend on when it ran, not on the index.
    const log = await lib.CommitLog.open(dir, { engine, flush: 'async', checkpointBytes: 0 });
    const base = collectedMemory();
    const started = performance.now();
    await appendAll(log, lmqs, lmqName);
    let appendMs = performance.now() - started;
    const afterLmqs = collectedMemory();
    const indexBytesAfterLmqs = log.stats().indexBytes;
    const extraStarted = performance.now();
    await appendAll(log, extraLmqs * extraPerLmq, (k) => lmqName(k % extraLmqs));
    appendMs += performance.now() - extraStarted;
    const afterExtra = collectedMemory();
    const stats = log.stats();
    if (stats.lmqs !== lmqs || stats.indexEntries !== lmqs + extraLmqs * extraPerLmq) {
      throw new Error(`${engine}: ${stats.lmqs} LMQs and ${stats.indexEntries} entries after appending`);
    }
    const last = log.read(lmqName(lmqs - 1), 0, 10);
    if (last.length !== 1 || !last[0]?.body.equals(BODY)) throw new Error(`${engine}: the last LMQ reads wrong`);
    let nameBytes = 0;
    for (let i = 0; i < lmqs; i += 997) nameBytes += Buffer.byteLength(lmqName(i));
    const result: LmqScaleSample = {
      engine,
      lmqs,
      extraRecords: extraLmqs * extraPerLmq,
      meanNameBytes: nameBytes / Math.ceil(lmqs / 997),
      openFilesLimit: procFigure(() => {
        const line = readFileSync('/proc/self/limits', 'utf8')
          .split('\n')
          .find((l) => l.startsWith('Max open files'));
        return Number(line?.split(/\s{2,}/)[1]);
      }),
      maxMapCount: procFigure(() => Number(readFileSync('/proc/sys/vm/max_map_count', 'utf8'))),
      descriptors: procFigure(() => readdirSync('/proc/self/fd').length),
      mappings: procFigure(() => readFileSync('/proc/self/maps', 'utf8').trimEnd().split('\n').length),
      filesOpen: stats.filesOpen,
      segments: stats.segments,
      indexBytesAfterLmqs,
      indexBytesAfterExtra: stats.indexBytes,
      rssAfterLmqs: afterLmqs.rss - base.rss,
      rssAfterExtra: afterExtra.rss - base.rss,
      heapAfterLmqs: afterLmqs.heapUsed - base.heapUsed,
      heapAfterExtra: afterExtra.heapUsed - base.heapUsed,
      appendSeconds: appendMs / 1000,
    };
    await log.close();
    return result;
  } finally {
    removeDir(dir);
  }
}

async function main(argv: readonly string[]): Promise<void> {
  const [engine, ...rest] = argv;
  const numbers = rest.map(Number);
  if ((engine !== 'native' && engine !== 'js') || numbers.length !== 3 || !numbers.every(Number.isSafeInteger)) {
    throw new Error(`usage: log-lmqs.ts <native|js> <lmqs> <extraLmqs> <extraPerLmq> (got ${argv.join(' ')})`);
  }
  const [lmqs, extraLmqs, extraPerLmq] = numbers as [number, number, number];
  process.stdout.write(`${JSON.stringify(await sample(engine, lmqs, extraLmqs, extraPerLmq))}\n`);
}

runIfMain(module, () => main(process.argv.slice(2)));
