/**
 * The commit log: every message written once to append-only segments, every LMQ a consume queue of
 * index entries into them (docs/FORMAT.md). This class is the same for both engines:
 * it validates and encodes records, orders appends, groups flushes (one sync serves every append
 * waiting when it starts), keeps a spare segment ready and checkpoints the index as the log grows.
 * The engine does the storage work; file creation, syncs and deletions run off the event loop.
 */

import {
  DEFAULT_SEGMENT_BYTES,
  MAX_APPEND_RECORDS,
  MAX_LMQ_NAME_BYTES,
  MAX_READ_RECORDS,
  MAX_SEGMENT_BYTES,
  MIN_SEGMENT_BYTES,
  SEGMENT_HEADER_BYTES,
} from './common/limits.js';
import { type AppendRecord, encodeBatch, encodeDeletions } from './common/log-encode.js';
import type {
  BodyBatch,
  BodyReadResult,
  EncodedBatch,
  EngineName,
  LogCore,
  LogCoreStats,
  ReadRequest,
} from './engine/contract.js';
import { getEngine } from './engine/load.js';
import { ClosedError, InvalidArgumentError, ReadOnlyError } from './errors.js';
import { BODY_RECORD_FRAME_BYTES, bodiesOf, encodeBodies } from './log-bodies.js';
import { decodeMessages, type StoredMessage } from './log-message.js';
import { requireString } from './pattern.js';

export type { AppendRecord } from './common/log-encode.js';
export type { BodyBatch, BodyReadResult, ReadRequest } from './engine/contract.js';
export type { StoredMessage } from './log-message.js';

/** A source of time in ms; tests pass a manual one. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export interface CommitLogOptions {
  /** Size of new segment files in bytes, 4 KiB..1 GiB; default 256 MiB. */
  segmentBytes?: number;
  /** `sync`: an append resolves once durable. `async` (default): flushed every `flushIntervalMs`. */
  flush?: 'async' | 'sync';
  /** Background flush period in `async` mode, 1..60,000 ms; default 200. */
  flushIntervalMs?: number;
  /** Checkpoint the index after this many bytes of log (0: only on close); default 64 MiB. */
  checkpointBytes?: number;
  engine?: EngineName;
  clock?: Clock;
  /**
   * Open without writing anything (docs/FORMAT.md, "Recovery"): no lock is taken, so a directory a
   * live process holds can be read; nothing is cut, removed, created or synced; writes (`append`,
   * `deleteLmq(s)`, `retain`, `checkpoint`) throw `ReadOnlyError`. `stats().recovery` says what a
   * writable open would do: the cut, the files it would remove, the checkpoint's state, and the
   * corruption it would refuse (the readable log ends there). Default false.
   */
  readOnly?: boolean;
  /**
   * Where a plain open refuses corruption with `LogCorruptError` (a bad record where valid ones must
   * be, an invalid header on a segment holding records), cut the log there instead: everything from
   * it on is removed and `stats().recovery` says what (`corruption`, `cutPosition`, `cutBytes`,
   * `removedFiles`). Default false.
   */
  repair?: boolean;
}

/** Where one appended record went: its log position and its offset in each of its LMQs. */
export interface AppendResult {
  position: number;
  offsets: number[];
}

/** Where the records of an `appendBodies` went: record i's position and its offset in its LMQ. */
export interface BodyAppendResult {
  positions: Float64Array;
  offsets: Float64Array;
}

/**
 * A write in progress: `write(from, now)` writes its records from `from` on and returns the index
 * after the last one written (fewer than `count` when the active segment filled and no spare was
 * ready); `bytes` counts towards the next checkpoint.
 */
interface PendingWrite {
  count: number;
  bytes: number;
  write(from: number, now: number): number;
}

/** A copy of a body-only batch, for a write that outlives the call that gave it. */
function copyBodies(batch: BodyBatch): BodyBatch {
  return {
    lmqs: [...batch.lmqs],
    lmqIndex: batch.lmqIndex.slice(),
    // A copy whatever the view: `slice` of a Buffer would share its memory.
    bodies: new Uint8Array(batch.bodies),
    bodyEnds: batch.bodyEnds.slice(),
    keepers: batch.keepers === undefined ? undefined : [...batch.keepers],
  };
}

/** An `append` record with the keepers the broker's store records carry (ts/broker/store.ts). */
type KeptRecord = AppendRecord & { keepers?: readonly ({ storeState: object | undefined } | undefined)[] };

/**
 * `records` as a body-only batch (record i to `lmqs[i]`, its keeper `keepers[i]`), when every record
 * is one that `appendBodies` stores as `append` would and that `append` would accept: an object with
 * one LMQ (a well-formed name without NUL, short enough for any encoding of it), its keeper and a
 * body, no key, tag, properties or born timestamp, small enough for a segment however its name
 * encodes. Else undefined: `append` encodes the records (and says what is wrong with a bad one).
 * The bodies are laid out back to back in the buffer `room(bytes)` gives.
 */
