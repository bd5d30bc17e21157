//! The edge table of the trie: (parent node, segment id) → child node, stored as bare child ids in
//! one open-addressing table with linear probing. The key is not stored: it is read back from the
//! child's links, so an edge costs 4 bytes a slot instead of the 16 of a map entry — at a million
//! names that is the difference between fitting the memory target and not (docs/TRIE.md).
//!
//! An edge's slot is found by hashing the parent's edge key (`TopicTrie::edge_keys`: given when the
//! parent was placed, kept when it moves) with the segment, not the parent's position: a node that moves
//! (compact.rs) then rewrites its own slot in place and leaves its children's where they are. A
//! lookup still compares the child's parent position, so keys need not be unique to be right.

use super::{Links, NONE};

/// The table grows when more than this share of its slots, in percent, is taken. Linear probing
/// stays short below three quarters.
const MAX_LOAD_PERCENT: usize = 75;

/// Slots of a new table; a power of two so a hash maps to a slot with a mask.
const INITIAL_SLOTS: usize = 16;

#[derive(Debug)]
pub(super) struct ChildTable {
    /// Child node ids, `NONE` for an empty slot.
    slots: Vec<u32>,
    len: usize,
}

/// The first slot to probe for the edge along `segment` from a parent whose edge key is
/// `parent_key`.
fn home(parent_key: u32, segment: u32, mask: usize) -> usize {
    // Fibonacci hashing of the packed key: the top bits of the product depend on every key bit
    // (the low bits would depend only on the key's low bits), so the slot is taken from the top.
    let key = (u64::from(parent_key) << 32) | u64::from(segment);
    let bits = mask.count_ones();
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize
}

/// The home of the edge to `child`, from its parent's edge key and its segment.
fn home_of(links: &[Links], keys: &[u32], child: u32, mask: usize) -> usize {
    let node = &links[child as usize];
    home(keys[node.parent as usize], node.segment, mask)
}

impl ChildTable {
    pub(super) fn new() -> ChildTable {
        ChildTable {
            slots: vec![NONE; INITIAL_SLOTS],
            len: 0,
        }
    }

    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// The child of `parent` along `segment`, or `NONE`.
    pub(super) fn get(&self, links: &[Links], keys: &[u32], parent: u32, segment: u32) -> u32 {
        let mask = self.mask();
        let mut slot = home(keys[parent as usize], segment, mask);
        loop {
            let child = self.slots[slot];
            if child == NONE {
                return NONE;
            }
            let node = &links[child as usize];
            if node.parent == parent && node.segment == segment {
                return child;
            }
            slot = (slot + 1) & mask;
        }
    }

    /// Records `child` (whose node already holds its parent and segment). The edge must be new.
    pub(super) fn insert(&mut self, links: &[Links], keys: &[u32], child: u32) {
        if (self.len + 1) * 100 > self.slots.len() * MAX_LOAD_PERCENT {
            self.grow(links, keys);
        }
        self.place(links, keys, child);
        self.len += 1;
    }

    fn place(&mut self, links: &[Links], keys: &[u32], child: u32) {
        let mask = self.mask();
        let mut slot = home_of(links, keys, child, mask);
        while self.slots[slot] != NONE {
            slot = (slot + 1) & mask;
        }
        self.slots[slot] = child;
    }

    fn grow(&mut self, links: &[Links], keys: &[u32]) {
        let doubled = vec![NONE; self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, doubled);
        for child in old.into_iter().filter(|&c| c != NONE) {
            self.place(links, keys, child);
        }
    }

    /// Points the edge to `from` at `to` instead, a node holding the same parent and segment (a
    /// node moved): its home is unchanged, so the slot is found by its value and rewritten in place.
    pub(super) fn replace(&mut self, parent_key: u32, segment: u32, from: u32, to: u32) {
        let mask = self.mask();
        let mut slot = home(parent_key, segment, mask);
        while self.slots[slot] != from {
            debug_assert!(
                self.slots[slot] != NONE,
                "replacing an edge that is not in the table"
            );
            slot = (slot + 1) & mask;
        }
        self.slots[slot] = to;
    }

    /// Forgets the edge to `child`, whose node must still hold its parent and segment. Uses
    /// backward-shift deletion, so no tombstones accumulate as names come and go.
    pub(super) fn remove(&mut self, links: &[Links], keys: &[u32], child: u32) {
        let mask = self.mask();
        let mut hole = home_of(links, keys, child, mask);
        while self.slots[hole] != child {
            debug_assert!(
                self.slots[hole] != NONE,
                "removing an edge that is not in the table"
            );
            hole = (hole + 1) & mask;
        }
        let mut next = (hole + 1) & mask;
        loop {
            let moved = self.slots[next];
            if moved == NONE {
                break;
            }
            let wanted = home_of(links, keys, moved, mask);
            // `moved` may fill the hole unless its home lies cyclically in (hole, next].
            let distance_to_hole = next.wrapping_sub(hole) & mask;
            let distance_to_home = next.wrapping_sub(wanted) & mask;
            if distance_to_home >= distance_to_hole {
                self.slots[hole] = moved;
                hole = next;
            }
            next = (next + 1) & mask;
        }
        self.slots[hole] = NONE;
        self.len -= 1;
    }

    pub(super) fn approximate_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<u32>()
    }
}
