//! The reverse pattern index: given a topic, the ids of every subscription whose pattern matches it,
//! without looking at patterns that cannot match.
//!
//! A pattern without wildcards matches one topic, itself, so those patterns live in one hash map
//! keyed by their text: a topic finds them with a single hash of itself, however many distinct
//! names there are. Patterns with wildcards are compiled into a segment automaton (a trie over
//! interned segment ids, like NATS's sublist): a node per pattern prefix, literal edges in one hash
//! map keyed by (node, segment id), one `one`-wildcard child per node, and at each node the ids whose
//! pattern ends there (`exact_ids`) or continues with the trailing wildcard (`rest_ids`). A lookup
//! walks only the branches the topic's segments can take, and looks a segment up only when a node it
//! reaches has literal children. Nodes, segment strings and map entries are freed on removal, so
//! memory follows the live patterns.

mod literal_ids;
#[cfg(test)]
mod tests;
mod topic_split;

use super::{tokenize, Token};
use crate::dialect::Dialect;
use crate::error::Violation;
use crate::interner::Interner;
use literal_ids::LiteralIds;
use rustc_hash::FxHashMap;
use topic_split::{split_segments, TopicSegment, UNRESOLVED};

const NONE: u32 = u32::MAX;
const ROOT: u32 = 0;

#[derive(Debug, Default)]
struct Node {
    parent: u32,
    /// The segment id on the edge from the parent, or `NONE` for the one-wildcard edge and the root.
    segment: u32,
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
            exact_ids: Vec::new(),
            rest_ids: Vec::new(),
        }
    }
}

/// The part of a node a lookup reads on its way down, kept apart from the id lists in an array of
/// its own: a walk visits many nodes and takes the lists of few, so this way it touches a small,
/// dense array instead of a cache line or two per node.
#[derive(Clone, Copy, Debug)]
struct WalkNode {
    one_child: u32,
    literal_children: u32,
    has_exact_ids: bool,
    has_rest_ids: bool,
}

impl WalkNode {
    const EMPTY: WalkNode = WalkNode {
        one_child: NONE,
        literal_children: 0,
        has_exact_ids: false,
        has_rest_ids: false,
    };

    fn is_unused(&self) -> bool {
        self.one_child == NONE && self.literal_children == 0 && !self.has_exact_ids && !self.has_rest_ids
    }
}

/// Memory and shape figures for reports and tests. `nodes` and `segments` are those of the automaton,
/// which holds only the patterns with wildcards.
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
    /// Ids of the patterns without wildcards, by pattern text, each list sorted ascending.
    literals: FxHashMap<Box<str>, LiteralIds>,
    nodes: Vec<Node>,
    /// Per node, what a lookup reads of it (same index as `nodes`).
    walk_nodes: Vec<WalkNode>,
    free_nodes: Vec<u32>,
    edges: FxHashMap<u64, u32>,
    segments: Interner,
    entries: usize,
    /// Largest id added since the index was created or cleared (decides the dedup strategy).
    max_id: u32,
    // Scratch reused by every lookup, so matching does not allocate in steady state.
    /// Byte range of each topic segment, and its segment id once a node needed it.
    topic_segments: Vec<TopicSegment>,
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

/// Empties the wildcard lists a lookup reached when the topic is invalid, since invalid topics match
/// nothing. A topic equal to a literal pattern needs no check: every valid pattern without wildcards
/// is a valid topic (`PatternIndex::add` asserts it), and topics are checked only when needed
/// because the scan costs as much as the rest of a lookup that hits nothing.
fn drop_if_invalid(dialect: Dialect, topic: &str, literal: &[u32], lists: &mut Vec<ListRef>) {
    if literal.is_empty() && !lists.is_empty() && !dialect.is_valid_topic(topic) {
        lists.clear();
    }
}

/// The id list `list` refers to.
fn list(nodes: &[Node], list: ListRef) -> &[u32] {
    let node = &nodes[list.node as usize];
    if list.rest {
        &node.rest_ids
    } else {
        &node.exact_ids
    }
}

/// Whether ids are small enough, relative to the number of entries, for a stamp per possible id
/// (at most 32 bytes per entry plus 16 KiB). Then duplicates are removed in linear time.
fn ids_are_dense(max_id: u32, entries: usize) -> bool {
    (max_id as usize) < 8 * entries + 4096
}

/// One stamp per possible id, and the generation that marks an id as seen in this lookup.
struct Stamps<'a> {
    stamps: &'a mut [u32],
    generation: u32,
}

