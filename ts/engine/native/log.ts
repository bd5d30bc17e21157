/**
 * Native adapter for the commit log: one long-lived handle; an append crosses once per batch (the
 * encoded bytes and caller-owned typed arrays), a read once per call (the records come back in one
 * Buffer). Slow work (open, segment preparation, sync, checkpoint, file removal, close) runs on the
 * libuv thread pool in the binding.
 *
 * The binding reports failures as `CODE<TAB>details JSON<TAB>sentence` in the error message
 * (native/napi/src/log.rs); `toTypedError` turns them back into the classes of ts/errors.ts, so
 * `instanceof` and `code` are the same as with the js engine.
 */
import { bufferView } from '../../buffer-view.js';
import {
  ClosedError,
  InternalError,
  InvalidArgumentError,
  LitetopicError,
  LogCorruptError,
  LogIoError,
  LogLockedError,
  ReadOnlyError,
  UnsupportedFormatError,
} from '../../errors.js';
import { bodiesReadLayout } from '../../log-bodies.js';
import type {
  BodyBatch,
  BodyReadResult,
  EncodedBatch,
  LogCore,
  LogCoreStats,
  LogOpenOptions,
  LogReadResult,
  ReadRequest,
} from '../contract.js';
import type { NativeBinding } from './binding.js';

type Handle = Awaited<ReturnType<NativeBinding['logOpen']>>;

interface ErrorDetails {
  file?: string;
  position?: number;
  dir?: string;
  pid?: number;
  version?: number;
  errno?: string;
}

/** The typed error a binding failure stands for; anything else is returned unchanged. */
export function toTypedError(error: unknown): unknown {
  if (!(error instanceof Error) || error instanceof LitetopicError) return error;
  const [code, json, ...rest] = error.message.split('\t');
  if (json === undefined || rest.length === 0) return error;
  let details: ErrorDetails;
  try {
    details = JSON.parse(json) as ErrorDetails;
  } catch {
    return error;
  }
  const message = rest.join('\t');
  switch (code) {
    case 'LOG_CORRUPT':
      return new LogCorruptError(message, { file: details.file, position: details.position, cause: error });
    case 'LOG_LOCKED':
      return new LogLockedError(message, { dir: details.dir ?? '', pid: details.pid });
    case 'UNSUPPORTED_FORMAT':
      return new UnsupportedFormatError(message, { file: details.file ?? '', version: details.version ?? 0 });
    case 'IO_ERROR':
      return new LogIoError(message, { errno: details.errno, cause: error });
    case 'CLOSED':
      return new ClosedError(message);
    case 'READ_ONLY':
      return new ReadOnlyError(message);
    case 'INVALID_ARGUMENT':
      return new InvalidArgumentError(message);
    case 'INTERNAL_ERROR':
      return new InternalError(message, { cause: error });
    default:
      return error;
  }
}

/** Calls `f`, rethrowing a binding failure as its typed error. */
function typed<T>(f: () => T): T {
  try {
    return f();
  } catch (error) {
    throw toTypedError(error);
  }
}

/** Awaits `f()`, rejecting with the typed error of a binding failure (thrown or rejected). */
async function typedAsync<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (error) {
    throw toTypedError(error);
  }
}

export async function openNativeLog(binding: NativeBinding, dir: string, options: LogOpenOptions): Promise<LogCore> {
  const handle = await typedAsync(() =>
    binding.logOpen(dir, options.segmentBytes, options.nowMs, options.readOnly, options.repair),
  );
  return new NativeLogAdapter(binding, handle);
}

export async function openNativeMemoryLog(
  binding: NativeBinding,
  options: { segmentBytes: number; nowMs: number },
): Promise<LogCore> {
  const handle = await typedAsync(() => binding.logOpenMemory(options.segmentBytes, options.nowMs));
  return new NativeLogAdapter(binding, handle);
}

/**
 * LMQ names the adapter keeps handles for (see `NativeLogAdapter.lmqHandles`): past this, it forgets
 * them all, in the log too, and registers names again as batches and reads name them, so a workload
 * that goes through ever new LMQs does not grow the table without end.
 */
const MAX_LMQ_HANDLES = 1 << 20;
/**
 * Handles kept before the adapter first compares their count with the log's LMQs: past twice as
 * many as there are LMQs (most of them then name LMQs deleted since), it forgets them all too.
 */
