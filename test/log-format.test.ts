/**
 * The on-disk format (docs/FORMAT.md) as both engines see it: a directory written by one engine
 * opens and reads identically in the other (and their segment files are byte for byte the same),
 * damaged tails are cut, damaged records are never returned, unknown versions are refused.
 */
import { cpSync, existsSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StoreRecord } from '../ts/broker/store.js';
import { crc32c } from '../ts/common/crc32c.js';
import { type CommitLog, LogCorruptError, MIN_SEGMENT_BYTES, UnsupportedFormatError } from '../ts/index.js';
import { ENGINES, WRITER_READER_PAIRS } from './engines.js';
import { checkpointDirectory, checkpointReversed } from './log-checkpoint-file.js';
import { bodyFor, flipByte, ManualClock, openLog, segmentFiles, tempDir } from './log-helpers.js';

/** Per LMQ name, the keeper a broker's store would hand with its records (`LmqKeeper`). */
const keepers = new Map<string, { storeState: object | undefined }>();
function keeperOf(lmq: string): { storeState: object | undefined } {
  const kept = keepers.get(lmq);
  if (kept !== undefined) return kept;
  const keeper = { storeState: undefined };
  keepers.set(lmq, keeper);
  return keeper;
}

/** Writes the same varied history with any engine: rolls, multi-LMQ records, a deletion. */
async function writeHistory(log: CommitLog, clock: ManualClock, from: number, to: number): Promise<void> {
  for (let n = from; n < to; n++) {
    clock.advance(7);
    const lmq = `t${n % 5}`;
    // The broker's store gives each record its lite topic's keeper: on the native engine those that
    // carry only a body go the engine's way for bodies (the same bytes, checked below).
    const record: StoreRecord = {
      keepers: [keeperOf(lmq)],
      lmqs: n % 3 === 0 ? [lmq, 'audit'] : [lmq],
      // Some bodies as strings (UTF-8 on disk), with characters outside ASCII.
      body: n % 7 === 1 ? `body ${n} of ${lmq}: ü€𝄞` : bodyFor(lmq, n, 100 + (n % 9) * 40),
      key: n % 2 === 0 ? `k${n}` : undefined,
      tag: n % 4 === 0 ? 'tagged' : undefined,
      properties: n % 5 === 0 ? { n: String(n), ключ: 'значение' } : undefined,
    };
    await log.append([record]);
    if (n === from + 20) await log.deleteLmq('t1');
  }
}

function snapshot(log: CommitLog): unknown {
  return log.listLmqs().lmqs.map((lmq) => ({
    lmq,
    min: log.minOffset(lmq),
    max: log.maxOffset(lmq),
    last: log.lastWriteTimestamp(lmq),
    messages: log.read(lmq, 0, 10_000).map((m) => ({ ...m, body: m.body.toString('base64') })),
  }));
}

describe.each(WRITER_READER_PAIRS)('written by %s, opened by %s', (writer, reader) => {
  it('reads identically and continues where the writer stopped', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const first = await openLog(dir, writer, { segmentBytes: MIN_SEGMENT_BYTES, clock, checkpointBytes: 16_384 });
    await writeHistory(first, clock, 0, 80);
    // Deletion records written in one batch, read back by the other engine.
    expect(await first.deleteLmqs(['t2', 'audit', 'none', 't2'])).toEqual([true, true, false, false]);
    const written = snapshot(first);
    await first.close();

    const second = await openLog(dir, reader, { segmentBytes: MIN_SEGMENT_BYTES, clock });
    expect(snapshot(second)).toEqual(written);
    expect(second.maxOffset('t2')).toBe(0);
    await writeHistory(second, clock, 80, 120);
    expect(await second.deleteLmqs(['t3', 't4'])).toEqual([true, true]);
    const extended = snapshot(second);
    await second.close();

    const third = await openLog(dir, writer, { segmentBytes: MIN_SEGMENT_BYTES, clock });
    expect(snapshot(third)).toEqual(extended);
  });

  it('copies the LMQs it has not read into its own checkpoint, which the writer then reads', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const first = await openLog(dir, writer, { segmentBytes: MIN_SEGMENT_BYTES, clock });
    await writeHistory(first, clock, 0, 80);
    await first.close();
    // Most LMQs stay in the checkpoint file: one is read, one written; the closing checkpoint
    // copies the others' blocks as they are.
    const second = await openLog(dir, reader, { segmentBytes: MIN_SEGMENT_BYTES, clock });
    expect(second.read('t2', 0, 3).length).toBe(3);
    await second.append([{ lmqs: ['t3'], body: 'after' }]);
    await second.close();
    const third = await openLog(dir, writer, { segmentBytes: MIN_SEGMENT_BYTES, clock });
    expect(third.stats().recovery).toMatchObject({ checkpoint: 'loaded', replayedRecords: 0 });
    const copied = snapshot(third);
    await third.close();
    rmSync(join(dir, 'checkpoint'));
    const replayed = await openLog(dir, reader, { segmentBytes: MIN_SEGMENT_BYTES, clock });
    expect(replayed.stats().recovery.checkpoint).toBe('none');
    expect(snapshot(replayed)).toEqual(copied);
  });

  it('accepts a checkpoint directory in any order', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const first = await openLog(dir, writer, { segmentBytes: MIN_SEGMENT_BYTES, clock });
    await writeHistory(first, clock, 0, 80);
    await first.append([{ lmqs: ['Zeta', 'alpha', 'é', 'ÿ', '中'], body: 'names' }]);
    const written = snapshot(first);
    await first.close();
    const path = join(dir, 'checkpoint');
    const names = checkpointDirectory(readFileSync(path))
      .entries.map((e) => e.name)
      .sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    writeFileSync(path, checkpointReversed(readFileSync(path)));
    const second = await openLog(dir, reader, { segmentBytes: MIN_SEGMENT_BYTES, clock });
    expect(second.stats().recovery).toMatchObject({ checkpoint: 'loaded', replayedRecords: 0 });
    expect(second.listLmqs().lmqs).toEqual(names);
    expect(snapshot(second)).toEqual(written);
  });
});

