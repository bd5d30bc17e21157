//! The topic-name trie handle. Lists of names cross as one NUL-joined string (NUL is invalid in
//! every dialect's names), ids and expand plans in caller-owned typed arrays.
//!
//! Exported as free functions over an `External` handle rather than as a class, as the pattern
//! index is (pattern_index.rs says why).

use crate::dialect;
use crate::guard::{guard_handle, panic_point, Failed};
use litetopic_core::{ErrorCode, Plan, TopicTrie};
use napi::bindgen_prelude::{External, Float64ArraySlice, Uint32ArraySlice, Uint8ArraySlice};
use napi::{Env, JsString, Result};
use napi_derive::napi;
use std::cell::RefCell;

/// One page of `list`: the names NUL-joined, and whether more follow.
#[napi(object)]
pub struct NativeListPage {
    pub names: String,
    pub more: bool,
}

/// One long-lived native trie and the id scratch its calls reuse. `RefCell` because napi hands out
/// shared references to externals; calls are synchronous on the JavaScript thread, so a borrow
/// never overlaps another (a bug that made one would panic, which `guard_handle` turns into
/// `INTERNAL_ERROR`, failing the handle).
pub struct TopicTrieHandle {
    /// Set by a panic in a call on it (guard.rs).
    failed: Failed,
    trie: RefCell<TopicTrie>,
    ids: RefCell<Vec<u32>>,
    /// The last `expand` plan, kept until the next so the caller can read what did not fit.
    plan: RefCell<Plan>,
}

/// `u32::MAX` from the caller means "no limit".
fn limit(value: u32) -> usize {
    if value == u32::MAX {
        usize::MAX
    } else {
        value as usize
    }
}

/// The names of `ids`, NUL-joined.
fn joined_names(trie: &TopicTrie, ids: &[u32]) -> String {
    let mut joined = String::new();
    trie.write_names_joined(ids, &mut joined);
    joined
}

/// `max_name_bytes` applies to lite names only.
#[napi(catch_unwind, ts_return_type = "ExternalObject<'TopicTrie'>")]
pub fn topic_trie_new(dialect_id: u32, max_name_bytes: u32) -> Result<External<TopicTrieHandle>> {
    guard_handle(None, "topic trie", || {
        Ok(External::new(TopicTrieHandle {
            trie: RefCell::new(TopicTrie::new(dialect(dialect_id)?, max_name_bytes as usize)),
            ids: RefCell::new(Vec::new()),
            plan: RefCell::new(Plan::default()),
            failed: Failed::default(),
        }))
    })
    .and_then(|result| result)
}

/// Added to the id `topic_trie_add` returns when the caller is to keep the name's text as if a plan
/// had handed it out (`TopicTrie::add_for_plan`); ids are below it.
const KEEP_NAME: i64 = 1 << 32;

/// The name's id, plus `KEEP_NAME` when the caller is to keep the name's text as handed out
/// (`TopicTrie::add_for_plan`); -1 for an invalid lite name, -2 for an invalid MQTT or NATS topic
/// (the caller builds the typed error). Timestamps arrive validated: integers from 0.
#[napi(catch_unwind)]
pub fn topic_trie_add(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    name: String,
    timestamp_ms: Option<i64>,
) -> Result<i64> {
    guard_handle(Some(&handle.failed), "topic trie", || {
        match handle
            .trie
            .borrow_mut()
            .add_for_plan(&name, timestamp_ms.map(|t| t as u64))
        {
            Ok((id, keep)) => i64::from(id) + if keep { KEEP_NAME } else { 0 },
            Err(ErrorCode::InvalidLiteTopic) => -1,
            Err(_) => -2,
        }
    })
}

/// The id the removed name had (which a later name may take from now on), or -1 when it was not
/// stored.
#[napi(catch_unwind)]
pub fn topic_trie_remove(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    name: String,
) -> Result<i64> {
    guard_handle(Some(&handle.failed), "topic trie", || {
        handle.trie.borrow_mut().remove_id(&name).map_or(-1, i64::from)
    })
}

