//! Compaction: laying the nodes out again in depth-first order, so that a walk reads a subtree
//! from consecutive memory instead of one cache miss per node.
//!
//! Nodes are placed in order of creation, so the nodes of one tenant of a million names are spread
//! over the whole node array, and a walk down through them costs a cache miss on nearly every node.
//! After compaction a node's first child is the next node and a subtree is one run of nodes. A
//! trailing wildcard does not need it (its answers come from kept lists, snapshot.rs), but walks
//! through many nodes (`*__*__*__code`) do. Name ids and kept lists stay as they are: only node
//! positions change, and nothing outside the trie sees those.
//!
//! A compaction costs a pass over every node, so a pass starts only when more than a share of the
//! nodes were placed since the last one (`SCATTERED_SHARE_DIVISOR`) and the walks since have
//! visited as many nodes as are live: the scattered walking has then cost about what the pass
//! costs (the choice of renting or buying skis), and it never comes on the first walks after a bulk
//! of adds. A pass done at once would hold the caller for a visit of every node, so it is done in
//! steps of at most `STEP_WORK` node moves and relinks, one at the start of each walk until it is
//! through: a cursor follows the nodes in depth-first order and swaps the next one into the next
//! position. Every step leaves a consistent trie (each move relinks the node's neighbours, its
//! children, its edge, its name and its records), so names come and go between steps as they
//! please; the pass then lays out whatever the trie holds as it reaches it. Correctness never
//! depends on the layout: between passes new nodes are linked in wherever there is room.

use super::snapshot::LISTED;
use super::{Links, Node, TopicTrie, NONE, ROOT};

/// A pass starts when more than one in this many live nodes were placed since the last one.
const SCATTERED_SHARE_DIVISOR: usize = 4;
/// A walk that visited `v` nodes on its way down then takes a step of the pass of at most
/// `v * STEP_WORK_PER_VISIT` work (a node placed counts one, each node moved and child relinked one
/// more, each about a cache miss as a visit is): the step costs about what the walk did, whatever
/// the size of the trie, and a walk down a few nodes takes a step of a few.
const STEP_WORK_PER_VISIT: usize = 1;

/// Where a compaction pass stands between steps.
#[derive(Clone, Copy, Debug)]
pub(super) struct CompactionCursor {
    /// The node laid out last (the root before the first step).
    pub(super) last: u32,
    /// The position the next node in depth-first order goes to.
    pub(super) next: u32,
}

impl TopicTrie {
    /// Called by every walk once its answer is out (node positions may change after): counts its
    /// visits, starts a pass when enough nodes were placed out of walk order since the last and
    /// walks have visited as many nodes since, and takes a step of the pass under way in
    /// proportion to the walk's visits.
    pub(super) fn after_walk(&mut self) {
        self.walked_since_compaction += self.last_walk_visited;
        if self.compaction.is_none() {
            let live = self.live_nodes();
            if self.placed_since_compaction * SCATTERED_SHARE_DIVISOR <= live
                || self.walked_since_compaction < live
            {
                return;
            }
            self.start_compaction();
        }
        self.compaction_step(self.last_walk_visited * STEP_WORK_PER_VISIT);
    }

    /// Lays every node out in depth-first order (children in their list order) and drops freed
    /// positions in one pass, after finishing a pass under way (changes since it started may have
    /// left gaps behind it). Name ids, child order, kept lists and therefore walk results are
    /// unchanged.
    pub fn compact(&mut self) {
        self.compaction_step(usize::MAX);
        self.start_compaction();
        self.compaction_step(usize::MAX);
    }

    /// Whether a compaction pass is under way.
    #[cfg(test)]
    pub(super) fn is_compacting(&self) -> bool {
        self.compaction.is_some()
    }

    /// Takes a step of at most `budget` of a pass, starting one if none is under way, whatever
    /// the walks since: for tests that change the trie between steps.
    #[cfg(test)]
    pub(super) fn compact_partly(&mut self, budget: usize) {
        if self.compaction.is_none() {
            self.start_compaction();
        }
        self.compaction_step(budget);
    }

