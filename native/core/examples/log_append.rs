//! The commit log's hot paths without Node: appends 1,000,000 records (100 B and 1 KiB bodies)
//! over 10,000 LMQs in batches of 1,000 into a fresh log with default 256 MiB segments, a second
//! thread preparing the spare segment whenever it is used up (as ts/log.ts does on the libuv pool),
//! then reads every LMQ back. Prints medians of the rounds, the appending thread's minor page
//! faults, how often an append found the segment full and no spare ready (stalls) and how long
//! each preparation took.
//!
//! It also prints the machine's floor for those reads: the same records, in the same order, copied
//! out of a second (read-only) mapping of the segment files with nothing else done (no index, no
//! checks), the same with only a CRC-32C of each record (what verifying a record reads), and both
//! in one pass (what a checked read does at the least). A read through the log cannot beat that
//! floor, and `CommitLog.read` adds JavaScript on top. Appends are set against the same batches
//! written to a plain file, one write per batch.
//!
//! `cargo run --release -p litetopic-core --example log_append -- [dir] [rounds] [records] [body bytes,...]`
//!
//! `log_append floor <dir>` measures only the read floor over the log a closed `CommitLog` left in
//! `dir` (every LMQ's records in offset order, LMQs in name order) and prints it as one JSON line:
//! `npm run bench -- log` runs it after each native read, so the floor is paired with that read.
//!
//! Time on a shared machine is noisy; instructions are not. `append_batch` stays out of line so
//! `valgrind --tool=callgrind --toggle-collect='*append_batch*'` counts the append path alone.
#![allow(
    clippy::print_stdout,
    reason = "printing its figures is what the example is for"
)]

use litetopic_core::limits::DEFAULT_SEGMENT_BYTES;
use litetopic_core::log::{LogHandle, LogOptions, RealStorage};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const LMQS: usize = 10_000;
const BATCH: usize = 1_000;

fn lmq_name(i: usize) -> String {
    format!("%LMQ%$agents$t{}__a{}", i / 100, i % 100)
}

/// One message record as ts/shared/log-encode.ts writes it (offsets, store time and CRC zero).
fn encode(out: &mut Vec<u8>, lmq: &[u8], body: &[u8]) {
    let start = out.len();
    out.extend_from_slice(b"LTR1");
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&1_700_000_000_000u64.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&(lmq.len() as u16).to_le_bytes());
    out.extend_from_slice(lmq);
    out.extend_from_slice(&[0; 6]);
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(body);
    let size = (out.len() - start) as u32;
    out[start + 4..start + 8].copy_from_slice(&size.to_le_bytes());
}

fn thread_usage() -> libc::rusage {
    // SAFETY: `rusage` is a C struct of integers, for which all zero bytes are a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes the struct it is given, which outlives the call.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    usage
}

fn minor_faults() -> i64 {
    thread_usage().ru_minflt
}

/// The calling thread's CPU time so far, user and system, in seconds.
fn thread_cpu() -> (f64, f64) {
    let usage = thread_usage();
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (seconds(usage.ru_utime), seconds(usage.ru_stime))
}

struct Round {
    append_s: f64,
    /// The appending thread's CPU seconds, user and system.
    append_cpu: (f64, f64),
    /// The append floor: the same batches written to a plain file, one write per batch.
    plain_s: f64,
    faults: i64,
    stalls: usize,
    read_s: f64,
    read_records: usize,
    read_faults: Vec<i64>,
    /// The read floor (see [`read_floor`]).
    floor: Floor,
    /// How long each segment preparation took, ms.
    prepare_ms: Vec<u64>,
}