const FIRST_HANDLE_CHECK = 1 << 16;

/** Bytes of one record position at the start of what `logRead` returns (a native-endian f64). */
const POSITION_BYTES = 8;
/** Bytes of one body end in what `logReadBodies` returns (a native-endian u32). */
const BODY_END_BYTES = 4;

function byteOffsetOf(result: ArrayBuffer | Buffer): number {
  return result instanceof ArrayBuffer ? 0 : result.byteOffset;
}

/**
 * The parts of what `logRead` or `logReadMany` returned for `records` records: the positions (a
 * view), and where in `buffer` the records start. A small read comes as an ArrayBuffer of its own,
 * a large one as a Buffer (see logRead); both start their own allocation, so the positions are
 * aligned for a view, and a copy covers an engine that placed a Buffer otherwise.
 */
function splitRead(
  result: ArrayBuffer | Buffer,
  records: number,
): { buffer: ArrayBuffer; recordsAt: number; positions: Float64Array } {
  const buffer = result instanceof ArrayBuffer ? result : (result.buffer as ArrayBuffer);
  const base = byteOffsetOf(result);
  const recordsAt = base + records * POSITION_BYTES;
  const positions =
    base % POSITION_BYTES === 0
      ? new Float64Array(buffer, base, records)
      : new Float64Array(buffer.slice(base, recordsAt));
  return { buffer, recordsAt, positions };
}

/**
 * An LMQ's handle as a read's keeper holds it (`ReadRequest.keeper`): good while `handles`, the
 * adapter's map it was registered in, is still the adapter's (forgetting every handle replaces it)
 * and the read names `lmq`.
 */
class HeldHandle {
  constructor(
    readonly handles: Map<string, number>,
    readonly lmq: string,
    readonly handle: number,
  ) {}
}

/** The error for a name no LMQ can have (`resolveHandles` found it), in a batch of bodies. */
function badLmqName(value: unknown): InvalidArgumentError {
  return new InvalidArgumentError('an LMQ name must be a well-formed string without NUL characters', { value });
}

export class NativeLogAdapter implements LogCore {
  /** Where `logRead` puts its record count and first offset; reads are synchronous, so one serves all. */
  private readonly readMeta = new Float64Array(2);
  /** Where `logReadBodies` puts its record count, first offset and body bytes (and `logReadBodiesInto` the bytes it may need). */
  private readonly bodiesMeta = new Float64Array(4);
  /** `logReadMany`'s arguments and its meta (three slots per LMQ), grown to the largest call. */
  private manyFrom = new Float64Array(32);
  private manyMax = new Uint32Array(32);
  private manyMeta = new Float64Array(96);
  private manyHandles = new Uint32Array(32);
  /**
   * Each LMQ name registered with the log (`logRegisterLmqs`) by an append of bodies or a read
   * without a keeper, with its handle: a name crosses to the engine once, and a record or a read
   * then names its LMQ by number. (Names registered for a keeper are kept by the keeper instead.)
   */
  private lmqHandles = new Map<string, number>();
  /** Handles the log has given (a name may have more than one: one per keeper it was registered for). */
  private handleCount = 0;
  /** The handle count at which `boundHandles` next compares it with the log's LMQs. */
  private handleCheckAt = FIRST_HANDLE_CHECK;
  /**
   * The `lmqs` of the last batch and, per index, the name looked up there and its handle: a caller
   * that passes the same table of names with every batch has each looked up once, not once per
   * batch. A name is used only while it is still the one at its index (compared as a string), so a
   * table changed in place between batches is looked up again.
   */
  private lastLmqs: readonly string[] | undefined;
  private resolvedNames: string[] = [];
  private resolvedHandles = new Uint32Array(0);
  /** The handle of each record of the batch being appended. */
  private recordHandles = new Uint32Array(0);
  /** Handles `resolveHandles` found for the names of a batch's `lmqs` (`handlesOf`, `keptHandlesOf`). */
  private tableHandles = new Uint32Array(0);

  constructor(
    private readonly binding: NativeBinding,
    private readonly handle: Handle,
  ) {}

