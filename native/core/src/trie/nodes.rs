//! Placing and freeing nodes and name ids: the child lists, the per-subtree name counts, and the
//! pruning that frees a removed name's nodes while no other name needs them.

use super::{Links, Node, TopicTrie, NONE, ROOT};
use crate::dialect::Dialect;

impl TopicTrie {
    pub(super) fn is_dollar(&self, name: &str) -> bool {
        self.dialect == Dialect::Mqtt && name.starts_with('$')
    }

    /// Gives the name ending at `node` an id: the last one freed, else a new one. Both engines
    /// allocate ids in this order, so they hand out the same ids for the same history.
    pub(super) fn allocate_name(&mut self, node: u32, timestamp_ms: u64) -> u32 {
        let id = match self.free_names.pop() {
            Some(free) => {
                self.name_nodes[free as usize] = node;
                self.last_active[free as usize] = timestamp_ms;
                free
            }
            None => {
                assert!(self.name_nodes.len() < NONE as usize, "trie name ids exhausted");
                self.name_nodes.push(node);
                self.last_active.push(timestamp_ms);
                (self.name_nodes.len() - 1) as u32
            }
        };
        self.nodes[node as usize].name = id;
        id
    }

    /// Frees name id `id` and returns the node it ended at.
    pub(super) fn free_name(&mut self, id: u32) -> u32 {
        let node = self.name_nodes[id as usize];
        self.nodes[node as usize].name = NONE;
        self.name_nodes[id as usize] = NONE;
        if let Some(bits) = self.handed.get_mut(id as usize / 64) {
            *bits &= !(1 << (id % 64));
        }
        self.free_names.push(id);
        node
    }

    pub(super) fn adjust_counts(&mut self, mut node: u32, up: bool) {
        while node != NONE {
            let n = &mut self.nodes[node as usize];
            if up {
                n.names += 1;
            } else {
                n.names -= 1;
            }
            node = self.links[node as usize].parent;
        }
    }

    pub(super) fn child_or_insert(&mut self, parent: u32, segment: &str) -> u32 {
        if let Some(id) = self.segments.get(segment) {
            let child = self.children.get(&self.links, &self.edge_keys, parent, id);
            if child != NONE {
                return child;
            }
        }
        self.forget_walks();
        let id = self.segments.acquire(segment);
        let links = Links::new(parent, id);
        let key = self.next_edge_key;
        self.next_edge_key = key.wrapping_add(1);
        let child = match self.take_free_node() {
            Some(free) => {
                self.nodes[free as usize] = Node::new();
                self.links[free as usize] = links;
                self.next_siblings[free as usize] = NONE;
                self.edge_keys[free as usize] = key;
                free
            }
            None => {
                assert!(self.nodes.len() < NONE as usize, "trie node ids exhausted");
                self.nodes.push(Node::new());
                self.links.push(links);
                self.next_siblings.push(NONE);
                self.edge_keys.push(key);
                (self.nodes.len() - 1) as u32
            }
        };
        self.placed_since_compaction += 1;
        self.children.insert(&self.links, &self.edge_keys, child);
        self.link_last(parent, child);
        self.mark_changed(parent);
        child
    }

    /// Appends `child` to `parent`'s child list.
    fn link_last(&mut self, parent: u32, child: u32) {
        let first = self.links[parent as usize].first_child;
        if first == NONE {
            self.links[parent as usize].first_child = child;
            self.links[child as usize].prev_sibling = child;
            return;
        }
        let last = self.links[first as usize].prev_sibling;
        self.next_siblings[last as usize] = child;
        self.links[child as usize].prev_sibling = last;
        self.links[first as usize].prev_sibling = child;
    }

    fn unlink(&mut self, child: u32) {
        let Links {
            parent,
            prev_sibling: prev,
            ..
        } = self.links[child as usize];
        let next = self.next_siblings[child as usize];
        let first = self.links[parent as usize].first_child;
        if first == child {
            self.links[parent as usize].first_child = next;
            if next != NONE {
                self.links[next as usize].prev_sibling = prev;
            }
        } else {
            self.next_siblings[prev as usize] = next;
            let fix = if next == NONE { first } else { next };
            self.links[fix as usize].prev_sibling = prev;
        }
    }

    /// Frees `node` and its ancestors while they are neither names nor prefixes of names.
    pub(super) fn prune(&mut self, mut node: u32) {
        while node != ROOT && self.nodes[node as usize].names == 0 {
            let Links { parent, segment, .. } = self.links[node as usize];
            self.forget_walks();
            self.forget_edits(node);
            self.before_freeing_node(node);
            self.children.remove(&self.links, &self.edge_keys, node);
            self.unlink(node);
            self.segments.release(segment);
            self.drop_kept_list(node);
            self.nodes[node as usize] = Node::new();
            self.links[node as usize] = Links::new(NONE, NONE);
            self.next_siblings[node as usize] = NONE;
            self.free_nodes.push(node);
            self.mark_changed(parent);
            node = parent;
        }
        if self.names == 0 {
            // Nothing left: drop spare capacity too, so an emptied trie is as small as a new one.
            self.clear();
        }
    }
}