function asBodyBatch(
  records: readonly KeptRecord[],
  maxRecordBytes: number,
  room: (bytes: number) => Buffer,
): BodyBatch | undefined {
  if (!Array.isArray(records) || records.length === 0 || records.length > MAX_APPEND_RECORDS) return undefined;
  const count = records.length;
  const lmqs = new Array<string>(count);
  const bodyEnds = new Uint32Array(count);
  const keepers = new Array<{ storeState: object | undefined }>(count);
  let total = 0;
  for (let i = 0; i < count; i++) {
    const record = records[i] as KeptRecord;
    if (record === null || typeof record !== 'object') return undefined;
    // Only records that carry a keeper (the broker's): a handle is worth registering for an LMQ
    // whose keeper holds it for the next send, not for any name a caller appends to once.
    const keeper = record.keepers?.[0];
    if (keeper === undefined || keeper === null || typeof keeper !== 'object') return undefined;
    const { lmqs: names, body } = record;
    if (!Array.isArray(names) || names.length !== 1) return undefined;
    if (
      record.key !== undefined ||
      record.tag !== undefined ||
      record.properties !== undefined ||
      record.bornTimestamp !== undefined
    )
      return undefined;
    const name = names[0] as unknown;
    // At most 3 UTF-8 bytes a UTF-16 unit: such a name is never too long.
    if (typeof name !== 'string' || name.length === 0 || name.length > MAX_LMQ_NAME_BYTES / 3) return undefined;
    if (name.includes('\0') || !name.isWellFormed()) return undefined;
    const bytes =
      typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body instanceof Uint8Array ? body.length : -1;
    if (bytes < 0 || BODY_RECORD_FRAME_BYTES + 3 * name.length + bytes > maxRecordBytes) return undefined;
    lmqs[i] = name;
    total += bytes;
    bodyEnds[i] = total;
    keepers[i] = keeper;
  }
  const bodies = room(total);
  let at = 0;
  for (let i = 0; i < count; i++) {
    const body = (records[i] as KeptRecord).body;
    if (typeof body === 'string') at += bodies.write(body, at, 'utf8');
    else {
      bodies.set(body, at);
      at += body.length;
    }
  }
  return { lmqs, lmqIndex: identity(count), bodies: bodies.subarray(0, total), bodyEnds, keepers };
}

/** 0, 1, ... `count - 1` (a view of one array kept for all batches: nothing writes it). */
function identity(count: number): Uint32Array {
  if (IDENTITY.array.length < count) {
    IDENTITY.array = Uint32Array.from({ length: MAX_APPEND_RECORDS }, (_, i) => i);
  }
  return IDENTITY.array.subarray(0, count);
}
const IDENTITY = { array: new Uint32Array(0) };

/** Checks a body-only batch's shape: its arrays, its size, every LMQ index and body end. */
function checkBodies(batch: BodyBatch): void {
  if (batch === null || typeof batch !== 'object') {
    throw new InvalidArgumentError('appendBodies takes { lmqs, lmqIndex, bodies, bodyEnds }', { value: batch });
  }
  const { lmqs, lmqIndex, bodies, bodyEnds } = batch;
  if (!Array.isArray(lmqs)) throw new InvalidArgumentError('lmqs must be an array of LMQ names', { value: lmqs });
  if (!(lmqIndex instanceof Uint32Array) || !(bodyEnds instanceof Uint32Array)) {
    throw new InvalidArgumentError('lmqIndex and bodyEnds must be Uint32Arrays');
  }
  if (!(bodies instanceof Uint8Array)) throw new InvalidArgumentError('bodies must be a Uint8Array', { value: bodies });
  const count = lmqIndex.length;
  if (count === 0 || count > MAX_APPEND_RECORDS) {
    throw new InvalidArgumentError(`appendBodies takes 1 to ${MAX_APPEND_RECORDS} records`, {
      limit: MAX_APPEND_RECORDS,
      actual: count,
    });
  }
  if (bodyEnds.length !== count) {
    throw new InvalidArgumentError(`bodyEnds has ${bodyEnds.length} entries for ${count} records`, {
      actual: bodyEnds.length,
    });
  }
  const names = lmqs.length;
  let end = 0;
  for (let i = 0; i < count; i++) {
    if ((lmqIndex[i] as number) >= names) {
      throw new InvalidArgumentError(`record ${i}: lmqIndex ${lmqIndex[i]} is outside lmqs`, { value: lmqIndex[i] });
    }
    const next = bodyEnds[i] as number;
    if (next < end) throw new InvalidArgumentError(`record ${i}: bodyEnds must not decrease`, { value: next });
    end = next;
  }
  if (end > bodies.length) {
    throw new InvalidArgumentError(`the bodies end at ${end}, past the ${bodies.length} bytes given`, {
      limit: bodies.length,
      actual: end,
    });
  }
  const keepers = batch.keepers;
  if (keepers === undefined) return;
  if (!Array.isArray(keepers) || keepers.length > names) {
    throw new InvalidArgumentError('keepers must be an array with at most one keeper per LMQ name', {
      value: keepers,
    });
  }
  for (const keeper of keepers) {
    if (keeper !== undefined && (keeper === null || typeof keeper !== 'object')) {
      throw new InvalidArgumentError('a keeper must be an object', { value: keeper });
    }
  }
}

/** One LMQ as `lmqSummaries` reports it; `name` is without the prefix asked for. */
export interface LmqSummary {
  name: string;
  minOffset: number;
  maxOffset: number;
  lastWriteTimestamp: number | undefined;
}

/** One page of `listLmqs`; pass `cursor` back to get the next page; absent on the last page. */
export interface LmqPage {
  lmqs: string[];
  cursor?: string;
}

export interface CommitLogStats extends LogCoreStats {
  engine: EngineName;
  flush: 'async' | 'sync';
  segmentBytes: number;
  /** The last failure of background work (flush, segment preparation, checkpoint), if any. */
  lastBackgroundError?: string;
}