  append(batch: EncodedBatch, from: number, storeTimestampMs: number): number {
    const { binding, handle } = this;
    return typed(() =>
      binding.logAppend(
        handle,
        batch.bytes,
        batch.starts,
        batch.lmqStarts,
        from,
        batch.count,
        storeTimestampMs,
        batch.positions,
        batch.offsets,
      ),
    );
  }

  appendBodies(
    batch: BodyBatch,
    from: number,
    storeTimestampMs: number,
    positions: Float64Array,
    offsets: Float64Array,
  ): number {
    const count = batch.lmqIndex.length;
    const handles = batch.keepers === undefined ? this.handlesOf(batch) : this.keptHandlesOf(batch);
    const { binding, handle } = this;
    return typed(() =>
      binding.logAppendBodies(
        handle,
        handles,
        batch.bodies,
        batch.bodyEnds,
        from,
        count,
        storeTimestampMs,
        positions,
        offsets,
      ),
    );
  }

  /**
   * The LMQ handle of each record of `batch`: each name of `lmqs` a record uses is looked up once
   * per batch (`resolveHandles`), and those never seen are registered with the log in one call. A
   * name that is not a string, is empty, holds NUL (the separator) or is not well-formed is refused
   * here; the engine checks the rest.
   */
  private handlesOf(batch: BodyBatch): Uint32Array {
    const { lmqs, lmqIndex } = batch;
    const count = lmqIndex.length;
    this.boundHandles();
    if (lmqs !== this.lastLmqs || this.resolvedNames.length !== lmqs.length) {
      this.lastLmqs = lmqs;
      // An array of strings only keeps the comparison below one of strings; the empty string it
      // starts with is no LMQ name, and is looked up (and refused) when a batch gives it.
      this.resolvedNames = new Array<string>(lmqs.length).fill('');
      this.resolvedHandles = new Uint32Array(lmqs.length);
    }
    if (this.recordHandles.length < count) this.recordHandles = new Uint32Array(count);
    const { resolvedNames, resolvedHandles, recordHandles: handles } = this;
    // The indexes of `lmqs` this batch uses whose name was not looked up there yet, each once.
    let unresolved: number[] | undefined;
    for (let i = 0; i < count; i++) {
      const index = lmqIndex[i] as number;
      const name = lmqs[index] as string;
      if (resolvedNames[index] !== name || name.length === 0) {
        unresolved ??= [];
        unresolved.push(index);
        resolvedNames[index] = name;
      }
    }
    if (unresolved !== undefined) {
      const indexes = unresolved;
      if (this.tableHandles.length < indexes.length) this.tableHandles = new Uint32Array(indexes.length);
      const found = this.tableHandles;
      let refused: number;
      try {
        refused = this.resolveHandles(
          indexes.length,
          (k) => lmqs[indexes[k] as number] as string,
          () => undefined,
          found,
        );
      } catch (error) {
        this.lastLmqs = undefined;
        throw error;
      }
      if (refused >= 0) {
        // The names marked looked up above were not: the table is looked up again next time.
        this.lastLmqs = undefined;
        throw badLmqName(lmqs[indexes[refused] as number]);
      }
      for (let k = 0; k < indexes.length; k++) resolvedHandles[indexes[k] as number] = found[k] as number;
    }
    for (let i = 0; i < count; i++) handles[i] = resolvedHandles[lmqIndex[i] as number] as number;
    return handles;
  }

  /**
   * Forgets every handle once there are `MAX_LMQ_HANDLES`, or twice as many as the log has LMQs
   * (asked only as the count passes `handleCheckAt`): names are registered again as used, so the
   * handles stay about as many as the LMQs in use, whatever number of LMQs came and went.
   */
  private boundHandles(): void {
    if (this.handleCount < this.handleCheckAt) return;
    const lmqs = this.lmqCount;
    if (this.handleCount < MAX_LMQ_HANDLES && this.handleCount <= 2 * lmqs) {
      this.handleCheckAt = Math.min(MAX_LMQ_HANDLES, 2 * lmqs + FIRST_HANDLE_CHECK);
      return;
    }
    typed(() => this.binding.logForgetLmqs(this.handle));
    // A new map, not the old one cleared: keepers holding handles of the old one know them stale.
    this.lmqHandles = new Map();
    this.handleCount = 0;
    this.lastLmqs = undefined;
    this.handleCheckAt = FIRST_HANDLE_CHECK;
  }

