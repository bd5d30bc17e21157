/**
 * Recovery never destroys records (docs/FORMAT.md, "Recovery"): one flipped bit in each kind of
 * header and block of a log directory, and what an open does about it — refuse with LOG_CORRUPT
 * naming the file and position and change nothing, or use the log without the checkpoint and still
 * return every acknowledged record — then what `repair: true` cuts. Read-only opens change nothing,
 * beside a crash's leftovers or a live writer, and report what a writable open then does.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, existsSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeSegmentHeader } from '../ts/engine/js/log/segment.js';
import { type CommitLog, type EngineName, LogCorruptError, MIN_SEGMENT_BYTES, ReadOnlyError } from '../ts/index.js';
import { ENGINES, WRITER_READER_PAIRS } from './engines.js';
import { checkpointDirectory } from './log-checkpoint-file.js';
import { bodyFor, directoryDigest, flipByte, ManualClock, openLog, segmentFiles, tempDir } from './log-helpers.js';

const OPTIONS = { segmentBytes: MIN_SEGMENT_BYTES };
const writerFixture = join(__dirname, 'fixtures', 'log-writer.ts');

/** One acknowledged record: where it went and what it holds. */
interface Written {
  lmq: string;
  offset: number;
  position: number;
  n: number;
}

/** 60 records over five LMQs in several segments, closed cleanly (so with a checkpoint at the end). */
async function written(engine: EngineName): Promise<{ dir: string; records: Written[] }> {
  const dir = tempDir();
  const clock = new ManualClock();
  const log = await openLog(dir, engine, { ...OPTIONS, clock, checkpointBytes: 0 });
  const records: Written[] = [];
  for (let n = 0; n < 60; n++) {
    clock.advance(3);
    const lmq = `t${n % 5}`;
    const [result] = await log.append([{ lmqs: [lmq], body: bodyFor(lmq, n, 120 + (n % 7) * 30) }]);
    records.push({ lmq, offset: result?.offsets[0] ?? -1, position: result?.position ?? -1, n });
  }
  await log.close();
  return { dir, records };
}

/** The segment file holding `position`, and the offset of `position` in it. */
function locate(dir: string, position: number): { file: string; at: number } {
  const file = segmentFiles(dir)
    .filter((f) => Number(f.slice(-24, -4)) <= position)
    .pop() as string;
  return { file, at: position - Number(file.slice(-24, -4)) };
}

/** Whether every record of `records` reads back intact. */
function expectRecords(log: CommitLog, records: readonly Written[]): void {
  for (const record of records) {
    const [message] = log.read(record.lmq, record.offset, 1);
    expect(message?.offset).toBe(record.offset);
    expect(message?.body.equals(bodyFor(record.lmq, record.n, message.body.length))).toBe(true);
  }
}

/** Opens `dir` expecting LOG_CORRUPT at `file` (and `position`, when given), and checks nothing changed. */
async function expectRefused(dir: string, engine: EngineName, file: string, position?: number): Promise<void> {
  const before = directoryDigest(dir);
  const error = await openLog(dir, engine, OPTIONS).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(LogCorruptError);
  expect(error).toMatchObject({ code: 'LOG_CORRUPT', file });
  if (position !== undefined) expect((error as LogCorruptError).position).toBe(position);
  expect(directoryDigest(dir)).toEqual(before);
}

