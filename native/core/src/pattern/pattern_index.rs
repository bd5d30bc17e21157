//! The reverse pattern index: given a topic, the ids of every subscription whose pattern matches it,
//! without looking at patterns that cannot match.
//!
//! Patterns are compiled into a segment automaton (a trie over interned segment ids, like NATS's
//! sublist): a node per pattern prefix, literal edges in one hash map keyed by (node, segment id), one
//! `one`-wildcard child per node, and at each node the ids whose pattern ends there (`exact_ids`) or
//! continues with the trailing wildcard (`rest_ids`). A lookup walks only the branches the topic's
//! segments can take. Nodes and segment strings are reference-counted and freed on removal, so memory
//! follows the live patterns.

#[cfg(test)]
mod tests;

use super::{tokenize, Token};
use crate::dialect::Dialect;
use crate::error::Violation;
use crate::interner::Interner;
use rustc_hash::FxHashMap;

const NONE: u32 = u32::MAX;
const ROOT: u32 = 0;

#[derive(Debug, Default)]
struct Node {
    parent: u32,
    /// The segment id on the edge from the parent, or `NONE` for the one-wildcard edge and the root.
    segment: u32,
    one_child: u32,
    literal_children: u32,
    /// Ids whose pattern ends at this node, sorted ascending.
    exact_ids: Vec<u32>,
    /// Ids whose pattern is this node's path followed by the trailing wildcard, sorted ascending.
    rest_ids: Vec<u32>,
}

impl Node {
    fn new(parent: u32, segment: u32) -> Node {
        Node {
            parent,
            segment,
            one_child: NONE,
            literal_children: 0,
            exact_ids: Vec::new(),
            rest_ids: Vec::new(),
        }
    }

    fn is_unused(&self) -> bool {
        self.one_child == NONE
            && self.literal_children == 0
            && self.exact_ids.is_empty()
            && self.rest_ids.is_empty()
    }
}

/// Memory and shape figures for reports and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PatternIndexStats {
    pub entries: usize,
    pub nodes: usize,
    pub segments: usize,
    pub approximate_bytes: usize,
}

/// Reverse index from topic to the ids of matching subscriptions.
#[derive(Debug)]
pub struct PatternIndex {
    dialect: Dialect,
    nodes: Vec<Node>,
    free_nodes: Vec<u32>,
    edges: FxHashMap<u64, u32>,
    segments: Interner,
    entries: usize,
    /// Largest id added since the index was created or cleared (decides the dedup strategy).
    max_id: u32,
    // Scratch reused by every lookup, so matching does not allocate in steady state.
    topic_segments: Vec<u32>,
    stack: Vec<(u32, u32)>,
    lists: Vec<ListRef>,
    scratch: Vec<u32>,
    stamps: Vec<u32>,
    generation: u32,
}

/// One id list a lookup reached: a node's exact or rest ids.
#[derive(Clone, Copy, Debug)]
struct ListRef {
    node: u32,
    rest: bool,
}

/// Removes adjacent duplicates from a sorted slice in place; returns the distinct count.
fn dedup_sorted(found: &mut [u32]) -> usize {
    if found.is_empty() {
        return 0;
    }
    let mut kept = 1;
    for i in 1..found.len() {
        if found[i] != found[kept - 1] {
            found[kept] = found[i];
            kept += 1;
        }
    }
    kept
}

fn edge_key(node: u32, segment: u32) -> u64 {
    (u64::from(node) << 32) | u64::from(segment)
}

