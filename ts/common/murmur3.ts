/**
 * MurmurHash3 x86 32-bit, seed 0: the key and tag hashes stored in index entries (docs/FORMAT.md)
 * and the key-shared bucket of a message. Must give the same value as native/core/src/hash.rs.
 */

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

function mixKey(k: number): number {
  let x = Math.imul(k, C1);
  x = (x << 15) | (x >>> 17);
  return Math.imul(x, C2);
}

/** MurmurHash3 x86_32 of `bytes[start, end)` with seed 0, as an unsigned 32-bit number. */
export function murmur3(bytes: Uint8Array, start = 0, end = bytes.length): number {
  const length = end - start;
  let h = 0;
  let i = start;
  for (const stop = start + (length & ~3); i < stop; i += 4) {
    const k =
      (bytes[i] as number) |
      ((bytes[i + 1] as number) << 8) |
      ((bytes[i + 2] as number) << 16) |
      ((bytes[i + 3] as number) << 24);
    h ^= mixKey(k);
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const rest = length & 3;
  if (rest > 0) {
    let k = 0;
    if (rest === 3) k ^= (bytes[i + 2] as number) << 16;
    if (rest >= 2) k ^= (bytes[i + 1] as number) << 8;
    k ^= bytes[i] as number;
    h ^= mixKey(k);
  }
  h ^= length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
