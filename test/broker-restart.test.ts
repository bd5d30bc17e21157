/**
 * Broker state across restarts (issue 6): topics, groups, committed offsets (including a
 * subscription's starting offset), in-flight deliveries with their deadlines and attempts, receipt
 * handles, the state journal's torn tail and its compaction. Each on every engine, on a manual clock.
 * Crashes with real processes are in test/broker-crash.test.ts.
 */
import { appendFileSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeJournal, encodeRecord, JOURNAL_VERSION } from '../ts/broker/journal.js';
import { decodeRecords } from '../ts/broker/persist.js';
import {
  checkBinary,
  decodeBinary,
  decodeHot,
  encodeHot,
  type HotKind,
  isProgressBatch,
} from '../ts/broker/snapshot.js';
import { crc32c } from '../ts/common/crc32c.js';
import { Broker, type BrokerOptions, type Consumer, type EngineName } from '../ts/index.js';
import { bodies, drain, ManualClock, tempDir } from './broker-helpers.js';
import { ENGINES } from './engines.js';

const opened: Broker[] = [];
afterEach(async () => {
  for (const broker of opened.splice(0)) await broker.close().catch(() => undefined);
});

async function open(engine: EngineName, dir: string, clock: ManualClock, options: BrokerOptions = {}): Promise<Broker> {
  const broker = await Broker.open({ engine, dir, clock, flush: 'sync', ...options });
  opened.push(broker);
  return broker;
}

/** Parent `agents`, group `g` and its client `c`, subscribed to `liteTopics` from their first message. */
async function groupFromMin(broker: Broker, liteTopics: string[]): Promise<Consumer> {
  broker.createTopic('agents');
  broker.createGroup('g', { bindTopic: 'agents' });
  const c = broker.consumer({ group: 'g', clientId: 'c' });
  await c.subscribe(liteTopics, { offset: { policy: 'min' } });
  return c;
}

async function send(broker: Broker, liteTopic: string, count: number, from = 0): Promise<void> {
  const messages = Array.from({ length: count }, (_, i) => ({ liteTopic, body: `${liteTopic}#${from + i}` }));
  await broker.sendBatch('agents', messages);
}