describe.each(ENGINES)('%s engine, one flipped bit', (engine) => {
  it('in the header of the last segment, which holds records: refused, then repaired', async () => {
    const { dir, records } = await written(engine);
    const { file } = locate(dir, (records.at(-1) as Written).position);
    const base = Number(file.slice(-24, -4));
    flipByte(file, 20);
    await expectRefused(dir, engine, file, base);
    const repaired = await openLog(dir, engine, { ...OPTIONS, repair: true });
    const recovery = repaired.stats().recovery;
    expect(recovery).toMatchObject({ cutPosition: base, removedFiles: [file], corruption: { file, position: base } });
    expect(recovery.cutBytes).toBe(MIN_SEGMENT_BYTES);
    expectRecords(
      repaired,
      records.filter((r) => r.position < base),
    );
    expect(repaired.maxOffset('t0')).toBe(records.filter((r) => r.lmq === 't0' && r.position < base).length);
  });

  it('in the header of an earlier segment, which holds records: refused, then repaired', async () => {
    const { dir, records } = await written(engine);
    const all = segmentFiles(dir);
    expect(all.length).toBeGreaterThan(2);
    const file = all[1] as string;
    const base = Number(file.slice(-24, -4));
    flipByte(file, 3);
    await expectRefused(dir, engine, file, base);
    const repaired = await openLog(dir, engine, { ...OPTIONS, repair: true });
    expect(repaired.stats().recovery).toMatchObject({ cutPosition: base, removedFiles: all.slice(1) });
    expectRecords(
      repaired,
      records.filter((r) => r.position < base),
    );
  });

  it('in the header of an empty segment left half-prepared: it is removed, every record kept', async () => {
    const { dir, records } = await written(engine);
    const last = segmentFiles(dir).at(-1) as string;
    const next = Number(last.slice(-24, -4)) + MIN_SEGMENT_BYTES;
    const orphan = join(dir, 'segments', `${String(next).padStart(20, '0')}.seg`);
    const bytes = Buffer.alloc(MIN_SEGMENT_BYTES);
    bytes.set(encodeSegmentHeader(next, MIN_SEGMENT_BYTES, 1));
    bytes[20] = (bytes[20] as number) ^ 0x10;
    writeFileSync(orphan, bytes);
    const log = await openLog(dir, engine, OPTIONS);
    expect(log.stats().recovery).toMatchObject({ removedSegments: 1, removedFiles: [orphan], corruption: null });
    expectRecords(log, records);
  });

  it("in a record's size field, one that reaches past the next records into the log's unwritten end: refused", async () => {
    const dir = tempDir();
    const log = await openLog(dir, engine, { ...OPTIONS, checkpointBytes: 0 });
    const results = await log.append(
      Array.from({ length: 5 }, (_, n) => ({ lmqs: ['t'], body: bodyFor('t', n, 200) })),
    );
    await log.close();
    // Without the checkpoint (which would vouch for the records anyway) only the record's own
    // bytes can tell damage from a torn tail.
    rmSync(join(dir, 'checkpoint'));
    const victim = results[1]?.position as number;
    const { file, at } = locate(dir, victim);
    // The damaged size still fits the segment, so the record seems to run over the three valid
    // records after it and into the zeros after the last: zeros a torn write would leave.
    const bytes = readFileSync(file);
    bytes.writeUInt32LE(MIN_SEGMENT_BYTES - at, at + 4);
    writeFileSync(file, bytes);
    await expectRefused(dir, engine, file, victim);
    const repaired = await openLog(dir, engine, { ...OPTIONS, repair: true });
    expect(repaired.stats().recovery).toMatchObject({ cutPosition: victim, corruption: { position: victim } });
    expect(repaired.maxOffset('t')).toBe(1);
    await repaired.close();
  });

  for (const part of ['header', 'body'] as const) {
    it(`in a record's ${part}: unread behind the checkpoint; without it, refused, then repaired`, async () => {
      const { dir, records } = await written(engine);
      const victim = records[20] as Written;
      const size = (records[21] as Written).position - victim.position;
      const { file, at } = locate(dir, victim.position);
      flipByte(file, part === 'header' ? at + 5 : at + size - 3);
      // The checkpoint covers the record: the open replays nothing, the read that reaches it fails.
      const log = await openLog(dir, engine, OPTIONS);
      expect(log.stats().recovery).toMatchObject({ checkpoint: 'loaded', cutPosition: -1, corruption: null });
      expect(() => log.read(victim.lmq, victim.offset, 1)).toThrow(LogCorruptError);
      expectRecords(
        log,
        records.filter((r) => r !== victim),
      );
      await log.close();
      // Without the checkpoint, replay meets it with valid records after it: damage, refused.
      rmSync(join(dir, 'checkpoint'));
      await expectRefused(dir, engine, file, victim.position);
      const repaired = await openLog(dir, engine, { ...OPTIONS, repair: true });
      expect(repaired.stats().recovery).toMatchObject({
        cutPosition: victim.position,
        corruption: { file, position: victim.position },
      });
      expectRecords(repaired, records.slice(0, 20));
      expect(repaired.maxOffset(victim.lmq)).toBe(victim.offset);
    });
  }

  it("in the checkpoint's header: the log is replayed without it, every record returned", async () => {
    const { dir, records } = await written(engine);
    flipByte(join(dir, 'checkpoint'), 20);
    const log = await openLog(dir, engine, OPTIONS);
    expect(log.stats().recovery).toMatchObject({ checkpoint: 'invalid', replayedRecords: 60, corruption: null });
    expectRecords(log, records);
    expect(existsSync(join(dir, 'checkpoint'))).toBe(false);
  });

  it("in an LMQ's block of the checkpoint: the log is replayed without it, every record returned", async () => {
    const { dir, records } = await written(engine);
    const log = await openLog(dir, engine, OPTIONS);
    const [after] = await log.append([{ lmqs: ['t2'], body: bodyFor('t2', 60, 50) }]);
    records.push({ lmq: 't2', offset: after?.offsets[0] ?? -1, position: after?.position ?? -1, n: 60 });
    // A copy now is what a crash leaves: the checkpoint, and a record of t2 after it.
    const copy = tempDir();
    cpSync(dir, copy, { recursive: true });
    rmSync(join(copy, 'LOCK'));
    const path = join(copy, 'checkpoint');
    const entry = checkpointDirectory(readFileSync(path)).entries.find((e) => e.name === 't2');
    flipByte(path, (entry?.at ?? 0) + 9);
    const recovered = await openLog(copy, engine, OPTIONS);
    expect(recovered.stats().recovery).toMatchObject({ checkpoint: 'invalid', replayedRecords: 61, corruption: null });
    expectRecords(recovered, records);
  });
});

