//! Any bytes as a checkpoint file: decoding it and loading every LMQ it stores must return values
//! or errors, never panic, and every entry loaded must end inside the checkpoint's position. Half
//! the inputs (by their first byte) have their version 2 checksums made right first, so that the
//! fuzzer reaches the layout and entry checks behind them instead of stopping at a CRC.
#![no_main]

use libfuzzer_sys::fuzz_target;
use litetopic_core::hash::crc32c;
use litetopic_core::log::checkpoint::{self, HEADER_BYTES};
use litetopic_core::queue::CheckpointFile;
use memmap2::MmapMut;
use std::path::PathBuf;
use std::sync::Arc;

fuzz_target!(|input: &[u8]| {
    let Some((&mode, bytes)) = input.split_first() else {
        return;
    };
    let mut bytes = bytes.to_vec();
    if mode & 1 == 1 {
        reseal(&mut bytes);
    }
    if bytes.is_empty() {
        return;
    }
    let Ok(mut map) = MmapMut::map_anon(bytes.len()) else {
        return;
    };
    map.copy_from_slice(&bytes);
    let Ok(map) = map.make_read_only() else {
        return;
    };
    let file = Arc::new(CheckpointFile {
        path: PathBuf::from("fuzzed-checkpoint"),
        map,
    });
    let Ok(decoded) = checkpoint::decode(&file) else {
        return;
    };
    for (_, queue) in decoded.queues.iter() {
        let entries = match queue.stored() {
            Some(stored) => match stored.load() {
                Ok(entries) => entries,
                Err(_) => continue,
            },
            None => queue.entries().clone(),
        };
        for entry in &entries {
            assert!(entry.position + u64::from(entry.size) <= decoded.position);
        }
    }
});

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// Recomputes the block, directory and header checksums of version 2 bytes where they can be found.
fn reseal(bytes: &mut [u8]) {
    if bytes.len() < HEADER_BYTES {
        return;
    }
    let segments = u64_at(bytes, 32).unwrap_or(0) as u32 as usize;
    let queues = u64_at(bytes, 40).unwrap_or(0);
    let directory_end = u64_at(bytes, 48).unwrap_or(u64::MAX);
    if directory_end <= bytes.len() as u64 && directory_end >= HEADER_BYTES as u64 {
        let mut at = HEADER_BYTES + 16 * segments;
        let mut block_at = directory_end as usize;
        for _ in 0..queues.min(10_000) {
            if at + 2 > bytes.len() || block_at > bytes.len() {
                break;
            }
            let head = at + 2 + usize::from(u16::from_le_bytes([bytes[at], bytes[at + 1]]));
            let (Some(min), Some(next)) = (u64_at(bytes, head), u64_at(bytes, head + 8)) else {
                break;
            };
            let Some(block_end) = next
                .checked_sub(min)
                .and_then(|count| usize::try_from(count).ok())
                .and_then(|count| count.checked_mul(24))
                .and_then(|length| length.checked_add(block_at))
                .filter(|&end| end <= bytes.len())
            else {
                break;
            };
            if head + 36 <= bytes.len() {
                let crc = crc32c(&bytes[block_at..block_end]);
                bytes[head + 32..head + 36].copy_from_slice(&crc.to_le_bytes());
            }
            block_at = block_end;
            at = head + 40;
        }
        let crc = crc32c(&bytes[HEADER_BYTES..directory_end as usize]);
        bytes[56..60].copy_from_slice(&crc.to_le_bytes());
    }
    let crc = crc32c(&bytes[..60]);
    bytes[60..64].copy_from_slice(&crc.to_le_bytes());
}