    /// Whether the links agree with each other wherever the nodes lie: every node reached from the
    /// root is its parent's child along its edge, names point at their nodes, and the nodes
    /// reached and the free positions account for every position.
    #[cfg(test)]
    pub(super) fn check_links(&self) -> Result<(), String> {
        let mut reached = 1;
        let mut node = self.preorder_successor(ROOT);
        while node != NONE {
            let n = &self.nodes[node as usize];
            let l = &self.links[node as usize];
            if self
                .children
                .get(&self.links, &self.edge_keys, l.parent, l.segment)
                != node
            {
                return Err(format!("node {node}: its edge leads elsewhere"));
            }
            if n.is_name() && self.name_nodes[n.name as usize] != node {
                return Err(format!("node {node}: name {} points elsewhere", n.name));
            }
            reached += 1;
            node = self.preorder_successor(node);
        }
        let free = (1..self.nodes.len() as u32)
            .filter(|&at| self.is_free_node(at))
            .count();
        if reached != self.live_nodes() || reached + free != self.nodes.len() {
            return Err(format!(
                "{reached} nodes reached, {} live, {free} free of {}",
                self.live_nodes(),
                self.nodes.len()
            ));
        }
        Ok(())
    }

    /// Nodes in use, the root included.
    pub(super) fn live_nodes(&self) -> usize {
        self.nodes.len() - (self.free_nodes.len() - self.stale_free_nodes)
    }

    /// A position for a new node: a freed one (the pass may have filled some since they were
    /// freed: those are skipped), else a new one at the end.
    pub(super) fn take_free_node(&mut self) -> Option<u32> {
        while let Some(free) = self.free_nodes.pop() {
            if self.is_free_node(free) {
                return Some(free);
            }
            self.stale_free_nodes -= 1;
        }
        None
    }

    fn is_free_node(&self, node: u32) -> bool {
        node != ROOT && (node as usize) < self.nodes.len() && self.links[node as usize].parent == NONE
    }

    fn start_compaction(&mut self) {
        self.compaction = Some(CompactionCursor { last: ROOT, next: 1 });
        self.placed_since_compaction = 0;
        self.walked_since_compaction = 0;
    }

    /// Lays out nodes in depth-first order from the cursor on until `budget` is spent or the pass
    /// is through.
    fn compaction_step(&mut self, budget: usize) {
        let Some(mut cursor) = self.compaction else {
            return;
        };
        let mut work = 0;
        while work < budget {
            let node = self.preorder_successor(cursor.last);
            if node == NONE {
                self.finish_compaction();
                return;
            }
            let to = cursor.next;
            work += 1;
            if node != to {
                work += self.swap_into(node, to);
            }
            cursor = CompactionCursor {
                last: to,
                next: to + 1,
            };
        }
        self.compaction = Some(cursor);
    }

    /// The node after `node` in depth-first pre-order, `NONE` after the last.
    fn preorder_successor(&self, node: u32) -> u32 {
        let first = self.links[node as usize].first_child;
        if first != NONE {
            return first;
        }
        let mut node = node;
        while node != ROOT {
            let next = self.next_siblings[node as usize];
            if next != NONE {
                return next;
            }
            node = self.links[node as usize].parent;
        }
        NONE
    }

    /// Keeps the cursor of a pass under way on a live node when `node`, which has no children, is
    /// about to be freed: the pass goes on from the node before it.
    pub(super) fn before_freeing_node(&mut self, node: u32) {
        if let Some(cursor) = &mut self.compaction {
            if cursor.last == node {
                cursor.last = predecessor_of(&self.links, node);
            }
        }
    }

    /// Puts `node` at position `to`: into it when free, else swapping places with the node there
    /// (through a spare position at the end). Returns the work done: moves and children relinked.
    fn swap_into(&mut self, node: u32, to: u32) -> usize {
        if to as usize == self.nodes.len() {
            // Nodes the pass placed were freed since, and new ones took their positions: `to` is
            // past the others.
            self.push_free_position();
            self.free_nodes.push(to);
        }
        if self.is_free_node(to) {
            // Its entry in the free list goes stale; `node`'s old position takes its place.
            self.stale_free_nodes += 1;
            let relinked = self.move_node(node, to);
            self.free_nodes.push(node);
            relinked
        } else {
            let spare = self.nodes.len() as u32;
            self.push_free_position();
            let mut relinked = self.move_node(node, spare);
            relinked += self.move_node(to, node);
            relinked += self.move_node(spare, to);
            self.nodes.pop();
            self.links.pop();
            self.next_siblings.pop();
            self.edge_keys.pop();
            relinked
        }
    }

    /// Appends a free position at the end of the nodes and their links.
    fn push_free_position(&mut self) {
        self.nodes.push(Node::new());
        self.links.push(Links::new(NONE, NONE));
        self.next_siblings.push(NONE);
        self.edge_keys.push(0);
    }

