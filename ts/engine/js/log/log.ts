/**
 * The js engine's commit log (docs/FORMAT.md): records appended with positional synchronous writes
 * into the page cache, consume queues in memory (queue.ts), and everything that may wait on the disk
 * (syncs, segment preparation, checkpoints, deletions) on the libuv pool through `Storage`. Mirrors
 * native/core/src/log/mod.rs. Reading is in log-read.ts, opening and recovery in log-recovery.ts.
 */
import { join } from 'node:path';
import { SEGMENT_HEADER_BYTES } from '../../../common/limits.js';
import {
  END_MAGIC,
  RECORD_TYPE_DELETE,
  readU16,
  recordHashes,
  sealRecord,
  setRecordOffset,
  writeU32,
} from '../../../common/log-record.js';
import { ClosedError, InvalidArgumentError, type LogIoError, ReadOnlyError } from '../../../errors.js';
import type {
  EncodedBatch,
  LogCore,
  LogCoreStats,
  LogOpenOptions,
  LogReadResult,
  LogRecoveryStats,
  ReadRequest,
} from '../../contract.js';
import type { ConsumeQueue, QueueSet } from '../queue.js';
import { CHECKPOINT_FILE, type CopiedBlock, checkpointFile, writeCheckpoint } from './checkpoint.js';
import { acquireLock, type DirLock, releaseLock } from './lock.js';
import { readQueue } from './read.js';
import { type RecoveredLog, recoverLog } from './recovery.js';
import {
  createSegment,
  ioError,
  parseSegmentFileName,
  SEGMENTS_DIR,
  type Segment,
  segmentFileName,
} from './segment.js';
import { nodeStorage, type Storage } from './storage.js';

const END_MARKER = new Uint8Array(4);
writeU32(END_MARKER, 0, END_MAGIC);

class JsLog implements LogCore {
  private readonly segments: Segment[];
  private readonly queues: QueueSet;
  private readonly segmentsDir: string;
  /** Write offset in the active (last) segment. */
  private activeOffset: number;
  /** The active segment is complete: the next record needs the spare. */
  private activeFull = false;
  private spare: Segment | undefined;
  /** Segments written since their last sync began, oldest first. */
  private unsynced: Segment[] = [];
  private durable: number;
  private failure: LogIoError | undefined;
  private closed = false;
  private preparing: Promise<void> | undefined;
  private syncing: Promise<void> | undefined;
  private checkpointing: Promise<void> = Promise.resolve();
  private readonly recovery: LogRecoveryStats;
  /** Set when opened read-only: where its readable records end (it may have no segment to say so). */
  private readonly readOnlyEnd: number | undefined;
  /** Scratch for `recordHashes`: tag hash, key hash. */
  private readonly hashes = new Uint32Array(2);

  constructor(
    private readonly storage: Storage,
    private readonly dir: string,
    private readonly segmentBytes: number,
    /** The lock taken, or undefined for a read-only log, which takes none. */
    private readonly lock: DirLock | undefined,
    recovered: RecoveredLog,
  ) {
    this.segments = recovered.segments;
    this.queues = recovered.queues;
    this.segmentsDir = join(dir, SEGMENTS_DIR);
    this.activeOffset = recovered.endOffset;
    this.recovery = recovered.recovery;
    this.readOnlyEnd = lock === undefined ? recovered.writePosition : undefined;
    // Recovery synced every segment it replayed.
    this.durable = this.writePosition;
  }

  private get active(): Segment {
    return this.segments[this.segments.length - 1] as Segment;
  }

  get writePosition(): number {
    return this.readOnlyEnd ?? this.active.base + this.activeOffset;
  }

  /** The check of every call that writes: the log is usable and not read-only. */
  private writable(): void {
    this.usable();
    if (this.readOnlyEnd !== undefined) throw new ReadOnlyError('the commit log was opened read-only');
  }

