/**
 * CRC-32C (Castagnoli), the checksum of every record, segment header and checkpoint
 * (docs/FORMAT.md). Slicing over precomputed tables: a short input takes eight table lookups per
 * eight bytes instead of one per byte; a long one is read four bytes at a time through a 32-bit
 * view and takes sixteen lookups per sixteen bytes, which halves the loads per byte (recovery
 * checks hundreds of megabytes of checkpoint blocks and records this way). The native engine uses
 * the CPU's CRC32 instruction for the same value.
 */

/** The reflected Castagnoli polynomial. */
const POLYNOMIAL = 0x82f63b78;
/** Sixteen tables of 256 entries: table `k` advances a byte through `k` more zero bytes. */
const TABLES = buildTables(16);
/**
 * Bytes from which an input is read through a 32-bit view: below it, making the view costs more
 * than the wider reads save.
 */
const WORDS_FROM_BYTES = 1024;
/** The 32-bit view reads bytes in the platform's order; the tables assume little-endian words. */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

function buildTables(count: number): Int32Array {
  const tables = new Int32Array(count * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLYNOMIAL : c >>> 1;
    tables[n] = c;
  }
  for (let t = 1; t < count; t++) {
    for (let n = 0; n < 256; n++) {
      const previous = tables[(t - 1) * 256 + n] as number;
      tables[t * 256 + n] = (previous >>> 8) ^ (tables[previous & 0xff] as number);
    }
  }
  return tables;
}

/**
 * CRC-32C of `bytes[start, end)`, as an unsigned 32-bit number. `previous`: the CRC of the bytes
 * before these, to checksum a stream piece by piece (0 for the first piece).
 */
export function crc32c(bytes: Uint8Array, start = 0, end = bytes.length, previous = 0): number {
  const c = ~previous;
  const inverted =
    LITTLE_ENDIAN && end - start >= WORDS_FROM_BYTES ? byWords(bytes, start, end, c) : byBytes(bytes, start, end, c);
  return ~inverted >>> 0;
}

/** The running (inverted) CRC `c` advanced over `bytes[start, end)`, eight bytes a step. */
function byBytes(bytes: Uint8Array, start: number, end: number, c: number): number {
  const t = TABLES;
  let i = start;
  for (const stop = end - 8; i <= stop; i += 8) {
    const a =
      c ^
      ((bytes[i] as number) |
        ((bytes[i + 1] as number) << 8) |
        ((bytes[i + 2] as number) << 16) |
        ((bytes[i + 3] as number) << 24));
    c =
      (t[1792 + (a & 0xff)] as number) ^
      (t[1536 + ((a >>> 8) & 0xff)] as number) ^
      (t[1280 + ((a >>> 16) & 0xff)] as number) ^
      (t[1024 + (a >>> 24)] as number) ^
      (t[768 + (bytes[i + 4] as number)] as number) ^
      (t[512 + (bytes[i + 5] as number)] as number) ^
      (t[256 + (bytes[i + 6] as number)] as number) ^
      (t[bytes[i + 7] as number] as number);
  }
  for (; i < end; i++) c = (t[(c ^ (bytes[i] as number)) & 0xff] as number) ^ (c >>> 8);
  return c;
}

/**
 * The running (inverted) CRC `c` advanced over `bytes[start, end)`: bytes one at a time up to a
 * multiple of four in the underlying buffer, then sixteen bytes a step as four 32-bit words.
 */
function byWords(bytes: Uint8Array, start: number, end: number, c: number): number {
  const t = TABLES;
  let i = start;
  for (; i < end && ((bytes.byteOffset + i) & 3) !== 0; i++) {
    c = (t[(c ^ (bytes[i] as number)) & 0xff] as number) ^ (c >>> 8);
  }
  const steps = (end - i) >>> 4;
  const words = new Int32Array(bytes.buffer, bytes.byteOffset + i, 4 * steps);
  for (let k = 0; k < words.length; k += 4) {
    const a = c ^ (words[k] as number);
    const b = words[k + 1] as number;
    const d = words[k + 2] as number;
    const e = words[k + 3] as number;
    c =
      (t[3840 + (a & 0xff)] as number) ^
      (t[3584 + ((a >>> 8) & 0xff)] as number) ^
      (t[3328 + ((a >>> 16) & 0xff)] as number) ^
      (t[3072 + (a >>> 24)] as number) ^
      (t[2816 + (b & 0xff)] as number) ^
      (t[2560 + ((b >>> 8) & 0xff)] as number) ^
      (t[2304 + ((b >>> 16) & 0xff)] as number) ^
      (t[2048 + (b >>> 24)] as number) ^
      (t[1792 + (d & 0xff)] as number) ^
      (t[1536 + ((d >>> 8) & 0xff)] as number) ^
      (t[1280 + ((d >>> 16) & 0xff)] as number) ^
      (t[1024 + (d >>> 24)] as number) ^
      (t[768 + (e & 0xff)] as number) ^
      (t[512 + ((e >>> 8) & 0xff)] as number) ^
      (t[256 + ((e >>> 16) & 0xff)] as number) ^
      (t[e >>> 24] as number);
  }
  return byBytes(bytes, i + 16 * steps, end, c);
}