/// The id, or -1 when the name is not stored.
#[napi(catch_unwind)]
pub fn topic_trie_id_of(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    name: String,
) -> Result<i64> {
    guard_handle(Some(&handle.failed), "topic trie", || {
        handle.trie.borrow().id_of(&name).map_or(-1, i64::from)
    })
}

#[napi(catch_unwind)]
pub fn topic_trie_name_of(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    id: u32,
) -> Result<Option<String>> {
    guard_handle(Some(&handle.failed), "topic trie", || {
        handle.trie.borrow().name_of(id)
    })
}

#[napi(catch_unwind)]
pub fn topic_trie_size(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
) -> Result<u32> {
    guard_handle(Some(&handle.failed), "topic trie", || {
        handle.trie.borrow().len() as u32
    })
}

/// Adds each of the NUL-joined `names` in order, as `topic_trie_add` does, with the last activity
/// `timestamps_ms[i]` (none where it is negative), writes its id into `out[i]` and into `keep[i]`
/// 1 when the caller is to keep its text as handed out, else 0 (`TopicTrie::add_for_plan`).
/// Returns -1 when every name was added, else the index of the first invalid one: the names before
/// it stay added.
#[napi(catch_unwind)]
pub fn topic_trie_add_joined(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    names: String,
    timestamps_ms: Float64ArraySlice,
    mut out: Uint32ArraySlice,
    mut keep: Uint8ArraySlice,
) -> Result<i64> {
    guard_handle(Some(&handle.failed), "topic trie", || {
        let out = crate::out_slice(&mut out);
        // SAFETY: as in `crate::out_slice`: a caller-owned array written during this synchronous
        // call only.
        let keep = unsafe { keep.as_mut() };
        let timestamps: &[f64] = &timestamps_ms;
        let mut trie = handle.trie.borrow_mut();
        for (index, name) in names.split('\0').enumerate() {
            let timestamp = timestamps
                .get(index)
                .copied()
                .filter(|t| *t >= 0.0)
                .map(|t| t as u64);
            match trie.add_for_plan(name, timestamp) {
                Ok((id, kept)) => {
                    if let Some(slot) = out.get_mut(index) {
                        *slot = id;
                    }
                    if let Some(slot) = keep.get_mut(index) {
                        *slot = u8::from(kept);
                    }
                }
                Err(_) => return index as i64,
            }
        }
        -1
    })
}

#[napi(catch_unwind)]
pub fn topic_trie_clear(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
) -> Result<()> {
    guard_handle(Some(&handle.failed), "topic trie", || {
        handle.trie.borrow_mut().clear();
    })
}

/// The answer to `pattern` as a plan (`TopicTrie::expand_plan`): `out[0]` receives the plan's
/// length in words, `out[1]` the number of names, and `out[2..]` the plan as far as there is room
/// (the rest from `topic_trie_plan_copy`). Returns the texts of the names the plan hands out for
/// the first time, NUL-joined (Latin-1 when ASCII, which V8 copies without decoding), or `null` for
/// an invalid pattern.
#[napi(catch_unwind, ts_return_type = "string | null")]
pub fn topic_trie_expand_plan<'env>(
    env: &'env Env,
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    pattern: String,
    mut out: Uint32ArraySlice,
) -> Result<Option<JsString<'env>>> {
    guard_handle(Some(&handle.failed), "topic trie", || {
        let out = crate::out_slice(&mut out);
        let mut plan = handle.plan.borrow_mut();
        plan.clear();
        let Ok(count) = handle.trie.borrow_mut().expand_plan(&pattern, &mut plan) else {
            return Ok(None);
        };
        let header = [plan.ops.len() as u32, count as u32];
        for (slot, value) in out
            .iter_mut()
            .zip(header.into_iter().chain(plan.ops.iter().copied()))
        {
            *slot = value;
        }
        let text = &plan.text;
        if text.is_ascii() {
            env.create_string_latin1(text.as_bytes()).map(Some)
        } else {
            env.create_string(text).map(Some)
        }
    })
    .and_then(|result| result)
}

