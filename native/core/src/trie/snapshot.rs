//! Kept lists: the ids of a subtree's names in walk order, laid down by the first walk that takes
//! the subtree whole and copied by later ones, so that a trailing wildcard costs its answer however
//! the nodes are placed in memory (the js engine's `snapshot.ts` is the same).
//!
//! A node's block is the names of its subtree in depth-first order, its own name first, then each
//! child's block in child order: `names` entries. A walk that takes the whole subtree of a node (the
//! top) writes the top's block into a list the top then holds, and gives every node it visits a key
//! saying where its block starts within its parent's (edits.rs). A node whose subtree has not
//! changed since finds its block by climbing to the nearest node holding a list, adding its
//! ancestors' positions on the way.
//!
//! Changes mark their node and its ancestors `CHANGED`, and each node so marked records what its
//! block was (edits.rs). A walk whose top changed lays the top's block down again from the old one:
//! it copies the runs of the old block between the recorded children, lays the recorded children
//! down again in their places and the new children after them, so it costs the changes, their
//! depth and the copy, not the subtree. A list a child held is absorbed into the new one, so lists do
//! not pile up: at most one per top walked, each the size of its subtree's answer.
//!
//! Lists hold ids, not node positions, so compaction moves the `kept` field with its node and keeps
//! every list.

use super::edits::{push_piece, Entry, KeyMap, Piece};
use super::pending::PendingEdit;
use super::plan::{Plan, PLAN_LIST_END, PLAN_LIST_START};
use super::{Links, Node, TopicTrie, NONE, ROOT};
use crate::dialect::Dialect;
use crate::prefetch::prefetch;

/// `Node::kept` flag: the subtree changed since the node's block was laid down, or it never was.
pub(super) const CHANGED: u32 = 1 << 31;
/// `Node::kept` flag: the node holds a kept list (`TopicTrie::holders` has its index).
pub(super) const KEPT: u32 = 1 << 30;
/// `Node::kept` flag: the node's block lies in its parent's as last laid down, where its key says.
pub(super) const IN_PARENT: u32 = 1 << 29;
/// `Node::kept` flag: the node's old range has an entry in its parent's record (edits.rs).
pub(super) const LISTED: u32 = 1 << 28;
/// `Node::kept` below the flags: the node's key in its parent's key map.
pub(super) const KEY_BITS: u32 = LISTED - 1;

/// One kept list, whether a plan handed it to the caller (which then holds a copy), and its edits
/// since it was laid down while it keeps them (pending.rs).
#[derive(Debug, Default)]
pub(super) struct KeptList {
    pub(super) ids: Vec<u32>,
    pub(super) mirrored: bool,
    pub(super) pending: Option<Vec<PendingEdit>>,
}

impl KeptList {
    pub(super) fn approximate_bytes(&self) -> usize {
        self.ids.capacity() * 4
            + self
                .pending
                .as_ref()
                .map_or(0, |p| p.capacity() * std::mem::size_of::<PendingEdit>())
    }
}

/// A run of a list that `lay_down` will copy.
#[derive(Clone, Copy, Default)]
struct Run {
    list: u32,
    offset: u32,
    count: u32,
}

/// One node on the way down of `lay_down`.
struct Frame {
    node: u32,
    /// Where its new block starts.
    start: u32,
    /// Where its old block lies (list, offset); `NONE` for a node never laid down.
    old_list: u32,
    old_offset: u32,
    /// Laid down from its record: the recorded children by old position, the next one to take, the
    /// next old position not copied and the old block's end.
    by_record: bool,
    entries: Vec<Entry>,
    next_entry: usize,
    old_at: u32,
    old_end: u32,
    /// The next child to visit by the links: the first new one (from a record), else every one.
    child: u32,
    /// Where the child `next_step` returned last lay in the old block when the record says so,
    /// else `NONE`.
    child_old_at: u32,
    /// From a record: the new key map, the next fresh key and the rank of fresh pieces (edits.rs).
    pieces: Vec<Piece>,
    next_key: u32,
    fresh_rank: u32,
    /// The length of the node's text in the walk's path (plans only).
    path_len: usize,
}

/// What `lay_down` builds: the new list, its pending run, the lists to free, the path (plans).
struct Output<'a> {
    ids: Vec<u32>,
    run: Run,
    freed: Vec<u32>,
    path: String,
    plan: Option<&'a mut Plan>,
}