    /// Moves the node at `from` to the unused position `to` and frees `from`: rewrites the links to
    /// it (parent, siblings, children), its edge, its name's node, its records and its list.
    /// Returns the work done: one, and one per child relinked.
    fn move_node(&mut self, from: u32, to: u32) -> usize {
        self.forget_walks();
        let n = self.nodes[from as usize];
        let l = self.links[from as usize];
        let next = self.next_siblings[from as usize];
        self.nodes[to as usize] = n;
        self.links[to as usize] = l;
        self.next_siblings[to as usize] = next;
        self.nodes[from as usize] = Node::new();
        self.links[from as usize] = Links::new(NONE, NONE);
        self.next_siblings[from as usize] = NONE;
        self.edge_keys[to as usize] = self.edge_keys[from as usize];
        let parent_key = self.edge_keys[l.parent as usize];
        self.children.replace(parent_key, l.segment, from, to);
        let parent = l.parent;
        if self.links[parent as usize].first_child == from {
            self.links[parent as usize].first_child = to;
        } else {
            self.next_siblings[l.prev_sibling as usize] = to;
        }
        if next != NONE {
            self.links[next as usize].prev_sibling = to;
        } else {
            // The last child: the first child's `prev_sibling` points at it (itself when alone).
            let first = self.links[parent as usize].first_child;
            self.links[first as usize].prev_sibling = to;
        }
        // The children's edges stay where they are: they hash by this node's edge key, which
        // moved with it.
        let mut child = l.first_child;
        let mut relinked = 1;
        while child != NONE {
            self.links[child as usize].parent = to;
            child = self.next_siblings[child as usize];
            relinked += 1;
        }
        if n.is_name() {
            self.name_nodes[n.name as usize] = to;
        }
        self.move_node_records(from, to, parent, n.kept & LISTED != 0);
        relinked
    }

    /// Follows a node's move in its record, key map and list, and in its parent's record.
    fn move_node_records(&mut self, from: u32, to: u32, parent: u32, listed: bool) {
        if let Some(record) = self.edits.remove(&from) {
            self.edits.insert(to, record);
        }
        if let Some(map) = self.key_maps.remove(&from) {
            self.key_maps.insert(to, map);
        }
        if let Some(list) = self.holders.remove(&from) {
            self.holders.insert(to, list);
        }
        if listed {
            let entry = self
                .edits
                .get_mut(&parent)
                .and_then(|edits| edits.children.iter_mut().find(|e| e.node == from))
                .expect("trie: a listed node has an entry in its parent's record");
            entry.node = to;
        }
    }

    /// Ends a pass: drops the freed positions past the last live node and the free list's stale
    /// entries.
    fn finish_compaction(&mut self) {
        self.compaction = None;
        while self.nodes.len() > 1 && self.links[self.nodes.len() - 1].parent == NONE {
            self.nodes.pop();
        }
        self.links.truncate(self.nodes.len());
        self.next_siblings.truncate(self.nodes.len());
        self.edge_keys.truncate(self.nodes.len());
        let links = &self.links;
        self.free_nodes.retain(|&free| {
            free != ROOT && (free as usize) < links.len() && links[free as usize].parent == NONE
        });
        self.free_nodes.sort_unstable();
        self.free_nodes.dedup();
        self.stale_free_nodes = 0;
    }

    /// Whether every node's first child is the node right after it and the nodes hold no gaps:
    /// what a compaction leaves.
    #[cfg(test)]
    pub(super) fn is_laid_out_depth_first(&self) -> bool {
        if self.live_nodes() != self.nodes.len() {
            return false;
        }
        let mut node = ROOT;
        let mut at = 0;
        while node != NONE {
            if node != at {
                return false;
            }
            node = self.preorder_successor(node);
            at += 1;
        }
        true
    }
}

/// The node before `node` in depth-first pre-order: its previous sibling's last descendant, or its
/// parent when it is the first child.
fn predecessor_of(links: &[Links], node: u32) -> u32 {
    let parent = links[node as usize].parent;
    if links[parent as usize].first_child == node {
        return parent;
    }
    let mut last = links[node as usize].prev_sibling;
    loop {
        let first = links[last as usize].first_child;
        if first == NONE {
            return last;
        }
        last = links[first as usize].prev_sibling;
    }
}
