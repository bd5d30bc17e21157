//! The reverse pattern index handle.
//!
//! Exported as free functions over an `External` handle rather than as a class: napi-rs runs
//! per-call receiver checks and borrow bookkeeping on every class method, which a free function with
//! an external argument skips: on calls this small they are a large share of the cost. The handle
//! is still one long-lived native object, freed when JavaScript drops it.

use crate::dialect;
use crate::guard::{guard_handle, panic_point, Failed};
use litetopic_core::PatternIndex;
use napi::bindgen_prelude::{External, Uint32ArraySlice};
use napi::Result;
use napi_derive::napi;
use std::cell::RefCell;

/// One native pattern index and the scratch its lookups reuse. `RefCell` because napi hands out
/// shared references to externals; calls are synchronous on the JavaScript thread, so a borrow
/// never overlaps another (and a bug that made one would panic, which `guard_handle` turns into
/// `INTERNAL_ERROR`, failing the handle).
pub struct PatternIndexHandle {
    /// Set by a panic in a call on it (guard.rs).
    failed: Failed,
    pattern_index: RefCell<PatternIndex>,
    scratch: RefCell<Vec<u32>>,
}

#[napi(catch_unwind, ts_return_type = "ExternalObject<'PatternIndex'>")]
pub fn pattern_index_new(dialect_id: u32) -> Result<External<PatternIndexHandle>> {
    guard_handle(None, "pattern index", || {
        Ok(External::new(PatternIndexHandle {
            pattern_index: RefCell::new(PatternIndex::new(dialect(dialect_id)?)),
            scratch: RefCell::new(Vec::new()),
            failed: Failed::default(),
        }))
    })
    .and_then(|result| result)
}

/// Adds an entry: 1 if added, 0 if it was already there, -1 if the pattern is invalid (the caller
/// asks `validatePattern` for the details).
#[napi(catch_unwind)]
pub fn pattern_index_add(
    #[napi(ts_arg_type = "ExternalObject<'PatternIndex'>")] handle: &External<PatternIndexHandle>,
    pattern: String,
    id: u32,
) -> Result<i32> {
    guard_handle(Some(&handle.failed), "pattern index", || {
        match handle.pattern_index.borrow_mut().add(&pattern, id) {
            Ok(true) => 1,
            Ok(false) => 0,
            Err(_) => -1,
        }
    })
}

#[napi(catch_unwind)]
pub fn pattern_index_remove(
    #[napi(ts_arg_type = "ExternalObject<'PatternIndex'>")] handle: &External<PatternIndexHandle>,
    pattern: String,
    id: u32,
) -> Result<bool> {
    guard_handle(Some(&handle.failed), "pattern index", || {
        handle.pattern_index.borrow_mut().remove(&pattern, id)
    })
}

#[napi(catch_unwind)]
pub fn pattern_index_size(
    #[napi(ts_arg_type = "ExternalObject<'PatternIndex'>")] handle: &External<PatternIndexHandle>,
) -> Result<u32> {
    guard_handle(Some(&handle.failed), "pattern index", || {
        handle.pattern_index.borrow().len() as u32
    })
}

#[napi(catch_unwind)]
pub fn pattern_index_clear(
    #[napi(ts_arg_type = "ExternalObject<'PatternIndex'>")] handle: &External<PatternIndexHandle>,
) -> Result<()> {
    guard_handle(Some(&handle.failed), "pattern index", || {
        handle.pattern_index.borrow_mut().clear();
    })
}

/// Writes the matching ids (ascending, distinct) into `out` as far as it has room and returns how
/// many there are in all, so a caller with a short array can grow it and ask again.
#[napi(catch_unwind)]
pub fn pattern_index_match_into(
    #[napi(ts_arg_type = "ExternalObject<'PatternIndex'>")] handle: &External<PatternIndexHandle>,
    topic: String,
    mut out: Uint32ArraySlice,
) -> Result<u32> {
    guard_handle(Some(&handle.failed), "pattern index", || {
        let out = crate::out_slice(&mut out);
        let mut scratch = handle.scratch.borrow_mut();
        scratch.clear();
        let count = handle.pattern_index.borrow_mut().match_into(&topic, &mut scratch);
        let fit = count.min(out.len());
        out[..fit].copy_from_slice(&scratch[..fit]);
        count as u32
    })
}

/// For NUL-joined topics, writes each topic's number of matching ids into `out`; returns the sum, or
/// -1 when the joined string does not split into `out.length` topics.
#[napi(catch_unwind)]
pub fn pattern_index_match_counts_joined(
    #[napi(ts_arg_type = "ExternalObject<'PatternIndex'>")] handle: &External<PatternIndexHandle>,
    topics_joined: String,
    mut out: Uint32ArraySlice,
) -> Result<i64> {
    guard_handle(Some(&handle.failed), "pattern index", || {
        let out = crate::out_slice(&mut out);
        let mut pattern_index = handle.pattern_index.borrow_mut();
        let mut topics = topics_joined.split('\0');
        let mut total = 0i64;
        for slot in out.iter_mut() {
            let Some(topic) = topics.next() else { return -1 };
            let count = pattern_index.match_count(topic);
            *slot = count as u32;
            total += count as i64;
        }
        if topics.next().is_some() {
            return -1;
        }
        total
    })
}

/// `[entries, nodes, distinct segments, approximate bytes]`.
#[napi(catch_unwind)]
pub fn pattern_index_stats(
    #[napi(ts_arg_type = "ExternalObject<'PatternIndex'>")] handle: &External<PatternIndexHandle>,
) -> Result<Vec<u32>> {
    guard_handle(Some(&handle.failed), "pattern index", || {
        let s = handle.pattern_index.borrow().stats();
        panic_point("pattern_index_stats");
        vec![
            s.entries as u32,
            s.nodes as u32,
            s.segments as u32,
            s.approximate_bytes as u32,
        ]
    })
}
