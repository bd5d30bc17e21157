//! Pending edits of a kept list: the names added and removed in its subtree since it was laid down,
//! each with its place in the list's walk order, kept as the changes come (the js engine's
//! `pending.ts` is the same). An expand of a changed subtree *below* a list's holder is then one
//! merge pass over the holder's old list and the edits inside the subtree's old range
//! ([`merged_block`](TopicTrie::merged_block)), instead of a lay-down, which visits every changed
//! node of the subtree (each a few cache misses, as they were last read many changes ago) and builds
//! a list of the subtree's own. Nothing is laid down, so the subtree stays changed and its records
//! stay as they were: the holder's own expand lays it all down as before, and the edits go with
//! its old list.
//!
//! Places are positions in the old list, where the old blocks still lie (a changed node's `locate`
//! finds its old block). A change makes one of three edits:
//! - a removed name that the list holds: skip the position it lies at;
//! - a name at a node of the list that was not a name then: insert it where its node's old block
//!   starts (a node's own name leads its block; ancestors whose blocks start there come first);
//! - a name at a node placed since: its nearest ancestor that was laid down (the *anchor*) gains
//!   new children after its old ones, so the names go where the anchor's old block ends (anchors
//!   whose blocks end at the same place come deepest first). The edits naming one anchor are the
//!   names its new children hold; a merge takes the name of an anchor's only edit as it is, and
//!   walks the new children of an anchor with more (the only nodes it visits) for their order.
//!
//! A removed name that an edit inserted takes that edit back. Edits are kept only while they are
//! complete: a change is an edit of the nearest list above it only, so it drops the edits of the
//! lists above that one; a lay-down below the holder gives a node a list of its own, whose edits
//! then go there, so it drops the edits of every list above it; and a list's edits go when they
//! outnumber an eighth of its names (at least `MIN_PENDING_EDITS`, at most `MAX_PENDING_EDITS`),
//! which bounds their memory by the list's (the next expand lays the subtree down as before). A
//! list keeps its edits sorted by place, so a merge reads only those inside its subtree's range.
//! A merge takes at most an eighth of its subtree's names in edits (at least `MIN_PENDING_EDITS`);
//! past that the subtree is laid down once rather than merged again at every expand until its
//! holder is laid down.

use super::plan::Plan;
use super::snapshot::{IN_PARENT, KEPT};
use super::{TopicTrie, NONE, ROOT};

/// Edits a list keeps however short it is.
const MIN_PENDING_EDITS: usize = 64;
/// Edits a list keeps however long it is: an edit inserted in order moves those after it, and a
/// name removed is looked for among them.
pub(super) const MAX_PENDING_EDITS: usize = 4096;
/// `PendingEdit::order` above the depth: the kind of edit, in the order a merge takes the edits
/// at one position (new children of blocks ending there, then names of nodes starting there, then
/// the old name lying there).
const KIND_SHIFT: u32 = 30;
const NEW_CHILDREN: u32 = 0;
const OWN_NAME: u32 = 1;
const REMOVED: u32 = 2;
const DEPTH_MASK: u32 = (1 << KIND_SHIFT) - 1;

/// One edit of a kept list (see the module comment).
#[derive(Clone, Copy, Debug)]
pub(super) struct PendingEdit {
    /// The position in the old list.
    at: u32,
    /// The kind (top bits) and the node's depth below them: the anchor's depth subtracted from
    /// `DEPTH_MASK` for new children (deepest first), the node's depth for an own name.
    order: u32,
    /// The name added or removed.
    id: u32,
}

impl PendingEdit {
    fn kind(&self) -> u32 {
        self.order >> KIND_SHIFT
    }

    fn depth(&self) -> u32 {
        match self.kind() {
            NEW_CHILDREN => DEPTH_MASK - (self.order & DEPTH_MASK),
            _ => self.order & DEPTH_MASK,
        }
    }
}

/// A piece of a merged block: a run of the old list, or one name.
#[derive(Clone, Copy, Debug)]
pub(super) enum Merged {
    Run { offset: u32, count: u32 },
    Name(u32),
}

impl TopicTrie {
    fn depth(&self, mut node: u32) -> u32 {
        let mut depth = 0;
        while node != ROOT {
            depth += 1;
            node = self.links[node as usize].parent;
        }
        depth
    }

    fn is_laid_down(&self, node: u32) -> bool {
        self.nodes[node as usize].kept & (IN_PARENT | KEPT) != 0
    }

