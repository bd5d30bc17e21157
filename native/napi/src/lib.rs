//! Node-API binding of `litetopic-core`: argument conversions and long-lived handles, nothing else.
//! Every export is marked `catch_unwind`, so a panic becomes a JavaScript exception instead of
//! aborting the process; the log's exports and its thread-pool tasks also run inside `guard`, which
//! makes the exception the typed `INTERNAL_ERROR` and fails the log (guard.rs). The TypeScript side
//! (`ts/engine/native/*`) is the only caller; it validates arguments and turns failures into typed
//! errors.

mod guard;
mod log;
mod pattern;
mod pattern_index;
mod trie;

use litetopic_core::{Dialect, ErrorCode, Reason};
use napi::{Error, Result, Status};
use napi_derive::napi;

/// The crate version behind a fixed prefix and a NUL. `version()` reads it from here, so the bytes stay
/// in every binary, and the packaging scripts find them to tell which version a binary built for
/// another platform belongs to without loading it.
const VERSION_MARKER: &str = concat!("litetopic-version:", env!("CARGO_PKG_VERSION"), "\0");

/// The crate version; the loader refuses a binary whose version differs from the package's.
#[napi(catch_unwind)]
pub fn version() -> String {
    let marked = std::hint::black_box(VERSION_MARKER);
    marked
        .trim_start_matches("litetopic-version:")
        .trim_end_matches('\0')
        .to_string()
}

/// Every stable error code, in registry order, so tests can compare them with the js engine's.
#[napi(catch_unwind)]
pub fn error_codes() -> Vec<String> {
    ErrorCode::ALL.iter().map(|c| c.as_str().to_string()).collect()
}

/// Every validation reason, in registry order.
#[napi(catch_unwind)]
pub fn validation_reasons() -> Vec<String> {
    Reason::ALL.iter().map(|r| r.as_str().to_string()).collect()
}

/// The core's limits as `[name, value]` pairs, so tests can compare them with the js engine's.
#[napi(catch_unwind)]
pub fn limits() -> Vec<(String, f64)> {
    use litetopic_core::limits::*;
    let all: [(&str, usize); 14] = [
        ("MAX_LITE_TOPIC_BYTES", MAX_LITE_TOPIC_BYTES),
        ("MAX_LITE_TOPIC_BYTES_CEILING", MAX_LITE_TOPIC_BYTES_CEILING),
        ("MAX_MQTT_TOPIC_BYTES", MAX_MQTT_TOPIC_BYTES),
        ("TRIE_IDLE_BLOCK_ENTRIES", TRIE_IDLE_BLOCK_ENTRIES),
        ("SEGMENT_HEADER_BYTES", SEGMENT_HEADER_BYTES),
        ("MIN_SEGMENT_BYTES", MIN_SEGMENT_BYTES),
        ("MAX_SEGMENT_BYTES", MAX_SEGMENT_BYTES),
        ("DEFAULT_SEGMENT_BYTES", DEFAULT_SEGMENT_BYTES),
        ("MAX_LMQS_PER_RECORD", MAX_LMQS_PER_RECORD),
        ("MAX_LMQ_NAME_BYTES", MAX_LMQ_NAME_BYTES),
        ("MAX_FIELD_BYTES", MAX_FIELD_BYTES),
        ("MAX_PROPERTIES", MAX_PROPERTIES),
        ("MAX_APPEND_RECORDS", MAX_APPEND_RECORDS),
        ("MAX_READ_RECORDS", MAX_READ_RECORDS),
    ];
    all.iter()
        .map(|(name, value)| (name.to_string(), *value as f64))
        .collect()
}

/// The caller's typed array as a mutable slice.
///
/// Every export that fills a caller-owned array runs synchronously on the JavaScript thread, so
/// nothing else reads or writes the array while the slice lives: the one reason these writes are
/// sound, kept here rather than repeated at each use. Arrays come in as `…ArraySlice` arguments:
/// an owned typed-array argument creates and deletes a reference to its array on every call.
pub(crate) fn out_slice<'a>(out: &'a mut napi::bindgen_prelude::Uint32ArraySlice<'_>) -> &'a mut [u32] {
    // SAFETY: see above; the slice does not outlive the synchronous call that borrowed `out`.
    unsafe { out.as_mut() }
}

/// Fills in the CRC-32C of every frame in `bytes[start, end)` (`litetopic_core::hash::seal_frames`:
/// u32 length, u32 checksum, payload, back to back) and returns how many there were; -1 when the
/// range is outside `bytes` or a frame runs past `end` (the frames before it are sealed).
#[napi(catch_unwind)]
pub fn seal_frames(mut bytes: napi::bindgen_prelude::Uint8ArraySlice, start: u32, end: u32) -> i32 {
    // SAFETY: as in `out_slice`: the caller's array, written only during this synchronous call.
    let bytes = unsafe { bytes.as_mut() };
    bytes
        .get_mut(start as usize..end as usize)
        .and_then(litetopic_core::hash::seal_frames)
        .and_then(|count| i32::try_from(count).ok())
        .unwrap_or(-1)
}

pub(crate) fn dialect(id: u32) -> Result<Dialect> {
    Dialect::from_id(id).ok_or_else(|| Error::new(Status::InvalidArg, format!("unknown dialect id {id}")))
}