describe.each(ENGINES)('%s engine, a power loss', (engine) => {
  it('cuts at a record one of whose sectors never reached the disk, though valid records follow', async () => {
    const { dir, records } = await written(engine);
    rmSync(join(dir, 'checkpoint'));
    // Pages written back out of order: the sector after a boundary inside one record stayed zeros.
    const index = records.findIndex(
      (r, i) =>
        i > 5 &&
        i < 50 &&
        Math.floor(r.position / 512) !== Math.floor(((records[i + 1] as Written).position - 1) / 512) &&
        locate(dir, r.position).file === locate(dir, (records[i + 3] as Written).position).file,
    );
    const victim = records[index] as Written;
    const { file, at } = locate(dir, victim.position);
    const bytes = readFileSync(file);
    const sector = (Math.floor(at / 512) + 1) * 512;
    bytes.fill(0, sector, sector + 512);
    writeFileSync(file, bytes);
    const log = await openLog(dir, engine, OPTIONS);
    expect(log.stats().recovery).toMatchObject({ cutPosition: victim.position, corruption: null });
    expectRecords(log, records.slice(0, index));
  });
});

describe.each(ENGINES)('%s engine, an unusable checkpoint', (engine) => {
  it('stays when the replay that would replace it refuses damage before its position', async () => {
    const { dir, records } = await written(engine);
    const path = join(dir, 'checkpoint');
    // The directory fails its check, the header (and so the position) still does not.
    flipByte(path, checkpointDirectory(readFileSync(path)).directoryEnd - 30);
    // The last record is damaged: with nothing after it, only the checkpoint's position tells this
    // from a torn tail.
    const victim = records[59] as Written;
    const { file, at } = locate(dir, victim.position);
    flipByte(file, at + 9);
    await expectRefused(dir, engine, file, victim.position);
    expect(existsSync(path)).toBe(true);
    const repaired = await openLog(dir, engine, { ...OPTIONS, repair: true });
    expect(repaired.stats().recovery).toMatchObject({
      checkpoint: 'invalid',
      cutPosition: victim.position,
      corruption: { file, position: victim.position },
    });
    expect(existsSync(path)).toBe(false);
    expectRecords(repaired, records.slice(0, 59));
  });
});

