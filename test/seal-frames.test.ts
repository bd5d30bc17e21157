/**
 * `sealFrames`, with which the broker's state journal fills in the checksums of each run of records
 * it writes: both engines against a bit-at-a-time CRC-32C and against each other, on random runs of
 * frames, runs cut short and ranges outside the bytes.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { getEngine } from '../ts/engine/load.js';
import { ENGINES } from './engines.js';

/** CRC-32C one bit at a time: the definition, slow and plain. */
function referenceCrc(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const byte of bytes) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return ~c >>> 0;
}

/** `payloads` framed back to back after `lead` bytes of 0xee, their checksum fields 0xaa. */
function unsealed(payloads: readonly Uint8Array[], lead: number, tail: number): Buffer {
  const parts: Buffer[] = [Buffer.alloc(lead, 0xee)];
  for (const payload of payloads) {
    const header = Buffer.alloc(8, 0xaa);
    header.writeUInt32LE(payload.length, 0);
    parts.push(header, Buffer.from(payload));
  }
  parts.push(Buffer.alloc(tail, 0xee));
  return Buffer.concat(parts);
}

const payloads = fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 12 });

describe.each(ENGINES)('sealFrames (%s engine)', (name) => {
  const engine = getEngine(name);

  it('writes the CRC-32C of each payload into its frame and nothing else', () => {
    fc.assert(
      fc.property(payloads, fc.nat(20), fc.nat(20), (list, lead, tail) => {
        const bytes = unsealed(list, lead, tail);
        const end = bytes.length - tail;
        const expected = Buffer.from(bytes);
        let at = lead;
        for (const payload of list) {
          expected.writeUInt32LE(referenceCrc(payload), at + 4);
          at += 8 + payload.length;
        }
        expect(engine.sealFrames(bytes, lead, end)).toBe(list.length);
        expect(bytes.equals(expected)).toBe(true);
      }),
    );
  });

  it('answers -1 for a frame that runs past the end, having sealed those before it', () => {
    fc.assert(
      fc.property(payloads, fc.uint8Array({ minLength: 1, maxLength: 100 }), fc.nat(), (list, last, cutAt) => {
        const bytes = unsealed([...list, last], 0, 0);
        const lastStart = bytes.length - 8 - last.length;
        const end = lastStart + 1 + (cutAt % (7 + last.length)); // inside the last frame
        const untouched = Buffer.from(bytes.subarray(lastStart));
        expect(engine.sealFrames(bytes, 0, end)).toBe(-1);
        let at = 0;
        for (const payload of list) {
          expect(bytes.readUInt32LE(at + 4)).toBe(referenceCrc(payload));
          at += 8 + payload.length;
        }
        expect(bytes.subarray(lastStart).equals(untouched)).toBe(true);
      }),
    );
  });

  it('answers -1 for a range outside the bytes, and 0 for an empty one', () => {
    const bytes = unsealed([Buffer.from('abc')], 0, 0);
    expect(engine.sealFrames(bytes, 0, bytes.length + 1)).toBe(-1);
    expect(engine.sealFrames(bytes, 5, 4)).toBe(-1);
    expect(engine.sealFrames(bytes, 3, 3)).toBe(0);
    expect(engine.sealFrames(bytes, 0, bytes.length)).toBe(1);
    expect(bytes.readUInt32LE(4)).toBe(referenceCrc(Buffer.from('abc')));
  });
});

describe.skipIf(!ENGINES.includes('native'))('sealFrames, native against js', () => {
  it('seals every run to the same bytes', () => {
    fc.assert(
      fc.property(payloads, (list) => {
        const [a, b] = [unsealed(list, 0, 0), unsealed(list, 0, 0)];
        expect(getEngine('native').sealFrames(a, 0, a.length)).toBe(getEngine('js').sealFrames(b, 0, b.length));
        expect(a.equals(b)).toBe(true);
      }),
    );
  });
});