    /// The nearest ancestor of `node` (itself included) that was laid down; `NONE` when none was.
    pub(super) fn anchor(&self, mut node: u32) -> u32 {
        while !self.is_laid_down(node) {
            if node == ROOT {
                return NONE;
            }
            node = self.links[node as usize].parent;
        }
        node
    }

    /// The list where the old block of `node` (laid down) lies and where, when that list keeps
    /// edits. A change is an edit of that list only, the nearest one above it: the edits of the
    /// lists above it would miss this one, so they go.
    fn pending_list(&mut self, node: u32) -> Option<(u32, u32)> {
        let (list, offset) = self.locate(node);
        if list == NONE {
            return None;
        }
        let mut holder = node;
        while self.nodes[holder as usize].kept & KEPT == 0 {
            holder = self.links[holder as usize].parent;
        }
        self.drop_pending_above(holder);
        self.lists[list as usize]
            .pending
            .is_some()
            .then_some((list, offset))
    }

    fn push_pending(&mut self, list: u32, edit: PendingEdit) {
        let kept = &mut self.lists[list as usize];
        let limit = (kept.ids.len() / 8).clamp(MIN_PENDING_EDITS, MAX_PENDING_EDITS);
        match kept.pending.as_mut() {
            Some(pending) if pending.len() < limit => {
                // Kept sorted by place and order, so that a merge finds its edits by a binary search.
                let key = (edit.at, edit.order);
                let index = pending.partition_point(|e| (e.at, e.order) <= key);
                pending.insert(index, edit);
            }
            _ => kept.pending = None,
        }
    }

    /// Records the name `id` added at `node` (after the marking, so that records hold old sizes).
    pub(super) fn note_added(&mut self, node: u32, id: u32) {
        let anchor = self.anchor(node);
        if anchor == NONE {
            return;
        }
        let Some((list, offset)) = self.pending_list(anchor) else {
            return;
        };
        let depth = self.depth(anchor);
        let edit = if anchor == node {
            PendingEdit {
                at: offset,
                order: OWN_NAME << KIND_SHIFT | depth,
                id,
            }
        } else {
            let Some(old_names) = self.edits.get(&anchor).map(|e| e.old_names) else {
                self.lists[list as usize].pending = None;
                return;
            };
            PendingEdit {
                at: offset + old_names,
                order: NEW_CHILDREN << KIND_SHIFT | (DEPTH_MASK - depth),
                id,
            }
        };
        self.push_pending(list, edit);
    }

    /// Records the name `id` removed from `node` (after the marking, before the node goes).
    pub(super) fn note_removed(&mut self, node: u32, id: u32) {
        let anchor = self.anchor(node);
        if anchor == NONE {
            return;
        }
        let Some((list, offset)) = self.pending_list(anchor) else {
            return;
        };
        let pending = self.lists[list as usize].pending.as_mut().expect("pending edits");
        // A name added since: its edit goes back.
        if let Some(at) = pending.iter().rposition(|e| e.id == id && e.kind() != REMOVED) {
            pending.remove(at);
            return;
        }
        // Else the list holds it, at the start of its node's old block.
        if anchor != node || self.lists[list as usize].ids.get(offset as usize) != Some(&id) {
            debug_assert!(false, "trie: a removed name in no edit and not in its list");
            self.lists[list as usize].pending = None;
            return;
        }
        self.push_pending(
            list,
            PendingEdit {
                at: offset,
                order: REMOVED << KIND_SHIFT,
                id,
            },
        );
    }

    /// Drops the edits of every list held above `top`, whose block is being laid down into a list
    /// of its own: its later changes go to that list, and the lists above would miss them.
    pub(super) fn drop_pending_above(&mut self, top: u32) {
        let mut node = top;
        while node != ROOT {
            node = self.links[node as usize].parent;
            if self.nodes[node as usize].kept & KEPT != 0 {
                if let Some(&list) = self.holders.get(&node) {
                    self.lists[list as usize].pending = None;
                }
            }
        }
    }

