//! The topic-name trie: millions of names, and the questions "which stored names match this
//! pattern?" and "which names have been idle too long?" answered in time proportional to the answer.
//!
//! One node per name prefix over interned segment ids (the same interner as the pattern index). A
//! name's terminal node holds its name id; nothing stores the full name, `name_of` rebuilds it by
//! walking parents and `id_of` walks down. Each node keeps an enumerable child list (first child,
//! next and previous sibling; the first child's `prev_sibling` is the last child, so appends are
//! O(1)) and the number of names in its subtree (so a trailing wildcard is counted in O(1)). Names
//! have ids of their own, apart from node positions, because nodes move: once walks have visited
//! enough scattered nodes, walks lay the nodes out again in depth-first order, a step after each
//! walk (compact.rs), so a subtree is read from consecutive memory. A trailing wildcard reads a kept list of the
//! subtree's ids instead, laid down by the first walk that takes the subtree and, after changes,
//! rebuilt from the old list and the changes recorded since (snapshot.rs, edits.rs); a changed
//! subtree below a list's holder is merged from that list and the edits it kept (pending.rs).
//! Each name's last activity is also kept in an ordered set for `idle_since`. See docs/TRIE.md.

#[cfg(test)]
mod tests;

mod children;
mod compact;
mod edits;
mod fresh;
mod idle;
mod list;
mod nodes;
mod pending;
mod plan;
mod remembered;
mod snapshot;
mod walk;

use crate::dialect::{validate_lite_topic, Dialect};
use crate::error::ErrorCode;
use crate::interner::Interner;
use crate::prefetch::prefetch;
use children::ChildTable;
use compact::CompactionCursor;
use edits::{Edits, KeyMap};
use idle::IdleSet;
pub use plan::{
    Plan, PLAN_COPY, PLAN_FREE, PLAN_LIST_END, PLAN_LIST_START, PLAN_NAME, PLAN_NAMES_BY_ID, PLAN_NEW_NAME,
};
use remembered::RememberedWalks;
use rustc_hash::FxHashMap;
use snapshot::KeptList;

pub(crate) const NONE: u32 = u32::MAX;
const ROOT: u32 = 0;
/// Segments of a name `write_name` collects on the stack before it needs a heap buffer.
const SHALLOW_NAME_SEGMENTS: usize = 16;
/// Names `write_names_joined` loads together, level by level.
const NAME_BATCH: usize = 32;
/// A node's links but its next sibling: what walks and the edge table read, 16 bytes, four to a
/// cache line, in an array of their own (`TopicTrie::links`) beside the rest of the node (`Node`)
/// and its next sibling (`TopicTrie::next_siblings`). A walk down many nodes (a one-segment
/// wildcard, a literal looked up along a child list) reads only these and the next siblings, so
/// each cache line it loads holds the links of four nodes, or the next siblings of sixteen,
/// instead of two whole nodes. Links are node positions, which change when the trie is compacted.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Links {
    parent: u32,
    /// Segment id on the edge from the parent (`NONE` for the root).
    segment: u32,
    first_child: u32,
    /// For the first child: the last child of the parent.
    prev_sibling: u32,
}

impl Links {
    fn new(parent: u32, segment: u32) -> Links {
        Links {
            parent,
            segment,
            first_child: NONE,
            prev_sibling: NONE,
        }
    }
}

// A node's links stay 16 bytes: four to a cache line, none across two.
const _: () = assert!(std::mem::size_of::<Links>() == 16);

/// The rest of a node: 12 bytes, at the same position as its links. `name` is the stable id of
/// the name that ends here, if any.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    /// Names in this subtree, this node included.
    names: u32,
    /// The id of the name ending here; `NONE` for a prefix that is not itself a name.
    name: u32,
    /// Kept-list state (snapshot.rs, edits.rs): flag bits `CHANGED`, `KEPT`, `IN_PARENT` and
    /// `LISTED`, and below them the node's key in its parent's key map.
    kept: u32,
}

impl Node {
    fn new() -> Node {
        Node {
            names: 0,
            name: NONE,
            kept: snapshot::CHANGED,
        }
    }