  get spareReady(): boolean {
    return this.spare !== undefined;
  }

  get lmqCount(): number {
    return this.queues.size;
  }

  private usable(): void {
    if (this.closed) throw new ClosedError('the commit log is closed');
    if (this.failure !== undefined) throw this.failure;
  }

  /** Puts the log in the failed state of docs/FORMAT.md ("Durability") and returns the error. */
  private fail(error: LogIoError): LogIoError {
    this.failure ??= error;
    return this.failure;
  }

  /** Writes `bytes[from, to)` at in-segment `offset` of the active segment; any failure fails the log. */
  private writeRun(bytes: Uint8Array, from: number, to: number, offset: number): void {
    if (to === from) return;
    const active = this.active;
    if (this.unsynced[this.unsynced.length - 1] !== active) this.unsynced.push(active);
    let written: number;
    try {
      written = this.storage.write(active.fd, bytes, from, to - from, offset);
    } catch (error) {
      throw this.fail(ioError(`cannot write to ${active.path}`, error));
    }
    if (written !== to - from) {
      throw this.fail(ioError(`cannot write to ${active.path}`, new Error(`wrote ${written} of ${to - from} bytes`)));
    }
  }

  /** Completes the active segment and moves to the spare when one is ready; false when none is. */
  private roll(): boolean {
    if (!this.activeFull) {
      if (this.active.size - this.activeOffset >= 4) this.writeRun(END_MARKER, 0, 4, this.activeOffset);
      this.activeFull = true;
    }
    const spare = this.spare;
    if (spare === undefined) return false;
    this.segments.push(spare);
    this.spare = undefined;
    this.activeOffset = SEGMENT_HEADER_BYTES;
    this.activeFull = false;
    return true;
  }

  append(batch: EncodedBatch, from: number, storeTimestampMs: number): number {
    this.writable();
    const { bytes, starts, lmqs, lmqStarts, positions, offsets } = batch;
    const count = batch.count;
    // Assert the writer's side of the layout: every record fits in a fresh segment.
    for (let i = from; i < count; i++) {
      const size = (starts[i + 1] as number) - (starts[i] as number);
      if (size > this.segmentBytes - SEGMENT_HEADER_BYTES) {
        throw new InvalidArgumentError(`record ${i} is ${size} bytes, larger than a segment holds`, {
          limit: this.segmentBytes - SEGMENT_HEADER_BYTES,
          actual: size,
        });
      }
    }
    const queues = this.queues;
    // Queues whose entries are still in the checkpoint file are read before anything is written:
    // a block that fails its check fails the whole batch, none of it stored.
    for (let i = from; i < count; i++) {
      const start = starts[i] as number;
      if (bytes[start + 12] === RECORD_TYPE_DELETE) continue;
      for (let j = 0, first = lmqStarts[i] as number, n = readU16(bytes, start + 14); j < n; j++) {
        queues.load(lmqs[first + j] as string);
      }
    }
    if (this.activeFull && !this.roll()) return from;
    const hashes = this.hashes;
    let base = this.active.base;
    let segmentSize = this.active.size;
    let offset = this.activeOffset;
    let runStart = starts[from] as number;
    let runOffset = offset;
    let i = from;
    for (; i < count; i++) {
      const start = starts[i] as number;
      const size = (starts[i + 1] as number) - start;
      if (offset + size > segmentSize) {
        this.finishRun(bytes, runStart, start, runOffset, offset, storeTimestampMs);
        runStart = start;
        if (!this.roll()) break;
        base = this.active.base;
        segmentSize = this.active.size;
        offset = SEGMENT_HEADER_BYTES;
        runOffset = offset;
      }
      const position = base + offset;
      const lmqCount = readU16(bytes, start + 14);
      const firstLmq = lmqStarts[i] as number;
      if (bytes[start + 12] === RECORD_TYPE_DELETE) {
        const name = lmqs[firstLmq] as string;
        const next = queues.get(name)?.next ?? 0;
        setRecordOffset(bytes, start, 0, next);
        offsets[firstLmq] = next;
        queues.drop(name);
      } else {
        recordHashes(bytes, start, hashes);
        for (let j = 0; j < lmqCount; j++) {
          const queue = queues.obtain(lmqs[firstLmq + j] as string, 0);
          const next = queue.next;
          setRecordOffset(bytes, start, j, next);
          offsets[firstLmq + j] = next;
          queue.push(position, size, hashes[0] as number, hashes[1] as number);
          queue.lastWrite = storeTimestampMs;
        }
        queues.entries += lmqCount;
      }
      sealRecord(bytes, start, storeTimestampMs);
      positions[i] = position;
      offset += size;
    }
    this.finishRun(bytes, runStart, starts[i] as number, runOffset, offset, storeTimestampMs);
    return i;
  }