  /**
   * The LMQ handle of each request into `manyHandles`, or undefined, none registered, when the log
   * refuses a name (it is then read by name, as any name may be).
   */
  private handlesOfReads(requests: readonly ReadRequest[], count: number): Uint32Array | undefined {
    this.boundHandles();
    const handles = this.manyHandles;
    try {
      const refused = this.resolveHandles(
        count,
        (i) => (requests[i] as ReadRequest).lmq,
        (i) => (requests[i] as ReadRequest).keeper,
        handles,
      );
      return refused < 0 ? handles : undefined;
    } catch (error) {
      // A name the log refuses (too long): no handle was kept for any; read by name.
      if (error instanceof InvalidArgumentError) return undefined;
      throw error;
    }
  }

  /**
   * The LMQ handle of each record of a body-only batch whose `keepers` the caller gave (see
   * `handlesOf` for a batch without).
   */
  private keptHandlesOf(batch: BodyBatch): Uint32Array {
    const { lmqs, lmqIndex, keepers } = batch;
    const count = lmqIndex.length;
    this.boundHandles();
    if (this.tableHandles.length < lmqs.length) this.tableHandles = new Uint32Array(lmqs.length);
    if (this.recordHandles.length < count) this.recordHandles = new Uint32Array(count);
    const { tableHandles, recordHandles } = this;
    const refused = this.resolveHandles(
      lmqs.length,
      (k) => lmqs[k] as string,
      (k) => keepers?.[k],
      tableHandles,
    );
    if (refused >= 0) {
      throw badLmqName(lmqs[refused]);
    }
    for (let i = 0; i < count; i++) recordHandles[i] = tableHandles[lmqIndex[i] as number] as number;
    return recordHandles;
  }

  /**
   * The handle of each of `count` LMQs, `name(i)` kept by `keeper(i)`, into `out`. One whose keeper
   * holds a handle of this adapter's for that name takes it; else a name read without a keeper is
   * looked up in the map of names, and one still without a handle is registered (all in one engine
   * call), its keeper then holding it. So a broker finds each lite topic's LMQ without a lookup in
   * that map, its first use too (the map keeps the names given without a keeper). Returns -1, or,
   * with none registered, the first `i` whose name no LMQ can have (not a string, empty, with NUL,
   * not well-formed); a refusal of the log throws.
   */
  private resolveHandles(
    count: number,
    name: (i: number) => string,
    keeper: (i: number) => { storeState: object | undefined } | undefined,
    out: Uint32Array,
  ): number {
    // Names to register, in order: each with its handle (a name twice gets one), and whether the
    // map keeps it.
    let fresh: Map<string, number> | undefined;
    let mapped: boolean[] | undefined;
    let unkept: number[] | undefined;
    for (let i = 0; i < count; i++) {
      const lmq = name(i);
      const by = keeper(i);
      let found: number | undefined;
      if (by !== undefined) {
        const held = by.storeState;
        if (held instanceof HeldHandle && held.handles === this.lmqHandles && held.lmq === lmq) {
          out[i] = held.handle;
          continue;
        }
        unkept ??= [];
        unkept.push(i);
      } else {
        found = this.lmqHandles.get(lmq);
      }
      if (found === undefined) {
        if (typeof lmq !== 'string' || lmq.length === 0 || lmq.includes('\0') || !lmq.isWellFormed()) return i;
        fresh ??= new Map();
        mapped ??= [];
        found = fresh.get(lmq);
        if (found === undefined) {
          found = this.handleCount + fresh.size;
          fresh.set(lmq, found);
          mapped.push(by === undefined);
        } else if (by === undefined) mapped[found - this.handleCount] = true;
      }
      out[i] = found;
    }
    if (fresh !== undefined) this.register([...fresh.keys()], mapped);
    if (unkept !== undefined) {
      for (const i of unkept) {
        (keeper(i) as { storeState: object | undefined }).storeState = new HeldHandle(
          this.lmqHandles,
          name(i),
          out[i] as number,
        );
      }
    }
    return -1;
  }

