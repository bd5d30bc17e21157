//! The two hashes of the on-disk format (docs/FORMAT.md): CRC-32C for record, header and checkpoint
//! checksums, MurmurHash3 x86 32-bit (seed 0) for the key and tag hashes of index entries. Both are
//! mirrored by `ts/common/crc32c.ts` and `ts/common/murmur3.ts` (and `seal_frames`, which checksums
//! the state journal's frames, by `ts/common/frames.ts`); the test vectors below are the ones
//! FORMAT.md states.

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

/// Bytes before a frame's payload: its u32 length, then its u32 CRC-32C (`seal_frames`).
pub const FRAME_HEADER_BYTES: usize = 8;

/// Fills in the checksum of every frame in `frames`, which holds frames back to back: a u32 payload
/// length (little-endian), four bytes for the CRC-32C of the payload (written here, little-endian),
/// then the payload. The broker's state journal frames its records so (docs/FORMAT.md, "Broker
/// state") and seals a run of them in one call. Returns how many frames it sealed, or `None` when a
/// frame runs past the end of `frames` (the frames before it are sealed, nothing after is touched).
pub fn seal_frames(frames: &mut [u8]) -> Option<usize> {
    let mut at = 0;
    let mut count = 0;
    while at < frames.len() {
        let header = frames.get(at..at + FRAME_HEADER_BYTES)?;
        let length = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let end = (at + FRAME_HEADER_BYTES).checked_add(length)?;
        let crc = crc32c(frames.get(at + FRAME_HEADER_BYTES..end)?);
        frames[at + 4..at + FRAME_HEADER_BYTES].copy_from_slice(&crc.to_le_bytes());
        at = end;
        count += 1;
    }
    Some(count)
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

    /// Frames of the given payloads, back to back, their checksums left zero.
    fn unsealed(payloads: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for payload in payloads {
            out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
            out.extend_from_slice(&[0; 4]);
            out.extend_from_slice(payload);
        }
        out
    }

    #[test]
    fn seal_frames_checksums_each_payload() {
        let payloads: [&[u8]; 3] = [b"123456789", b"", &[7; 300]];
        let mut frames = unsealed(&payloads);
        assert_eq!(seal_frames(&mut frames), Some(3));
        let mut at = 0;
        for payload in payloads {
            let crc = u32::from_le_bytes(frames[at + 4..at + 8].try_into().unwrap());
            assert_eq!(crc, crc32c(payload));
            at += FRAME_HEADER_BYTES + payload.len();
        }
        assert_eq!(u32::from_le_bytes(frames[4..8].try_into().unwrap()), 0xe306_9283);
        assert_eq!(seal_frames(&mut []), Some(0));
    }

    #[test]
    fn seal_frames_refuses_a_frame_past_the_end() {
        let mut frames = unsealed(&[b"abc", b"defgh"]);
        frames.truncate(frames.len() - 1);
        let before = frames.clone();
        assert_eq!(seal_frames(&mut frames), None);
        assert_eq!(
            u32::from_le_bytes(frames[4..8].try_into().unwrap()),
            crc32c(b"abc")
        );
        assert_eq!(frames[11..], before[11..], "the torn frame is not touched");
        let mut short = vec![3, 0, 0];
        assert_eq!(seal_frames(&mut short), None);
    }

    #[test]
    fn crc32c_vectors() {
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c(b""), 0);
    }
}