  /** Writes the run of records `bytes[from, to)` at `runOffset` of the active segment, which ends at `end`. */
  private finishRun(
    bytes: Uint8Array,
    from: number,
    to: number,
    runOffset: number,
    end: number,
    timestamp: number,
  ): void {
    if (to === from) return;
    this.writeRun(bytes, from, to, runOffset);
    this.activeOffset = end;
    if (timestamp > this.active.lastTimestamp) this.active.lastTimestamp = timestamp;
  }

  async prepareSegment(nowMs: number): Promise<void> {
    this.writable();
    if (this.spare !== undefined) return;
    this.preparing ??= (async () => {
      try {
        const active = this.active;
        this.spare = await createSegment(
          this.storage,
          this.segmentsDir,
          active.base + active.size,
          this.segmentBytes,
          nowMs,
        );
      } finally {
        this.preparing = undefined;
      }
    })();
    await this.preparing;
  }

  async sync(): Promise<number> {
    this.usable();
    const target = this.writePosition;
    while (this.durable < target) {
      // Concurrent callers share one sync; a caller whose bytes came after it started waits for the next.
      this.syncing ??= this.syncOnce().finally(() => {
        this.syncing = undefined;
      });
      await this.syncing;
    }
    return this.durable;
  }

  /** fdatasyncs every segment written to since the last sync began; a failure fails the log. */
  private async syncOnce(): Promise<void> {
    this.usable();
    const target = this.writePosition;
    const segments = this.unsynced.splice(0);
    for (const segment of segments) {
      try {
        await this.storage.datasync(segment.fd);
      } catch (error) {
        throw this.fail(ioError(`cannot sync ${segment.path}`, error));
      }
    }
    if (target > this.durable) this.durable = target;
  }

  read(lmq: string, fromOffset: number, maxNum: number): LogReadResult {
    this.usable();
    return readQueue(this.storage, this.segments, lmq, this.queues.load(lmq), fromOffset, maxNum);
  }

  readMany(requests: readonly ReadRequest[]): LogReadResult[] {
    return requests.map((request) => this.read(request.lmq, request.fromOffset, request.maxNum));
  }

  maxOffset(lmq: string): number {
    this.usable();
    return this.queues.get(lmq)?.next ?? 0;
  }

  minOffset(lmq: string): number {
    this.usable();
    return this.queues.get(lmq)?.min ?? 0;
  }

  lastWriteTimestamp(lmq: string): number {
    this.usable();
    return this.queues.get(lmq)?.lastWrite ?? -1;
  }

  lmqSummaries(prefix: string): { names: string[]; values: Float64Array } {
    this.usable();
    const { names } = this.queues.list(prefix, Number.POSITIVE_INFINITY, undefined);
    const values = new Float64Array(3 * names.length);
    for (let i = 0; i < names.length; i++) {
      const queue = this.queues.get(names[i] as string) as ConsumeQueue;
      values[3 * i] = queue.min;
      values[3 * i + 1] = queue.next;
      values[3 * i + 2] = queue.lastWrite;
      names[i] = (names[i] as string).slice(prefix.length);
    }
    return { names, values };
  }

