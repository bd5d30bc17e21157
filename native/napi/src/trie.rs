//! The topic-name trie handle. Lists of names cross as one NUL-joined string (NUL is invalid in
//! every dialect's names), ids in caller-owned typed arrays.

use crate::dialect;
use litetopic_core::{ErrorCode, TopicTrie};
use napi::bindgen_prelude::Uint32Array;
use napi::Result;
use napi_derive::napi;

/// One page of `list`: the names NUL-joined, and whether more follow.
#[napi(object)]
pub struct NativeListPage {
    pub names: String,
    pub more: bool,
}

/// One long-lived native trie.
#[napi]
pub struct NativeTopicTrie {
    trie: TopicTrie,
    ids: Vec<u32>,
}

/// `u32::MAX` from the caller means "no limit".
fn limit(value: u32) -> usize {
    if value == u32::MAX {
        usize::MAX
    } else {
        value as usize
    }
}

impl NativeTopicTrie {
    /// The names of `self.ids`, NUL-joined.
    fn joined_names(&self) -> String {
        let mut joined = String::new();
        for (i, &id) in self.ids.iter().enumerate() {
            if i > 0 {
                joined.push('\0');
            }
            self.trie.write_name(id, &mut joined);
        }
        joined
    }
}

#[napi]
impl NativeTopicTrie {
    /// `max_name_bytes` applies to lite names only.
    #[napi(constructor, catch_unwind)]
    pub fn new(dialect_id: u32, max_name_bytes: u32) -> Result<Self> {
        Ok(NativeTopicTrie {
            trie: TopicTrie::new(dialect(dialect_id)?, max_name_bytes as usize),
            ids: Vec::new(),
        })
    }

    /// The name's id; -1 for an invalid lite name, -2 for an invalid MQTT or NATS topic (the
    /// caller builds the typed error). Timestamps arrive validated: integers from 0.
    #[napi(catch_unwind)]
    pub fn add(&mut self, name: String, timestamp_ms: Option<i64>) -> i64 {
        match self.trie.add(&name, timestamp_ms.map(|t| t as u64)) {
            Ok(id) => i64::from(id),
            Err(ErrorCode::InvalidLiteTopic) => -1,
            Err(_) => -2,
        }
    }

    #[napi(catch_unwind)]
    pub fn remove(&mut self, name: String) -> bool {
        self.trie.remove(&name)
    }

    /// The id, or -1 when the name is not stored.
    #[napi(catch_unwind)]
    pub fn id_of(&self, name: String) -> i64 {
        self.trie.id_of(&name).map_or(-1, i64::from)
    }

    #[napi(catch_unwind)]
    pub fn name_of(&self, id: u32) -> Option<String> {
        self.trie.name_of(id)
    }

    #[napi(getter, catch_unwind)]
    pub fn size(&self) -> u32 {
        self.trie.len() as u32
    }

    #[napi(catch_unwind)]
    pub fn clear(&mut self) {
        self.trie.clear();
    }

    /// The matching names NUL-joined (`""` for none), or `null` for an invalid pattern.
    #[napi(catch_unwind)]
    pub fn expand_joined(&mut self, pattern: String) -> Option<String> {
        self.ids.clear();
        let mut ids = std::mem::take(&mut self.ids);
        let valid = self.trie.expand_into(&pattern, &mut ids).is_ok();
        self.ids = ids;
        valid.then(|| self.joined_names())
    }

    /// Writes the matching ids into `out` as far as it has room and returns how many there are in
    /// all, or -1 for an invalid pattern.
    #[napi(catch_unwind)]
    pub fn expand_into(&mut self, pattern: String, mut out: Uint32Array) -> i64 {
        // SAFETY: this call runs synchronously on the JavaScript thread, so nothing else reads or
        // writes the caller's array while the slice lives.
        let out: &mut [u32] = unsafe { out.as_mut() };
        self.ids.clear();
        let Ok(count) = self.trie.expand_into(&pattern, &mut self.ids) else {
            return -1;
        };
        let fit = count.min(out.len());
        out[..fit].copy_from_slice(&self.ids[..fit]);
        count as i64
    }

    /// How many names match, or -1 for an invalid pattern.
    #[napi(catch_unwind)]
    pub fn count(&mut self, pattern: String) -> i64 {
        self.trie.count(&pattern).map_or(-1, |n| n as i64)
    }

    /// One page of names in list order; `limit` `u32::MAX` means no limit.
    #[napi(catch_unwind)]
    pub fn list_joined(&mut self, prefix: String, limit_names: u32, after: Option<String>) -> NativeListPage {
        self.ids.clear();
        let mut ids = std::mem::take(&mut self.ids);
        let more = self
            .trie
            .list(&prefix, limit(limit_names), after.as_deref(), &mut ids);
        self.ids = ids;
        NativeListPage {
            names: self.joined_names(),
            more,
        }
    }

    #[napi(catch_unwind)]
    pub fn touch(&mut self, name: String, timestamp_ms: i64) -> bool {
        self.trie.touch(&name, timestamp_ms as u64)
    }

    /// Names idle since before `cutoff_ms`, oldest first, NUL-joined; `limit` `u32::MAX` means no
    /// limit.
    #[napi(catch_unwind)]
    pub fn idle_since_joined(&mut self, cutoff_ms: i64, limit_names: u32) -> String {
        self.ids.clear();
        let mut ids = std::mem::take(&mut self.ids);
        self.trie
            .idle_since(cutoff_ms as u64, limit(limit_names), &mut ids);
        self.ids = ids;
        self.joined_names()
    }

    /// `[names, nodes, distinct segments, approximate bytes]`.
    #[napi(catch_unwind)]
    pub fn stats(&self) -> Vec<f64> {
        let s = self.trie.stats();
        vec![
            s.names as f64,
            s.nodes as f64,
            s.segments as f64,
            s.approximate_bytes as f64,
        ]
    }
}
