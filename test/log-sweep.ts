/**
 * The scenario the js engine's fault and power-loss sweeps run (test/log-faults.test.ts,
 * test/log-power-loss.test.ts), the model of what it appended and acknowledged, and the check of a
 * reopened directory against that model. Mirrors native/core/src/log/tests/faults.rs: appends to
 * several LMQs over several small segments (so segments roll and spares are prepared), syncs, two
 * LMQ deletions, two checkpoints and two retentions. An append is acknowledged once a later `sync`
 * succeeded; the scenario goes on after errors as a user would.
 */
import {
  closeSync,
  existsSync,
  fdatasyncSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MIN_SEGMENT_BYTES, SEGMENT_HEADER_BYTES } from '../ts/common/limits.js';
import { type AppendRecord, encodeBatch, encodeDeletions } from '../ts/common/log-encode.js';
import type { LogCore } from '../ts/engine/contract.js';
import { openJsLog } from '../ts/engine/js/log/log.js';
import { SEGMENTS_DIR, segmentFileName } from '../ts/engine/js/log/segment.js';
import { nodeStorage, type Storage } from '../ts/engine/js/log/storage.js';
import { CommitLog, type EngineName } from '../ts/index.js';
import { decodeMessages, type StoredMessage } from '../ts/log-message.js';

export const SEGMENT = MIN_SEGMENT_BYTES;
const NOW = 1_700_000_000_000;

/** A directory for one run: on a memory file system where there is one, so syncs cost nothing. */
export function sweepDir(): string {
  return mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'litetopic-sweep-'));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** One LMQ as the scenario believes it to be. */
interface LmqModel {
  /** Bumped by each deletion: records of an older generation were deleted with their LMQ. */
  generation: number;
  next: number;
  /** Records of the batch being encoded that go before the next one: its offset is after theirs. */
  planned: number;
  /** Written in this generation, not yet acknowledged: [offset, body]. */
  unacked: [number, string][];
  /** Acknowledged in this generation: [offset, body]. */
  acked: [number, string][];
  /** Offsets below this may have gone to retention. */
  floor: number;
}

function emptyLmq(generation = 0): LmqModel {
  return { generation, next: 0, planned: 0, unacked: [], acked: [], floor: 0 };
}

/** What the scenario appended and what of it was acknowledged. */
export class Model {
  readonly lmqs = new Map<string, LmqModel>();
  /** The LMQ as it was before a deletion not acknowledged yet: after a failure either may be on disk. */
  readonly beforeDeletion = new Map<string, LmqModel>();
  /** Every `lmq \0 body` an append was asked to store: whatever a read returns must be one of them. */
  readonly appended = new Set<string>();
  /** What was wrong with what the log returned before it was closed, if anything. */
  liveProblem: string | undefined;
  private n = 0;

  /** A deep copy, to go on from separately. */
  copy(): Model {
    const copy = new Model();
    const clone = (state: LmqModel): LmqModel => ({
      ...state,
      unacked: [...state.unacked],
      acked: [...state.acked],
    });
    for (const [name, state] of this.lmqs) copy.lmqs.set(name, clone(state));
    for (const [name, state] of this.beforeDeletion) copy.beforeDeletion.set(name, clone(state));
    for (const key of this.appended) copy.appended.add(key);
    copy.liveProblem = this.liveProblem;
    copy.n = this.n;
    return copy;
  }

  private lmq(name: string): LmqModel {
    let state = this.lmqs.get(name);
    if (state === undefined) {
      state = emptyLmq();
      this.lmqs.set(name, state);
    }
    return state;
  }

  /**
   * A record to `lmqs` whose body names its number and, for each LMQ, the generation and offset it
   * should get; padded to a size that varies with the number.
   */
  record(lmqs: readonly string[]): AppendRecord {
    this.n++;
    let body = `n${this.n}|`;
    for (const lmq of lmqs) {
      const state = this.lmq(lmq);
      body += `${lmq}:${state.generation}:${state.next + state.planned};`;
      state.planned++;
    }
    body += '|';
    const size = 40 + ((this.n * 97) % 360);
    while (body.length < size) body += String.fromCharCode(97 + (body.length % 26));
    for (const lmq of lmqs) this.appended.add(`${lmq}\0${body}`);
    return { lmqs, body };
  }

