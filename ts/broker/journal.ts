/**
 * The broker's state journal (docs/FORMAT.md, "Broker state"): one append-only file of
 * length-prefixed, CRC-32C-checked JSON records, compacted by writing the whole state to a new file
 * (tmp, fsync, rename, fsync of the directory). All file work goes through a `JournalStorage`
 * (journal-storage.ts: `fs.promises` on libuv's thread pool, or a fault-injecting one in tests); the
 * caller only encodes records.
 *
 * Records are written in the order they were appended, by one writer loop that does every file
 * operation, compaction and the final close included, so none of them overlap. `durable()` waits
 * until everything appended so far is written and synced; concurrent waiters share one sync. Every
 * write is checked: the file holds whole records up to `size` and nothing is ever written after a
 * gap. A failed write or sync fails the journal for good (`IO_ERROR` from then on, reported once
 * through `report`); a failed compaction before its rename leaves the old file current and in use.
 */
import { dirname } from 'node:path';
import { crc32c } from '../common/crc32c.js';
import { FRAME_HEADER_BYTES, sealFrames } from '../common/frames.js';
import {
  ClosedError,
  InternalError,
  LitetopicError,
  LogCorruptError,
  LogIoError,
  UnsupportedFormatError,
} from '../errors.js';
import { type JournalFile, type JournalStorage, nodeJournalStorage, writeFully } from './journal-storage.js';
import {
  BINARY_RECORD,
  checkBinary,
  encodeNames,
  MAX_NAME_ID,
  NAME_RECORD_FIXED_BYTES,
  nameBytes,
  namedBytes,
  writeNamed,
  writeNameRecordHead,
} from './snapshot.js';

const MAGIC = Buffer.from('LTBSTATE', 'ascii');
/**
 * The version written: JSON records, binary progress batches (snapshot.ts), which compaction
 * writes, and binary hot records (start, ack, deliver), which every arrival, ack and POP writes,
 * naming their group and lite topic by the numbers of `NAME` records. Version 3 (hot records with
 * the names in full) is read too, and its header raised to 4 when the file is opened for writing:
 * every version 3 record is a version 4 record. A file of any other version is refused with
 * `UnsupportedFormatError`.
 */
export const JOURNAL_VERSION = 4;
const READABLE_VERSIONS: readonly number[] = [3, 4];
/** Where the header holds the version. */
const VERSION_AT = 8;
export const JOURNAL_HEADER_BYTES = 16;
/** Per record: u32 payload length, u32 CRC-32C of the payload (a frame, as `sealFrames` fills in). */
export const RECORD_HEADER_BYTES = FRAME_HEADER_BYTES;
/** Largest payload accepted on read; a longer length is a torn or corrupt tail. */
export const MAX_JOURNAL_RECORD_BYTES = 64 * 1024 * 1024;
/**
 * Compact once the file is this large and at least twice what the state it describes would take
 * (`StateJournal.watch`): its size after the last compaction, grown with the state since.
 */
export const DEFAULT_COMPACT_BYTES = 4 * 1024 * 1024;
/** Background sync period when appends do not wait for durability (`flush: 'async'`). */
const ASYNC_SYNC_INTERVAL_MS = 200;
/**
 * Under `flush: 'async'`, how long (ms) and how many bytes appended records may wait before the
 * writer takes them; past either, `settle()` waits until they are written (not synced). Callers
 * that never yield to the event loop (each call resolving at once) would otherwise keep the
 * writer's completions from ever running, and a process crash would lose everything since the open;
 * this bounds the loss to about this much.
 */
export const ASYNC_PENDING_MAX_MS = 10;
export const ASYNC_PENDING_MAX_BYTES = 64 * 1024;
/**
 * `settle()` reads the clock for `ASYNC_PENDING_MAX_MS` once in this many calls (a power of two)
 * while records wait: every arrival, POP and ack calls it, and a clock read costs more than the rest
 * of the call.
 */
const SETTLE_CLOCK_EVERY = 8;
/** Size of the chunks records written in place (`StateJournal.claim`) go into. */
const CHUNK_BYTES = 256 * 1024;

function viewOf(bytes: Buffer): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
}

function header(): Buffer {
  const bytes = Buffer.alloc(JOURNAL_HEADER_BYTES);
  MAGIC.copy(bytes, 0);
  bytes.writeUInt32LE(JOURNAL_VERSION, VERSION_AT);
  return bytes;
}

