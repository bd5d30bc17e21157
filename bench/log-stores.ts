/**
 * The stores compared by the log suite, behind one small interface: litetopic's CommitLog on each
 * engine, lmdb modelled as per-LMQ queues, better-sqlite3, and a plain append file of records as
 * large as litetopic's.
 * Each is driven in its own fastest idiomatic style at the durability asked for. litetopic takes the
 * records as `appendBodies` does, from the same inputs the plain file frames its records from: each
 * batch's bodies copied back to back into one reused buffer, the records' LMQs as indexes into the
 * table of names.
 *
 * - non-durable: litetopic `flush: 'async'` (bytes in the page cache when an append resolves, synced
 *   in the background); lmdb `noSync` (commits reach the page cache, never synced); sqlite WAL with
 *   `synchronous=OFF`; the plain file with no sync.
 * - durable: litetopic `flush: 'sync'` and lmdb (its default sync, `overlappingSync`, each batch
 *   awaited through its `flushed` promise) with up to `inFlightCalls` batches of `callRecords`
 *   outstanding, so group commit can share syncs; sqlite WAL with `synchronous=FULL` (WAL's NORMAL
 *   would not sync the WAL at commit) and the plain file with fdatasync, one commit per batch of
 *   `batchRecords`, since both are synchronous and cannot have appends in flight.
 *
 * lmdb and better-sqlite3 are peers (devDependencies): a run without one leaves its store out
 * (`installedStores`).
 */
