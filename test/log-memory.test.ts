/**
 * The commit log in anonymous memory (`CommitLog.openInMemory`): on an engine that has one, the same
 * answers as the same engine's log on disk for the same calls, each log its own, nothing left after
 * close; an engine without one says so with undefined (the broker then keeps a `MemoryStore`).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ClosedError, CommitLog, InvalidArgumentError } from '../ts/index.js';
import { ENGINES } from './engines.js';
import { ManualClock, openLog, tempDir } from './log-helpers.js';

const opened: CommitLog[] = [];
afterEach(async () => {
  for (const log of opened.splice(0)) await log.close();
});

/** The same calls on `log`, with what each answered (bodies as text). */
async function exercise(log: CommitLog, clock: ManualClock): Promise<unknown[]> {
  const text = (messages: { offset: number; position: number; body: Uint8Array; key?: string; tag?: string }[]) =>
    messages.map((m) => [m.offset, m.position, Buffer.from(m.body).toString(), m.key, m.tag]);
  const out: unknown[] = [];
  out.push(
    await log.append([
      { lmqs: ['%LMQ%$p$a', '%LMQ%$p$all'], body: 'one', key: 'k', tag: 't', properties: { x: 'y' } },
      { lmqs: ['%LMQ%$p$b'], body: 'two' },
    ]),
  );
  clock.advance(5);
  const bodies = await log.appendBodies({
    lmqs: ['%LMQ%$p$a', '%LMQ%$p$c'],
    lmqIndex: Uint32Array.of(0, 1, 0),
    bodies: Buffer.from('threefourfive'),
    bodyEnds: Uint32Array.of(5, 9, 13),
  });
  out.push([...bodies.positions], [...bodies.offsets]);
  // Enough records of a kilobyte to roll several 4 KiB segments.
  out.push(
    await log.append(Array.from({ length: 20 }, (_, i) => ({ lmqs: ['%LMQ%$p$big'], body: `${i}`.repeat(1000) }))),
  );
  out.push(text(log.read('%LMQ%$p$a', 0, 10)), log.read('%LMQ%$p$a', 0, 1)[0]?.properties);
  out.push(
    log
      .readMany([
        { lmq: '%LMQ%$p$all', fromOffset: 0, maxNum: 5 },
        { lmq: '%LMQ%$p$c', fromOffset: 0, maxNum: 5 },
      ])
      .map(text),
  );
  const read = log.readBodies('%LMQ%$p$big', 3, 4);
  out.push(read.firstOffset, read.count, Buffer.from(read.bodies).subarray(0, 10).toString());
  out.push(await log.deleteLmqs(['%LMQ%$p$b', '%LMQ%$p$none']));
  out.push(log.maxOffset('%LMQ%$p$b'), log.maxOffset('%LMQ%$p$a'), log.minOffset('%LMQ%$p$big'));
  out.push(
    log.lastWriteTimestamp('%LMQ%$p$c'),
    log.lmqCount,
    log.listLmqs('%LMQ%$p$', 2),
    log.lmqSummaries('%LMQ%$p$'),
  );
  out.push((await log.append([{ lmqs: ['%LMQ%$p$b'], body: 'again' }]))[0]?.offsets);
  await log.flush();
  return out;
}

describe.each(ENGINES)('%s engine', (engine) => {
  it('answers as its log on disk does, or is undefined on an engine without one', async () => {
    const clock = new ManualClock();
    const memory = await CommitLog.openInMemory({ engine, clock, segmentBytes: 4096 });
    if (engine === 'js') {
      // The js engine keeps no log in memory: the broker uses its MemoryStore instead.
      expect(memory).toBeUndefined();
      return;
    }
    expect(memory).toBeInstanceOf(CommitLog);
    const log = memory as CommitLog;
    opened.push(log);
    const diskClock = new ManualClock();
    const disk = await openLog(tempDir(), engine, { clock: diskClock, segmentBytes: 4096 });
    expect(await exercise(log, clock)).toEqual(await exercise(disk, diskClock));
    const stats = log.stats();
    expect(stats.segments).toBeGreaterThan(3);
    expect(stats.recovery.replayedRecords).toBe(0);
  });

  it('keeps each log its own and nothing after close', async () => {
    // Options are checked on every engine, one with a log in memory or not.
    await expect(CommitLog.openInMemory({ engine, segmentBytes: 100 })).rejects.toThrow(InvalidArgumentError);
    const first = await CommitLog.openInMemory({ engine });
    if (first === undefined) return expect(engine).toBe('js');
    opened.push(first);
    const second = await CommitLog.openInMemory({ engine });
    opened.push(second as CommitLog);
    await first.append([{ lmqs: ['q'], body: 'mine' }]);
    expect(second?.maxOffset('q')).toBe(0);
    await first.close();
    expect(() => first.read('q', 0, 1)).toThrow(ClosedError);
    const third = (await CommitLog.openInMemory({ engine })) as CommitLog;
    opened.push(third);
    expect(third.lmqCount).toBe(0);
  });
});
