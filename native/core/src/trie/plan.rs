//! Plans: expand answers for a caller that keeps the names it was given by id and a copy of each
//! kept list (the native adapter). [`expand_plan`](TopicTrie::expand_plan) writes the lists it lays
//! down as operations on the caller's copies (copy a run of another list, take a name by id) and
//! the answer as runs of lists and single names, with the text of each name the caller has not been
//! given yet. The caller replays them on its strings, as the js engine copies its lists of texts,
//! and creates a string only for a name it has never had.

use super::snapshot::KeptList;
use super::{TopicTrie, NONE};
use crate::error::ErrorCode;

/// Id vectors of freed lists kept for reuse (`TopicTrie::take_ids`): a walk lays down at most a
/// few lists (one per top it takes whole), so a few spares cover the next walk's.
const SPARE_ID_VECTORS: usize = 4;

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
/// Plan operation: `[PLAN_NAMES_BY_ID, count, id, at, id, at, …]`, a whole answer of `count`
/// names the caller was given before, the name of `id` at place `at` of the answer. The pairs come
/// in rising order of id but within runs of a few ids: the caller keeps names by id, and ids lie
/// scattered over the answer (an id is a name's age, the answer goes by the trie), so reading
/// them in answer order costs a cache miss a name where reading them in id order reads its names
/// one region after another.
pub const PLAN_NAMES_BY_ID: u32 = 6;
/// Answers of single names at least this long go by id (`PLAN_NAMES_BY_ID`); a shorter one finds
/// the caller's names in cache often enough that ordering them would cost more than it saves.
pub(super) const NAMES_BY_ID_MIN: usize = 256;

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

impl TopicTrie {
    /// [`add`](Self::add) for a caller of plans, saying whether the caller is to keep the name's
    /// text from now on as if a plan had handed it out: true for a new name below a list the
    /// caller holds. The next expand of that list's subtree takes the name (a merge of the list's
    /// edits, or a lay-down), and a plan would otherwise rebuild its text from its parents, whose
    /// nodes and segments were last read many changes before (a few cache misses a level), where
    /// the caller has the text at hand now. Names below no such list are not kept: nothing says
    /// they will be asked for.
    pub fn add_for_plan(&mut self, name: &str, timestamp_ms: Option<u64>) -> Result<(u32, bool), ErrorCode> {
        let names = self.names;
        let id = self.add(name, timestamp_ms)?;
        if self.names == names {
            return Ok((id, false));
        }
        let anchor = self.anchor(self.name_nodes[id as usize]);
        if anchor == NONE {
            return Ok((id, false));
        }
        let (list, _) = self.locate(anchor);
        if list == NONE || !self.lists[list as usize].mirrored {
            return Ok((id, false));
        }
        let word = id as usize / 64;
        if word >= self.handed.len() {
            self.handed.resize(word + 1, 0);
        }
        self.handed[word] |= 1u64 << (id % 64);
        Ok((id, true))
    }

    /// Adds the name with id `id` to `plan`: by id when handed out before, else with its text
    /// (`path` when given, else rebuilt from its parents).
    pub(super) fn name_into_plan(&mut self, plan: &mut Plan, id: u32, path: Option<&str>) {
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

    /// Whether the caller was given the name of `id` since the id was allocated.
    pub(super) fn was_handed(&self, id: u32) -> bool {
        self.handed
            .get(id as usize / 64)
            .is_some_and(|word| word & (1 << (id % 64)) != 0)
    }

    /// Adds the answer `ids`, all handed out before, to `plan` as `PLAN_NAMES_BY_ID`: pairs of id
    /// and place, ordered by one counting pass over runs of `2^shift` ids, the runs as many as
    /// the names (so a run holds about one of them and the counts cost no more than the names).
    pub(super) fn names_by_id_into_plan(&self, plan: &mut Plan, ids: &[u32]) {
        let limit = self.name_nodes.len();
        let mut shift = 0;
        while limit >> shift > ids.len() {
            shift += 1;
        }
        let mut starts = vec![0u32; (limit >> shift) + 2];
        for &id in ids {
            starts[(id as usize >> shift) + 1] += 1;
        }
        for run in 1..starts.len() {
            starts[run] += starts[run - 1];
        }
        let count = u32::try_from(ids.len()).expect("an answer under 4 G names");
        plan.ops.extend([PLAN_NAMES_BY_ID, count]);
        let first = plan.ops.len();
        plan.ops.resize(first + 2 * ids.len(), 0);
        for (at, &id) in (0..count).zip(ids) {
            let slot = &mut starts[id as usize >> shift];
            let pair = first + 2 * *slot as usize;
            *slot += 1;
            plan.ops[pair] = id;
            plan.ops[pair + 1] = at;
        }
    }

    /// Adds a run of list `list` to `plan`: as a copy when the caller holds that list, else name by
    /// name.
    pub(super) fn copy_into_plan(&mut self, plan: &mut Plan, list: u32, offset: u32, count: u32) {
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
        if offset != 0 || self.lists[list as usize].ids.len() != self.nodes[node as usize].names as usize {
            self.lay_down(node, Some(plan));
        }
        let (list, offset) = self.locate(node);
        self.mirror_list(plan, list);
        (list, offset)
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

    /// Frees list `list`; a caller holding a copy hears of it in the next plan.
    pub(super) fn free_list(&mut self, list: u32) {
        let kept = std::mem::take(&mut self.lists[list as usize]);
        if kept.mirrored {
            self.freed_mirrored.push(list);
        }
        self.free_lists.push(list);
        self.keep_spare_ids(kept.ids);
    }

    /// Keeps the ids vector of a freed list for a later lay-down, the oldest kept one going when
    /// `SPARE_ID_VECTORS` are kept already.
    fn keep_spare_ids(&mut self, mut ids: Vec<u32>) {
        if ids.capacity() == 0 {
            return;
        }
        ids.clear();
        if self.spare_ids.len() == SPARE_ID_VECTORS {
            self.spare_ids.remove(0);
        }
        self.spare_ids.push(ids);
    }

    /// An empty vector with room for `size` ids: the smallest spare one that fits without holding
    /// more than twice that, else a new one with an eighth more room, so that it fits the list
    /// after the next few changes too. A lay-down after a change builds a list about the size of
    /// the one it frees, and a new vector of that size costs its pages' first touches (a fault
    /// each for a large one) on top of the copy.
    pub(super) fn take_ids(&mut self, size: u32) -> Vec<u32> {
        let size = size as usize;
        let fitting = self
            .spare_ids
            .iter()
            .enumerate()
            .filter(|(_, ids)| ids.capacity() >= size && ids.capacity() <= 2 * size)
            .min_by_key(|(_, ids)| ids.capacity())
            .map(|(at, _)| at);
        match fitting {
            Some(at) => self.spare_ids.swap_remove(at),
            None => Vec::with_capacity(size + size / 8),
        }
    }

    /// A new, empty list's index.
    pub(super) fn new_list(&mut self) -> u32 {
        self.free_lists.pop().unwrap_or_else(|| {
            self.lists.push(KeptList::default());
            (self.lists.len() - 1) as u32
        })
    }
}
