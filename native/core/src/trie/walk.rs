//! Pattern walks over the trie: expansion and counting visit only the subtrees a pattern can reach.
//! A literal token is one edge lookup, the one-segment wildcard takes each child, and the trailing
//! wildcard takes a whole subtree without matching any name (counting it is O(1): every node keeps
//! the number of names below it; listing it copies the subtree's kept list, snapshot.rs).
//!
//! Order of results: the walk goes level by level, one pattern token a level, keeping the nodes
//! reached so far in order (the frontier); a one-segment wildcard replaces each node by its
//! children last to first, so those come out last child first. A subtree under a trailing wildcard
//! comes out depth first, children in order of creation (the order of its kept list). The js engine
//! walks identically, so both give the same order for the same history; callers should treat it as
//! unspecified.

use super::pending::Merged;
use super::plan::{Plan, NAMES_BY_ID_MIN, PLAN_COPY};
use super::{Links, Node, TopicTrie, NONE, ROOT};
use crate::dialect::Dialect;
use crate::error::Violation;
use crate::prefetch::prefetch;

/// Children of a node scanned for a literal segment before the edge table is asked: most nodes
/// have a few children, and reading them costs less than a probe sequence in a table that may be
/// three quarters full (a miss there reads several unrelated nodes).
const SCANNED_CHILDREN: usize = 8;
/// Child lists the one-segment wildcard follows at once: enough misses in flight to keep the
/// memory system busy, few enough that the cursors stay in registers.
const INTERLEAVED_CHAINS: usize = 8;
/// How far ahead along a level a literal lookup requests the next nodes: the level's nodes lie
/// scattered, and each lookup starts with a miss on its node, which then overlaps the ones before.
const LITERAL_LOOKAHEAD: usize = 8;

/// What a walk found: a name matched by itself, or the names of a node's block from `skip` on
/// (a trailing wildcard).
enum Found {
    Name(u32),
    Block { node: u32, skip: u32 },
}

impl TopicTrie {
    /// Appends to `out` the id of every stored name `pattern` matches; returns how many.
    pub fn expand_into(&mut self, pattern: &str, out: &mut Vec<u32>) -> Result<usize, Violation> {
        let start = out.len();
        for found in self.expand_found(pattern)? {
            match found {
                Found::Name(id) => out.push(id),
                Found::Block { node, skip } => {
                    let mut merged = std::mem::take(&mut self.merged);
                    if let Some(list) = self.merged_block(node, &mut merged) {
                        let from = out.len();
                        for piece in &merged {
                            match *piece {
                                Merged::Run { offset, count } => {
                                    out.extend_from_slice(self.list_ids(list, offset, count))
                                }
                                Merged::Name(id) => out.push(id),
                            }
                        }
                        out.drain(from..from + skip as usize);
                    } else {
                        let (list, offset) = self.block_of(node, None);
                        let count = self.nodes[node as usize].names - skip;
                        out.extend_from_slice(self.list_ids(list, offset + skip, count));
                    }
                    self.merged = merged;
                }
            }
        }
        self.after_walk();
        Ok(out.len() - start)
    }