/// Stamps for one lookup: grown to cover `max_id`, with a generation no stamp holds yet.
fn fresh_stamps<'a>(stamps: &'a mut Vec<u32>, generation: &mut u32, max_id: u32) -> Stamps<'a> {
    let needed = max_id as usize + 1;
    if stamps.len() < needed {
        stamps.resize(needed, 0);
    }
    *generation = generation.wrapping_add(1);
    if *generation == 0 {
        // Wrapped around: old stamps could collide with the new generation.
        stamps.fill(0);
        *generation = 1;
    }
    Stamps {
        stamps,
        generation: *generation,
    }
}

/// Counts the distinct ids of `literal` and `lists` with one stamp per id, appending them to `out`
/// in first-seen order when given.
fn distinct_by_stamp(
    stamps: Stamps<'_>,
    literal: &[u32],
    nodes: &[Node],
    lists: &[ListRef],
    mut out: Option<&mut Vec<u32>>,
) -> usize {
    let Stamps { stamps, generation } = stamps;
    let mut count = 0;
    let reached = lists.iter().map(|&list_ref| list(nodes, list_ref));
    for ids in std::iter::once(literal).chain(reached) {
        for &id in ids {
            let stamp = &mut stamps[id as usize];
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

impl PatternIndex {
    pub fn new(dialect: Dialect) -> PatternIndex {
        PatternIndex {
            dialect,
            literals: FxHashMap::default(),
            nodes: vec![Node::new(NONE, NONE)],
            walk_nodes: vec![WalkNode::EMPTY],
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

    /// Whether a valid pattern has no wildcard, so it matches only the topic equal to it.
    fn is_literal(&self, pattern: &str) -> bool {
        let (one, rest) = (self.dialect.one_wildcard(), self.dialect.rest_wildcard());
        self.dialect
            .split(pattern)
            .all(|segment| segment != one && segment != rest)
    }

    /// Adds `id` under `pattern`. Returns `Ok(false)` if that exact entry was already present.
    pub fn add(&mut self, pattern: &str, id: u32) -> Result<bool, Violation> {
        self.dialect.validate_pattern(pattern)?;
        if self.is_literal(pattern) {
            debug_assert!(
                self.dialect.is_valid_topic(pattern),
                "a lookup takes a topic equal to a literal pattern as valid"
            );
            let inserted = match self.literals.get_mut(pattern) {
                Some(ids) => ids.insert(id),
                None => {
                    self.literals.insert(pattern.into(), LiteralIds::One(id));
                    true
                }
            };
            if inserted {
                self.entries += 1;
                self.max_id = self.max_id.max(id);
            }
            return Ok(inserted);
        }
        let (node, rest) = self.locate(pattern, true);
        let walk_node = &mut self.walk_nodes[node as usize];
        if rest {
            walk_node.has_rest_ids = true;
        } else {
            walk_node.has_exact_ids = true;
        }
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
        if self.is_literal(pattern) {
            return self.remove_literal(pattern, id);
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
                    let walk_node = &mut self.walk_nodes[node as usize];
                    if rest {
                        walk_node.has_rest_ids = false;
                    } else {
                        walk_node.has_exact_ids = false;
                    }
                }
                self.entries -= 1;
                self.prune(node);
                true
            }
            Err(_) => false,
        }
    }

    fn remove_literal(&mut self, pattern: &str, id: u32) -> bool {
        let Some(ids) = self.literals.get_mut(pattern) else {
            return false;
        };
        match ids.remove(id) {
            None => return false,
            Some(true) => {
                self.literals.remove(pattern);
            }
            Some(false) => {}
        }
        self.entries -= 1;
        if self.entries == 0 {
            // Nothing left: drop spare capacity too, so an emptied index is as small as a new one.
            self.clear();
        }
        true
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
                (Token::One, false) => self.walk_nodes[node as usize].one_child,
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
        let literal = self.literals.get(topic).map_or(&[][..], LiteralIds::as_slice);
        drop_if_invalid(self.dialect, topic, literal, &mut self.lists);
        match (literal.len(), self.lists.len()) {
            (_, 0) => out.extend_from_slice(literal),
            // One list is already ascending and distinct.
            (0, 1) => out.extend_from_slice(list(&self.nodes, self.lists[0])),
            _ if ids_are_dense(self.max_id, self.entries) => {
                let stamps = fresh_stamps(&mut self.stamps, &mut self.generation, self.max_id);
                distinct_by_stamp(stamps, literal, &self.nodes, &self.lists, Some(out));
                out[start..].sort_unstable();
            }
            _ => {
                out.extend_from_slice(literal);
                for &list_ref in &self.lists {
                    out.extend_from_slice(list(&self.nodes, list_ref));
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
        let literal = self.literals.get(topic).map_or(&[][..], LiteralIds::as_slice);
        drop_if_invalid(self.dialect, topic, literal, &mut self.lists);
        match (literal.len(), self.lists.len()) {
            (count, 0) => count,
            (0, 1) => list(&self.nodes, self.lists[0]).len(),
            _ if ids_are_dense(self.max_id, self.entries) => {
                let stamps = fresh_stamps(&mut self.stamps, &mut self.generation, self.max_id);
                distinct_by_stamp(stamps, literal, &self.nodes, &self.lists, None)
            }
            _ => {
                let mut scratch = std::mem::take(&mut self.scratch);
                scratch.clear();
                let count = self.match_into(topic, &mut scratch);
                self.scratch = scratch;
                count
            }
        }
    }

    /// Fills `self.lists` with the id lists of every automaton node the topic reaches, walking only
    /// the branches the topic's segments can take. The topic's validity is not checked here (see
    /// `drop_if_invalid`): most topics reach no list, and for them the check would be wasted.
    fn collect_lists(&mut self, topic: &str) {
        self.lists.clear();
        if self.walk_nodes[ROOT as usize].is_unused() {
            // No wildcard patterns: the topic's own entry in `literals` is the whole answer.
            return;
        }
        self.topic_segments.clear();
        split_segments(
            topic.as_bytes(),
            self.dialect.separator().as_bytes(),
            &mut self.topic_segments,
        );
        let total = self.topic_segments.len() as u32;
        let rest_min = self.dialect.rest_min_segments() as u32;
        // MQTT: a topic starting with `$` is not matched by a leading wildcard.
        let dollar = self.dialect == Dialect::Mqtt && topic.starts_with('$');
        self.stack.clear();
        self.stack.push((ROOT, 0));
        while let Some((node_id, depth)) = self.stack.pop() {
            let node = self.walk_nodes[node_id as usize];
            let at_root_of_dollar = dollar && depth == 0;
            if node.has_rest_ids && !at_root_of_dollar && total - depth >= rest_min {
                self.lists.push(ListRef {
                    node: node_id,
                    rest: true,
                });
            }
            if depth == total {
                if node.has_exact_ids {
                    self.lists.push(ListRef {
                        node: node_id,
                        rest: false,
                    });
                }
                continue;
            }
            if node.one_child != NONE && !at_root_of_dollar {
                self.stack.push((node.one_child, depth + 1));
            }
            if node.literal_children > 0 {
                let segment = &mut self.topic_segments[depth as usize];
                if segment.id == UNRESOLVED {
                    let text = &topic[segment.start as usize..segment.end as usize];
                    segment.id = self.segments.get(text).unwrap_or(NONE);
                }
                if segment.id != NONE {
                    if let Some(&child) = self.edges.get(&edge_key(node_id, segment.id)) {
                        self.stack.push((child, depth + 1));
                    }
                }
            }
        }
    }

    pub fn stats(&self) -> PatternIndexStats {
        let live_nodes = self.nodes.len() - self.free_nodes.len();
        let ids: usize = self
            .nodes
            .iter()
            .map(|n| n.exact_ids.capacity() + n.rest_ids.capacity())
            .sum();
        let (literal_ids, literal_text): (usize, usize) =
            self.literals.iter().fold((0, 0), |(ids, text), (pattern, list)| {
                (ids + list.heap_ids(), text + pattern.len())
            });
        let approximate_bytes = self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.walk_nodes.capacity() * std::mem::size_of::<WalkNode>()
            + (ids + literal_ids + self.stamps.capacity()) * 4
            + literal_text
            + self.literals.capacity() * (std::mem::size_of::<(Box<str>, LiteralIds)>() + 1)
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
                self.walk_nodes[id as usize] = WalkNode::EMPTY;
                id
            }
            None => {
                self.nodes.push(node);
                self.walk_nodes.push(WalkNode::EMPTY);
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
        self.walk_nodes[node as usize].literal_children += 1;
        child
    }

    fn one_child_or_insert(&mut self, node: u32) -> u32 {
        let existing = self.walk_nodes[node as usize].one_child;
        if existing != NONE {
            return existing;
        }
        let child = self.allocate_node(node, NONE);
        self.walk_nodes[node as usize].one_child = child;
        child
    }

    /// Frees `node` and its ancestors while they hold nothing.
    fn prune(&mut self, mut node: u32) {
        while node != ROOT && self.walk_nodes[node as usize].is_unused() {
            let Node { parent, segment, .. } = self.nodes[node as usize];
            if segment == NONE {
                self.walk_nodes[parent as usize].one_child = NONE;
            } else {
                self.edges.remove(&edge_key(parent, segment));
                self.walk_nodes[parent as usize].literal_children -= 1;
                self.segments.release(segment);
            }
            self.nodes[node as usize] = Node::new(NONE, NONE);
            self.walk_nodes[node as usize] = WalkNode::EMPTY;
            self.free_nodes.push(node);
            node = parent;
        }
        if self.entries == 0 {
            // Nothing left: drop spare capacity too, so an emptied index is as small as a new one.
            self.clear();
        }
    }
}