  /**
   * Registers names new to the log; their handles follow the ones it has, in order, and the map
   * keeps each (or, with `mapped`, those it says). When the log refuses one, no handle is kept for
   * any of them.
   */
  private register(names: string[], mapped?: readonly boolean[]): void {
    let first: number;
    try {
      first = typed(() => this.binding.logRegisterLmqs(this.handle, names.join('\0')));
    } catch (error) {
      this.lastLmqs = undefined;
      throw error;
    }
    if (first !== this.handleCount) {
      throw new InternalError(`the log numbered new LMQ handles from ${first}, the adapter from ${this.handleCount}`);
    }
    this.handleCount += names.length;
    for (let i = 0; i < names.length; i++) {
      if (mapped === undefined || mapped[i] === true) this.lmqHandles.set(names[i] as string, first + i);
    }
  }

  prepareSegment(nowMs: number): Promise<void> {
    return typedAsync(() => this.binding.logPrepareSegment(this.handle, nowMs));
  }

  sync(): Promise<number> {
    return typedAsync(() => this.binding.logSync(this.handle));
  }

  get writePosition(): number {
    return typed(() => this.binding.logWritePosition(this.handle));
  }

  get spareReady(): boolean {
    return typed(() => this.binding.logSpareReady(this.handle));
  }

  /**
   * One engine call for all the requests (the adapter's scratch arrays grow to the largest call):
   * `logReadManyOf` with each LMQ's handle (registered on its first read or append), so no name
   * crosses and the engine finds each queue by number. A name the log will not register is no
   * LMQ's; with one among them the call goes by names (`logReadMany`, joined with NUL; when one
   * holds it, the engine reads nothing and each request is read on its own).
   */
  readMany(requests: readonly ReadRequest[]): LogReadResult[] {
    const count = requests.length;
    if (count === 0) return [];
    if (this.manyMeta.length < 3 * count) {
      this.manyFrom = new Float64Array(count);
      this.manyMax = new Uint32Array(count);
      this.manyMeta = new Float64Array(3 * count);
      this.manyHandles = new Uint32Array(count);
    }
    const { manyFrom: from, manyMax: max, manyMeta: meta } = this;
    for (let i = 0; i < count; i++) {
      const request = requests[i] as ReadRequest;
      from[i] = request.fromOffset;
      max[i] = request.maxNum;
    }
    const handles = this.handlesOfReads(requests, count);
    let result: ArrayBuffer | Buffer | null;
    try {
      result =
        handles === undefined
          ? this.binding.logReadMany(this.handle, requests.map((r) => r.lmq).join('\0'), count, from, max, meta)
          : this.binding.logReadManyOf(this.handle, handles, count, from, max, meta);
    } catch (error) {
      throw toTypedError(error);
    }
    if (result === null) return requests.map((r) => this.read(r.lmq, r.fromOffset, r.maxNum));
    let records = 0;
    let total = 0;
    for (let i = 0; i < count; i++) {
      records += meta[3 * i] as number;
      total += meta[3 * i + 2] as number;
    }
    const { buffer, recordsAt, positions } = splitRead(result, records);
    // One view of every record and one of every position, shared by the results (each from its own
    // start): two views per LMQ of every POP cost more than the decoding of its record or two. Made
    // directly: `Buffer.from` checks and dispatches on its arguments.
    const bytes = bufferView(buffer, recordsAt, total);
    const out = new Array<LogReadResult>(count);
    let position = 0;
    let at = 0;
    for (let i = 0; i < count; i++) {
      const n = meta[3 * i] as number;
      out[i] = {
        bytes,
        bytesAt: at,
        positions,
        positionsAt: position,
        firstOffset: meta[3 * i + 1] as number,
        count: n,
      };
      position += n;
      at += meta[3 * i + 2] as number;
    }
    return out;
  }

  read(lmq: string, fromOffset: number, maxNum: number): LogReadResult {
    const meta = this.readMeta;
    let result: ArrayBuffer | Buffer;
    // No `typed` closure: a read can be a single message, where every allocation shows.
    try {
      result = this.binding.logRead(this.handle, lmq, fromOffset, maxNum, meta);
    } catch (error) {
      throw toTypedError(error);
    }
    const count = meta[0] as number;
    const { buffer, recordsAt, positions } = splitRead(result, count);
    return {
      bytes: Buffer.from(buffer, recordsAt, result.byteLength - (recordsAt - byteOffsetOf(result))),
      bytesAt: 0,
      positions,
      positionsAt: 0,
      firstOffset: meta[1] as number,
      count,
    };
  }

