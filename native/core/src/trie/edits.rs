//! What changed in a subtree since its block was laid down, kept so that laying it down again costs
//! the changes and a copy of the rest, not a visit of every child (snapshot.rs lays down; the js
//! engine's `edits.ts` is the same).
//!
//! A node's block holds its own name, then its children's blocks in child order. Between two
//! lay-downs a subtree changes in three ways only: a node gains or loses its own name, a child is
//! appended after the others (a new node), and a child is unlinked (pruned). So the new block is the
//! old one with the changed and pruned children's old ranges cut out, the changed ones laid down
//! again in their place, and the new children after the rest. When a node that was laid down first
//! changes, it records its old size and whether it was a name ([`Edits`]), and, in its parent's
//! record, where its block lay in the parent's old block ([`Entry`]). Lay-down then visits only the
//! recorded children and copies the runs between them.
//!
//! **Keys.** A child finds its block from its parent's by its key, kept in `Node::kept`. The
//! children in an untouched run move by the same amount when their parent is laid down again, and
//! rewriting each key would cost the visit the records avoid; so a parent laid down from its records
//! keeps a [`KeyMap`] instead, which maps ranges of its children's keys to where their blocks now
//! start. A child laid down again (or new) takes a fresh key past those in use, so ranges never
//! overlap; the map has at most about two pieces per child ever recorded. When the
//! fresh keys would run out, the parent's children take their positions as keys again and the map
//! goes (one visit of the children, after many lay-downs).

use super::snapshot::{CHANGED, IN_PARENT, KEY_BITS, LISTED};
use super::{TopicTrie, NONE};
use crate::prefetch::prefetch;

/// A changed node's state as last laid down.
#[derive(Debug, Default)]
pub(super) struct Edits {
    /// Names in the old block.
    pub(super) old_names: u32,
    /// Whether the old block starts with the node's own name.
    pub(super) old_named: bool,
    /// The children whose old blocks are not copied as they lay: changed since, laid down on their
    /// own since, or pruned (`node` is then `NONE`).
    pub(super) children: Vec<Entry>,
}

/// A child's old block within its parent's old block.
#[derive(Clone, Copy, Debug)]
pub(super) struct Entry {
    pub(super) node: u32,
    pub(super) at: u32,
    pub(super) size: u32,
}

/// Keys `[key, key + len)` of a node's children start their blocks at `[at, at + len)` of its block.
/// `rank` orders pieces by key without comparing keys (see [`KeyMap::new`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Piece {
    pub(super) key: u32,
    pub(super) at: u32,
    pub(super) len: u32,
    pub(super) rank: u32,
}

/// Where the blocks of a node's children start, by key; a node without one uses positions as keys.
#[derive(Debug, Default)]
pub(super) struct KeyMap {
    /// In increasing position order.
    pieces: Vec<Piece>,
    /// The pieces' indices in increasing key order (a child laid down again takes a key past its
    /// siblings', so the two orders differ).
    by_key: Vec<u32>,
    /// The first key not yet given.
    pub(super) next_key: u32,
}

impl KeyMap {
    /// A map of `pieces`, whose ranks run below `ranks`, in key order without comparing keys, as
    /// the js engine's `edits.ts` builds it: a map is built from parts of the previous map's
    /// pieces, in position order, and from fresh pieces, whose keys are past all of those and rise
    /// with their positions. Each part carries the rank of its piece in the previous map's key
    /// order (fresh pieces the largest) and parts of one piece come in rising key order, so a
    /// stable counting pass over the ranks orders the pieces by key, where sorting them cost a node
    /// laid down again and again (a piece or two per child ever laid down) more than the rest of
    /// its lay-down. Built, each piece's rank becomes its place in this map's key order.
    pub(super) fn new(mut pieces: Vec<Piece>, next_key: u32, ranks: u32) -> KeyMap {
        let mut starts = vec![0u32; ranks as usize + 2];
        for piece in &pieces {
            starts[piece.rank as usize + 1] += 1;
        }
        for r in 1..starts.len() {
            starts[r] += starts[r - 1];
        }
        let mut by_key = vec![0u32; pieces.len()];
        for (i, piece) in pieces.iter().enumerate() {
            let slot = &mut starts[piece.rank as usize];
            by_key[*slot as usize] = i as u32;
            *slot += 1;
        }
        for (k, &i) in by_key.iter().enumerate() {
            pieces[i as usize].rank = k as u32;
        }
        debug_assert!(
            by_key
                .windows(2)
                .all(|w| pieces[w[0] as usize].key < pieces[w[1] as usize].key),
            "trie: key map pieces out of key order"
        );
        KeyMap {
            pieces,
            by_key,
            next_key,
        }
    }

    /// Requests the map's arrays (their first lines), for a lay-down about to read them.
    pub(super) fn prefetch(&self) {
        prefetch(self.pieces.as_ptr().cast());
        prefetch(self.by_key.as_ptr().cast());
    }