export const DEFAULT_FLUSH_INTERVAL_MS = 200;
export const DEFAULT_CHECKPOINT_BYTES = 64 * 1024 * 1024;
/**
 * Segments of a log in memory: smaller than on disk, so a segment whose messages are no longer
 * needed gives its memory back sooner.
 */
const DEFAULT_MEMORY_SEGMENT_BYTES = 64 * 1024 * 1024;
const DEFAULT_LIST_LIMIT = 1000;
/** Bounds of the buffer kept for encoding appends: small batches share one of the minimum size. */
const MIN_SCRATCH_BYTES = 64 * 1024;
const MAX_SCRATCH_BYTES = 4 * 1024 * 1024;
/** Syncs a group commit runs at once (see `durable`). */
const MAX_SYNCS_IN_FLIGHT = 2;

function integerOption(value: unknown, name: string, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max} (got ${String(value)})`, {
      value,
      limit: max,
    });
  }
  return value;
}

/** An optional boolean option: false when absent, else it must be a boolean. */
export function booleanOption(value: unknown, name: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') {
    throw new InvalidArgumentError(`${name} must be a boolean (got ${String(value)})`, { value });
  }
  return value;
}

function count(value: unknown, name: string, min: number, max: number): number {
  return integerOption(value, name, min, max, Number.NaN);
}

/** The arguments of one read, checked (what `read` and each request of `readMany` take). */
function checkRead(lmq: unknown, fromOffset: unknown, maxNum: unknown, keeper?: unknown): ReadRequest {
  if (keeper !== undefined && (keeper === null || typeof keeper !== 'object')) {
    throw new InvalidArgumentError('keeper must be an object', { value: keeper });
  }
  return {
    lmq: requireString(lmq, 'lmq'),
    fromOffset: count(fromOffset, 'fromOffset', 0, Number.MAX_SAFE_INTEGER),
    maxNum: count(maxNum, 'maxNum', 1, MAX_READ_RECORDS),
    keeper: keeper as ReadRequest['keeper'],
  };
}

/** `CommitLogOptions` checked, with their defaults; `memory` for a log in anonymous memory. */
type ResolvedOptions = Required<Omit<CommitLogOptions, 'engine'>> & { memory: boolean };

function resolveOptions(options: CommitLogOptions): ResolvedOptions {
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options must be an object');
  const flush = options.flush ?? 'async';
  if (flush !== 'async' && flush !== 'sync') {
    throw new InvalidArgumentError(`flush must be "async" or "sync" (got ${String(flush)})`, { value: flush });
  }
  const resolved = {
    segmentBytes: integerOption(
      options.segmentBytes,
      'segmentBytes',
      MIN_SEGMENT_BYTES,
      MAX_SEGMENT_BYTES,
      DEFAULT_SEGMENT_BYTES,
    ),
    flush,
    flushIntervalMs: integerOption(options.flushIntervalMs, 'flushIntervalMs', 1, 60_000, DEFAULT_FLUSH_INTERVAL_MS),
    checkpointBytes: integerOption(
      options.checkpointBytes,
      'checkpointBytes',
      0,
      Number.MAX_SAFE_INTEGER,
      DEFAULT_CHECKPOINT_BYTES,
    ),
    clock: options.clock ?? systemClock,
    readOnly: booleanOption(options.readOnly, 'readOnly'),
    repair: booleanOption(options.repair, 'repair'),
    memory: false,
  } as const;
  if (typeof resolved.clock?.now !== 'function') throw new InvalidArgumentError('clock must have a now() method');
  if (resolved.readOnly && resolved.repair) {
    throw new InvalidArgumentError('a read-only open cannot repair: repair writes', { value: options });
  }
  return resolved;
}

export class CommitLog {
  private closed = false;
  private closing: Promise<void> | undefined;
  /** Set while an append waits for a segment; later appends queue behind it to keep their order. */
  private writeChain: Promise<void> | undefined;
  /** Syncs running, oldest first, each with the write position it makes durable at least. */
  private readonly syncs: { target: number; work: Promise<number> }[] = [];
  /** A sync asked for while another runs, started once the microtasks queued then have run. */
  private nextSync: Promise<number> | undefined;
  private preparing: Promise<void> | undefined;
  /** The engine had a spare segment ready after the last write (see `afterWrite`). */
  private spareSeen = false;
  private checkpointing: Promise<void> | undefined;
  /** A log in memory giving back the segments of deleted LMQs (see `reclaim`), and whether again after. */
  private reclaiming: Promise<void> | undefined;
  private reclaimAgain = false;
  /**
   * A sync ended and the microtasks it released have not all run yet (cleared by `process.nextTick`):
   * an append written now is one of those its waiters' callers issue in turn (see `durable`).
   */
  private syncEnding = false;
  private durablePosition: number;
  private bytesSinceCheckpoint = 0;
  /** A background failure (flush, preparation, checkpoint) not yet reported to a caller. */
  private backgroundError: unknown;
  /**
   * Hears failures of work no call awaits (background flush, checkpoint, segment preparation); the
   * broker turns them into its `'error'` event. They also show in `stats().lastBackgroundError`.
   */
  onBackgroundError: ((error: unknown, during: string) => void) | undefined;
  private readonly timer: NodeJS.Timeout | undefined;
  /** The buffer the next append encodes into (see `keepScratch`). */
  private scratch: Buffer | undefined;
  /** The buffer the next append of body-only records lays its bodies out in (`asBodyBatch`). */
  private bodyScratch: Buffer | undefined;
  private readonly maxRecordBytes: number;

  private constructor(
    private readonly core: LogCore,
    readonly engine: EngineName,
    private readonly options: ResolvedOptions,
  ) {
    this.durablePosition = core.stats().durablePosition;
    this.maxRecordBytes = options.segmentBytes - SEGMENT_HEADER_BYTES;
    // A read-only log writes nothing: no flushes, no spare segment, no checkpoint.
    if (options.readOnly) return;
    if (options.flush === 'async' && !options.memory) {
      this.timer = setInterval(() => this.backgroundFlush(), options.flushIntervalMs);
      this.timer.unref();
    }
    this.prepareSpare();
  }

  /** Opens (creating if needed), locks and recovers the log in `dir`. */
  static async open(dir: string, options: CommitLogOptions = {}): Promise<CommitLog> {
    requireString(dir, 'dir');
    const resolved = resolveOptions(options);
    const engine = getEngine(options.engine);
    const core = await engine.openLog(dir, {
      segmentBytes: resolved.segmentBytes,
      nowMs: resolved.clock.now(),
      readOnly: resolved.readOnly,
      repair: resolved.repair,
    });
    return new CommitLog(core, engine.name, resolved);
  }

  /**
   * A new, empty log in anonymous memory on an engine that has one (`Engine.openMemoryLog`), else
   * undefined: no directory, no lock, no flushes or checkpoints, nothing kept after `close` or the
   * process. What the broker stores messages in without a directory on such an engine.
   */
  static async openInMemory(options: {
    engine?: EngineName | undefined;
    clock?: Clock | undefined;
    segmentBytes?: number | undefined;
  }): Promise<CommitLog | undefined> {
    const resolved: ResolvedOptions = {
      ...resolveOptions({ clock: options.clock, segmentBytes: options.segmentBytes ?? DEFAULT_MEMORY_SEGMENT_BYTES }),
      checkpointBytes: 0,
      memory: true,
    };
    const engine = getEngine(options.engine);
    if (engine.openMemoryLog === undefined) return undefined;
    const core = await engine.openMemoryLog({ segmentBytes: resolved.segmentBytes, nowMs: resolved.clock.now() });
    return new CommitLog(core, engine.name, resolved);
  }

  /**
   * Appends records in call order. Each record is written once however many LMQs it names; the
   * result gives its position and its offset in each LMQ, aligned with `lmqs`. Under `sync` it resolves
   * once the records are durable. Invalid records reject before anything is stored.
   */
  async append(records: readonly AppendRecord[]): Promise<AppendResult[]> {
    this.checkWritable();
    const now = this.now();
    if (this.core.appendBodies !== undefined) {
      // Records that carry only a body go the engine's way for them: framed by the engine, each LMQ
      // named by its handle (kept on the record's keeper, when it has one). The same bytes on disk.
      const bodies = asBodyBatch(records, this.maxRecordBytes, this.bodyRoom);
      if (bodies !== undefined) return this.appendAsBodies(bodies, now);
    }
    // The scratch buffer is lent to this batch; it comes back once the engine is done with the
    // bytes, which is at once unless the write has to wait for a segment.
    const scratch = this.scratch;
    this.scratch = undefined;
    const batch = encodeBatch(records, now, this.maxRecordBytes, scratch);
    const waiting = this.write(this.encodedWrite(batch), now);
    if (waiting === undefined) this.keepScratch(batch.bytes, scratch);
    else await waiting;
    const { positions, offsets, lmqStarts } = batch;
    const results: AppendResult[] = new Array(batch.count);
    for (let i = 0; i < batch.count; i++) {
      // A plain loop: a typed-array view per record (subarray) costs more than the copy itself.
      const from = lmqStarts[i] as number;
      const list: number[] = new Array((lmqStarts[i + 1] as number) - from);
      for (let k = 0; k < list.length; k++) list[k] = offsets[from + k] as number;
      results[i] = { position: positions[i] as number, offsets: list };
    }
    if (this.options.flush === 'sync') await this.durable(this.core.writePosition);
    return results;
  }

  /**
   * Appends records that carry only a body, given flat (`BodyBatch`): record i goes to the LMQ
   * `lmqs[lmqIndex[i]]`, with the body from `bodyEnds[i - 1]` (0 for the first) to `bodyEnds[i]` in
   * `bodies`, no key, tag or properties, born when stored. What `append` does for such records, with
   * no object per record in or out: on the native engine the engine frames the records itself and
   * an LMQ name crosses to it once per open log, not once per record. The arrays are read before
   * this returns, so the caller may reuse them at once. Resolves to each record's position and
   * offset in its LMQ, aligned with `lmqIndex`; under `sync` once the records are durable. Invalid
   * records reject before anything is stored.
   */
  async appendBodies(batch: BodyBatch): Promise<BodyAppendResult> {
    this.checkWritable();
    checkBodies(batch);
    const now = this.now();
    if (this.core.appendBodies === undefined) return this.appendBodiesEncoded(batch, now);
    return this.appendBodiesTo(batch, now);
  }

  /**
   * `appendBodies` of a checked batch on an engine with it. Before its first await the engine has
   * read the batch, or a copy of it was made for a write that waits for a segment.
   */
  private async appendBodiesTo(batch: BodyBatch, now: number): Promise<BodyAppendResult> {
    const core = this.core;
    const count = batch.lmqIndex.length;
    const positions = new Float64Array(count);
    const offsets = new Float64Array(count);
    let source = batch;
    const pending: PendingWrite = {
      count,
      bytes: (batch.bodyEnds[count - 1] as number) + count * BODY_RECORD_FRAME_BYTES,
      write: (from, at) =>
        (core.appendBodies as NonNullable<LogCore['appendBodies']>)(source, from, at, positions, offsets),
    };
    const waiting = this.write(pending, now);
    if (waiting !== undefined) {
      // The rest is written later, from a copy: the caller may change its arrays once this returns.
      source = copyBodies(batch);
      await waiting;
    }
    if (this.options.flush === 'sync') await this.durable(this.core.writePosition);
    return { positions, offsets };
  }

  /**
   * Where `asBodyBatch` lays out `bytes` of bodies: one buffer kept for every append (up to 4 MiB; a
   * larger batch gets one of its own). The engine reads the bodies before the append's first await,
   * or a copy of them is made then (`appendBodiesTo`), so the next append may reuse it at once.
   */
  private readonly bodyRoom = (bytes: number): Buffer => {
    if (this.bodyScratch !== undefined && this.bodyScratch.length >= bytes) return this.bodyScratch;
    const buffer = Buffer.allocUnsafeSlow(Math.max(bytes, 64 * 1024));
    if (buffer.length <= 4 * 1024 * 1024) this.bodyScratch = buffer;
    return buffer;
  };

  /** `append` of body-only records, given as `asBodyBatch` laid them out: what `appendBodies` does. */
  private async appendAsBodies(batch: BodyBatch, now: number): Promise<AppendResult[]> {
    const { positions, offsets } = await this.appendBodiesTo(batch, now);
    const count = positions.length;
    const results: AppendResult[] = new Array(count);
    for (let i = 0; i < count; i++) results[i] = { position: positions[i] as number, offsets: [offsets[i] as number] };
    return results;
  }

  /** `appendBodies` on an engine without it: the records encoded here (ts/log-bodies.ts). */
  private async appendBodiesEncoded(batch: BodyBatch, now: number): Promise<BodyAppendResult> {
    const encoded = encodeBodies(batch, now, this.maxRecordBytes);
    await this.write(this.encodedWrite(encoded), now);
    if (this.options.flush === 'sync') await this.durable(this.core.writePosition);
    return { positions: encoded.positions, offsets: encoded.offsets };
  }

  /**
   * Deletes an LMQ: its index goes now, and a deletion record in the log keeps it deleted across
   * restarts. Its messages stay in their segments until retention removes them. A later message to
   * the same name starts it again at offset 0. Resolves to whether it existed.
   */
  async deleteLmq(lmq: string): Promise<boolean> {
    this.checkWritable();
    const [existed] = await this.deleteLmqs([requireString(lmq, 'lmq')]);
    return existed === true;
  }

  /**
   * `deleteLmq` for several LMQs at once: the deletion records of those that exist go to the log in
   * one append (one engine call and one write, where a loop of `deleteLmq` makes one of each per
   * name and holds the event loop for all of them). Resolves to whether each existed, aligned with
   * `lmqs`; a name given twice is deleted once, and its later place says false.
   */
  async deleteLmqs(lmqs: readonly string[]): Promise<boolean[]> {
    this.checkWritable();
    if (!Array.isArray(lmqs)) throw new InvalidArgumentError('lmqs must be an array of LMQ names', { value: lmqs });
    for (const lmq of lmqs) requireString(lmq, 'lmq');
    const existed = new Array<boolean>(lmqs.length);
    const doomed: string[] = [];
    const seen = new Set<string>();
    for (let i = 0; i < lmqs.length; i++) {
      const lmq = lmqs[i] as string;
      existed[i] = !seen.has(lmq) && this.core.lastWriteTimestamp(lmq) >= 0;
      seen.add(lmq);
      if (existed[i]) doomed.push(lmq);
    }
    if (doomed.length === 0) return existed;
    const now = this.now();
    for (let at = 0; at < doomed.length; at += MAX_APPEND_RECORDS) {
      await this.write(this.encodedWrite(encodeDeletions(doomed.slice(at, at + MAX_APPEND_RECORDS), now)), now);
    }
    if (this.options.flush === 'sync') await this.durable(this.core.writePosition);
    if (this.options.memory) this.reclaim();
    return existed;
  }

  /**
   * In a log in memory, gives back the memory of segments whose messages all belong to deleted LMQs
   * (the engine's retention without rules does that there), off the event loop, after the deletions
   * that may have made some: the messages of expired lite topics do not stay in memory while newer
   * ones are still there.
   */
  private reclaim(): void {
    if (this.reclaiming !== undefined) {
      this.reclaimAgain = true;
      return;
    }
    this.reclaiming = this.core
      .retain(-1, -1)
      .then(
        () => undefined,
        (error: unknown) => this.failedInBackground(error, 'reclaim'),
      )
      .finally(() => {
        this.reclaiming = undefined;
        if (this.reclaimAgain && !this.closed) {
          this.reclaimAgain = false;
          this.reclaim();
        }
      });
  }

  /** Up to `maxNum` messages of `lmq` from `fromOffset` (or its minimum, if later), in offset order. */
  read(lmq: string, fromOffset: number, maxNum: number): StoredMessage[] {
    this.checkOpen();
    const request = checkRead(lmq, fromOffset, maxNum);
    return decodeMessages(lmq, this.core.read(lmq, request.fromOffset, request.maxNum));
  }

  /**
   * The bodies of up to `maxNum` messages of `lmq` from `fromOffset` (or its minimum, if later), in
   * offset order, with no object per message: `bodies` back to back, `bodyEnds[i]` where message
   * i's ends, `positions[i]` its position, its offset `firstOffset + i`. Each record is checked
   * whole, as `read` checks it. For a consumer that needs only the bodies, such as one replaying
   * what a producer stored with `appendBodies`.
   *
   * With `into`, a buffer the caller keeps for its reads, the result is laid out in it when the
   * read fits (`positions`, `bodyEnds` and `bodies` are then views of `into`'s memory, valid until
   * it is written again): a reader that reuses one buffer allocates nothing per read. A read that
   * may not fit (what it needs is bounded by its records' bytes, 16 more per message and 7 to
   * align) comes back in new memory, as without `into`.
   */
  readBodies(lmq: string, fromOffset: number, maxNum: number, into?: Uint8Array): BodyReadResult {
    this.checkOpen();
    const request = checkRead(lmq, fromOffset, maxNum);
    if (into !== undefined && !(into instanceof Uint8Array)) {
      throw new InvalidArgumentError('into must be a Uint8Array (a Buffer is one)', { value: into });
    }
    const core = this.core;
    if (core.readBodies !== undefined) return core.readBodies(lmq, request.fromOffset, request.maxNum, into);
    return bodiesOf(core.read(lmq, request.fromOffset, request.maxNum), into);
  }

  /**
   * `read` for several LMQs at once: the messages of each request, in request order. One engine
   * call for all (on native one Node-API crossing and one buffer), where a consumer reading many
   * LMQs (a broker's POP across lite topics) made one each. The requests may ask for at most
   * 65,536 messages in all. A request's `keeper`, an object kept for its LMQ, lets the log find the
   * LMQ again without looking its name up (see `ReadRequest`).
   */
  readMany(requests: readonly ReadRequest[]): StoredMessage[][] {
    this.checkOpen();
    if (!Array.isArray(requests)) throw new InvalidArgumentError('requests must be an array', { value: requests });
    let asked = 0;
    const checked = requests.map((request: ReadRequest, i) => {
      if (request === null || typeof request !== 'object') {
        throw new InvalidArgumentError(`request ${i} must be an object`, { value: request });
      }
      const one = checkRead(request.lmq, request.fromOffset, request.maxNum, request.keeper);
      asked += one.maxNum;
      return one;
    });
    if (asked > MAX_READ_RECORDS) {
      throw new InvalidArgumentError(`a readMany may ask for at most ${MAX_READ_RECORDS} messages (got ${asked})`, {
        limit: MAX_READ_RECORDS,
        actual: asked,
      });
    }
    const results = this.core.readMany(checked);
    return results.map((result, i) => decodeMessages((checked[i] as ReadRequest).lmq, result));
  }

  /** The next offset to be written to `lmq` (0 for an LMQ that does not exist). */
  maxOffset(lmq: string): number {
    this.checkOpen();
    return this.core.maxOffset(requireString(lmq, 'lmq'));
  }

  /** The oldest offset still stored (equal to `maxOffset` when nothing is). */
  minOffset(lmq: string): number {
    this.checkOpen();
    return this.core.minOffset(requireString(lmq, 'lmq'));
  }

  /** Store timestamp of the newest message of `lmq`, or undefined when it does not exist. */
  lastWriteTimestamp(lmq: string): number | undefined {
    this.checkOpen();
    const timestamp = this.core.lastWriteTimestamp(requireString(lmq, 'lmq'));
    return timestamp < 0 ? undefined : timestamp;
  }

  get lmqCount(): number {
    this.checkOpen();
    return this.core.lmqCount;
  }

  /**
   * Every LMQ whose name starts with `prefix`, in UTF-8 byte order, in one call: each name without
   * the prefix, its minimum and maximum offsets and the store timestamp of its newest message (what
   * `minOffset`, `maxOffset` and `lastWriteTimestamp` answer). A broker reopening reads its lite
   * topics so, rather than with three calls per LMQ.
   */
  lmqSummaries(prefix = ''): LmqSummary[] {
    this.checkOpen();
    requireString(prefix, 'prefix');
    const { names, values } = this.core.lmqSummaries(prefix);
    return names.map((name, i) => {
      const lastWrite = values[3 * i + 2] as number;
      return {
        name,
        minOffset: values[3 * i] as number,
        maxOffset: values[3 * i + 1] as number,
        lastWriteTimestamp: lastWrite < 0 ? undefined : lastWrite,
      };
    });
  }

  /** LMQ names starting with `prefix`, in UTF-8 byte order, a page at a time. */
  listLmqs(prefix = '', limit = DEFAULT_LIST_LIMIT, cursor?: string): LmqPage {
    this.checkOpen();
    requireString(prefix, 'prefix');
    const pageSize = count(limit, 'limit', 1, 0xffff_ffff);
    if (cursor !== undefined) requireString(cursor, 'cursor');
    const page = this.core.listLmqs(prefix, pageSize, cursor);
    const last = page.names[page.names.length - 1];
    return page.more && last !== undefined ? { lmqs: page.names, cursor: last } : { lmqs: page.names };
  }

  /**
   * Deletes whole old segments — those whose newest record is older than `maxAgeMs`, then the oldest
   * until the log is at most `maxBytes` — with the index entries pointing into them. The segment
   * being written is never deleted.
   */
  async retain(policy: { maxAgeMs?: number; maxBytes?: number }): Promise<{ segments: number; bytes: number }> {
    this.checkWritable();
    if (policy === null || typeof policy !== 'object')
      throw new InvalidArgumentError('retain takes { maxAgeMs?, maxBytes? }');
    const maxAge = integerOption(policy.maxAgeMs, 'maxAgeMs', 0, Number.MAX_SAFE_INTEGER, -1);
    const maxBytes = integerOption(policy.maxBytes, 'maxBytes', 0, Number.MAX_SAFE_INTEGER, -1);
    const retired = await this.core.retain(maxAge < 0 ? -1 : this.now() - maxAge, maxBytes);
    // A checkpoint older than the first remaining segment cannot be used (docs/FORMAT.md,
    // "Recovery"); a fresh one keeps the next open from replaying the whole log.
    if (retired.segments > 0) {
      await this.checkpointing?.catch(() => undefined); // one already running may predate the retention
      await this.runCheckpoint();
    }
    return retired;
  }

  /** Resolves once everything appended so far is durable. */
  async flush(): Promise<void> {
    this.checkOpen();
    await this.durable(this.core.writePosition);
  }

  /** Writes a checkpoint of the index now, so the next open replays less. */
  async checkpoint(): Promise<void> {
    this.checkWritable();
    await this.runCheckpoint();
  }

  stats(): CommitLogStats {
    this.checkOpen();
    const stats: CommitLogStats = {
      ...this.core.stats(),
      engine: this.engine,
      flush: this.options.flush,
      segmentBytes: this.options.segmentBytes,
    };
    if (this.backgroundError !== undefined) stats.lastBackgroundError = String(this.backgroundError);
    return stats;
  }

  /** Flushes, checkpoints and releases the directory. Safe to call twice. */
  close(): Promise<void> {
    if (this.closing === undefined) this.closing = this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    if (this.options.readOnly) return this.core.close();
    const settle = (work: () => Promise<unknown> | undefined) =>
      Promise.resolve()
        .then(work)
        .then(
          () => undefined,
          () => undefined,
        );
    try {
      await settle(() => this.writeChain);
      // One last sync covers every append still waiting for durability, so none of them starts a
      // sync of its own once the engine is closing. A failure (a failed log) reaches those appends.
      await settle(() => this.durable(this.core.writePosition));
      await Promise.all([
        settle(() => Promise.all(this.syncs.map((sync) => sync.work))),
        settle(() => this.preparing),
        settle(() => this.checkpointing),
        settle(() => this.reclaiming),
      ]);
      // Nothing opens a log in memory again: a checkpoint would be for nobody.
      if (!this.options.memory) await this.core.checkpoint(this.now());
    } finally {
      // Whatever failed above, the files, mappings and the lock are released.
      await this.core.close();
    }
  }

  /**
   * Keeps the buffer `bytes` was encoded into for the next append: `scratch` when the batch fit in
   * it, else a buffer of its own sized for this batch, up to `MAX_SCRATCH_BYTES`.
   */
  private keepScratch(bytes: Uint8Array, scratch: Buffer | undefined): void {
    if (scratch !== undefined && bytes.buffer === scratch.buffer) this.scratch = scratch;
    else if (bytes.length <= MAX_SCRATCH_BYTES)
      this.scratch = Buffer.allocUnsafeSlow(Math.max(bytes.length, MIN_SCRATCH_BYTES));
    else this.scratch = scratch;
  }

  private checkOpen(): void {
    if (this.closed) throw new ClosedError('the commit log is closed');
  }

  /** The check of every call that writes. */
  private checkWritable(): void {
    this.checkOpen();
    if (this.options.readOnly) throw new ReadOnlyError('the commit log was opened read-only');
  }

  private now(): number {
    const now = this.options.clock.now();
    if (!Number.isSafeInteger(now) || now < 0) {
      throw new InvalidArgumentError(`clock.now() must return a non-negative integer (got ${String(now)})`, {
        value: now,
      });
    }
    return now;
  }

  /** The write of an encoded batch. */
  private encodedWrite(batch: EncodedBatch): PendingWrite {
    return { count: batch.count, bytes: batch.bytes.length, write: (from, now) => this.core.append(batch, from, now) };
  }

  /** Writes a batch, in call order, waiting for a spare segment whenever the active one fills. */
  private write(pending: PendingWrite, now: number): Promise<void> | undefined {
    if (this.writeChain === undefined) {
      const done = pending.write(0, now);
      this.afterWrite(pending);
      return done === pending.count ? undefined : this.park(this.resume(pending, done, now));
    }
    const previous = this.writeChain.then(
      () => undefined,
      () => undefined,
    );
    return this.park(previous.then(() => this.resume(pending, 0, now)));
  }

  private park(work: Promise<void>): Promise<void> {
    const chained: Promise<void> = work.finally(() => {
      if (this.writeChain === chained) this.writeChain = undefined;
    });
    this.writeChain = chained;
    return chained;
  }

  private async resume(pending: PendingWrite, from: number, now: number): Promise<void> {
    let next = from;
    while (next < pending.count) {
      if (!this.core.spareReady) await this.prepareSpare();
      next = pending.write(next, now);
      this.afterWrite(pending);
    }
  }

  private afterWrite(pending: PendingWrite): void {
    const ready = this.core.spareReady;
    // A spare ready at the last write and missing now was used: the preparation that made it is
    // over, even while its promise waits for a turn of the event loop that appends awaited back to
    // back never give. The next one starts now, not at the append that finds no spare.
    if (!ready) void this.prepareSpare(this.spareSeen);
    this.spareSeen = ready;
    this.bytesSinceCheckpoint += pending.bytes;
    this.checkpointIfDue();
  }

  /**
   * Starts a checkpoint once `checkpointBytes` were written since the last one started, unless one
   * is running: that one starts the next as it ends, so a writer that goes idle meanwhile does not
   * leave more than that to replay (the next append would otherwise be the only trigger).
   */
  private checkpointIfDue(): void {
    const every = this.options.checkpointBytes;
    if (every > 0 && this.bytesSinceCheckpoint >= every && this.checkpointing === undefined && !this.closed) {
      this.runCheckpoint().catch((error: unknown) => this.failedInBackground(error, 'checkpoint'));
    }
  }

  /**
   * Starts preparing a spare segment unless one is ready or on its way (`used`: the last one made
   * was used, so none is, whatever `preparing` holds); resolves when it is.
   */
  private prepareSpare(used = false): Promise<void> {
    if (this.preparing === undefined || used) {
      const work: Promise<void> = this.core.prepareSegment(this.options.clock.now()).finally(() => {
        if (this.preparing === work) this.preparing = undefined;
      });
      work.catch((error: unknown) => this.failedInBackground(error, 'segment preparation'));
      this.preparing = work;
    }
    return this.preparing;
  }

  private runCheckpoint(): Promise<void> {
    if (this.checkpointing === undefined && !this.options.memory) {
      this.bytesSinceCheckpoint = 0;
      const work: Promise<void> = this.core.checkpoint(this.now()).finally(() => {
        if (this.checkpointing !== work) return;
        this.checkpointing = undefined;
        this.checkpointIfDue();
      });
      this.checkpointing = work;
    }
    return this.checkpointing ?? Promise.resolve();
  }

  /**
   * Group commit: waits until `position` is durable, sharing each sync with every waiter it covers.
   * A waiter whose bytes came after every running sync started asks for one more, up to
   * `MAX_SYNCS_IN_FLIGHT`, instead of waiting for them to end first: the next group's flush then
   * overlaps the last one's, and a sync's latency is no longer paid twice by the appends that just
   * missed it. With no sync running, the sync starts at once (a lone append waits for one sync and
   * nothing else). With one running, or one that has just ended, it starts once the microtasks
   * queued now have run (`process.nextTick`): the appends a finished sync released resume in those
   * microtasks, and those their callers issue in turn are written there, so they share that sync
   * rather than the first of them taking one alone (a caller keeping a fixed number of appends in
   * flight would otherwise pay a sync for one append in every round). Each sync covers everything
   * not yet durable when it runs, so they may end in any order.
   */
  private async durable(position: number): Promise<void> {
    while (this.durablePosition < position) {
      const syncs = this.syncs;
      const covering = syncs.find((sync) => sync.target >= position);
      if (covering !== undefined) await covering.work;
      else if (this.nextSync !== undefined) await this.nextSync;
      else if (syncs.length === 0 && !this.syncEnding) await this.startSync();
      else if (syncs.length < MAX_SYNCS_IN_FLIGHT) await this.syncAfterMicrotasks();
      else await (syncs[syncs.length - 1] as { work: Promise<number> }).work;
    }
  }

  /** The sync that starts once the microtasks queued now have run (see `durable`). */
  private syncAfterMicrotasks(): Promise<number> {
    const next = new Promise<number>((resolve, reject) => {
      process.nextTick(() => {
        this.nextSync = undefined;
        this.startSync().then(resolve, reject);
      });
    });
    this.nextSync = next;
    return next;
  }

  private startSync(): Promise<number> {
    const sync = { target: this.core.writePosition, work: Promise.resolve(0) };
    sync.work = this.core
      .sync()
      .then((durable) => {
        if (durable > this.durablePosition) this.durablePosition = durable;
        return durable;
      })
      .finally(() => {
        this.syncs.splice(this.syncs.indexOf(sync), 1);
        // Runs before the waiters resume (they await this promise), so they see the flag.
        if (!this.syncEnding) {
          this.syncEnding = true;
          process.nextTick(() => {
            this.syncEnding = false;
          });
        }
      });
    this.syncs.push(sync);
    return sync.work;
  }

  private backgroundFlush(): void {
    if (this.syncs.length > 0 || this.closed) return;
    let written: number;
    try {
      written = this.core.writePosition;
    } catch (error) {
      // A log the native engine failed (after a panic) throws from every call. On the timer that
      // would be an uncaught exception ending the process, so it is reported as any background
      // failure is, and the timer stops: a failed log has nothing more to flush until reopened.
      if (this.timer !== undefined) clearInterval(this.timer);
      this.failedInBackground(error, 'background flush');
      return;
    }
    if (written <= this.durablePosition) return;
    this.startSync().catch((error: unknown) => this.failedInBackground(error, 'background flush'));
  }

  private failedInBackground(error: unknown, during: string): void {
    this.backgroundError = error;
    this.onBackgroundError?.(error, during);
  }
}
