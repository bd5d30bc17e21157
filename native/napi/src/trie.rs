//! The topic-name trie handle. Lists of names cross as one NUL-joined string (NUL is invalid in
//! every dialect's names), ids in caller-owned typed arrays.
//!
//! Exported as free functions over an `External` handle rather than as a class, as the pattern
//! index is (pattern_index.rs says why).

use crate::dialect;
use crate::guard::{guard_handle, panic_point, Failed};
use litetopic_core::{ErrorCode, TopicTrie};
use napi::bindgen_prelude::{External, Float64ArraySlice, Uint32ArraySlice};
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
    expansion: RefCell<Expansion>,
}

/// The last `expand` answer, handed out a string at a time; kept so a call does not grow new
/// buffers.
#[derive(Default)]
struct Expansion {
    /// The names, NUL-joined, and where each ends in bytes.
    text: String,
    ends: Vec<u32>,
    /// The node position of each name.
    positions: Vec<u32>,
    /// Byte ranges of `text` that become one string each, and whether each is ASCII.
    chunks: Vec<(usize, usize, bool)>,
    /// The chunk `topic_trie_expand_next` returns.
    next: usize,
}

/// Most bytes of names in one string `expand` returns: under V8's largest regular heap object
/// (128 KiB) even as UTF-16, which takes at most two bytes per byte of UTF-8.
const EXPAND_CHUNK_BYTES: usize = 60 * 1024;
/// Answers of more bytes cross as one string after all: the pieces are young objects that the
/// names cut from them keep alive, so each young-generation collection during a large answer copies
/// them all again (a 4 MB answer took 50 ms in pieces, 10 ms as one string), while one large
/// string is placed once.
const EXPAND_SPLIT_MAX_BYTES: usize = 1024 * 1024;

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
            expansion: RefCell::new(Expansion::default()),
            failed: Failed::default(),
        }))
    })
    .and_then(|result| result)
}

/// The name's id; -1 for an invalid lite name, -2 for an invalid MQTT or NATS topic (the caller
/// builds the typed error). Timestamps arrive validated: integers from 0.
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
            .add(&name, timestamp_ms.map(|t| t as u64))
        {
            Ok(id) => i64::from(id),
            Err(ErrorCode::InvalidLiteTopic) => -1,
            Err(_) => -2,
        }
    })
}