fn round(dir: &std::path::Path, body_bytes: usize, records: usize) -> Round {
    let _ = std::fs::remove_dir_all(dir);
    let options = LogOptions::new(DEFAULT_SEGMENT_BYTES as u64, 1_700_000_000_000);
    let log = LogHandle::open(dir, options, Arc::new(RealStorage)).expect("open");
    let names: Vec<String> = (0..LMQS).map(lmq_name).collect();
    let body = vec![b'x'; body_bytes];
    let mut state = 0x2545_f491_u64;
    let mut batches: Vec<Vec<u8>> = (0..records / BATCH)
        .map(|_| {
            let mut bytes = Vec::new();
            for _ in 0..BATCH {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                encode(
                    &mut bytes,
                    names[(state % LMQS as u64) as usize].as_bytes(),
                    &body,
                );
            }
            bytes
        })
        .collect();
    let plain_s = plain_file_floor(dir, &batches);
    // The preparer: ts/log.ts starts a preparation after any append that leaves no spare.
    let stop = Arc::new(AtomicBool::new(false));
    let preparer = {
        let (log, stop) = (log.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut prepare_ms = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                if !log.lock().spare_ready().expect("spare") {
                    let started = Instant::now();
                    log.prepare_segment(1_700_000_000_000).expect("prepare");
                    prepare_ms.push(started.elapsed().as_millis() as u64);
                } else {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
            prepare_ms
        })
    };
    while !log.lock().spare_ready().expect("spare") {
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut positions = vec![0f64; BATCH];
    let mut offsets = vec![0f64; BATCH];
    let faults = minor_faults();
    let cpu = thread_cpu();
    let started = Instant::now();
    let mut stalls = 0;
    for batch in &mut batches {
        let mut from = 0;
        loop {
            let start = batch_offset(batch, from);
            let written = append_batch(
                &log,
                &mut batch[start..],
                BATCH - from,
                &mut positions[from..],
                &mut offsets[from..],
            );
            from += written;
            if from == BATCH {
                break;
            }
            stalls += 1;
            std::thread::sleep(Duration::from_micros(100));
        }
    }
    let append_s = started.elapsed().as_secs_f64();
    let append_cpu = (thread_cpu().0 - cpu.0, thread_cpu().1 - cpu.1);
    let faults = minor_faults() - faults;
    stop.store(true, Ordering::Relaxed);
    let prepare_ms = preparer.join().expect("preparer");
    // Three passes (the first may still find pages the kernel has not mapped); the best counts.
    let mut read_s = f64::MAX;
    let mut read_records = 0;
    let mut read_faults = Vec::new();
    for _ in 0..3 {
        let faults = minor_faults();
        let started = Instant::now();
        read_records = 0;
        for name in &names {
            let read = log.lock().read(name.as_bytes(), 0, 1000).expect("read");
            read_records += read.positions.len();
        }
        read_s = read_s.min(started.elapsed().as_secs_f64());
        read_faults.push(minor_faults() - faults);
    }
    let names: Vec<Vec<u8>> = names.iter().map(|name| name.as_bytes().to_vec()).collect();
    let records_by_lmq = records_by_lmq(&log, &names);
    let floor = read_floor(dir, &records_by_lmq);
    log.close().expect("close");
    let _ = std::fs::remove_dir_all(dir);
    Round {
        append_s,
        append_cpu,
        plain_s,
        faults,
        stalls,
        read_s,
        read_records,
        read_faults,
        floor,
        prepare_ms,
    }
}

/// Seconds to write `batches` to a fresh plain file beside `dir`, one write per batch: the floor
/// under an append of the same bytes (no index, no segment files, no checksums).
fn plain_file_floor(dir: &std::path::Path, batches: &[Vec<u8>]) -> f64 {
    use std::io::Write;
    let path = dir.with_extension("plain");
    let _ = std::fs::remove_file(&path);
    let mut file = std::fs::File::create(&path).expect("create plain file");
    let started = Instant::now();
    for batch in batches {
        file.write_all(batch).expect("write plain file");
    }
    let seconds = started.elapsed().as_secs_f64();
    drop(file);
    let _ = std::fs::remove_file(&path);
    seconds
}

/// Records a floor pass prefetches ahead, and bytes of each, as the log's read does.
const FLOOR_PREFETCH_AHEAD: usize = 16;
const FLOOR_PREFETCH_BYTES: usize = 2048;

/// Seconds of the fastest of three passes of each kind over a log's records.
#[derive(Clone, Copy)]
struct Floor {
    /// Every record copied into a reused buffer.
    copy_s: f64,
    /// A CRC-32C of every record, nothing copied.
    checksum_s: f64,
    /// Every record copied and the copy checksummed: the least a checked read does.
    copy_checksum_s: f64,
}

/// The read floor over the records at `records` (position and size, per LMQ, in offset order). The
/// segment files are mapped again, read-only, so nothing of the log runs.
fn read_floor(dir: &std::path::Path, records: &[Vec<(u64, usize)>]) -> Floor {
    let mut segments: Vec<(u64, memmap2::Mmap)> = std::fs::read_dir(dir.join("segments"))
        .expect("list")
        .filter_map(|entry| {
            let path = entry.expect("entry").path();
            let base: u64 = path.file_name()?.to_str()?.strip_suffix(".seg")?.parse().ok()?;
            let file = std::fs::File::open(&path).expect("open segment");
            // SAFETY: read only; the log appends no more while the floor runs.
            Some((base, unsafe { memmap2::Mmap::map(&file) }.expect("map segment")))
        })
        .collect();
    segments.sort_by_key(|(base, _)| *base);
    let record_at = |(position, size): (u64, usize)| -> &[u8] {
        let (base, map) = &segments[segments.partition_point(|(base, _)| *base <= position) - 1];
        let at = (position - base) as usize;
        &map[at..at + size]
    };
    let prefetch = |bytes: &[u8]| {
        for line in bytes[..bytes.len().min(FLOOR_PREFETCH_BYTES)].chunks(64) {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a prefetch is a hint; it cannot fault or change memory.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(line.as_ptr().cast());
            }
            #[cfg(not(target_arch = "x86_64"))]
            std::hint::black_box(line);
        }
    };
    let pass = |each: &mut dyn FnMut(&[u8])| -> f64 {
        let started = Instant::now();
        for list in records {
            for (i, &record) in list.iter().enumerate() {
                if let Some(&ahead) = list.get(i + FLOOR_PREFETCH_AHEAD) {
                    prefetch(record_at(ahead));
                }
                each(record_at(record));
            }
        }
        started.elapsed().as_secs_f64()
    };
    let mut out = vec![0u8; 4 << 20];
    let mut floor = Floor {
        copy_s: f64::MAX,
        checksum_s: f64::MAX,
        copy_checksum_s: f64::MAX,
    };
    for _ in 0..3 {
        let mut at = 0;
        floor.copy_s = floor.copy_s.min(pass(&mut |record| {
            if at + record.len() > out.len() {
                at = 0;
            }
            out[at..at + record.len()].copy_from_slice(record);
            at += record.len();
        }));
        std::hint::black_box(&out);
        let mut sum = 0u32;
        floor.checksum_s = floor
            .checksum_s
            .min(pass(&mut |record| sum ^= litetopic_core::hash::crc32c(record)));
        let mut at = 0;
        floor.copy_checksum_s = floor.copy_checksum_s.min(pass(&mut |record| {
            if at + record.len() > out.len() {
                at = 0;
            }
            let copy = &mut out[at..at + record.len()];
            copy.copy_from_slice(record);
            sum ^= litetopic_core::hash::crc32c(copy);
            at += record.len();
        }));
        std::hint::black_box(sum);
    }
    floor
}