/** The parts of the recovery stats a read-only open predicts and a writable one then does. */
function prediction(log: CommitLog): unknown {
  const { readOnly: _readOnly, durationMs: _durationMs, ...predicted } = log.stats().recovery;
  return predicted;
}

/** Expects every write of `log` to throw READ_ONLY. */
async function expectWritesRefused(log: CommitLog): Promise<void> {
  const writes: (() => Promise<unknown>)[] = [
    () => log.append([{ lmqs: ['x'], body: 'x' }]),
    () => log.deleteLmq('q0'),
    () => log.deleteLmqs(['q0']),
    () => log.retain({ maxBytes: 0 }),
    () => log.checkpoint(),
  ];
  for (const write of writes) {
    const error = await Promise.resolve()
      .then<unknown>(write)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReadOnlyError);
    expect(error).toMatchObject({ code: 'READ_ONLY' });
  }
}

/**
 * Starts the log writer fixture (test/fixtures/log-writer.ts); resolves once it is ready and has
 * acknowledged at least `lines` records, with their acknowledgements so far.
 */
function startWriter(
  dir: string,
  engine: EngineName,
  flush: 'sync' | 'async',
  lines: number,
): Promise<{ child: ChildProcess; acks: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', writerFixture, dir, engine, flush, '0', '7'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const acks = out.split('\n').slice(1, -1);
      if (acks.length >= lines) resolve({ child, acks });
    });
    child.on('exit', (code) => reject(new Error(`the writer exited with ${code}`)));
  });
}