impl Output<'_> {
    fn len(&self) -> u32 {
        self.ids.len() as u32 + self.run.count
    }
}

impl TopicTrie {
    pub(super) fn is_changed(&self, node: u32) -> bool {
        self.nodes[node as usize].kept & CHANGED != 0
    }

    fn kept_list(&self, node: u32) -> Option<u32> {
        if self.nodes[node as usize].kept & KEPT == 0 {
            return None;
        }
        self.holders.get(&node).copied()
    }

    /// Takes the list `node` holds, if any, away from it (the caller frees it).
    fn take_kept_list(&mut self, node: u32) -> Option<u32> {
        let list = self.kept_list(node)?;
        self.holders.remove(&node);
        self.nodes[node as usize].kept &= !KEPT;
        Some(list)
    }

    /// Frees the list `node` holds, if any.
    pub(super) fn drop_kept_list(&mut self, node: u32) {
        if let Some(list) = self.take_kept_list(node) {
            self.free_list(list);
        }
    }

    /// Where the block of `node` lies as last laid down: the list of the nearest node (itself or an
    /// ancestor) holding one and the sum of the positions on the way up; `(NONE, 0)` for a node
    /// never laid down. Valid for an unchanged node; for a changed one, its old block.
    pub(super) fn locate(&self, node: u32) -> (u32, u32) {
        let mut offset = 0;
        let mut at = node;
        loop {
            if let Some(list) = self.kept_list(at) {
                return (list, offset);
            }
            if self.nodes[at as usize].kept & IN_PARENT == 0 {
                return (NONE, 0);
            }
            let parent = self.links[at as usize].parent;
            offset += self.child_position(parent, at);
            at = parent;
        }
    }

    /// The list holding the block of `node` and where the block starts, laying it down first when
    /// the subtree changed since (handing the lists it makes to `plan`, when given).
    pub(super) fn block_of(&mut self, node: u32, plan: Option<&mut Plan>) -> (u32, u32) {
        if self.is_changed(node) {
            self.lay_down(node, plan);
        }
        let (list, offset) = self.locate(node);
        assert!(list != NONE, "trie: an unchanged node lies in no kept list");
        (list, offset)
    }

    /// The ids of `count` names of list `list` from `offset`.
    pub(super) fn list_ids(&self, list: u32, offset: u32, count: u32) -> &[u32] {
        &self.lists[list as usize].ids[offset as usize..(offset + count) as usize]
    }

    /// Lays the block of `top` down into a new list that `top` then holds: runs of
    /// old blocks copied, changed and new nodes visited (edits.rs says which). Every node visited
    /// becomes unchanged; the lists of visited or copied nodes (the top's previous one included) are
    /// freed once the copies are done.
    pub(super) fn lay_down(&mut self, top: u32, mut plan: Option<&mut Plan>) {
        // A subtree without history is gathered level by level instead (fresh.rs).
        if self.lay_down_fresh(top, plan.as_deref_mut()) {
            return;
        }
        let size = self.nodes[top as usize].names;
        let mut path = String::new();
        let index = self.start_block(top, size, plan.as_deref_mut(), &mut path);
        let mut out = Output {
            ids: self.take_ids(size),
            run: Run::default(),
            freed: Vec::new(),
            path,
            plan,
        };
        let (old_list, old_offset) = self.locate(top);
        if let Some(list) = self.take_kept_list(top) {
            out.freed.push(list);
        }
        // An unchanged top (a plan needing a list of its own) is its old block, copied.
        let mut frames = Vec::new();
        if self.is_changed(top) {
            frames.push(self.enter(top, (old_list, old_offset), &mut out));
        } else {
            self.copy(old_list, old_offset, size, &mut out);
        }
        while let Some(frame) = frames.last_mut() {
            if let Some(child) = self.next_step(frame, &mut out) {
                let parent_path = frame.path_len;
                if let Some(entered) = self.visit(child, frame, parent_path, &mut out) {
                    frames.push(entered);
                }
                continue;
            }
            let done = frames.pop().expect("a frame");
            self.leave(done);
        }
        self.flush(&mut out);
        let Output { ids, freed, plan, .. } = out;
        for list in freed {
            self.free_list(list);
        }
        self.keep_block(top, index, size, ids, plan);
    }

