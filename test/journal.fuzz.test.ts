/**
 * Fuzzing the broker's state journal decoding and replay (ts/broker/journal.ts `decodeJournal`,
 * persist.ts `replay`, snapshot.ts binary records). A valid journal holding every record kind, JSON
 * and binary (hot records naming their group and lite topic in full and by number), is damaged: a field replaced by a value of the wrong type or range (with the frame's
 * checksum right, as a broken writer would leave it), or its bytes flipped, cut or overwritten
 * (checksums sometimes made right again). Decoding and replaying then either give a state or throw
 * `LogCorruptError` naming the file and the record, never anything else, and the state holds no more
 * deliveries, nor a FIFO progress spanning more offsets, than the file has bytes. A broker opened
 * on such a journal opens or fails with a typed error.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeJournal, encodeRecord, JOURNAL_VERSION } from '../ts/broker/journal.js';
import { checkKeyShared } from '../ts/broker/key-shared.js';
import { KeySharedProgress, newProgress } from '../ts/broker/key-shared-progress.js';
import { type RestoredState, replay, type StateRecord } from '../ts/broker/persist.js';
import { encodeHot, encodeNames, encodeProgress, hotByIdBytes, writeHotById } from '../ts/broker/snapshot.js';
import type { GroupConfig } from '../ts/broker/state.js';
import { crc32c } from '../ts/common/crc32c.js';
import { Broker, LitetopicError, LogCorruptError } from '../ts/index.js';
import { ManualClock, tempDir } from './broker-helpers.js';
import { ENGINES } from './engines.js';

const FILE = '/fuzz/broker-state';
const HEADER_BYTES = 16;

const fifo: GroupConfig = {
  bindTopic: 'agents',
  subModel: 'shared',
  wildcard: false,
  maxReconsumeTimes: 3,
  dialect: 'lite',
};
const keyShared: GroupConfig = { ...fifo, keyShared: checkKeyShared({ buckets: 16, windowMessages: 8 }) };

/** A valid journal's records: every JSON kind, binary hot records and binary progress batches. */
function validRecords(): (StateRecord | Uint8Array)[] {
  const progress = newProgress(fifo, 'l4', 4);
  progress.restore(4, 0, 1000, true);
  progress.restore(5, 2, 2000, false);
  const shared = newProgress(keyShared, 'l4', 10);
  shared.restore(12, 1, 3000, false);
  const hot = (kind: 'start' | 'ack' | 'deliver', group: string, lite: string, value: number | number[]) =>
    encodeHot(kind, group, lite, value) as Uint8Array;
  const name = (id: number, text: string) => encodeNames([[id, text]]);
  const numbered = (kind: 'start' | 'ack' | 'deliver', group: number, lite: number, value: number | number[]) => {
    const out = Buffer.alloc(hotByIdBytes(value));
    writeHotById(new DataView(out.buffer, out.byteOffset, out.length), 0, kind, group, lite, value);
    return out;
  };
  return [
    ['epoch', 'epoch-1'],
    ['topic', 'agents', { liteTopicExpirationMs: 60_000 }],
    ['topic', 'other', {}],
    ['group', 'g', fifo],
    ['group', 'k', keyShared],
    ['start', 'g', 'l1', 0],
    ['deliver', 'g', 'l1', [0, 0, 500, 1, 0, 500]],
    ['ack', 'g', 'l1', 0],
    ['start', 'k', 'l1', 0],
    ['deliver', 'k', 'l1', [3, 0, 700, 1, 0, 700]],
    ['ack', 'k', 'l1', 1],
    ['progress', 'g', 'l2', 7, 9, [7, 0, 100, 0, 8, 1, 200, 1]],
    ['progress', 'k', 'l2', 2, 6, [3, 0, 100, 0, 5, 0, 100, 1]],
    hot('start', 'g', 'l3', 0),
    hot('deliver', 'g', 'l3', [0, 0, 900]),
    hot('ack', 'g', 'l3', 0),
    encodeNames([
      [0, 'g'],
      [1, 'l5'],
    ]),
    numbered('start', 0, 1, 0),
    numbered('deliver', 0, 1, [0, 0, 900, 1, 0, 900]),
    name(1, 'l6'),
    numbered('start', 0, 1, 2),
    numbered('ack', 0, 1, 2),
    ...encodeProgress('g', new Map([['l4', progress]])),
    ...encodeProgress('k', new Map([['l4', shared]])),
    ['drop', 'agents', 'l2'],
  ];
}

