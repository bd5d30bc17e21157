/**
 * Fuzzing the decoders of what the commit log reads back from disk, for each engine: records in
 * segment files and the index checkpoint. A valid directory is damaged at random (bit flips,
 * truncation, length and size fields set huge, random bytes), sometimes with its checksums made
 * right again so the damage reaches the layout checks behind them; then the engine opens it and
 * reads every LMQ. Each step either works or throws a typed `LitetopicError`, never anything else,
 * and what a read returns stays within what the files hold (a size taken from the damaged bytes never
 * sizes an allocation unchecked). The native decoders are reached the same way, through the files.
 *
 * The regressions at the end are the cases that found the unchecked checkpoint entry sizes.
 */
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { crc32c } from '../ts/common/crc32c.js';
import { checkRecord } from '../ts/common/log-record.js';
import { CommitLog, type EngineName, LitetopicError, LogCorruptError } from '../ts/index.js';
import { ENGINES } from './engines.js';
import { checkpointDirectory } from './log-checkpoint-file.js';

const SEGMENT_BYTES = 8192;
const LMQS = ['alpha', 'beta', 'gamma'];
const HUGE_U32 = 0xffff_ffff;
const dirs: string[] = [];

afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function scratchDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'litetopic-fuzz-'));
  dirs.push(dir);
  return dir;
}

/** A valid directory: records over several segments, closed (which writes a checkpoint). */
interface Base {
  dir: string;
  /** Position (in the log) and segment file of every record, and the segment files' bases. */
  records: { position: number; size: number }[];
  segments: { file: string; base: number }[];
}

async function buildBase(engine: EngineName): Promise<Base> {
  const dir = scratchDir();
  const log = await CommitLog.open(dir, { engine, segmentBytes: SEGMENT_BYTES, flush: 'sync' });
  const records: { position: number; size: number }[] = [];
  for (let i = 0; i < 60; i++) {
    const lmqs = i % 5 === 0 ? [LMQS[i % 3] as string, LMQS[(i + 1) % 3] as string] : [LMQS[i % 3] as string];
    const [written] = await log.append([{ lmqs, body: `body ${i} `.repeat(1 + (i % 7)), key: `k${i % 4}` }]);
    records.push({ position: written?.position ?? 0, size: 0 });
  }
  await log.close();
  const segments = readdirSync(join(dir, 'segments'))
    .filter((name) => name.endsWith('.seg'))
    .sort()
    .map((name) => ({ file: join('segments', name), base: Number(name.slice(0, 20)) }));
  for (const record of records) {
    const segment = segments.filter((s) => s.base <= record.position).pop();
    if (segment === undefined) throw new Error('a record outside every segment');
    const bytes = readFileSync(join(dir, segment.file));
    record.size = bytes.readUInt32LE(record.position - segment.base + 4);
  }
  return { dir, records, segments };
}

/** One way of damaging a file's bytes, applied by `damage`. */
type Mutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'huge'; field: number; wide: boolean }
  | { kind: 'random'; at: number; bytes: Uint8Array };

const mutation = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('huge' as const), field: fc.nat(), wide: fc.boolean() }),
  fc.record({
    kind: fc.constant('random' as const),
    at: fc.nat(),
    bytes: fc.uint8Array({ minLength: 1, maxLength: 64 }),
  }),
);

/** `bytes` damaged by `m`; `fields` are the offsets of the length, count and size fields to set huge. */
function damage(bytes: Buffer, m: Mutation, fields: readonly number[]): Buffer {
  const out = Buffer.from(bytes);
  if (out.length === 0) return out;
  switch (m.kind) {
    case 'flip': {
      const at = m.at % out.length;
      out[at] = (out[at] as number) ^ (1 << m.bit);
      return out;
    }
    case 'truncate':
      return out.subarray(0, m.at % out.length);
    case 'huge': {
      const at = fields.length === 0 ? 0 : (fields[m.field % fields.length] as number);
      if (at + (m.wide ? 8 : 4) > out.length) return out;
      if (m.wide) out.writeBigUInt64LE(0xffff_ffff_ffff_ffffn, at);
      else out.writeUInt32LE(HUGE_U32, at);
      return out;
    }
    case 'random': {
      const at = m.at % out.length;
      out.set(m.bytes.subarray(0, out.length - at), at);
      return out;
    }
  }
}

