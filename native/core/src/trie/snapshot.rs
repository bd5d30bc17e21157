//! Kept lists: the ids of a subtree's names in walk order, laid down by the first walk that takes
//! the subtree whole and copied by later ones, so that a trailing wildcard costs its answer however
//! the nodes are placed in memory (the js engine's `snapshot.ts` is the same).
//!
//! A node's block is the names of its subtree in depth-first order, its own name first, then each
//! child's block in child order: `names` entries. A walk that takes the whole subtree of a node (the
//! top) writes the top's block into a list of its own and records, at every node it visits, where
//! that node's block starts within its parent's block (the delta, in `Node::kept`). The top then
//! holds the list; a node whose subtree has not changed since finds its block by climbing to the
//! nearest node holding a list and adding the deltas on the way.
//!
//! Changes mark their node and its ancestors `CHANGED` (every ancestor of a changed node is
//! changed, so marking stops at the first one already marked). A walk whose top changed lays the
//! top's block down again: it follows the links only through changed nodes and copies the block of
//! each unchanged child from where it lies, so it costs the changed paths and the copy, not the
//! subtree. A list an unchanged child held is absorbed into the new one, so lists do not pile up: at
//! most one per top walked, each the size of its subtree's answer.
//!
//! Lists hold ids, not node positions, so compaction moves the `kept` field with its node and keeps
//! every list.
//!
//! **Plans.** A caller that keeps the names it was given by id and a copy of each list (the native
//! adapter) asks for a plan instead of ids: [`expand_plan`](TopicTrie::expand_plan) writes the
//! lists it lays down as operations on the caller's copies (copy a run of another list, take a name
//! by id) and the answer as runs of lists and single names, with the text of each name the caller
//! has not been given yet. The caller replays them on its strings, as the js engine copies its
//! lists of texts, and creates a string only for a name it has never had.

use super::{TopicTrie, NONE, ROOT};
use crate::dialect::Dialect;

/// `Node::kept` flag: the subtree changed since the node's block was laid down, or it never was.
pub(super) const CHANGED: u32 = 1 << 31;
/// `Node::kept` flag: the node holds a kept list, whose index the low bits give.
const KEPT: u32 = 1 << 30;
const LOW_BITS: u32 = KEPT - 1;

/// Plan operation: `[PLAN_NAME, id]`, a name the caller was given before.
pub const PLAN_NAME: u32 = 0;
/// Plan operation: `[PLAN_NEW_NAME, id, end]`, a name whose text is next in the plan's text,
/// ending at `end` (UTF-16 code units from the text's start; names are NUL-separated).
pub const PLAN_NEW_NAME: u32 = 1;
/// Plan operation: `[PLAN_COPY, list, offset, count]`, a run of a list the caller copied.
pub const PLAN_COPY: u32 = 2;
/// Plan operation: `[PLAN_LIST_START, list, size]`: the operations up to `PLAN_LIST_END` make
/// list `list` (replacing any list of that index), not the answer.
pub const PLAN_LIST_START: u32 = 3;
pub const PLAN_LIST_END: u32 = 4;
/// Plan operation: `[PLAN_FREE, list]`: the list is gone; its copy may be dropped.
pub const PLAN_FREE: u32 = 5;

/// One kept list, and whether a plan handed it to the caller (which then holds a copy).
#[derive(Debug, Default)]
pub(super) struct KeptList {
    ids: Vec<u32>,
    mirrored: bool,
}

impl KeptList {
    pub(super) fn approximate_bytes(&self) -> usize {
        self.ids.capacity() * 4
    }
}

/// What a plan call writes: the operations, and the texts of the new names.
#[derive(Debug, Default)]
pub struct Plan {
    pub ops: Vec<u32>,
    /// The new names, NUL-separated.
    pub text: String,
    /// The length of `text` in UTF-16 code units.
    utf16_len: usize,
    /// Names in `text`.
    new_names: usize,
    /// Scratch for names rebuilt from their parents.
    scratch: String,
}

impl Plan {
    pub fn clear(&mut self) {
        self.ops.clear();
        self.text.clear();
        self.utf16_len = 0;
        self.new_names = 0;
    }