  /** The batch is encoded: offsets of the next one start again from `next`. */
  encoded(): void {
    for (const state of this.lmqs.values()) state.planned = 0;
  }

  written(record: AppendRecord): void {
    for (const lmq of record.lmqs) {
      const state = this.lmq(lmq);
      state.unacked.push([state.next, record.body as string]);
      state.next++;
    }
  }

  deleted(lmq: string): void {
    const state = this.lmq(lmq);
    this.beforeDeletion.set(lmq, state);
    this.lmqs.set(lmq, emptyLmq(state.generation + 1));
  }

  /** What a sync started now covers: how many records of each LMQ are written so far. */
  pending(): Map<string, number> {
    const written = new Map<string, number>();
    for (const [lmq, state] of this.lmqs) written.set(lmq, state.acked.length + state.unacked.length);
    return written;
  }

  /** A sync started when `pending` gave `covered` succeeded (the scenario deletes no LMQ meanwhile). */
  syncedUpTo(covered: Map<string, number>): void {
    for (const [lmq, count] of covered) {
      const state = this.lmqs.get(lmq) as LmqModel;
      while (state.acked.length < count && state.unacked.length > 0) {
        state.acked.push(state.unacked.shift() as [number, string]);
      }
    }
  }

  synced(): void {
    for (const state of this.lmqs.values()) state.acked.push(...state.unacked.splice(0));
    this.beforeDeletion.clear();
  }

  /** Records acknowledged, over every LMQ. */
  get acknowledged(): number {
    let count = 0;
    for (const state of this.lmqs.values()) count += state.acked.length;
    return count;
  }

  setFloor(lmq: string, min: number): void {
    const state = this.lmq(lmq);
    state.floor = Math.max(state.floor, min);
  }
}

const SHAPES: readonly (readonly (readonly string[])[])[] = [
  [['a'], ['b'], ['a', 'c'], ['c'], ['b', 'a']],
  [['c'], ['a'], ['a'], ['b']],
  [['b', 'c'], ['a'], ['c'], ['c'], ['a'], ['b']],
];

/** Appends one batch, preparing a segment when the active one is full, as ts/log.ts does. */
async function append(log: LogCore, model: Model, shape: readonly (readonly string[])[]): Promise<void> {
  const records = shape.map((lmqs) => model.record(lmqs));
  model.encoded();
  const batch = encodeBatch(records, NOW, SEGMENT - SEGMENT_HEADER_BYTES);
  for (let from = 0; from < batch.count; ) {
    let done: number;
    try {
      done = log.append(batch, from, NOW);
    } catch {
      return;
    }
    for (let k = from; k < done; k++) model.written(records[k] as AppendRecord);
    from = done;
    if (from < batch.count) {
      try {
        await log.prepareSegment(NOW);
      } catch {
        return;
      }
    }
  }
}

function remove(log: LogCore, model: Model, lmq: string): void {
  try {
    if (log.append(encodeDeletions([lmq], NOW), 0, NOW) === 1) model.deleted(lmq);
  } catch {
    // The user sees the error and goes on.
  }
}

async function sync(log: LogCore, model: Model): Promise<void> {
  try {
    await log.sync();
    model.synced();
  } catch {
    // Not acknowledged.
  }
}

/**
 * Which scenario a sweep runs. `whole`: from an empty directory, all 20 rounds on the storage under
 * test. `afterCrash`: the first 10 rounds on real storage, left as a killed process leaves them
 * with a torn record at the end; then the storage under test reopens the log (recovery cuts the
 * torn record and removes the spare after it) and runs the last 10 rounds. `concurrent`: from an
 * empty directory, rounds whose syncs, checkpoints, preparations and retentions run while appends
 * go on; it needs `orderedStorage` under the storage under test, so a call number names one call.
 */
export type Scenario = 'whole' | 'afterCrash' | 'concurrent';

const ignore = () => undefined;

