/**
 * The broker's state journal under faults: every I/O call of a scenario of sends, POPs, acks and
 * compactions failed in turn (thrown, short, a disk filling up), a power loss before each call, bit
 * flips in the file, and `close()` racing calls in flight. After each, a reopen without the fault
 * must hold everything acknowledged: every resolved send is delivered or was acked, no resolved ack
 * is delivered again, and every body is what was sent. Each on every engine.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ASYNC_PENDING_MAX_BYTES,
  ASYNC_PENDING_MAX_MS,
  decodeJournal,
  encodeRecord,
  JOURNAL_HEADER_BYTES,
  JOURNAL_VERSION,
  RECORD_HEADER_BYTES,
  StateJournal,
} from '../ts/broker/journal.js';
import { type JournalFile, type JournalStorage, nodeJournalStorage } from '../ts/broker/journal-storage.js';
import { decodeRecords, journalRecorder, replay, type StateRecord } from '../ts/broker/persist.js';
import { encodeHot, isNameRecord } from '../ts/broker/snapshot.js';
import { sealFrames } from '../ts/common/frames.js';
import { getEngine } from '../ts/engine/load.js';
import { Broker, type BrokerOptions, type EngineName } from '../ts/index.js';
import { ManualClock } from './broker-helpers.js';
import { ENGINES } from './engines.js';
import { type CrashView, type FaultMode, FaultyJournalStorage, PowerLossStorage } from './journal-storage-helpers.js';

const STATE_FILE = 'broker-state';
/** A lite topic's progress as the journal's hot records need it. */
const LITE = { liteTopic: 'lite', journalName: -1, journalFile: -1 };
const INVISIBLE_MS = 10_000;
const GROUP = { bindTopic: 'agents', wildcard: true };
const opened: Broker[] = [];
const created: string[] = [];
async function closeAll(): Promise<void> {
  for (const broker of opened.splice(0)) await broker.close().catch(() => undefined);
}
afterEach(async () => {
  await closeAll();
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * Waits until `journal` has replaced its file `count` times: a compaction runs on in the background,
 * across event-loop turns, after the appends that made it due are durable.
 */
async function compacted(journal: StateJournal, count: number): Promise<void> {
  for (let waited = 0; journal.compactions < count; waited++) {
    if (waited > 5000) throw new Error(`the journal compacted ${journal.compactions} times, not ${count}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/**
 * A fresh directory, removed after the test: in memory where the machine has /dev/shm, since the
 * sweeps open a few hundred brokers with synced writes and only the journal's storage is under test.
 */
function tempDir(): string {
  const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'litetopic-journal-'));
  created.push(dir);
  return dir;
}

/** What the scenario saw resolve, each with the storage's call count at that moment. */
interface Outcome {
  /** `lite:offset` → body, for sends that resolved. */
  sent: Map<string, { body: string; at: number }>;
  /** `lite:offset` of acks that resolved → call count. */
  acked: Map<string, number>;
  /** `lite:offset` of every ack tried (a failed one may still have been kept). */
  acking: Set<string>;
  /** Every body sent, resolved or not, by `lite:offset` where known. */
  bodies: Set<string>;
  liteTopics: Set<string>;
}

function base(engine: EngineName, dir: string, clock: ManualClock): BrokerOptions {
  return { engine, dir, clock, flush: 'sync', segmentBytes: 1 << 20 };
}

/**
 * Sends to a lite topic the group follows and to new ones (each gives the group a `start`), POPs
 * and acks some, with a compaction every few records and one at the close. Never throws: a call
 * that fails is left out of what resolved.
 */
async function scenario(options: BrokerOptions, calls: () => number): Promise<Outcome> {
  const outcome: Outcome = {
    sent: new Map(),
    acked: new Map(),
    acking: new Set(),
    bodies: new Set(),
    liteTopics: new Set(),
  };
  let broker: Broker;
  try {
    broker = await Broker.open({ ...options, stateCompactBytes: 400 });
  } catch {
    return outcome;
  }
  broker.on('error', () => undefined); // the faults are reported here too
  try {
    broker.createTopic('agents');
    broker.createGroup('g', GROUP);
    // A client without patterns takes every lite topic: the first message of each gives the group
    // its `start` (its progress there), which the send's promise covers.
    const consumer = broker.consumer({ group: 'g', clientId: 'c' });
    for (let round = 0; round < 4; round++) {
      const liteTopics = ['a', `n${round}`];
      for (const liteTopic of liteTopics) outcome.liteTopics.add(liteTopic);
      const messages = liteTopics.flatMap((liteTopic) =>
        [0, 1].map((i) => ({ liteTopic, body: `${liteTopic}/${round}/${i}` })),
      );
      for (const message of messages) outcome.bodies.add(message.body);
      try {
        const results = await broker.sendBatch('agents', messages);
        for (const [i, result] of results.entries()) {
          outcome.sent.set(`${result.liteTopic}:${result.offset}`, { body: messages[i]?.body as string, at: calls() });
        }
      } catch {}
      const popped = await consumer.pop({ maxNum: 5, invisibleTimeMs: INVISIBLE_MS }).catch(() => []);
      for (const [i, message] of popped.entries()) {
        if (i % 2 === 1) continue;
        const key = `${message.liteTopic}:${message.offset}`;
        outcome.acking.add(key);
        try {
          await consumer.ack(message);
          outcome.acked.set(key, calls());
        } catch {}
      }
    }
  } catch {}
  await broker.close().catch(() => undefined);
  return outcome;
}

/**
 * Reopens `dir` without faults and drains the group (past every invisible time); checks what
 * resolved before call `upTo` (all, by default) against what comes back.
 */
async function check(engine: EngineName, dir: string, outcome: Outcome, upTo = Number.POSITIVE_INFINITY, what = '') {
  const clock = new ManualClock();
  const broker = await Broker.open(base(engine, dir, clock));
  opened.push(broker);
  broker.createTopic('agents');
  broker.createGroup('g', GROUP);
  // Each lite topic as a pattern, from the group's progress, else from its end: a lost ack shows as a
  // redelivery, a lost `start` as a resolved send never delivered.
  const consumer = broker.consumer({ group: 'g', clientId: 'check' });
  await consumer.subscribe([...outcome.liteTopics]);
  clock.advance(INVISIBLE_MS * 10); // every delivery from before is visible again
  broker.tick();
  const delivered = new Map<string, string>();
  for (;;) {
    const batch = await consumer.pop({ maxNum: 32, invisibleTimeMs: INVISIBLE_MS });
    if (batch.length === 0) break;
    for (const message of batch) {
      const key = `${message.liteTopic}:${message.offset}`;
      delivered.set(key, message.body.toString());
      await consumer.ack(message);
    }
  }
  for (const [key, body] of delivered) {
    expect(outcome.bodies.has(body), `${what}: ${key} has a body never sent: ${body}`).toBe(true);
    const sent = outcome.sent.get(key);
    if (sent !== undefined) expect(body, `${what}: ${key}`).toBe(sent.body);
  }
  for (const [key, at] of outcome.acked) {
    if (at < upTo) expect(delivered.has(key), `${what}: ${key} delivered after its ack resolved`).toBe(false);
  }
  for (const [key, { at }] of outcome.sent) {
    if (at >= upTo || outcome.acking.has(key)) continue;
    expect(delivered.has(key), `${what}: ${key} was sent and never acked, yet not delivered`).toBe(true);
  }
  await broker.close();
  opened.splice(opened.indexOf(broker), 1);
}

describe.each(ENGINES)('%s engine', (engine) => {
  it('loses nothing acknowledged when any journal I/O call fails (thrown, short, disk full)', {
    timeout: 120_000,
  }, async () => {
    const clean = new FaultyJournalStorage();
    const dir0 = tempDir();
    const reference = await scenario(
      { ...base(engine, dir0, new ManualClock()), stateStorage: clean },
      () => clean.calls,
    );
    await check(engine, dir0, reference, undefined, 'no fault');
    expect(reference.acked.size).toBeGreaterThan(3);
    expect(clean.log).toContain('rename'); // compactions ran
    const total = clean.calls;
    let failed = 0;
    for (const mode of ['throw', 'short', 'full'] as FaultMode[]) {
      for (let n = 1; n <= total; n++) {
        if (mode !== 'throw' && clean.log[n - 1] !== 'write') continue;
        const storage = new FaultyJournalStorage(n, mode);
        const dir = tempDir();
        const outcome = await scenario(
          { ...base(engine, dir, new ManualClock()), stateStorage: storage },
          () => storage.calls,
        );
        if (outcome.acked.size < reference.acked.size) failed++;
        await check(engine, dir, outcome, undefined, `${mode} at call ${n} (${clean.log[n - 1]})`);
        rmSync(dir, { recursive: true, force: true });
      }
    }
    expect(failed).toBeGreaterThan(0); // the faults did stop the scenario
  });

  it('keeps every synced append and ack through a power loss before any journal I/O call', {
    timeout: 120_000,
  }, async () => {
    const storage = new PowerLossStorage();
    const dir = tempDir();
    const outcome = await scenario(
      { ...base(engine, dir, new ManualClock()), stateStorage: storage },
      () => storage.calls,
    );
    const views = [...storage.views, storage.crashView()];
    for (const [i, view] of views.entries()) {
      const crashed = tempDir();
      cpSync(join(dir, 'log'), join(crashed, 'log'), { recursive: true });
      rmSync(join(crashed, 'log', 'LOCK'), { force: true }); // its owner is gone
      writeView(crashed, view);
      // What resolved once call i had run (calls() counts the call about to run as done).
      await check(engine, crashed, outcome, i + 1, `power loss before call ${i + 1}`);
      rmSync(crashed, { recursive: true, force: true });
    }
  });
});

function writeView(dir: string, view: CrashView): void {
  mkdirSync(dir, { recursive: true });
  for (const [path, bytes] of view) writeFileSync(join(dir, path.slice(path.lastIndexOf('/') + 1)), bytes);
}

/** A storage whose `name` operation always fails with `code`. */
function failing(name: 'create' | 'rename', code: string): JournalStorage {
  const error = Object.assign(new Error(`${code}: injected`), { code });
  return { ...nodeJournalStorage, [name]: () => Promise.reject(error) };
}

/**
 * The node storage, but each write to a file it opens (`open`: the current file) or creates
 * (`create`: a compaction's new file) first awaits what `before` returns for the write's position.
 */
function delayingWrites(
  files: 'open' | 'create',
  before: (position: number) => Promise<void> | undefined,
): JournalStorage {
  return {
    ...nodeJournalStorage,
    [files]: async (file: string) => {
      const inner = await nodeJournalStorage[files](file);
      return {
        ...inner,
        write: async (bytes: Uint8Array, offset: number, length: number, position: number) => {
          await before(position);
          return inner.write(bytes, offset, length, position);
        },
        truncate: (length: number) => inner.truncate(length),
        datasync: () => inner.datasync(),
        close: () => inner.close(),
      };
    },
  };
}

/** The start of every record of a journal file, and its end. */
function recordStarts(bytes: Buffer): number[] {
  const starts: number[] = [];
  for (let at = JOURNAL_HEADER_BYTES; at + RECORD_HEADER_BYTES <= bytes.length; ) {
    starts.push(at);
    at += RECORD_HEADER_BYTES + bytes.readUInt32LE(at);
  }
  return starts;
}

describe.each(ENGINES)('%s engine', (engine) => {
  /**
   * A journal of single records (its compactions fail, so none replaces them): epoch, topic, group,
   * start, a deliver of six messages, six acks. Returns the directory and the file's bytes.
   */
  async function journalOfRecords(): Promise<{ dir: string; bytes: Buffer }> {
    const dir = tempDir();
    const options = { ...base(engine, dir, new ManualClock()), stateStorage: failing('create', 'ENOSPC') };
    const broker = await Broker.open(options);
    broker.on('error', () => undefined);
    broker.createTopic('agents');
    broker.createGroup('g', { bindTopic: 'agents' });
    const consumer = broker.consumer({ group: 'g', clientId: 'c' });
    await consumer.subscribe(['a'], { offset: { policy: 'min' } });
    await broker.sendBatch(
      'agents',
      [0, 1, 2, 3, 4, 5].map((i) => ({ liteTopic: 'a', body: `a/${i}` })),
    );
    const popped = await consumer.pop({ maxNum: 6, invisibleTimeMs: INVISIBLE_MS });
    for (const message of popped) await consumer.ack(message);
    await broker.close();
    return { dir, bytes: readFileSync(join(dir, STATE_FILE)) };
  }

  /** Opens `dir` and returns what the group gets past every invisible time (each acked). */
  async function redelivered(dir: string): Promise<string[]> {
    const clock = new ManualClock();
    const broker = await Broker.open(base(engine, dir, clock));
    opened.push(broker);
    broker.createTopic('agents');
    broker.createGroup('g', { bindTopic: 'agents' });
    const consumer = broker.consumer({ group: 'g', clientId: 'c' });
    await consumer.subscribe(['a'], { offset: { policy: 'min' } });
    clock.advance(INVISIBLE_MS * 10);
    broker.tick();
    const got = await consumer.pop({ maxNum: 32 });
    await broker.close();
    opened.splice(opened.indexOf(broker), 1);
    return got.map((message) => message.body.toString());
  }

  function flip(dir: string, bytes: Buffer, at: number): void {
    const copy = Buffer.from(bytes);
    copy[at] = (copy[at] as number) ^ 0x04;
    writeFileSync(join(dir, STATE_FILE), copy);
  }

  it('refuses a journal with a damaged header or a damaged record before others; cuts a damaged last one', async () => {
    const { dir, bytes } = await journalOfRecords();
    const starts = recordStarts(bytes);
    // 11 state records and the NAME records of the group and the lite topic their hot records name.
    expect(starts.length).toBe(13);
    expect(await redelivered(dir)).toEqual([]); // intact: every ack kept
    const payloadOf = (record: number) => (starts[record] as number) + RECORD_HEADER_BYTES + 1;
    const cases: [string, number, string][] = [
      ['magic', 0, 'LOG_CORRUPT'],
      ['version', 8, 'UNSUPPORTED_FORMAT'],
      ['first record', payloadOf(0), 'LOG_CORRUPT'],
      ['middle record', payloadOf(5), 'LOG_CORRUPT'],
    ];
    for (const [what, at, code] of cases) {
      flip(dir, bytes, at);
      await expect(Broker.open(base(engine, dir, new ManualClock())), what).rejects.toMatchObject({ code });
      // Refused without changing the file: put right, it opens with everything.
      expect(readFileSync(join(dir, STATE_FILE))[at], what).toBe((bytes[at] as number) ^ 0x04);
    }
    const record = starts.indexOf(payloadOf(5) - RECORD_HEADER_BYTES - 1);
    expect(record).toBe(5);
    await expect(Broker.open(base(engine, dir, new ManualClock()))).rejects.toMatchObject({ position: starts[5] });
    // The reserved header field is not read.
    flip(dir, bytes, 12);
    expect(await redelivered(dir)).toEqual([]);
    // The last record (the last ack) damaged: a torn tail, cut; that message comes again.
    flip(dir, bytes, payloadOf(12));
    expect(await redelivered(dir)).toEqual(['a/5']);
  });

  it('cuts a record a power loss left with a zeroed sector, though whole records follow; refuses one with a flipped bit', () => {
    const header = Buffer.alloc(16);
    header.write('LTBSTATE', 0, 'ascii');
    header.writeUInt32LE(JOURNAL_VERSION, 8);
    const first = encodeRecord(['epoch', 'e1']);
    const long = encodeRecord(['topic', 'agents', { note: 'x'.repeat(2_000) }]);
    const after = encodeRecord(['epoch', 'e2']);
    const file = Buffer.concat([header, first, long, after]);
    const longAt = header.length + first.length;
    // The sector after the long record's first one never reached the disk: zeros.
    const lost = Buffer.from(file);
    const sector = (Math.floor(longAt / 512) + 1) * 512;
    lost.fill(0, sector, sector + 512);
    const cut = decodeJournal(lost, 'broker-state');
    expect(cut.records).toEqual([['epoch', 'e1']]);
    expect(cut.validBytes).toBe(longAt);
    // One flipped bit in the same record, with no zeroed sector: damage, refused.
    const flipped = Buffer.from(file);
    flipped[sector + 10] = (flipped[sector + 10] as number) ^ 0x04;
    expect(() => decodeJournal(flipped, 'broker-state')).toThrow(expect.objectContaining({ code: 'LOG_CORRUPT' }));
  });

  it('a failed journal write fails the journal: IO_ERROR from then on, one error event', async () => {
    const clean = new FaultyJournalStorage();
    const dir = tempDir();
    await scenario({ ...base(engine, dir, new ManualClock()), stateStorage: clean }, () => clean.calls);
    const syncs = clean.log.filter((name) => name === 'datasync').length;
    // The sync in the middle of the scenario's fails (counted among syncs only: how many writes go
    // between two syncs depends on how the callers' records batch, which timing decides).
    const storage = new FaultyJournalStorage(Math.ceil(syncs / 2), 'throw', undefined, 'datasync');
    const broker = await Broker.open({ ...base(engine, tempDir(), new ManualClock()), stateStorage: storage });
    opened.push(broker);
    const errors: [unknown, unknown][] = [];
    broker.on('error', (error, info) => errors.push([error, info]));
    broker.createTopic('agents');
    broker.createGroup('g', { bindTopic: 'agents' });
    const consumer = broker.consumer({ group: 'g', clientId: 'c' });
    await consumer.subscribe(['a'], { offset: { policy: 'min' } });
    let failure: unknown;
    for (let i = 0; failure === undefined && i < 100; i++) {
      try {
        await broker.send('agents', { liteTopic: 'a', body: `a/${i}` });
        for (const message of await consumer.pop({ maxNum: 1 })) await consumer.ack(message);
      } catch (error) {
        failure = error;
      }
    }
    expect(storage.hit).toBe(true);
    expect(failure).toMatchObject({ code: 'IO_ERROR', errno: 'EIO' });
    const before = storage.calls;
    await expect(broker.send('agents', { liteTopic: 'b', body: 'b' })).rejects.toMatchObject({ code: 'IO_ERROR' });
    await expect(consumer.subscribe(['c'])).rejects.toMatchObject({ code: 'IO_ERROR' });
    expect(() => broker.createTopic('other')).toThrow(expect.objectContaining({ code: 'IO_ERROR' }));
    expect(() => broker.createGroup('h', { bindTopic: 'agents' })).toThrow(
      expect.objectContaining({ code: 'IO_ERROR' }),
    );
    expect(storage.calls).toBe(before); // nothing written after the failure
    expect(errors).toHaveLength(1);
    expect(errors[0]?.[1]).toEqual({ during: 'state journal' });
    await expect(broker.close()).rejects.toMatchObject({ code: 'IO_ERROR' });
  });

  it.each([
    ['create', 'ENOSPC'],
    ['rename', 'EXDEV'],
  ] as const)('a compaction whose %s fails leaves the old journal in use and reports it', async (name, code) => {
    const dir = tempDir();
    const clock = new ManualClock();
    const errors: unknown[] = [];
    const options = { ...base(engine, dir, clock), stateStorage: failing(name, code), stateCompactBytes: 300 };
    const broker = await Broker.open(options);
    broker.on('error', (error, info) => errors.push([error, info]));
    broker.createTopic('agents');
    broker.createGroup('g', { bindTopic: 'agents' });
    const consumer = broker.consumer({ group: 'g', clientId: 'c' });
    await consumer.subscribe(['a'], { offset: { policy: 'min' } });
    await broker.sendBatch(
      'agents',
      [0, 1, 2, 3, 4, 5, 6, 7].map((i) => ({ liteTopic: 'a', body: `a/${i}` })),
    );
    for (const message of await consumer.pop({ maxNum: 8, invisibleTimeMs: INVISIBLE_MS })) {
      if (message.offset !== 3) await consumer.ack(message); // each ack still resolves
    }
    await broker.close(); // its compaction fails too; the old file has everything
    expect(errors.length).toBeGreaterThan(1);
    expect(errors[0]).toEqual([
      expect.objectContaining({ code: 'IO_ERROR', errno: code }),
      { during: 'state journal compaction' },
    ]);
    expect(existsSync(join(dir, `${STATE_FILE}.tmp`))).toBe(false);
    expect(await redelivered(dir)).toEqual(['a/3']);
  });

  it('uses the journal as read under the lock, not as it was before the lock was taken', async () => {
    const dir = tempDir();
    const first = await Broker.open(base(engine, dir, new ManualClock()));
    first.createTopic('agents');
    first.createGroup('g', { bindTopic: 'agents' });
    await first.close();
    // The read made while the log recovers sees the file as another owner had it then (empty).
    let reads = 0;
    const storage: JournalStorage = {
      ...nodeJournalStorage,
      read: (path) => (++reads === 1 ? Promise.resolve(undefined) : nodeJournalStorage.read(path)),
    };
    const second = await Broker.open({ ...base(engine, dir, new ManualClock()), stateStorage: storage });
    opened.push(second);
    expect(reads).toBe(2);
    expect(second.admin.groupInfo('g').bindTopic).toBe('agents');
  });

  it('a compaction in slices, with sends, POPs and acks written between them, leaves a file that replays to the state', {
    timeout: 120_000,
  }, async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    // Per compaction (from the create of the new file to its rename): the writes to the new file
    // (its header and its slices) and those to the current file meanwhile (records of the window).
    const spans: { newWrites: number; currentWrites: number; done: boolean }[] = [];
    const counted = (file: JournalFile, onWrite: () => void): JournalFile => ({
      write: (bytes, offset, length, position) => {
        onWrite();
        return file.write(bytes, offset, length, position);
      },
      truncate: (length) => file.truncate(length),
      datasync: () => file.datasync(),
      close: () => file.close(),
    });
    const current = () => spans.find((span) => !span.done);
    const storage: JournalStorage = {
      ...nodeJournalStorage,
      open: async (path) =>
        counted(await nodeJournalStorage.open(path), () => {
          const span = current();
          if (span !== undefined) span.currentWrites++;
        }),
      create: async (path) => {
        const span = { newWrites: 0, currentWrites: 0, done: false };
        spans.push(span);
        return counted(await nodeJournalStorage.create(path), () => {
          const under = current();
          if (!span.done) span.newWrites++;
          else if (under !== undefined) under.currentWrites++; // the new file, current since its rename
        });
      },
      rename: async (from, to) => {
        await nodeJournalStorage.rename(from, to);
        const span = current();
        if (span !== undefined) span.done = true;
      },
    };
    const broker = await Broker.open({
      ...base(engine, dir, clock),
      stateStorage: storage,
      stateCompactBytes: 64 * 1024,
    });
    opened.push(broker);
    broker.createTopic('agents');
    const groups = ['g1', 'g2', 'g3'];
    const consumers = groups.map((group) => {
      broker.createGroup(group, GROUP);
      return broker.consumer({ group, clientId: `${group}-c` });
    });
    // Enough progress that a snapshot is several slices (each at most 1 MiB): 3 groups × 15,000.
    const liteTopics = Array.from({ length: 15_000 }, (_, i) => `t${i % 50}__a${i}`);
    // POPs (half acked, the rest left in flight), invisible times moved, sends to old and new lite
    // topics: what the compactions meet.
    const traffic = async (round: number) => {
      for (const consumer of consumers) {
        const popped = await consumer.pop({ maxNum: 32, invisibleTimeMs: INVISIBLE_MS });
        for (const [i, message] of popped.entries()) {
          if (i % 2 === 0) await consumer.ack(message);
          else if (i % 3 === 0) await consumer.changeInvisibleTime(message, INVISIBLE_MS * 2);
        }
      }
      await broker.sendBatch(
        'agents',
        Array.from({ length: 20 }, (_, k) => {
          const liteTopic =
            k % 4 === 0 ? `new${round}__${k}` : (liteTopics[(round * 37 + k * 101) % liteTopics.length] as string);
          return { liteTopic, body: liteTopic };
        }),
      );
    };
    let round = 0;
    for (let i = 0; i < liteTopics.length; i += 500) {
      await broker.sendBatch(
        'agents',
        liteTopics.slice(i, i + 500).map((liteTopic) => ({ liteTopic, body: liteTopic })),
      );
      await traffic(round++);
    }
    // Until a compaction in several slices, with records written to the current file between
    // them, has replaced the file (the sends above, which grow the state, make one due).
    const wanted = () => spans.some((span) => span.done && span.newWrites >= 3 && span.currentWrites > 0);
    while (!wanted()) {
      expect(round, 'no compaction in slices with records between them').toBeLessThan(3000);
      await traffic(round++);
    }
    // The file now: that compaction's snapshot, the records of its window, and what came after.
    while (current() !== undefined) await new Promise((resolve) => setTimeout(resolve, 1));
    const path = join(dir, STATE_FILE);
    const live = replay(decodeJournal(readFileSync(path), path).records);
    // Closing with nothing under way compacts once more, in one go: the state as it is.
    await broker.close();
    opened.splice(opened.indexOf(broker), 1);
    const closed = replay(decodeJournal(readFileSync(path), path).records);
    const described = (state: ReturnType<typeof replay>) =>
      [...state.progress].map(([group, progress]) => [
        group,
        [...progress]
          .map(([liteTopic, p]) => [
            liteTopic,
            p.committed,
            p.next,
            [...p.keptDeliveries()].map((d) => [d.offset, d.attempt, d.invisibleUntil, d.acked]),
          ])
          .sort(),
      ]);
    expect(described(live)).toEqual(described(closed));
    expect(closed.progress.get('g1')?.size).toBeGreaterThanOrEqual(liteTopics.length);
  });

  it('close() racing sends, POPs and acks: what resolved is kept, what did not rejects with CLOSED', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const broker = await Broker.open(base(engine, dir, clock));
    broker.createTopic('agents');
    broker.createGroup('g', GROUP);
    const consumer = broker.consumer({ group: 'g', clientId: 'c' });
    await broker.sendBatch(
      'agents',
      [0, 1, 2, 3].map((i) => ({ liteTopic: 'a', body: `a/${i}` })),
    );
    const popped = await consumer.pop({ maxNum: 4, invisibleTimeMs: INVISIBLE_MS });
    expect(popped).toHaveLength(4);
    const outcome: Outcome = {
      sent: new Map(),
      acked: new Map(),
      acking: new Set(),
      bodies: new Set(),
      liteTopics: new Set(['a']),
    };
    for (const message of popped) outcome.bodies.add(message.body.toString());
    const calls: Promise<unknown>[] = [];
    const rejected: unknown[] = [];
    const track = (call: Promise<unknown>) => {
      calls.push(call.catch((error: unknown) => rejected.push(error)));
    };
    const send = (liteTopic: string) => {
      outcome.liteTopics.add(liteTopic);
      outcome.bodies.add(liteTopic);
      track(
        broker.send('agents', { liteTopic, body: liteTopic }).then((result) => {
          outcome.sent.set(`${liteTopic}:${result.offset}`, { body: liteTopic, at: 0 });
        }),
      );
    };
    const ack = (message: (typeof popped)[number]) => {
      const key = `${message.liteTopic}:${message.offset}`;
      outcome.acking.add(key);
      track(consumer.ack(message).then(() => outcome.acked.set(key, 0)));
    };
    // A long poll, sends to new lite topics (each writes a start), acks: all under way at the close.
    // The long poll may take some of the new messages (durably) or end empty.
    track(broker.consumer({ group: 'g', clientId: 'w' }).pop({ waitMs: 60_000, invisibleTimeMs: INVISIBLE_MS }));
    for (let i = 0; i < 6; i++) send(`x${i}`);
    ack(popped[0] as (typeof popped)[number]);
    ack(popped[1] as (typeof popped)[number]);
    const closing = broker.close();
    send('late');
    ack(popped[2] as (typeof popped)[number]);
    track(consumer.pop({ maxNum: 1 }));
    await closing;
    await Promise.all(calls);
    for (const error of rejected) expect(error).toMatchObject({ code: 'CLOSED' });
    expect(rejected).toHaveLength(3); // the calls made after close()
    expect(outcome.sent.size).toBe(6);
    expect(outcome.acked.size).toBe(2);
    await check(engine, dir, outcome, undefined, 'after close');
  });
});

// The journal itself holds no engine state: it is the same code under both engines, tested once,
// but for the engine's `sealFrames`, which fills in the checksums of what it writes.
describe.each(ENGINES)('state journal sealed by the %s engine', (engine) => {
  it('writes records built in place and framed ones in the order appended, across chunk boundaries', async () => {
    const path = join(tempDir(), STATE_FILE);
    const seal = getEngine(engine).sealFrames;
    const { journal } = await StateJournal.open(path, { flush: 'sync', seal });
    const recorder = journalRecorder(journal);
    const expected: unknown[] = [];
    const long = 'x'.repeat(3000);
    // Enough hot records to fill several in-place chunks, with JSON records between them, and
    // deliver records of every size up to past a chunk of their own.
    for (let i = 0; i < 4000; i++) {
      const lite = `lite-${i}-${i % 7 === 0 ? long : ''}`;
      const numbers = Array.from({ length: (i % 5) * 3 }, (_, k) => i + k);
      const hot: StateRecord[] = [
        ['start', 'g', lite, i],
        ['deliver', 'g', lite, numbers],
        ['ack', 'g', lite, i + 1],
      ];
      for (const record of hot) recorder.record(record);
      expected.push(...hot);
      if (i % 97 === 0) {
        recorder.record(['drop', 'agents', lite]);
        expected.push(['drop', 'agents', lite]);
      }
      if (i % 1000 === 999) await recorder.durable();
    }
    const big: StateRecord = ['deliver', 'g', 'big', Array.from({ length: 40_000 }, (_, k) => k)];
    recorder.record(big);
    expected.push(big);
    await recorder.durable();
    await journal.close();
    const { records } = decodeJournal(readFileSync(path), path);
    expect(decodeRecords(records)).toEqual(expected);
  });
});

describe('state journal', () => {
  it("under flush 'async', a caller that never yields still has its records written, 64 KiB behind at most", async () => {
    const path = join(tempDir(), STATE_FILE);
    const { journal } = await StateJournal.open(path, { flush: 'async' });
    const recorder = journalRecorder(journal);
    const count = 20_000; // records of 26 bytes: 520 KB, eight times the bound
    for (let i = 0; i < count; i++) {
      recorder.hot('ack', { name: 'g', journalName: -1, journalFile: -1 }, LITE, i);
      await recorder.settle(); // resolves in a microtask unless the bound makes it wait for a write
    }
    // Read before anything else lets the writer run: only the waits above did.
    const written = readFileSync(path).length;
    expect(written).toBeGreaterThan(JOURNAL_HEADER_BYTES + count * 26 - 2 * ASYNC_PENDING_MAX_BYTES);
    await journal.close();
  });

  it("under flush 'async', settle waits for the write once records waited past the time bound", async () => {
    const path = join(tempDir(), STATE_FILE);
    const { journal } = await StateJournal.open(path, { flush: 'async' });
    const recorder = journalRecorder(journal);
    const group = { name: 'g', journalName: -1, journalFile: -1 };
    recorder.hot('ack', group, LITE, 0); // taken by the writer at once
    recorder.hot('ack', group, LITE, 1); // waits while that write runs
    const until = performance.now() + ASYNC_PENDING_MAX_MS + 5;
    while (performance.now() < until); // no yield: the write's completion cannot run
    const waits: boolean[] = [];
    for (let i = 0; i < 16; i++) {
      let settled = false;
      void recorder.settle().then(() => {
        settled = true;
      });
      await Promise.resolve();
      await Promise.resolve();
      waits.push(!settled);
    }
    expect(waits).toContain(true);
    await journal.close();
  });

  it('fails for good, INTERNAL_ERROR, when a run of records it built in place will not seal', async () => {
    const path = join(tempDir(), STATE_FILE);
    const reported: unknown[] = [];
    let refuse = false;
    const seal = (bytes: Uint8Array, start: number, end: number) => (refuse ? -1 : sealFrames(bytes, start, end));
    const { journal } = await StateJournal.open(path, {
      flush: 'sync',
      seal,
      report: (error) => reported.push(error),
    });
    const recorder = journalRecorder(journal);
    recorder.record(['start', 'g', 'a', 0]);
    await recorder.durable();
    refuse = true;
    recorder.record(['ack', 'g', 'a', 1]);
    await expect(recorder.durable()).rejects.toMatchObject({ code: 'INTERNAL_ERROR' });
    expect(reported).toEqual([expect.objectContaining({ code: 'INTERNAL_ERROR' })]);
    expect(() => recorder.check()).toThrow(expect.objectContaining({ code: 'INTERNAL_ERROR' }));
    await journal.close().catch(() => undefined);
    const { records } = decodeJournal(readFileSync(path), path);
    expect(decodeRecords(records)).toEqual([['start', 'g', 'a', 0]]);
  });

  it('numbers names afresh after a reopen, each number named again before its first use', async () => {
    const path = join(tempDir(), STATE_FILE);
    const expected: StateRecord[] = [];
    const write = async (records: StateRecord[]) => {
      const { journal } = await StateJournal.open(path, { flush: 'sync' });
      const recorder = journalRecorder(journal);
      for (const record of records) recorder.record(record);
      expected.push(...records);
      await journal.close();
    };
    // The first writer numbers g, a, b; the second meets b first, then c, g: the same numbers for
    // other names.
    await write([
      ['start', 'g', 'a', 0],
      ['start', 'g', 'b', 0],
      ['ack', 'g', 'a', 0],
    ]);
    await write([
      ['ack', 'b', 'c', 1],
      ['deliver', 'g', 'b', [0, 0, 5]],
      ['ack', 'g', 'b', 0],
    ]);
    await write([['ack', 'c', 'a', 2]]);
    const { records } = decodeJournal(readFileSync(path), path);
    expect(decodeRecords(records)).toEqual(expected);
  });

  it('after a failed compaction, keeps the names numbered since its snapshot, named again in the old file', async () => {
    const path = join(tempDir(), STATE_FILE);
    let fail: (error: Error) => void = () => undefined;
    let creates = 0;
    const storage: JournalStorage = {
      ...nodeJournalStorage,
      create: () => {
        creates++;
        // The first compaction waits until the test fails it; later ones fail at once.
        if (creates > 1) return Promise.reject(Object.assign(new Error('ENOSPC: injected'), { code: 'ENOSPC' }));
        return new Promise((_, reject) => {
          fail = reject;
        });
      },
    };
    const { journal } = await StateJournal.open(path, { flush: 'async', compactBytes: 1, storage, report: () => {} });
    journal.snapshot = () => [encodeRecord(['epoch', 'snapshot'])];
    const recorder = journalRecorder(journal);
    const expected: StateRecord[] = [];
    const record = (r: StateRecord) => {
      recorder.record(r);
      expected.push(r);
    };
    record(['start', 'g', 'a', 0]);
    record(['ack', 'g', 'a', 0]);
    // Written, then the file is past its compaction size: the compaction starts and waits in create.
    const durable = recorder.durable();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(creates).toBe(1);
    // Numbered after the snapshot: b and g get the numbers a and g had.
    record(['start', 'g', 'b', 3]);
    record(['ack', 'g', 'b', 3]);
    fail(Object.assign(new Error('ENOSPC: injected'), { code: 'ENOSPC' }));
    await durable;
    record(['ack', 'g', 'a', 1]);
    await journal.close();
    const { records } = decodeJournal(readFileSync(path), path);
    expect(decodeRecords(records)).toEqual(expected);
  });

  it('reads a version 3 file (hot records naming group and lite topic in full) and goes on with it as version 4', async () => {
    const path = join(tempDir(), STATE_FILE);
    const header = Buffer.alloc(JOURNAL_HEADER_BYTES);
    header.write('LTBSTATE', 0, 'ascii');
    header.writeUInt32LE(3, 8);
    const group = { bindTopic: 'agents', subModel: 'shared', wildcard: false, maxReconsumeTimes: 16, dialect: 'lite' };
    const v3: unknown[] = [
      ['epoch', 'e1'],
      ['topic', 'agents', {}],
      ['group', 'g', group],
      encodeHot('start', 'g', 'a', 0),
      encodeHot('deliver', 'g', 'a', [0, 0, 500, 1, 0, 500]),
      encodeHot('ack', 'g', 'a', 0),
    ];
    writeFileSync(path, Buffer.concat([header, ...v3.map((record) => encodeRecord(record))]));
    const { journal, records } = await StateJournal.open(path, { flush: 'sync' });
    expect(decodeRecords(records)).toEqual(decodeRecords(v3));
    const restored = replay(records).progress.get('g')?.get('a');
    expect([restored?.committed, restored?.next]).toEqual([1, 2]);
    expect(readFileSync(path).readUInt32LE(8)).toBe(JOURNAL_VERSION);
    journalRecorder(journal).record(['ack', 'g', 'a', 1]);
    await journal.close();
    const again = decodeJournal(readFileSync(path), path);
    expect(again.version).toBe(JOURNAL_VERSION);
    expect(replay(again.records).progress.get('g')?.get('a')?.committed).toBe(2);
  });

  it('carries the numbers of what its snapshot holds into the compacted file, and forgets the rest', async () => {
    const path = join(tempDir(), STATE_FILE);
    // Compacted once the first records are written; the compacted file, larger than those, is not
    // compacted again by the few records after it.
    const { journal } = await StateJournal.open(path, { flush: 'sync', compactBytes: 100 });
    const recorder = journalRecorder(journal);
    const epoch = 'e'.repeat(300);
    const named = (name: string) => ({ name, liteTopic: name, journalName: -1, journalFile: -1 });
    const [group, kept, gone] = [named('g'), named('kept'), named('gone')];
    journal.snapshot = (names) => {
      names.carry(group, group.name);
      names.carry(kept, kept.liteTopic);
      return [encodeRecord(['epoch', epoch])];
    };
    recorder.hot('start', group, kept, 0);
    recorder.hot('start', group, gone, 0);
    await recorder.durable(); // written, then compacted: the file is past its compaction size
    await compacted(journal, 1);
    const compactedRecords = decodeJournal(readFileSync(path), path).records;
    expect(decodeRecords(compactedRecords)).toEqual([['epoch', epoch]]);
    recorder.hot('ack', group, kept, 0);
    recorder.hot('ack', group, gone, 0);
    await recorder.durable();
    const { records } = decodeJournal(readFileSync(path), path);
    expect(decodeRecords(records)).toEqual([
      ['epoch', epoch],
      ['ack', 'g', 'kept', 0],
      ['ack', 'g', 'gone', 0],
    ]);
    // g and kept are named once, in the compaction's NAME record; gone, not carried, again after it.
    const nameRecords = records.filter((r) => r instanceof Uint8Array && isNameRecord(r));
    expect(nameRecords).toHaveLength(2);
    expect(journal.nameFile).toBe(1); // one compaction: one new numbering
    await journal.close();
  });

  it('a compaction writes the records appended while it runs after its snapshot, and not those from before it began', async () => {
    const path = join(tempDir(), STATE_FILE);
    // Writes to the current file wait while `hold` is set: records appended meanwhile are still
    // pending when the compaction the write made due begins.
    let hold: Promise<void> | undefined;
    const storage = delayingWrites('open', () => hold);
    const { journal } = await StateJournal.open(path, { flush: 'sync', compactBytes: 50, storage });
    const recorder = journalRecorder(journal);
    const named = (name: string) => ({ name, liteTopic: name, journalName: -1, journalFile: -1 });
    const [group, before, during] = [named('g'), named('before'), named('during')];
    let release: () => void = () => undefined;
    hold = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The snapshot stands for the state: it holds `before` (in full, as progress batches name lite
    // topics) and, between two of its records, the broker goes on: `during` starts, then the
    // lite topic of `before` is dropped and starts again.
    journal.snapshot = function* (names) {
      names.carry(group, group.name);
      yield encodeRecord(['epoch', 'e'.repeat(2 * 1024 * 1024)]); // a slice of its own
      recorder.hot('start', group, during, 7);
      recorder.record(['drop', 'agents', 'before']);
      recorder.hot('start', group, before, 9);
      yield encodeRecord(['epoch', 'e']);
    };
    journal.append(['epoch', 'x'.repeat(100)]); // its write waits: the file is past compactBytes once it is done
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Pending when the compaction begins: numbered in the current file.
    recorder.hot('start', group, before, 0);
    recorder.hot('ack', group, before, 0);
    release();
    hold = undefined;
    await compacted(journal, 1);
    await recorder.durable(); // and the records of the snapshot's last slice, written after it
    // The new file: the snapshot, then what came while it was written; the ack from before it began
    // is in neither (the snapshot holds it), and every number it uses is named in it.
    const records = decodeRecords(decodeJournal(readFileSync(path), path).records);
    journal.snapshot = undefined;
    await journal.close();
    expect(records.filter((r) => Array.isArray(r) && r[0] !== 'epoch')).toEqual([
      ['start', 'g', 'during', 7],
      ['drop', 'agents', 'before'],
      ['start', 'g', 'before', 9],
    ]);
  });

  it('a close during a compaction that carries records written meanwhile compacts once more: the file is the state as closed', async () => {
    const path = join(tempDir(), STATE_FILE);
    // The compaction's first slice waits at `gate`: records appended meanwhile are written in the
    // next writer round, before its last slice, so they are its window.
    let sliceWaits: () => void = () => undefined;
    const waiting = new Promise<void>((resolve) => {
      sliceWaits = resolve;
    });
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const storage = delayingWrites('create', (position) => {
      if (position === 0) return undefined; // the header
      sliceWaits();
      return gate;
    });
    const { journal } = await StateJournal.open(path, { flush: 'sync', compactBytes: 50, storage });
    // The state is `version`, which each snapshot writes after a slice of its own.
    let version = 0;
    journal.snapshot = function* () {
      yield encodeRecord(['epoch', 'e'.repeat(1024 * 1024)]);
      yield encodeRecord(['epoch', `state ${version}`]);
    };
    journal.append(['epoch', 'x'.repeat(100)]); // past compactBytes once written: the compaction begins
    await waiting;
    for (let i = 0; i < 3; i++) journal.append(['epoch', `v${++version}`]);
    const closed = journal.close();
    open();
    await closed;
    // The first compaction carried v1..v3 after its snapshot; the close's own holds the state only.
    expect(journal.compactions).toBe(2);
    const records = decodeRecords(decodeJournal(readFileSync(path), path).records);
    expect(records.map((r) => (r as unknown[])[1]).filter((v) => (v as string).length < 100)).toEqual(['state 3']);
  });

  it('compacts when the file is twice the state, counting what the state grew by since the last compaction', async () => {
    const path = join(tempDir(), STATE_FILE);
    const { journal } = await StateJournal.open(path, { flush: 'sync', compactBytes: 100 });
    let live = 10;
    // A snapshot as large as the state: 20 bytes of epoch per entry.
    journal.watch(
      () => [encodeRecord(['epoch', 'e'.repeat(20 * live)])],
      () => live,
    );
    const fill = async (bytes: number) => {
      journal.append(['epoch', 'f'.repeat(bytes)]);
      await journal.durable();
    };
    const fileBytes = () => readFileSync(path).length;
    await fill(200); // past compactBytes and twice the fresh file: compacted
    await compacted(journal, 1);
    const first = fileBytes();
    expect(first).toBeGreaterThan(20 * live);
    // The state grew fourfold: a file three times the last compaction's is still mostly state.
    live = 40;
    while (fileBytes() < 3 * first) await fill(50);
    expect(journal.compactions).toBe(1);
    expect(journal.nameFile).toBe(1);
    // Past twice the grown state's estimate, it compacts.
    while (journal.nameFile === 1 && fileBytes() < 9 * first) await fill(50);
    expect(journal.nameFile).toBe(2);
    await compacted(journal, 2);
    expect(decodeRecords(decodeJournal(readFileSync(path), path).records)).toEqual([['epoch', 'e'.repeat(20 * live)]]);
    // A state that stays the same compacts again at twice the file, as before.
    const second = fileBytes();
    while (journal.nameFile === 2 && fileBytes() < 2 * second) await fill(50);
    await fill(50);
    expect(journal.nameFile).toBe(3);
    await compacted(journal, 3);
    await journal.close();
  });
});