/** One framed record: length, CRC-32C, then UTF-8 JSON, or the bytes of a binary record as they are. */
export function encodeRecord(record: unknown): Buffer {
  if (record instanceof Uint8Array) {
    const bytes = Buffer.allocUnsafe(RECORD_HEADER_BYTES + record.length);
    bytes.writeUInt32LE(record.length, 0);
    bytes.writeUInt32LE(crc32c(record), 4);
    bytes.set(record, RECORD_HEADER_BYTES);
    return bytes;
  }
  // The text written straight into the frame: a UTF-8 copy of it first, then a zeroed frame to copy
  // that into, cost as much again (a delivery and an ack each write a record).
  const text = JSON.stringify(record);
  const length = Buffer.byteLength(text, 'utf8');
  const bytes = Buffer.allocUnsafe(RECORD_HEADER_BYTES + length);
  bytes.write(text, RECORD_HEADER_BYTES, 'utf8');
  bytes.writeUInt32LE(length, 0);
  bytes.writeUInt32LE(crc32c(bytes, RECORD_HEADER_BYTES), 4);
  return bytes;
}

/**
 * Fills in the length of `bytes`, a record whose payload was written after `RECORD_HEADER_BYTES`;
 * its checksum is left to the journal, which fills it in as it writes the record (a compaction's
 * records, with the engine's `sealFrames`).
 */
export function frameRecord(bytes: Buffer): Buffer {
  bytes.writeUInt32LE(bytes.length - RECORD_HEADER_BYTES, 0);
  return bytes;
}

/**
 * Names per `NAME` record of a compaction: records of a few hundred KiB (names are at most a few
 * hundred bytes), far below `MAX_JOURNAL_RECORD_BYTES`.
 */
const NAMES_PER_RECORD = 4096;

/** Records run together into one write up to this size; a larger one is written as it is. */
const WRITE_RUN_BYTES = 1024 * 1024;

/**
 * Writes `records` one after another into `file` from `from` without copying the large ones (a
 * compaction's progress batches): small ones are joined into writes of up to `WRITE_RUN_BYTES`.
 * Returns the bytes written.
 */
async function writeRecords(file: JournalFile, records: readonly Uint8Array[], from: number): Promise<number> {
  let at = from;
  let run: Uint8Array[] = [];
  let runBytes = 0;
  const writeRun = async () => {
    if (run.length === 0) return;
    const bytes = run.length === 1 ? (run[0] as Uint8Array) : Buffer.concat(run, runBytes);
    await writeFully(file, bytes, at);
    at += bytes.length;
    run = [];
    runBytes = 0;
  };
  for (const record of records) {
    if (runBytes + record.length > WRITE_RUN_BYTES) await writeRun();
    run.push(record);
    runBytes += record.length;
  }
  await writeRun();
  return at - from;
}

/**
 * A compaction's new file after its header: the snapshot's records, then `NAME` records giving the
 * names of `kept` their numbers (framed, up to `NAMES_PER_RECORD` each), made one at a time as the
 * snapshot's are. `kept` grows while they are made (records of the window number names): the
 * iteration goes on over the map as it is, so those are named too.
 */
function* newFileRecords(
  snapshot: Iterable<Uint8Array>,
  kept: ReadonlyMap<string, number> | undefined,
  seal: (bytes: Uint8Array, start: number, end: number) => number,
): Generator<Uint8Array, void, undefined> {
  const sealed = (record: Uint8Array) => {
    if (seal(record, 0, record.length) !== 1) {
      throw new InternalError('the broker state journal framed a record of its compaction wrongly');
    }
    return record;
  };
  for (const record of snapshot) yield sealed(record);
  if (kept === undefined) return;
  // Names added once the iteration below ended (while its last record was written) are named by
  // another pass over those past the ones named.
  let named = 0;
  while (named < kept.size) {
    let entries: [number, string][] = [];
    let seen = 0;
    for (const [name, id] of kept) {
      if (seen++ < named) continue;
      entries.push([id, name]);
      named++;
      if (entries.length < NAMES_PER_RECORD) continue;
      yield sealed(frameRecord(encodeNames(entries, RECORD_HEADER_BYTES)));
      entries = [];
    }
    if (entries.length > 0) yield sealed(frameRecord(encodeNames(entries, RECORD_HEADER_BYTES)));
  }
}

/**
 * The records of a journal file and where the valid part ends (a torn tail is cut there). A JSON
 * record comes back parsed; a binary one as its payload bytes, its layout checked. A record that fails its CRC while a whole record starts
 * right after it is damage inside the file, not a torn tail (the writer never writes past a record
 * it did not finish): `LogCorruptError`, rather than silently forgetting what follows.
 */
