//! The topic-name trie: millions of names, and the questions "which stored names match this
//! pattern?" and "which names have been idle too long?" answered in time proportional to the answer.
//!
//! One node per name prefix over interned segment ids (the same interner as the pattern index). A
//! name's id is its terminal node: nothing stores the full name, `name_of` rebuilds it by walking
//! parents and `id_of` walks down. Each node keeps an enumerable child list (first child, next and
//! previous sibling; the first child's `prev_sibling` is the last child, so appends are O(1)), the
//! number of names in its subtree (so a trailing wildcard is counted in O(1)), and, for names, the
//! last activity, which is also kept in an ordered set for `idle_since`. See docs/TRIE.md.

#[cfg(test)]
mod tests;

mod children;
mod idle;
mod list;
mod walk;

use crate::dialect::{validate_lite_topic, Dialect};
use crate::error::ErrorCode;
use crate::interner::Interner;
use children::ChildTable;
use idle::IdleSet;

pub(crate) const NONE: u32 = u32::MAX;
const ROOT: u32 = 0;
/// Segments of a name `write_name` collects on the stack before it needs a heap buffer.
const SHALLOW_NAME_SEGMENTS: usize = 16;
/// `last_active_ms` of a node that is a prefix but not itself a name.
const NOT_A_NAME: u64 = u64::MAX;

#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    parent: u32,
    /// Segment id on the edge from the parent (`NONE` for the root).
    segment: u32,
    first_child: u32,
    next_sibling: u32,
    /// For the first child: the last child of the parent.
    prev_sibling: u32,
    /// Names in this subtree, this node included.
    names: u32,
    last_active_ms: u64,
}

impl Node {
    fn new(parent: u32, segment: u32) -> Node {
        Node {
            parent,
            segment,
            first_child: NONE,
            next_sibling: NONE,
            prev_sibling: NONE,
            names: 0,
            last_active_ms: NOT_A_NAME,
        }
    }

    fn is_name(&self) -> bool {
        self.last_active_ms != NOT_A_NAME
    }
}

/// Memory and shape figures for reports and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrieStats {
    pub names: usize,
    pub nodes: usize,
    pub segments: usize,
    pub approximate_bytes: usize,
}

/// A set of topic names of one dialect, with stable ids, pattern expansion and idle tracking.
#[derive(Debug)]
pub struct TopicTrie {
    dialect: Dialect,
    /// Longest accepted lite name, in UTF-8 bytes; unused by the other dialects.
    max_name_bytes: usize,
    nodes: Vec<Node>,
    free_nodes: Vec<u32>,
    children: ChildTable,
    segments: Interner,
    names: usize,
    /// MQTT: names whose first level starts with `$`, which a leading wildcard does not reach.
    dollar_names: usize,
    idle: IdleSet,
    /// Scratch reused by walks, so steady-state lookups do not allocate.
    stack: Vec<(u32, u32)>,
}