function journalOf(records: readonly unknown[]): Buffer {
  const header = Buffer.alloc(HEADER_BYTES);
  header.write('LTBSTATE', 0, 'ascii');
  header.writeUInt32LE(JOURNAL_VERSION, 8);
  return Buffer.concat([header, ...records.map((record) => encodeRecord(record))]);
}

/** Where each record's frame starts in `journalOf(records)`. */
function frames(records: readonly unknown[]): number[] {
  const starts: number[] = [];
  let at = HEADER_BYTES;
  for (const record of records) {
    starts.push(at);
    at += encodeRecord(record).length;
  }
  return starts;
}

/** Decodes and replays `bytes`: the state, or the typed error (anything else fails the test). */
function decodeAndReplay(bytes: Buffer): RestoredState | LitetopicError {
  try {
    return replay(decodeJournal(bytes, FILE).records, FILE);
  } catch (error) {
    if (!(error instanceof LitetopicError)) throw error;
    if (error instanceof LogCorruptError) expect(error.file).toBe(FILE);
    return error;
  }
}

/** Deliveries and FIFO spans within the file's size: nothing sized by a number in it. */
function expectBounded(outcome: RestoredState | LitetopicError, bytes: Buffer): void {
  if (outcome instanceof LitetopicError) return;
  for (const byLite of outcome.progress.values()) {
    for (const progress of byLite.values()) {
      expect([...progress.keptDeliveries()].length).toBeLessThanOrEqual(bytes.length);
      if (!(progress instanceof KeySharedProgress)) {
        expect(progress.next - progress.committed).toBeLessThanOrEqual(bytes.length);
      }
    }
  }
}

/** Values of the wrong type or range for any field. */
const weird = fc.constantFrom<unknown>(
  -1,
  0.5,
  2 ** 53,
  1e300,
  Number.MAX_SAFE_INTEGER,
  null,
  '',
  'x'.repeat(2000),
  'name',
  true,
  {},
  [],
  [1, 2],
  [0, 0, 0, 2 ** 53 - 1, 0, 0],
  { bindTopic: 'agents', subModel: 'shared', wildcard: false, maxReconsumeTimes: -1, dialect: 'lite' },
  { keyShared: { windowMessages: 1e9 } },
  { liteTopicExpirationMs: 'soon' },
);