export function decodeJournal(
  bytes: Buffer,
  file: string,
): { records: unknown[]; validBytes: number; version: number } {
  if (bytes.length < JOURNAL_HEADER_BYTES || !bytes.subarray(0, 8).equals(MAGIC)) {
    // A crash while the first header was written leaves a short or zero file: nothing was recorded.
    if (bytes.length < JOURNAL_HEADER_BYTES && MAGIC.subarray(0, bytes.length).equals(bytes)) {
      return { records: [], validBytes: 0, version: JOURNAL_VERSION };
    }
    if (bytes.every((b) => b === 0)) return { records: [], validBytes: 0, version: JOURNAL_VERSION };
    throw new LogCorruptError('the broker state journal has no valid header', { file, position: 0 });
  }
  const version = bytes.readUInt32LE(VERSION_AT);
  if (!READABLE_VERSIONS.includes(version)) {
    throw new UnsupportedFormatError(`the broker state journal has unknown version ${version}`, { file, version });
  }
  const records: unknown[] = [];
  let at = JOURNAL_HEADER_BYTES;
  while (at + RECORD_HEADER_BYTES <= bytes.length) {
    const length = bytes.readUInt32LE(at);
    const end = at + RECORD_HEADER_BYTES + length;
    if (length === 0 || length > MAX_JOURNAL_RECORD_BYTES || end > bytes.length) break;
    const payload = bytes.subarray(at + RECORD_HEADER_BYTES, end);
    if (crc32c(payload) !== bytes.readUInt32LE(at + 4)) {
      // A write that never reached the disk (a power loss can keep a later unsynced page and lose an
      // earlier one) leaves a sector of zeros in the record: a torn tail, not damage.
      if (wholeRecordAt(bytes, end) && !hasZeroSector(bytes, at, end)) {
        throw new LogCorruptError(
          `the broker state journal has a damaged record at byte ${at} with whole records after it`,
          { file, position: at },
        );
      }
      break;
    }
    let record: unknown;
    if (payload[0] === BINARY_RECORD) {
      if (!checkBinary(payload)) break;
      record = payload;
    } else {
      try {
        record = JSON.parse(payload.toString('utf8'));
      } catch {
        break;
      }
    }
    records.push(record);
    at = end;
  }
  return { records, validBytes: at, version };
}

/** A disk's unit of atomic writes: a write that did not reach it leaves whole sectors as they were. */
const SECTOR_BYTES = 512;

/** Whether `bytes[from, to)`, split at multiples of `SECTOR_BYTES`, has a piece of zeros only. */
function hasZeroSector(bytes: Buffer, from: number, to: number): boolean {
  for (let start = from; start < to; ) {
    const end = Math.min((Math.floor(start / SECTOR_BYTES) + 1) * SECTOR_BYTES, to);
    if (bytes.subarray(start, end).every((byte) => byte === 0)) return true;
    start = end;
  }
  return false;
}

/** Whether a record with a matching CRC starts at `at`. */
function wholeRecordAt(bytes: Buffer, at: number): boolean {
  if (at + RECORD_HEADER_BYTES > bytes.length) return false;
  const length = bytes.readUInt32LE(at);
  const end = at + RECORD_HEADER_BYTES + length;
  if (length === 0 || length > MAX_JOURNAL_RECORD_BYTES || end > bytes.length) return false;
  return crc32c(bytes.subarray(at + RECORD_HEADER_BYTES, end)) === bytes.readUInt32LE(at + 4);
}

/** A journal file as `StateJournal.read` found it. */
export interface JournalContents {
  records: unknown[];
  /** Bytes up to the end of the last valid record (0: no valid header, a new journal). */
  validBytes: number;
  /** The file's size when read (0 when missing). */
  fileBytes: number;
  /** The version its header gives (`JOURNAL_VERSION` for a new journal). */
  version: number;
}

interface Waiter {
  seq: number;
  /** Waits for a sync too, not only for the write. */
  sync: boolean;
  resolve(): void;
  reject(error: unknown): void;
}

export interface JournalOptions {
  /** `sync`: callers await `durable()`; `async`: a background sync runs every 200 ms. */
  flush: 'sync' | 'async';
  compactBytes?: number | undefined;
  /** The file operations; default the real file system. */
  storage?: JournalStorage | undefined;
  /**
   * Where a failure nobody awaits goes (the broker's background-error hook): the journal failing,
   * or a compaction that failed and left the old file in use.
   */
  report?: ((error: unknown, during: string) => void) | undefined;
  /**
   * Fills in the checksums of a run of framed records (the engine's `sealFrames`: the native one
   * uses the CPU's CRC32 instruction); default the TypeScript one.
   */
  seal?: ((bytes: Uint8Array, start: number, end: number) => number) | undefined;
}

/** A system error as the typed `IO_ERROR` (typed errors pass through). */
function ioError(path: string, error: unknown): LitetopicError {
  if (error instanceof LitetopicError) return error;
  const errno = (error as NodeJS.ErrnoException | undefined)?.code;
  return new LogIoError(`broker state journal ${path}: ${String(error)}`, { errno, cause: error });
}

function ignore(): void {}

/**
 * The answer of a wait with nothing to wait for: one settled promise shared by every such call (a
 * promise's state cannot be changed by whoever holds it), so the acks and POPs of a journal that is
 * keeping up allocate nothing for it.
 */
export const SETTLED: Promise<void> = Promise.resolve();

