//! Consume queues: one light queue (LMQ) per name, each a run of fixed-size index entries pointing
//! into the commit log, its logical offsets implicit (the queue's minimum offset plus the place).
//! All queues live in one vector indexed by ids that a table of names gives (names.rs), so the append
//! path looks a name up without building a `String`, an idle queue costs its name and a few words,
//! and no queue owns a file (docs/FORMAT.md, "Consume queues"). A queue read from a checkpoint keeps
//! its entries in the checkpoint file until first used (stored.rs).

mod entries;
mod list;
mod names;
mod stored;

pub use entries::{Entries, EntryIter, StoredQueue};
pub use list::NamePage;
pub use stored::{
    check_entries, decode_entry, encode_entry, BadBlock, CheckpointFile, StoredEntries, STORED_ENTRY_BYTES,
};

use names::NameTable;
use std::collections::VecDeque;
use std::sync::Arc;

/// Where one stored record is and what consumers filter it by (24 bytes when checkpointed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    pub position: u64,
    pub size: u32,
    pub tag_hash: u32,
    pub key_hash: u32,
}

/// One LMQ. An empty queue keeps its offsets: the next message continues where the last one ended.
#[derive(Clone, Default)]
pub struct ConsumeQueue {
    pub(crate) min_offset: u64,
    /// Store timestamp of the newest record, 0 before the first.
    pub(crate) last_write_ms: u64,
    pub(crate) entries: Entries,
}

impl std::fmt::Debug for ConsumeQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsumeQueue")
            .field("min_offset", &self.min_offset)
            .field("next_offset", &self.next_offset())
            .field("last_write_ms", &self.last_write_ms)
            .field("stored", &self.stored().is_some())
            .finish()
    }
}

/// Two queues are equal when they hold the same entries, loaded or not (a stored block that fails
/// to load compares unequal).
impl PartialEq for ConsumeQueue {
    fn eq(&self, other: &Self) -> bool {
        let entries = |q: &ConsumeQueue| q.entries.to_deque().ok();
        self.min_offset == other.min_offset
            && self.last_write_ms == other.last_write_ms
            && self.next_offset() == other.next_offset()
            && entries(self).is_some()
            && entries(self) == entries(other)
    }
}

impl ConsumeQueue {
    pub fn min_offset(&self) -> u64 {
        self.min_offset
    }

    pub fn next_offset(&self) -> u64 {
        self.min_offset + self.len() as u64
    }

