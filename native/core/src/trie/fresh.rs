//! The first lay-down of a subtree (snapshot.rs): when no node below the top was laid down yet,
//! there are no old runs to copy and no records to follow, and laying the block down is a visit of
//! every node. Nodes added one by one lie scattered, and a depth-first visit along the child lists
//! waits for a cache miss at each step: a child is found from the one before it, and the node it
//! then reads is another miss. So the subtree is first gathered level by level into one array,
//! following the child lists of `INTERLEAVED_CHAINS` nodes a step each in turn (as the one-segment
//! wildcard does, walk.rs) so that their misses overlap, and the keys are written then, while each
//! node's line is loaded; the block is then read depth first from that array.
//!
//! The result is exactly what the general lay-down leaves (the same list, keys, flags and plan), as
//! both follow the same rules on a subtree without history; a subtree holding a node that was laid
//! down (a list, or a block in one) takes the general path.

use super::plan::Plan;
use super::snapshot::{CHANGED, IN_PARENT, KEPT, KEY_BITS};
use super::{Links, Node, TopicTrie, NONE, ROOT};
use crate::prefetch::prefetch;

/// Child lists the gathering follows at once: enough misses in flight to keep the memory system
/// busy, few enough that the cursors stay in registers.
const INTERLEAVED_CHAINS: usize = 8;

/// A node of the gathered subtree, in breadth-first order: its children are the `children` entries
/// from `first`, in child order.
#[derive(Clone, Copy)]
struct Gathered {
    node: u32,
    name: u32,
    segment: u32,
    first_child: u32,
    first: u32,
    children: u32,
    /// Its kept-list state before the gathering wrote its key, put back if the gathering stops.
    kept: u32,
}

impl Gathered {
    /// `node`, with its name, its kept-list state and its links, before its children are gathered.
    fn new(node: u32, name: u32, kept: u32, links: &Links) -> Gathered {
        Gathered {
            node,
            name,
            segment: links.segment,
            first_child: links.first_child,
            first: 0,
            children: 0,
            kept,
        }
    }
}

impl TopicTrie {
    /// Lays down the block of `top` when neither it nor any node below it was laid down before, and
    /// returns true; returns false, having changed nothing, when one was (the general lay-down
    /// applies then).
    pub(super) fn lay_down_fresh(&mut self, top: u32, plan: Option<&mut Plan>) -> bool {
        if !self.is_changed(top) || self.nodes[top as usize].kept & KEPT != 0 || self.locate(top).0 != NONE {
            return false;
        }
        let Some(gathered) = self.gather_fresh(top) else {
            return false;
        };
        self.nodes[top as usize].kept &= !CHANGED;
        if !self.edits.is_empty() || !self.key_maps.is_empty() {
            for entry in &gathered {
                self.edits.remove(&entry.node);
                self.key_maps.remove(&entry.node);
            }
        }
        self.write_fresh_block(top, &gathered, plan);
        true
    }