    /// Begins laying down the block of `top` (`size` names): a new list's index, opened in `plan`
    /// when there is one, with `top`'s path written to `path` for the plan's names.
    pub(super) fn start_block(
        &mut self,
        top: u32,
        size: u32,
        plan: Option<&mut Plan>,
        path: &mut String,
    ) -> u32 {
        let index = self.new_list();
        if let Some(plan) = plan {
            plan.ops.extend([PLAN_LIST_START, index, size]);
            self.write_path(top, path);
        }
        index
    }

    /// Ends laying down the block of `top`: `ids` become list `index` (from `start_block`), which
    /// `top` then holds; `plan`, when there is one, closes the list and hears of the lists freed.
    pub(super) fn keep_block(
        &mut self,
        top: u32,
        index: u32,
        size: u32,
        ids: Vec<u32>,
        mut plan: Option<&mut Plan>,
    ) {
        assert_eq!(
            ids.len(),
            size as usize,
            "trie: a laid-down block holds its subtree's names"
        );
        if let Some(plan) = plan.as_deref_mut() {
            plan.ops.push(PLAN_LIST_END);
        }
        self.drop_pending_above(top);
        self.lists[index as usize] = KeptList {
            ids,
            mirrored: plan.is_some(),
            pending: Some(Vec::new()),
        };
        self.holders.insert(top, index);
        self.nodes[top as usize].kept |= KEPT;
        if let Some(plan) = plan {
            self.announce_frees(plan);
        }
    }

    /// Starts laying down `node`, whose old block is at `old`: its frame and its own name.
    fn enter(&mut self, node: u32, (old_list, old_offset): (u32, u32), out: &mut Output) -> Frame {
        let start = out.len();
        let names = self.nodes[node as usize].names;
        let record = self.edits.remove(&node).filter(|_| old_list != NONE);
        // Without a map the old block's positions are its children's keys, all of one rank.
        let (next_key, fresh_rank) = match self.key_maps.get(&node) {
            Some(map) => (map.next_key, map.fresh_rank()),
            None => (record.as_ref().map_or(0, |r| r.old_names), 1),
        };
        // Fresh keys for this lay-down come to at most its names; past the key range, every child
        // takes its position as its key again.
        let by_record = record.is_some() && u64::from(next_key) + u64::from(names) <= u64::from(KEY_BITS);
        let mut frame = Frame {
            node,
            start,
            old_list,
            old_offset,
            by_record,
            entries: Vec::new(),
            next_entry: 0,
            old_at: 0,
            old_end: 0,
            child: self.links[node as usize].first_child,
            child_old_at: NONE,
            pieces: Vec::new(),
            next_key,
            fresh_rank,
            path_len: out.path.len(),
        };
        if let (true, Some(record)) = (by_record, record) {
            frame.entries = record.children;
            frame.entries.sort_unstable_by_key(|e| e.at);
            // The walk visits these children one after another, each once the subtree of the one
            // before is done, and would miss the cache on each: their nodes, records and key maps
            // are requested together now, so that the misses overlap.
            for entry in &frame.entries {
                if entry.node != NONE {
                    prefetch((&self.nodes[entry.node as usize] as *const Node).cast());
                    prefetch((&self.links[entry.node as usize] as *const Links).cast());
                    if let Some(child_record) = self.edits.get(&entry.node) {
                        prefetch(child_record.children.as_ptr().cast());
                    }
                    if let Some(map) = self.key_maps.get(&entry.node) {
                        map.prefetch();
                    }
                }
            }
            frame.old_at = u32::from(record.old_named);
            frame.old_end = record.old_names;
            frame.child = if self.gained_children(node, record.old_names, record.old_named, &frame.entries) {
                self.first_new_child(node)
            } else {
                NONE
            };
        }
        self.nodes[node as usize].kept &= !CHANGED;
        let id = self.nodes[node as usize].name;
        // A name the old block starts with is copied with the run it continues (the parent's
        // copy up to this block, the block's first child's): taken on its own, every changed
        // node with a name would cut the runs in two, one more piece each for the plan's reader
        // to copy and for its rope to join.
        if frame.old_at == 1 && id != NONE && self.lists[old_list as usize].ids[old_offset as usize] == id {
            frame.old_at = 0;
        } else if id != NONE {
            self.flush(out);
            out.ids.push(id);
            if let Some(plan) = out.plan.as_deref_mut() {
                self.name_into_plan(plan, id, Some(&out.path));
            }
        }
        frame
    }