    fn push_text(&mut self, name: &str) -> u32 {
        if self.new_names > 0 {
            self.text.push('\0');
            self.utf16_len += 1;
        }
        self.new_names += 1;
        self.text.push_str(name);
        self.utf16_len += if name.is_ascii() {
            name.len()
        } else {
            name.encode_utf16().count()
        };
        u32::try_from(self.utf16_len).expect("a plan's text under 4 G code units")
    }
}

/// A run of a kept list that `lay_down` will copy.
#[derive(Clone, Copy, Default)]
struct Run {
    list: u32,
    offset: u32,
    count: u32,
}

/// The walk state of one level of `lay_down`.
struct Level {
    node: u32,
    /// Where the node's block starts in the new list.
    start: u32,
    /// Where its old block lay (list, offset); `NONE` for a node never laid down.
    old_list: u32,
    old_offset: u32,
    /// The length of the node's text in the walk's path (plans only).
    path_len: usize,
}

impl TopicTrie {
    pub(super) fn is_changed(&self, node: u32) -> bool {
        self.nodes[node as usize].kept & CHANGED != 0
    }

    /// Marks `node` and its ancestors changed.
    pub(super) fn mark_changed(&mut self, mut node: u32) {
        while node != NONE {
            let n = &mut self.nodes[node as usize];
            if n.kept & CHANGED != 0 {
                return;
            }
            n.kept |= CHANGED;
            node = n.parent;
        }
    }

    fn kept_list(&self, node: u32) -> Option<u32> {
        let kept = self.nodes[node as usize].kept;
        (kept & KEPT != 0).then_some(kept & LOW_BITS)
    }

    /// Frees the list `node` holds, if any.
    pub(super) fn drop_kept_list(&mut self, node: u32) {
        if let Some(list) = self.kept_list(node) {
            self.nodes[node as usize].kept &= !(KEPT | LOW_BITS);
            self.free_list(list);
        }
    }

    fn free_list(&mut self, list: u32) {
        let kept = std::mem::take(&mut self.lists[list as usize]);
        if kept.mirrored {
            self.freed_mirrored.push(list);
        }
        self.free_lists.push(list);
    }