  listLmqs(prefix: string, limit: number, after: string | undefined): { names: string[]; more: boolean } {
    this.usable();
    return this.queues.list(prefix, limit, after);
  }

  async retain(cutoffMs: number, maxBytes: number): Promise<{ segments: number; bytes: number }> {
    this.writable();
    const segments = this.segments;
    // Only a prefix can go (positions stay contiguous), and never the active segment.
    const last = segments.length - 1;
    let count = 0;
    if (cutoffMs >= 0) {
      while (count < last && (segments[count] as Segment).lastTimestamp < cutoffMs) count++;
    }
    if (maxBytes >= 0) {
      let total = 0;
      for (let i = count; i <= last; i++) total += (segments[i] as Segment).size;
      for (; count < last && total > maxBytes; count++) total -= (segments[count] as Segment).size;
    }
    if (count === 0) return { segments: 0, bytes: 0 };
    // Queues still in the checkpoint file with entries in segments about to go are read first,
    // before anything changes, so a block that fails its check fails the retention.
    this.queues.loadBelow((segments[count] as Segment).base);
    const removed = segments.splice(0, count);
    this.queues.dropBefore((segments[0] as Segment).base);
    this.unsynced = this.unsynced.filter((segment) => !removed.includes(segment));
    // A sync under way may still be using their file descriptors.
    await this.syncing?.catch(() => undefined);
    let bytes = 0;
    for (const segment of removed) {
      bytes += segment.size;
      await this.storage.close(segment.fd).catch(() => undefined);
    }
    await this.removeSegmentFilesBelow((segments[0] as Segment).base);
    return { segments: count, bytes };
  }

  /**
   * Removes every segment file below `keepFrom` (the first segment still in the log), oldest first,
   * then makes the removals durable: the segments just retired, and any an earlier retention failed
   * to remove. A file goes only once every older one is gone, so what is on disk stays contiguous and
   * the next open finds no gap; a failed removal stops there.
   */
  private async removeSegmentFilesBelow(keepFrom: number): Promise<void> {
    let names: string[];
    try {
      names = await this.storage.readdir(this.segmentsDir);
    } catch (error) {
      throw ioError(`cannot list ${this.segmentsDir}`, error);
    }
    const bases: number[] = [];
    for (const name of names) {
      const base = parseSegmentFileName(name);
      if (base !== undefined && base < keepFrom) bases.push(base);
    }
    bases.sort((a, b) => a - b);
    for (const base of bases) {
      const path = join(this.segmentsDir, segmentFileName(base));
      try {
        await this.storage.unlink(path);
      } catch (error) {
        // Removed already by a retention running at the same time: what this one wanted is done.
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw ioError(`cannot delete ${path}`, error);
      }
    }
    try {
      await this.storage.syncDir(this.segmentsDir);
    } catch (error) {
      throw ioError(`cannot sync ${this.segmentsDir}`, error);
    }
  }

  async checkpoint(nowMs: number): Promise<void> {
    this.writable();
    // One at a time, in call order, so an older checkpoint never replaces a newer one.
    const run = this.checkpointing.then(() => this.checkpointOnce(nowMs));
    this.checkpointing = run.catch(() => undefined);
    await run;
  }

  private async checkpointOnce(nowMs: number): Promise<void> {
    this.usable();
    // The position, the segments and the set of queues are taken together, before anything else
    // can append; the queues are then written a piece at a time (log-checkpoint.ts).
    const position = this.writePosition;
    const copied = await writeCheckpoint(
      this.storage,
      this.dir,
      position,
      nowMs,
      this.segments,
      this.queues,
      async () => {
        await this.sync();
      },
    );
    await this.moveStored(copied);
  }