    /// Whether `node`, laid down from a record of `old_names` names (its own first when
    /// `old_named`) and the recorded children `entries`, has children placed since, from the
    /// counts: its names now less its own, those of its recorded children now and those of its
    /// other old children (unrecorded, so as they were) are the names of the new children, and a
    /// node holds names. The recorded children's counts were requested already; the new
    /// children's links, read only to find them, lie apart and cost two cache misses.
    fn gained_children(&self, node: u32, old_names: u32, old_named: bool, entries: &[Entry]) -> bool {
        let here = &self.nodes[node as usize];
        let mut known = i64::from(here.is_name()) + i64::from(old_names) - i64::from(old_named);
        for entry in entries {
            let now = if entry.node == NONE {
                0
            } else {
                i64::from(self.nodes[entry.node as usize].names)
            };
            known += now - i64::from(entry.size);
        }
        i64::from(here.names) != known
    }

    /// The first of `node`'s children placed since its block was laid down (they follow the
    /// others).
    pub(super) fn first_new_child(&self, node: u32) -> u32 {
        let first = self.links[node as usize].first_child;
        if first == NONE {
            return NONE;
        }
        let mut child = self.links[first as usize].prev_sibling;
        let mut newest = NONE;
        while self.nodes[child as usize].kept & IN_PARENT == 0 {
            newest = child;
            if child == first {
                break;
            }
            child = self.links[child as usize].prev_sibling;
        }
        newest
    }

    /// Copies what the frame has to copy before its next child to visit, and returns that child;
    /// `None` when the frame is done.
    fn next_step(&mut self, frame: &mut Frame, out: &mut Output) -> Option<u32> {
        if frame.by_record {
            while let Some(&entry) = frame.entries.get(frame.next_entry) {
                frame.next_entry += 1;
                self.copy_old(frame, entry.at, out);
                frame.old_at = entry.at + entry.size;
                if entry.node != NONE {
                    frame.child_old_at = entry.at;
                    return Some(entry.node);
                }
            }
            self.copy_old(frame, frame.old_end, out);
            frame.old_at = frame.old_end;
        }
        let child = frame.child;
        if child == NONE {
            return None;
        }
        frame.child = self.next_siblings[child as usize];
        frame.child_old_at = NONE;
        Some(child)
    }

    /// Copies positions `[frame.old_at, to)` of the frame's old block, and maps their keys.
    fn copy_old(&mut self, frame: &mut Frame, to: u32, out: &mut Output) {
        let from = frame.old_at;
        if to <= from {
            return;
        }
        let at = out.len() - frame.start;
        match self.key_maps.get(&frame.node) {
            Some(map) => map.moved(from, to, at, &mut frame.pieces),
            None => push_piece(
                &mut frame.pieces,
                Piece {
                    key: from,
                    at,
                    len: to - from,
                    rank: 0,
                },
            ),
        }
        self.copy(frame.old_list, frame.old_offset + from, to - from, out);
    }

