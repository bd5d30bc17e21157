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
//! A compaction costs a pass over every node, so a walk compacts first only when more than a share
//! of the nodes were placed since the last compaction (`SCATTERED_SHARE_DIVISOR`) and the walks
//! since have visited as many nodes as are live: the scattered walking has then cost about what the
//! compaction costs (the choice of renting or buying skis), and it never comes on the first walks
//! after a bulk of adds. Correctness never depends on the layout: between compactions new nodes are
//! linked in wherever there is room.

use super::children::ChildTable;
use super::{Node, TopicTrie, NONE, ROOT};

/// Walks compact the trie first when more than one in this many live nodes were placed since the
/// last compaction.
const SCATTERED_SHARE_DIVISOR: usize = 4;

impl TopicTrie {
    /// Compacts when enough nodes were placed out of walk order since the last compaction and walks
    /// have visited as many nodes since.
    pub(super) fn compact_if_scattered(&mut self) {
        let live = self.nodes.len() - self.free_nodes.len();
        if self.placed_since_compaction * SCATTERED_SHARE_DIVISOR > live
            && self.walked_since_compaction >= live
        {
            self.compact();
        }
    }

    /// Lays the nodes out in depth-first order (children in their list order) and drops freed
    /// positions. Name ids, child order, kept lists and therefore walk results are unchanged.
    pub fn compact(&mut self) {
        let order = self.preorder();
        // Old position → new position, for rewriting the links.
        let mut moved = vec![NONE; self.nodes.len()];
        for (new, &old) in order.iter().enumerate() {
            moved[old as usize] = new as u32;
        }
        let relink = |link: u32| if link == NONE { NONE } else { moved[link as usize] };
        let nodes: Vec<Node> = order
            .iter()
            .map(|&old| {
                let n = self.nodes[old as usize];
                Node {
                    parent: relink(n.parent),
                    first_child: relink(n.first_child),
                    next_sibling: relink(n.next_sibling),
                    prev_sibling: relink(n.prev_sibling),
                    ..n
                }
            })
            .collect();
        for node in self.name_nodes.iter_mut().filter(|node| **node != NONE) {
            *node = moved[*node as usize];
        }
        self.move_edits(&moved);
        drop(moved);
        self.nodes = nodes;
        self.free_nodes = Vec::new();
        self.children = ChildTable::rebuilt(&self.children, &self.nodes);
        self.placed_since_compaction = 0;
        self.walked_since_compaction = 0;
    }

    /// Whether every node's first child is the node right after it and the nodes hold no gaps:
    /// what a compaction leaves.
    #[cfg(test)]
    pub(super) fn is_laid_out_depth_first(&self) -> bool {
        self.free_nodes.is_empty()
            && self
                .preorder()
                .iter()
                .enumerate()
                .all(|(at, &node)| node as usize == at)
    }

    /// The positions of every live node in depth-first pre-order, the root first.
    fn preorder(&self) -> Vec<u32> {
        let mut order = Vec::with_capacity(self.nodes.len() - self.free_nodes.len());
        let mut node = ROOT;
        'walk: loop {
            order.push(node);
            let n = &self.nodes[node as usize];
            if n.first_child != NONE {
                node = n.first_child;
                continue;
            }
            // Up until a node with a next sibling; the walk ends back at the root.
            loop {
                if node == ROOT {
                    break 'walk;
                }
                let n = &self.nodes[node as usize];
                if n.next_sibling != NONE {
                    node = n.next_sibling;
                    break;
                }
                node = n.parent;
            }
        }
        order
    }
}