/**
 * What names a group or a lite topic in hot records: the number the journal gave its name
 * (`StateJournal.nameId`), kept with the numbering it came from (`StateJournal.nameFile`), so a
 * record asks the journal only when the numbering changed. `GroupState` and `TopicProgress` carry these.
 */
export interface JournalNamed {
  /** The number, or -1 before one was asked for (or when the name has none). */
  journalName: number;
  /** The journal's `nameFile` when `journalName` was asked for (-1: never). */
  journalFile: number;
}

/**
 * What a compaction's snapshot hands each group and progress it writes (`StateJournal.snapshot`):
 * the number it has keeps holding in the new file (named there by a `NAME` record). Whether
 * `named` now holds a number of the new file (carried now or before); false when it had none.
 */
export interface NameCarrier {
  carry(named: JournalNamed, name: string): boolean;
}

/**
 * A compaction under way (`StateJournal.compactStep`): the new file is written a slice of the snapshot
 * at a time, between which the broker goes on and the records it appends go on being written to
 * the current file. Those are kept (`window`) and written after the snapshot before the rename, so
 * the new file holds them too. Replaying them over a snapshot that may already hold some of their
 * effects gives the same state: each sets what it changes to a value (start, deliver, drop), or
 * moves an offset forward (ack, skip), and they replay in the order they were made.
 */
interface Compaction {
  /** The snapshot's records still to write, then the `NAME` records of `kept`. */
  readonly records: Iterator<Uint8Array>;
  /** The new file (`<path>.tmp`) once created, and the bytes written to it so far. */
  file: JournalFile | undefined;
  size: number;
  /** Records written to the current file since the compaction began, in order. */
  readonly window: Buffer[];
  /**
   * How many of the first `pending` buffers were appended before it began: written to the current
   * file only (the snapshot, made after, holds what they say, and their numbers may not be kept).
   */
  before: number;
  /**
   * The names the new file numbers, with their numbers: those the snapshot carried and those a record
   * numbered while it ran. Undefined when the numbers start again from 0 (nothing carried).
   */
  readonly kept: Map<string, number> | undefined;
  /** `liveEntries()` when it began. */
  readonly entries: number;
}

/**
 * How long one slice of a compaction's snapshot may take (ms) before the writer lets the event loop
 * run; a slice is made of whole records (`persist.ts` keeps progress batches small).
 */
const COMPACTION_SLICE_MS = 2;
/** And how many bytes a slice gathers at most before they are written. */
const COMPACTION_SLICE_BYTES = 1024 * 1024;

export class StateJournal {
  private file: JournalFile;
  /** Bytes of whole records in the file: where the next write goes. */
  private size: number;
  private sizeAfterCompaction: number;
  private pending: Buffer[] = [];
  /** Bytes of the pending records, and when the oldest of them was appended (`performance.now()`). */
  private pendingBytes = 0;
  private pendingSince = 0;
  /** Calls of `settle` that found records waiting (`SETTLE_CLOCK_EVERY`). */
  private settleCalls = 0;
  /**
   * Records written in place (`claim`) go into this chunk: those from `chunkTaken` to `chunkUsed`
   * are pending after the ones in `pending`. The writer takes them as one slice of the chunk, and
   * later records go after it in the same chunk: no buffer per record, no joining of them.
   */
  private chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  /** A view of `chunk`, for the writes of records in place. */
  private chunkView = viewOf(this.chunk);
  private chunkUsed = 0;
  private chunkTaken = 0;
  /** Where the record being written in place (`claim`) starts in `chunk`; -1 when none is. */
  private claimed = -1;
  /** What `claim` returns, reused. */
  private readonly claimedAt = { buffer: this.chunk, view: this.chunkView, at: 0 };
  /**
   * The numbers this writer gave names (`nameId`), each by a `NAME` record in the current file. A
   * reopen starts again from 0: a `NAME` record numbers its name from that record on, whatever the
   * number named before, so a file holds no number this writer uses without its latest `NAME`
   * record naming what it means. A compaction keeps the numbers its snapshot carries
   * (`NameCarrier`) and those used while it ran, written again as `NAME` records in the new file,
   * and forgets the rest.
   */
  private names = new Map<string, number>();
  private nextNameId = 0;
  /**
   * Counts the numberings (`names`) this writer started, one per compaction (when it begins): a
   * number a caller kept (`JournalNamed`) with an earlier count is to be asked again, unless the
   * snapshot carried it.
   */
  private numbering = 0;
  /** The compaction under way, if any. */
  private compaction: Compaction | undefined;
  /** Compactions that replaced the file. */
  private compactionsDone = 0;
  /** Records appended, written (whole, up to `size`) and synced so far, as counts. */
  private appended = 0;
  private written = 0;
  private synced = 0;
  private waiters: Waiter[] = [];
  private running: Promise<void> | undefined;
  private failure: LitetopicError | undefined;
  private compactOnNextRound = false;
  private closing: Promise<void> | undefined;
  /** Set once the last round ran: records appended later are not written (their waiters get CLOSED). */
  private closed = false;
  private readonly storage: JournalStorage;
  private readonly seal: (bytes: Uint8Array, start: number, end: number) => number;
  private readonly timer: NodeJS.Timeout | undefined;
  /**
   * Every record describing the current state, framed (`encodeRecord`, or `frameRecord`, whose
   * checksum the journal fills in as it writes the new file), for
   * compaction; set by the broker after restore. It hands every group and progress it writes to
   * `names.carry`, so their numbers hold in the new file.
   */
  snapshot: ((names: NameCarrier) => Iterable<Uint8Array>) | undefined;
  /**
   * How many entries (progress of a group on a lite topic, groups, topics) the state holds now; set
   * with `snapshot` by `watch`. A compaction divides the file it writes by this count to learn what an entry
   * takes, so a state that grew since needs a larger file before it compacts again: while lite
   * topics keep arriving, most of the file is state a compaction would only write again.
   */
  private liveEntries: (() => number) | undefined;
  /** `liveEntries()` when the current file was written by a compaction (or opened); -1 unknown. */
  private entriesAtCompaction = -1;