/// Each record's position and size, per LMQ in offset order, as the index gives them to a read.
fn records_by_lmq(log: &LogHandle, names: &[Vec<u8>]) -> Vec<Vec<(u64, usize)>> {
    names
        .iter()
        .map(|name| {
            let mut list = Vec::new();
            let mut from = 0;
            loop {
                let read = log.lock().read(name, from, 1000).expect("read");
                let mut at = 0;
                for &position in &read.positions {
                    let size = batch_offset(&read.bytes[at..], 1);
                    at += size;
                    list.push((position as u64, size));
                }
                if read.positions.len() < 1000 {
                    break list;
                }
                from = read.first_offset + read.positions.len() as u64;
            }
        })
        .collect()
}

/// `log_append floor <dir>`: the read floor over a closed log, as one JSON line of nanoseconds per
/// record.
fn floor_only(dir: &std::path::Path) {
    let mut options = LogOptions::new(DEFAULT_SEGMENT_BYTES as u64, 1_700_000_000_000);
    options.read_only = true;
    let log = LogHandle::open(dir, options, Arc::new(RealStorage)).expect("open read-only");
    let names: Vec<Vec<u8>> = log
        .lock()
        .list_lmqs(b"", None, usize::MAX)
        .expect("list")
        .names
        .iter()
        .map(|name| name.to_vec())
        .collect();
    let records = records_by_lmq(&log, &names);
    log.close().expect("close");
    let count: usize = records.iter().map(Vec::len).sum();
    let floor = read_floor(dir, &records);
    let ns = |seconds: f64| seconds * 1e9 / count.max(1) as f64;
    println!(
        "{{\"records\":{count},\"copyNs\":{:.3},\"checksumNs\":{:.3},\"copyChecksumNs\":{:.3}}}",
        ns(floor.copy_s),
        ns(floor.checksum_s),
        ns(floor.copy_checksum_s)
    );
}