    fn is_name(&self) -> bool {
        self.name != NONE
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
    /// Per node position: its links (`Links`) and the rest of it (`Node`).
    links: Vec<Links>,
    nodes: Vec<Node>,
    /// Per node position: its next sibling (`NONE` for the last child). A one-segment wildcard
    /// follows these chains alone, and a parent's children lie apart by their subtrees, so the
    /// dense array keeps several of them on one cache line where their links would take one each.
    next_siblings: Vec<u32>,
    /// Freed node positions; `stale_free_nodes` of the entries are positions a compaction pass
    /// has filled since, or repeats (compact.rs).
    free_nodes: Vec<u32>,
    stale_free_nodes: usize,
    /// The compaction pass under way, done a step at the start of each walk (compact.rs).
    compaction: Option<CompactionCursor>,
    /// Per node position: the number the edge table hashes the node's children's edges by
    /// (children.rs), given when the node is placed and moved with it, so that its children's edges
    /// stay where they are when it moves (compact.rs). Unique among live nodes but after four
    /// billion placements, which only makes two nodes' children share hash homes. Beside the
    /// nodes, not in them, so that links stay 16 bytes; only a lookup in the table reads it.
    edge_keys: Vec<u32>,
    /// The edge key the next node placed gets.
    next_edge_key: u32,
    /// Nodes placed (new or in a freed position) since the last compaction: out of walk order.
    placed_since_compaction: usize,
    /// Nodes pattern walks visited on their way down since the last compaction (compact.rs).
    walked_since_compaction: usize,
    /// Nodes the walk under way (or the last one) visited on its way down.
    last_walk_visited: usize,
    /// Kept lists by index (snapshot.rs); a freed one is empty and listed in `free_lists`.
    lists: Vec<KeptList>,
    free_lists: Vec<u32>,
    /// The id vectors of lists freed lately, emptied, for the next lay-downs to fill (plan.rs).
    spare_ids: Vec<Vec<u32>>,
    /// The list each node holding one holds (nodes flagged `KEPT`).
    holders: FxHashMap<u32, u32>,
    /// Per changed node that was laid down: its old block and the children to take apart (edits.rs).
    edits: FxHashMap<u32, Edits>,
    /// Per node laid down from its record: where its children's blocks start, by key (edits.rs).
    key_maps: FxHashMap<u32, KeyMap>,
    /// Lists freed since the last plan whose copies a plan's reader holds (snapshot.rs).
    freed_mirrored: Vec<u32>,
    /// Per name id, one bit: a plan has handed out the name's text since the id was allocated.
    handed: Vec<u64>,
    /// Per name id: its terminal node (`NONE` for a free id) and its last activity.
    name_nodes: Vec<u32>,
    last_active: Vec<u64>,
    free_names: Vec<u32>,
    children: ChildTable,
    segments: Interner,
    names: usize,
    /// MQTT: names whose first level starts with `$`, which a leading wildcard does not reach.
    dollar_names: usize,
    idle: IdleSet,
    /// Scratch reused by walks (the nodes reached so far, and the next level's), so steady-state
    /// lookups do not allocate.
    frontier: Vec<u32>,
    next_frontier: Vec<u32>,
    /// Scratch of the one-segment wildcard: the children of each node of a group (walk.rs).
    sibling_chains: Vec<Vec<u32>>,
    /// Scratch of `expand_into`: the pieces of a merged block (pending.rs).
    merged: Vec<pending::Merged>,
    /// The nodes the last patterns' walks reached, while no node changes (remembered.rs).
    remembered: RememberedWalks,
}

impl TopicTrie {
    pub fn new(dialect: Dialect, max_name_bytes: usize) -> TopicTrie {
        TopicTrie {
            dialect,
            max_name_bytes,
            links: vec![Links::new(NONE, NONE)],
            nodes: vec![Node::new()],
            next_siblings: vec![NONE],
            edge_keys: vec![0],
            free_nodes: Vec::new(),
            stale_free_nodes: 0,
            compaction: None,
            next_edge_key: 1,
            placed_since_compaction: 0,
            walked_since_compaction: 0,
            last_walk_visited: 0,
            lists: Vec::new(),
            free_lists: Vec::new(),
            spare_ids: Vec::new(),
            holders: FxHashMap::default(),
            edits: FxHashMap::default(),
            key_maps: FxHashMap::default(),
            freed_mirrored: Vec::new(),
            handed: Vec::new(),
            name_nodes: Vec::new(),
            last_active: Vec::new(),
            free_names: Vec::new(),
            children: ChildTable::new(),
            segments: Interner::default(),
            names: 0,
            dollar_names: 0,
            idle: IdleSet::default(),
            frontier: Vec::new(),
            next_frontier: Vec::new(),
            sibling_chains: Vec::new(),
            merged: Vec::new(),
            remembered: RememberedWalks::default(),
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
        let existing = self.nodes[node as usize].name;
        if existing != NONE {
            if let Some(timestamp) = timestamp_ms {
                self.touch_id(existing, timestamp);
            }
            return Ok(existing);
        }
        let timestamp = timestamp_ms.unwrap_or(0);
        // Before the name and the counts change: a node laid down records them as they were.
        self.mark_changed(node);
        let id = self.allocate_name(node, timestamp);
        self.note_added(node, id);
        self.idle.insert((timestamp, id));
        self.adjust_counts(node, true);
        self.names += 1;
        if self.is_dollar(name) {
            self.dollar_names += 1;
        }
        Ok(id)
    }

    /// Removes `name`; false if it was not there. Frees its nodes and segments unless other names
    /// still use them; its id may then be given to a later name.
    pub fn remove(&mut self, name: &str) -> bool {
        self.remove_id(name).is_some()
    }

    /// [`remove`](Self::remove), returning the id the name had (which a later name may now take),
    /// or `None` if it was not stored.
    pub fn remove_id(&mut self, name: &str) -> Option<u32> {
        let id = self.id_of(name)?;
        let node = self.name_nodes[id as usize];
        self.mark_changed(node);
        self.note_removed(node, id);
        self.idle.remove((self.last_active[id as usize], id));
        let node = self.free_name(id);
        self.adjust_counts(node, false);
        self.names -= 1;
        if self.is_dollar(name) {
            self.dollar_names -= 1;
        }
        self.prune(node);
        Some(id)
    }

    /// The id of `name`, if stored.
    pub fn id_of(&self, name: &str) -> Option<u32> {
        if self.names == 0 {
            return None;
        }
        let mut node = ROOT;
        for segment in self.dialect.split(name) {
            let id = self.segments.get(segment)?;
            node = self.children.get(&self.links, &self.edge_keys, node, id);
            if node == NONE {
                return None;
            }
        }
        let id = self.nodes[node as usize].name;
        (id != NONE).then_some(id)
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
        let Some(&node) = self.name_nodes.get(id as usize).filter(|&&node| node != NONE) else {
            return false;
        };
        self.write_path(node, out);
        true
    }

    /// Appends the names of `ids` to `out`, NUL-joined (a separator before each but the first; an
    /// id with no name gives an empty name). Names of ids scattered over a large trie (an idle
    /// batch) cost a cache miss a level each when rebuilt one after another; here a batch's nodes
    /// of one level are all requested before any is read, so their misses overlap.
    pub fn write_names_joined(&self, ids: &[u32], out: &mut String) {
        let mut first = true;
        for batch in ids.chunks(NAME_BATCH) {
            for &id in batch {
                if let Some(slot) = self.name_nodes.get(id as usize) {
                    prefetch((slot as *const u32).cast());
                }
            }
            let mut level = [NONE; NAME_BATCH];
            for (node, &id) in level.iter_mut().zip(batch) {
                *node = self.name_nodes.get(id as usize).copied().unwrap_or(NONE);
                if *node != NONE {
                    prefetch((&self.links[*node as usize] as *const Links).cast());
                }
            }
            // Up a level at a time until every name's path reached the root.
            loop {
                let mut climbing = false;
                for node in level.iter_mut().filter(|n| **n != NONE && **n != ROOT) {
                    *node = self.links[*node as usize].parent;
                    if *node != ROOT {
                        prefetch((&self.links[*node as usize] as *const Links).cast());
                        climbing = true;
                    }
                }
                if !climbing {
                    break;
                }
            }
            for &id in batch {
                if !first {
                    out.push('\0');
                }
                first = false;
                self.write_name(id, out);
            }
        }
    }

    /// Appends the text of the prefix `node` stands for (the name ending there, if one does),
    /// rebuilt from its parents; nothing for the root.
    pub(super) fn write_path(&self, top: u32, out: &mut String) {
        // Segments come leaf first: collect their nodes, then write them root first. Names are a
        // few segments deep, so the array on the stack almost always suffices.
        let mut shallow = [NONE; SHALLOW_NAME_SEGMENTS];
        let mut deep = Vec::new();
        let mut depth = 0;
        let mut node = top;
        while node != ROOT {
            if depth < SHALLOW_NAME_SEGMENTS {
                shallow[depth] = node;
            } else {
                deep.push(node);
            }
            depth += 1;
            node = self.links[node as usize].parent;
        }
        let path = shallow[..depth.min(SHALLOW_NAME_SEGMENTS)].iter().chain(&deep);
        for (i, &node) in path.rev().enumerate() {
            if i > 0 {
                out.push_str(self.dialect.separator());
            }
            out.push_str(self.segments.text(self.links[node as usize].segment));
        }
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
        self.id_of(name).map(|id| self.last_active[id as usize])
    }

    fn touch_id(&mut self, id: u32, timestamp_ms: u64) {
        let old = self.last_active[id as usize];
        if timestamp_ms > old {
            self.idle.remove((old, id));
            self.idle.insert((timestamp_ms, id));
            self.last_active[id as usize] = timestamp_ms;
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
            + self.links.capacity() * std::mem::size_of::<Links>()
            + self.next_siblings.capacity() * 4
            + self.edge_keys.capacity() * 4
            + self.free_nodes.capacity() * 4
            + self.name_nodes.capacity() * 4
            + self.last_active.capacity() * 8
            + self.free_names.capacity() * 4
            + self.children.approximate_bytes()
            + self.lists.iter().map(KeptList::approximate_bytes).sum::<usize>()
            + self.spare_ids.iter().map(|ids| ids.capacity() * 4).sum::<usize>()
            + self.edits_approximate_bytes()
            + self.handed.capacity() * 8
            + self.segments.approximate_bytes()
            + self.idle.approximate_bytes();
        TrieStats {
            names: self.names,
            nodes: self.live_nodes(),
            segments: self.segments.len(),
            approximate_bytes,
        }
    }
}
