/**
 * `appendBodies` batches around the size the native engine writes a part at a time (256 KiB of framed
 * records): a batch framed to exactly that size, one record more or less, a single record larger than
 * a part, and batches that cross segment rolls in the middle of a part. Each is read back whole and
 * byte for byte, at the positions and offsets the append gave, before and after a reopen, and by the
 * other engine from the same directory.
 */
import { describe, expect, it } from 'vitest';
import type { CommitLog, EngineName } from '../ts/index.js';
import { BODY_RECORD_FRAME_BYTES } from '../ts/log-bodies.js';
import { ENGINES, WRITER_READER_PAIRS } from './engines.js';
import { bodyBatch } from './log-body.js';
import { bodyFor, ManualClock, openLog, segmentFiles, tempDir } from './log-helpers.js';

/** Framed bytes the native engine writes at a time (native/core/src/log/bodies.rs). */
const PART_BYTES = 256 * 1024;
const LMQS = ['a', 'b'] as const;

/** One record the test expects back: its LMQ, body, and where the append said it went. */
interface Stored {
  lmq: string;
  body: Buffer;
  offset: number;
  position: number;
}

/** Records with these body sizes, alternating between the two LMQs (each name 1 byte). */
function bodiesOf(sizes: readonly number[], seed: number): [number, Buffer][] {
  return sizes.map((size, i) => [i % 2, bodyFor(`${seed}`, i, size)]);
}

/** The body size that frames a record to `framed` bytes (LMQ names are one byte). */
function bodyFraming(framed: number): number {
  return framed - BODY_RECORD_FRAME_BYTES - 1;
}

async function appendAll(log: CommitLog, sizes: readonly number[], seed: number, into: Stored[]): Promise<void> {
  const records = bodiesOf(sizes, seed);
  const { positions, offsets } = await log.appendBodies(bodyBatch(LMQS, records));
  for (let i = 0; i < sizes.length; i++) {
    into.push({
      lmq: LMQS[i % 2] as string,
      body: (records[i] as [number, Buffer])[1],
      offset: offsets[i] as number,
      position: positions[i] as number,
    });
  }
}

/** A case's batches (framed sizes), one call each, a millisecond apart. */
async function appendCase(
  log: CommitLog,
  batches: readonly number[][],
  into: Stored[],
  clock: ManualClock,
): Promise<void> {
  for (const [seed, framed] of batches.entries()) {
    await appendAll(log, framed.map(bodyFraming), seed, into);
    clock.advance(1);
  }
}

/** Every record of the LMQs, in offset order, compared whole with what was appended. */
function expectAll(log: CommitLog, stored: readonly Stored[]): void {
  for (const lmq of LMQS) {
    const expected = stored.filter((record) => record.lmq === lmq);
    expect(log.maxOffset(lmq)).toBe(expected.length);
    const read = log.read(lmq, 0, 65_536);
    expect(read.length).toBe(expected.length);
    for (let i = 0; i < expected.length; i++) {
      const want = expected[i] as Stored;
      const got = read[i];
      expect(got?.offset).toBe(i);
      expect(want.offset).toBe(i);
      expect(got?.position).toBe(want.position);
      expect(got?.body.equals(want.body), `${lmq} offset ${i}`).toBe(true);
    }
  }
  const positions = stored.map((record) => record.position);
  expect(new Set(positions).size).toBe(positions.length);
}

/** The framed sizes of each case's batches (after an optional first batch that fills part of a segment). */
const CASES: readonly { name: string; segmentBytes?: number; batches: number[][] }[] = [
  { name: 'exactly one part', batches: [Array(256).fill(1024)] },
  { name: 'one part less one record', batches: [Array(255).fill(1024)] },
  { name: 'one part and one record', batches: [Array(257).fill(1024)] },
  { name: 'one part less one byte, then a record', batches: [[...Array(255).fill(1024), 1023, 100]] },
  { name: 'a record larger than a part alone', batches: [[PART_BYTES + 4096]] },
  { name: 'a record larger than a part between small ones', batches: [[200, 300, PART_BYTES * 2 + 7, 400, 500]] },
  {
    name: 'a part crossing a segment roll',
    segmentBytes: 1024 * 1024,
    // 700 KiB, then three batches of a little under 700 KiB with records of varied sizes: the
    // segments of 1 MiB fill in the middle of a part, at a different place each time.
    batches: [
      Array(700).fill(1024),
      ...[1, 2, 3].map((seed) => Array.from({ length: 300 }, (_, i) => 100 + ((i * 7919 * seed) % 4500))),
    ],
  },
];

describe.each(ENGINES)('%s engine', (engine) => {
  it.each(CASES)('reads back a batch of $name whole, before and after a reopen', async ({ segmentBytes, batches }) => {
    const dir = tempDir();
    const clock = new ManualClock();
    const stored: Stored[] = [];
    const log = await openLog(dir, engine, { clock, segmentBytes });
    await appendCase(log, batches, stored, clock);
    expectAll(log, stored);
    // The roll case does roll: about 2.8 MiB in segments of 1 MiB.
    if (segmentBytes !== undefined) expect(segmentFiles(dir).length).toBeGreaterThanOrEqual(3);
    await log.close();
    const reopened = await openLog(dir, engine, { clock, segmentBytes });
    expectAll(reopened, stored);
    // The log goes on where it ended.
    await appendAll(reopened, [bodyFraming(PART_BYTES)], 99, stored);
    expectAll(reopened, stored);
    await reopened.close();
  });
});

describe.each(WRITER_READER_PAIRS)('written by %s, read by %s', (writer: EngineName, reader: EngineName) => {
  it.each(CASES)('reads back a batch of $name whole', async ({ segmentBytes, batches }) => {
    const dir = tempDir();
    const clock = new ManualClock();
    const stored: Stored[] = [];
    const log = await openLog(dir, writer, { clock, segmentBytes });
    await appendCase(log, batches, stored, clock);
    await log.close();
    const other = await openLog(dir, reader, { clock, segmentBytes });
    expectAll(other, stored);
    await appendAll(other, [bodyFraming(PART_BYTES + 1)], 99, stored);
    await other.close();
    const back = await openLog(dir, writer, { clock, segmentBytes });
    expectAll(back, stored);
    await back.close();
  });
});