/// Copies the last plan's words from `from` on into `out`, as far as there is room.
#[napi(catch_unwind)]
pub fn topic_trie_plan_copy(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    mut out: Uint32ArraySlice,
    from: u32,
) -> Result<()> {
    guard_handle(Some(&handle.failed), "topic trie", || {
        let out = crate::out_slice(&mut out);
        let plan = handle.plan.borrow();
        let rest = plan.ops.get(from as usize..).unwrap_or_default();
        let fit = rest.len().min(out.len());
        out[..fit].copy_from_slice(&rest[..fit]);
    })
}

/// Writes the matching ids into `out` as far as it has room and returns how many there are in
/// all, or -1 for an invalid pattern.
#[napi(catch_unwind)]
pub fn topic_trie_expand_into(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    pattern: String,
    mut out: Uint32ArraySlice,
) -> Result<i64> {
    guard_handle(Some(&handle.failed), "topic trie", || {
        let out = crate::out_slice(&mut out);
        let mut ids = handle.ids.borrow_mut();
        ids.clear();
        let Ok(count) = handle.trie.borrow_mut().expand_into(&pattern, &mut ids) else {
            return -1;
        };
        let fit = count.min(out.len());
        out[..fit].copy_from_slice(&ids[..fit]);
        count as i64
    })
}

/// How many names match, or -1 for an invalid pattern.
#[napi(catch_unwind)]
pub fn topic_trie_count(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    pattern: String,
) -> Result<i64> {
    guard_handle(Some(&handle.failed), "topic trie", || {
        handle.trie.borrow_mut().count(&pattern).map_or(-1, |n| n as i64)
    })
}

/// One page of names in list order; `limit` `u32::MAX` means no limit.
#[napi(catch_unwind)]
pub fn topic_trie_list_joined(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    prefix: String,
    limit_names: u32,
    after: Option<String>,
) -> Result<NativeListPage> {
    guard_handle(Some(&handle.failed), "topic trie", || {
        let trie = handle.trie.borrow();
        let mut ids = handle.ids.borrow_mut();
        ids.clear();
        let more = trie.list(&prefix, limit(limit_names), after.as_deref(), &mut ids);
        NativeListPage {
            names: joined_names(&trie, &ids),
            more,
        }
    })
}

#[napi(catch_unwind)]
pub fn topic_trie_touch(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    name: String,
    timestamp_ms: i64,
) -> Result<bool> {
    guard_handle(Some(&handle.failed), "topic trie", || {
        handle.trie.borrow_mut().touch(&name, timestamp_ms as u64)
    })
}

/// Names idle since before `cutoff_ms`, oldest first, NUL-joined; `limit` `u32::MAX` means no
/// limit.
#[napi(catch_unwind)]
pub fn topic_trie_idle_since_joined(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    cutoff_ms: i64,
    limit_names: u32,
) -> Result<String> {
    guard_handle(Some(&handle.failed), "topic trie", || {
        let trie = handle.trie.borrow();
        let mut ids = handle.ids.borrow_mut();
        ids.clear();
        trie.idle_since(cutoff_ms as u64, limit(limit_names), &mut ids);
        joined_names(&trie, &ids)
    })
}

/// `[names, nodes, distinct segments, approximate bytes]`.
#[napi(catch_unwind)]
pub fn topic_trie_stats(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
) -> Result<Vec<f64>> {
    guard_handle(Some(&handle.failed), "topic trie", || {
        let s = handle.trie.borrow().stats();
        panic_point("topic_trie_stats");
        vec![
            s.names as f64,
            s.nodes as f64,
            s.segments as f64,
            s.approximate_bytes as f64,
        ]
    })
}