/** Kills the writer with SIGKILL; resolves once it is gone. */
function kill(child: ChildProcess): Promise<void> {
  child.removeAllListeners('exit');
  return new Promise((resolve) => {
    child.on('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

describe.each(ENGINES)('%s engine, read-only', (engine) => {
  it('leaves a crashed directory byte for byte as it was and predicts what a writable open does', {
    timeout: 60_000,
  }, async () => {
    const dir = tempDir();
    // Killed mid-stream once it has acknowledged 200 records (those are checked; later ones may be too).
    const { child, acks: lines } = await startWriter(dir, engine, 'async', 200);
    await kill(child);
    const before = directoryDigest(dir);
    expect(Object.keys(before)).toContain('LOCK'); // the dead writer's
    const reader = await openLog(dir, engine, { ...OPTIONS, segmentBytes: 64 * 1024, readOnly: true });
    expect(reader.stats().recovery.readOnly).toBe(true);
    for (const line of lines) {
      const [n, lmq, offset, length] = line.split(' ');
      const [message] = reader.read(lmq as string, Number(offset), 1);
      expect(message?.body.equals(bodyFor('r', Number(n), Number(length)))).toBe(true);
    }
    await expectWritesRefused(reader);
    const predicted = prediction(reader);
    await reader.close();
    expect(directoryDigest(dir)).toEqual(before);
    const writer = await openLog(dir, engine, { segmentBytes: 64 * 1024 });
    expect(prediction(writer)).toEqual(predicted);
    expect(writer.stats().recovery.readOnly).toBe(false);
  });

  it('predicts a refusal without refusing, reading up to the damage', async () => {
    const { dir, records } = await written(engine);
    rmSync(join(dir, 'checkpoint'));
    const victim = records[30] as Written;
    const { file, at } = locate(dir, victim.position);
    flipByte(file, at + 9);
    const before = directoryDigest(dir);
    const reader = await openLog(dir, engine, { ...OPTIONS, readOnly: true });
    expect(reader.stats().recovery).toMatchObject({
      cutPosition: -1,
      corruption: { file, position: victim.position },
    });
    expectRecords(reader, records.slice(0, 30));
    expect(reader.maxOffset(victim.lmq)).toBe(victim.offset);
    await reader.close();
    expect(directoryDigest(dir)).toEqual(before);
    await expect(openLog(dir, engine, OPTIONS)).rejects.toMatchObject({
      code: 'LOG_CORRUPT',
      position: victim.position,
    });
  });

  it('reads a directory a live writer holds, without disturbing it', { timeout: 60_000 }, async () => {
    const dir = tempDir();
    const { child, acks } = await startWriter(dir, engine, 'sync', 50);
    try {
      const lock = readFileSync(join(dir, 'LOCK'));
      const reader = await openLog(dir, engine, { segmentBytes: 64 * 1024, readOnly: true });
      for (const line of acks.slice(0, 50)) {
        const [n, lmq, offset, length] = line.split(' ');
        const [message] = reader.read(lmq as string, Number(offset), 1);
        expect(message?.body.equals(bodyFor('r', Number(n), Number(length)))).toBe(true);
      }
      await expectWritesRefused(reader);
      await reader.close();
      expect(readFileSync(join(dir, 'LOCK'))).toEqual(lock);
      expect(child.exitCode).toBe(null);
    } finally {
      await kill(child);
    }
  });

  it('reads a last segment left short by an interrupted cut as far as it goes, without extending it', async () => {
    const { dir, records } = await written(engine);
    const last = records.at(-1) as Written;
    const { file, at } = locate(dir, last.position);
    // Where a cut stops if killed between its truncate and its extend: past the last record.
    truncateSync(file, Math.min(at + 400, MIN_SEGMENT_BYTES - 1));
    const before = directoryDigest(dir);
    const reader = await openLog(dir, engine, { ...OPTIONS, readOnly: true });
    expectRecords(reader, records);
    await reader.close();
    expect(directoryDigest(dir)).toEqual(before);
  });

  it('opens a directory that does not exist as an empty log, creating nothing', async () => {
    const dir = join(tempDir(), 'never-opened');
    const reader = await openLog(dir, engine, { ...OPTIONS, readOnly: true });
    expect(reader.lmqCount).toBe(0);
    expect(reader.read('q', 0, 10)).toEqual([]);
    await reader.close();
    expect(existsSync(dir)).toBe(false);
  });

  it('cannot be combined with a repair', async () => {
    await expect(openLog(tempDir(), engine, { readOnly: true, repair: true })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });
});

describe.each(WRITER_READER_PAIRS)('written by %s, opened by %s', (writer, reader) => {
  it('reads only, then writably, agreeing on a torn tail and every record before it', async () => {
    const { dir, records } = await written(writer);
    rmSync(join(dir, 'checkpoint'));
    const last = records.at(-1) as Written;
    const { file, at } = locate(dir, last.position);
    const bytes = readFileSync(file);
    bytes.fill(0, at + 40, at + 80);
    writeFileSync(file, bytes);
    const before = directoryDigest(dir);
    const readOnly = await openLog(dir, reader, { ...OPTIONS, readOnly: true });
    expect(readOnly.stats().recovery).toMatchObject({ cutPosition: last.position, corruption: null });
    expectRecords(readOnly, records.slice(0, -1));
    const predicted = prediction(readOnly);
    await readOnly.close();
    // The writer's engine predicts the same.
    const byWriter = await openLog(dir, writer, { ...OPTIONS, readOnly: true });
    expect(prediction(byWriter)).toEqual(predicted);
    await byWriter.close();
    expect(directoryDigest(dir)).toEqual(before);
    const writable = await openLog(dir, reader, OPTIONS);
    expect(prediction(writable)).toEqual(predicted);
    expectRecords(writable, records.slice(0, -1));
    expect(writable.maxOffset(last.lmq)).toBe(last.offset);
  });
});