  /**
   * Points the queues still stored in an older checkpoint at their copies in the one just
   * installed, so the older file (renamed over, kept open while used) is let go. If the new file
   * cannot be opened they stay where they are: still valid, only holding the old file.
   */
  private async moveStored(copied: readonly CopiedBlock[]): Promise<void> {
    if (copied.length === 0) return;
    const path = join(this.dir, CHECKPOINT_FILE);
    let fd: number;
    try {
      fd = await this.storage.open(path);
    } catch {
      return;
    }
    const file = checkpointFile(this.storage, fd, path);
    if (!this.closed) {
      for (const { queue, from, at } of copied) if (queue.stored === from) queue.moveStored(file, at);
    }
    if (file.users === 0) file.close();
  }

  stats(): LogCoreStats {
    this.usable();
    const spare = this.spare === undefined ? 0 : 1;
    let bytes = this.spare?.size ?? 0;
    for (const segment of this.segments) bytes += segment.size;
    return {
      segments: this.segments.length + spare,
      segmentBytesOnDisk: bytes,
      writePosition: this.writePosition,
      durablePosition: this.durable,
      lmqs: this.queues.size,
      indexEntries: this.queues.entries,
      indexBytes: this.queues.bytes(),
      filesOpen: this.segments.length + spare,
      spareReady: spare === 1,
      recovery: { ...this.recovery },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // Let work under way finish; a sync of what was written follows unless the log has failed.
    await Promise.allSettled([this.preparing, this.checkpointing, this.syncing]);
    let syncError: unknown;
    if (this.failure === undefined && this.lock !== undefined) {
      await this.sync().catch((error: unknown) => (syncError = error));
    }
    this.closed = true;
    this.queues.forgetStored();
    for (const segment of this.segments) await this.storage.close(segment.fd).catch(() => undefined);
    const spare = this.spare;
    this.spare = undefined;
    if (spare !== undefined) {
      // Unused: removed now rather than by the next open's recovery.
      await this.storage.close(spare.fd).catch(() => undefined);
      await this.storage.unlink(spare.path).catch(() => undefined);
      await this.storage.syncDir(this.segmentsDir).catch(() => undefined);
    }
    if (this.lock !== undefined) await releaseLock(this.storage, this.lock);
    if (syncError !== undefined) throw syncError;
  }
}

/**
 * `storage` whose reads keep `lock`'s heartbeat going: recovery's replay and scans read synchronously
 * and can hold the event loop for seconds, during which an opener in another PID namespace would
 * otherwise see the heartbeat stop and take the lock over.
 */
function beating(storage: Storage, lock: DirLock): Storage {
  return new Proxy(storage, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      if (property !== 'read') return value.bind(target);
      return (...args: unknown[]) => {
        lock.beat();
        return value.apply(target, args);
      };
    },
  });
}

/**
 * Opens, locks and recovers the commit log in `dir` with the js engine; read-only, it neither creates
 * nor locks anything (docs/FORMAT.md, "Recovery").
 */
export async function openJsLog(
  dir: string,
  options: LogOpenOptions,
  storage: Storage = nodeStorage,
): Promise<LogCore> {
  const mode = {
    segmentBytes: options.segmentBytes,
    nowMs: options.nowMs,
    readOnly: options.readOnly,
    repair: options.repair,
  };
  if (options.readOnly)
    return new JsLog(storage, dir, options.segmentBytes, undefined, await recoverLog(storage, dir, mode));
  try {
    await storage.mkdir(dir);
  } catch (error) {
    throw ioError(`cannot create ${dir}`, error);
  }
  const lock = await acquireLock(storage, dir, 'js', options.nowMs);
  try {
    const recovered = await recoverLog(beating(storage, lock), dir, mode);
    return new JsLog(storage, dir, options.segmentBytes, lock, recovered);
  } catch (error) {
    await releaseLock(storage, lock).catch(() => undefined);
    throw error;
  }
}