    /// Appends to `plan` the answer to `pattern` as operations on the caller's copies of the kept
    /// lists and names (snapshot.rs), in the order of [`expand_into`](Self::expand_into): first the
    /// lists it lays down or the caller lacks, and those freed since the last plan; then the
    /// answer's runs and names. Returns how many names match.
    pub fn expand_plan(&mut self, pattern: &str, plan: &mut Plan) -> Result<usize, Violation> {
        let found = self.expand_found(pattern)?;
        self.announce_frees(plan);
        if found.len() >= NAMES_BY_ID_MIN {
            let ids: Vec<u32> = found
                .iter()
                .filter_map(|item| match *item {
                    Found::Name(id) if self.was_handed(id) => Some(id),
                    _ => None,
                })
                .collect();
            if ids.len() == found.len() {
                self.names_by_id_into_plan(plan, &ids);
                self.after_walk();
                return Ok(ids.len());
            }
        }
        // The lists first (laying down one block frees only lists inside its own subtree, so the
        // places found stay valid), then the answer, so that names' texts come in operation order.
        // A changed block below a list the caller holds is merged from that list and its edits
        // (pending.rs), as the answer's runs and names, nothing laid down.
        let mut places = Vec::with_capacity(found.len());
        let mut merges = Vec::new();
        for item in &found {
            if let Found::Block { node, .. } = *item {
                let mut merged = Vec::new();
                match self.merged_block(node, &mut merged) {
                    Some(list) if self.lists[list as usize].mirrored => {
                        places.push((list, NONE));
                        merges.push(merged);
                    }
                    _ => places.push(self.plan_block(node, plan)),
                }
            }
        }
        let mut merges = merges.into_iter();
        let mut places = places.into_iter();
        let mut count = 0;
        for item in found {
            match item {
                Found::Name(id) => {
                    self.single_name_into_plan(plan, id);
                    count += 1;
                }
                Found::Block { node, skip } => {
                    let (list, offset) = places.next().expect("a place per block");
                    let names = self.nodes[node as usize].names - skip;
                    if offset == NONE {
                        let merged = merges.next().expect("a merge per merged block");
                        self.merged_into_plan(plan, list, &merged, skip);
                    } else {
                        plan.ops.extend([PLAN_COPY, list, offset + skip, names]);
                    }
                    count += names as usize;
                }
            }
        }
        self.after_walk();
        Ok(count)
    }

    /// Validates `pattern`, walks it, and returns what it matched, in walk order.
    fn expand_found(&mut self, pattern: &str) -> Result<Vec<Found>, Violation> {
        let (frontier, rest) = self.reach(pattern)?;
        let mut found = Vec::with_capacity(frontier.len());
        for &node in &frontier {
            let n = &self.nodes[node as usize];
            if !rest {
                if n.name != NONE {
                    found.push(Found::Name(n.name));
                }
            } else if self.rest_by_child(node) {
                let mut child = self.links[node as usize].first_child;
                while child != NONE {
                    if !self.skips_dollar(node, child) && self.nodes[child as usize].names > 0 {
                        found.push(Found::Block { node: child, skip: 0 });
                    }
                    child = self.next_siblings[child as usize];
                }
            } else {
                // The node's own name leads its block; MQTT's `#` also matches the parent level.
                let skip = u32::from(self.dialect != Dialect::Mqtt && n.is_name());
                if n.names > skip {
                    found.push(Found::Block { node, skip });
                }
            }
        }
        self.frontier = frontier;
        Ok(found)
    }

    /// Validates `pattern` and follows its tokens down from the root, counting the nodes it visits
    /// for compaction (compact.rs: the public walks call `after_walk` once their answer is out);
    /// a pattern walked since the nodes last changed is looked up instead (remembered.rs).
    /// Returns the nodes the tokens before a trailing
    /// wildcard reach, in walk order, and whether the pattern ends with one (whose names are then
    /// those below the returned nodes); otherwise the returned nodes are the matches, names or not.
    /// The caller puts the vector back into `self.frontier` when done, so walks do not allocate.
    fn reach(&mut self, pattern: &str) -> Result<(Vec<u32>, bool), Violation> {
        let mut frontier = std::mem::take(&mut self.frontier);
        if let Some(rest) = self.remembered_walk(pattern, &mut frontier) {
            return Ok((frontier, rest));
        }
        self.frontier = frontier;
        self.dialect.validate_pattern(pattern)?;
        self.last_walk_visited = 0;
        // The segments are read straight from the pattern: a token list would allocate a string
        // per literal on every walk.
        let one = self.dialect.one_wildcard();
        let rest_wildcard = self.dialect.rest_wildcard();
        let mut frontier = std::mem::take(&mut self.frontier);
        let mut next = std::mem::take(&mut self.next_frontier);
        frontier.clear();
        if self.names > 0 {
            frontier.push(ROOT);
        }
        let mut rest = false;
        for token in self.dialect.split(pattern) {
            next.clear();
            if token == rest_wildcard {
                // Always the last segment (the pattern was validated).
                rest = true;
                break;
            }
            if token == one {
                self.push_all_children_reversed(&frontier, &mut next);
            } else {
                let Some(segment) = self.segments.get(token) else {
                    frontier.clear();
                    break;
                };
                for (at, &node) in frontier.iter().enumerate() {
                    if let Some(&ahead) = frontier.get(at + LITERAL_LOOKAHEAD) {
                        prefetch((&self.links[ahead as usize] as *const Links).cast());
                    }
                    let child = self.child_by_segment(node, segment);
                    if child != NONE {
                        next.push(child);
                    }
                }
            }
            std::mem::swap(&mut frontier, &mut next);
            self.last_walk_visited += frontier.len();
            if frontier.is_empty() {
                break;
            }
        }
        self.next_frontier = next;
        self.remember_walk(pattern, &frontier, rest);
        Ok((frontier, rest))
    }