    /// Where the block of `node` lies: the list of the nearest node (itself or an ancestor) holding
    /// one and the sum of the deltas on the way up; `(NONE, 0)` for a node never laid down.
    fn locate(&self, node: u32) -> (u32, u32) {
        let mut offset = 0;
        let mut at = node;
        loop {
            let kept = self.nodes[at as usize].kept;
            if kept & KEPT != 0 {
                return (kept & LOW_BITS, offset);
            }
            offset += kept & LOW_BITS;
            at = self.nodes[at as usize].parent;
            if at == NONE {
                return (NONE, 0);
            }
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

    /// Lays the block of the changed node `top` down into a new list that `top` then holds: the
    /// names of changed nodes from the nodes, the blocks of unchanged children copied from their
    /// lists. Every node visited becomes unchanged; the lists of visited or copied nodes (the top's
    /// previous one included) are freed once the copies are done.
    fn lay_down(&mut self, top: u32, mut plan: Option<&mut Plan>) {
        let size = self.nodes[top as usize].names;
        let mut ids: Vec<u32> = Vec::with_capacity(size as usize);
        let mut freed: Vec<u32> = Vec::new();
        let index = self.free_lists.pop().unwrap_or_else(|| {
            self.lists.push(KeptList::default());
            (self.lists.len() - 1) as u32
        });
        assert!(index < KEPT, "trie: kept lists exhausted");
        // The text of the node visited, for the names a plan hands out.
        let mut path = String::new();
        if let Some(plan) = plan.as_deref_mut() {
            plan.ops.extend([PLAN_LIST_START, index, size]);
            self.write_path(top, &mut path);
        }
        let (old_list, old_offset) = self.locate(top);
        if let Some(list) = self.kept_list(top) {
            freed.push(list);
        }
        let mut levels: Vec<Level> = Vec::new();
        self.enter(
            top,
            &mut levels,
            (old_list, old_offset),
            &mut ids,
            &path,
            plan.as_deref_mut(),
        );
        let separator = self.dialect.separator();
        // Unchanged blocks lying one after another in the same list are copied as one run.
        let mut run = Run::default();
        let mut child = self.nodes[top as usize].first_child;
        while let Some(&Level {
            node: parent,
            start: parent_start,
            old_list: parent_list,
            old_offset: parent_offset,
            path_len: parent_path_len,
        }) = levels.last()
        {
            if child == NONE {
                // This level is done: back to the parent, at the sibling after this node.
                levels.pop();
                match levels.last() {
                    Some(up) => path.truncate(up.path_len),
                    None => break,
                }
                child = self.nodes[parent as usize].next_sibling;
                continue;
            }
            let n = self.nodes[child as usize];
            if n.kept & CHANGED != 0 {
                let old = match self.kept_list(child) {
                    Some(list) => {
                        freed.push(list);
                        (list, 0)
                    }
                    None => (parent_list, parent_offset.wrapping_add(n.kept & LOW_BITS)),
                };
                if plan.is_some() {
                    path.truncate(parent_path_len);
                    if parent != ROOT {
                        path.push_str(separator);
                    }
                    path.push_str(self.segment_text(child));
                }
                self.flush_run(&mut run, &mut ids, plan.as_deref_mut());
                let start = ids.len() as u32;
                self.set_delta(child, start - parent_start);
                self.enter(child, &mut levels, old, &mut ids, &path, plan.as_deref_mut());
                child = n.first_child;
                continue;
            }
            // Unchanged: its block lies in its own list, or in its parent's old block at its delta.
            let (list, offset) = match self.kept_list(child) {
                Some(list) => {
                    freed.push(list);
                    (list, 0)
                }
                None => (parent_list, parent_offset + (n.kept & LOW_BITS)),
            };
            let start = ids.len() as u32 + run.count;
            if run.count > 0 && run.list == list && run.offset + run.count == offset {
                run.count += n.names;
            } else {
                self.flush_run(&mut run, &mut ids, plan.as_deref_mut());
                run = Run {
                    list,
                    offset,
                    count: n.names,
                };
            }
            self.set_delta(child, start - parent_start);
            child = n.next_sibling;
        }
        self.flush_run(&mut run, &mut ids, plan.as_deref_mut());
        assert_eq!(
            ids.len(),
            size as usize,
            "trie: a laid-down block holds its subtree's names"
        );
        if let Some(plan) = plan.as_deref_mut() {
            plan.ops.push(PLAN_LIST_END);
        }
        for list in freed {
            self.free_list(list);
        }
        self.lists[index as usize] = KeptList {
            ids,
            mirrored: plan.is_some(),
        };
        self.nodes[top as usize].kept = KEPT | index;
        if let Some(plan) = plan {
            self.announce_frees(plan);
        }
    }

    /// Copies the pending run of unchanged blocks into `ids` (and `plan`) and empties it.
    fn flush_run(&mut self, run: &mut Run, ids: &mut Vec<u32>, plan: Option<&mut Plan>) {
        if run.count == 0 {
            return;
        }
        let Run { list, offset, count } = *run;
        ids.extend_from_slice(self.list_ids(list, offset, count));
        if let Some(plan) = plan {
            self.copy_into_plan(plan, list, offset, count);
        }
        run.count = 0;
    }

    /// Enters the changed node `node` in `lay_down`: its level, its own name, and no longer changed
    /// (the caller has queued any list it held to be freed).
    fn enter(
        &mut self,
        node: u32,
        levels: &mut Vec<Level>,
        (old_list, old_offset): (u32, u32),
        ids: &mut Vec<u32>,
        path: &str,
        plan: Option<&mut Plan>,
    ) {
        levels.push(Level {
            node,
            start: ids.len() as u32,
            old_list,
            old_offset,
            path_len: path.len(),
        });
        let n = &mut self.nodes[node as usize];
        // Keeps the delta (set by the caller), drops the flags.
        n.kept &= LOW_BITS;
        if n.name != NONE {
            ids.push(n.name);
            let id = n.name;
            if let Some(plan) = plan {
                self.name_into_plan(plan, id, Some(path));
            }
        }
    }

    /// Records where `node`'s block starts in its parent's, keeping its `CHANGED` flag and dropping
    /// any list it held (the caller has queued that list to be freed).
    fn set_delta(&mut self, node: u32, delta: u32) {
        assert!(delta < KEPT, "trie: a block offset past the kept-list range");
        let n = &mut self.nodes[node as usize];
        n.kept = (n.kept & CHANGED) | delta;
    }

    /// Adds the name with id `id` to `plan`: by id when handed out before, else with its text
    /// (`path` when given, else rebuilt from its parents).
    fn name_into_plan(&mut self, plan: &mut Plan, id: u32, path: Option<&str>) {
        let word = id as usize / 64;
        if word >= self.handed.len() {
            self.handed.resize(word + 1, 0);
        }
        let bit = 1u64 << (id % 64);
        if self.handed[word] & bit != 0 {
            plan.ops.extend([PLAN_NAME, id]);
            return;
        }
        self.handed[word] |= bit;
        let end = match path {
            Some(path) => plan.push_text(path),
            None => {
                let mut scratch = std::mem::take(&mut plan.scratch);
                scratch.clear();
                self.write_path(self.name_nodes[id as usize], &mut scratch);
                let end = plan.push_text(&scratch);
                plan.scratch = scratch;
                end
            }
        };
        plan.ops.extend([PLAN_NEW_NAME, id, end]);
    }

    /// Adds a run of list `list` to `plan`: as a copy when the caller holds that list, else name by
    /// name.
    fn copy_into_plan(&mut self, plan: &mut Plan, list: u32, offset: u32, count: u32) {
        if self.lists[list as usize].mirrored {
            plan.ops.extend([PLAN_COPY, list, offset, count]);
            return;
        }
        for at in offset..offset + count {
            let id = self.lists[list as usize].ids[at as usize];
            self.name_into_plan(plan, id, None);
        }
    }

    /// [`block_of`](Self::block_of) for a plan: the list returned is one the caller holds. A list
    /// laid down by a walk without a plan is handed over whole when the node holds it (its holder
    /// is unchanged, so all of it is valid); a block inside another node's list is laid down on its
    /// own instead (the rest of that list may be out of date).
    pub(super) fn plan_block(&mut self, node: u32, plan: &mut Plan) -> (u32, u32) {
        let (list, offset) = self.block_of(node, Some(plan));
        if self.lists[list as usize].mirrored {
            return (list, offset);
        }
        if self.kept_list(node) != Some(list) {
            self.lay_down(node, Some(plan));
        }
        let list = self
            .kept_list(node)
            .expect("a node just laid down holds its list");
        self.mirror_list(plan, list);
        (list, 0)
    }

    /// Hands list `list` to the plan's caller if it does not hold it yet.
    fn mirror_list(&mut self, plan: &mut Plan, list: u32) {
        if self.lists[list as usize].mirrored {
            return;
        }
        let size = self.lists[list as usize].ids.len() as u32;
        plan.ops.extend([PLAN_LIST_START, list, size]);
        self.copy_into_plan(plan, list, 0, size);
        plan.ops.push(PLAN_LIST_END);
        self.lists[list as usize].mirrored = true;
    }

    /// Tells the plan's caller of the lists freed since it was last told.
    pub(super) fn announce_frees(&mut self, plan: &mut Plan) {
        for list in self.freed_mirrored.drain(..) {
            plan.ops.extend([PLAN_FREE, list]);
        }
    }

    /// Adds the name with id `id` to `plan` (a match that is not part of a block).
    pub(super) fn single_name_into_plan(&mut self, plan: &mut Plan, id: u32) {
        self.name_into_plan(plan, id, None);
    }

    /// Forgets what plans handed out, as for a new caller holding nothing.
    #[cfg(test)]
    pub(super) fn forget_plans(&mut self) {
        self.handed.clear();
        self.freed_mirrored.clear();
        for list in &mut self.lists {
            list.mirrored = false;
        }
    }

    /// Whether a trailing wildcard at `node` takes the names child by child: MQTT's root, whose
    /// `$` children a wildcard skips.
    pub(super) fn rest_by_child(&self, node: u32) -> bool {
        node == ROOT && self.dialect == Dialect::Mqtt
    }
}
