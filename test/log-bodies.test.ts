/**
 * `CommitLog.appendBodies` and `readBodies` on every engine: body-only records given flat are stored
 * as `append` stores them, offsets run on across both forms and restart after a deletion, the
 * caller's arrays may change as soon as the call returns, a bad batch stores nothing, and a read of
 * bodies returns what `read` returns of them.
 */
import { describe, expect, it } from 'vitest';
import { type BodyBatch, type BodyReadResult, InvalidArgumentError, MAX_LMQ_NAME_BYTES } from '../ts/index.js';
import { ENGINES } from './engines.js';
import { bodyBatch as batchOf } from './log-body.js';
import { bodyFor, ManualClock, openLog, tempDir } from './log-helpers.js';

describe.each(ENGINES)('%s engine', (engine) => {
  it('stores body-only records as append stores them, and says where each went', async () => {
    const clock = new ManualClock();
    const log = await openLog(tempDir(), engine, { clock });
    const lmqs = ['%LMQ%$agents$t1__a1', 'ü-queue', '%LMQ%$agents$t1__a2'];
    const result = await log.appendBodies(
      batchOf(lmqs, [
        [0, 'first'],
        [1, Buffer.from([0, 1, 255])],
        [0, ''],
        [2, 'héllo'],
      ]),
    );
    expect([...result.offsets]).toEqual([0, 0, 1, 0]);
    const [first, empty] = log.read('%LMQ%$agents$t1__a1', 0, 10);
    expect(first).toMatchObject({
      lmq: '%LMQ%$agents$t1__a1',
      offset: 0,
      position: result.positions[0],
      storeTimestamp: clock.ms,
      bornTimestamp: clock.ms,
      key: undefined,
      tag: undefined,
      properties: {},
    });
    expect(first?.body.toString()).toBe('first');
    expect(empty).toMatchObject({ offset: 1, position: result.positions[2] });
    expect(empty?.body.length).toBe(0);
    expect([...(log.read('ü-queue', 0, 10)[0]?.body ?? [])]).toEqual([0, 1, 255]);
    expect(log.read('%LMQ%$agents$t1__a2', 0, 10)[0]?.body.toString()).toBe('héllo');
    const positions = [...result.positions];
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    expect(new Set(positions).size).toBe(positions.length);
  });

  it('runs offsets on across append and appendBodies, and restarts them after a deletion', async () => {
    const dir = tempDir();
    let log = await openLog(dir, engine);
    const lmqs = ['a', 'b'];
    await log.append([{ lmqs: ['a'], body: 'x' }]);
    expect([...(await log.appendBodies(batchOf(lmqs, [[0, 'y']]))).offsets]).toEqual([1]);
    expect((await log.append([{ lmqs: ['a', 'b'], body: 'z' }]))[0]?.offsets).toEqual([2, 0]);
    expect(await log.deleteLmq('a')).toBe(true);
    expect([
      ...(
        await log.appendBodies(
          batchOf(lmqs, [
            [0, 'after'],
            [1, 'b1'],
          ]),
        )
      ).offsets,
    ]).toEqual([0, 1]);
    await log.close();
    log = await openLog(dir, engine);
    expect([...(await log.appendBodies(batchOf(lmqs, [[0, 'reopened']]))).offsets]).toEqual([1]);
    expect(log.read('a', 0, 10).map((m) => m.body.toString())).toEqual(['after', 'reopened']);
    expect(log.read('b', 0, 10).map((m) => m.body.toString())).toEqual(['z', 'b1']);
  });

  it('takes keepers for its LMQ names, and appends and reads with them as without', async () => {
    const log = await openLog(tempDir(), engine);
    const keepers = [{ storeState: undefined }, undefined, { storeState: undefined }];
    const lmqs = ['k0', 'plain', 'k2'];
    const batch = (n: number) => ({
      ...batchOf(lmqs, [
        [0, `a${n}`],
        [1, `b${n}`],
        [2, `c${n}`],
      ]),
      keepers,
    });
    expect([...(await log.appendBodies(batch(0))).offsets]).toEqual([0, 0, 0]);
    expect([...(await log.appendBodies(batch(1))).offsets]).toEqual([1, 1, 1]);
    expect(await log.deleteLmqs(['k2'])).toEqual([true]);
    expect([...(await log.appendBodies(batch(2))).offsets]).toEqual([2, 2, 0]);
    const read = log.readMany(lmqs.map((lmq, i) => ({ lmq, fromOffset: 0, maxNum: 9, keeper: keepers[i] })));
    expect(read.map((messages) => messages.map((m) => m.body.toString()))).toEqual([
      ['a0', 'a1', 'a2'],
      ['b0', 'b1', 'b2'],
      ['c2'],
    ]);
    await log.close();
  });

  it('looks names up again when the table changes between batches', async () => {
    const log = await openLog(tempDir(), engine);
    const lmqs = ['one', 'two'];
    await log.appendBodies(batchOf(lmqs, [[0, 'to one']]));
    lmqs[0] = 'three';
    await log.appendBodies(batchOf(lmqs, [[0, 'to three']]));
    expect(log.read('one', 0, 10).map((m) => m.body.toString())).toEqual(['to one']);
    expect(log.read('three', 0, 10).map((m) => m.body.toString())).toEqual(['to three']);
  });

  it('reads the arrays before it returns, even when the write waits for a segment', async () => {
    const log = await openLog(tempDir(), engine, { segmentBytes: 4096 });
    const lmqs = ['q'];
    const records: [number, Buffer][] = Array.from({ length: 200 }, (_, i) => [0, bodyFor('q', i)]);
    const batch = batchOf(lmqs, records);
    const appending = log.appendBodies(batch);
    batch.bodies.fill(0);
    batch.bodyEnds.fill(0);
    lmqs[0] = 'other';
    const result = await appending;
    expect(log.stats().segments).toBeGreaterThan(2);
    expect(log.read('q', 0, 1000).map((m) => m.body.toString())).toEqual(records.map(([, body]) => body.toString()));
    expect([...result.offsets]).toEqual(records.map((_, i) => i));
    expect(log.maxOffset('other')).toBe(0);
  });

  const refused: [string, (lmqs: string[]) => BodyBatch][] = [
    ['no records', (lmqs) => ({ ...batchOf(lmqs, []) })],
    ['an LMQ index outside the table', (lmqs) => batchOf(lmqs, [[lmqs.length, 'x']])],
    [
      'body ends that go back',
      (lmqs) => ({
        ...batchOf(lmqs, [
          [0, 'ab'],
          [0, 'c'],
        ]),
        bodyEnds: Uint32Array.of(2, 1),
      }),
    ],
    ['a body past the bytes given', (lmqs) => ({ ...batchOf(lmqs, [[0, 'ab']]), bodyEnds: Uint32Array.of(3) })],
    [
      'fewer body ends than records',
      (lmqs) => ({
        ...batchOf(lmqs, [
          [0, 'a'],
          [0, 'b'],
        ]),
        bodyEnds: Uint32Array.of(1),
      }),
    ],
    [
      'an empty LMQ name',
      () =>
        batchOf(
          ['ok', ''],
          [
            [0, 'fine'],
            [1, 'x'],
          ],
        ),
    ],
    [
      'an LMQ name with NUL',
      () =>
        batchOf(
          ['ok', 'a\0b'],
          [
            [0, 'fine'],
            [1, 'x'],
          ],
        ),
    ],
    [
      'an LMQ name of a lone surrogate',
      () =>
        batchOf(
          ['ok', '\uD800'],
          [
            [0, 'fine'],
            [1, 'x'],
          ],
        ),
    ],
    [
      'an LMQ name too long',
      () =>
        batchOf(
          ['ok', 'n'.repeat(MAX_LMQ_NAME_BYTES + 1)],
          [
            [0, 'fine'],
            [1, 'x'],
          ],
        ),
    ],
    [
      'an LMQ name that is not a string',
      () =>
        batchOf(
          ['ok', 7 as unknown as string],
          [
            [0, 'fine'],
            [1, 'x'],
          ],
        ),
    ],
    [
      'a record larger than a segment',
      (lmqs) =>
        batchOf(lmqs, [
          [0, 'fine'],
          [0, Buffer.alloc(5000)],
        ]),
    ],
    ['lmqIndex that is not a Uint32Array', (lmqs) => ({ ...batchOf(lmqs, [[0, 'x']]), lmqIndex: [0] as never })],
    ['keepers that are not an array', (lmqs) => ({ ...batchOf(lmqs, [[0, 'x']]), keepers: 'k' as never })],
    ['a keeper that is not an object', (lmqs) => ({ ...batchOf(lmqs, [[0, 'x']]), keepers: [7 as never] })],
    [
      'more keepers than LMQ names',
      (lmqs) => ({ ...batchOf(lmqs, [[0, 'x']]), keepers: [{ storeState: undefined }, {}] as never }),
    ],
  ];
  it.each(refused)('refuses %s and stores nothing', async (_, make) => {
    const log = await openLog(tempDir(), engine, { segmentBytes: 4096 });
    await expect(log.appendBodies(make(['ok']))).rejects.toThrow(InvalidArgumentError);
    expect(log.stats().indexEntries).toBe(0);
    expect(log.lmqCount).toBe(0);
    // The log goes on: a good batch after a refused one is stored whole.
    await log.appendBodies(batchOf(['ok'], [[0, 'after']]));
    expect(log.read('ok', 0, 10).map((m) => m.body.toString())).toEqual(['after']);
  });

  it('reads the bodies read returns, with their positions and offsets, whatever the records hold', async () => {
    const log = await openLog(tempDir(), engine);
    await log.append([
      { lmqs: ['other', 'q'], body: 'shared', key: 'k', tag: 't', properties: { a: 'b', ü: 'ç' } },
      { lmqs: ['q'], body: Buffer.alloc(0) },
    ]);
    await log.appendBodies(
      batchOf(
        ['q', 'other'],
        [
          [0, 'flat'],
          [1, 'not q'],
          [0, Buffer.from([0, 255])],
        ],
      ),
    );
    for (const [from, max] of [
      [0, 100],
      [1, 2],
      [3, 1],
      [4, 10],
    ] as const) {
      const messages = log.read('q', from, max);
      const read = log.readBodies('q', from, max);
      expect(read.count).toBe(messages.length);
      expect(read.firstOffset).toBe(messages[0]?.offset ?? from);
      expect([...read.positions]).toEqual(messages.map((m) => m.position));
      let start = 0;
      const bodies = [...read.bodyEnds].map((end) => {
        const body = read.bodies.subarray(start, end);
        start = end;
        return [...body];
      });
      expect(bodies).toEqual(messages.map((m) => [...m.body]));
      expect(read.bodies.length).toBe(start);
    }
    expect(log.readBodies('nothing', 0, 10)).toMatchObject({ count: 0, firstOffset: 0 });
    expect(() => log.readBodies('q', 0, 0)).toThrow(InvalidArgumentError);
    expect(() => log.readBodies('q', -1, 1)).toThrow(InvalidArgumentError);
  });

  it('reads into a buffer the caller keeps when the read fits, into new memory when it may not', async () => {
    const log = await openLog(tempDir(), engine);
    await log.append([{ lmqs: ['q', 'other'], body: 'with a key', key: 'k', tag: 't', properties: { a: 'b' } }]);
    const bodies: [number, string][] = Array.from({ length: 40 }, (_, i) => [i % 2, `body ${i} `.repeat(i % 5)]);
    await log.appendBodies(batchOf(['q', 'other'], bodies));
    const plain = (read: BodyReadResult) => {
      let start = 0;
      return {
        count: read.count,
        firstOffset: read.firstOffset,
        positions: [...read.positions],
        bodies: [...read.bodyEnds].map((end) => {
          const body = read.bodies.subarray(start, end).toString();
          start = end;
          return body;
        }),
      };
    };
    const memory = new ArrayBuffer(64 * 1024);
    // Every alignment of the caller's buffer: the result's arrays are laid out from the next 8 bytes.
    for (const skip of [0, 1, 3, 8]) {
      const into = new Uint8Array(memory, skip);
      for (const [from, max] of [
        [0, 100],
        [2, 5],
        [19, 1],
        [30, 10],
      ] as const) {
        const read = log.readBodies('q', from, max, into);
        expect(plain(read)).toEqual(plain(log.readBodies('q', from, max)));
        expect(read.bodies.buffer).toBe(memory);
        expect(read.positions.buffer).toBe(memory);
        expect(read.bodyEnds.buffer).toBe(memory);
      }
    }
    // Too small for the read: new memory, the same messages.
    const small = new Uint8Array(16);
    const read = log.readBodies('q', 0, 100, small);
    expect(plain(read)).toEqual(plain(log.readBodies('q', 0, 100)));
    expect(read.bodies.buffer).not.toBe(small.buffer);
    expect(small.every((byte) => byte === 0)).toBe(true);
    expect(() => log.readBodies('q', 0, 1, [] as never)).toThrow(InvalidArgumentError);
  });

  it('resolves once durable under flush: sync', async () => {
    const log = await openLog(tempDir(), engine, { flush: 'sync' });
    await log.appendBodies(batchOf(['q'], [[0, 'durable']]));
    expect(log.stats().durablePosition).toBe(log.stats().writePosition);
  });
});