    /// Takes `child` of the frame's node into the new block: copies its block when it has not
    /// changed, else returns its frame. Gives it its key in the new block.
    fn visit(
        &mut self,
        child: u32,
        frame: &mut Frame,
        parent_path: usize,
        out: &mut Output,
    ) -> Option<Frame> {
        // The walk comes to the next child once this one's subtree is done; its node (the three
        // arrays a node lies in), which nothing else needs before then, loads meanwhile.
        if frame.child != NONE {
            prefetch((&self.nodes[frame.child as usize] as *const Node).cast());
            prefetch((&self.links[frame.child as usize] as *const Links).cast());
            prefetch((&self.next_siblings[frame.child as usize] as *const u32).cast());
        }
        let names = self.nodes[child as usize].names;
        let at = out.len() - frame.start;
        let key = if frame.by_record {
            let key = frame.next_key;
            frame.next_key += names;
            push_piece(
                &mut frame.pieces,
                Piece {
                    key,
                    at,
                    len: names,
                    rank: frame.fresh_rank,
                },
            );
            key
        } else {
            at
        };
        assert!(key <= KEY_BITS, "trie: a block position past the key range");
        let kept = self.nodes[child as usize].kept;
        // Its old block: a list it holds, else in the parent's old block (read before the key goes).
        let own = self.take_kept_list(child);
        let old = match own {
            Some(list) => {
                out.freed.push(list);
                (list, 0)
            }
            None if kept & IN_PARENT != 0 && frame.old_list != NONE => {
                // A recorded child's entry says where it lay: the parent's key map has not changed
                // since the entry was made, and asking it again costs a search of its pieces.
                let old_at = if frame.child_old_at != NONE {
                    debug_assert_eq!(frame.child_old_at, self.child_position(frame.node, child));
                    frame.child_old_at
                } else {
                    self.child_position(frame.node, child)
                };
                (frame.old_list, frame.old_offset + old_at)
            }
            None => (NONE, 0),
        };
        self.nodes[child as usize].kept = (kept & CHANGED) | IN_PARENT | key;
        if kept & CHANGED == 0 {
            assert!(old.0 != NONE, "trie: an unchanged node lies in no kept list");
            self.copy(old.0, old.1, names, out);
            return None;
        }
        if out.plan.is_some() {
            out.path.truncate(parent_path);
            if frame.node != ROOT {
                out.path.push_str(self.dialect.separator());
            }
            out.path
                .push_str(self.segments.text(self.links[child as usize].segment));
        }
        Some(self.enter(child, old, out))
    }

    /// Finishes laying down the frame's node: its new key map.
    fn leave(&mut self, frame: Frame) {
        if frame.by_record {
            self.key_maps.insert(
                frame.node,
                KeyMap::new(frame.pieces, frame.next_key, frame.fresh_rank),
            );
        } else {
            self.key_maps.remove(&frame.node);
        }
    }

    /// Queues `count` ids of list `list` from `offset` for the new list, joined to the pending run
    /// when it continues it.
    fn copy(&mut self, list: u32, offset: u32, count: u32, out: &mut Output) {
        let run = &mut out.run;
        if run.count > 0 && run.list == list && run.offset + run.count == offset {
            run.count += count;
            return;
        }
        self.flush(out);
        out.run = Run { list, offset, count };
    }

    /// Copies the pending run into the new list (and the plan) and empties it.
    fn flush(&mut self, out: &mut Output) {
        let Run { list, offset, count } = out.run;
        if count == 0 {
            return;
        }
        out.ids.extend_from_slice(self.list_ids(list, offset, count));
        if let Some(plan) = out.plan.as_deref_mut() {
            self.copy_into_plan(plan, list, offset, count);
        }
        out.run.count = 0;
    }

    /// Whether a trailing wildcard at `node` takes the names child by child: MQTT's root, whose
    /// `$` children a wildcard skips.
    pub(super) fn rest_by_child(&self, node: u32) -> bool {
        node == ROOT && self.dialect == Dialect::Mqtt
    }
}

#[cfg(test)]
impl TopicTrie {
    /// The ids of `node`'s subtree in depth-first order, children in list order, from the links.
    pub(super) fn naive_block(&self, node: u32, out: &mut Vec<u32>) {
        let n = &self.nodes[node as usize];
        if n.name != NONE {
            out.push(n.name);
        }
        let mut child = self.links[node as usize].first_child;
        while child != NONE {
            self.naive_block(child, out);
            child = self.next_siblings[child as usize];
        }
    }

    /// Checks that every unchanged node's block, where `locate` finds it, is its subtree in walk
    /// order; returns the first node where it is not.
    pub(super) fn check_blocks(&self) -> Result<(), String> {
        let mut stack = vec![ROOT];
        while let Some(node) = stack.pop() {
            let mut child = self.links[node as usize].first_child;
            while child != NONE {
                stack.push(child);
                child = self.next_siblings[child as usize];
            }
            if self.is_changed(node) {
                continue;
            }
            let mut expected = Vec::new();
            self.naive_block(node, &mut expected);
            let (list, offset) = self.locate(node);
            let ids = &self.lists[list as usize].ids;
            let end = offset as usize + expected.len();
            let got = ids.get(offset as usize..end);
            if got != Some(&expected[..]) {
                let mut path = String::new();
                self.write_path(node, &mut path);
                return Err(format!(
                    "node {node} `{path}`: list {list} at {offset}: {got:?}, expected {expected:?}"
                ));
            }
        }
        Ok(())
    }
}