/** Whether `error` is one of litetopic's typed errors; anything else fails the property with itself. */
function typed(error: unknown): true {
  if (error instanceof LitetopicError) return true;
  throw error;
}

/**
 * Opens `dir` and reads every LMQ; each step works or throws a typed error. Returns the bytes of the
 * bodies read, so the caller can bound them.
 */
async function openAndReadAll(dir: string, engine: EngineName): Promise<number> {
  let log: CommitLog;
  try {
    log = await CommitLog.open(dir, { engine, segmentBytes: SEGMENT_BYTES });
  } catch (error) {
    typed(error);
    return 0;
  }
  let bytes = 0;
  try {
    for (const name of LMQS) {
      try {
        for (const message of log.read(name, 0, 1000)) bytes += message.body.length;
      } catch (error) {
        typed(error);
      }
    }
  } finally {
    await log.close().catch(typed);
  }
  return bytes;
}

function filesBytes(dir: string): number {
  return readdirSync(join(dir, 'segments')).reduce((sum, name) => sum + statSync(join(dir, 'segments', name)).size, 0);
}

/** Recomputes every checksum of a (damaged) version 2 checkpoint that can still be found. */
function resealCheckpoint(bytes: Buffer): Buffer {
  const out = Buffer.from(bytes);
  if (out.length < 64) return out;
  try {
    const { entries, directoryEnd } = checkpointDirectory(out);
    let at = 64 + 16 * out.readUInt32LE(32);
    for (const entry of entries) {
      const nameLength = out.readUInt16LE(at);
      const blockEnd = entry.at + 24 * (entry.next - entry.min);
      if (blockEnd <= out.length) out.writeUInt32LE(crc32c(out.subarray(entry.at, blockEnd)), at + 2 + nameLength + 32);
      at += 2 + nameLength + 40;
    }
    if (directoryEnd <= out.length) out.writeUInt32LE(crc32c(out.subarray(64, directoryEnd)), 56);
  } catch {
    // A directory the damage made unreadable: only the header checksum is made right.
  }
  out.writeUInt32LE(crc32c(out.subarray(0, 60)), 60);
  return out;
}

/** The offsets of the checkpoint's count, length and size fields: header, directory, entries. */
function checkpointFields(bytes: Buffer): number[] {
  const fields = [32, 40, 48];
  const { entries } = checkpointDirectory(bytes);
  let at = 64 + 16 * bytes.readUInt32LE(32);
  for (const entry of entries) {
    const nameLength = bytes.readUInt16LE(at);
    fields.push(at, at + 2 + nameLength, at + 2 + nameLength + 8, at + 2 + nameLength + 24);
    for (let k = 0; k < entry.next - entry.min; k++) fields.push(entry.at + 24 * k, entry.at + 24 * k + 8);
    at += 2 + nameLength + 40;
  }
  return fields;
}

/** A copy of `base` for one run. */
function copyOf(base: Base): string {
  const dir = mkdtempSync(join(tmpdir(), 'litetopic-fuzz-run-'));
  cpSync(base.dir, dir, { recursive: true });
  return dir;
}

