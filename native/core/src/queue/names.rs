//! LMQ names to queue ids: every name's bytes back to back in one buffer, and an open-addressing
//! table of ids (linear probing) over them. A million names then cost their bytes and a few bytes of
//! table each, rather than an allocation and a map slot of their own each. Ids of removed names are
//! reused; the buffer is compacted once removed names fill half of it.

use rustc_hash::FxHasher;
use std::hash::Hasher;

/// A table slot that never held an id.
const EMPTY: u32 = 0;
/// A table slot whose id was removed: lookups probe past it, inserts may reuse it.
const REMOVED: u32 = u32::MAX;
/// Bits of a name's packed reference that hold its length (names are at most 1,024 bytes).
const LENGTH_BITS: u32 = 11;
/// The packed reference of an id that names nothing (freed).
const FREE: u64 = u64::MAX;
/// Slots of the smallest table.
const MIN_SLOTS: usize = 16;

#[derive(Default)]
pub struct NameTable {
    /// Every live name's bytes, and removed names' until the next compaction.
    bytes: Vec<u8>,
    /// Bytes of `bytes` that belong to removed names.
    garbage: usize,
    /// Per id, where its name is: offset << LENGTH_BITS | length, or FREE.
    refs: Vec<u64>,
    /// Ids freed by removal, reused first.
    free: Vec<u32>,
    /// Open addressing over ids: EMPTY, REMOVED, or id + 1. At most five in eight are used, so
    /// probes stay short.
    slots: Vec<u32>,
    /// Slots that are not EMPTY (live and removed).
    used: usize,
    live: usize,
}

fn hash(name: &[u8]) -> u64 {
    let mut hasher = FxHasher::default();
    hasher.write(name);
    // Fibonacci hashing spreads the hash's bits over the table's index.
    hasher.finish().wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl NameTable {
    pub fn len(&self) -> usize {
        self.live
    }

    /// The name of a live id.
    pub fn name(&self, id: u32) -> &[u8] {
        let packed = self.refs[id as usize];
        let at = (packed >> LENGTH_BITS) as usize;
        let len = (packed & ((1 << LENGTH_BITS) - 1)) as usize;
        &self.bytes[at..at + len]
    }

    pub fn is_live(&self, id: u32) -> bool {
        self.refs.get(id as usize).is_some_and(|&packed| packed != FREE)
    }

    /// Every live id, in no particular order.
    pub fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.refs.len() as u32).filter(|&id| self.is_live(id))
    }

    fn home(&self, hash: u64) -> usize {
        (hash >> 32) as usize & (self.slots.len() - 1)
    }

    /// The table slot holding `name`, if it is there.
    fn find(&self, name: &[u8]) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut at = self.home(hash(name));
        loop {
            match self.slots[at] {
                EMPTY => return None,
                REMOVED => {}
                id => {
                    if self.name(id - 1) == name {
                        return Some(at);
                    }
                }
            }
            at = (at + 1) & mask;
        }
    }

    pub fn get(&self, name: &[u8]) -> Option<u32> {
        self.find(name).map(|at| self.slots[at] - 1)
    }

    /// Adds a name that is not in the table; returns its id.
    pub fn insert(&mut self, name: &[u8]) -> u32 {
        debug_assert!(self.get(name).is_none(), "a name inserted twice");
        debug_assert!(name.len() < 1 << LENGTH_BITS, "a name longer than a name can be");
        if (self.used + 1) * 8 > self.slots.len() * 5 {
            self.rehash();
        }
        let packed = ((self.bytes.len() as u64) << LENGTH_BITS) | name.len() as u64;
        self.bytes.extend_from_slice(name);
        let id = match self.free.pop() {
            Some(id) => {
                self.refs[id as usize] = packed;
                id
            }
            None => {
                self.refs.push(packed);
                (self.refs.len() - 1) as u32
            }
        };
        self.place(hash(name), id);
        self.live += 1;
        id
    }

    /// Puts `id` in the first free slot from its home (the table has room).
    fn place(&mut self, hash: u64, id: u32) {
        let mask = self.slots.len() - 1;
        let mut at = self.home(hash);
        loop {
            match self.slots[at] {
                EMPTY => {
                    self.used += 1;
                    break;
                }
                REMOVED => break,
                _ => at = (at + 1) & mask,
            }
        }
        self.slots[at] = id + 1;
    }

    /// Removes a name; returns the id it had.
    pub fn remove(&mut self, name: &[u8]) -> Option<u32> {
        let at = self.find(name)?;
        let id = self.slots[at] - 1;
        self.slots[at] = REMOVED;
        self.garbage += name.len();
        self.refs[id as usize] = FREE;
        self.free.push(id);
        self.live -= 1;
        if self.garbage > 4096 && self.garbage * 2 > self.bytes.len() {
            self.compact();
        }
        Some(id)
    }

    /// A table sized for the live names and one more, without removed slots.
    fn rehash(&mut self) {
        let mut size = MIN_SLOTS;
        while size < (self.live + 1) * 2 {
            size *= 2;
        }
        self.slots = vec![EMPTY; size];
        self.used = 0;
        for id in 0..self.refs.len() as u32 {
            if self.is_live(id) {
                self.place(hash(self.name(id)), id);
            }
        }
    }

    /// Copies the live names into a fresh buffer, dropping removed ones' bytes.
    fn compact(&mut self) {
        let mut bytes = Vec::with_capacity(self.bytes.len() - self.garbage);
        for id in 0..self.refs.len() {
            if self.refs[id] != FREE {
                let name = self.name(id as u32);
                let packed = ((bytes.len() as u64) << LENGTH_BITS) | name.len() as u64;
                bytes.extend_from_slice(name);
                self.refs[id] = packed;
            }
        }
        self.bytes = bytes;
        self.garbage = 0;
    }

    /// Bytes held, for a memory estimate.
    pub fn approximate_bytes(&self) -> usize {
        self.bytes.capacity() + 8 * self.refs.capacity() + 4 * (self.free.capacity() + self.slots.capacity())
    }
}