describe.runIf(ENGINES.includes('native'))('both engines', () => {
  it('write byte-identical segments for the same history (creation times aside)', async () => {
    const files: Buffer[][] = [];
    for (const engine of ['native', 'js'] as const) {
      const dir = tempDir();
      const clock = new ManualClock();
      const log = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES, clock });
      await writeHistory(log, clock, 0, 60);
      await log.close();
      // Segment creation times (header bytes 32..40, and so the header CRC at 60..64) follow when the
      // background preparation ran, which timing decides; every other byte must be the same.
      files.push(
        segmentFiles(dir).map((file) => {
          const bytes = readFileSync(file);
          bytes.fill(0, 32, 40);
          bytes.fill(0, 60, 64);
          return bytes;
        }),
      );
    }
    expect(files[0]?.length).toBeGreaterThan(3);
    expect(files[0]).toEqual(files[1]);
  });
});

describe.each(ENGINES)('%s engine, damaged files', (engine) => {
  async function written(): Promise<{ dir: string; clock: ManualClock; last: number }> {
    const dir = tempDir();
    const clock = new ManualClock();
    const log = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES, clock, checkpointBytes: 0 });
    await writeHistory(log, clock, 0, 40);
    const last = (await log.append([{ lmqs: ['tail'], body: bodyFor('tail', 0, 200) }]))[0]?.position ?? -1;
    await log.close();
    return { dir, clock, last };
  }

  /** The file and in-file offset holding log position `position`. */
  function locate(dir: string, position: number): { file: string; at: number } {
    const file = segmentFiles(dir)
      .filter((f) => Number(f.slice(-24, -4)) <= position)
      .pop() as string;
    return { file, at: position - Number(file.slice(-24, -4)) };
  }

  it('cuts a torn or bit-flipped tail past the checkpoint and keeps serving', async () => {
    for (const damage of ['flip', 'torn'] as const) {
      const { dir, last } = await written();
      writeFileSync(join(dir, 'checkpoint'), Buffer.alloc(0)); // force a full replay
      const { file, at } = locate(dir, last);
      if (damage === 'flip') flipByte(file, at + 100);
      else {
        const bytes = readFileSync(file);
        bytes.fill(0, at + 150, at + 260);
        writeFileSync(file, bytes);
      }
      const log = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES });
      const recovery = log.stats().recovery;
      expect(recovery).toMatchObject({ checkpoint: 'invalid', cutPosition: last });
      expect(recovery.cutBytes).toBeGreaterThan(0);
      expect(log.maxOffset('tail')).toBe(0);
      expect(log.read('t0', 0, 100).length).toBe(log.maxOffset('t0'));
      const [again] = await log.append([{ lmqs: ['tail'], body: 'fresh' }]);
      expect(again).toMatchObject({ position: last, offsets: [0] });
      await log.close();
    }
  });

  it('never returns a record damaged behind the checkpoint', async () => {
    const { dir } = await written();
    const log = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES });
    expect(log.stats().recovery.checkpoint).toBe('loaded');
    const victim = log.read('t0', 2, 1)[0];
    await log.close();
    const { file, at } = locate(dir, victim?.position ?? -1);
    flipByte(file, at + 70);
    const reopened = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES });
    expect(() => reopened.read('t0', 0, 100)).toThrow(LogCorruptError);
    expect(reopened.read('t0', 3, 1)[0]?.offset).toBe(3);
    // A readMany that reaches the damaged record fails whole; one that does not is served.
    expect(() =>
      reopened.readMany([
        { lmq: 't0', fromOffset: 3, maxNum: 1 },
        { lmq: 't0', fromOffset: 2, maxNum: 1 },
      ]),
    ).toThrow(LogCorruptError);
    expect(reopened.readMany([{ lmq: 't0', fromOffset: 3, maxNum: 2 }])[0]?.map((m) => m.offset)).toEqual([3, 4]);
  });

  /** Flips a byte in the entry block of `lmq` in the checkpoint. */
  function damageBlock(dir: string, lmq: string): void {
    const path = join(dir, 'checkpoint');
    const entry = checkpointDirectory(readFileSync(path)).entries.find((e) => e.name === lmq);
    if (entry === undefined || entry.next === entry.min) throw new Error(`no block for ${lmq}`);
    flipByte(path, entry.at + 9);
  }

  it('leaves LMQs in the checkpoint until used; a damaged block fails only its LMQ', async () => {
    const { dir } = await written();
    const reference = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES });
    const before = snapshot(reference);
    await reference.close();
    damageBlock(dir, 't2');
    const log = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES });
    expect(log.stats().recovery).toMatchObject({ checkpoint: 'loaded', replayedRecords: 0 });
    // Offsets come from the directory; reading or writing t2 needs its block.
    expect([log.minOffset('t2'), log.maxOffset('t2')]).toEqual([0, log.maxOffset('t2')]);
    expect(log.maxOffset('t2')).toBeGreaterThan(0);
    expect(() => log.read('t2', 0, 1)).toThrow(LogCorruptError);
    const end = log.stats().writePosition;
    await expect(
      log.append([
        { lmqs: ['t0'], body: 'a' },
        { lmqs: ['t2'], body: 'b' },
      ]),
    ).rejects.toMatchObject({
      code: 'LOG_CORRUPT',
    });
    expect(log.stats().writePosition).toBe(end); // nothing of the batch was written
    const others = (before as { lmq: string }[]).filter((q) => q.lmq !== 't2');
    for (const lmq of others.map((q) => q.lmq)) expect(() => log.read(lmq, 0, 1000)).not.toThrow();
    const [next] = await log.append([{ lmqs: ['t0'], body: 'c' }]);
    expect(next?.position).toBe(end);
  });

  it('replays into LMQs still in the checkpoint and keeps every entry through reads, appends and checkpoints', async () => {
    const { dir } = await written();
    const log = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES, checkpointBytes: 0 });
    await log.append([
      { lmqs: ['t2', 't0'], body: 'after the checkpoint' },
      { lmqs: ['t2'], body: 'and another' },
    ]);
    const expected = snapshot(log);
    // Two copies of what a crash leaves: the checkpoint, and records of t0 and t2 after it.
    const copies = [tempDir(), tempDir()];
    for (const copy of copies) {
      cpSync(dir, copy, { recursive: true });
      rmSync(join(copy, 'LOCK'));
    }
    await log.close();
    const [readFirst, checkpointFirst] = copies as [string, string];
    const options = { segmentBytes: MIN_SEGMENT_BYTES, checkpointBytes: 0 };

    const reopened = await openLog(readFirst, engine, options);
    expect(reopened.stats().recovery).toMatchObject({ checkpoint: 'loaded', replayedRecords: 2 });
    expect(snapshot(reopened)).toEqual(expected);
    const next = reopened.maxOffset('t2');
    const [appended] = await reopened.append([{ lmqs: ['t2'], body: 'once more' }]);
    expect(appended?.offsets).toEqual([next]);
    expect(reopened.read('t2', next, 10).map((m) => m.body.toString())).toEqual(['once more']);
    await reopened.close();

    // A checkpoint taken before the replayed LMQs are used holds their entries from both places.
    const untouched = await openLog(checkpointFirst, engine, options);
    expect(untouched.stats().recovery).toMatchObject({ checkpoint: 'loaded', replayedRecords: 2 });
    expect(untouched.maxOffset('t2')).toBe(next);
    await untouched.close();
    const again = await openLog(checkpointFirst, engine, options);
    expect(again.stats().recovery).toMatchObject({ checkpoint: 'loaded', replayedRecords: 0 });
    expect(snapshot(again)).toEqual(expected);
    await again.close();
  });

  it('drops a checkpoint whose block fails its check while the log after it is replayed', async () => {
    const { dir } = await written();
    const log = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES });
    await log.append([{ lmqs: ['t2'], body: 'after the checkpoint' }]);
    const expected = snapshot(log);
    // A copy now is what a crash leaves: the checkpoint, and a record of t2 after it.
    const copy = tempDir();
    cpSync(dir, copy, { recursive: true });
    rmSync(join(copy, 'LOCK'));
    damageBlock(copy, 't2');
    const recovered = await openLog(copy, engine, { segmentBytes: MIN_SEGMENT_BYTES });
    expect(recovered.stats().recovery).toMatchObject({ checkpoint: 'invalid', replayedRecords: 43 });
    expect(existsSync(join(copy, 'checkpoint'))).toBe(false);
    expect(snapshot(recovered)).toEqual(expected);
  });

  it('ignores a checkpoint whose directory is damaged and replays the log', async () => {
    const { dir } = await written();
    const reference = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES });
    const before = snapshot(reference);
    await reference.close();
    const path = join(dir, 'checkpoint');
    flipByte(path, checkpointDirectory(readFileSync(path)).directoryEnd - 30);
    const log = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES });
    expect(log.stats().recovery).toMatchObject({ checkpoint: 'invalid', replayedRecords: 42 });
    expect(snapshot(log)).toEqual(before);
  });

  it('refuses segment and checkpoint versions it does not know', async () => {
    const { dir } = await written();
    const checkpoint = readFileSync(join(dir, 'checkpoint'));
    checkpoint.writeUInt32LE(3, 8);
    checkpoint.writeUInt32LE(crc32c(checkpoint, 0, 60), 60);
    writeFileSync(join(dir, 'checkpoint'), checkpoint);
    const error = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnsupportedFormatError);
    expect(error).toMatchObject({ code: 'UNSUPPORTED_FORMAT', version: 3 });

    const other = (await written()).dir;
    const [segment] = segmentFiles(other);
    const bytes = readFileSync(segment as string);
    bytes.writeUInt32LE(9, 8);
    bytes.writeUInt32LE(crc32c(bytes, 0, 60), 60);
    writeFileSync(segment as string, bytes);
    await expect(openLog(other, engine, { segmentBytes: MIN_SEGMENT_BYTES })).rejects.toMatchObject({
      code: 'UNSUPPORTED_FORMAT',
      version: 9,
    });
  });

  it('refuses a version 1 checkpoint, a format no release reads, and leaves it as it is', async () => {
    const { dir } = await written();
    const path = join(dir, 'checkpoint');
    const checkpoint = readFileSync(path);
    checkpoint.write('LTCKPT01', 0, 'latin1');
    checkpoint.writeUInt32LE(1, 8);
    writeFileSync(path, checkpoint);
    const error = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnsupportedFormatError);
    expect(error).toMatchObject({ code: 'UNSUPPORTED_FORMAT', version: 1 });
    expect(readFileSync(path)).toEqual(checkpoint);
  });

  it('restores a last segment left short by an interrupted cut, keeping every record', async () => {
    const { dir, last } = await written();
    const { file, at } = locate(dir, last);
    // Where a cut stops if killed between its truncate and its extend: just past the last record.
    truncateSync(file, at + 400);
    const log = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES });
    expect(log.maxOffset('tail')).toBe(1);
    expect(log.read('tail', 0, 1)[0]?.body.equals(bodyFor('tail', 0, 200))).toBe(true);
    expect(statSync(file).size).toBe(MIN_SEGMENT_BYTES);
  });

  it('removes a last segment whose preparation never finished', async () => {
    const { dir } = await written();
    const files = segmentFiles(dir);
    const lastFile = files[files.length - 1] as string;
    const next = Number(lastFile.slice(-24, -4)) + MIN_SEGMENT_BYTES;
    const orphan = join(dir, 'segments', `${String(next).padStart(20, '0')}.seg`);
    writeFileSync(orphan, Buffer.alloc(100));
    const log = await openLog(dir, engine, { segmentBytes: MIN_SEGMENT_BYTES });
    expect(log.maxOffset('tail')).toBe(1);
    // The orphan is gone; a file of that name may exist again only as a freshly prepared spare.
    while (!log.stats().spareReady) await new Promise((resolve) => setTimeout(resolve, 5));
    const again = segmentFiles(dir).includes(orphan) ? readFileSync(orphan).subarray(0, 8).toString() : 'gone';
    expect(['gone', 'LTLOGSEG']).toContain(again);
  });
});