describe.each(ENGINES)('decoding what the log reads from disk (%s engine)', (engine) => {
  let base: Base | undefined;
  const baseOf = async () => {
    base ??= await buildBase(engine);
    return base;
  };

  it('a damaged checkpoint opens or fails with a typed error, and reads stay within the files', async () => {
    const { dir: baseDir } = await baseOf();
    const original = readFileSync(join(baseDir, 'checkpoint'));
    const fields = checkpointFields(original);
    await fc.assert(
      fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 3 }), fc.boolean(), async (mutations, reseal) => {
        const dir = copyOf(await baseOf());
        try {
          let bytes: Buffer = original;
          for (const m of mutations) bytes = damage(bytes, m, fields);
          writeFileSync(join(dir, 'checkpoint'), reseal ? resealCheckpoint(bytes) : bytes);
          const read = await openAndReadAll(dir, engine);
          expect(read).toBeLessThanOrEqual(LMQS.length * filesBytes(dir));
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      }),
      { numRuns: 60 },
    );
  });

  it('damaged records open or fail with a typed error, and reads stay within the files', async () => {
    const built = await baseOf();
    await fc.assert(
      fc.asyncProperty(
        fc.nat(),
        fc.array(mutation, { minLength: 1, maxLength: 3 }),
        fc.boolean(),
        async (which, mutations, reseal) => {
          const dir = copyOf(built);
          try {
            const record = built.records[which % built.records.length] as { position: number; size: number };
            const segment = built.segments.filter((s) => s.base <= record.position).pop() as Base['segments'][number];
            const path = join(dir, segment.file);
            const file = readFileSync(path);
            const start = record.position - segment.base;
            // The record's size, LMQ count, first name length and body length fields.
            const fields = [start + 4, start + 14, start + 32 + 8, start + record.size - 4];
            let bytes: Buffer = file.subarray(start, start + record.size);
            for (const m of mutations)
              bytes = damage(
                bytes,
                m,
                fields.map((at) => at - start),
              );
            const damaged = Buffer.from(file);
            damaged.set(bytes, start);
            if (reseal && bytes.length >= 12) {
              // The checksum made right for the record's own size, so the layout checks see the damage.
              const size = Math.min(damaged.readUInt32LE(start + 4), damaged.length - start);
              if (size >= 12) damaged.writeUInt32LE(crc32c(damaged.subarray(start + 12, start + size)), start + 8);
            }
            // The checkpoint would index the record as it was: without it, recovery replays the damage.
            rmSync(join(dir, 'checkpoint'), { force: true });
            writeFileSync(path, damaged);
            const read = await openAndReadAll(dir, engine);
            expect(read).toBeLessThanOrEqual(LMQS.length * filesBytes(dir));
          } finally {
            rmSync(dir, { recursive: true, force: true });
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('a checkpoint entry giving a record size of 4 GiB fails its LMQ with LOG_CORRUPT naming the checkpoint', async () => {
    const dir = copyOf(await baseOf());
    const path = join(dir, 'checkpoint');
    const bytes = readFileSync(path);
    const entry = checkpointDirectory(bytes).entries.find((e) => e.name === 'alpha');
    if (entry === undefined) throw new Error('no alpha in the checkpoint');
    bytes.writeUInt32LE(HUGE_U32, entry.at + 8);
    writeFileSync(path, resealCheckpoint(bytes));
    const log = await CommitLog.open(dir, { engine, segmentBytes: SEGMENT_BYTES });
    try {
      const failure = (() => {
        try {
          log.read('alpha', 0, 1000);
        } catch (error) {
          return error;
        }
      })();
      expect(failure).toBeInstanceOf(LogCorruptError);
      expect((failure as LogCorruptError).file).toBe(path);
      // The other LMQs are untouched.
      expect(log.read('beta', 0, 1000).length).toBeGreaterThan(0);
    } finally {
      await log.close().catch(() => undefined);
    }
  });

  it('a checkpoint entry pointing past the checkpoint position, or overlapping the one before, fails its LMQ', async () => {
    for (const change of ['past', 'overlap'] as const) {
      const dir = copyOf(await baseOf());
      const path = join(dir, 'checkpoint');
      const bytes = readFileSync(path);
      const entry = checkpointDirectory(bytes).entries.find((e) => e.name === 'gamma');
      if (entry === undefined || entry.next - entry.min < 2) throw new Error('gamma too short');
      if (change === 'past') {
        const last = entry.at + 24 * (entry.next - entry.min - 1);
        bytes.writeUInt32LE(Number(bytes.readBigUInt64LE(16)), last + 8); // size: the whole log
      } else {
        bytes.writeUInt32LE(bytes.readUInt32LE(entry.at + 8) + 64, entry.at + 8); // into the next record
      }
      writeFileSync(path, resealCheckpoint(bytes));
      const log = await CommitLog.open(dir, { engine, segmentBytes: SEGMENT_BYTES });
      try {
        expect(() => log.read('gamma', 0, 1000)).toThrow(LogCorruptError);
      } finally {
        await log.close().catch(() => undefined);
      }
    }
  });
});

describe('the js record decoder', () => {
  it('returns the fields or a reason for any bytes, never throws', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), fc.nat(), fc.boolean(), (bytes, size, seal) => {
        const record = Buffer.from(bytes);
        if (record.length >= 8) {
          record.write('LTR1', 0, 'latin1');
          record.writeUInt32LE(seal ? record.length : size, 4);
        }
        if (seal && record.length >= 12) record.writeUInt32LE(crc32c(record.subarray(12)), 8);
        const info = checkRecord(record, 0, record.length);
        expect(typeof info === 'string' || info.size <= record.length).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});