impl PatternIndex {
    pub fn new(dialect: Dialect) -> PatternIndex {
        PatternIndex {
            dialect,
            nodes: vec![Node::new(NONE, NONE)],
            free_nodes: Vec::new(),
            edges: FxHashMap::default(),
            segments: Interner::default(),
            entries: 0,
            max_id: 0,
            topic_segments: Vec::new(),
            stack: Vec::new(),
            lists: Vec::new(),
            scratch: Vec::new(),
            stamps: Vec::new(),
            generation: 0,
        }
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Number of (pattern, id) entries.
    pub fn len(&self) -> usize {
        self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Adds `id` under `pattern`. Returns `Ok(false)` if that exact entry was already present.
    pub fn add(&mut self, pattern: &str, id: u32) -> Result<bool, Violation> {
        self.dialect.validate_pattern(pattern)?;
        let (node, rest) = self.locate(pattern, true);
        let ids = self.ids_mut(node, rest);
        let inserted = match ids.binary_search(&id) {
            Ok(_) => false,
            Err(at) => {
                ids.insert(at, id);
                true
            }
        };
        if inserted {
            self.entries += 1;
            self.max_id = self.max_id.max(id);
        }
        Ok(inserted)
    }

    /// Removes `id` from under `pattern`. Returns whether it was there; an invalid pattern was never
    /// added, so it returns `false`.
    pub fn remove(&mut self, pattern: &str, id: u32) -> bool {
        if self.dialect.validate_pattern(pattern).is_err() {
            return false;
        }
        let (node, rest) = self.locate(pattern, false);
        if node == NONE {
            return false;
        }
        let ids = self.ids_mut(node, rest);
        match ids.binary_search(&id) {
            Ok(at) => {
                ids.remove(at);
                if ids.is_empty() {
                    // Give the memory back; a node that lost its last id is often pruned next.
                    *ids = Vec::new();
                }
                self.entries -= 1;
                self.prune(node);
                true
            }
            Err(_) => false,
        }
    }

    /// Follows a valid pattern's tokens from the root to the node its ids hang on, creating missing
    /// nodes when `insert` is set and otherwise stopping at `NONE`. The flag says whether the pattern
    /// ends with the trailing wildcard (whose ids live on the node before it).
    fn locate(&mut self, pattern: &str, insert: bool) -> (u32, bool) {
        let mut node = ROOT;
        for token in tokenize(pattern, self.dialect) {
            node = match (token, insert) {
                (Token::Rest, _) => return (node, true),
                (Token::Literal(literal), true) => self.literal_child_or_insert(node, &literal),
                (Token::One, true) => self.one_child_or_insert(node),
                (Token::Literal(literal), false) => match self.segments.get(&literal) {
                    Some(segment) => self.edges.get(&edge_key(node, segment)).copied().unwrap_or(NONE),
                    None => NONE,
                },
                (Token::One, false) => self.nodes[node as usize].one_child,
            };
            if node == NONE {
                break;
            }
        }
        (node, false)
    }

    /// Removes every entry and frees all memory but the root.
    pub fn clear(&mut self) {
        *self = PatternIndex::new(self.dialect);
    }

    /// Appends to `out` the ids of every entry whose pattern matches `topic`, ascending, without
    /// duplicates (an id added under several matching patterns appears once). Returns how many it
    /// appended.
    pub fn match_into(&mut self, topic: &str, out: &mut Vec<u32>) -> usize {
        let start = out.len();
        self.collect_lists(topic);
        match self.lists.len() {
            0 => {}
            // One list is already ascending and distinct.
            1 => out.extend_from_slice(self.list(self.lists[0])),
            _ if self.ids_are_dense() => {
                self.distinct_by_stamp(Some(out));
                out[start..].sort_unstable();
            }
            _ => {
                for i in 0..self.lists.len() {
                    out.extend_from_slice(self.list(self.lists[i]));
                }
                let found = &mut out[start..];
                found.sort_unstable();
                let kept = dedup_sorted(found);
                out.truncate(start + kept);
            }
        }
        out.len() - start
    }

    /// Counts the distinct ids matching `topic` without listing them in order.
    pub fn match_count(&mut self, topic: &str) -> usize {
        self.collect_lists(topic);
        match self.lists.len() {
            0 => 0,
            1 => self.list(self.lists[0]).len(),
            _ if self.ids_are_dense() => self.distinct_by_stamp(None),
            _ => {
                let mut scratch = std::mem::take(&mut self.scratch);
                scratch.clear();
                let count = self.match_into(topic, &mut scratch);
                self.scratch = scratch;
                count
            }
        }
    }

    /// Fills `self.lists` with the id lists of every node the topic reaches: walks only the branches
    /// the topic's segments can take.
    fn collect_lists(&mut self, topic: &str) {
        self.lists.clear();
        if self.entries == 0 || !self.dialect.is_valid_topic(topic) {
            return;
        }
        self.topic_segments.clear();
        for segment in self.dialect.split(topic) {
            let id = self.segments.get(segment).unwrap_or(NONE);
            self.topic_segments.push(id);
        }
        let total = self.topic_segments.len() as u32;
        let rest_min = self.dialect.rest_min_segments() as u32;
        // MQTT: a topic starting with `$` is not matched by a leading wildcard.
        let dollar = self.dialect == Dialect::Mqtt && topic.starts_with('$');
        self.stack.clear();
        self.stack.push((ROOT, 0));
        while let Some((node_id, depth)) = self.stack.pop() {
            let node = &self.nodes[node_id as usize];
            let at_root_of_dollar = dollar && depth == 0;
            if !node.rest_ids.is_empty() && !at_root_of_dollar && total - depth >= rest_min {
                self.lists.push(ListRef {
                    node: node_id,
                    rest: true,
                });
            }
            if depth == total {
                if !node.exact_ids.is_empty() {
                    self.lists.push(ListRef {
                        node: node_id,
                        rest: false,
                    });
                }
                continue;
            }
            let segment = self.topic_segments[depth as usize];
            if segment != NONE {
                if let Some(&child) = self.edges.get(&edge_key(node_id, segment)) {
                    self.stack.push((child, depth + 1));
                }
            }
            if node.one_child != NONE && !at_root_of_dollar {
                self.stack.push((node.one_child, depth + 1));
            }
        }
    }

    fn list(&self, list: ListRef) -> &[u32] {
        let node = &self.nodes[list.node as usize];
        if list.rest {
            &node.rest_ids
        } else {
            &node.exact_ids
        }
    }

    /// Whether ids are small enough, relative to the number of entries, for a stamp per possible id
    /// (at most 32 bytes per entry plus 16 KiB). Then duplicates are removed in linear time.
    fn ids_are_dense(&self) -> bool {
        (self.max_id as usize) < 8 * self.entries + 4096
    }

    /// Counts the distinct ids of `self.lists` with one stamp per id, appending them to `out` in
    /// first-seen order when given.
    fn distinct_by_stamp(&mut self, mut out: Option<&mut Vec<u32>>) -> usize {
        let needed = self.max_id as usize + 1;
        if self.stamps.len() < needed {
            self.stamps.resize(needed, 0);
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // Wrapped around: old stamps could collide with the new generation.
            self.stamps.fill(0);
            self.generation = 1;
        }
        let generation = self.generation;
        let mut count = 0;
        for list in &self.lists {
            let node = &self.nodes[list.node as usize];
            let ids = if list.rest {
                &node.rest_ids
            } else {
                &node.exact_ids
            };
            for &id in ids {
                let stamp = &mut self.stamps[id as usize];
                if *stamp != generation {
                    *stamp = generation;
                    count += 1;
                    if let Some(out) = out.as_deref_mut() {
                        out.push(id);
                    }
                }
            }
        }
        count
    }

    pub fn stats(&self) -> PatternIndexStats {
        let live_nodes = self.nodes.len() - self.free_nodes.len();
        let ids: usize = self
            .nodes
            .iter()
            .map(|n| n.exact_ids.capacity() + n.rest_ids.capacity())
            .sum();
        let approximate_bytes = self.nodes.capacity() * std::mem::size_of::<Node>()
            + (ids + self.stamps.capacity()) * 4
            + self.edges.capacity() * (std::mem::size_of::<(u64, u32)>() + 1)
            + self.segments.approximate_bytes();
        PatternIndexStats {
            entries: self.entries,
            nodes: live_nodes,
            segments: self.segments.len(),
            approximate_bytes,
        }
    }

    fn ids_mut(&mut self, node: u32, rest: bool) -> &mut Vec<u32> {
        let node = &mut self.nodes[node as usize];
        if rest {
            &mut node.rest_ids
        } else {
            &mut node.exact_ids
        }
    }

    fn allocate_node(&mut self, parent: u32, segment: u32) -> u32 {
        let node = Node::new(parent, segment);
        match self.free_nodes.pop() {
            Some(id) => {
                self.nodes[id as usize] = node;
                id
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        }
    }

    fn literal_child_or_insert(&mut self, node: u32, literal: &str) -> u32 {
        if let Some(segment) = self.segments.get(literal) {
            if let Some(&child) = self.edges.get(&edge_key(node, segment)) {
                return child;
            }
        }
        let segment = self.segments.acquire(literal);
        let child = self.allocate_node(node, segment);
        self.edges.insert(edge_key(node, segment), child);
        self.nodes[node as usize].literal_children += 1;
        child
    }

    fn one_child_or_insert(&mut self, node: u32) -> u32 {
        let existing = self.nodes[node as usize].one_child;
        if existing != NONE {
            return existing;
        }
        let child = self.allocate_node(node, NONE);
        self.nodes[node as usize].one_child = child;
        child
    }

    /// Frees `node` and its ancestors while they hold nothing.
    fn prune(&mut self, mut node: u32) {
        while node != ROOT && self.nodes[node as usize].is_unused() {
            let Node { parent, segment, .. } = self.nodes[node as usize];
            if segment == NONE {
                self.nodes[parent as usize].one_child = NONE;
            } else {
                self.edges.remove(&edge_key(parent, segment));
                self.nodes[parent as usize].literal_children -= 1;
                self.segments.release(segment);
            }
            self.nodes[node as usize] = Node::new(NONE, NONE);
            self.free_nodes.push(node);
            node = parent;
        }
        if self.entries == 0 {
            // Nothing left: drop spare capacity too, so an emptied index is as small as a new one.
            self.clear();
        }
    }
}
