//! The two hashes of the on-disk format (docs/FORMAT.md): CRC-32C for record, header and checkpoint
//! checksums, MurmurHash3 x86 32-bit (seed 0) for the key and tag hashes of index entries. Both are
//! mirrored by `ts/engine/js/crc32c.ts` and `ts/engine/js/murmur3.ts`; the test vectors below are the
//! ones FORMAT.md states.

/// CRC-32C (Castagnoli) of `bytes`, hardware accelerated where the CPU has it.
#[inline]
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

/// MurmurHash3 x86 32-bit with seed 0.
pub fn murmur3_32(bytes: &[u8]) -> u32 {
    const C1: u32 = 0xcc9e_2d51;
    const C2: u32 = 0x1b87_3593;
    let mut h: u32 = 0;
    let mut blocks = bytes.chunks_exact(4);
    for block in &mut blocks {
        let k = u32::from_le_bytes([block[0], block[1], block[2], block[3]]);
        h ^= k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        let mut k: u32 = 0;
        for (i, &byte) in tail.iter().enumerate() {
            k |= u32::from(byte) << (8 * i);
        }
        h ^= k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
    }
    h ^= bytes.len() as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur3_vectors() {
        assert_eq!(murmur3_32(b"hello"), 0x248b_fa47);
        assert_eq!(murmur3_32(b"a"), 0x3c25_69b2);
        assert_eq!(murmur3_32(b"key-0"), 0xe337_f8bf);
        assert_eq!(murmur3_32(b""), 0);
    }

    #[test]
    fn crc32c_vectors() {
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c(b""), 0);
    }
}
