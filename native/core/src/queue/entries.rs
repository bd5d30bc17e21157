//! The entries of one consume queue, kept as small as an idle queue allows: none and one entry are
//! held in place, more in a ring buffer, and a queue restored from a checkpoint holds only where its
//! block is (boxed, since few queues are in that state for long and most never are).

use super::{BadBlock, IndexEntry, StoredEntries};
use std::collections::VecDeque;

/// Up to this many entries, a queue's buffer grows fourfold when full (see [`Entries::push_back`]).
/// Appends spread over many queues reallocate each queue's buffer as it grows, and each
/// reallocation is a call into the allocator whose memory is out of cache; from here on it
/// doubles, so a long queue holds no more spare room than doubling leaves.
const FAST_GROWTH_BELOW_ENTRIES: usize = 64;

/// Entries in offset order.
#[derive(Clone, Default)]
pub enum Entries {
    #[default]
    Empty,
    One(IndexEntry),
    Many(VecDeque<IndexEntry>),
    /// Still in a checkpoint file: [`super::Queues::load`] reads them on first use.
    Stored(Box<StoredQueue>),
}

/// The entries of a queue whose block is still in a checkpoint file: the block, and the entries
/// that replay of the log after the checkpoint appended after it.
#[derive(Clone)]
pub struct StoredQueue {
    pub block: StoredEntries,
    pub tail: VecDeque<IndexEntry>,
    /// The block's checksum was checked (replay checks it before appending after it).
    pub checked: bool,
}

/// The entries of a range, front to back.
pub type EntryIter<'a> = std::iter::Chain<std::slice::Iter<'a, IndexEntry>, std::slice::Iter<'a, IndexEntry>>;

impl From<VecDeque<IndexEntry>> for Entries {
    fn from(entries: VecDeque<IndexEntry>) -> Entries {
        match entries.len() {
            0 => Entries::Empty,
            1 => entries
                .front()
                .map_or(Entries::Empty, |&entry| Entries::One(entry)),
            _ => Entries::Many(entries),
        }
    }
}

impl Entries {
    /// The loaded entries as two slices, front first (both empty while stored).
    pub fn as_slices(&self) -> (&[IndexEntry], &[IndexEntry]) {
        match self {
            Entries::Empty | Entries::Stored(_) => (&[], &[]),
            Entries::One(entry) => (std::slice::from_ref(entry), &[]),
            Entries::Many(entries) => entries.as_slices(),
        }
    }

    /// Loaded entries (none while stored).
    pub fn loaded(&self) -> usize {
        match self {
            Entries::Empty | Entries::Stored(_) => 0,
            Entries::One(_) => 1,
            Entries::Many(entries) => entries.len(),
        }
    }

    pub fn iter(&self) -> EntryIter<'_> {
        let (front, back) = self.as_slices();
        front.iter().chain(back.iter())
    }

    /// `take` entries from the `skip`-th, both within the loaded entries.
    pub fn range(&self, skip: usize, take: usize) -> EntryIter<'_> {
        let (front, back) = self.as_slices();
        let end = skip + take;
        let front_part = &front[skip.min(front.len())..end.min(front.len())];
        let back_part = &back[skip.saturating_sub(front.len())..end.saturating_sub(front.len())];
        front_part.iter().chain(back_part.iter())
    }

    pub fn front(&self) -> Option<&IndexEntry> {
        self.iter().next()
    }

    pub fn back(&self) -> Option<&IndexEntry> {
        let (front, back) = self.as_slices();
        back.last().or(front.last())
    }

    /// How many loaded entries from the front satisfy `below` (which must hold for a prefix).
    pub fn partition_point(&self, below: impl Fn(&IndexEntry) -> bool) -> usize {
        let (front, back) = self.as_slices();
        let in_front = front.partition_point(&below);
        if in_front < front.len() {
            in_front
        } else {
            front.len() + back.partition_point(&below)
        }
    }

    /// Appends an entry to loaded entries.
    pub fn push_back(&mut self, entry: IndexEntry) {
        debug_assert!(!matches!(self, Entries::Stored(_)), "push to stored entries");
        match self {
            Entries::Empty | Entries::Stored(_) => *self = Entries::One(entry),
            Entries::One(first) => {
                let mut many = VecDeque::with_capacity(4);
                many.push_back(*first);
                many.push_back(entry);
                *self = Entries::Many(many);
            }
            Entries::Many(entries) => {
                // Below `FAST_GROWTH_BELOW_ENTRIES` a full buffer grows to four times its length
                // rather than two: half the reallocations on the way up, at the same capacity
                // from there on.
                if entries.len() == entries.capacity() && entries.len() < FAST_GROWTH_BELOW_ENTRIES {
                    entries.reserve(3 * entries.len());
                }
                entries.push_back(entry);
            }
        }
    }

    /// Forgets the first `count` loaded entries.
    pub fn drop_front(&mut self, count: usize) {
        if count == 0 {
            return;
        }
        match self {
            Entries::Many(entries) if count < entries.len() => {
                entries.drain(..count);
                if entries.len() == 1 {
                    *self = Entries::from(std::mem::take(entries));
                } else if entries.capacity() > 4 * entries.len() {
                    entries.shrink_to(2 * entries.len());
                }
            }
            Entries::Stored(_) => {}
            _ => *self = Entries::Empty,
        }
    }

    /// Entries held on the heap, for a memory estimate.
    pub fn heap_entries(&self) -> usize {
        match self {
            Entries::Many(entries) => entries.capacity(),
            _ => 0,
        }
    }

    /// Every entry, reading stored ones (and checking their block).
    pub fn to_deque(&self) -> Result<VecDeque<IndexEntry>, BadBlock> {
        match self {
            Entries::Stored(stored) => {
                let mut all = stored.block.load()?;
                all.extend(stored.tail.iter().copied());
                Ok(all)
            }
            _ => Ok(self.iter().copied().collect()),
        }
    }
}

impl<'a> IntoIterator for &'a Entries {
    type Item = &'a IndexEntry;
    type IntoIter = EntryIter<'a>;

    fn into_iter(self) -> EntryIter<'a> {
        self.iter()
    }
}