import { closeSync, fdatasyncSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import type * as Lmdb from 'lmdb';
import type { CommitLog } from '../ts/index.js';
import { lib, peer } from './lib.js';
import type { LogWorkload } from './log-workload.js';

export const STORES = ['litetopic native', 'litetopic js', 'lmdb', 'better-sqlite3', 'fs append'] as const;
export type StoreName = (typeof STORES)[number];

/** The stores that are peers, by the package each needs. */
const PEER_OF: Partial<Record<StoreName, string>> = { lmdb: 'lmdb', 'better-sqlite3': 'better-sqlite3' };

/** The stores this run can open, in `STORES` order: a peer that cannot be loaded is skipped with a note. */
export function installedStores(): StoreName[] {
  return STORES.filter((store) => {
    const name = PEER_OF[store];
    return name === undefined || peer(name) !== undefined;
  });
}

function required<T>(name: string): T {
  const loaded = peer<T>(name);
  if (loaded === undefined) throw new Error(`${name} is not installed`);
  return loaded;
}

export interface AppendShape {
  durable: boolean;
  /** Records per append call, transaction or write when nothing is in flight (1,000 in the suite). */
  batchRecords: number;
  /** Durable only: records per concurrent append call, and how many such calls may be outstanding. */
  callRecords: number;
  inFlightCalls: number;
}

export interface ReadTally {
  records: number;
  bytes: number;
}

export interface OpenStore {
  /** Appends every record of the workload; resolves when the last is done at the shape's durability. */
  append(work: LogWorkload, shape: AppendShape): Promise<void>;
  /** Records the store holds, counted by the store (checked against the workload after appending). */
  count(): number;
  /** Reads every LMQ's bodies in full, in offset order; undefined for a store without an index. */
  readAll?(work: LogWorkload): ReadTally;
  /** litetopic only: the index's own estimate of its memory (`stats().indexBytes`). */
  indexBytes?(): number;
  close(): Promise<void>;
}

/** Records per `read` call; LMQs of this workload hold about 100, so one call usually reads one. */
export const READ_PAGE = 1000;
/** Bytes of the buffer litetopic's reads go into: a page of the largest bodies the suite uses fits. */
const READ_INTO_BYTES = 4 * 1024 * 1024;
/**
 * lmdb batches issued before the oldest is awaited (non-durable). lmdb commits what one event turn
 * issued as one transaction, so a larger window means larger transactions; in trials at 100 B on
 * this machine (200,000 records, medians of 3) windows of 1, 4, 16 and 64 gave about 59k, 58k, 95k
 * and 131k records/s, so lmdb gets the largest.
 */
export const LMDB_WINDOW = 64;

/** Issues `items` in order with at most `window` unresolved at once. */
async function windowed<T>(items: readonly T[], window: number, issue: (item: T) => Promise<unknown>): Promise<void> {
  const pending: Promise<unknown>[] = [];
  for (const item of items) {
    pending.push(issue(item));
    if (pending.length >= window) await pending.shift();
  }
  await Promise.all(pending);
}

async function openLitetopic(engine: 'native' | 'js', dir: string, durable: boolean): Promise<OpenStore> {
  const log: CommitLog = await lib.CommitLog.open(dir, { engine, flush: durable ? 'sync' : 'async' });
  return {
    async append(work, shape) {
      const size = shape.durable ? shape.callRecords : shape.batchRecords;
      const window = shape.durable ? shape.inFlightCalls : 1;
      // One buffer serves every call: `appendBodies` has read it by the time it returns.
      const bodies = Buffer.allocUnsafe(size * work.bodyBytes);
      const bodyEnds = new Uint32Array(size);
      let results = 0;
      await windowed(ranges(work.records.length, size), window, async ([from, to]) => {
        let at = 0;
        for (let i = from; i < to; i++) {
          const body = work.bodies[i] as Buffer;
          bodies.set(body, at);
          at += body.length;
          bodyEnds[i - from] = at;
        }
        const written = await log.appendBodies({
          lmqs: work.lmqs,
          lmqIndex: work.lmqIndex.subarray(from, to),
          bodies: bodies.subarray(0, at),
          bodyEnds: bodyEnds.subarray(0, to - from),
        });
        results += written.positions.length;
      });
      if (results !== work.records.length) throw new Error(`litetopic ${engine}: ${results} append results`);
    },
    count: () => log.stats().indexEntries,
    indexBytes: () => log.stats().indexBytes,
    readAll(work) {
      const tally = { records: 0, bytes: 0 };
      // One buffer serves every page, as the read floor copies into one reused buffer.
      const into = Buffer.allocUnsafeSlow(READ_INTO_BYTES);
      for (const lmq of work.lmqs) {
        for (let from = 0; ; ) {
          const read = log.readBodies(lmq, from, READ_PAGE, into);
          tally.bytes += read.bodies.length;
          tally.records += read.count;
          if (read.count < READ_PAGE) break;
          from = read.firstOffset + read.count;
        }
      }
      return tally;
    },
    close: () => log.close(),
  };
}

/** Puts records `from..to` under `[lmq, seq]` in one event turn; lmdb commits them as one transaction. */
function lmdbPutter(db: ReturnType<typeof Lmdb.open>, work: LogWorkload) {
  const next = new Float64Array(work.lmqs.length);
  return (from: number, to: number): Promise<boolean> => {
    let last: Promise<boolean> = Promise.resolve(true);
    for (let i = from; i < to; i++) {
      const lmq = work.lmqIndex[i] as number;
      const seq = next[lmq] as number;
      next[lmq] = seq + 1;
      last = db.put([work.lmqs[lmq] as string, seq], work.bodies[i] as Buffer);
    }
    return last;
  };
}

function ranges(total: number, size: number): [number, number][] {
  const out: [number, number][] = [];
  for (let at = 0; at < total; at += size) out.push([at, Math.min(total, at + size)]);
  return out;
}

async function openLmdbStore(dir: string, durable: boolean): Promise<OpenStore> {
  const db = required<typeof Lmdb>('lmdb').open({
    path: join(dir, 'lmdb'),
    encoding: 'binary',
    noSync: !durable,
    separateFlushed: durable,
    compression: false,
  });
  return {
    async append(work, shape) {
      const put = lmdbPutter(db, work);
      const total = work.records.length;
      if (shape.durable) {
        // The commit promise carries `flushed` (separateFlushed): resolved once the commit is synced.
        await windowed(ranges(total, shape.callRecords), shape.inFlightCalls, ([from, to]) => {
          const committed = put(from, to) as Promise<boolean> & { flushed?: Promise<boolean> };
          return committed.flushed ?? committed;
        });
      } else {
        await windowed(ranges(total, shape.batchRecords), LMDB_WINDOW, ([from, to]) => put(from, to));
      }
    },
    count: () => db.getCount(),
    readAll(work) {
      const tally = { records: 0, bytes: 0 };
      for (const lmq of work.lmqs) {
        for (const { value } of db.getRange({ start: [lmq, 0], end: [lmq, Number.MAX_SAFE_INTEGER] })) {
          tally.records++;
          tally.bytes += (value as Buffer).length;
        }
      }
      return tally;
    },
    close: () => db.close(),
  };
}

async function openSqlite(dir: string, durable: boolean): Promise<OpenStore> {
  const Database = required<typeof BetterSqlite3>('better-sqlite3');
  const db = new Database(join(dir, 'log.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${durable ? 'FULL' : 'OFF'}`);
  db.exec('CREATE TABLE log (lmq TEXT NOT NULL, seq INTEGER NOT NULL, body BLOB NOT NULL, PRIMARY KEY (lmq, seq))');
  const insert = db.prepare('INSERT INTO log (lmq, seq, body) VALUES (?, ?, ?)');
  const select = db.prepare('SELECT body FROM log WHERE lmq = ? ORDER BY seq').pluck();
  return {
    async append(work, shape) {
      const next = new Float64Array(work.lmqs.length);
      const commit = db.transaction((from: number, to: number) => {
        for (let i = from; i < to; i++) {
          const lmq = work.lmqIndex[i] as number;
          const seq = next[lmq] as number;
          next[lmq] = seq + 1;
          insert.run(work.lmqs[lmq], seq, work.bodies[i]);
        }
      });
      for (const [from, to] of ranges(work.records.length, shape.batchRecords)) commit(from, to);
    },
    count: () => db.prepare('SELECT count(*) FROM log').pluck().get() as number,
    readAll(work) {
      const tally = { records: 0, bytes: 0 };
      for (const lmq of work.lmqs) {
        const bodies = select.all(lmq) as Buffer[];
        for (const body of bodies) tally.bytes += body.length;
        tally.records += bodies.length;
      }
      return tally;
    },
    close: async () => {
      db.close();
    },
  };
}

/**
 * Fixed bytes of a litetopic record of one LMQ besides its name and body (docs/FORMAT.md, "Record"):
 * the 32-byte header, the LMQ's offset (8) and name length (2), the empty key, tag and property
 * count (2 each) and the body length (4).
 */
const RECORD_FRAME_BYTES = 52;
/** Bytes of the plain file's frame it writes: the record length, the LMQ length, the body length. */
const PLAIN_FIELDS_BYTES = 4 + 2 + 4;

/**
 * One file of records `u32 length, u16 LMQ length, LMQ bytes, u32 body length, body`, each padded to
 * the size litetopic stores it at (`RECORD_FRAME_BYTES` + LMQ + body), a batch per write: the same
 * bytes for the same records with no more work than the lengths, the floor under any log that
 * stores them so. The padding is not written (it holds what the reused buffer held). No checksum
 * and no index, so nothing to read back by LMQ. Durability is the shape's (fdatasync after each
 * write when durable), so opening takes no mode.
 */
async function openFsAppend(dir: string): Promise<OpenStore> {
  const fd = openSync(join(dir, 'append.log'), 'a');
  let records = 0;
  return {
    async append(work, shape) {
      const names = work.lmqs.map((name) => Buffer.from(name, 'utf8'));
      const longest = Math.max(...names.map((n) => n.length));
      const padding = RECORD_FRAME_BYTES - PLAIN_FIELDS_BYTES;
      const buffer = Buffer.alloc(shape.batchRecords * (RECORD_FRAME_BYTES + longest + work.bodyBytes));
      for (const [from, to] of ranges(work.records.length, shape.batchRecords)) {
        let at = 0;
        for (let i = from; i < to; i++) {
          const name = names[work.lmqIndex[i] as number] as Buffer;
          const body = work.bodies[i] as Buffer;
          at = buffer.writeUInt32LE(RECORD_FRAME_BYTES + name.length + body.length, at) + padding;
          at = buffer.writeUInt16LE(name.length, at);
          at += name.copy(buffer, at);
          at = buffer.writeUInt32LE(body.length, at);
          at += body.copy(buffer, at);
        }
        writeSync(fd, buffer, 0, at);
        if (shape.durable) fdatasyncSync(fd);
        records += to - from;
      }
    },
    count: () => records,
    close: async () => closeSync(fd),
  };
}

export function openStore(store: StoreName, dir: string, durable: boolean): Promise<OpenStore> {
  switch (store) {
    case 'litetopic native':
      return openLitetopic('native', dir, durable);
    case 'litetopic js':
      return openLitetopic('js', dir, durable);
    case 'lmdb':
      return openLmdbStore(dir, durable);
    case 'better-sqlite3':
      return openSqlite(dir, durable);
    case 'fs append':
      return openFsAppend(dir);
  }
}