impl TopicTrie {
    pub fn new(dialect: Dialect, max_name_bytes: usize) -> TopicTrie {
        TopicTrie {
            dialect,
            max_name_bytes,
            nodes: vec![Node::new(NONE, NONE)],
            free_nodes: Vec::new(),
            children: ChildTable::new(),
            segments: Interner::default(),
            names: 0,
            dollar_names: 0,
            idle: IdleSet::default(),
            stack: Vec::new(),
        }
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Number of names.
    pub fn len(&self) -> usize {
        self.names
    }

    pub fn is_empty(&self) -> bool {
        self.names == 0
    }

    /// Whether `name` may be stored: lite names by the lite name rules and `max_name_bytes`, the
    /// others by their dialect's topic rules. Returns the error code to report otherwise.
    pub fn check_name(&self, name: &str) -> Result<(), ErrorCode> {
        match self.dialect {
            Dialect::Lite => validate_lite_topic(name, self.max_name_bytes).map_err(|v| v.code),
            _ if self.dialect.is_valid_topic(name) => Ok(()),
            _ => Err(ErrorCode::InvalidTopic),
        }
    }

    /// Adds `name` and returns its id. A new name's last activity is `timestamp_ms`, or 0 when
    /// none is given; for a name already there a given timestamp counts as a [`touch`](Self::touch).
    pub fn add(&mut self, name: &str, timestamp_ms: Option<u64>) -> Result<u32, ErrorCode> {
        self.check_name(name)?;
        let mut node = ROOT;
        for segment in self.dialect.split(name) {
            node = self.child_or_insert(node, segment);
        }
        if self.nodes[node as usize].is_name() {
            if let Some(timestamp) = timestamp_ms {
                self.touch_id(node, timestamp);
            }
            return Ok(node);
        }
        let timestamp = timestamp_ms.unwrap_or(0);
        self.nodes[node as usize].last_active_ms = timestamp;
        self.idle.insert((timestamp, node));
        self.adjust_counts(node, true);
        self.names += 1;
        if self.is_dollar(name) {
            self.dollar_names += 1;
        }
        Ok(node)
    }

    /// Removes `name`; false if it was not there. Frees its nodes and segments unless other names
    /// still use them; its id may then be given to a later name.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(node) = self.id_of(name) else {
            return false;
        };
        let timestamp = self.nodes[node as usize].last_active_ms;
        self.idle.remove((timestamp, node));
        self.nodes[node as usize].last_active_ms = NOT_A_NAME;
        self.adjust_counts(node, false);
        self.names -= 1;
        if self.is_dollar(name) {
            self.dollar_names -= 1;
        }
        self.prune(node);
        true
    }

    /// The id of `name`, if stored.
    pub fn id_of(&self, name: &str) -> Option<u32> {
        if self.names == 0 {
            return None;
        }
        let mut node = ROOT;
        for segment in self.dialect.split(name) {
            let id = self.segments.get(segment)?;
            node = self.children.get(&self.nodes, node, id);
            if node == NONE {
                return None;
            }
        }
        self.nodes[node as usize].is_name().then_some(node)
    }

    pub fn has(&self, name: &str) -> bool {
        self.id_of(name).is_some()
    }

    /// The name with id `id`, if one lives there.
    pub fn name_of(&self, id: u32) -> Option<String> {
        let mut name = String::new();
        self.write_name(id, &mut name).then_some(name)
    }

    /// Appends the name with id `id` to `out`; false (and nothing appended) if no name has that id.
    pub fn write_name(&self, id: u32, out: &mut String) -> bool {
        if !self.nodes.get(id as usize).is_some_and(Node::is_name) {
            return false;
        }
        let start = out.len();
        // Segments come leaf first: collect their nodes, then write them root first. Names are a
        // few segments deep, so the array on the stack almost always suffices.
        let mut shallow = [NONE; SHALLOW_NAME_SEGMENTS];
        let mut deep = Vec::new();
        let mut depth = 0;
        let mut node = id;
        while node != ROOT {
            if depth < SHALLOW_NAME_SEGMENTS {
                shallow[depth] = node;
            } else {
                deep.push(node);
            }
            depth += 1;
            node = self.nodes[node as usize].parent;
        }
        let path = shallow[..depth.min(SHALLOW_NAME_SEGMENTS)].iter().chain(&deep);
        for (i, &node) in path.rev().enumerate() {
            if i > 0 {
                out.push_str(self.dialect.separator());
            }
            out.push_str(self.segments.text(self.nodes[node as usize].segment));
        }
        debug_assert!(out.len() > start, "every valid name is non-empty");
        true
    }

    /// Records activity of `name` at `timestamp_ms`: its last activity becomes the later of the
    /// two. False if the name is not stored.
    pub fn touch(&mut self, name: &str, timestamp_ms: u64) -> bool {
        match self.id_of(name) {
            Some(id) => {
                self.touch_id(id, timestamp_ms);
                true
            }
            None => false,
        }
    }

    /// The last activity of `name`, if stored.
    pub fn last_active_ms(&self, name: &str) -> Option<u64> {
        self.id_of(name).map(|id| self.nodes[id as usize].last_active_ms)
    }

    fn touch_id(&mut self, id: u32, timestamp_ms: u64) {
        let old = self.nodes[id as usize].last_active_ms;
        if timestamp_ms > old {
            self.idle.remove((old, id));
            self.idle.insert((timestamp_ms, id));
            self.nodes[id as usize].last_active_ms = timestamp_ms;
        }
    }

    /// Appends to `out` the ids of names whose last activity is before `cutoff_ms`, oldest first
    /// (ties by id), at most `limit`. Costs the answer plus a binary search, whatever the others do.
    pub fn idle_since(&self, cutoff_ms: u64, limit: usize, out: &mut Vec<u32>) {
        self.idle.older_than(cutoff_ms, limit, out);
    }

    /// Removes every name and frees all memory but the root.
    pub fn clear(&mut self) {
        *self = TopicTrie::new(self.dialect, self.max_name_bytes);
    }

    pub fn stats(&self) -> TrieStats {
        let approximate_bytes = self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.free_nodes.capacity() * 4
            + self.children.approximate_bytes()
            + self.segments.approximate_bytes()
            + self.idle.approximate_bytes();
        TrieStats {
            names: self.names,
            nodes: self.nodes.len() - self.free_nodes.len(),
            segments: self.segments.len(),
            approximate_bytes,
        }
    }

    fn is_dollar(&self, name: &str) -> bool {
        self.dialect == Dialect::Mqtt && name.starts_with('$')
    }

    fn adjust_counts(&mut self, mut node: u32, up: bool) {
        while node != NONE {
            let n = &mut self.nodes[node as usize];
            if up {
                n.names += 1;
            } else {
                n.names -= 1;
            }
            node = n.parent;
        }
    }

    fn child_or_insert(&mut self, parent: u32, segment: &str) -> u32 {
        if let Some(id) = self.segments.get(segment) {
            let child = self.children.get(&self.nodes, parent, id);
            if child != NONE {
                return child;
            }
        }
        let id = self.segments.acquire(segment);
        let node = Node::new(parent, id);
        let child = match self.free_nodes.pop() {
            Some(free) => {
                self.nodes[free as usize] = node;
                free
            }
            None => {
                assert!(self.nodes.len() < NONE as usize, "trie node ids exhausted");
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        self.children.insert(&self.nodes, child);
        self.link_last(parent, child);
        child
    }

    /// Appends `child` to `parent`'s child list.
    fn link_last(&mut self, parent: u32, child: u32) {
        let first = self.nodes[parent as usize].first_child;
        if first == NONE {
            self.nodes[parent as usize].first_child = child;
            self.nodes[child as usize].prev_sibling = child;
            return;
        }
        let last = self.nodes[first as usize].prev_sibling;
        self.nodes[last as usize].next_sibling = child;
        self.nodes[child as usize].prev_sibling = last;
        self.nodes[first as usize].prev_sibling = child;
    }

    fn unlink(&mut self, child: u32) {
        let Node {
            parent,
            next_sibling: next,
            prev_sibling: prev,
            ..
        } = self.nodes[child as usize];
        let first = self.nodes[parent as usize].first_child;
        if first == child {
            self.nodes[parent as usize].first_child = next;
            if next != NONE {
                self.nodes[next as usize].prev_sibling = prev;
            }
        } else {
            self.nodes[prev as usize].next_sibling = next;
            let fix = if next == NONE { first } else { next };
            self.nodes[fix as usize].prev_sibling = prev;
        }
    }

    /// Frees `node` and its ancestors while they are neither names nor prefixes of names.
    fn prune(&mut self, mut node: u32) {
        while node != ROOT && self.nodes[node as usize].names == 0 {
            let Node { parent, segment, .. } = self.nodes[node as usize];
            self.children.remove(&self.nodes, node);
            self.unlink(node);
            self.segments.release(segment);
            self.nodes[node as usize] = Node::new(NONE, NONE);
            self.free_nodes.push(node);
            node = parent;
        }
        if self.names == 0 {
            // Nothing left: drop spare capacity too, so an emptied trie is as small as a new one.
            self.clear();
        }
    }
}