    /// The nodes of `top`'s subtree in breadth-first order, children in order, each but the top
    /// given its key (where its block starts in its parent's) and marked unchanged, as `enter` and
    /// `visit` do, while its node is loaded. `None`, with every node as it was, when one of them was
    /// laid down before.
    fn gather_fresh(&mut self, top: u32) -> Option<Vec<Gathered>> {
        let names = self.nodes[top as usize].names as usize;
        // A subtree has a node per name and a prefix node per few names; room for twice its names
        // is rarely outgrown, and pages reserved but never written cost nothing.
        let mut entries = Vec::with_capacity(2 * names + 1);
        let top_node = &self.nodes[top as usize];
        entries.push(Gathered::new(
            top,
            top_node.name,
            top_node.kept,
            &self.links[top as usize],
        ));
        let mut chains: [Vec<u32>; INTERLEAVED_CHAINS] = Default::default();
        let mut next_parent = 0;
        loop {
            // The next entries with children, as many as there are chains.
            let mut parents = [0usize; INTERLEAVED_CHAINS];
            let mut cursors = [NONE; INTERLEAVED_CHAINS];
            let mut group = 0;
            while group < INTERLEAVED_CHAINS && next_parent < entries.len() {
                let first_child = entries[next_parent].first_child;
                if first_child != NONE {
                    parents[group] = next_parent;
                    cursors[group] = first_child;
                    chains[group].clear();
                    group += 1;
                }
                next_parent += 1;
            }
            if group == 0 {
                return Some(entries);
            }
            let mut following = true;
            while following {
                following = false;
                for (cursor, chain) in cursors[..group].iter_mut().zip(chains.iter_mut()) {
                    if *cursor != NONE {
                        let child = *cursor as usize;
                        chain.push(*cursor);
                        prefetch((&self.nodes[child] as *const Node).cast());
                        prefetch((&self.links[child] as *const Links).cast());
                        *cursor = self.next_siblings[child];
                        following = true;
                    }
                }
            }
            for (&parent, chain) in parents[..group].iter().zip(&chains) {
                entries[parent].first = entries.len() as u32;
                entries[parent].children = chain.len() as u32;
                let mut key = u32::from(entries[parent].name != NONE);
                for &child in chain {
                    let node = &mut self.nodes[child as usize];
                    let kept = node.kept;
                    if kept & (KEPT | IN_PARENT) != 0 || kept & CHANGED == 0 {
                        self.restore_gathered(&entries);
                        return None;
                    }
                    assert!(key <= KEY_BITS, "trie: a block position past the key range");
                    node.kept = IN_PARENT | key;
                    key += node.names;
                    let name = node.name;
                    entries.push(Gathered::new(child, name, kept, &self.links[child as usize]));
                }
            }
        }
    }

    /// Puts back the state of the nodes `gather_fresh` gave keys to.
    fn restore_gathered(&mut self, gathered: &[Gathered]) {
        for entry in &gathered[1..] {
            self.nodes[entry.node as usize].kept = entry.kept;
        }
    }

    /// Writes the block of the gathered subtree, depth first, into a new list that `top` then holds,
    /// and into `plan` when given (each name with its path).
    fn write_fresh_block(&mut self, top: u32, gathered: &[Gathered], mut plan: Option<&mut Plan>) {
        let size = self.nodes[top as usize].names;
        let mut path = String::new();
        let index = self.start_block(top, size, plan.as_deref_mut(), &mut path);
        let mut ids = self.take_ids(size);
        // Per node on the way down: its next child entry, the end of its children, the node and
        // the length of its path.
        let mut stack: Vec<(u32, u32, u32, usize)> = Vec::new();
        let first = gathered[0];
        self.write_fresh_name(first.name, &mut ids, plan.as_deref_mut(), &path);
        if first.children > 0 {
            stack.push((first.first, first.first + first.children, first.node, path.len()));
        }
        while let Some(frame) = stack.last_mut() {
            let (next, end, parent, parent_path) = *frame;
            if next == end {
                stack.pop();
                continue;
            }
            frame.0 += 1;
            let entry = gathered[next as usize];
            if plan.is_some() {
                path.truncate(parent_path);
                if parent != ROOT {
                    path.push_str(self.dialect.separator());
                }
                path.push_str(self.segments.text(entry.segment));
            }
            self.write_fresh_name(entry.name, &mut ids, plan.as_deref_mut(), &path);
            if entry.children > 0 {
                stack.push((entry.first, entry.first + entry.children, entry.node, path.len()));
            }
        }
        self.keep_block(top, index, size, ids, plan);
    }

    /// The name `id` (none for `NONE`) as the next of a fresh block, with its path for a plan.
    fn write_fresh_name(&mut self, id: u32, ids: &mut Vec<u32>, plan: Option<&mut Plan>, path: &str) {
        if id == NONE {
            return;
        }
        ids.push(id);
        if let Some(plan) = plan {
            self.name_into_plan(plan, id, Some(path));
        }
    }
}