describe.each(ENGINES)('%s engine', (engine) => {
  it('keeps topics and groups with their attributes; creating them again is harmless', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const first = await open(engine, dir, clock);
    first.createTopic('agents', { liteTopicExpirationMs: 60_000 });
    first.createGroup('g', { bindTopic: 'agents', subModel: 'exclusive', maxReconsumeTimes: 3 });
    first.createGroup('w', { bindTopic: 'agents', wildcard: true });
    await first.close();
    const second = await open(engine, dir, clock);
    expect(second.admin.topicInfo('agents')).toMatchObject({ liteTopicExpirationMs: 60_000, groups: ['g', 'w'] });
    expect(second.admin.groupInfo('g')).toMatchObject({ subModel: 'exclusive', maxReconsumeTimes: 3 });
    expect(second.admin.groupInfo('w')).toMatchObject({ wildcard: true, maxReconsumeTimes: 16 });
    second.createTopic('agents', { liteTopicExpirationMs: 60_000 });
    second.createGroup('g', { bindTopic: 'agents', subModel: 'exclusive', maxReconsumeTimes: 5 });
    expect(() => second.createGroup('w', { bindTopic: 'agents' })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
    await second.close();
    const third = await open(engine, dir, clock);
    expect(third.admin.groupInfo('g').maxReconsumeTimes).toBe(5);
  });

  it('commits the starting offset a subscription chose, before any POP', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const first = await open(engine, dir, clock);
    first.createTopic('agents');
    first.createGroup('g', { bindTopic: 'agents' });
    await send(first, 'a', 4);
    await first.consumer({ group: 'g', clientId: 'c' }).subscribe(['a'], { offset: { offset: 1 } });
    await first.close();
    const second = await open(engine, dir, clock);
    const c = second.consumer({ group: 'g', clientId: 'c' });
    await c.subscribe(['a']); // default `max`, but the group has progress: it resumes at 1
    expect(await drain(c)).toEqual(['a#1', 'a#2', 'a#3']);
  });

  it('does not redeliver acked messages; redelivers in-flight ones after their invisible time, attempts continued, in order', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const first = await open(engine, dir, clock);
    const c = await groupFromMin(first, ['a']);
    await send(first, 'a', 5);
    const popped = await c.pop({ maxNum: 3, invisibleTimeMs: 10_000 });
    expect(bodies(popped)).toEqual(['a#0', 'a#1', 'a#2']);
    await c.ack(popped[0] as never);
    clock.advance(10_000);
    first.tick();
    const again = await c.pop({ maxNum: 1, invisibleTimeMs: 10_000 });
    expect(again.map((m) => [m.body.toString(), m.reconsumeTimes])).toEqual([['a#1', 1]]);
    await first.close();

    const second = await open(engine, dir, clock);
    const d = second.consumer({ group: 'g', clientId: 'd' });
    await d.subscribe(['a']);
    expect(await d.pop({ maxNum: 8 })).toEqual([]); // a#1 is still hidden: nothing after it goes
    clock.advance(10_000);
    second.tick();
    const after = await d.pop({ maxNum: 8, invisibleTimeMs: 10_000 });
    expect(after.map((m) => [m.body.toString(), m.reconsumeTimes])).toEqual([
      ['a#1', 2],
      ['a#2', 1],
      ['a#3', 0],
      ['a#4', 0],
    ]);
    for (const m of after) await d.ack(m);
    expect(second.admin.groupInfo('g', { liteTopic: 'a' }).liteTopic).toMatchObject({ committedOffset: 5, lag: 0 });
  });

  it('a wildcard client without patterns gets what a restart restored: new messages and redeliveries due', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const first = await open(engine, dir, clock);
    first.createTopic('agents');
    first.createGroup('w', { bindTopic: 'agents', wildcard: true });
    const before = first.consumer({ group: 'w', clientId: 'c' });
    for (const liteTopic of ['a', 'b', 'c']) await send(first, liteTopic, 2);
    expect(bodies(await before.pop({ maxNum: 1, invisibleTimeMs: 1_000 }))).toEqual(['a#0']);
    await first.close();
    const second = await open(engine, dir, clock);
    clock.advance(1_000); // a#0's invisible time has ended while the broker was down
    const after = second.consumer({ group: 'w', clientId: 'c' });
    const got = await drain(after);
    expect(got.sort()).toEqual(['a#0', 'a#1', 'b#0', 'b#1', 'c#0', 'c#1']);
  });

  it('after a restart, a send to lite topics that exist counts only the new ones against maxLiteTopicsPerBroker', async () => {
    // 5: every name of the send fits even if all were new; 3: they fit only because two exist.
    for (const limit of [5, 3]) {
      const dir = tempDir();
      const clock = new ManualClock();
      const first = await open(engine, dir, clock);
      first.createTopic('agents');
      for (const liteTopic of ['a', 'b']) await send(first, liteTopic, 1);
      await first.close();
      const broker = await open(engine, dir, clock, { limits: { maxLiteTopicsPerBroker: limit } });
      broker.createTopic('agents');
      const sent = await broker.sendBatch('agents', [
        { liteTopic: 'a', body: 'a#1' },
        { liteTopic: 'n', body: 'n#0' },
        { liteTopic: 'b', body: 'b#1' },
      ]);
      expect(sent.map((r) => [r.liteTopic, r.offset])).toEqual([
        ['a', 1],
        ['n', 0],
        ['b', 1],
      ]);
      expect(broker.admin.topicInfo('agents').liteTopics).toBe(3);
      for (let i = 3; i < limit; i++) await send(broker, `fill${i}`, 1);
      await expect(
        broker.sendBatch('agents', [
          { liteTopic: 'a', body: 'a#2' },
          { liteTopic: 'over', body: 'x' },
        ]),
      ).rejects.toMatchObject({
        quota: 'maxLiteTopicsPerBroker',
        limit,
        actual: limit + 1,
      });
      expect(broker.admin.liteTopicInfo('agents', 'over')).toBeNull();
      await broker.close();
    }
  });

  it('honours receipt handles of deliveries still current after a restart and rejects stale ones', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const first = await open(engine, dir, clock);
    const c = await groupFromMin(first, ['a', 'b']);
    await send(first, 'a', 1);
    await send(first, 'b', 1);
    const [a, b] = await c.pop({ invisibleTimeMs: 5000 });
    await first.close();
    const second = await open(engine, dir, clock);
    const d = second.consumer({ group: 'g', clientId: 'd' });
    await d.subscribe(['a', 'b']);
    clock.advance(5000);
    second.tick();
    const [b2] = await d.pop({ maxNum: 1 });
    expect(b2?.liteTopic).toBe(a?.liteTopic);
    await expect(d.ack(a as never)).rejects.toMatchObject({ code: 'INVALID_RECEIPT' }); // redelivered since
    await d.ack(b2 as never);
    await d.ack(b as never); // b was not redelivered: its handle from before the restart still acks it
    expect(await d.pop()).toEqual([]);
    expect(second.admin.groupInfo('g').totalLag).toBe(0);
  });

  it('cuts a torn tail of the state journal and keeps what was complete', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const first = await open(engine, dir, clock);
    const c = await groupFromMin(first, ['a']);
    await send(first, 'a', 3);
    await c.ack((await c.pop({ maxNum: 1 }))[0] as never);
    await first.close();
    const file = join(dir, 'broker-state');
    appendFileSync(file, Buffer.from([200, 0, 0, 0, 1, 2, 3, 4, 9, 9])); // a record cut short
    const size = statSync(file).size;
    const second = await open(engine, dir, clock);
    const d = second.consumer({ group: 'g', clientId: 'd' });
    await d.subscribe(['a']);
    expect(await drain(d)).toEqual(['a#1', 'a#2']);
    await second.close();
    expect(statSync(file).size).toBeLessThan(size);
  });

  it('a second open of a directory in use fails without touching its state journal', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const first = await open(engine, dir, clock);
    first.createTopic('agents');
    first.createGroup('g', { bindTopic: 'agents' });
    const file = join(dir, 'broker-state');
    // Under flush 'sync' a subscription resolves once every record so far is on disk: the owner's
    // journal writer is idle from here on.
    await first.consumer({ group: 'g', clientId: 'c' }).subscribe(['a']);
    // A torn-looking tail and a compaction file: an open that truncated or removed them before
    // taking the lock would break the live owner's journal (the journal is read while the log opens).
    appendFileSync(file, Buffer.from([200, 0, 0, 0, 1, 2, 3, 4, 9, 9]));
    writeFileSync(`${file}.tmp`, 'compaction in progress');
    const before = readFileSync(file);
    await expect(Broker.open({ engine, dir, clock, flush: 'sync' })).rejects.toMatchObject({ code: 'LOG_LOCKED' });
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(readFileSync(`${file}.tmp`, 'utf8')).toBe('compaction in progress');
  });

  /** A broker directory with progress on three lite topics: acked, in flight and untouched messages. */
  async function withProgress(dir: string, clock: ManualClock): Promise<unknown> {
    const first = await open(engine, dir, clock);
    first.createTopic('agents');
    first.createGroup('g', { bindTopic: 'agents' });
    first.createGroup('k', { bindTopic: 'agents', keyShared: { buckets: 16 } });
    const c = first.consumer({ group: 'g', clientId: 'c' });
    await c.subscribe(['a', 'b', 'c-1'], { offset: { policy: 'min' } });
    await first.consumer({ group: 'k', clientId: 'kc' }).subscribe(['a'], { offset: { policy: 'min' } });
    for (const lite of ['a', 'b', 'c-1']) await send(first, lite, 5);
    for (const m of await c.pop({ maxNum: 8, invisibleTimeMs: 60_000 })) if (m.offset % 2 === 0) await c.ack(m);
    const state = stateOf(first);
    await first.close();
    return state;
  }

  function stateOf(broker: Broker): unknown {
    return ['g', 'k'].map((group) => {
      const info = broker.admin.groupInfo(group);
      return [info.totalLag, broker.admin.brokerInfo().inflight, info.liteTopics];
    });
  }

  it('compacts progress into binary records and restores it; the same progress as JSON records opens too', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const before = await withProgress(dir, clock);
    const file = join(dir, 'broker-state');
    const compacted = readFileSync(file);
    expect(compacted.readUInt32LE(8)).toBe(JOURNAL_VERSION);
    const { records } = decodeJournal(compacted, file);
    expect(records.some((r) => r instanceof Uint8Array)).toBe(true);
    expect(records.some((r) => Array.isArray(r) && r[0] === 'progress')).toBe(false);
    // The same state as JSON `progress` records, one per lite topic (the form for names too long for binary).
    const json: unknown[] = [];
    for (const record of records) {
      if (!(record instanceof Uint8Array)) json.push(record);
      else if (isProgressBatch(record)) {
        decodeBinary(record, {
          progress(group, lite, committed, next, deliveries) {
            const list: number[] = [];
            deliveries((offset, attempt, until, acked) => list.push(offset, attempt, until, acked ? 1 : 0));
            json.push(['progress', group, lite, committed, next, list]);
          },
        });
      }
    }
    const header = Buffer.alloc(16);
    header.write('LTBSTATE', 0, 'latin1');
    header.writeUInt32LE(JOURNAL_VERSION, 8);
    writeFileSync(file, Buffer.concat([header, ...json.map(encodeRecord)]));
    const second = await open(engine, dir, clock);
    expect(stateOf(second)).toEqual(before);
    await second.close();
    const third = await open(engine, dir, clock);
    expect(stateOf(third)).toEqual(before);
    expect(readFileSync(file).readUInt32LE(8)).toBe(JOURNAL_VERSION);
  });

  it('cuts a journal inside a binary record like any torn tail, and refuses unknown versions', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    await withProgress(dir, clock);
    const file = join(dir, 'broker-state');
    const bytes = readFileSync(file);
    // Cut inside the last progress batch (the compacted file's `NAME` records come after them).
    let end = 0;
    for (let at = 16; at < bytes.length; at += 8 + bytes.readUInt32LE(at)) {
      if (isProgressBatch(bytes.subarray(at + 8, at + 8 + bytes.readUInt32LE(at))))
        end = at + 8 + bytes.readUInt32LE(at);
    }
    writeFileSync(file, bytes.subarray(0, end - 10));
    const second = await open(engine, dir, clock);
    // Everything before the torn record survives (topics, groups, g's batch); k's batch, last, is gone.
    expect(second.admin.groupInfo('g').liteTopics).toBe(3);
    expect(second.admin.groupInfo('k').liteTopics).toBe(0);
    expect(second.admin.topicInfo('agents').groups).toEqual(['g', 'k']);
    await second.close();
    const compacted = readFileSync(file);
    // Versions 3 and 4 are read: 1 and 2 were never released, later ones are unknown.
    for (const version of [1, 2, JOURNAL_VERSION + 1]) {
      compacted.writeUInt32LE(version, 8);
      writeFileSync(file, compacted);
      await expect(Broker.open({ engine, dir, clock })).rejects.toMatchObject({ code: 'UNSUPPORTED_FORMAT', version });
    }
  });

  it('compacts the journal as it grows and restores the same state from the compacted file', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const first = await open(engine, dir, clock, { flush: 'async', stateCompactBytes: 4096 });
    const c = await groupFromMin(first, ['a', 'b']);
    await send(first, 'a', 200);
    await send(first, 'b', 3);
    for (let i = 0; i < 150; i++) {
      const [m] = await c.pop({ maxNum: 1 });
      if (m?.liteTopic === 'a') await c.ack(m);
    }
    await first.runMaintenance();
    await first.close();
    expect(readFileSync(join(dir, 'broker-state')).length).toBeLessThan(4096);
    const second = await open(engine, dir, clock);
    expect(second.admin.groupInfo('g', { liteTopic: 'a' }).liteTopic?.committedOffset).toBeGreaterThan(100);
    expect(second.admin.brokerInfo().inflight).toBeGreaterThan(0); // b's deliveries, still hidden
  });
});