describe('state journal replay of damaged journals', () => {
  it('replays the valid journal (the base the damage starts from)', () => {
    const outcome = decodeAndReplay(journalOf(validRecords()));
    expect(outcome).not.toBeInstanceOf(LitetopicError);
    const state = outcome as RestoredState;
    expect(state.epoch).toBe('epoch-1');
    expect(state.progress.get('g')?.get('l4')?.committed).toBe(5);
    expect(state.progress.get('k')?.get('l2')).toBeUndefined(); // dropped
  });

  it('a field of the wrong type or range gives a state or LOG_CORRUPT naming the file and record', () => {
    const base = validRecords();
    fc.assert(
      fc.property(fc.nat(), fc.nat(), weird, fc.nat(), weird, (which, field, value, deep, inner) => {
        const records = base.map((record) => (record instanceof Uint8Array ? record : structuredClone(record)));
        const index = which % records.length;
        const record = records[index] as StateRecord | Uint8Array;
        if (record instanceof Uint8Array) {
          records[index] = value as StateRecord; // a binary record's place taken by JSON
        } else {
          const place = field % (record.length + 1);
          const target: unknown = record[place];
          // Half the time one level down: an element of a delivery list or a config field.
          if (Array.isArray(target) && target.length > 0 && deep % 2 === 0)
            (target as unknown[])[deep % target.length] = inner;
          else if (target !== null && typeof target === 'object' && deep % 2 === 0) {
            const keys = Object.keys(target);
            if (keys.length > 0) (target as Record<string, unknown>)[keys[deep % keys.length] as string] = inner;
          } else (record as unknown[])[place] = value;
        }
        const bytes = journalOf(records);
        const outcome = decodeAndReplay(bytes);
        if (outcome instanceof LogCorruptError) expect(outcome.message).toMatch(/record \d+ of \d+/);
        expectBounded(outcome, bytes);
      }),
      { numRuns: 3000 },
    );
  });

  it('damaged bytes give a state or a typed error, in bounded memory', () => {
    const records = validRecords();
    const original = journalOf(records);
    const starts = frames(records);
    fc.assert(
      fc.property(
        fc.nat(),
        fc.oneof(
          fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
          fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
          fc.record({ kind: fc.constant('huge' as const), at: fc.nat(), value: fc.constantFrom(0xffff_ffff, 0xffff) }),
          fc.record({ kind: fc.constant('random' as const), at: fc.nat(), bytes: fc.uint8Array({ maxLength: 32 }) }),
        ),
        fc.boolean(),
        (which, m, reseal) => {
          const bytes = Buffer.from(original);
          const index = which % records.length;
          const start = starts[index] as number;
          const end = index + 1 < starts.length ? (starts[index + 1] as number) : bytes.length;
          const payload = start + 8;
          let out: Buffer = bytes;
          if (m.kind === 'flip') {
            const at = start + (m.at % (end - start));
            bytes[at] = (bytes[at] as number) ^ (1 << m.bit);
          } else if (m.kind === 'cut') {
            out = bytes.subarray(0, start + (m.at % (end - start)));
          } else if (m.kind === 'huge') {
            // A length or count inside the payload (names, counts, delivery counts) set huge.
            const at = payload + (m.at % Math.max(1, end - payload - 4));
            if (m.value === 0xffff) bytes.writeUInt16LE(m.value, at);
            else bytes.writeUInt32LE(m.value, at);
          } else {
            const at = payload + (m.at % (end - payload));
            bytes.set(m.bytes.subarray(0, end - at), at);
          }
          if (reseal && out.length >= end) out.writeUInt32LE(crc32c(out.subarray(payload, end)), start + 4);
          expectBounded(decodeAndReplay(out), out);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('a deliver record far past a key-shared window replays within the window', () => {
    const records: StateRecord[] = [
      ['group', 'k', keyShared],
      ['start', 'k', 'l1', 0],
      ['deliver', 'k', 'l1', [2 ** 53 - 2, 0, 100]],
    ];
    const state = decodeAndReplay(journalOf(records)) as RestoredState;
    const progress = state.progress.get('k')?.get('l1') as KeySharedProgress;
    expect(progress.next - progress.committed).toBeLessThanOrEqual(progress.windowMessages);
    expect(progress.delivery(2 ** 53 - 2)?.attempt).toBe(0);
  });

  it('a FIFO progress record with offsets in flight but no deliveries is LOG_CORRUPT', () => {
    const records: StateRecord[] = [
      ['group', 'g', fifo],
      ['progress', 'g', 'l1', 0, 2 ** 53 - 1, []],
    ];
    const outcome = decodeAndReplay(journalOf(records));
    expect(outcome).toBeInstanceOf(LogCorruptError);
    expect((outcome as LogCorruptError).message).toContain('record 2 of 2 ("progress")');
  });
});

describe.each(ENGINES)('a broker opened on a damaged journal (%s engine)', (engine) => {
  const opened: Broker[] = [];
  afterEach(async () => {
    for (const broker of opened.splice(0)) await broker.close().catch(() => undefined);
  });

  it('opens or fails with a typed error', async () => {
    const base = validRecords();
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.nat(), weird, async (which, field, value) => {
        const records = base.map((record) => (record instanceof Uint8Array ? record : structuredClone(record)));
        const record = records[which % records.length] as StateRecord | Uint8Array;
        if (!(record instanceof Uint8Array)) (record as unknown[])[field % (record.length + 1)] = value;
        const dir = tempDir();
        mkdirSync(dir, { recursive: true });
        writeFileSync(join(dir, 'broker-state'), journalOf(records));
        try {
          opened.push(await Broker.open({ engine, dir, clock: new ManualClock(), flush: 'sync' }));
        } catch (error) {
          if (!(error instanceof LitetopicError)) throw error;
        }
        for (const broker of opened.splice(0)) await broker.close();
      }),
      { numRuns: 25 },
    );
  });
});