    /// Entries held, loaded or still stored.
    pub fn len(&self) -> usize {
        match &self.entries {
            Entries::Stored(stored) => stored.block.count + stored.tail.len(),
            entries => entries.loaded(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where the entries are while they are still in a checkpoint file.
    pub fn stored(&self) -> Option<&StoredEntries> {
        match &self.entries {
            Entries::Stored(stored) => Some(&stored.block),
            _ => None,
        }
    }

    /// A queue whose entries stay in a checkpoint file until first used.
    pub fn from_stored(min_offset: u64, last_write_ms: u64, stored: StoredEntries) -> ConsumeQueue {
        ConsumeQueue {
            min_offset,
            last_write_ms,
            entries: Entries::Stored(Box::new(StoredQueue {
                block: stored,
                tail: VecDeque::new(),
                checked: false,
            })),
        }
    }

    /// Reads the stored entries, if any; nothing changes when they fail their check.
    fn load(&mut self) -> Result<(), BadBlock> {
        if let Entries::Stored(_) = &self.entries {
            self.entries = Entries::from(self.entries.to_deque()?);
        }
        Ok(())
    }

    pub fn last_write_ms(&self) -> u64 {
        self.last_write_ms
    }

    /// The loaded entries (none while they are stored: see [`Queues::load`]).
    pub fn entries(&self) -> &Entries {
        &self.entries
    }

    /// Asks the CPU to bring the memory the next `push_back` writes into cache, without waiting
    /// for it: the append path calls this for a run of records first, so the misses overlap instead
    /// of stalling one record after another.
    #[inline]
    pub fn prefetch_tail(&self) {
        if let Entries::Many(entries) = &self.entries {
            let Some(last) = entries.back() else {
                return;
            };
            crate::prefetch::prefetch(
                std::ptr::from_ref(last)
                    .cast::<u8>()
                    .wrapping_add(size_of::<IndexEntry>()),
            );
        }
    }

    /// Asks the CPU to bring the first and the last loaded entries into cache, without waiting:
    /// a checkpoint calls this for a batch of queues before it copies them, so the misses of a
    /// queue not touched for a while overlap instead of stalling one queue after another.
    #[inline]
    pub fn prefetch_ends(&self) {
        if let Entries::Many(entries) = &self.entries {
            if let (Some(front), Some(back)) = (entries.front(), entries.back()) {
                crate::prefetch::prefetch(std::ptr::from_ref(front).cast::<u8>());
                crate::prefetch::prefetch(std::ptr::from_ref(back).cast::<u8>());
            }
        }
    }

    /// The entries from offset `from` (raised to the minimum), at most `max` of them, and the offset
    /// of the first.
    pub fn range(&self, from: u64, max: usize) -> (u64, EntryIter<'_>) {
        let first = from.max(self.min_offset);
        let loaded = self.entries.loaded();
        let skip = (first - self.min_offset).min(loaded as u64) as usize;
        let take = max.min(loaded - skip);
        (first, self.entries.range(skip, take))
    }

    /// Forgets the entries of records before `position`; returns how many. A stored queue must
    /// have been loaded first if it has any ([`Queues::load_below`]).
    fn drop_below(&mut self, position: u64) -> usize {
        debug_assert!(self
            .stored()
            .is_none_or(|s| s.count == 0 || s.first_position >= position));
        let keep_from = self.entries.partition_point(|e| e.position < position);
        self.entries.drop_front(keep_from);
        self.min_offset += keep_from as u64;
        keep_from
    }
}

/// A record's offset in an LMQ that contradicts the queue it replays into.
#[derive(Debug, PartialEq, Eq)]
pub struct OffsetWentBack {
    pub expected: u64,
    pub found: u64,
}

/// Why a record could not be replayed into its queue.
#[derive(Debug, PartialEq, Eq)]
pub enum ReplayError {
    WentBack(OffsetWentBack),
    /// The queue's stored entries failed their check.
    BadBlock(BadBlock),
}

/// Names copied out of [`Queues`] at one moment, back to back.
pub struct NameList {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl NameList {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The `i`-th name (`i` below [`NameList::len`]).
    pub fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }
}

/// Every LMQ of a log, by name.
#[derive(Default)]
pub struct Queues {
    names: NameTable,
    /// By id; the queue of a freed id is empty until the id is reused.
    queues: Vec<ConsumeQueue>,
    /// Index entries in all queues.
    entries: usize,
    /// Ids in their names' UTF-8 byte order for listing, rebuilt lazily after the set of names
    /// changed.
    sorted: Vec<u32>,
    sorted_valid: bool,
    /// Some queue was restored with its entries still in a checkpoint file (they may since have
    /// been loaded): while false, [`Queues::load`] has nothing to do for any name.
    some_stored: bool,
    /// Queues removed so far (see [`Queues::id`]).
    removals: u64,
}

impl Queues {
    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.len() == 0
    }

    pub fn get(&self, name: &[u8]) -> Option<&ConsumeQueue> {
        self.names.get(name).map(|id| &self.queues[id as usize])
    }

    /// The id of `name`'s queue, for [`Queues::append_to`]: it stays the queue's until a queue is
    /// removed (a removed queue's id is reused), which [`Queues::removals`] counts.
    pub fn id(&self, name: &[u8]) -> Option<u32> {
        self.names.get(name)
    }

    /// The queue of `id` (from [`Queues::id`], no removal since; a freed id's queue is empty).
    pub fn at(&self, id: u32) -> &ConsumeQueue {
        &self.queues[id as usize]
    }

    pub fn removals(&self) -> u64 {
        self.removals
    }

    /// [`Queues::append`] to the queue of `id`, which must be live (from [`Queues::id`], no
    /// removal since).
    pub fn append_to(&mut self, id: u32, entry: IndexEntry, timestamp_ms: u64) -> u64 {
        debug_assert!(self.names.is_live(id), "append to a removed queue");
        self.entries += 1;
        let queue = &mut self.queues[id as usize];
        debug_assert!(queue.stored().is_none(), "append to a queue that was not loaded");
        queue.entries.push_back(entry);
        queue.last_write_ms = timestamp_ms;
        queue.next_offset() - 1
    }

    /// [`ConsumeQueue::prefetch_tail`] of the queue of `id`.
    #[inline]
    pub fn prefetch_tail(&self, id: u32) {
        if let Some(queue) = self.queues.get(id as usize) {
            queue.prefetch_tail();
        }
    }

    /// Starts loading the queue of `id` itself (not its entries) into cache: where its entries are
    /// is then known without a wait, for a [`Queues::prefetch_tail`] a little later.
    #[inline]
    pub fn prefetch_queue(&self, id: u32) {
        if let Some(queue) = self.queues.get(id as usize) {
            crate::prefetch::prefetch(std::ptr::from_ref(queue).cast::<u8>());
        }
    }

    fn get_mut(&mut self, name: &[u8]) -> Option<&mut ConsumeQueue> {
        self.names.get(name).map(|id| &mut self.queues[id as usize])
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &ConsumeQueue)> {
        self.names
            .ids()
            .map(|id| (self.names.name(id), &self.queues[id as usize]))
    }

    /// Every name, in no particular order, copied into one buffer: a checkpoint walks them while
    /// the queues change, and a copy per name would leave a million small allocations behind.
    pub fn name_list(&self) -> NameList {
        let mut list = NameList {
            bytes: Vec::new(),
            ends: Vec::with_capacity(self.names.len()),
        };
        for id in self.names.ids() {
            list.bytes.extend_from_slice(self.names.name(id));
            list.ends.push(list.bytes.len());
        }
        list
    }

    /// Index entries held in all queues.
    pub fn entry_count(&self) -> usize {
        self.entries
    }

    /// Appends an entry at the queue's next offset, creating the queue at 0; returns the offset.
    /// A stored queue must have been loaded ([`Queues::load`]) first.
    #[inline]
    pub fn append(&mut self, name: &[u8], entry: IndexEntry, timestamp_ms: u64) -> u64 {
        self.entries += 1;
        if let Some(queue) = self.get_mut(name) {
            debug_assert!(queue.stored().is_none(), "append to a queue that was not loaded");
            queue.entries.push_back(entry);
            queue.last_write_ms = timestamp_ms;
            return queue.next_offset() - 1;
        }
        self.insert(name, 0, entry, timestamp_ms);
        0
    }

    /// Replays a record stored at `offset` in the queue (docs/FORMAT.md, "Recovery", step 3): an
    /// unknown queue starts there, the next offset appends, a later one restarts the queue (the
    /// records between were retired), an earlier one contradicts the log.
    pub fn replay(
        &mut self,
        name: &[u8],
        offset: u64,
        entry: IndexEntry,
        timestamp_ms: u64,
    ) -> Result<(), ReplayError> {
        let Some(id) = self.names.get(name) else {
            self.entries += 1;
            self.insert(name, offset, entry, timestamp_ms);
            return Ok(());
        };
        let queue = &mut self.queues[id as usize];
        // A queue still in the checkpoint file stays there, the replayed entries held after its
        // block; only the block's checksum is checked now (its entries when the queue is loaded).
        if let Entries::Stored(stored) = &mut queue.entries {
            if !stored.checked {
                stored.block.check().map_err(ReplayError::BadBlock)?;
                stored.checked = true;
            }
        }
        let expected = queue.next_offset();
        if offset < expected {
            return Err(ReplayError::WentBack(OffsetWentBack {
                expected,
                found: offset,
            }));
        }
        if offset > expected {
            self.entries -= queue.len();
            queue.entries = Entries::Empty;
            queue.min_offset = offset;
        }
        match &mut queue.entries {
            Entries::Stored(stored) => stored.tail.push_back(entry),
            entries => entries.push_back(entry),
        }
        queue.last_write_ms = timestamp_ms;
        self.entries += 1;
        Ok(())
    }

    fn insert(&mut self, name: &[u8], min_offset: u64, entry: IndexEntry, timestamp_ms: u64) {
        let queue = ConsumeQueue {
            min_offset,
            last_write_ms: timestamp_ms,
            entries: Entries::One(entry),
        };
        self.put(name, queue);
    }

    /// Gives a name that is not in the table an id and `queue`.
    fn put(&mut self, name: &[u8], queue: ConsumeQueue) {
        let id = self.names.insert(name) as usize;
        if id == self.queues.len() {
            self.queues.push(queue);
        } else {
            self.queues[id] = queue;
        }
        self.sorted_valid = false;
    }

    /// Puts a whole queue back, as a checkpoint held it.
    pub fn restore(&mut self, name: &[u8], queue: ConsumeQueue) {
        self.some_stored |= queue.stored().is_some();
        self.entries += queue.len();
        match self.get_mut(name) {
            Some(old) => {
                let old = std::mem::replace(old, queue);
                self.entries -= old.len();
            }
            None => self.put(name, queue),
        }
    }

    /// Drops a queue; returns it if it existed.
    pub fn remove(&mut self, name: &[u8]) -> Option<ConsumeQueue> {
        let id = self.names.remove(name)?;
        self.removals += 1;
        let queue = std::mem::take(&mut self.queues[id as usize]);
        self.entries -= queue.len();
        self.sorted_valid = false;
        Some(queue)
    }

    /// Reads the entries of `name` from its checkpoint file if they are still there. An unknown or
    /// loaded queue is left alone; a block that fails its check leaves the queue stored.
    pub fn load(&mut self, name: &[u8]) -> Result<(), BadBlock> {
        if !self.some_stored {
            return Ok(());
        }
        match self.get_mut(name) {
            Some(queue) => queue.load(),
            None => Ok(()),
        }
    }

    /// [`Queues::load`] of the queue of `id` (from [`Queues::id`], no removal since).
    pub fn load_at(&mut self, id: u32) -> Result<(), BadBlock> {
        if !self.some_stored {
            return Ok(());
        }
        self.queues[id as usize].load()
    }

    /// Loads every stored queue with an entry of a record before `position`, so that
    /// [`Queues::drop_below`] can then forget them; nothing is forgotten here. (The queues of freed
    /// ids are empty, so every loop over all of them may include those.)
    pub fn load_below(&mut self, position: u64) -> Result<(), BadBlock> {
        for queue in &mut self.queues {
            if queue
                .stored()
                .is_some_and(|s| s.count > 0 && s.first_position < position)
            {
                queue.load()?;
            }
        }
        Ok(())
    }

    /// Empties every queue, keeping its offsets (its next offset becomes its minimum): a log with
    /// no segment left holds none of the records a checkpoint indexed. Stored queues are not read.
    pub fn empty_all(&mut self) {
        for queue in &mut self.queues {
            queue.min_offset = queue.next_offset();
            queue.entries = Entries::Empty;
        }
        self.entries = 0;
    }

    /// Points a stored queue at a copy of its block in a newer checkpoint file, if it is still
    /// stored at `old` (the same file and offset); returns whether it was moved.
    pub fn move_stored(
        &mut self,
        name: &[u8],
        old: &StoredEntries,
        new_file: &Arc<CheckpointFile>,
        new_at: usize,
    ) -> bool {
        let Some(Entries::Stored(stored)) = self.get_mut(name).map(|q| &mut q.entries) else {
            return false;
        };
        // A queue with entries held after its block was written as a block of its own.
        let stored = &mut stored.block;
        if !Arc::ptr_eq(&stored.file, &old.file) || stored.at != old.at {
            return false;
        }
        stored.file = Arc::clone(new_file);
        stored.at = new_at;
        true
    }

    /// Forgets every entry of a record before `position` (its segment was retired). Queues stay,
    /// with their minimum offsets moved past what was forgotten. Stored queues with such entries
    /// must have been loaded first ([`Queues::load_below`]).
    pub fn drop_below(&mut self, position: u64) {
        for queue in &mut self.queues {
            if queue.stored().is_none() {
                self.entries -= queue.drop_below(position);
            }
        }
    }

    /// An estimate of the memory the queues hold, in bytes: the name table, the queues' slots and
    /// their entry buffers, and the sorted id list.
    pub fn approximate_bytes(&self) -> usize {
        let entry = std::mem::size_of::<IndexEntry>();
        let heap_entries: usize = self.queues.iter().map(|q| q.entries.heap_entries()).sum();
        let stored: usize = self
            .queues
            .iter()
            .map(|q| match &q.entries {
                Entries::Stored(stored) => {
                    std::mem::size_of::<StoredQueue>() + stored.tail.capacity() * entry
                }
                _ => 0,
            })
            .sum();
        self.names.approximate_bytes()
            + self.queues.capacity() * std::mem::size_of::<ConsumeQueue>()
            + heap_entries * entry
            + stored
            + self.sorted.capacity() * 4
    }
}

#[cfg(test)]
mod tests;