describe('state journal record framing', () => {
  /** The framing as a reader expects it, from `JSON.stringify` and a UTF-8 copy: the reference. */
  function reference(record: unknown): Buffer {
    const payload = Buffer.from(JSON.stringify(record), 'utf8');
    const frame = Buffer.alloc(8 + payload.length);
    frame.writeUInt32LE(payload.length, 0);
    frame.writeUInt32LE(crc32c(payload), 4);
    payload.copy(frame, 8);
    return frame;
  }
  // Names as the broker records them, and strings JSON must escape or write as multi-byte UTF-8.
  const name = fc.stringMatching(/^[A-Za-z0-9_-]{1,20}$/);
  const text = fc.oneof(
    name,
    fc.string(),
    fc.string({ unit: 'grapheme' }),
    fc.constantFrom('"', '\\', '\n', 'é', '\u{1F600}'),
  );
  const number = fc.oneof(
    fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
    fc.double(),
    fc.constantFrom(-0, 1e21, 1e-7, Number.NaN, Number.POSITIVE_INFINITY),
  );
  const leaf = fc.oneof(text, number, fc.boolean(), fc.constant(null));
  const record = fc.letrec((tie) => ({
    value: fc.array(fc.oneof({ depthSize: 'small' }, leaf, tie('value')), { maxLength: 6 }),
  })).value;

  it('frames every record exactly as JSON.stringify and a UTF-8 copy would', () => {
    fc.assert(
      fc.property(record, (value) => {
        expect(encodeRecord(value).equals(reference(value))).toBe(true);
      }),
      { numRuns: 2000 },
    );
    // The shapes of the hot path, by hand: deliveries, acks, starts.
    for (const value of [
      ['deliver', 'planner', 'tenant1__agent2__session3', [5, 0, 1733000000000, 6, 1, 1733000000001]],
      ['ack', 'g', 'a-b_c', 7],
      ['start', 'g', 'x', 0],
    ]) {
      expect(encodeRecord(value).equals(reference(value))).toBe(true);
    }
  });
});

