/**
 * A corrupt record met by a POP (docs/BROKER.md, "Corrupt records"): the healthy messages of that POP
 * are delivered or released, never burned; the corrupt one is reported once (`'error'`, LOG_CORRUPT
 * with group, lite topic and offset), listed by admin and holds its lite topic without being read
 * again on every POP; `admin.skipCorrupt` moves the group past it, journaled; any other offset is
 * refused. On a directory with a flipped bit, and on a store that fails chosen reads, on every engine.
 */
import { closeSync, openSync, readdirSync, readSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CORRUPT_RETRY_FIRST_MS, readAround } from '../ts/broker/corrupt.js';
import { KeySharedProgress } from '../ts/broker/key-shared-progress.js';
import { replay } from '../ts/broker/persist.js';
import {
  Broker,
  type Clock,
  type Consumer,
  CorruptMessageError,
  type EngineName,
  LogCorruptError,
  MemoryStore,
  type StoredMessage,
} from '../ts/index.js';
import { bodies, ManualClock, openBroker, tempDir } from './broker-helpers.js';
import { ENGINES } from './engines.js';

/** A memory store whose reads fail with LOG_CORRUPT when they cover a chosen (LMQ, offset). */
class CorruptingStore extends MemoryStore {
  /** `lmq#offset` of the records that read as corrupt. */
  readonly bad = new Set<string>();
  /** How many reads met each bad record. */
  readonly hits = new Map<string, number>();

  constructor(clock: Clock) {
    super(clock);
  }

  corrupt(liteTopic: string, offset: number): void {
    this.bad.add(`%LMQ%$agents$${liteTopic}#${offset}`);
  }

  heal(liteTopic: string, offset: number): void {
    this.bad.delete(`%LMQ%$agents$${liteTopic}#${offset}`);
  }

  hitsOf(liteTopic: string, offset: number): number {
    return this.hits.get(`%LMQ%$agents$${liteTopic}#${offset}`) ?? 0;
  }

  override read(lmq: string, fromOffset: number, maxNum: number): StoredMessage[] {
    const messages = super.read(lmq, fromOffset, maxNum);
    for (const message of messages) {
      const name = `${lmq}#${message.offset}`;
      if (!this.bad.has(name)) continue;
      this.hits.set(name, (this.hits.get(name) ?? 0) + 1);
      throw new LogCorruptError(`the record at position ${message.position} is corrupt: bad CRC`, {
        position: message.position,
      });
    }
    return messages;
  }
}

interface Setup {
  broker: Broker;
  store: CorruptingStore;
  clock: ManualClock;
  errors: { error: unknown; during: string }[];
  advance(ms: number): void;
}

async function corruptingBroker(engine: EngineName): Promise<Setup> {
  const clock = new ManualClock();
  const store = new CorruptingStore(clock);
  const { broker } = await openBroker(engine, { clock, store });
  const errors: Setup['errors'] = [];
  broker.on('error', (error: unknown, info: { during: string }) => errors.push({ error, during: info.during }));
  const advance = (ms: number) => {
    clock.advance(ms);
    broker.tick();
  };
  return { broker, store, clock, errors, advance };
}

/** Sends `count` messages to each lite topic, bodies `<lite>#<i>` (and key `<key>` when given). */
async function send(broker: Broker, liteTopic: string, count: number, from = 0, key?: (i: number) => string) {
  for (let i = from; i < from + count; i++) {
    await broker.send('agents', { liteTopic, body: `${liteTopic}#${i}`, ...(key ? { key: key(i) } : {}) });
  }
}

async function popAll(consumer: Consumer, ack = true): Promise<string[]> {
  const out: string[] = [];
  for (;;) {
    const batch = await consumer.pop({ maxNum: 32 });
    if (batch.length === 0) return out;
    for (const m of batch) {
      out.push(m.body.toString());
      if (ack) await consumer.ack(m);
    }
  }
}