/// The node position the removed name ended at (which a later name may take from now on), or -1
/// when it was not stored.
#[napi(catch_unwind)]
pub fn topic_trie_remove(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    name: String,
) -> Result<i64> {
    guard_handle(Some(&handle.failed), "topic trie", || {
        handle.trie.borrow_mut().remove_at(&name).map_or(-1, i64::from)
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
/// `timestamps_ms[i]` (none where it is negative), and writes its id into `out[i]`. Returns -1 when
/// every name was added, else the index of the first invalid one: the names before it stay added.
#[napi(catch_unwind)]
pub fn topic_trie_add_joined(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    names: String,
    timestamps_ms: Float64ArraySlice,
    mut out: Uint32ArraySlice,
) -> Result<i64> {
    guard_handle(Some(&handle.failed), "topic trie", || {
        let out = crate::out_slice(&mut out);
        let timestamps: &[f64] = &timestamps_ms;
        let mut trie = handle.trie.borrow_mut();
        for (index, name) in names.split('\0').enumerate() {
            let timestamp = timestamps
                .get(index)
                .copied()
                .filter(|t| *t >= 0.0)
                .map(|t| t as u64);
            match trie.add(name, timestamp) {
                Ok(id) => {
                    if let Some(slot) = out.get_mut(index) {
                        *slot = id;
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

/// The matching names as strings of whole NUL-joined names: the first here (`""` for none), the
/// others from `topic_trie_expand_next`; `null` for an invalid pattern. The names are written
/// during the walk, so the answer is complete after this call. `ends[0]` receives the number of
/// names and `ends[1..]`, as far as there is room, where each name ends in its string, in UTF-16
/// code units, so the caller cuts the names out with `slice` instead of searching for separators;
/// a string's last name ends at its length. Up to `EXPAND_SPLIT_MAX_BYTES` of answer, each string
/// holds at most `EXPAND_CHUNK_BYTES` of names: V8 places a larger string in its large-object
/// space, which cost several times the copy (about 0.6 ms for 700 KB against 0.1 ms in 64 KB
/// pieces). An ASCII string (every lite answer) crosses as Latin-1, which V8 copies without
/// decoding, straight from the answer's buffer. `positions` receives, as far as there is room,
/// the node position of each name (see `topic_trie_expand_runs`).
#[napi(catch_unwind, ts_return_type = "string | null")]
pub fn topic_trie_expand_first<'env>(
    env: &'env Env,
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    pattern: String,
    mut ends: Uint32ArraySlice,
    mut positions: Uint32ArraySlice,
) -> Result<Option<JsString<'env>>> {
    guard_handle(Some(&handle.failed), "topic trie", || {
        let ends = crate::out_slice(&mut ends);
        let positions = crate::out_slice(&mut positions);
        let mut expansion = handle.expansion.borrow_mut();
        let Expansion {
            text,
            ends: found,
            positions: at,
            chunks,
            next,
        } = &mut *expansion;
        text.clear();
        found.clear();
        at.clear();
        chunks.clear();
        *next = 1;
        let Ok(count) = handle.trie.borrow_mut().expand_joined(&pattern, text, found, at) else {
            return Ok(None);
        };
        if let Some(first) = ends.first_mut() {
            *first = count as u32;
        }
        let fit = positions.len().min(count);
        positions[..fit].copy_from_slice(&at[..fit]);
        let room = ends.len().saturating_sub(1).min(count);
        let chunk_bytes = if text.len() <= EXPAND_SPLIT_MAX_BYTES {
            EXPAND_CHUNK_BYTES
        } else {
            usize::MAX
        };
        // Names `from..to` go into one string, starting at byte `start` of `text`.
        let (mut from, mut start) = (0, 0);
        while from < count {
            let mut to = from + 1;
            while to < count && found[to] as usize - start <= chunk_bytes {
                to += 1;
            }
            let end = found[to - 1] as usize;
            let ascii = text[start..end].is_ascii();
            // UTF-16 ends, counted name by name from where each starts, unless ASCII: the bytes.
            let mut at = 0;
            let mut name_start = start;
            for i in from..to.min(room) {
                let name_end = found[i] as usize;
                at += if ascii {
                    name_end - name_start
                } else {
                    text[name_start..name_end].chars().map(char::len_utf16).sum()
                };
                ends[i + 1] = at as u32;
                at += 1;
                name_start = name_end + 1;
            }
            chunks.push((start, end, ascii));
            from = to;
            start = end + 1;
        }
        chunk_string(env, text, chunks.first().copied().unwrap_or((0, 0, true))).map(Some)
    })
    .and_then(|result| result)
}

/// The next string of names of the last `topic_trie_expand_first`, or `null` after the last.
#[napi(catch_unwind, ts_return_type = "string | null")]
pub fn topic_trie_expand_next<'env>(
    env: &'env Env,
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
) -> Result<Option<JsString<'env>>> {
    guard_handle(Some(&handle.failed), "topic trie", || {
        let mut expansion = handle.expansion.borrow_mut();
        let Some(&chunk) = expansion.chunks.get(expansion.next) else {
            return Ok(None);
        };
        expansion.next += 1;
        chunk_string(env, &expansion.text, chunk).map(Some)
    })
    .and_then(|result| result)
}

/// One chunk of the answer as a string, created from the answer's buffer (V8 copies it once).
fn chunk_string<'env>(
    env: &'env Env,
    text: &str,
    (start, end, ascii): (usize, usize, bool),
) -> Result<JsString<'env>> {
    let piece = &text[start..end];
    if ascii {
        env.create_string_latin1(piece.as_bytes())
    } else {
        env.create_string(piece)
    }
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

/// Where the matching names sit, as runs of node positions (`TopicTrie::expand_runs`): returns
/// how many names match, or -1 for an invalid pattern. `out[0]` receives the layout epoch the
/// positions belong to, `out[1]` the number of runs, and `out[2..]` the runs as
/// `(start, end, names)` triples as far as there is room.
#[napi(catch_unwind)]
pub fn topic_trie_expand_runs(
    #[napi(ts_arg_type = "ExternalObject<'TopicTrie'>")] handle: &External<TopicTrieHandle>,
    pattern: String,
    mut out: Uint32ArraySlice,
) -> Result<i64> {
    guard_handle(Some(&handle.failed), "topic trie", || {
        let out = crate::out_slice(&mut out);
        let mut runs = handle.ids.borrow_mut();
        runs.clear();
        let mut trie = handle.trie.borrow_mut();
        let Ok(count) = trie.expand_runs(&pattern, &mut runs) else {
            return -1;
        };
        let header = [trie.layout_epoch(), (runs.len() / 3) as u32];
        for (slot, value) in out.iter_mut().zip(header.into_iter().chain(runs.iter().copied())) {
            *slot = value;
        }
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
