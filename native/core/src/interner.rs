//! Segment strings interned to dense u32 ids, reference-counted by the edges that use them, so
//! segments of removed patterns or names are forgotten and their ids reused. Shared by the pattern
//! index and the topic-name trie.

use rustc_hash::FxHashMap;

#[derive(Debug, Default)]
pub(crate) struct Interner {
    ids: FxHashMap<Box<str>, u32>,
    /// Per id: the string (empty when free) and how many edges use it.
    slots: Vec<(Box<str>, u32)>,
    free: Vec<u32>,
}

impl Interner {
    pub fn get(&self, segment: &str) -> Option<u32> {
        self.ids.get(segment).copied()
    }

    /// Returns the id of `segment`, interning it if new, and counts one more use.
    pub fn acquire(&mut self, segment: &str) -> u32 {
        if let Some(&id) = self.ids.get(segment) {
            self.slots[id as usize].1 += 1;
            return id;
        }
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = (segment.into(), 1);
                id
            }
            None => {
                self.slots.push((segment.into(), 1));
                (self.slots.len() - 1) as u32
            }
        };
        self.ids.insert(segment.into(), id);
        id
    }

    /// Counts one use fewer; forgets the segment when none remain.
    pub fn release(&mut self, id: u32) {
        let slot = &mut self.slots[id as usize];
        debug_assert!(slot.1 > 0, "segment released more often than acquired");
        slot.1 -= 1;
        if slot.1 == 0 {
            let segment = std::mem::take(&mut slot.0);
            self.ids.remove(&segment);
            self.free.push(id);
        }
    }

    /// The string of a live id (empty for a freed one).
    pub fn text(&self, id: u32) -> &str {
        &self.slots[id as usize].0
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn approximate_bytes(&self) -> usize {
        let strings: usize = self.slots.iter().map(|(s, _)| s.len()).sum();
        strings * 2
            + self.slots.capacity() * std::mem::size_of::<(Box<str>, u32)>()
            + self.ids.capacity() * (std::mem::size_of::<(Box<str>, u32)>() + 1)
    }
}
