//! Walks remembered by pattern: the nodes a pattern's tokens reached, kept until a node is placed,
//! freed or moved. A pattern expanded again on a trie whose nodes did not change is then a lookup
//! instead of a validation and a walk down its levels. The native engine needs this where the js
//! engine does not: its every call crosses Node-API and copies the pattern first, so its walk has
//! less room before it costs more than the js engine's whole call on a small answer.
//!
//! What the nodes hold (names, counts, kept lists) is read afresh after the lookup, so only a
//! change of which nodes exist, or where, makes a remembered walk stale: a name added or removed at
//! a node that stays leaves every walk valid.

use super::TopicTrie;
use rustc_hash::FxHashMap;

/// Patterns remembered at most; all are forgotten at the next node change, or when a new pattern
/// finds this many.
const REMEMBERED_WALKS: usize = 64;
/// Nodes a remembered walk reaches at most: a walk reaching more costs its answer, not its walk.
const REMEMBERED_FRONTIER_NODES: usize = 64;
/// Longest pattern remembered, in UTF-8 bytes, so that the remembered texts stay small whatever
/// patterns callers send (only MQTT bounds a pattern's length).
const REMEMBERED_PATTERN_BYTES: usize = 256;

/// What a walk reached: the nodes and whether the pattern ends with a trailing wildcard, and the
/// nodes visited on the way (counted for compaction as if the walk ran again).
#[derive(Debug)]
struct RememberedWalk {
    frontier: Box<[u32]>,
    rest: bool,
    visited: usize,
}

/// The remembered walks of one trie.
#[derive(Debug, Default)]
pub(super) struct RememberedWalks {
    by_pattern: FxHashMap<Box<str>, RememberedWalk>,
}

impl TopicTrie {
    /// The walk of `pattern` as remembered: its nodes written into `frontier` and the visits set
    /// as the walk's; `None` when not remembered. A remembered pattern was valid.
    pub(super) fn remembered_walk(&mut self, pattern: &str, frontier: &mut Vec<u32>) -> Option<bool> {
        let walk = self.remembered.by_pattern.get(pattern)?;
        frontier.clear();
        frontier.extend_from_slice(&walk.frontier);
        self.last_walk_visited = walk.visited;
        Some(walk.rest)
    }

    /// Remembers the walk of `pattern` just done (`last_walk_visited` its visits), when it reached
    /// few enough nodes.
    pub(super) fn remember_walk(&mut self, pattern: &str, frontier: &[u32], rest: bool) {
        if frontier.len() > REMEMBERED_FRONTIER_NODES || pattern.len() > REMEMBERED_PATTERN_BYTES {
            return;
        }
        let walks = &mut self.remembered.by_pattern;
        if walks.len() == REMEMBERED_WALKS {
            walks.clear();
        }
        walks.insert(
            pattern.into(),
            RememberedWalk {
                frontier: frontier.into(),
                rest,
                visited: self.last_walk_visited,
            },
        );
    }

    /// How many walks are remembered.
    #[cfg(test)]
    pub(super) fn remembered_walks(&self) -> usize {
        self.remembered.by_pattern.len()
    }

    /// Forgets every remembered walk: a node was placed, freed or moved.
    pub(super) fn forget_walks(&mut self) {
        if !self.remembered.by_pattern.is_empty() {
            self.remembered.by_pattern.clear();
        }
    }
}
