/**
 * The commit log on every engine: append and read, offsets and listing, segment rolls, reopen with and
 * without a checkpoint, LMQ deletion, retention, locking, and refusal of bad input with nothing
 * stored. Corruption, cross-engine and crash tests live in their own files.
 */
import { cpSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  ClosedError,
  type CommitLog,
  InvalidArgumentError,
  LogLockedError,
  MAX_APPEND_RECORDS,
  MAX_LMQ_NAME_BYTES,
  MAX_LMQS_PER_RECORD,
  MIN_SEGMENT_BYTES,
  type StoredMessage,
} from '../ts/index.js';
import { ENGINES } from './engines.js';
import { checkpointDirectory } from './log-checkpoint-file.js';
import { bodyFor, flipByte, ManualClock, openLog, segmentFiles, tempDir } from './log-helpers.js';

/** Counts the engine's syncs of `log`, where the log calls them; returns the count so far. */
function countSyncs(log: CommitLog): () => number {
  const core = (log as unknown as { core: { sync(): Promise<number> } }).core;
  const sync = core.sync.bind(core);
  let syncs = 0;
  core.sync = () => {
    syncs++;
    return sync();
  };
  return () => syncs;
}

describe.each(ENGINES)('%s engine', (engine) => {
  it('stores a record once for several LMQs and reads every field back', async () => {
    const clock = new ManualClock();
    const log = await openLog(tempDir(), engine, { clock });
    const [first, second] = await log.append([
      {
        lmqs: ['%LMQ%$agents$t1__a1', '%LMQ%$agents$t1__a2'],
        body: Buffer.from([0, 1, 2, 255]),
        key: 'order-7',
        tag: 'created',
        // fromEntries makes "__proto__" an own property, as a decoded record must too.
        properties: Object.fromEntries([
          ['trace', 'abc'],
          ['ünï', 'çødé'],
          ['__proto__', 'kept'],
        ]),
        bornTimestamp: 42,
      },
      { lmqs: ['%LMQ%$agents$t1__a1'], body: 'héllo', key: '' },
    ]);
    expect(first?.offsets).toEqual([0, 0]);
    expect(second?.offsets).toEqual([1]);
    expect(second?.position).toBeGreaterThan(first?.position ?? Number.POSITIVE_INFINITY);

    const [a, b] = log.read('%LMQ%$agents$t1__a1', 0, 10);
    expect(a).toMatchObject({
      lmq: '%LMQ%$agents$t1__a1',
      offset: 0,
      position: first?.position,
      storeTimestamp: clock.ms,
      bornTimestamp: 42,
      key: 'order-7',
      tag: 'created',
    });
    expect(Object.entries(a?.properties ?? {})).toEqual([
      ['trace', 'abc'],
      ['ünï', 'çødé'],
      ['__proto__', 'kept'],
    ]);
    expect([...(a?.body ?? [])]).toEqual([0, 1, 2, 255]);
    expect(b).toMatchObject({ offset: 1, key: '', tag: undefined, bornTimestamp: clock.ms, properties: {} });
    expect(b?.body.toString()).toBe('héllo');
    const [copy] = log.read('%LMQ%$agents$t1__a2', 0, 10);
    expect(copy?.position).toBe(first?.position);
    expect(copy?.lmq).toBe('%LMQ%$agents$t1__a2');
  });

  it('reports offsets, timestamps and counts, and reads from any offset', async () => {
    const clock = new ManualClock();
    const log = await openLog(tempDir(), engine, { clock });
    expect(log.maxOffset('q')).toBe(0);
    expect(log.minOffset('q')).toBe(0);
    expect(log.lastWriteTimestamp('q')).toBeUndefined();
    expect(log.read('q', 0, 5)).toEqual([]);
    for (let i = 0; i < 10; i++) {
      clock.advance(5);
      await log.append([{ lmqs: ['q'], body: bodyFor('q', i) }]);
    }
    expect(log.maxOffset('q')).toBe(10);
    expect(log.minOffset('q')).toBe(0);
    expect(log.lastWriteTimestamp('q')).toBe(clock.ms);
    expect(log.lmqCount).toBe(1);
    const page = log.read('q', 7, 100);
    expect(page.map((m) => m.offset)).toEqual([7, 8, 9]);
    expect(page.map((m) => m.body.toString())).toEqual([7, 8, 9].map((o) => bodyFor('q', o).toString()));
    expect(log.read('q', 3, 2).map((m) => m.offset)).toEqual([3, 4]);
    expect(log.read('q', 10, 5)).toEqual([]);
    expect(log.read('q', 1_000, 5)).toEqual([]);
  });

  it('lists LMQs by prefix in UTF-8 byte order, a page at a time', async () => {
    const log = await openLog(tempDir(), engine);
    // In UTF-16 order '\u{10000}' (a surrogate pair) sorts before '\uffff'; in UTF-8 it sorts after.
    const names = ['b', 'a2', 'a1', 'a10', 'a\uffff', 'a\u{10000}', 'c'];
    await log.append(names.map((lmq) => ({ lmqs: [lmq], body: 'x' })));
    expect(log.listLmqs().lmqs).toEqual(['a1', 'a10', 'a2', 'a\uffff', 'a\u{10000}', 'b', 'c']);
    const first = log.listLmqs('a', 2);
    expect(first).toEqual({ lmqs: ['a1', 'a10'], cursor: 'a10' });
    const second = log.listLmqs('a', 2, first.cursor);
    expect(second).toEqual({ lmqs: ['a2', 'a\uffff'], cursor: 'a\uffff' });
    expect(log.listLmqs('a', 2, second.cursor)).toEqual({ lmqs: ['a\u{10000}'] });
    expect(log.listLmqs('zz').lmqs).toEqual([]);
  });

  it('summarizes every LMQ under a prefix in one call, as the per-LMQ calls answer', async () => {
    const clock = new ManualClock();
    const log = await openLog(tempDir(), engine, { clock });
    const names = ['p$b', 'p$a2', 'p$a1', 'p$a\uffff', 'p$a\u{10000}', 'other'];
    for (const [i, lmq] of names.entries()) {
      clock.ms += 1000;
      await log.append(Array.from({ length: i + 1 }, () => ({ lmqs: [lmq], body: 'x' })));
    }
    await log.deleteLmq('p$a2');
    const perLmq = (prefix: string) =>
      log.listLmqs(prefix, 1000).lmqs.map((lmq) => ({
        name: lmq.slice(prefix.length),
        minOffset: log.minOffset(lmq),
        maxOffset: log.maxOffset(lmq),
        lastWriteTimestamp: log.lastWriteTimestamp(lmq),
      }));
    expect(log.lmqSummaries('p$').map((s) => s.name)).toEqual(['a1', 'a\uffff', 'a\u{10000}', 'b']);
    expect(log.lmqSummaries('p$')).toEqual(perLmq('p$'));
    expect(log.lmqSummaries()).toEqual(perLmq(''));
    expect(log.lmqSummaries('none')).toEqual([]);
  });

  it('rolls segments and reads across them, before and after reopening', async () => {
    const dir = tempDir();
    const log = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES, flush: 'sync' });
    for (let batch = 0; batch < 20; batch++) {
      const records = Array.from({ length: 10 }, (_, i) => {
        const lmq = `lmq${(batch * 10 + i) % 7}`;
        return { lmqs: [lmq], body: bodyFor(lmq, Math.floor((batch * 10 + i) / 7), 300) };
      });
      await log.append(records);
    }
    expect(segmentFiles(dir).length).toBeGreaterThan(10);
    const expectAll = (reader: typeof log) => {
      for (let q = 0; q < 7; q++) {
        const lmq = `lmq${q}`;
        const messages = reader.read(lmq, 0, 1000);
        expect(messages.length).toBe(reader.maxOffset(lmq));
        messages.forEach((m, offset) => {
          expect(m.offset).toBe(offset);
          expect(m.body.equals(bodyFor(lmq, offset, 300))).toBe(true);
        });
      }
    };
    expectAll(log);
    await log.close();
    const reopened = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES });
    expectAll(reopened);
    expect(reopened.stats().recovery.cutPosition).toBe(-1);
    const [next] = await reopened.append([{ lmqs: ['lmq0'], body: 'after' }]);
    expect(next?.offsets).toEqual([reopened.maxOffset('lmq0') - 1]);
  });

  it('asks for the next segment at the write that uses the spare, before the last preparation has settled', async () => {
    const log = await openLog(tempDir(), engine, { segmentBytes: MIN_SEGMENT_BYTES });
    const core = (log as unknown as { core: { spareReady: boolean; prepareSegment(nowMs: number): Promise<void> } })
      .core;
    const spareMade = async () => {
      while (!core.spareReady) await new Promise((resolve) => setImmediate(resolve));
    };
    await spareMade();
    // Appends awaited back to back give the event loop no turn, so a preparation that is over in
    // the engine may not have settled its promise yet when a write uses the spare it made. Its
    // promises are held here until the end, as such a writer holds them.
    const prepare = core.prepareSegment.bind(core);
    const held: (() => void)[] = [];
    let asked = 0;
    core.prepareSegment = (nowMs) => {
      asked++;
      const done = prepare(nowMs);
      return new Promise((resolve, reject) => held.push(() => done.then(resolve, reject)));
    };
    // Two records of 1,500 bytes fill a segment: every other append uses the spare. An append
    // used it when its record does not start where the log's writes ended (the rest of the old
    // segment is skipped); whether a new spare is ready already right after it is up to the
    // engine's thread, so that cannot tell.
    const body = 'x'.repeat(1500);
    let used = 0;
    let end = log.stats().writePosition;
    try {
      for (let i = 0; used < 3; i++) {
        const [result] = await log.append([{ lmqs: ['q'], body: `${i}${body}` }]);
        const rolled = result?.position !== end;
        end = log.stats().writePosition;
        if (!rolled) continue;
        used++;
        expect(asked).toBe(used);
        // The engine prepares the next spare; its promise stays held.
        await spareMade();
      }
    } finally {
      // Released whatever happened: `close` waits for the preparation.
      for (const release of held) release();
    }
    expect(log.maxOffset('q')).toBeGreaterThanOrEqual(5);
    await log.close();
  });

  it('reads several LMQs in one readMany as read does one by one, in request order', async () => {
    const dir = tempDir();
    const log = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES, flush: 'sync' });
    for (let batch = 0; batch < 12; batch++) {
      const records = Array.from({ length: 10 }, (_, i) => {
        const n = batch * 10 + i;
        // Every third record also goes to `all`; keys, tags and properties on some.
        const lmqs = n % 3 === 0 ? [`q${n % 5}`, 'all'] : [`q${n % 5}`];
        return {
          lmqs,
          body: bodyFor(`q${n % 5}`, n, 40 + (n % 200)),
          key: n % 4 === 0 ? `k${n}` : undefined,
          properties: { n: String(n) },
        };
      });
      await log.append(records);
    }
    const requests = [
      { lmq: 'q0', fromOffset: 0, maxNum: 1000 },
      { lmq: 'all', fromOffset: 3, maxNum: 7 },
      { lmq: 'nope', fromOffset: 0, maxNum: 10 },
      { lmq: 'q3', fromOffset: 22, maxNum: 100 },
      { lmq: 'q3', fromOffset: 1000, maxNum: 5 },
      { lmq: 'q0', fromOffset: 5, maxNum: 1 },
      { lmq: 'q\u0000x', fromOffset: 0, maxNum: 3 },
      { lmq: 'q4', fromOffset: 0, maxNum: 24 },
    ];
    const plain = (messages: readonly StoredMessage[]) => messages.map((m) => ({ ...m, body: m.body.toString('hex') }));
    const expectSame = (reader: typeof log) => {
      const many = reader.readMany(requests);
      expect(many.length).toBe(requests.length);
      requests.forEach((r, i) => {
        expect(plain(many[i] as StoredMessage[])).toEqual(plain(reader.read(r.lmq, r.fromOffset, r.maxNum)));
      });
      expect(many.map((m) => m.length)).toEqual([24, 7, 0, 2, 0, 1, 0, 24]);
      expect(reader.readMany([])).toEqual([]);
    };
    expectSame(log);
    await log.close();
    // After a reopen the queues come from the checkpoint file, loaded as the reads reach them.
    const reopened = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES });
    expectSame(reopened);
    expect(() => reopened.readMany([{ lmq: 'q0', fromOffset: 0, maxNum: 0 }])).toThrow(InvalidArgumentError);
    expect(() => reopened.readMany('q0' as never)).toThrow(InvalidArgumentError);
    const tooMany = Array.from({ length: 3 }, () => ({ lmq: 'q0', fromOffset: 0, maxNum: 30_000 }));
    expect(() => reopened.readMany(tooMany)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', actual: 90_000 }),
    );
    await reopened.close();
    expect(() => reopened.readMany(requests)).toThrow(ClosedError);
  });

  it('readMany follows an LMQ through its deletion and rewriting, and reads names no LMQ can have', async () => {
    const log = await openLog(tempDir(), engine, { segmentBytes: MIN_SEGMENT_BYTES });
    const offsets = (requests: { lmq: string; fromOffset: number; maxNum: number }[]) =>
      log.readMany(requests).map((messages) => messages.map((m) => `${m.lmq}@${m.offset}:${m.body}`));
    const both = [
      { lmq: 'a', fromOffset: 0, maxNum: 10 },
      { lmq: 'later', fromOffset: 0, maxNum: 10 },
    ];
    await log.append([
      { lmqs: ['a'], body: 'a0' },
      { lmqs: ['a'], body: 'a1' },
    ]);
    // Read before it exists, then written: the read after finds it.
    expect(offsets(both)).toEqual([['a@0:a0', 'a@1:a1'], []]);
    await log.append([{ lmqs: ['later'], body: 'l0' }]);
    expect(offsets(both)).toEqual([['a@0:a0', 'a@1:a1'], ['later@0:l0']]);
    // Deleted, another LMQ made (it may take the deleted one's place), then written anew from 0.
    expect(await log.deleteLmqs(['a'])).toEqual([true]);
    expect(offsets(both)).toEqual([[], ['later@0:l0']]);
    await log.append([{ lmqs: ['other'], body: 'o0' }]);
    await log.append([{ lmqs: ['a'], body: 'again' }]);
    expect(offsets([...both, { lmq: 'other', fromOffset: 0, maxNum: 10 }])).toEqual([
      ['a@0:again'],
      ['later@0:l0'],
      ['other@0:o0'],
    ]);
    // Names no LMQ can have, among others: read as unknown, the others as ever.
    const odd = ['', 'x'.repeat(MAX_LMQ_NAME_BYTES + 1), 'q\u0000a', '\ud800'];
    for (const lmq of odd) {
      expect(offsets([{ lmq, fromOffset: 0, maxNum: 5 }, ...both])).toEqual([[], ['a@0:again'], ['later@0:l0']]);
    }
    await log.close();
  });

  it('reads and body appends stay right while reads name far more LMQs than the log has', async () => {
    // Past 65,536 names read, more than twice the LMQs, the native engine forgets the LMQ handles it
    // keeps for them and registers names again as they are used.
    const log = await openLog(tempDir(), engine, {});
    await log.append([{ lmqs: ['real'], body: 'r0' }]);
    const bodies: string[] = ['r0'];
    // One table of names for every batch: the adapter keeps what it looked up there between them.
    const lmqs = ['real'];
    for (let batch = 0; batch < 80; batch++) {
      const requests = Array.from({ length: 1000 }, (_, i) => ({
        lmq: `ghost${batch}_${i}`,
        fromOffset: 0,
        maxNum: 1,
      }));
      requests.push({ lmq: 'real', fromOffset: 0, maxNum: 200 });
      const read = log.readMany(requests);
      expect(read.slice(0, 1000).every((messages) => messages.length === 0)).toBe(true);
      expect(read[1000]?.map((m) => m.body.toString())).toEqual(bodies);
      const body = `b${batch}`;
      await log.appendBodies({
        lmqs,
        lmqIndex: Uint32Array.of(0),
        bodies: Buffer.from(body),
        bodyEnds: Uint32Array.of(body.length),
      });
      bodies.push(body);
    }
    expect(log.read('real', 0, 200).map((m) => m.body.toString())).toEqual(bodies);
    await log.close();
  });

  it('keeps every batch intact when appends are issued without waiting, across rolls and batch sizes', async () => {
    // Each append encodes into a buffer the log reuses once a write is done with it; appends in
    // flight together, some waiting for a segment, must never share one.
    const dir = tempDir();
    const log = await openLog(dir, engine, { segmentBytes: 256 * 1024 });
    const sizes = [1, 400, 3, 250, 90, 400, 7, 320, 1, 200, 130, 400, 60, 5, 280];
    const next = new Map<string, number>();
    const pending = sizes.map((size, batch) => {
      const records = Array.from({ length: size }, (_, i) => {
        const lmq = `q${(batch * 7 + i) % 5}`;
        const offset = next.get(lmq) ?? 0;
        next.set(lmq, offset + 1);
        return { lmqs: [lmq], body: bodyFor(lmq, offset, 500) };
      });
      return log.append(records).then((results) => ({ records, results }));
    });
    for (const { records, results } of await Promise.all(pending)) {
      records.forEach((record, i) => {
        const lmq = record.lmqs[0] as string;
        const [message] = log.read(lmq, results[i]?.offsets[0] as number, 1);
        expect(message?.body.equals(record.body)).toBe(true);
      });
    }
    expect(segmentFiles(dir).length).toBeGreaterThan(5);
    for (const [lmq, count] of next) {
      const messages = log.read(lmq, 0, 10_000);
      expect(messages.length).toBe(count);
      messages.forEach((m, offset) => {
        expect(m.body.equals(bodyFor(lmq, offset, 500))).toBe(true);
      });
    }
    await log.close();
  });

  it('recovers the same index from a checkpoint as from a full replay', async () => {
    const dirs = [tempDir(), tempDir()];
    const snapshots: unknown[] = [];
    for (const [i, dir] of dirs.entries()) {
      const log = await openLog(dir, engine, { segmentBytes: 8192, checkpointBytes: i === 0 ? 0 : 4096 });
      for (let n = 0; n < 200; n++) await log.append([{ lmqs: [`q${n % 13}`, 'all'], body: bodyFor('all', n, 64) }]);
      await log.deleteLmq('q3');
      if (i === 1) await log.checkpoint();
      await log.append([{ lmqs: ['q3'], body: 'again' }]);
      // Close without the closing checkpoint's help for the replayed copy: remove it afterwards.
      await log.close();
      if (i === 0) await import('node:fs').then((fs) => fs.rmSync(`${dir}/checkpoint`, { force: true }));
      const reopened = await openLog(dir, engine, { segmentBytes: 8192 });
      expect(reopened.stats().recovery.checkpoint).toBe(i === 0 ? 'none' : 'loaded');
      snapshots.push(
        [...reopened.listLmqs().lmqs].map((lmq) => [
          lmq,
          reopened.minOffset(lmq),
          reopened.maxOffset(lmq),
          reopened.read(lmq, 0, 1000).map((m) => m.body.toString()),
        ]),
      );
      await reopened.close();
    }
    expect(snapshots[0]).toEqual(snapshots[1]);
  });

  it('starts a checkpoint that fell due while another ran once that one ends, with no further append', async () => {
    const dir = tempDir();
    const every = 64 * 1024;
    const log = await openLog(dir, engine, { checkpointBytes: every });
    // Enough LMQs that a checkpoint takes a while; each batch is over `every` bytes.
    const lmqs = Array.from({ length: 30_000 }, (_, i) => `%LMQ%$agents$tenant${i % 97}__session${i}`);
    const batch = (n: number) => lmqs.map((lmq) => ({ lmqs: [lmq], body: bodyFor(lmq, n, 16) }));
    await log.append(batch(0)); // the first checkpoint starts after this batch
    await log.append(batch(1)); // due again while it runs; then the writer goes idle
    const end = log.stats().writePosition;
    // The checkpoint's log position P (docs/FORMAT.md) reaches the end without another append.
    const position = () => {
      try {
        return Number(readFileSync(join(dir, 'checkpoint')).readBigUInt64LE(16));
      } catch {
        return -1; // not written yet, or being renamed into place
      }
    };
    for (let waited = 0; position() < end && waited < 20_000; waited += 20) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(position()).toBe(end);
    await log.close();
  });

  it('takes a checkpoint as of its position while appends and deletions go on', async () => {
    const dir = tempDir();
    const log = await openLog(dir, engine, { checkpointBytes: 0 });
    // Enough LMQs that the checkpoint is written in several pieces (and batches of the lock).
    const lmqs = Array.from({ length: 20_000 }, (_, i) => `%LMQ%$agents$tenant${i % 97}__session${i}`);
    for (let from = 0; from < lmqs.length; from += 1000) {
      await log.append(lmqs.slice(from, from + 1000).map((lmq) => ({ lmqs: [lmq], body: bodyFor(lmq, 0, 16) })));
    }
    const checkpoint = log.checkpoint();
    const during: Promise<unknown>[] = [];
    for (let round = 1; round <= 3; round++) {
      const some = lmqs.filter((_, i) => i % 50 === round);
      during.push(log.append(some.map((lmq) => ({ lmqs: [lmq], body: bodyFor(lmq, 1, 16) }))));
      during.push(log.append([{ lmqs: [`fresh${round}`], body: 'new' }]));
      during.push(log.deleteLmq(lmqs[round * 7] as string));
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all([checkpoint, ...during]);
    await log.append([{ lmqs: [lmqs[7] as string], body: 'again' }]);
    // A copy of the directory now is what a crash would leave: this checkpoint and the log after it.
    const copy = tempDir();
    cpSync(dir, copy, { recursive: true });
    rmSync(join(copy, 'LOCK'), { force: true });
    const recovered = await openLog(copy, engine);
    expect(recovered.stats().recovery.checkpoint).toBe('loaded');
    const state = (reader: typeof log) =>
      reader
        .lmqSummaries()
        .map((s) => [s.name, s.minOffset, s.maxOffset, reader.read(s.name, 0, 10).map((m) => m.body.toString())]);
    expect(state(recovered)).toEqual(state(log));
    const [next] = await recovered.append([{ lmqs: [lmqs[1] as string], body: 'after' }]);
    expect(next?.offsets).toEqual([log.maxOffset(lmqs[1] as string)]);
  });

  it('deletes an LMQ durably and starts it again at offset 0', async () => {
    const dir = tempDir();
    const log = await openLog(dir, engine);
    await log.append([
      { lmqs: ['gone', 'kept'], body: 'a' },
      { lmqs: ['gone'], body: 'b' },
    ]);
    expect(await log.deleteLmq('gone')).toBe(true);
    expect(await log.deleteLmq('gone')).toBe(false);
    expect(await log.deleteLmq('never')).toBe(false);
    expect(log.maxOffset('gone')).toBe(0);
    expect(log.read('gone', 0, 10)).toEqual([]);
    expect(log.lmqCount).toBe(1);
    expect(log.read('kept', 0, 10).map((m) => m.body.toString())).toEqual(['a']);
    await log.close();
    const reopened = await openLog(dir, engine, { checkpointBytes: 0 });
    expect(reopened.listLmqs().lmqs).toEqual(['kept']);
    const [again] = await reopened.append([{ lmqs: ['gone'], body: 'c' }]);
    expect(again?.offsets).toEqual([0]);
    expect(reopened.read('gone', 0, 10).map((m) => m.body.toString())).toEqual(['c']);
  });

  it('deletes several LMQs in one deleteLmqs call, durably, as deleteLmq does one by one', async () => {
    const dir = tempDir();
    const log = await openLog(dir, engine, { flush: 'sync' });
    const names = Array.from({ length: 40 }, (_, i) => `q${i}`);
    await log.append(names.map((name, i) => ({ lmqs: i % 2 === 0 ? [name, 'kept'] : [name], body: `m${i}` })));
    const written = log.stats().writePosition;
    expect(await log.deleteLmqs([])).toEqual([]);
    expect(await log.deleteLmqs(['never'])).toEqual([false]);
    expect(log.stats().writePosition).toBe(written); // nothing to delete, nothing written
    const doomed = names.filter((_, i) => i % 4 !== 3);
    const asked = [...doomed, 'never', 'q0', 'q3'];
    const existed = await log.deleteLmqs(asked);
    // Each existing name once (a repeat says false), an unknown name false.
    expect(existed).toEqual([...doomed.map(() => true), false, false, true]);
    // Under `sync` the deletions are durable when the call resolves.
    expect(log.stats().durablePosition).toBe(log.stats().writePosition);
    const left = names.filter((_, i) => i % 4 === 3 && i !== 3);
    expect(log.listLmqs('q').lmqs.sort()).toEqual(left.sort());
    expect(log.maxOffset('q0')).toBe(0);
    expect(log.read('kept', 0, 100)).toHaveLength(20);
    await expect(log.deleteLmqs(['ok', 7] as never)).rejects.toThrow(InvalidArgumentError);
    await expect(log.deleteLmqs('q7' as never)).rejects.toThrow(InvalidArgumentError);
    expect(log.maxOffset('q7')).toBe(1); // a refused call deleted nothing
    await log.close();
    await expect(log.deleteLmqs(['q7'])).rejects.toThrow(ClosedError);
    const reopened = await openLog(dir, engine, { checkpointBytes: 0 });
    expect(reopened.listLmqs('q').lmqs.sort()).toEqual(left.sort());
    const [again] = await reopened.append([{ lmqs: ['q0'], body: 'back' }]);
    expect(again?.offsets).toEqual([0]);
  });

  it('deletes more LMQs in one deleteLmqs call than one append may hold records', async () => {
    const log = await openLog(tempDir(), engine);
    const names = Array.from({ length: MAX_APPEND_RECORDS + 3 }, (_, i) => `many${i}`);
    for (let at = 0; at < names.length; at += MAX_APPEND_RECORDS) {
      await log.append(names.slice(at, at + MAX_APPEND_RECORDS).map((name) => ({ lmqs: [name], body: 'x' })));
    }
    expect(log.lmqCount).toBe(names.length);
    const existed = await log.deleteLmqs(names);
    expect(existed.every((e) => e)).toBe(true);
    expect(log.lmqCount).toBe(0);
    expect(log.maxOffset(names[names.length - 1] as string)).toBe(0);
  });

  it('retains segments under LMQs whose entries are still in the checkpoint file', async () => {
    const clock = new ManualClock();
    const dir = tempDir();
    const first = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES, clock });
    for (let n = 0; n < 60; n++) {
      clock.advance(1000);
      // 'old' only in the first records, 'new' only in the last ones, 'all' everywhere.
      const lmqs = n < 10 ? ['old', 'all'] : n >= 50 ? ['new', 'all'] : ['all'];
      await first.append([{ lmqs, body: bodyFor('all', n, 500) }]);
    }
    await first.close();
    const log = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES, clock });
    expect(log.stats().recovery).toMatchObject({ checkpoint: 'loaded', replayedRecords: 0 });
    const retained = await log.retain({ maxAgeMs: 30_500 });
    expect(retained.segments).toBeGreaterThan(0);
    expect([log.minOffset('old'), log.maxOffset('old')]).toEqual([10, 10]);
    expect(log.read('old', 0, 10)).toEqual([]);
    const min = log.minOffset('all');
    expect(min).toBeGreaterThan(10);
    expect(log.read('all', 0, 100).map((m) => m.offset)).toEqual(Array.from({ length: 60 - min }, (_, i) => min + i));
    expect(log.read('new', 0, 100).map((m) => m.offset)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(log.stats().indexEntries).toBe(60 - min + 10);
    await log.close();
    const reopened = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES, clock });
    expect([reopened.minOffset('old'), reopened.maxOffset('old'), reopened.minOffset('all')]).toEqual([10, 10, min]);
    expect(reopened.read('new', 9, 1)[0]?.body.equals(bodyFor('all', 59, 500))).toBe(true);
  });

  it('fails a retention that needs a damaged checkpoint block, changing nothing', async () => {
    const clock = new ManualClock();
    const dir = tempDir();
    const first = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES, clock });
    for (let n = 0; n < 40; n++) {
      clock.advance(1000);
      await first.append([{ lmqs: ['q'], body: bodyFor('q', n, 500) }]);
    }
    await first.close();
    const path = join(dir, 'checkpoint');
    const entry = checkpointDirectory(readFileSync(path)).entries.find((e) => e.name === 'q');
    flipByte(path, (entry?.at ?? 0) + 30);
    const log = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES, clock });
    const oldest = segmentFiles(dir)[0];
    await expect(log.retain({ maxBytes: 0 })).rejects.toMatchObject({ code: 'LOG_CORRUPT' });
    expect(segmentFiles(dir)[0]).toBe(oldest); // no segment deleted
    expect([log.minOffset('q'), log.maxOffset('q')]).toEqual([0, 40]);
  });

  it('retains by size and by age, never the segment being written', async () => {
    const clock = new ManualClock();
    const dir = tempDir();
    const log = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES, clock });
    for (let n = 0; n < 60; n++) {
      clock.advance(1000);
      await log.append([{ lmqs: ['q'], body: bodyFor('q', n, 500) }]);
    }
    // Count written segments only: a spare being prepared in the background lies past the write position.
    const written = () => segmentFiles(dir).filter((f) => Number(f.slice(-24, -4)) <= log.stats().writePosition).length;
    const before = written();
    const byAge = await log.retain({ maxAgeMs: 30_500 });
    expect(byAge.segments).toBeGreaterThan(0);
    const min = log.minOffset('q');
    expect(min).toBeGreaterThan(0);
    expect(min).toBeLessThanOrEqual(30);
    const oldest = log.read('q', 0, 1)[0];
    expect(oldest?.offset).toBe(min);
    expect(oldest?.body.equals(bodyFor('q', min, 500))).toBe(true);
    expect(written()).toBe(before - byAge.segments);
    const bySize = await log.retain({ maxBytes: 0 });
    expect(bySize.segments).toBeGreaterThan(0);
    expect(log.maxOffset('q')).toBe(60);
    expect(log.read('q', 0, 100).map((m) => m.offset)).toEqual(
      Array.from({ length: 60 - log.minOffset('q') }, (_, i) => log.minOffset('q') + i),
    );
    expect(log.read('q', 59, 1)[0]?.body.equals(bodyFor('q', 59, 500))).toBe(true);
    await log.close();
    const reopened = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES });
    expect(reopened.maxOffset('q')).toBe(60);
    expect(reopened.read('q', 59, 1)[0]?.body.equals(bodyFor('q', 59, 500))).toBe(true);
  });

  it('locks its directory against a second open until closed', async () => {
    const dir = tempDir();
    const log = await openLog(dir, engine);
    const error = await openLog(dir, engine).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LogLockedError);
    expect(error).toMatchObject({ code: 'LOG_LOCKED', pid: process.pid });
    await log.close();
    await log.close();
    expect(() => log.maxOffset('q')).toThrow(ClosedError);
    await expect(log.append([{ lmqs: ['q'], body: 'x' }])).rejects.toThrow(ClosedError);
    const again = await openLog(dir, engine);
    expect(again.lmqCount).toBe(0);
  });

  it('keeps files and descriptors independent of the number of LMQs', async () => {
    const openDescriptors = () => readdirSync('/proc/self/fd').length;
    const dir = tempDir();
    const before = openDescriptors();
    const log = await openLog(dir, engine, { segmentBytes: 1024 * 1024 });
    for (let batch = 0; batch < 30; batch++) {
      await log.append(
        Array.from({ length: 1000 }, (_, i) => ({ lmqs: [`%LMQ%$p$lite${batch * 1000 + i}`], body: 'x' })),
      );
    }
    expect(log.lmqCount).toBe(30_000);
    const stats = log.stats();
    expect(stats.filesOpen).toBeLessThanOrEqual(stats.segments + 1);
    expect(openDescriptors() - before).toBeLessThanOrEqual(stats.segments + 2);
    expect(readdirSync(dir).sort()).toEqual(['LOCK', 'segments']);
    expect(stats.indexBytes / stats.lmqs).toBeLessThan(1024);
    await log.close();
    expect(readdirSync(dir).sort()).toEqual(['checkpoint', 'segments']);
  });

  it('makes sync appends durable before resolving', async () => {
    const log = await openLog(tempDir(), engine, { flush: 'sync' });
    const appends = Array.from({ length: 20 }, (_, i) => log.append([{ lmqs: ['q'], body: `m${i}` }]));
    const results = await Promise.all(appends);
    expect(results.map((r) => r[0]?.offsets[0])).toEqual(Array.from({ length: 20 }, (_, i) => i));
    const stats = log.stats();
    expect(stats.durablePosition).toBe(stats.writePosition);
    expect(stats.flush).toBe('sync');
    expect(stats.engine).toBe(engine);
  });

  it('creates segments sparse: a segment holds blocks for what was written, not for its size', async () => {
    const dir = tempDir();
    const log = await openLog(dir, engine, { flush: 'sync' });
    await log.append([{ lmqs: ['q'], body: 'one record' }]);
    const files = segmentFiles(dir);
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const { size, blocks } = statSync(file);
      // A file system may round what it allocates up to its own extents, so "far below the size"
      // rather than an exact figure; a reserved segment holds blocks for all of it. (The next
      // segment may be caught being made, still empty: no blocks either.)
      expect(blocks * 512).toBeLessThanOrEqual(size / 8);
    }
    await log.close();
  });

  it('syncs a lone sync append at once, and the appends written while that sync runs together', async () => {
    const log = await openLog(tempDir(), engine, { flush: 'sync' });
    const syncs = countSyncs(log);
    await log.append([{ lmqs: ['q'], body: 'lone' }]);
    expect(syncs()).toBe(1);
    // In a later turn of the event loop, with no sync just ended: the first of ten appends issued
    // together starts a sync at once; the other nine, written while it runs, share one more.
    await new Promise((resolve) => setImmediate(resolve));
    await Promise.all(Array.from({ length: 10 }, (_, i) => log.append([{ lmqs: ['q'], body: `m${i}` }])));
    expect(syncs()).toBe(3);
    const stats = log.stats();
    expect(stats.durablePosition).toBe(stats.writePosition);
    expect(log.maxOffset('q')).toBe(11);
    await log.close();
  });

  it('syncs the appends issued as a sync releases its waiters together, not the first alone', async () => {
    const log = await openLog(tempDir(), engine, { flush: 'sync' });
    const syncs = countSyncs(log);
    // Each round is issued where the last round's sync resumed its caller, as a producer that
    // keeps a window of appends in flight does: one sync per round, whatever the sync's speed.
    const rounds = 5;
    for (let round = 0; round < rounds; round++) {
      await Promise.all(Array.from({ length: 10 }, (_, i) => log.append([{ lmqs: ['q'], body: `r${round}m${i}` }])));
    }
    // The first round starts with nothing just ended: its first append is synced alone.
    expect(syncs()).toBe(rounds + 1);
    const stats = log.stats();
    expect(stats.durablePosition).toBe(stats.writePosition);
    expect(log.maxOffset('q')).toBe(rounds * 10);
    await log.close();
  });

  it('limits LMQ names by their UTF-8 bytes, ASCII or not, and refuses bad ones storing nothing', async () => {
    const log = await openLog(tempDir(), engine);
    const limit = MAX_LMQ_NAME_BYTES;
    const ascii = 'a'.repeat(limit);
    const twoByte = 'é'.repeat(limit / 2);
    // A three-byte character whose last byte would land one past the limit.
    const straddling = `${'b'.repeat(limit - 2)}€`;
    const fine = [ascii, twoByte, `${'c'.repeat(limit - 3)}€`];
    const results = await log.append(fine.map((name, i) => ({ lmqs: [name], body: `m${i}` })));
    expect(results.map((r) => r.offsets)).toEqual([[0], [0], [0]]);
    for (const [i, name] of fine.entries()) {
      const [message] = log.read(name, 0, 10);
      expect(message).toMatchObject({ lmq: name, offset: 0 });
      expect(message?.body.toString()).toBe(`m${i}`);
    }
    const bad: unknown[] = [
      `${ascii}a`,
      `${twoByte}é`,
      `${'d'.repeat(limit)}é`,
      straddling,
      'lone \ud800 surrogate',
      'nul at the end\0',
      '\0',
      7,
      undefined,
    ];
    for (const name of bad) {
      // Each bad name after a good record in the same call, and next to a good name in one record.
      await expect(
        log.append([
          { lmqs: ['good'], body: 'x' },
          { lmqs: [name as string], body: 'x' },
        ]),
      ).rejects.toThrow(InvalidArgumentError);
      await expect(log.append([{ lmqs: ['good', name as string], body: 'x' }])).rejects.toThrow(InvalidArgumentError);
    }
    expect(log.maxOffset('good')).toBe(0);
    expect(log.lmqCount).toBe(fine.length);
  });

  it('reads bodies as Buffers in every respect a caller can see', async () => {
    const log = await openLog(tempDir(), engine);
    await log.append([{ lmqs: ['q'], body: Buffer.from('hello') }]);
    const body = log.read('q', 0, 1)[0]?.body as Buffer;
    expect(Buffer.isBuffer(body)).toBe(true);
    expect(body).toBeInstanceOf(Buffer);
    expect(body.constructor).toBe(Buffer);
    expect(body.toString('utf8')).toBe('hello');
    expect(body.equals(Buffer.from('hello'))).toBe(true);
    expect(body.readUInt8(0)).toBe(0x68);
    expect(Buffer.isBuffer(body.subarray(1))).toBe(true);
    expect(body.subarray(1).toString()).toBe('ello');
    expect(Buffer.concat([body, body]).toString()).toBe('hellohello');
    expect(JSON.parse(JSON.stringify(body))).toEqual({ type: 'Buffer', data: [...Buffer.from('hello')] });
    expect(inspect(body)).toBe(inspect(Buffer.from('hello')));
  });

  it('refuses bad records and arguments with typed errors, storing nothing', async () => {
    const log = await openLog(tempDir(), engine, { segmentBytes: MIN_SEGMENT_BYTES });
    const bad: unknown[] = [
      [],
      [{ lmqs: [], body: 'x' }],
      [{ lmqs: [''], body: 'x' }],
      [{ lmqs: ['a\0b'], body: 'x' }],
      [{ lmqs: ['q', 'q'], body: 'x' }],
      [{ lmqs: Array.from({ length: MAX_LMQS_PER_RECORD + 1 }, (_, i) => `q${i}`), body: 'x' }],
      [{ lmqs: ['q'], body: 7 }],
      [{ lmqs: ['q'], body: 'x', key: 5 }],
      [{ lmqs: ['q'], body: 'x', tag: '\ud800' }],
      [{ lmqs: ['q'], body: 'x', properties: { a: 1 } }],
      [{ lmqs: ['q'], body: 'x', bornTimestamp: -1 }],
      [
        { lmqs: ['q'], body: 'x' },
        { lmqs: ['q'], body: Buffer.alloc(MIN_SEGMENT_BYTES) },
      ],
    ];
    for (const records of bad) {
      await expect(log.append(records as never)).rejects.toThrow(InvalidArgumentError);
    }
    const tooBig = await log.append([{ lmqs: ['q'], body: Buffer.alloc(MIN_SEGMENT_BYTES) }]).catch((e: unknown) => e);
    expect(tooBig).toMatchObject({ code: 'INVALID_ARGUMENT', limit: MIN_SEGMENT_BYTES - 64 });
    expect(log.maxOffset('q')).toBe(0);
    expect(log.lmqCount).toBe(0);
    expect(() => log.read('q', -1, 1)).toThrow(InvalidArgumentError);
    expect(() => log.read('q', 0, 0)).toThrow(InvalidArgumentError);
    expect(() => log.listLmqs('', 0)).toThrow(InvalidArgumentError);
    await expect(log.retain({ maxBytes: -5 })).rejects.toThrow(InvalidArgumentError);
    await expect(openLog(tempDir(), engine, { segmentBytes: 100 })).rejects.toThrow(InvalidArgumentError);
    await expect(openLog(tempDir(), engine, { flush: 'never' as never })).rejects.toThrow(InvalidArgumentError);
  });
});