  private constructor(
    private readonly path: string,
    file: JournalFile,
    size: number,
    private readonly options: JournalOptions,
  ) {
    this.file = file;
    this.size = size;
    this.sizeAfterCompaction = size;
    this.storage = options.storage ?? nodeJournalStorage;
    this.seal = options.seal ?? sealFrames;
    if (options.flush === 'async') {
      this.timer = setInterval(() => {
        if (this.synced < this.appended && this.failure === undefined && !this.closed) {
          this.durable().catch(ignore);
        }
      }, ASYNC_SYNC_INTERVAL_MS);
      this.timer.unref();
    }
  }

  /**
   * Reads and decodes the journal at `path` without changing anything. The result is only valid for
   * `open` once the directory's lock is held: until then another owner may still be writing.
   */
  static async read(path: string, storage: JournalStorage = nodeJournalStorage): Promise<JournalContents> {
    const bytes = await StateJournal.readBytes(path, storage);
    return StateJournal.decode(path, bytes);
  }

  /** The file's bytes (empty when missing), as `read` takes them. */
  static async readBytes(path: string, storage: JournalStorage = nodeJournalStorage): Promise<Buffer> {
    try {
      return (await storage.read(path)) ?? Buffer.alloc(0);
    } catch (error) {
      throw ioError(path, error);
    }
  }

  /** `read` of bytes already read. */
  static decode(path: string, bytes: Buffer): JournalContents {
    const { records, validBytes, version } = decodeJournal(bytes, path);
    return { records, validBytes, fileBytes: bytes.length, version };
  }

  /**
   * Opens (creating if needed) the journal at `path`; returns it with the records it holds. The
   * caller holds the directory's lock. `contents`: what `read` returned for this file while that
   * lock was held; without it the file is read here.
   */
  static async open(
    path: string,
    options: JournalOptions,
    contents?: JournalContents,
  ): Promise<{ journal: StateJournal; records: unknown[] }> {
    const storage = options.storage ?? nodeJournalStorage;
    try {
      await storage.remove(`${path}.tmp`);
    } catch (error) {
      throw ioError(path, error);
    }
    const { records, validBytes, fileBytes, version } = contents ?? (await StateJournal.read(path, storage));
    let file: JournalFile;
    try {
      file = await storage.open(path);
    } catch (error) {
      throw ioError(path, error);
    }
    let size = validBytes;
    try {
      if (validBytes === 0) {
        await file.truncate(0);
        await writeFully(file, header(), 0);
        size = JOURNAL_HEADER_BYTES;
      } else if (validBytes < fileBytes) {
        await file.truncate(validBytes); // the torn tail: later records must not follow garbage
      }
      // A version 3 file goes on as version 4: the records it holds mean the same there.
      if (validBytes > 0 && version !== JOURNAL_VERSION) await writeFully(file, header(), 0);
      await file.datasync();
      await storage.syncDirectory(dirname(path));
    } catch (error) {
      await file.close().catch(ignore);
      throw ioError(path, error);
    }
    return { journal: new StateJournal(path, file, size, options), records };
  }

  get flushMode(): 'sync' | 'async' {
    return this.options.flush;
  }

  /** Queues a record; it is written in order shortly after. */
  append(record: unknown): void {
    this.appendFramed(encodeRecord(record));
  }

  /**
   * Queues a record framed and sealed by the caller (`encodeRecord`). Once the journal failed or
   * closed the record is not written, and waiting for it rejects (`durable`, `settle`).
   */
  appendFramed(bytes: Buffer): void {
    this.appended++;
    if (this.closed || this.failure !== undefined) return;
    if (!this.hasPending()) this.pendingSince = performance.now();
    this.takeChunk();
    this.pending.push(bytes);
    this.pendingBytes += bytes.length;
    this.kick();
  }