    /// How many stored names `pattern` matches, without listing them.
    pub fn count(&mut self, pattern: &str) -> Result<usize, Violation> {
        let (frontier, rest) = self.reach(pattern)?;
        let total = if rest {
            frontier.iter().map(|&node| self.rest_count(node)).sum()
        } else {
            frontier
                .iter()
                .filter(|&&node| self.nodes[node as usize].is_name())
                .count()
        };
        self.frontier = frontier;
        self.after_walk();
        Ok(total)
    }

    /// Names the trailing wildcard takes below (and, in MQTT, at) `node`.
    fn rest_count(&self, node: u32) -> usize {
        let n: &Node = &self.nodes[node as usize];
        match self.dialect {
            Dialect::Mqtt if node == ROOT => self.names - self.dollar_names,
            Dialect::Mqtt => n.names as usize,
            _ => n.names as usize - usize::from(n.is_name()),
        }
    }

    /// Appends the children of each of `parents` in turn to `out`, each node's last to first (the
    /// js engine's stack order), but for those a leading MQTT wildcard does not reach.
    ///
    /// A node's children are a chain: each is found from the one before, so following one chain
    /// waits for a cache miss per child. The chains of `INTERLEAVED_CHAINS` parents are followed
    /// a step each in turn, so that their misses overlap, into scratch lists appended in order
    /// after.
    fn push_all_children_reversed(&mut self, parents: &[u32], out: &mut Vec<u32>) {
        let mut chains = std::mem::take(&mut self.sibling_chains);
        chains.resize_with(INTERLEAVED_CHAINS, Vec::new);
        for group in parents.chunks(INTERLEAVED_CHAINS) {
            let mut cursors = [NONE; INTERLEAVED_CHAINS];
            for (k, &parent) in group.iter().enumerate() {
                cursors[k] = self.links[parent as usize].first_child;
                chains[k].clear();
            }
            let mut following = true;
            while following {
                following = false;
                for (cursor, chain) in cursors.iter_mut().zip(chains.iter_mut()) {
                    if *cursor != NONE {
                        chain.push(*cursor);
                        *cursor = self.next_siblings[*cursor as usize];
                        following = true;
                    }
                }
            }
            for (&parent, chain) in group.iter().zip(&chains) {
                let dollar_rule = self.dialect == Dialect::Mqtt && parent == ROOT;
                for &child in chain.iter().rev() {
                    if !(dollar_rule && self.segment_text(child).starts_with('$')) {
                        out.push(child);
                    }
                }
            }
        }
        self.sibling_chains = chains;
    }

    /// The child of `node` along segment id `segment`, or `NONE`: a look along the first few
    /// children, then the edge table when there are more.
    fn child_by_segment(&self, node: u32, segment: u32) -> u32 {
        let mut child = self.links[node as usize].first_child;
        for _ in 0..SCANNED_CHILDREN {
            if child == NONE {
                return NONE;
            }
            let n = &self.links[child as usize];
            if n.segment == segment {
                return child;
            }
            child = self.next_siblings[child as usize];
        }
        if child == NONE {
            return NONE;
        }
        self.children.get(&self.links, &self.edge_keys, node, segment)
    }

    /// MQTT: a wildcard in the first level does not reach a first level starting with `$`.
    fn skips_dollar(&self, node: u32, child: u32) -> bool {
        self.dialect == Dialect::Mqtt
            && node == ROOT
            && self
                .segments
                .text(self.links[child as usize].segment)
                .starts_with('$')
    }
}
