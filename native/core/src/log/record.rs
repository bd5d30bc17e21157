//! The record layout of docs/FORMAT.md: the validity rules, run by the writer before a record is
//! stored (on what the caller encoded) and by recovery and every read (on what came back from disk),
//! and the two things the engine fills in: LMQ offsets, then store timestamp and checksum.
//! Mirrors `ts/shared/log-record.ts`.

use crate::hash::{crc32c, murmur3_32};
use crate::limits::{MAX_LMQS_PER_RECORD, MAX_LMQ_NAME_BYTES};

/// `LTR1`: the first bytes of every record.
pub const RECORD_MAGIC: [u8; 4] = *b"LTR1";
/// `LTE1`: written where the next record did not fit in the segment.
pub const END_MARKER: [u8; 4] = *b"LTE1";
/// Fixed part of a record, before the LMQ offsets.
pub const RECORD_HEADER_BYTES: usize = 32;
pub const TYPE_MESSAGE: u8 = 1;
/// An LMQ deletion: replaying it drops the LMQ.
pub const TYPE_DELETE: u8 = 2;
const FLAG_HAS_KEY: u8 = 1;
const FLAG_HAS_TAG: u8 = 2;
const CRC_AT: usize = 8;
/// Where the bytes a record's checksum covers start.
pub(crate) const CRC_FROM: usize = 12;
const STORE_TIMESTAMP_AT: usize = 16;
const BORN_TIMESTAMP_AT: usize = 24;
/// Positions, offsets and timestamps must be JavaScript-safe integers for the js engine to read them.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// What the writer and the index need from a record whose layout is valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub size: u32,
    pub kind: u8,
    pub lmq_count: u16,
    /// Where the first LMQ name's length prefix is, from the record start.
    pub names_at: u32,
    pub key_hash: u32,
    /// 0 when the record has no tag.
    pub tag_hash: u32,
    /// Where the body starts, from the record start (it runs to the record's end).
    pub body_at: u32,
}

pub(crate) fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

pub(crate) fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

pub(crate) fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// The `size` field of the record at the start of `bytes`, if there are 8 bytes to read it from.
pub fn record_size(bytes: &[u8]) -> Option<u32> {
    u32_at(bytes, 4)
}

/// The end of a field with a `width`-byte length prefix at `at`, if it fits in `bytes`.
fn field_end(bytes: &[u8], at: usize, width: usize) -> Option<usize> {
    let length = if width == 2 {
        usize::from(u16_at(bytes, at)?)
    } else {
        u32_at(bytes, at)? as usize
    };
    let end = at + width + length;
    (end <= bytes.len()).then_some(end)
}

