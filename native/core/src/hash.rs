//! The two hashes of the on-disk format (docs/FORMAT.md): CRC-32C for record, header and checkpoint
//! checksums, MurmurHash3 x86 32-bit (seed 0) for the key and tag hashes of index entries. Both are
//! mirrored by `ts/shared/crc32c.ts` and `ts/shared/murmur3.ts`; the test vectors below are the
//! ones FORMAT.md states.

/// CRC-32C (Castagnoli) of `bytes`, hardware accelerated where the CPU has it.
#[inline]
pub fn crc32c(bytes: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if bytes.len() < SERIAL_CRC_BELOW_BYTES && std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE 4.2, checked just above.
        return unsafe { crc32c_serial_sse42(bytes) };
    }
    crc32c::crc32c(bytes)
}

/// Below this many bytes the `crc32c` crate runs the same serial loop of `crc32` instructions as
/// [`crc32c_serial_sse42`], but first aligns its input one byte at a time and sets up its
/// three-way parallel path for nothing; for a 150-byte record that is about 185 instructions
/// against 60. From here on the crate's parallel path is the faster one.
#[cfg(target_arch = "x86_64")]
const SERIAL_CRC_BELOW_BYTES: usize = 768;

/// CRC-32C with one `crc32` instruction per 8 bytes (unaligned loads cost nothing extra on x86-64),
/// then one per remaining byte.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
unsafe fn crc32c_serial_sse42(bytes: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};
    let mut words = bytes.chunks_exact(8);
    let mut crc = u64::from(u32::MAX);
    for word in &mut words {
        let mut chunk = [0u8; 8];
        chunk.copy_from_slice(word);
        crc = _mm_crc32_u64(crc, u64::from_le_bytes(chunk));
    }
    // The instruction leaves the CRC in the low 32 bits.
    let mut crc = crc as u32;
    for &byte in words.remainder() {
        crc = _mm_crc32_u8(crc, byte);
    }
    !crc
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
    fn crc32c_serial_path_matches_the_crate() {
        let bytes: Vec<u8> = (0..2000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for start in 0..9 {
            for len in 0..1000 {
                let slice = &bytes[start..start + len];
                assert_eq!(crc32c(slice), crc32c::crc32c(slice), "start {start} len {len}");
            }
        }
    }

    #[test]
    fn crc32c_vectors() {
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c(b""), 0);
    }
}
