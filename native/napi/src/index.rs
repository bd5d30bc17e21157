//! The reverse pattern index handle.

use crate::dialect;
use litetopic_core::PatternIndex;
use napi::bindgen_prelude::Uint32Array;
use napi::Result;
use napi_derive::napi;

/// One long-lived native pattern index. Lookups fill caller-owned typed arrays.
#[napi]
pub struct NativePatternIndex {
    index: PatternIndex,
    scratch: Vec<u32>,
}

#[napi]
impl NativePatternIndex {
    #[napi(constructor, catch_unwind)]
    pub fn new(dialect_id: u32) -> Result<Self> {
        Ok(NativePatternIndex {
            index: PatternIndex::new(dialect(dialect_id)?),
            scratch: Vec::new(),
        })
    }

    /// Adds an entry: 1 if added, 0 if it was already there, -1 if the pattern is invalid (the
    /// caller asks `validatePattern` for the details).
    #[napi(catch_unwind)]
    pub fn add(&mut self, pattern: String, id: u32) -> i32 {
        match self.index.add(&pattern, id) {
            Ok(true) => 1,
            Ok(false) => 0,
            Err(_) => -1,
        }
    }

    #[napi(catch_unwind)]
    pub fn remove(&mut self, pattern: String, id: u32) -> bool {
        self.index.remove(&pattern, id)
    }

    #[napi(getter, catch_unwind)]
    pub fn size(&self) -> u32 {
        self.index.len() as u32
    }

    #[napi(catch_unwind)]
    pub fn clear(&mut self) {
        self.index.clear();
    }

    /// Writes the matching ids (ascending, distinct) into `out` as far as it has room and returns
    /// how many there are in all, so a caller with a short array can grow it and ask again.
    #[napi(catch_unwind)]
    pub fn match_into(&mut self, topic: String, mut out: Uint32Array) -> u32 {
        // SAFETY: this call runs synchronously on the JavaScript thread, so nothing else reads or
        // writes the caller's array while the slice lives.
        let out: &mut [u32] = unsafe { out.as_mut() };
        self.scratch.clear();
        let count = self.index.match_into(&topic, &mut self.scratch);
        let fit = count.min(out.len());
        out[..fit].copy_from_slice(&self.scratch[..fit]);
        count as u32
    }

    /// For NUL-joined topics, writes each topic's number of matching ids into `out`; returns the sum,
    /// or -1 when the joined string does not split into `out.length` topics.
    #[napi(catch_unwind)]
    pub fn match_counts_joined(&mut self, topics_joined: String, mut out: Uint32Array) -> i64 {
        // SAFETY: this call runs synchronously on the JavaScript thread, so nothing else reads or
        // writes the caller's array while the slice lives.
        let out: &mut [u32] = unsafe { out.as_mut() };
        let mut topics = topics_joined.split('\0');
        let mut total = 0i64;
        for slot in out.iter_mut() {
            let Some(topic) = topics.next() else { return -1 };
            let count = self.index.match_count(topic);
            *slot = count as u32;
            total += count as i64;
        }
        if topics.next().is_some() {
            return -1;
        }
        total
    }

    /// `[entries, nodes, distinct segments, approximate bytes]`.
    #[napi(catch_unwind)]
    pub fn stats(&self) -> Vec<u32> {
        let s = self.index.stats();
        vec![
            s.entries as u32,
            s.nodes as u32,
            s.segments as u32,
            s.approximate_bytes as u32,
        ]
    }
}