    /// The rank fresh pieces take in the next map built from this one's: past every piece's.
    pub(super) fn fresh_rank(&self) -> u32 {
        self.by_key.len() as u32
    }

    fn position(&self, key: u32) -> u32 {
        let at = self
            .by_key
            .partition_point(|&i| self.pieces[i as usize].key <= key);
        let index = self.by_key[at.checked_sub(1).expect("trie: a child key below every piece")];
        let piece = &self.pieces[index as usize];
        debug_assert!(key - piece.key < piece.len, "trie: a child key in no piece");
        piece.at + (key - piece.key)
    }

    /// The pieces that map positions `[from, to)` of the old block, moved to start at `to_at`.
    pub(super) fn moved(&self, from: u32, to: u32, to_at: u32, out: &mut Vec<Piece>) {
        let first = self.pieces.partition_point(|p| p.at + p.len <= from);
        for p in &self.pieces[first..] {
            if p.at >= to {
                break;
            }
            let start = p.at.max(from);
            let end = (p.at + p.len).min(to);
            push_piece(
                out,
                Piece {
                    key: p.key + (start - p.at),
                    at: to_at + (start - from),
                    len: end - start,
                    rank: p.rank,
                },
            );
        }
    }
}

/// Appends `piece`, joined to the last one when both continue it (its keys then follow the last
/// one's directly, so the last one's rank orders both).
pub(super) fn push_piece(out: &mut Vec<Piece>, piece: Piece) {
    if let Some(last) = out.last_mut() {
        if last.key + last.len == piece.key && last.at + last.len == piece.at {
            last.len += piece.len;
            return;
        }
    }
    out.push(piece);
}

impl TopicTrie {
    /// Where the block of `child` starts within its parent's block, from its key.
    pub(super) fn child_position(&self, parent: u32, child: u32) -> u32 {
        let key = self.nodes[child as usize].kept & KEY_BITS;
        match self.key_maps.get(&parent) {
            Some(map) => map.position(key),
            None => key,
        }
    }

    /// Marks `node` and its ancestors changed. Must come before the change touches names or counts:
    /// a node that was laid down records its state then. Every ancestor of a changed node is
    /// changed, so marking stops at the first one already marked.
    pub(super) fn mark_changed(&mut self, mut node: u32) {
        while node != NONE {
            let kept = self.nodes[node as usize].kept;
            if kept & CHANGED != 0 {
                return;
            }
            // Unchanged, so laid down: it records its state, and its place in its parent's record.
            self.nodes[node as usize].kept |= CHANGED;
            let (names, named, parent) = {
                let n = &self.nodes[node as usize];
                (n.names, n.is_name(), self.links[node as usize].parent)
            };
            let edits = self.edits.entry(node).or_default();
            edits.old_names = names;
            edits.old_named = named;
            self.list_in_parent(node);
            node = parent;
        }
    }

    /// Records `node`'s old range in its parent's record, once per lay-down of the parent.
    fn list_in_parent(&mut self, node: u32) {
        let kept = self.nodes[node as usize].kept;
        if kept & IN_PARENT == 0 || kept & LISTED != 0 {
            return;
        }
        let parent = self.links[node as usize].parent;
        let at = self.child_position(parent, node);
        let size = self.nodes[node as usize].names;
        self.nodes[node as usize].kept |= LISTED;
        let parent_names = self.nodes[parent as usize].names;
        let parent_named = self.nodes[parent as usize].is_name();
        // The parent is unchanged until the marking reaches it, so it may have no record yet.
        let edits = self.edits.entry(parent).or_insert_with(|| Edits {
            old_names: parent_names,
            old_named: parent_named,
            children: Vec::new(),
        });
        edits.children.push(Entry { node, at, size });
    }

    /// Forgets what the edits hold of `node`, which is being freed: its own record and key map, and
    /// in its parent's record its old range stays as one to cut out.
    pub(super) fn forget_edits(&mut self, node: u32) {
        self.edits.remove(&node);
        self.key_maps.remove(&node);
        if self.nodes[node as usize].kept & LISTED != 0 {
            let parent = self.links[node as usize].parent;
            let entry = self
                .edits
                .get_mut(&parent)
                .and_then(|edits| edits.children.iter_mut().find(|e| e.node == node))
                .expect("trie: a listed node has an entry in its parent's record");
            entry.node = NONE;
        }
    }

    pub(super) fn edits_approximate_bytes(&self) -> usize {
        let records: usize = self
            .edits
            .values()
            .map(|e| std::mem::size_of::<Edits>() + 8 + e.children.capacity() * std::mem::size_of::<Entry>())
            .sum();
        let maps: usize = self
            .key_maps
            .values()
            .map(|m| {
                std::mem::size_of::<KeyMap>() + 8 + m.pieces.capacity() * (std::mem::size_of::<Piece>() + 4)
            })
            .sum();
        records + maps + self.holders.capacity() * 12
    }
}