/// Checks everything the encoder is responsible for in `record` (exactly one record's bytes): magic,
/// size, type, flags, LMQ count and names, key, tag, properties and body adding up to the size, and
/// the born timestamp. The checksum, store timestamp and offsets are the engine's to fill in and are
/// checked by [`check_stored`].
pub fn check_layout(record: &[u8]) -> Result<Layout, &'static str> {
    if record.len() < RECORD_HEADER_BYTES {
        return Err("not enough bytes for a record header");
    }
    if record[..4] != RECORD_MAGIC {
        return Err("no record magic");
    }
    if record_size(record) != Some(record.len() as u32) {
        return Err("record size does not match its bytes");
    }
    let kind = record[12];
    let flags = record[13];
    let lmq_count = u16_at(record, 14).unwrap_or(0);
    if kind != TYPE_MESSAGE && kind != TYPE_DELETE {
        return Err("unknown record type");
    }
    if flags & !(FLAG_HAS_KEY | FLAG_HAS_TAG) != 0 {
        return Err("unknown flags");
    }
    if lmq_count == 0 || usize::from(lmq_count) > MAX_LMQS_PER_RECORD {
        return Err("LMQ count out of range");
    }
    if u64_at(record, BORN_TIMESTAMP_AT).unwrap_or(u64::MAX) > MAX_SAFE_INTEGER {
        return Err("timestamp out of range");
    }
    let names_at = RECORD_HEADER_BYTES + 8 * usize::from(lmq_count);
    if names_at > record.len() {
        return Err("LMQ offsets overrun the record");
    }
    let mut at = names_at;
    for _ in 0..lmq_count {
        let end = field_end(record, at, 2).ok_or("bad LMQ name")?;
        let name = &record[at + 2..end];
        if name.is_empty() || name.len() > MAX_LMQ_NAME_BYTES {
            return Err("bad LMQ name");
        }
        // Names are nearly always ASCII, which a word-at-a-time scan confirms in a few
        // instructions; full UTF-8 validation costs more than the rest of the record's checks.
        if !name.is_ascii() && std::str::from_utf8(name).is_err() {
            return Err("LMQ name is not UTF-8");
        }
        at = end;
    }
    let key_end = field_end(record, at, 2).ok_or("bad key")?;
    if flags & FLAG_HAS_KEY == 0 && key_end != at + 2 {
        return Err("bad key");
    }
    let key_hash = murmur3_32(&record[at + 2..key_end]);
    at = key_end;
    let tag_end = field_end(record, at, 2).ok_or("bad tag")?;
    if flags & FLAG_HAS_TAG == 0 && tag_end != at + 2 {
        return Err("bad tag");
    }
    let tag_hash = if flags & FLAG_HAS_TAG == 0 {
        0
    } else {
        murmur3_32(&record[at + 2..tag_end])
    };
    at = tag_end;
    let property_count = u16_at(record, at).ok_or("property count overruns the record")?;
    at += 2;
    for _ in 0..2 * u32::from(property_count) {
        at = field_end(record, at, 2).ok_or("bad property")?;
    }
    let body_end = field_end(record, at, 4);
    if body_end != Some(record.len()) {
        return Err("record parts do not add up to its size");
    }
    if kind == TYPE_DELETE && (lmq_count != 1 || flags != 0 || property_count != 0 || record.len() != at + 4)
    {
        return Err("malformed LMQ deletion record");
    }
    Ok(Layout {
        size: record.len() as u32,
        kind,
        lmq_count,
        names_at: names_at as u32,
        key_hash,
        tag_hash,
        body_at: (at + 4) as u32,
    })
}

/// Checks the record at the start of `rest` (the remainder of its segment) against every rule of
/// docs/FORMAT.md ("Validity"): what recovery and reads run on bytes that came back from disk.
pub fn check_stored(rest: &[u8]) -> Result<Layout, &'static str> {
    check_stored_summed(rest, None)
}

/// [`check_stored`], given the CRC-32C of `rest` from [`CRC_FROM`] on when the caller computed it
/// (with those of other records, side by side): used when the record is all of `rest`, else
/// computed here.
pub fn check_stored_summed(rest: &[u8], rest_crc: Option<u32>) -> Result<Layout, &'static str> {
    if rest.len() < RECORD_HEADER_BYTES {
        return Err("not enough bytes for a record header");
    }
    if rest[..4] != RECORD_MAGIC {
        return Err("no record magic");
    }
    let size = record_size(rest).unwrap_or(0) as usize;
    if size < RECORD_HEADER_BYTES || size > rest.len() {
        return Err("record size does not fit");
    }
    let record = &rest[..size];
    let crc = match rest_crc {
        Some(crc) if size == rest.len() => crc,
        _ => crc32c(&record[CRC_FROM..]),
    };
    if u32_at(record, CRC_AT) != Some(crc) {
        return Err("checksum mismatch");
    }
    let layout = check_layout(record)?;
    if store_timestamp(record) > MAX_SAFE_INTEGER {
        return Err("timestamp out of range");
    }
    if (0..usize::from(layout.lmq_count)).any(|i| offset(record, i) > MAX_SAFE_INTEGER) {
        return Err("LMQ offset out of range");
    }
    Ok(layout)
}

