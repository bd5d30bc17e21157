/**
 * The broker's message stores with the caller's per-LMQ keeper (ts/broker/store.ts `LmqKeeper`): a
 * keeper only spares the store a lookup, so every store answers the same with it as without it, after
 * the LMQ is deleted and started again, when the keeper is handed another LMQ's name, and when it
 * comes from another store. The memory store, the commit log on each engine, and what each engine
 * stores in without a directory (the native log in memory, the js engine's memory store).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type LmqKeeper, MemoryStore, type MessageStore, openStore } from '../ts/broker/store.js';
import { ClosedError, type StoredMessage } from '../ts/index.js';
import { ManualClock, tempDir } from './broker-helpers.js';
import { ENGINES } from './engines.js';

const KINDS = [
  'memory',
  ...ENGINES.map((engine) => `${engine} log` as const),
  ...ENGINES.map((engine) => `${engine} without a directory` as const),
] as const;

const opened: MessageStore[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
});

async function open(kind: (typeof KINDS)[number]): Promise<MessageStore> {
  const clock = new ManualClock();
  const engine = kind.startsWith('native') ? 'native' : 'js';
  const store =
    kind === 'memory'
      ? new MemoryStore(clock)
      : await openStore(kind.endsWith(' log') ? tempDir() : undefined, { clock, engine });
  opened.push(store);
  return store;
}

const text = (messages: { offset: number; body: Uint8Array }[]) =>
  messages.map((m) => `${m.offset}:${Buffer.from(m.body).toString()}`);

/** What `read` with `keeper` returns, once checked against `readMany` with it among other requests. */
function readWith(store: MessageStore, lmq: string, from: number, max: number, keeper: LmqKeeper): string[] {
  const one = text(store.read(lmq, from, max, keeper));
  const many = store.readMany([
    { lmq: 'none', fromOffset: 0, maxNum: 1 },
    { lmq, fromOffset: from, maxNum: max, keeper },
  ]);
  expect(text(many[1] ?? [])).toEqual(one);
  return one;
}

async function send(store: MessageStore, lmq: string, bodies: string[], keeper?: LmqKeeper): Promise<number[]> {
  const results = await store.append(
    bodies.map((body) => ({ lmqs: [lmq], body, keepers: keeper === undefined ? undefined : [keeper] })),
  );
  return results.map((result) => result.offsets[0] as number);
}

describe.each(KINDS)('%s store', (kind) => {
  it('answers the same with a keeper as by name alone, across deletion, other names and other stores', async () => {
    const store = await open(kind);
    const keeper: LmqKeeper = { storeState: undefined };
    expect(await send(store, 'L1', ['a', 'b', 'c'], keeper)).toEqual([0, 1, 2]);
    expect(await send(store, 'L2', ['x'])).toEqual([0]);
    expect(readWith(store, 'L1', 1, 10, keeper)).toEqual(['1:b', '2:c']);
    expect(text(store.read('L1', 1, 10))).toEqual(['1:b', '2:c']);
    expect(text(store.readMany([{ lmq: 'L1', fromOffset: 0, maxNum: 2, keeper }])[0] ?? [])).toEqual(['0:a', '1:b']);
    // Handed another LMQ's name, the keeper does not answer for it.
    expect(readWith(store, 'L2', 0, 10, keeper)).toEqual(['0:x']);
    expect(readWith(store, 'L1', 0, 1, keeper)).toEqual(['0:a']);

    // Deleted and started again: the keeper answers for the new LMQ, not the deleted one.
    expect(await store.deleteLmqs(['L1'])).toEqual([true]);
    expect(readWith(store, 'L1', 0, 10, keeper)).toEqual([]);
    expect(await send(store, 'L1', ['d'], keeper)).toEqual([0]);
    expect(readWith(store, 'L1', 0, 10, keeper)).toEqual(['0:d']);
    expect(store.maxOffset('L1')).toBe(1);

    // One LMQ named several times in one call, by keepers new and old and by name alone.
    const fresh: LmqKeeper = { storeState: undefined };
    const requests = [fresh, keeper, undefined, fresh, { storeState: undefined }].map((by, i) => ({
      lmq: i % 2 === 0 ? 'L3' : 'L1',
      fromOffset: 0,
      maxNum: 5,
      keeper: by,
    }));
    await send(store, 'L3', ['m', 'n']);
    // Twice: first as the keepers take their state, then as they hold it.
    for (let pass = 0; pass < 2; pass++) {
      expect(store.readMany(requests).map(text)).toEqual([
        ['0:m', '1:n'],
        ['0:d'],
        ['0:m', '1:n'],
        ['0:d'],
        ['0:m', '1:n'],
      ]);
    }

    // Another store of the same kind, handed this keeper, answers for itself.
    const other = await open(kind);
    expect(readWith(other, 'L1', 0, 10, keeper)).toEqual([]);
    expect(await send(other, 'L1', ['e', 'f'], keeper)).toEqual([0, 1]);
    expect(readWith(store, 'L1', 0, 10, keeper)).toEqual(['0:d']);
    expect(readWith(other, 'L1', 0, 10, keeper)).toEqual(['0:e', '1:f']);
  });
});

describe('memory store by offset', () => {
  it('hands out by offset what a read of one message holds, across deletion and other stores', async () => {
    const store = (await open('memory')) as MemoryStore;
    const keeper: LmqKeeper = { storeState: undefined };
    await send(store, 'L1', ['a', 'b', 'c'], keeper);
    const one = (offset: number, by?: LmqKeeper) => store.read('L1', offset, 1, by)[0];
    for (const offset of [0, 1, 2, 3, 7]) {
      expect(store.messageAt('L1', offset, keeper)).toBe(one(offset, keeper));
      expect(store.messageAt('L1', offset)).toBe(one(offset));
    }
    expect(store.messageAt('L2', 0, keeper)).toBeUndefined();
    expect(await store.deleteLmqs(['L1'])).toEqual([true]);
    expect(store.messageAt('L1', 0, keeper)).toBeUndefined();
    await send(store, 'L1', ['d'], keeper);
    expect(text([store.messageAt('L1', 0, keeper) as StoredMessage])).toEqual(['0:d']);
    const other = (await open('memory')) as MemoryStore;
    expect(other.messageAt('L1', 0, keeper)).toBeUndefined();
    await store.close();
    expect(() => store.messageAt('L1', 0, keeper)).toThrow(ClosedError);
  });
});