  /**
   * Starts a record of `payloadBytes` written in place, to be ended by `commit`: returns the buffer
   * (and a view of it) and the position to write its payload at. Nothing else may be appended in
   * between.
   */
  claim(payloadBytes: number): { buffer: Buffer; view: DataView; at: number } {
    const bytes = RECORD_HEADER_BYTES + payloadBytes;
    if (this.chunkUsed + bytes > this.chunk.length) {
      this.takeChunk();
      this.chunk = Buffer.allocUnsafe(Math.max(CHUNK_BYTES, bytes));
      this.chunkView = viewOf(this.chunk);
      this.chunkUsed = 0;
      this.chunkTaken = 0;
      this.claimedAt.buffer = this.chunk;
      this.claimedAt.view = this.chunkView;
    }
    this.claimed = this.chunkUsed;
    this.chunkUsed += bytes;
    this.claimedAt.at = this.claimed + RECORD_HEADER_BYTES;
    return this.claimedAt;
  }

  /**
   * Ends the record `claim` started: gives it its length and queues it, as `appendFramed` does. Its
   * checksum is filled in with those of the records after it in the chunk, when the writer takes
   * them (`takeChunk`): one engine call for the run, not one checksum per record here.
   */
  commit(): void {
    const start = this.claimed;
    this.claimed = -1;
    this.appended++;
    if (this.closed || this.failure !== undefined) {
      this.chunkUsed = start;
      return;
    }
    const end = this.chunkUsed;
    this.chunkView.setUint32(start, end - start - RECORD_HEADER_BYTES, true);
    if (this.pending.length === 0 && start === this.chunkTaken) this.pendingSince = performance.now();
    this.pendingBytes += end - start;
    this.kick();
  }

  /** Whether records wait to be written. */
  private hasPending(): boolean {
    return this.pending.length > 0 || this.chunkUsed > this.chunkTaken;
  }

  /**
   * Moves the records written in place and not yet taken into `pending`, in order, sealed (their
   * checksums filled in).
   */
  private takeChunk(): void {
    const end = this.claimed >= 0 ? this.claimed : this.chunkUsed;
    if (end <= this.chunkTaken) return;
    if (this.seal(this.chunk, this.chunkTaken, end) < 0) {
      // Only a defect can frame a run wrongly: nothing of it is written, and nothing after it.
      this.fail(new InternalError('the broker state journal framed a run of records wrongly'));
      return;
    }
    this.pending.push(this.chunk.subarray(this.chunkTaken, end));
    this.chunkTaken = end;
  }

  /** Resolves once every record appended so far is on disk; rejects when it never will be. */
  durable(): Promise<void> {
    const refused = this.refusal();
    if (refused !== undefined) return Promise.reject(refused);
    if (this.synced >= this.appended) return SETTLED;
    return this.wait(true);
  }

  /**
   * Under `sync`, `durable()`; under `async`, nothing to wait for, but a failed journal, or a record
   * appended after the close, still rejects.
   */
  settle(): Promise<void> {
    if (this.options.flush === 'sync') return this.durable();
    const refused = this.refusal();
    if (refused !== undefined) return Promise.reject(refused);
    if (!this.hasPending()) return SETTLED;
    const late =
      this.pendingBytes > ASYNC_PENDING_MAX_BYTES ||
      ((++this.settleCalls & (SETTLE_CLOCK_EVERY - 1)) === 0 &&
        performance.now() - this.pendingSince > ASYNC_PENDING_MAX_MS);
    return late ? this.wait(false) : SETTLED;
  }

  /** Throws the journal's failure, if it failed. */
  check(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  /** Which numbering `nameId` answers from: a number kept with another count is to be asked again. */
  get nameFile(): number {
    return this.numbering;
  }

  /**
   * The number that hot records of this file give `name`, appending its `NAME` record the first
   * time; -1 when it cannot have one (a name too long for a binary name field, or every number of
   * the file given), and the record then names it in full.
   */
  nameId(name: string): number {
    let id = this.names.get(name);
    if (id === undefined) {
      const bytes = nameBytes(name);
      if (bytes < 0 || this.nextNameId > MAX_NAME_ID) return -1;
      id = this.nextNameId++;
      const { buffer, at } = this.claim(NAME_RECORD_FIXED_BYTES + namedBytes(bytes));
      writeNamed(buffer, writeNameRecordHead(buffer, at, 1), id, name);
      this.commit();
      this.names.set(name, id);
    }
    // A record of a compaction's window uses it: the new file names it before the window.
    this.compaction?.kept?.set(name, id);
    return id;
  }

  /** Compactions that replaced the file since the open. */
  get compactions(): number {
    return this.compactionsDone;
  }

  /** The journal's failure, or CLOSED for records appended after the close; else undefined. */
  private refusal(): unknown {
    if (this.failure !== undefined) return this.failure;
    if (this.closed && this.synced < this.appended) return new ClosedError('the broker is closed');
    return undefined;
  }

  /**
   * Writes what is pending, compacts, syncs and closes the file, all in the writer loop. Rejects
   * with the journal's failure when it failed (the file is closed all the same). Safe to call twice.
   */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    try {
      // The close compacts: with none under way it begins one; one under way carries every record
      // appended since it began (its window), so when it carried any and replaced the file, one
      // more writes the state as it now is. A compaction that failed is not tried again here.
      const underWay = this.compaction;
      const done = this.compactionsDone;
      this.compactOnNextRound = this.snapshot !== undefined && underWay === undefined;
      await this.drain();
      if (underWay !== undefined && underWay.window.length > 0 && this.compactionsDone > done) {
        this.compactOnNextRound = true;
        await this.drain();
      }
    } finally {
      this.closed = true;
      await this.running?.catch(ignore);
      await this.file.close().catch(ignore);
    }
  }