/// The record's LMQ names, in order. `record` must have passed [`check_layout`].
pub fn lmq_names<'a>(record: &'a [u8], layout: &Layout) -> impl Iterator<Item = &'a [u8]> + 'a {
    let mut at = layout.names_at as usize;
    (0..layout.lmq_count).map(move |_| {
        let length = usize::from(u16_at(record, at).unwrap_or(0));
        let name = record.get(at + 2..at + 2 + length).unwrap_or_default();
        at += 2 + length;
        name
    })
}

/// Where the record's body starts and ends within it. `record` must have passed [`check_layout`],
/// which gave `layout`.
pub fn body_range(record: &[u8], layout: &Layout) -> Option<(usize, usize)> {
    let start = layout.body_at as usize;
    let length = u32_at(record, start.checked_sub(4)?)? as usize;
    (start + length == record.len()).then_some((start, record.len()))
}

/// The record's offset in its `i`-th LMQ.
pub fn offset(record: &[u8], i: usize) -> u64 {
    u64_at(record, RECORD_HEADER_BYTES + 8 * i).unwrap_or(u64::MAX)
}

pub fn store_timestamp(record: &[u8]) -> u64 {
    u64_at(record, STORE_TIMESTAMP_AT).unwrap_or(u64::MAX)
}

/// Sets the record's offset in its `i`-th LMQ.
#[inline]
pub fn set_offset(record: &mut [u8], i: usize, offset: u64) {
    let at = RECORD_HEADER_BYTES + 8 * i;
    record[at..at + 8].copy_from_slice(&offset.to_le_bytes());
}

/// Stamps the store timestamp, then the checksum over everything after it: the last write before
/// the record counts as stored.
#[inline]
pub fn seal(record: &mut [u8], store_timestamp_ms: u64) {
    record[STORE_TIMESTAMP_AT..STORE_TIMESTAMP_AT + 8].copy_from_slice(&store_timestamp_ms.to_le_bytes());
    let crc = crc32c(&record[CRC_FROM..]);
    record[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
}

/// Records whose checksums are computed together ([`seal_run`], and reads by LMQ).
pub(crate) const CRC_LANES: usize = 4;

/// Computes and stores the checksum of every record of `run` (whole records back to back, their
/// store timestamps already set): what [`seal`] does to each, with the checksums of
/// [`CRC_LANES`] records computed together. One record's checksum is a chain of `crc32`
/// instructions, each waiting for the one before; the chains of several records run side by side.
pub fn seal_run(run: &mut [u8]) {
    let mut spans = [(0usize, 0usize); CRC_LANES];
    let mut lanes = 0;
    let mut at = 0;
    while let Some(size) = record_size(&run[at..]) {
        let size = size as usize;
        debug_assert!(
            size >= RECORD_HEADER_BYTES && at + size <= run.len(),
            "a record overruns the run"
        );
        spans[lanes] = (at, at + size);
        lanes += 1;
        at += size;
        if lanes == CRC_LANES {
            seal_lanes(run, &spans);
            lanes = 0;
        }
    }
    for &(start, end) in &spans[..lanes] {
        let crc = crc32c(&run[start + CRC_FROM..end]);
        run[start + CRC_AT..start + CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
    }
}

/// Seals the [`CRC_LANES`] records at `spans` of `run` together.
fn seal_lanes(run: &mut [u8], spans: &[(usize, usize); CRC_LANES]) {
    let crcs = crc32c_lanes(spans.map(|(start, end)| run.get(start + CRC_FROM..end).unwrap_or_default()));
    for (&(start, _), crc) in spans.iter().zip(crcs) {
        run[start + CRC_AT..start + CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
    }
}

/// The CRC-32C of each of `parts`, computed side by side where the CPU has SSE 4.2.
pub(crate) fn crc32c_lanes(parts: [&[u8]; CRC_LANES]) -> [u32; CRC_LANES] {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE 4.2, checked just above.
        return unsafe { crc32c_lanes_sse42(parts) };
    }
    parts.map(crc32c)
}

/// [`crc32c_lanes`] with one `crc32` instruction per 8 bytes of each part, the parts in step over
/// the words they all have, then each part's rest on its own.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
unsafe fn crc32c_lanes_sse42(parts: [&[u8]; CRC_LANES]) -> [u32; CRC_LANES] {
    use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};
    let word = |part: &[u8], at: usize| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&part[at..at + 8]);
        u64::from_le_bytes(bytes)
    };
    let common = parts.iter().map(|part| part.len()).min().unwrap_or(0) / 8 * 8;
    let mut crcs = [u64::from(u32::MAX); CRC_LANES];
    let mut at = 0;
    while at < common {
        for (crc, part) in crcs.iter_mut().zip(&parts) {
            *crc = _mm_crc32_u64(*crc, word(part, at));
        }
        at += 8;
    }
    let mut out = [0u32; CRC_LANES];
    for ((out, &crc), part) in out.iter_mut().zip(&crcs).zip(&parts) {
        let mut crc = crc;
        let mut from = at;
        while from + 8 <= part.len() {
            crc = _mm_crc32_u64(crc, word(part, from));
            from += 8;
        }
        // The instruction leaves the CRC in the low 32 bits.
        let mut crc = crc as u32;
        for &byte in &part[from..] {
            crc = _mm_crc32_u8(crc, byte);
        }
        *out = !crc;
    }
    out
}

