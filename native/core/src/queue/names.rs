//! LMQ names to queue ids: every name's bytes back to back in one buffer, and an open-addressing
//! table of ids (linear probing) over them. A million names then cost their bytes and a few bytes of
//! table each, rather than an allocation and a map slot of their own each. Ids of removed names are
//! reused; the buffer is compacted once removed names fill half of it.
//!
//! A slot holds its id in its low bits and, in the bits the ids do not need, bits of its name's
//! hash: a probe passes a slot of another name without reading that name (two cache misses, its
//! reference and its bytes, and a comparison), which a lookup of a new name did a few times.

use rustc_hash::FxHasher;
use std::hash::Hasher;

/// A table slot that never held an id.
const EMPTY: u32 = 0;
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
    /// Open addressing over ids: EMPTY, removed (`id_mask`), or a tag (`tag`) above id + 1. At most
    /// five in eight are used, so probes stay short.
    slots: Vec<u32>,
    /// Bits of a slot that hold id + 1, set when the table is sized so that every id given before
    /// the next resize fits below `id_mask`; the bits above hold the tag.
    id_bits: u32,
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

    /// The slot bits that hold id + 1; all of them set marks a removed id.
    fn id_mask(&self) -> u32 {
        ((1u64 << self.id_bits) - 1) as u32
    }

    /// The hash bits a slot keeps above its id: the low half of the hash without the bits the id
    /// takes (the high half picks the home slot).
    fn tag(&self, hash: u64) -> u32 {
        (hash as u32) & !self.id_mask()
    }

    /// The table slot holding `name`, if it is there.
    fn find(&self, name: &[u8]) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let id_mask = self.id_mask();
        let hash = hash(name);
        let tag = self.tag(hash);
        let mut at = self.home(hash);
        loop {
            let slot = self.slots[at];
            if slot == EMPTY {
                return None;
            }
            if slot != id_mask && slot & !id_mask == tag && self.name((slot & id_mask) - 1) == name {
                return Some(at);
            }
            at = (at + 1) & mask;
        }
    }

    pub fn get(&self, name: &[u8]) -> Option<u32> {
        self.find(name).map(|at| (self.slots[at] & self.id_mask()) - 1)
    }

    /// Adds a name that is not in the table; returns its id.
    pub fn insert(&mut self, name: &[u8]) -> u32 {
        debug_assert!(self.get(name).is_none(), "a name inserted twice");
        debug_assert!(name.len() < 1 << LENGTH_BITS, "a name longer than a name can be");
        // The second test cannot hold between resizes (`rehash` leaves room for every id given
        // until the next one), but a slot must never take an id its bits cannot hold.
        if (self.used + 1) * 8 > self.slots.len() * 5
            || self.refs.len() as u64 + 2 >= u64::from(self.id_mask())
        {
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
        let id_mask = self.id_mask();
        let mut at = self.home(hash);
        loop {
            let slot = self.slots[at];
            if slot == EMPTY {
                self.used += 1;
                break;
            }
            if slot == id_mask {
                break;
            }
            at = (at + 1) & mask;
        }
        self.slots[at] = self.tag(hash) | (id + 1);
    }

    /// Removes a name; returns the id it had.
    pub fn remove(&mut self, name: &[u8]) -> Option<u32> {
        let at = self.find(name)?;
        let id = (self.slots[at] & self.id_mask()) - 1;
        self.slots[at] = self.id_mask();
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
        // Room for every id an insert may give before the next resize (at most one per slot:
        // fresh ids follow `refs`), for id + 1, and for the removed mark above them.
        let most = self.refs.len() as u64 + size as u64 + 2;
        self.id_bits = (u64::BITS - most.leading_zeros()).min(u32::BITS);
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
