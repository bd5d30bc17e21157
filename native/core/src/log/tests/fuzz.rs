//! Deterministic mutation fuzzing of the decoders of what comes back from disk: records and
//! checkpoints. Valid inputs are built at random, then damaged (bit flips, truncation, length and
//! count fields set huge, random bytes), sometimes with their checksums made right again so the
//! damage reaches the layout checks behind them. No decoder may panic, and what one accepts must
//! stay inside its bytes: a record's size, and a checkpoint entry's record inside the checkpoint's
//! position. Each run is reproducible from its seed.

use crate::hash::crc32c;
use crate::log::checkpoint::{self, HEADER_BYTES};
use crate::log::record::*;
use crate::queue::{CheckpointFile, IndexEntry, Queues, STORED_ENTRY_BYTES};
use crate::test_rng::Rng;
use memmap2::MmapMut;
use std::path::PathBuf;
use std::sync::Arc;

const RUNS: usize = 4000;

fn bytes_of(rng: &mut Rng, max: usize) -> Vec<u8> {
    (0..rng.below(max + 1)).map(|_| rng.next() as u8).collect()
}

/// Damages `bytes` in one of four ways; `fields` are offsets of length, count and size fields.
fn damage(rng: &mut Rng, bytes: &mut Vec<u8>, fields: &[usize]) {
    if bytes.is_empty() {
        return;
    }
    match rng.below(4) {
        0 => {
            let at = rng.below(bytes.len());
            bytes[at] ^= 1 << rng.below(8);
        }
        1 => bytes.truncate(rng.below(bytes.len())),
        2 => {
            let at = fields.get(rng.below(fields.len().max(1))).copied().unwrap_or(0);
            let width = if rng.below(2) == 0 { 4 } else { 8 };
            if let Some(field) = bytes.get_mut(at..at + width) {
                field.fill(0xff);
            }
        }
        _ => {
            let at = rng.below(bytes.len());
            let noise = bytes_of(rng, 32);
            let end = (at + noise.len()).min(bytes.len());
            bytes[at..end].copy_from_slice(&noise[..end - at]);
        }
    }
}

fn random_record(rng: &mut Rng) -> Vec<u8> {
    let names: Vec<Vec<u8>> = (0..1 + rng.below(3))
        .map(|i| format!("lmq-{}-{i}", rng.below(5)).into_bytes())
        .collect();
    let key = bytes_of(rng, 8);
    let tag = bytes_of(rng, 8);
    let property = (bytes_of(rng, 4), bytes_of(rng, 4));
    let body = bytes_of(rng, 64);
    let mut record = RecordBuilder {
        kind: TYPE_MESSAGE,
        lmqs: names.iter().map(Vec::as_slice).collect(),
        key: (rng.below(2) == 0).then_some(key.as_slice()),
        tag: (rng.below(2) == 0).then_some(tag.as_slice()),
        properties: if rng.below(2) == 0 {
            vec![(property.0.as_slice(), property.1.as_slice())]
        } else {
            Vec::new()
        },
        body: &body,
        born_timestamp_ms: rng.next() >> 12,
    }
    .encode();
    for i in 0..names.len() {
        set_offset(&mut record, i, rng.next() >> 12);
    }
    seal(&mut record, rng.next() >> 12);
    record
}

#[test]
fn damaged_records_never_panic_and_accepted_ones_fit() {
    let mut rng = Rng(0x5eed_0001);
    for run in 0..RUNS {
        let mut record = random_record(&mut rng);
        let lmq_count = usize::from(u16::from_le_bytes([record[14], record[15]]));
        let names_at = RECORD_HEADER_BYTES + 8 * lmq_count;
        let body_length_at = record.len() - 4 - (record.len() - names_at).min(64);
        let fields = [4, 14, names_at, body_length_at, record.len().saturating_sub(4)];
        for _ in 0..1 + rng.below(3) {
            damage(&mut rng, &mut record, &fields);
        }
        if rng.below(2) == 0 && record.len() >= 12 {
            // The checksum made right over the size the record now claims, where that fits.
            let size = record_size(&record).map_or(0, |s| s as usize).min(record.len());
            if size >= 12 {
                let crc = crc32c(&record[12..size]);
                record[8..12].copy_from_slice(&crc.to_le_bytes());
            }
        }
        // A record is checked where it lies in its segment: with bytes after it.
        record.extend_from_slice(&[0; 16]);
        if let Ok(layout) = check_stored(&record) {
            assert!(
                layout.size as usize <= record.len(),
                "run {run}: size past the bytes"
            );
            let stored = &record[..layout.size as usize];
            assert_eq!(
                lmq_names(stored, &layout).count(),
                usize::from(layout.lmq_count),
                "run {run}"
            );
        }
    }
}

