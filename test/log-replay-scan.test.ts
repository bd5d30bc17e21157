/**
 * The js engine's replay reads records without `checkRecord`: `scanRecord` checks them where they
 * lie and `ReplayNames` finds their LMQs by the bytes of their names, checking a name's UTF-8 when
 * it first meets those bytes. Together they must accept exactly the records `checkRecord` accepts
 * and give the same fields, or a reopen would end the log elsewhere or index a record differently
 * than a read checks it. Records are encoded as the log writes them, then damaged at random (some
 * with their checksum made right again so the damage reaches the layout checks). The native
 * engine's replay uses its one record check (native/core/src/log/record.rs), tested there.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { crc32c } from '../ts/common/crc32c.js';
import { encodeBatch, encodeDeletions } from '../ts/common/log-encode.js';
import { checkRecord, readRecordSize, sealRecord, setRecordOffset, writeU32 } from '../ts/common/log-record.js';
import { ScannedRecord, scanRecord } from '../ts/engine/js/log/record-scan.js';
import { ReplayNames } from '../ts/engine/js/log/replay-names.js';
import { ConsumeQueue } from '../ts/engine/js/queue.js';

const MAX_RECORD_BYTES = 1024 * 1024;
/** Byte offset of the record checksum and of the first byte it covers. */
const CRC_AT = 8;
const CRC_FROM = 12;

const lmqName = fc.oneof(
  fc.constantFrom('alpha', 'beta', 'a/b/c', 'tenant1__agent2__session3', 'é', '日本', '\u{1F600}x'),
  fc.string({ minLength: 1, maxLength: 12 }),
);

/** One record as the log stores it: encoded, offsets set, sealed. */
const storedRecord = fc
  .record({
    deletion: fc.boolean(),
    lmqs: fc.uniqueArray(lmqName, { minLength: 1, maxLength: 4 }),
    offsets: fc.array(fc.nat({ max: 2 ** 40 }), { minLength: 4, maxLength: 4 }),
    key: fc.option(fc.string({ maxLength: 8 }), { nil: undefined }),
    tag: fc.option(fc.string({ maxLength: 8 }), { nil: undefined }),
    properties: fc.dictionary(fc.string({ minLength: 1, maxLength: 4 }), fc.string({ maxLength: 4 }), { maxKeys: 3 }),
    body: fc.uint8Array({ maxLength: 40 }),
    storeTimestamp: fc.nat({ max: 2 ** 45 }),
  })
  .map((r) => {
    const batch = r.deletion
      ? encodeDeletions([r.lmqs[0] as string], r.storeTimestamp)
      : encodeBatch(
          [{ lmqs: r.lmqs, key: r.key, tag: r.tag, properties: r.properties, body: r.body }],
          r.storeTimestamp,
          MAX_RECORD_BYTES,
        );
    const bytes = Uint8Array.from(batch.bytes.subarray(0, batch.starts[1]));
    const count = r.deletion ? 1 : r.lmqs.length;
    for (let i = 0; i < count; i++) setRecordOffset(bytes, 0, i, r.offsets[i] as number);
    sealRecord(bytes, 0, r.storeTimestamp);
    return bytes;
  });

/** Damage: a flipped bit, a byte set, or a cut; `reseal` makes the checksum right again. */
const damage = fc.record({
  kind: fc.constantFrom('none', 'flip', 'set', 'cut'),
  at: fc.nat(),
  bit: fc.integer({ min: 0, max: 7 }),
  value: fc.constantFrom(0, 1, 0x80, 0xc3, 0xed, 0xef, 0xff),
  reseal: fc.boolean(),
});

function damaged(record: Uint8Array, d: Damage): Uint8Array {
  let bytes = Uint8Array.from(record);
  const at = d.at % bytes.length;
  if (d.kind === 'flip') bytes[at] = (bytes[at] as number) ^ (1 << d.bit);
  if (d.kind === 'set') bytes[at] = d.value;
  if (d.kind === 'cut') bytes = bytes.subarray(0, at);
  // The checksum covers the record as its size field says; it is made right only where that fits.
  const size = bytes.length >= 8 ? readRecordSize(bytes, 0) : 0;
  if (d.reseal && size >= CRC_FROM && size <= bytes.length) writeU32(bytes, CRC_AT, crc32c(bytes, CRC_FROM, size));
  return bytes;
}

type Damage = typeof damage extends fc.Arbitrary<infer T> ? T : never;

