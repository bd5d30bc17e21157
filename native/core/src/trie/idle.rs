//! Names ordered by last activity: a sorted list of sorted blocks of (timestamp, id) keys, the same
//! structure as the js engine's `trie-idle.ts`. The oldest names are read from the front in time
//! proportional to the answer; an insert or removal finds its block by binary search and moves at
//! most one block's worth of keys. Appends (non-decreasing timestamps, the usual case) fill blocks
//! completely, so a key costs about its 16 bytes.

use crate::limits::TRIE_IDLE_BLOCK_ENTRIES;

/// (last activity in ms, name id): ties between equal timestamps are broken by id.
pub(super) type Key = (u64, u32);

#[derive(Debug, Default)]
pub(super) struct IdleSet {
    /// Non-empty blocks, each sorted, every key of a block below every key of the next.
    blocks: Vec<Vec<Key>>,
}

impl IdleSet {
    /// The block that holds `key` or where it belongs: the first whose last key is not below it.
    fn block_for(&self, key: Key) -> usize {
        self.blocks
            .partition_point(|block| block.last().is_some_and(|&last| last < key))
    }

    pub(super) fn insert(&mut self, key: Key) {
        let at = self.block_for(key);
        if at == self.blocks.len() {
            // Past every key: append, opening a new block when the last is full.
            match self.blocks.last_mut() {
                Some(last) if last.len() < TRIE_IDLE_BLOCK_ENTRIES => last.push(key),
                _ => {
                    let mut block = Vec::with_capacity(TRIE_IDLE_BLOCK_ENTRIES);
                    block.push(key);
                    self.blocks.push(block);
                }
            }
            return;
        }
        let block = &mut self.blocks[at];
        let position = block.partition_point(|&k| k < key);
        debug_assert!(block.get(position) != Some(&key), "key inserted twice");
        block.insert(position, key);
        if block.len() > TRIE_IDLE_BLOCK_ENTRIES {
            let upper = block.split_off(block.len() / 2);
            self.blocks.insert(at + 1, upper);
        }
    }

    /// Removes `key`, which must be present.
    pub(super) fn remove(&mut self, key: Key) {
        let at = self.block_for(key);
        let Some(block) = self.blocks.get_mut(at) else {
            debug_assert!(false, "removing a key that is not there");
            return;
        };
        match block.binary_search(&key) {
            Ok(position) => {
                block.remove(position);
                if block.is_empty() {
                    self.blocks.remove(at);
                }
            }
            Err(_) => debug_assert!(false, "removing a key that is not there"),
        }
    }

    /// Appends to `out` the ids whose timestamp is below `cutoff_ms`, oldest first, at most `limit`.
    pub(super) fn older_than(&self, cutoff_ms: u64, limit: usize, out: &mut Vec<u32>) {
        let mut left = limit;
        for block in &self.blocks {
            for &(timestamp, id) in block {
                if timestamp >= cutoff_ms || left == 0 {
                    return;
                }
                out.push(id);
                left -= 1;
            }
        }
    }

    pub(super) fn approximate_bytes(&self) -> usize {
        self.blocks.capacity() * std::mem::size_of::<Vec<Key>>()
            + self
                .blocks
                .iter()
                .map(|b| b.capacity() * std::mem::size_of::<Key>())
                .sum::<usize>()
    }
}