  readBodies(lmq: string, fromOffset: number, maxNum: number, into?: Uint8Array): BodyReadResult {
    const meta = this.bodiesMeta;
    if (into !== undefined) {
      const read = this.readBodiesInto(lmq, fromOffset, maxNum, into);
      if (read !== undefined) return read;
    }
    let result: ArrayBuffer | Buffer;
    try {
      result = this.binding.logReadBodies(this.handle, lmq, fromOffset, maxNum, meta);
    } catch (error) {
      throw toTypedError(error);
    }
    const count = meta[0] as number;
    const { buffer, recordsAt, positions } = splitRead(result, count);
    // The body ends follow the positions, padded to 8 bytes, then the bodies.
    const endsBytes = Math.ceil((count * BODY_END_BYTES) / POSITION_BYTES) * POSITION_BYTES;
    const bodyEnds =
      recordsAt % BODY_END_BYTES === 0
        ? new Uint32Array(buffer, recordsAt, count)
        : new Uint32Array(buffer.slice(recordsAt, recordsAt + count * BODY_END_BYTES));
    return {
      firstOffset: meta[1] as number,
      count,
      bodies: bufferView(buffer, recordsAt + endsBytes, meta[2] as number),
      bodyEnds,
      positions,
    };
  }

  /** `readBodies` laid out in `into` (`bodiesReadLayout` from its first 8-byte boundary); undefined when the read may not fit. */
  private readBodiesInto(
    lmq: string,
    fromOffset: number,
    maxNum: number,
    into: Uint8Array,
  ): BodyReadResult | undefined {
    const meta = this.bodiesMeta;
    const skip = bodiesReadLayout(into.byteOffset, 0).start - into.byteOffset;
    if (skip >= into.length) return undefined;
    const aligned = skip === 0 ? into : into.subarray(skip);
    let fits: boolean;
    try {
      fits = this.binding.logReadBodiesInto(this.handle, lmq, fromOffset, maxNum, aligned, meta);
    } catch (error) {
      throw toTypedError(error);
    }
    if (!fits) return undefined;
    const count = meta[0] as number;
    const memory = aligned.buffer as ArrayBuffer;
    // As `readBodies` lays out its new buffer, from `aligned`'s start.
    const { endsAt, bodiesAt } = bodiesReadLayout(aligned.byteOffset, count);
    return {
      firstOffset: meta[1] as number,
      count,
      bodies: bufferView(memory, bodiesAt, meta[2] as number),
      bodyEnds: new Uint32Array(memory, endsAt, count),
      positions: new Float64Array(memory, aligned.byteOffset, count),
    };
  }

  maxOffset(lmq: string): number {
    return typed(() => this.binding.logMaxOffset(this.handle, lmq));
  }

  minOffset(lmq: string): number {
    return typed(() => this.binding.logMinOffset(this.handle, lmq));
  }

  lastWriteTimestamp(lmq: string): number {
    return typed(() => this.binding.logLastWriteTimestamp(this.handle, lmq));
  }

  get lmqCount(): number {
    return typed(() => this.binding.logLmqCount(this.handle));
  }

  lmqSummaries(prefix: string): { names: string[]; values: Float64Array } {
    const { names, values } = typed(() => this.binding.logLmqSummaries(this.handle, prefix));
    return { names: values.length === 0 ? [] : names.split('\0'), values };
  }

  listLmqs(prefix: string, limit: number, after: string | undefined): { names: string[]; more: boolean } {
    return typed(() => this.binding.logListLmqs(this.handle, prefix, limit, after));
  }

  retain(cutoffMs: number, maxBytes: number): Promise<{ segments: number; bytes: number }> {
    return typedAsync(() => this.binding.logRetain(this.handle, cutoffMs, maxBytes));
  }

  checkpoint(nowMs: number): Promise<void> {
    return typedAsync(() => this.binding.logCheckpoint(this.handle, nowMs));
  }

  stats(): LogCoreStats {
    const stats = typed(() => this.binding.logStats(this.handle));
    const checkpoint = stats.recovery.checkpoint as LogCoreStats['recovery']['checkpoint'];
    return { ...stats, recovery: { ...stats.recovery, checkpoint, corruption: stats.recovery.corruption ?? null } };
  }

  close(): Promise<void> {
    return typedAsync(() => this.binding.logClose(this.handle));
  }
}