/// One append call, kept out of line so a profiler can count it alone.
#[inline(never)]
fn append_batch(
    log: &LogHandle,
    batch: &mut [u8],
    count: usize,
    positions: &mut [f64],
    offsets: &mut [f64],
) -> usize {
    log.lock()
        .append(batch, count, 1_700_000_000_001, positions, offsets)
        .expect("append")
}

/// Byte offset of record `index` in a batch.
fn batch_offset(batch: &[u8], index: usize) -> usize {
    let mut at = 0;
    for _ in 0..index {
        at += u32::from_le_bytes(batch[at + 4..at + 8].try_into().expect("size")) as usize;
    }
    at
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("floor") {
        let dir = args.nth(1).expect("floor takes the log's directory");
        floor_only(std::path::Path::new(&dir));
        return;
    }
    let dir = std::path::PathBuf::from(args.next().unwrap_or_else(|| "/tmp/litetopic-log-append".into()));
    let rounds: usize = args.next().map_or(3, |r| r.parse().expect("rounds"));
    let records: usize = args.next().map_or(1_000_000, |r| r.parse().expect("records"));
    let bodies: Vec<usize> = args.next().map_or(vec![100, 1024], |b| {
        b.split(',').map(|n| n.parse().expect("body bytes")).collect()
    });
    for body_bytes in bodies {
        let results: Vec<Round> = (0..rounds).map(|_| round(&dir, body_bytes, records)).collect();
        let append = median(results.iter().map(|r| r.append_s).collect());
        let plain = median(results.iter().map(|r| r.plain_s).collect());
        let append_ratio = median(results.iter().map(|r| r.plain_s / r.append_s).collect());
        let read_ratio = median(
            results
                .iter()
                .map(|r| r.floor.copy_checksum_s / r.read_s)
                .collect(),
        );
        let read = median(results.iter().map(|r| r.read_s).collect());
        let copy = median(results.iter().map(|r| r.floor.copy_s).collect());
        let checksum = median(results.iter().map(|r| r.floor.checksum_s).collect());
        let copy_checksum = median(results.iter().map(|r| r.floor.copy_checksum_s).collect());
        println!(
            "{body_bytes:>5} B: append {:6.2} M rec/s {:5.2} GB/s (payload), plain file {:6.2} M rec/s, append / plain {:4.2}, append CPU user {:.2} s sys {:.2} s, faults {:?}, stalls {:?}, preparations {:?} ms; read {:6.2} M rec/s ({} records, faults {:?}); floor: copy {:6.2}, checksum {:6.2}, copy and checksum {:6.2} M rec/s, read / floor {:4.2}",
            records as f64 / append / 1e6,
            (records * body_bytes) as f64 / append / 1e9,
            records as f64 / plain / 1e6,
            append_ratio,
            median(results.iter().map(|r| r.append_cpu.0).collect()),
            median(results.iter().map(|r| r.append_cpu.1).collect()),
            results.iter().map(|r| r.faults).collect::<Vec<_>>(),
            results.iter().map(|r| r.stalls).collect::<Vec<_>>(),
            results.iter().map(|r| &r.prepare_ms).collect::<Vec<_>>(),
            records as f64 / read / 1e6,
            results[0].read_records,
            results[0].read_faults,
            records as f64 / copy / 1e6,
            records as f64 / checksum / 1e6,
            records as f64 / copy_checksum / 1e6,
            read_ratio,
        );
    }
}
