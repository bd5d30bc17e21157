//! The topic-name trie handle. Lists of names cross as one NUL-joined string (NUL is invalid in
//! every dialect's names), ids in caller-owned typed arrays.
//!
//! Exported as free functions over an `External` handle rather than as a class, as the pattern
//! index is (see index.rs): napi-rs 3.16 class methods cost about twice a free function per call.

use crate::dialect;
use litetopic_core::{ErrorCode, TopicTrie};
use napi::bindgen_prelude::{Either, External, Latin1String, Uint32Array};
use napi::Result;
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
/// never overlaps another (a bug that made one would panic, which `catch_unwind` turns into an
/// exception).
pub struct TopicTrieHandle {
    trie: RefCell<TopicTrie>,
    ids: RefCell<Vec<u32>>,
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
    for (i, &id) in ids.iter().enumerate() {
        if i > 0 {
            joined.push('\0');
        }
        trie.write_name(id, &mut joined);
    }
    joined
}

/// `max_name_bytes` applies to lite names only.
#[napi(catch_unwind, ts_return_type = "ExternalObject<'TopicTrie'>")]
pub fn topic_trie_new(dialect_id: u32, max_name_bytes: u32) -> Result<External<TopicTrieHandle>> {
    Ok(External::new(TopicTrieHandle {
        trie: RefCell::new(TopicTrie::new(dialect(dialect_id)?, max_name_bytes as usize)),
        ids: RefCell::new(Vec::new()),
    }))
}

/// The name's id; -1 for an invalid lite name, -2 for an invalid MQTT or NATS topic (the caller
/// builds the typed error). Timestamps arrive validated: integers from 0.
#[napi(catch_unwind)]
pub fn topic_trie_add(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    name: String,
    timestamp_ms: Option<i64>,
) -> i64 {
    match handle
        .trie
        .borrow_mut()
        .add(&name, timestamp_ms.map(|t| t as u64))
    {
        Ok(id) => i64::from(id),
        Err(ErrorCode::InvalidLiteTopic) => -1,
        Err(_) => -2,
    }
}

#[napi(catch_unwind)]
pub fn topic_trie_remove(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    name: String,
) -> bool {
    handle.trie.borrow_mut().remove(&name)
}

/// The id, or -1 when the name is not stored.
#[napi(catch_unwind)]
pub fn topic_trie_id_of(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    name: String,
) -> i64 {
    handle.trie.borrow().id_of(&name).map_or(-1, i64::from)
}

#[napi(catch_unwind)]
pub fn topic_trie_name_of(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    id: u32,
) -> Option<String> {
    handle.trie.borrow().name_of(id)
}

#[napi(catch_unwind)]
pub fn topic_trie_size(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
) -> u32 {
    handle.trie.borrow().len() as u32
}

#[napi(catch_unwind)]
pub fn topic_trie_clear(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
) {
    handle.trie.borrow_mut().clear();
}

/// The matching names NUL-joined (`""` for none), or `null` for an invalid pattern. The names are
/// written during the walk, so the whole answer crosses in this one call. `ends[0]` receives the
/// number of names and `ends[1..]`, as far as there is room, where each name ends in UTF-16 code
/// units, so the caller cuts the names out with `slice` instead of searching for separators. An
/// ASCII answer (every lite answer) crosses as Latin-1, which V8 copies without decoding.
#[napi(catch_unwind)]
pub fn topic_trie_expand_joined(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    pattern: String,
    mut ends: Uint32Array,
) -> Option<Either<Latin1String, String>> {
    let ends = crate::out_slice(&mut ends);
    let mut joined = String::new();
    let mut found = handle.ids.borrow_mut();
    found.clear();
    let count = handle
        .trie
        .borrow_mut()
        .expand_joined(&pattern, &mut joined, &mut found)
        .ok()?;
    if let Some((first, rest)) = ends.split_first_mut() {
        *first = count as u32;
        let fit = rest.len().min(found.len());
        rest[..fit].copy_from_slice(&found[..fit]);
    }
    Some(if joined.is_ascii() {
        Either::A(Latin1String::from(joined))
    } else {
        Either::B(joined)
    })
}

/// Writes the matching ids into `out` as far as it has room and returns how many there are in
/// all, or -1 for an invalid pattern.
#[napi(catch_unwind)]
pub fn topic_trie_expand_into(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    pattern: String,
    mut out: Uint32Array,
) -> i64 {
    let out = crate::out_slice(&mut out);
    let mut ids = handle.ids.borrow_mut();
    ids.clear();
    let Ok(count) = handle.trie.borrow_mut().expand_into(&pattern, &mut ids) else {
        return -1;
    };
    let fit = count.min(out.len());
    out[..fit].copy_from_slice(&ids[..fit]);
    count as i64
}

/// How many names match, or -1 for an invalid pattern.
#[napi(catch_unwind)]
pub fn topic_trie_count(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    pattern: String,
) -> i64 {
    handle.trie.borrow_mut().count(&pattern).map_or(-1, |n| n as i64)
}

/// One page of names in list order; `limit` `u32::MAX` means no limit.
#[napi(catch_unwind)]
pub fn topic_trie_list_joined(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    prefix: String,
    limit_names: u32,
    after: Option<String>,
) -> NativeListPage {
    let trie = handle.trie.borrow();
    let mut ids = handle.ids.borrow_mut();
    ids.clear();
    let more = trie.list(&prefix, limit(limit_names), after.as_deref(), &mut ids);
    NativeListPage {
        names: joined_names(&trie, &ids),
        more,
    }
}

#[napi(catch_unwind)]
pub fn topic_trie_touch(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    name: String,
    timestamp_ms: i64,
) -> bool {
    handle.trie.borrow_mut().touch(&name, timestamp_ms as u64)
}

/// Names idle since before `cutoff_ms`, oldest first, NUL-joined; `limit` `u32::MAX` means no
/// limit.
#[napi(catch_unwind)]
pub fn topic_trie_idle_since_joined(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    cutoff_ms: i64,
    limit_names: u32,
) -> String {
    let trie = handle.trie.borrow();
    let mut ids = handle.ids.borrow_mut();
    ids.clear();
    trie.idle_since(cutoff_ms as u64, limit(limit_names), &mut ids);
    joined_names(&trie, &ids)
}

/// `[names, nodes, distinct segments, approximate bytes]`.
#[napi(catch_unwind)]
pub fn topic_trie_stats(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
) -> Vec<f64> {
    let s = handle.trie.borrow().stats();
    vec![
        s.names as f64,
        s.nodes as f64,
        s.segments as f64,
        s.approximate_bytes as f64,
    ]
}