const utf8 = new TextDecoder('utf-8', { fatal: true });

describe('replay record scan', () => {
  it('accepts exactly what checkRecord accepts, with the same fields', () => {
    const out = new ScannedRecord();
    fc.assert(
      fc.property(storedRecord, damage, (record, d) => {
        const bytes = damaged(record, d);
        const expected = checkRecord(bytes, 0, bytes.length);
        const names = new ReplayNames();
        let accepted = scanRecord(bytes, 0, bytes.length, out);
        const ids: number[] = [];
        for (let j = 0; accepted && j < out.lmqCount; j++) {
          const id = names.find(bytes, out.nameStart[j] as number, out.nameEnd[j] as number);
          if (id < 0) accepted = false;
          ids.push(id);
        }
        expect(accepted).toBe(typeof expected !== 'string');
        if (typeof expected === 'string') return;
        expect(out.size).toBe(expected.size);
        expect(out.type).toBe(expected.type);
        expect(out.lmqCount).toBe(expected.lmqCount);
        expect(Array.from(out.offsets.subarray(0, out.lmqCount))).toEqual(expected.offsets);
        expect(out.storeTimestamp).toBe(expected.storeTimestamp);
        expect(out.tagHash).toBe(expected.tagHash);
        expect(out.keyHash).toBe(expected.keyHash);
        expect(ids.map((id) => names.names[id])).toEqual(expected.lmqs);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('replay names', () => {
  it('give one id per name, whatever bytes it is met by, and refuse bytes that are not UTF-8', () => {
    const encoder = new TextEncoder();
    const bytesOf = fc.oneof(
      lmqName.map((name) => encoder.encode(name)),
      // A leading byte order mark decodes away: the same name as the bytes after it.
      lmqName.map((name) => Uint8Array.of(0xef, 0xbb, 0xbf, ...encoder.encode(name))),
      fc.uint8Array({ minLength: 1, maxLength: 6 }),
    );
    fc.assert(
      fc.property(
        fc.array(bytesOf, { minLength: 1, maxLength: 60 }),
        fc.nat({ max: 59 }),
        fc.boolean(),
        (list, seeded, defer) => {
          const names = new ReplayNames();
          // Some names come from a checkpoint's directory: added at once, or deferred until the
          // replay has met enough unknown ones (their ids are then given as they are met or added).
          const idOf = new Map<string, number>();
          const directory = {
            bytes: new Uint8Array(0),
            ranges: new Int32Array(0),
            names: [] as string[],
            queues: [] as ConsumeQueue[],
          };
          const parts: Uint8Array[] = [];
          const ranges: number[] = [];
          let used = 0;
          for (const bytes of list.slice(0, seeded)) {
            let name: string;
            try {
              name = utf8.decode(bytes);
            } catch {
              continue;
            }
            if (directory.names.includes(name) || name.length === 0) continue;
            const queue = new ConsumeQueue(0);
            if (!defer) {
              idOf.set(name, names.size);
              names.add(bytes, 0, bytes.length, name, queue);
            }
            parts.push(bytes);
            ranges.push(used, used + bytes.length);
            used += bytes.length;
            directory.names.push(name);
            directory.queues.push(queue);
          }
          directory.bytes = Buffer.concat(parts);
          directory.ranges = Int32Array.from(ranges);
          if (defer) names.defer(directory);
          // In a larger buffer, at an offset, as a record holds them.
          for (const bytes of [...list, ...list]) {
            const buffer = new Uint8Array(bytes.length + 7);
            buffer.set(bytes, 3);
            const id = names.find(buffer, 3, 3 + bytes.length);
            let name: string | undefined;
            try {
              name = utf8.decode(bytes);
            } catch {
              name = undefined;
            }
            if (name === undefined) {
              expect(id).toBe(-1);
              continue;
            }
            expect(names.names[id]).toBe(name);
            if (!idOf.has(name)) idOf.set(name, id);
            expect(id).toBe(idOf.get(name));
            // A name of the directory met by its bytes alone gets its queue when the replay applies it.
            const fromDirectory = directory.queues[directory.names.indexOf(name)];
            const queue = names.queues[id];
            if (queue !== undefined) expect(queue).toBe(fromDirectory);
          }
          // One id per name; a directory added at once holds every name of it.
          expect(new Set(names.names).size).toBe(names.size);
          if (!defer) for (const name of directory.names) expect(names.names).toContain(name);
        },
      ),
      { numRuns: 500 },
    );
  });
});