/// Builds one record, as `ts/shared/log-encode.ts` does; for tests.
#[cfg(test)]
#[derive(Clone, Debug, Default)]
pub struct RecordBuilder<'a> {
    pub kind: u8,
    pub lmqs: Vec<&'a [u8]>,
    pub key: Option<&'a [u8]>,
    pub tag: Option<&'a [u8]>,
    pub properties: Vec<(&'a [u8], &'a [u8])>,
    pub body: &'a [u8],
    pub born_timestamp_ms: u64,
}

#[cfg(test)]
impl RecordBuilder<'_> {
    /// The encoded record, offsets and store timestamp zero, checksum unset.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.body.len());
        out.extend_from_slice(&RECORD_MAGIC);
        out.extend_from_slice(&[0; 8]);
        let flags = u8::from(self.key.is_some()) * FLAG_HAS_KEY + u8::from(self.tag.is_some()) * FLAG_HAS_TAG;
        out.extend_from_slice(&[self.kind, flags]);
        out.extend_from_slice(&(self.lmqs.len() as u16).to_le_bytes());
        out.extend_from_slice(&[0; 8]);
        out.extend_from_slice(&self.born_timestamp_ms.to_le_bytes());
        out.resize(out.len() + 8 * self.lmqs.len(), 0);
        let short = |out: &mut Vec<u8>, field: &[u8]| {
            out.extend_from_slice(&(field.len() as u16).to_le_bytes());
            out.extend_from_slice(field);
        };
        for name in &self.lmqs {
            short(&mut out, name);
        }
        short(&mut out, self.key.unwrap_or_default());
        short(&mut out, self.tag.unwrap_or_default());
        out.extend_from_slice(&(self.properties.len() as u16).to_le_bytes());
        for (name, value) in &self.properties {
            short(&mut out, name);
            short(&mut out, value);
        }
        out.extend_from_slice(&(self.body.len() as u32).to_le_bytes());
        out.extend_from_slice(self.body);
        let size = out.len() as u32;
        out[4..8].copy_from_slice(&size.to_le_bytes());
        out
    }
}

/// An LMQ deletion record for `lmq`, which had reached `next_offset`; for tests.
#[cfg(test)]
pub fn deletion_record(lmq: &[u8], next_offset: u64, now_ms: u64) -> Vec<u8> {
    let mut record = RecordBuilder {
        kind: TYPE_DELETE,
        lmqs: vec![lmq],
        born_timestamp_ms: now_ms,
        ..RecordBuilder::default()
    }
    .encode();
    set_offset(&mut record, 0, next_offset);
    record
}