/// A checkpoint of random queues whose entries are valid for a log of `position` bytes.
fn random_checkpoint(rng: &mut Rng) -> Vec<u8> {
    let mut queues = Queues::default();
    let mut position = 64u64;
    for _ in 0..1 + rng.below(40) {
        let name = format!("lmq-{}", rng.below(6));
        let size = 40 + rng.below(200) as u32;
        let entry = IndexEntry {
            position,
            size,
            tag_hash: rng.next() as u32,
            key_hash: rng.next() as u32,
        };
        queues.append(name.as_bytes(), entry, rng.next() >> 12);
        position += u64::from(size);
    }
    let segments = [(0, rng.next() >> 12), (position / 2, rng.next() >> 12)];
    checkpoint::encode(position, 1, &segments, &queues)
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// The offsets of a version 2 checkpoint's count, length and size fields, and of each directory
/// entry's checksum with its block's range, as far as the (damaged) bytes can be followed.
struct Layout {
    fields: Vec<usize>,
    blocks: Vec<(usize, usize, usize)>,
}

fn layout_of(bytes: &[u8]) -> Layout {
    let mut layout = Layout {
        fields: vec![32, 40, 48],
        blocks: Vec::new(),
    };
    let (Some(segments), Some(queues), Some(directory_end)) = (
        u64_at(bytes, 32).map(|v| v as u32),
        u64_at(bytes, 40),
        u64_at(bytes, 48),
    ) else {
        return layout;
    };
    // Past the bytes there is nothing to follow (and the sums below could overflow).
    let mut at = HEADER_BYTES + 16 * segments as usize;
    let mut block_at = directory_end as usize;
    for _ in 0..queues.min(1000) {
        if at > bytes.len() || block_at > bytes.len() {
            break;
        }
        let Some(name) = bytes.get(at..at + 2) else { break };
        let name_length = usize::from(u16::from_le_bytes([name[0], name[1]]));
        let head = at + 2 + name_length;
        let (Some(min), Some(next)) = (u64_at(bytes, head), u64_at(bytes, head + 8)) else {
            break;
        };
        let count = next.wrapping_sub(min).min(1 << 20) as usize;
        layout.fields.extend([at, head, head + 8, head + 24]);
        for k in 0..count.min(64) {
            layout.fields.extend([block_at + 24 * k, block_at + 24 * k + 8]);
        }
        layout
            .blocks
            .push((head + 32, block_at, block_at + STORED_ENTRY_BYTES * count));
        block_at += STORED_ENTRY_BYTES * count;
        at = head + 40;
    }
    layout
}

/// Makes a (damaged) version 2 checkpoint's checksums right again where they can still be found.
fn reseal(bytes: &mut [u8]) {
    if bytes.len() < HEADER_BYTES || bytes[..8] != checkpoint::CHECKPOINT_MAGIC {
        return;
    }
    for (crc_at, from, to) in layout_of(bytes).blocks {
        if to <= bytes.len() && crc_at + 4 <= bytes.len() {
            let crc = crc32c(&bytes[from..to]);
            bytes[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
        }
    }
    if let Some(end) =
        u64_at(bytes, 48).filter(|&end| (HEADER_BYTES as u64..=bytes.len() as u64).contains(&end))
    {
        let crc = crc32c(&bytes[HEADER_BYTES..end as usize]);
        bytes[56..60].copy_from_slice(&crc.to_le_bytes());
    }
    let crc = crc32c(&bytes[..60]);
    bytes[60..64].copy_from_slice(&crc.to_le_bytes());
}

/// The bytes as a mapped checkpoint file (an anonymous mapping: no file needed).
fn mapped(bytes: &[u8]) -> Arc<CheckpointFile> {
    let mut map = MmapMut::map_anon(bytes.len()).expect("anonymous map");
    map.copy_from_slice(bytes);
    Arc::new(CheckpointFile {
        path: PathBuf::from("fuzzed-checkpoint"),
        map: map.make_read_only().expect("read only"),
    })
}

#[test]
fn damaged_checkpoints_never_panic_and_loaded_entries_stay_inside_the_log() {
    let mut rng = Rng(0x5eed_0002);
    for run in 0..RUNS {
        let mut bytes = random_checkpoint(&mut rng);
        let fields = layout_of(&bytes).fields;
        for _ in 0..1 + rng.below(3) {
            damage(&mut rng, &mut bytes, &fields);
        }
        if rng.below(2) == 0 {
            reseal(&mut bytes);
        }
        if bytes.is_empty() {
            continue;
        }
        let Ok(decoded) = checkpoint::decode(&mapped(&bytes)) else {
            continue;
        };
        for (name, queue) in decoded.queues.iter() {
            let Ok(entries) = queue.entries().to_deque() else {
                continue;
            };
            for entry in &entries {
                assert!(
                    entry.position + u64::from(entry.size) <= decoded.position,
                    "run {run}: an entry of {name:?} ends past the checkpoint's position"
                );
            }
        }
    }
}