    /// The block of the changed `node` as the old list holding it (returned) and the pieces that
    /// make its current block from that list, when the list's edits allow (see the module comment);
    /// `None` (nothing changed) when the block must be laid down.
    pub(super) fn merged_block(&mut self, node: u32, out: &mut Vec<Merged>) -> Option<u32> {
        if !self.is_changed(node) || self.nodes[node as usize].kept & (KEPT | IN_PARENT) != IN_PARENT {
            return None;
        }
        let (list, start) = self.locate(node);
        if list == NONE || self.lists[list as usize].pending.is_none() {
            return None;
        }
        let end = start + self.edits.get(&node)?.old_names;
        let depth = self.depth(node);
        let pending = self.lists[list as usize].pending.as_ref().expect("pending edits");
        // The edits that may belong to the block lie at places from its start to its end, in order.
        let first = pending.partition_point(|e| e.at < start);
        let last = pending.partition_point(|e| e.at <= end);
        let inside = |e: &PendingEdit| match e.kind() {
            REMOVED => e.at < end,
            _ if e.at > start && e.at < end => true,
            OWN_NAME => e.at == start && e.depth() >= depth,
            _ => e.at == end && e.depth() >= depth,
        };
        let edits: Vec<PendingEdit> = pending[first..last]
            .iter()
            .filter(|e| inside(e))
            .copied()
            .collect();
        // Past an eighth of the names, laying the block down (once) costs less than merging them
        // at every expand until the holder is laid down.
        if edits.len() > MIN_PENDING_EDITS.max((end - start) as usize / 8) {
            return None;
        }
        out.clear();
        let mut at = start;
        let mut walked = None;
        for (i, edit) in edits.iter().enumerate() {
            if edit.at > at {
                out.push(Merged::Run {
                    offset: at,
                    count: edit.at - at,
                });
                at = edit.at;
            }
            match edit.kind() {
                REMOVED => at += 1,
                OWN_NAME => out.push(Merged::Name(edit.id)),
                // One walk per anchor, however many names it gained.
                _ if walked == Some((edit.at, edit.order)) => {}
                // An anchor that gained one name: its new children hold that name only (every
                // name added below them made an edit naming the anchor, and a name removed took its
                // edit back), so the walk, a few cache misses a node, is left out.
                _ if edits
                    .get(i + 1)
                    .is_none_or(|next| (next.at, next.order) != (edit.at, edit.order)) =>
                {
                    debug_assert!(
                        self.is_only_new_name(edit.id),
                        "trie: an anchor's one edit names all it gained"
                    );
                    out.push(Merged::Name(edit.id));
                }
                _ => {
                    walked = Some((edit.at, edit.order));
                    let anchor = self.anchor(self.name_nodes[edit.id as usize]);
                    self.new_children_names(anchor, out);
                }
            }
        }
        if end > at {
            out.push(Merged::Run {
                offset: at,
                count: end - at,
            });
        }
        Some(list)
    }

    /// Whether every list's edits are sorted by place and order, as merges find them (tests).
    #[cfg(test)]
    pub(super) fn pending_sorted(&self) -> bool {
        self.lists
            .iter()
            .filter_map(|list| list.pending.as_ref())
            .all(|pending| {
                pending
                    .windows(2)
                    .all(|pair| (pair[0].at, pair[0].order) <= (pair[1].at, pair[1].order))
            })
    }

    /// Whether the name `id` is all that the children of its anchor placed since its last
    /// lay-down hold.
    fn is_only_new_name(&self, id: u32) -> bool {
        let mut names = Vec::new();
        self.new_children_names(self.anchor(self.name_nodes[id as usize]), &mut names);
        matches!(names[..], [Merged::Name(only)] if only == id)
    }

    /// Appends the names below the children of `anchor` placed since its last lay-down, depth first.
    fn new_children_names(&self, anchor: u32, out: &mut Vec<Merged>) {
        let mut stack = Vec::new();
        let mut child = self.first_new_child(anchor);
        while child != NONE {
            stack.push(child);
            child = self.next_siblings[child as usize];
        }
        stack.reverse();
        while let Some(node) = stack.pop() {
            let name = self.nodes[node as usize].name;
            if name != NONE {
                out.push(Merged::Name(name));
            }
            let at = stack.len();
            let mut child = self.links[node as usize].first_child;
            while child != NONE {
                stack.push(child);
                child = self.next_siblings[child as usize];
            }
            stack[at..].reverse();
        }
    }

    /// Adds a merged block of list `list` to `plan`, without its first `skip` names.
    pub(super) fn merged_into_plan(&mut self, plan: &mut Plan, list: u32, merged: &[Merged], mut skip: u32) {
        for piece in merged {
            match *piece {
                Merged::Run { offset, count } if count > skip => {
                    self.copy_into_plan(plan, list, offset + skip, count - skip);
                    skip = 0;
                }
                Merged::Run { count, .. } => skip -= count,
                Merged::Name(_) if skip > 0 => skip -= 1,
                Merged::Name(id) => self.single_name_into_plan(plan, id),
            }
        }
    }
}