  /**
   * Rounds until one ends with nothing left (a record appended while a round runs gets another),
   * then the end of the writer loop: a compaction under way ends there.
   */
  private async drain(): Promise<void> {
    do await this.wait(true);
    while (this.synced < this.appended);
    await this.running;
  }

  /** A waiter for everything appended so far to be written, and with `sync` synced, however much is already. */
  private wait(sync: boolean): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.waiters.push({ seq: this.appended, sync, resolve, reject });
      this.kick();
    });
  }

  private kick(): void {
    if (this.running !== undefined || this.closed) return;
    this.running = this.run().finally(() => {
      this.running = undefined;
      if (this.failure === undefined && (this.hasPending() || this.waiters.length > 0)) this.kick();
    });
  }

  private async run(): Promise<void> {
    try {
      while (
        this.failure === undefined &&
        (this.hasPending() || this.waiters.length > 0 || this.compactOnNextRound || this.compaction !== undefined)
      ) {
        if (this.hasPending()) {
          const seq = this.appended;
          this.takeChunk();
          const written = this.pending;
          const bytes = written.length === 1 ? (written[0] as Buffer) : Buffer.concat(written);
          this.pending = [];
          this.pendingBytes = 0;
          await writeFully(this.file, bytes, this.size);
          this.size += bytes.length;
          this.written = seq;
          const compaction = this.compaction;
          if (compaction !== undefined) {
            for (let i = compaction.before; i < written.length; i++) compaction.window.push(written[i] as Buffer);
            compaction.before = 0;
          }
        }
        if (this.compaction === undefined && (this.compactOnNextRound || this.compactionDue())) {
          this.compactOnNextRound = false;
          await this.beginCompaction();
        }
        if (this.synced < this.written && this.waiters.some((waiter) => waiter.sync)) {
          const seq = this.written;
          await this.file.datasync();
          this.synced = seq;
        }
        this.release();
        // A slice of the compaction per round: records appended meanwhile are written (and synced
        // for those waiting) between slices, not held until the whole snapshot is written.
        if (this.compaction !== undefined) await this.compactStep(this.compaction);
      }
    } catch (error) {
      this.fail(error);
    }
  }

  private compactionDue(): boolean {
    const compactAt = this.options.compactBytes ?? DEFAULT_COMPACT_BYTES;
    return this.snapshot !== undefined && this.size >= compactAt && this.size >= 2 * this.liveBytes();
  }

  /**
   * What a compaction now would write, estimated: the file after the last one, scaled by how much
   * the state grew since (never below it, as before the state was counted).
   */
  private liveBytes(): number {
    const base = this.sizeAfterCompaction;
    const then = this.entriesAtCompaction;
    if (then <= 0 || this.liveEntries === undefined) return base;
    return Math.max(base, (base * this.liveEntries()) / then);
  }

  /**
   * Sets what compaction writes (`snapshot`) and counts (`liveEntries`), taking the current file as
   * the measure of the state it holds now.
   */
  watch(snapshot: (names: NameCarrier) => Iterable<Uint8Array>, liveEntries: () => number): void {
    this.snapshot = snapshot;
    this.liveEntries = liveEntries;
    this.entriesAtCompaction = liveEntries();
  }

  /** Fails the journal for good: nothing more is written, every waiter and later call gets `error`. */
  private fail(error: unknown): void {
    if (this.failure !== undefined) return;
    this.failure = ioError(this.path, error);
    this.pending = [];
    this.pendingBytes = 0;
    this.chunkTaken = this.chunkUsed;
    const compaction = this.compaction;
    this.compaction = undefined;
    if (compaction !== undefined) void this.discard(compaction.file);
    for (const waiter of this.waiters.splice(0)) waiter.reject(this.failure);
    this.options.report?.(this.failure, 'state journal');
  }

  private release(): void {
    const still: Waiter[] = [];
    for (const waiter of this.waiters) {
      if (waiter.seq <= (waiter.sync ? this.synced : this.written)) waiter.resolve();
      else still.push(waiter);
    }
    this.waiters = still;
  }

  /**
   * Begins replacing the file by the current state (`compactStep` writes it): a new numbering
   * begins, which keeps every number the current file gave (records from here on are written to the
   * current file too, should the compaction fail), and the new file will name again those the
   * snapshot carries and those used from here on (`nameId`). Near the end of the numbers they start
   * again from 0 instead, nothing carried: records from here on number their names afresh, by `NAME`
   * records of their own, which the current file holds too.
   */
  private async beginCompaction(): Promise<void> {
    const snapshot = this.snapshot as (names: NameCarrier) => Iterable<Uint8Array>;
    // Begun here, before anything is awaited: every record appended from now on is in the window.
    const ending = this.numbering++;
    const restart = this.nextNameId > MAX_NAME_ID / 2;
    if (restart) {
      this.names = new Map();
      this.nextNameId = 0;
    }
    const kept = restart ? undefined : new Map<string, number>();
    const carrier: NameCarrier = {
      carry: (named, name) => {
        if (named.journalFile === this.numbering && named.journalName >= 0) return true;
        if (kept === undefined || named.journalFile !== ending || named.journalName < 0) return false;
        named.journalFile = this.numbering;
        kept.set(name, named.journalName);
        return true;
      },
    };
    this.takeChunk();
    const compaction: Compaction = {
      records: newFileRecords(snapshot(carrier), kept, this.seal),
      file: undefined,
      size: JOURNAL_HEADER_BYTES,
      window: [],
      before: this.pending.length,
      kept,
      entries: this.liveEntries?.() ?? -1,
    };
    this.compaction = compaction;
    try {
      compaction.file = await this.storage.create(`${this.path}.tmp`);
      await writeFully(compaction.file, header(), 0);
    } catch (error) {
      await this.discardFailed(compaction, error);
    }
  }

  /**
   * Writes the next slice of the snapshot to the new file; once it is all written, the names the new
   * file numbers, the window of records written to the current file since the compaction began,
   * and then the new file replaces the current one (fsync, rename, fsync of the directory). Records
   * appended during those last steps wait in `pending` and go to the new file. A failure before the
   * rename removes the new file and is only reported: the current file, which every record went to,
   * stays in use. After the rename the new file is current, or (the directory sync failing) the
   * journal fails.
   */
  private async compactStep(compaction: Compaction): Promise<void> {
    const slice: Uint8Array[] = [];
    let sliceBytes = 0;
    const started = performance.now();
    let done = false;
    for (;;) {
      const next = compaction.records.next();
      if (next.done === true) {
        done = true;
        break;
      }
      slice.push(next.value);
      sliceBytes += next.value.length;
      if (sliceBytes >= COMPACTION_SLICE_BYTES || performance.now() - started >= COMPACTION_SLICE_MS) break;
    }
    if (done) {
      // From here on only the kept numbers hold (the new file names them all before its window): a
      // name first used again while the new file is synced and renamed gets a new number and
      // `NAME` record, which go to whichever file is then current.
      if (compaction.kept !== undefined) this.names = compaction.kept;
      for (const record of compaction.window) slice.push(record);
    }
    const file = compaction.file as JournalFile; // created: a failed create ended the compaction
    try {
      compaction.size += await writeRecords(file, slice, compaction.size);
      if (!done) return;
      await file.datasync();
      await this.storage.rename(`${this.path}.tmp`, this.path);
    } catch (error) {
      await this.discardFailed(compaction, error);
      return;
    }
    this.compaction = undefined;
    const old = this.file;
    this.file = file;
    this.size = compaction.size;
    this.sizeAfterCompaction = compaction.size;
    this.entriesAtCompaction = compaction.entries;
    this.compactionsDone++;
    await old.close().catch(ignore); // the replaced file: nothing of it is read again
    await this.storage.syncDirectory(dirname(this.path));
    // Everything written so far is in the new file, synced with it.
    this.synced = this.written;
  }

  /**
   * Ends a compaction that failed before its rename: its new file is removed, the failure reported,
   * and the current file, which holds every record, stays in use. Not tried again before the file
   * has doubled once more: each try costs a whole snapshot.
   */
  private async discardFailed(compaction: Compaction, error: unknown): Promise<void> {
    if (this.compaction === compaction) this.compaction = undefined;
    await this.discard(compaction.file);
    this.sizeAfterCompaction = this.size;
    this.options.report?.(ioError(this.path, error), 'state journal compaction');
  }

  /** Closes and removes a compaction's new file (nothing of it is used). */
  private async discard(file: JournalFile | undefined): Promise<void> {
    await file?.close().catch(ignore);
    await this.storage.remove(`${this.path}.tmp`).catch(ignore);
  }
}