describe('binary hot records', () => {
  const name = fc.oneof(fc.stringMatching(/^[A-Za-z0-9_-]{1,20}$/), fc.string({ minLength: 1, unit: 'grapheme' }));
  const number = fc.oneof(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), fc.double({ noNaN: true }));
  const hot = fc.oneof(
    fc.tuple(fc.constantFrom<HotKind>('start', 'ack'), name, name, number),
    fc.tuple(fc.constant<HotKind>('deliver'), name, name, fc.array(number, { maxLength: 30 })),
  );

  it('decode what they encode, and every cut or grown payload fails the check', () => {
    fc.assert(
      fc.property(hot, fc.nat(), ([kind, group, liteTopic, value], cut) => {
        const payload = encodeHot(kind, group, liteTopic, value) as Buffer;
        expect(checkBinary(payload)).toBe(true);
        expect(decodeHot(payload)).toEqual([kind, group, liteTopic, value]);
        expect(checkBinary(payload.subarray(0, cut % payload.length))).toBe(false);
        expect(checkBinary(Buffer.concat([payload, Buffer.alloc(1 + (cut % 9))]))).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  it.each(ENGINES)(
    'are what a broker writes on every arrival, POP and ack, and a reopen replays them (%s)',
    async (engine) => {
      const dir = tempDir();
      const clock = new ManualClock();
      const broker = await open(engine, dir, clock);
      const c = await groupFromMin(broker, ['a']);
      await send(broker, 'a', 3);
      const popped = await c.pop({ maxNum: 2, invisibleTimeMs: 60_000 });
      await c.ack(popped[0] as never);
      // As a crash would leave it: closing compacts the journal into a snapshot.
      const file = join(dir, 'broker-state');
      const written = readFileSync(file);
      await broker.close();
      writeFileSync(file, written);
      const { records, version } = decodeJournal(written, file);
      expect(version).toBe(JOURNAL_VERSION);
      const kinds = decodeRecords(records).map((r) => (r as unknown[])[0]);
      expect(kinds).toEqual(expect.arrayContaining(['start', 'deliver', 'ack']));
      expect(records.filter((r) => Array.isArray(r) && ['start', 'deliver', 'ack'].includes(r[0]))).toEqual([]);
      // Each names its group and lite topic by number, each name written once in a NAME record.
      expect(records.filter((r) => r instanceof Uint8Array && r[1] === 5)).toHaveLength(2);
      const again = await open(engine, dir, clock);
      expect(again.admin.groupInfo('g', { liteTopic: 'a' }).liteTopic?.committedOffset).toBe(1);
      expect(again.admin.brokerInfo().inflight).toBe(1);
    },
  );
});