/** Rounds `from` to `to` (excluded) of the scenario on `log`. */
async function play(log: LogCore, model: Model, from: number, to: number): Promise<void> {
  for (let round = from; round < to; round++) {
    await append(log, model, SHAPES[round % SHAPES.length] as (readonly string[])[]);
    if (!log.spareReady) await log.prepareSegment(NOW).catch(ignore);
    if (round === 4) remove(log, model, 'b');
    if (round === 12) remove(log, model, 'c');
    if (round === 6 || round === 14) await log.checkpoint(NOW + 1).catch(ignore);
    if (round === 8 || round === 16) {
      await log.retain(-1, 3 * SEGMENT).catch(ignore);
      for (const lmq of model.lmqs.keys()) {
        try {
          model.setFloor(lmq, log.minOffset(lmq));
        } catch {
          // A failed log: the floor stays.
        }
      }
    }
    if (round % 3 !== 1) await sync(log, model);
  }
}

/**
 * The real file system through synchronous calls, each promise settled when it is made, so that
 * operations running at once interleave the same way on every run and a call's number names the
 * same call each time.
 */
export const orderedStorage: Storage = {
  open: async (path) => openSync(path, 'r+'),
  create: async (path) => openSync(path, 'wx+'),
  close: async (fd) => closeSync(fd),
  write: (fd, bytes, offset, length, position) => writeSync(fd, bytes, offset, length, position),
  writeAsync: async (fd, bytes, offset, length, position) => writeSync(fd, bytes, offset, length, position),
  read: (fd, bytes, offset, length, position) => readSync(fd, bytes, offset, length, position),
  size: async (fd) => fstatSync(fd).size,
  truncate: async (fd, length) => ftruncateSync(fd, length),
  datasync: async (fd) => fdatasyncSync(fd),
  rename: async (from, to) => renameSync(from, to),
  unlink: async (path) => unlinkSync(path),
  readdir: async (path) => readdirSync(path),
  mkdir: async (path) => {
    mkdirSync(path, { recursive: true });
  },
  syncDir: async (path) => {
    const fd = openSync(path, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  },
};

/**
 * Rounds of the `concurrent` scenario: as ts/log.ts drives a log, a sync, a checkpoint, a segment
 * preparation and a retention run while more appends are written (appends one after another, as
 * its write chain keeps them).
 */
async function playConcurrently(log: LogCore, model: Model, rounds: number): Promise<void> {
  let appends: Promise<void> = Promise.resolve();
  const chain = (shape: readonly (readonly string[])[]) => {
    appends = appends.then(() => append(log, model, shape));
    return appends;
  };
  for (let round = 0; round < rounds; round++) {
    const work: Promise<unknown>[] = [chain(SHAPES[round % SHAPES.length] as (readonly string[])[])];
    await work[0];
    const covered = model.pending();
    work.push(log.sync().then(() => model.syncedUpTo(covered), ignore));
    work.push(chain(SHAPES[(round + 1) % SHAPES.length] as (readonly string[])[]));
    if (!log.spareReady) work.push(log.prepareSegment(NOW).catch(ignore));
    if (round % 5 === 2) work.push(log.checkpoint(NOW + 1).catch(ignore));
    if (round % 5 === 4) {
      // The segments leave the index when retain is called; their files go later.
      work.push(log.retain(-1, 3 * SEGMENT).catch(ignore));
      for (const lmq of model.lmqs.keys()) {
        try {
          model.setFloor(lmq, log.minOffset(lmq));
        } catch {
          // A failed log: the floor stays.
        }
      }
    }
    work.push(chain(SHAPES[(round + 2) % SHAPES.length] as (readonly string[])[]));
    await Promise.all(work);
  }
}

/** Real storage that remembers the descriptors it opened, so a test can close them as a kill would. */
class KillableStorage implements Storage {
  readonly descriptors = new Set<number>();
  async open(path: string) {
    const fd = await nodeStorage.open(path);
    this.descriptors.add(fd);
    return fd;
  }
  async create(path: string) {
    const fd = await nodeStorage.create(path);
    this.descriptors.add(fd);
    return fd;
  }
  close(fd: number) {
    this.descriptors.delete(fd);
    return nodeStorage.close(fd);
  }
  write = nodeStorage.write;
  writeAsync = nodeStorage.writeAsync;
  read = nodeStorage.read;
  size = nodeStorage.size;
  truncate = nodeStorage.truncate;
  datasync = nodeStorage.datasync;
  rename = nodeStorage.rename;
  unlink = nodeStorage.unlink;
  readdir = nodeStorage.readdir;
  mkdir = nodeStorage.mkdir;
  syncDir = nodeStorage.syncDir;

  /** Closes every descriptor still open, as the end of a process does. */
  kill(): void {
    for (const fd of this.descriptors) closeSync(fd);
    this.descriptors.clear();
  }
}

/**
 * The first half of `afterCrash`, on real storage: the log is abandoned without a close (its files
 * closed as a killed process's are, its lock removed as the next process would replace it) and a
 * record is left torn after the last one.
 */
export async function crashedHalf(dir: string): Promise<Model> {
  const model = new Model();
  const storage = new KillableStorage();
  const log = await openJsLog(dir, { segmentBytes: SEGMENT, nowMs: NOW, readOnly: false, repair: false }, storage);
  await play(log, model, 0, 10);
  await sync(log, model);
  const position = log.writePosition;
  storage.kill();
  rmSync(join(dir, 'LOCK'));
  const base = Math.floor(position / SEGMENT) * SEGMENT;
  const torn = encodeBatch([model.record(['a'])], NOW, SEGMENT - SEGMENT_HEADER_BYTES);
  model.encoded();
  const length = Math.min(torn.starts[1] as number, base + SEGMENT - position) >>> 1;
  const fd = openSync(join(dir, SEGMENTS_DIR, segmentFileName(base)), 'r+');
  writeSync(fd, torn.bytes, 0, length, position - base);
  closeSync(fd);
  return model;
}

/** The storage a scenario's storage under test goes over. */
export function innerStorage(scenario: Scenario): Storage {
  return scenario === 'concurrent' ? orderedStorage : nodeStorage;
}

/** `scenario` on a js log opened with `storage` in `dir`; the model of what it did. */
/** The files and model `crashedHalf` leaves, made once and copied into each run's directory. */
let crashedTemplate: Promise<{ files: Map<string, Buffer>; model: Model }> | undefined;

async function copyOfCrashedHalf(dir: string): Promise<Model> {
  crashedTemplate ??= (async () => {
    const template = sweepDir();
    try {
      const model = await crashedHalf(template);
      const files = new Map<string, Buffer>();
      for (const name of readdirSync(template, { recursive: true, encoding: 'utf8' })) {
        const path = join(template, name);
        if (statSync(path).isFile()) files.set(name, readFileSync(path));
      }
      return { files, model };
    } finally {
      removeDir(template);
    }
  })();
  const { files, model } = await crashedTemplate;
  mkdirSync(join(dir, SEGMENTS_DIR), { recursive: true });
  for (const [name, bytes] of files) writeFileSync(join(dir, name), bytes);
  return model.copy();
}

export async function runScenario(dir: string, storage: Storage, scenario: Scenario = 'whole'): Promise<Model> {
  const model = scenario === 'afterCrash' ? await copyOfCrashedHalf(dir) : new Model();
  let log: LogCore;
  try {
    log = await openJsLog(dir, { segmentBytes: SEGMENT, nowMs: NOW, readOnly: false, repair: false }, storage);
  } catch {
    return model;
  }
  if (scenario === 'concurrent') await playConcurrently(log, model, 10);
  else await play(log, model, scenario === 'whole' ? 0 : 10, 20);
  await sync(log, model);
  // A log that still works must return what the reopened one must.
  checkLive(log, model);
  await log.close().catch(ignore);
  return model;
}

/** The generation and offset a body says it has in `lmq`. */
function claimed(body: string, lmq: string): [number, number] | undefined {
  for (const part of (body.split('|')[1] ?? '').split(';')) {
    const [name, generation, offset] = part.split(':');
    if (name === lmq) return [Number(generation), Number(offset)];
  }
  return undefined;
}

/** Whether `records` hold every acknowledged record of `state` at or above its floor, and `next` is not behind them. */
function holds(state: LmqModel, records: Map<number, string>, next: number): string | undefined {
  for (const [offset, body] of state.acked) {
    if (offset < state.floor) continue;
    const read = records.get(offset);
    if (read === undefined) return `acknowledged offset ${offset} is missing`;
    if (read !== body) return `acknowledged offset ${offset} reads back different bytes`;
  }
  const ackedNext = (state.acked[state.acked.length - 1]?.[0] ?? -1) + 1;
  if (next < ackedNext) return `next offset ${next} went back behind acknowledged ${ackedNext}`;
  return undefined;
}

/**
 * Reopens `dir` with `engine` and checks it against `model`: every acknowledged record is there and
 * byte-identical, every record read is one that was appended, at the offset it was given, and the
 * log takes a new append. Returns what is wrong, if anything.
 */
export async function verify(dir: string, model: Model, engine: EngineName): Promise<string | undefined> {
  if (model.liveProblem !== undefined) return `before the reopen: ${model.liveProblem}`;
  rmSync(join(dir, 'LOCK'), { force: true });
  let log: CommitLog;
  try {
    log = await CommitLog.open(dir, { engine, segmentBytes: SEGMENT });
  } catch (error) {
    return `reopen with ${engine} failed: ${String(error)}`;
  }
  try {
    const why = check(
      {
        lmqs: () => log.listLmqs('', 10_000).lmqs,
        read: (lmq) => log.read(lmq, 0, 10_000),
        next: (lmq) => log.maxOffset(lmq),
      },
      model,
    );
    if (why !== undefined) return why;
    await log.append([{ lmqs: ['after'], body: 'after a reopen' }]);
    await log.flush();
  } catch (error) {
    return `checking the reopened log with ${engine} failed: ${String(error)}`;
  } finally {
    await log.close().catch(() => undefined);
  }
  return undefined;
}

/** What `check` reads a log through: a reopened `CommitLog` or the scenario's own `LogCore`. */
interface Reader {
  lmqs(): readonly string[];
  read(lmq: string): readonly StoredMessage[];
  next(lmq: string): number;
}

/** Checks what a log returns against `model`; what is wrong, if anything. */
function check(log: Reader, model: Model): string | undefined {
  for (const lmq of log.lmqs()) {
    // `after` is what an earlier check appended.
    if (!model.lmqs.has(lmq) && lmq !== 'after') return `LMQ ${lmq} was never appended to`;
  }
  for (const [lmq, state] of model.lmqs) {
    const records = new Map<number, string>();
    const generations = new Set<number>();
    for (const message of log.read(lmq)) {
      const body = message.body.toString('latin1');
      if (!model.appended.has(`${lmq}\0${body}`))
        return `${lmq}: offset ${message.offset} holds a record never appended`;
      const [generation, offset] = claimed(body, lmq) ?? [-1, -1];
      if (offset !== message.offset) return `${lmq}: offset ${message.offset} holds a record of another offset`;
      generations.add(generation);
      records.set(offset, body);
    }
    if (generations.size > 1) return `${lmq}: records of generations ${[...generations].join(', ')} mixed`;
    const next = log.next(lmq);
    let why = holds(state, records, next);
    // A deletion not acknowledged may or may not have reached the disk.
    const before = model.beforeDeletion.get(lmq);
    if (why !== undefined && before !== undefined && holds(before, records, next) === undefined) why = undefined;
    if (why !== undefined) return `${lmq}: ${why}`;
  }
  return undefined;
}

/** Checks a log the scenario still has open, if it still works, into `model.liveProblem`. */
function checkLive(log: LogCore, model: Model): void {
  try {
    log.stats();
  } catch {
    return;
  }
  try {
    model.liveProblem = check(
      {
        lmqs: () => log.listLmqs('', 10_000, undefined).names,
        read: (lmq) => decodeMessages(lmq, log.read(lmq, 0, 10_000)),
        next: (lmq) => log.maxOffset(lmq),
      },
      model,
    );
  } catch (error) {
    model.liveProblem = `reading failed: ${String(error)}`;
  }
}