function expectReported(errors: Setup['errors'], group: string, liteTopic: string, offset: number): void {
  const found = errors.filter(
    ({ error }) => error instanceof CorruptMessageError && error.liteTopic === liteTopic && error.offset === offset,
  );
  expect(found).toHaveLength(1);
  const { error, during } = found[0] as { error: CorruptMessageError; during: string };
  expect(error).toBeInstanceOf(LogCorruptError);
  expect(error.code).toBe('LOG_CORRUPT');
  expect(error.group).toBe(group);
  expect(during).toBe('message read');
}

describe.each(ENGINES)('%s engine', (engine) => {
  describe('FIFO groups, a store failing chosen reads', () => {
    it('delivers the healthy messages of the POP, reports the corrupt one once, holds its lite topic', async () => {
      const { broker, store, errors, advance } = await corruptingBroker(engine);
      broker.createGroup('g', { bindTopic: 'agents' });
      const consumer = broker.consumer({ group: 'g', clientId: 'c' });
      await consumer.subscribe(['a', 'b', 'c']);
      for (const lite of ['a', 'b', 'c']) await send(broker, lite, 3);
      store.corrupt('a', 1);

      const first = await consumer.pop({ maxNum: 32 });
      // Everything but a#1 and what follows it in a: the POP did not throw, other lite topics flowed.
      expect(bodies(first).sort()).toEqual(['a#0', 'b#0', 'b#1', 'b#2', 'c#0', 'c#1', 'c#2']);
      expect(first.every((m) => m.reconsumeTimes === 0)).toBe(true);
      expectReported(errors, 'g', 'a', 1);
      for (const m of first) await consumer.ack(m);

      const listed = broker.admin.groupInfo('g').corrupt;
      expect(listed).toMatchObject([{ group: 'g', liteTopic: 'a', offset: 1, failures: 1 }]);
      expect(broker.admin.liteTopicInfo('agents', 'a')?.corrupt).toMatchObject([{ group: 'g', offset: 1 }]);
      expect(broker.admin.liteTopicInfo('agents', 'b')?.corrupt).toEqual([]);
      expect(broker.admin.groupInfo('g', { liteTopic: 'a' }).liteTopic?.committedOffset).toBe(1);

      // Held: more POPs do not read it again, and other lite topics still flow.
      const hits = store.hitsOf('a', 1);
      await send(broker, 'b', 1, 3);
      expect(await popAll(consumer)).toEqual(['b#3']);
      expect(await popAll(consumer)).toEqual([]);
      expect(store.hitsOf('a', 1)).toBe(hits);
      expect(broker.admin.brokerInfo().inflight).toBe(0);

      // At its retry time one POP reads it again; still corrupt, it waits longer, reported only once.
      advance(CORRUPT_RETRY_FIRST_MS);
      expect(await popAll(consumer)).toEqual([]);
      const retried = store.hitsOf('a', 1);
      expect(retried).toBeGreaterThan(hits);
      expect(await popAll(consumer)).toEqual([]);
      advance(CORRUPT_RETRY_FIRST_MS); // the pause doubled: not yet
      expect(await popAll(consumer)).toEqual([]);
      expect(store.hitsOf('a', 1)).toBe(retried);
      expect(errors).toHaveLength(1);
      const again = broker.admin.groupInfo('g').corrupt[0];
      expect(again?.failures).toBe(2);
      expect((again?.retryAt ?? 0) - (again?.foundAt ?? 0)).toBeGreaterThan(CORRUPT_RETRY_FIRST_MS);

      // Skipped: the lite topic goes on in order, a#2 never charged for the POP that released it.
      await broker.admin.skipCorrupt('g', 'a', 1);
      const after = await consumer.pop({ maxNum: 32 });
      expect(bodies(after)).toEqual(['a#2']);
      expect(after[0]?.reconsumeTimes).toBe(0);
      await consumer.ack(after[0] as (typeof after)[0]);
      await send(broker, 'a', 2, 3);
      expect(await popAll(consumer)).toEqual(['a#3', 'a#4']);
      expect(broker.admin.groupInfo('g').corrupt).toEqual([]);
      expect(broker.admin.groupInfo('g').totalLag).toBe(0);
      expect(errors).toHaveLength(1);
    });

    it('a record that reads again at its retry is delivered in order, uncharged', async () => {
      const { broker, store, errors, advance } = await corruptingBroker(engine);
      broker.createGroup('g', { bindTopic: 'agents' });
      const consumer = broker.consumer({ group: 'g', clientId: 'c' });
      await consumer.subscribe(['a']);
      await send(broker, 'a', 4);
      store.corrupt('a', 2);
      expect(await popAll(consumer)).toEqual(['a#0', 'a#1']);
      expectReported(errors, 'g', 'a', 2);
      store.heal('a', 2);
      expect(await popAll(consumer)).toEqual([]);
      advance(CORRUPT_RETRY_FIRST_MS);
      const healed = await consumer.pop({ maxNum: 32 });
      expect(bodies(healed)).toEqual(['a#2', 'a#3']);
      expect(healed.map((m) => m.reconsumeTimes)).toEqual([0, 0]);
      expect(broker.admin.groupInfo('g').corrupt).toEqual([]);
    });

    it('a redelivery meeting bit rot keeps its attempts: nothing after it is charged or burned', async () => {
      const { broker, store, errors, advance } = await corruptingBroker(engine);
      broker.createGroup('g', { bindTopic: 'agents' });
      const consumer = broker.consumer({ group: 'g', clientId: 'c' });
      await consumer.subscribe(['a']);
      await send(broker, 'a', 3);
      expect(bodies(await consumer.pop({ maxNum: 32, invisibleTimeMs: 5_000 }))).toEqual(['a#0', 'a#1', 'a#2']);
      store.corrupt('a', 1); // rots while in flight
      advance(5_000);
      const redelivered = await consumer.pop({ maxNum: 32, invisibleTimeMs: 5_000 });
      expect(bodies(redelivered)).toEqual(['a#0']);
      expect(redelivered[0]?.reconsumeTimes).toBe(1);
      expectReported(errors, 'g', 'a', 1);
      await consumer.ack(redelivered[0] as (typeof redelivered)[0]);
      expect(await popAll(consumer)).toEqual([]);
      await broker.admin.skipCorrupt('g', 'a', 1);
      const rest = await consumer.pop({ maxNum: 32 });
      expect(bodies(rest)).toEqual(['a#2']);
      expect(rest[0]?.reconsumeTimes).toBe(1); // its second delivery, not its third
    });

    it('a message due for the dead letters whose record rotted holds its lite topic instead of failing each POP', async () => {
      const { broker, store, errors, advance } = await corruptingBroker(engine);
      broker.createGroup('g', { bindTopic: 'agents', maxReconsumeTimes: 0 });
      const consumer = broker.consumer({ group: 'g', clientId: 'c' });
      await consumer.subscribe(['a', 'b']);
      await send(broker, 'a', 2);
      expect(bodies(await consumer.pop({ maxNum: 1, invisibleTimeMs: 5_000 }))).toEqual(['a#0']);
      store.corrupt('a', 0);
      advance(5_000);
      // Its next delivery would exceed maxReconsumeTimes: the move to the dead letters cannot read it.
      expect(await popAll(consumer)).toEqual([]);
      await new Promise((resolve) => setImmediate(resolve));
      expectReported(errors, 'g', 'a', 0);
      const hits = store.hitsOf('a', 0);
      await send(broker, 'b', 1);
      expect(await popAll(consumer)).toEqual(['b#0']);
      expect(await popAll(consumer)).toEqual([]);
      await new Promise((resolve) => setImmediate(resolve));
      expect(store.hitsOf('a', 0)).toBe(hits);
      expect(broker.admin.groupInfo('g').corrupt).toMatchObject([{ liteTopic: 'a', offset: 0 }]);
      await broker.admin.skipCorrupt('g', 'a', 0);
      expect(await popAll(consumer)).toEqual(['a#1']);
      expect(broker.readDeadLetters('g')).toEqual([]);
      expect(errors).toHaveLength(1);
    });

    it('refuses to skip an offset that is not held as corrupt, and changes nothing', async () => {
      const { broker, store } = await corruptingBroker(engine);
      broker.createGroup('g', { bindTopic: 'agents' });
      const consumer = broker.consumer({ group: 'g', clientId: 'c' });
      await consumer.subscribe(['a', 'b']);
      await send(broker, 'a', 3);
      await send(broker, 'b', 2);
      // Nothing corrupt yet: skipping a healthy message is refused.
      await expect(broker.admin.skipCorrupt('g', 'a', 0)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      store.corrupt('a', 1);
      expect(await popAll(consumer, false)).toEqual(['a#0', 'b#0', 'b#1']);
      const before = broker.admin.groupInfo('g');
      for (const [lite, offset] of [
        ['a', 0],
        ['a', 2],
        ['b', 1],
        ['nope', 1],
      ] as const) {
        await expect(broker.admin.skipCorrupt('g', lite, offset)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      }
      await expect(broker.admin.skipCorrupt('g', 'a', -1)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      await expect(broker.admin.skipCorrupt('nope', 'a', 1)).rejects.toMatchObject({ code: 'GROUP_NOT_FOUND' });
      expect(broker.admin.groupInfo('g')).toEqual(before);
      expect(broker.admin.brokerInfo().inflight).toBe(3);
      expect(await popAll(consumer)).toEqual([]);
    });
  });

  describe('key-shared groups', () => {
    it('stop at a corrupt record found while reading keys; the others flow; a skip resumes in key order', async () => {
      const { broker, store, errors } = await corruptingBroker(engine);
      broker.createGroup('ks', { bindTopic: 'agents', subModel: 'shared', keyShared: { buckets: 16 } });
      const consumer = broker.consumer({ group: 'ks', clientId: 'c' });
      await consumer.subscribe(['k', 'h']);
      store.corrupt('k', 3);
      await send(broker, 'k', 6, 0, (i) => `key-${i % 2}`);
      await send(broker, 'h', 2, 0, (i) => `key-${i}`);
      // One POP mixing the held lite topic with a healthy one: both give what they can. The corrupt
      // record is met while the group reads keys into its window, which stops before it.
      expect((await popAll(consumer)).sort()).toEqual(['h#0', 'h#1', 'k#0', 'k#1', 'k#2']);
      expectReported(errors, 'ks', 'k', 3);
      const hits = store.hitsOf('k', 3);
      await send(broker, 'k', 1, 6, () => 'key-0');
      expect(await popAll(consumer)).toEqual([]);
      expect(store.hitsOf('k', 3)).toBe(hits);
      expect(broker.admin.groupInfo('ks').corrupt).toMatchObject([{ liteTopic: 'k', offset: 3 }]);
      await broker.admin.skipCorrupt('ks', 'k', 3);
      expect(await popAll(consumer)).toEqual(['k#4', 'k#5', 'k#6']);
      expect(broker.admin.groupInfo('ks').totalLag).toBe(0);
      expect(errors).toHaveLength(1);
    });

    it('a record whose key could not be read joins the window when it reads again, in key order', async () => {
      const { broker, store, errors, advance } = await corruptingBroker(engine);
      broker.createGroup('ks', { bindTopic: 'agents', subModel: 'shared', keyShared: { buckets: 16 } });
      const consumer = broker.consumer({ group: 'ks', clientId: 'c' });
      await consumer.subscribe(['k']);
      store.corrupt('k', 1);
      await send(broker, 'k', 4, 0, (i) => `key-${i % 2}`);
      expect(await popAll(consumer)).toEqual(['k#0']);
      expectReported(errors, 'ks', 'k', 1);
      store.heal('k', 1);
      advance(CORRUPT_RETRY_FIRST_MS);
      const healed = await consumer.pop({ maxNum: 32 });
      expect(bodies(healed)).toEqual(['k#1', 'k#2', 'k#3']);
      expect(healed.every((m) => m.reconsumeTimes === 0)).toBe(true);
      expect(broker.admin.groupInfo('ks').corrupt).toEqual([]);
      expect(errors).toHaveLength(1);
    });

    it('a record that rots after its key was read: what the POP read is delivered, the rest released', async () => {
      const { broker, store, errors, advance } = await corruptingBroker(engine);
      broker.createGroup('ks', { bindTopic: 'agents', subModel: 'shared', keyShared: { buckets: 16 } });
      const consumer = broker.consumer({ group: 'ks', clientId: 'c' });
      await consumer.subscribe(['k', 'h']);
      await send(broker, 'k', 6, 0, (i) => `key-${i % 3}`);
      await send(broker, 'h', 2);
      // The keys are read while the messages arrive; the record rots before the POP reads it.
      store.corrupt('k', 2);
      const popped = await consumer.pop({ maxNum: 32 });
      expect(bodies(popped).sort()).toEqual(['h#0', 'h#1', 'k#0', 'k#1']);
      expectReported(errors, 'ks', 'k', 2);
      for (const m of popped) await consumer.ack(m);
      expect(await popAll(consumer)).toEqual([]);
      expect(broker.admin.brokerInfo().inflight).toBe(0);
      store.heal('k', 2);
      advance(CORRUPT_RETRY_FIRST_MS);
      const healed = await consumer.pop({ maxNum: 32 });
      expect(bodies(healed)).toEqual(['k#2', 'k#3', 'k#4', 'k#5']);
      expect(healed.every((m) => m.reconsumeTimes === 0)).toBe(true);
      expect(broker.admin.groupInfo('ks').corrupt).toEqual([]);
    });
  });

  describe.each([
    ['a FIFO group', false],
    ['a key-shared group', true],
  ])('a data directory with a flipped bit, %s', (_, keyShared) => {
    it('holds the lite topic at the damaged record, flows the rest, and a skip survives a restart', async () => {
      const dir = tempDir();
      const clock = new ManualClock();
      const open = async () => {
        const broker = await Broker.open({ dir, engine, clock, segmentBytes: 64 * 1024 });
        const errors: Setup['errors'] = [];
        broker.on('error', (error: unknown, info: { during: string }) => errors.push({ error, during: info.during }));
        return { broker, errors };
      };
      const { broker: first } = await open();
      first.createTopic('agents');
      first.createGroup('g', { bindTopic: 'agents', ...(keyShared ? { keyShared: { buckets: 16 } } : {}) });
      const setup = first.consumer({ group: 'g', clientId: 'c' });
      await setup.subscribe(['a', 'b', 'c']);
      const ids = new Map<string, string>();
      for (const lite of ['a', 'b', 'c']) {
        for (let i = 0; i < 3; i++) {
          const sent = await first.send('agents', {
            liteTopic: lite,
            key: `key-${i % 2}`,
            body: `${lite}#${i}-payload`,
          });
          ids.set(`${lite}#${i}`, sent.messageId);
        }
      }
      await first.close(); // a clean close: the checkpoint covers every record, recovery reads none
      flipBodyByte(dir, Number.parseInt(ids.get('a#1') as string, 16));

      const { broker: second, errors } = await open();
      const consumer = second.consumer({ group: 'g', clientId: 'c' });
      await consumer.subscribe(['a', 'b', 'c']);
      const popped = await popAll(consumer);
      expect(popped.sort()).toEqual([
        'a#0-payload',
        'b#0-payload',
        'b#1-payload',
        'b#2-payload',
        'c#0-payload',
        'c#1-payload',
        'c#2-payload',
      ]);
      expectReported(errors, 'g', 'a', 1);
      const listed = second.admin.liteTopicInfo('agents', 'a')?.corrupt;
      expect(listed).toMatchObject([
        { group: 'g', offset: 1, position: Number.parseInt(ids.get('a#1') as string, 16) },
      ]);
      expect(await popAll(consumer)).toEqual([]);
      await second.admin.skipCorrupt('g', 'a', 1);
      await second.close();

      const { broker: third, errors: later } = await open();
      const again = third.consumer({ group: 'g', clientId: 'c' });
      await again.subscribe(['a', 'b', 'c']);
      await third.send('agents', { liteTopic: 'a', key: 'key-1', body: 'a#3-payload' });
      expect(await popAll(again)).toEqual(['a#2-payload', 'a#3-payload']);
      expect(later).toEqual([]);
      expect(third.admin.groupInfo('g').corrupt).toEqual([]);
      await third.close();
    });
  });
});

describe('a key-shared window restored by a restart', () => {
  it('keeps a record it finds corrupt while indexing held, out of every bucket, until a read of it works', () => {
    const corrupt = 3;
    let healed = false;
    const store = {
      read(_lmq: string, from: number, maxNum: number) {
        const out = [];
        for (let offset = from; offset < Math.min(from + maxNum, 10); offset++) {
          if (offset === corrupt && !healed) throw new LogCorruptError('bad checksum', { position: offset });
          out.push({ offset, key: `k${offset % 2}` });
        }
        return out;
      },
      maxOffset: () => 10,
    } as unknown as Parameters<typeof readAround>[0];
    const progress = new KeySharedProgress(0, 'hot', 16, 100);
    progress.restore(5, 1, 0, false); // deliveries replayed up to offset 5: keys not read yet
    const load = (from: number, maxNum: number) =>
      readAround(store, 'lmq', from, maxNum, (offset) => progress.hold(offset, 1_000, () => new Error('bad') as never));
    const owners = new Array(16).fill(undefined);
    progress.withheld(1_000, owners, load);
    expect(progress.corruptHold(corrupt)).toBeDefined();
    // Indexing again before the retry time changes nothing: the record stays held, its key unknown.
    progress.withheld(1_500, owners, load);
    expect(progress.corruptHold(corrupt)).toMatchObject({ failures: 1 });
    // Once its retry time has come and the read works, it joins its bucket and is held no more.
    healed = true;
    progress.withheld(1_000 + CORRUPT_RETRY_FIRST_MS, owners, load);
    expect(progress.corruptHold(corrupt)).toBeUndefined();
  });
});

describe('the skip journal record', () => {
  it('replays as an ack of an offset never handed out, and a malformed one is refused as corruption', () => {
    const group = { bindTopic: 'agents', subModel: 'shared', wildcard: false, maxReconsumeTimes: 16, dialect: 'lite' };
    const base = [
      ['group', 'g', group],
      ['start', 'g', 'a', 0],
      ['deliver', 'g', 'a', [0, 0, 1]],
      ['ack', 'g', 'a', 0],
    ];
    const skipped = replay([...base, ['skip', 'g', 'a', 1]])
      .progress.get('g')
      ?.get('a');
    expect(skipped?.committed).toBe(2);
    expect(skipped?.next).toBe(2);
    // Like every record of a known kind, a skip whose fields are not what the writer writes is damage.
    for (const bad of [
      ['skip', 'g', 'a', -1],
      ['skip', 'g', 'a', 1.5],
      ['skip', 'g', 'a', '1'],
      ['skip', 'g', 7, 1],
      ['skip', 'g', 'a'],
    ]) {
      expect(() => replay([...base, bad], 'broker-state')).toThrow(expect.objectContaining({ code: 'LOG_CORRUPT' }));
    }
  });
});

/** Flips the last byte of the body of the record at `position` in its segment file. */
function flipBodyByte(dir: string, position: number): void {
  const segments = join(dir, 'log', 'segments');
  const bases = readdirSync(segments)
    .filter((name) => name.endsWith('.seg'))
    .map((name) => Number.parseInt(name, 10))
    .filter((base) => base <= position)
    .sort((a, b) => b - a);
  const base = bases[0] as number;
  const fd = openSync(join(segments, `${String(base).padStart(20, '0')}.seg`), 'r+');
  try {
    const header = Buffer.alloc(8);
    readSync(fd, header, 0, 8, position - base);
    expect(header.readUInt32LE(0)).toBe(0x3152544c); // `LTR1`
    const last = position - base + header.readUInt32LE(4) - 1;
    const byte = Buffer.alloc(1);
    readSync(fd, byte, 0, 1, last);
    byte[0] = (byte[0] as number) ^ 0x01;
    writeSync(fd, byte, 0, 1, last);
  } finally {
    closeSync(fd);
  }
}
