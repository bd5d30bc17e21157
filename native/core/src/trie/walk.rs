//! Pattern walks over the trie: expansion and counting visit only the subtrees a pattern can reach.
//! A literal token is one edge lookup, the one-segment wildcard takes each child, and the trailing
//! wildcard takes a whole subtree without matching any name (counting it is O(1): every node keeps
//! the number of names below it).
//!
//! Order of results: the walk goes level by level, one pattern token a level, keeping the nodes
//! reached so far in order (the frontier); a one-segment wildcard replaces each node by its
//! children last to first, so those come out last child first. A subtree under a trailing wildcard
//! comes out depth first, children in order of creation. (An earlier stack of (node, token) pairs,
//! pushing children first to last and popping the last first, gave this same order.) The js engine
//! walks identically, so both give the same order for the same history; callers should treat it as
//! unspecified.
//!
//! `expand_joined` writes the names under a trailing wildcard as the walk reaches them, from a path
//! buffer kept along the way, instead of rebuilding each from its parents afterwards (a cache miss
//! per level and name).

use super::{Node, TopicTrie, NONE, ROOT};
use crate::dialect::Dialect;
use crate::error::Violation;
use crate::pattern::{tokenize, Token};

/// Where a walk puts what it finds: ids, runs of node positions, or names written out during the
/// walk.
trait Sink {
    /// Whether the walk keeps the path of the current node (the name so far) as it goes.
    const NAMES: bool;
    /// The name with id `id`, ending at node position `node`, matched; `path` is its text when
    /// `NAMES`, empty otherwise.
    fn name(&mut self, node: u32, id: u32, path: &str);
    /// Every name in `nodes`, the run of positions `start..` of one whole subtree of a trie laid
    /// out depth first (see `collect_run`); `names` of them hold names (the default reads each).
    fn run(&mut self, start: u32, nodes: &[Node], _names: usize) {
        for (at, node) in (start..).zip(nodes) {
            if node.name != NONE {
                self.name(at, node.name, "");
            }
        }
    }
}

impl Sink for Vec<u32> {
    const NAMES: bool = false;
    fn name(&mut self, _node: u32, id: u32, _path: &str) {
        self.push(id);
    }
}

/// Node positions as `(start, end, names)` triples: a whole run for a subtree of a laid-out trie,
/// one position otherwise, with the number of names in it.
struct Runs<'a> {
    runs: &'a mut Vec<u32>,
    count: usize,
}

impl Sink for Runs<'_> {
    const NAMES: bool = false;
    fn name(&mut self, node: u32, _id: u32, _path: &str) {
        self.runs.extend([node, node + 1, 1]);
        self.count += 1;
    }
    fn run(&mut self, start: u32, nodes: &[Node], names: usize) {
        self.runs
            .extend([start, start + nodes.len() as u32, names as u32]);
        self.count += names;
    }
}

/// Names NUL-joined into one string (NUL is invalid in every dialect's names), and where each ends.
struct Joined<'a> {
    out: &'a mut String,
    /// After each name, the length of `out` in bytes, from where this call started.
    ends: &'a mut Vec<u32>,
    /// The node position of each name.
    positions: &'a mut Vec<u32>,
    /// The length of `out` when this call started.
    start: usize,
    count: usize,
}

impl Sink for Joined<'_> {
    const NAMES: bool = true;
    fn name(&mut self, node: u32, _id: u32, path: &str) {
        self.positions.push(node);
        if self.count > 0 {
            self.out.push('\0');
        }
        self.out.push_str(path);
        let end = u32::try_from(self.out.len() - self.start).expect("an expand answer under 4 GiB");
        self.ends.push(end);
        self.count += 1;
    }
}

/// Children of a node scanned for a literal segment before the edge table is asked: most nodes
/// have a few children, and reading them costs less than a probe sequence in a table that may be
/// three quarters full (a miss there reads several unrelated nodes).
const SCANNED_CHILDREN: usize = 8;

impl TopicTrie {
    /// Appends to `out` the id of every stored name `pattern` matches; returns how many.
    pub fn expand_into(&mut self, pattern: &str, out: &mut Vec<u32>) -> Result<usize, Violation> {
        self.expand_walk(pattern, out)
    }

    /// Appends to `out` every stored name `pattern` matches, NUL-joined (a separator before each
    /// name but the first this call writes), in the order of [`expand_into`](Self::expand_into),
    /// and to `ends` where each name ends, in bytes from where `out` was; returns how many. Names
    /// under a trailing wildcard are written as the walk reaches them, from a path kept along the
    /// way; a name matched by the other tokens is rebuilt from its parents (the walk visits many
    /// nodes that lead to no name, so it keeps no path there).
    /// `positions` receives the node position of each name, in the same order.
    pub fn expand_joined(
        &mut self,
        pattern: &str,
        out: &mut String,
        ends: &mut Vec<u32>,
        positions: &mut Vec<u32>,
    ) -> Result<usize, Violation> {
        let mut sink = Joined {
            start: out.len(),
            out,
            ends,
            positions,
            count: 0,
        };
        self.expand_walk(pattern, &mut sink)?;
        Ok(sink.count)
    }

    /// Appends to `runs` where the names `pattern` matches sit, as `(start, end, names)` triples:
    /// runs of node positions in the order of [`expand_into`](Self::expand_into) (positions in a
    /// run that hold no name are skipped by that order) and how many names each holds; returns how
    /// many names in all. A subtree under a trailing wildcard is one run when the trie is laid out
    /// depth first with nothing placed since; every other name is a run of one. Positions hold
    /// until [`layout_epoch`](Self::layout_epoch) changes, but for the position of a name removed
    /// since (see [`remove_at`](Self::remove_at)), which a later name may take.
    pub fn expand_runs(&mut self, pattern: &str, runs: &mut Vec<u32>) -> Result<usize, Violation> {
        let mut sink = Runs { runs, count: 0 };
        self.expand_walk(pattern, &mut sink)?;
        Ok(sink.count)
    }

    fn expand_walk<S: Sink>(&mut self, pattern: &str, sink: &mut S) -> Result<usize, Violation> {
        let (frontier, rest) = self.reach(pattern)?;
        // The text of a matched node or of the node under a trailing wildcard (names only), and the
        // path lengths `collect_subtree` keeps.
        let mut path = String::new();
        let mut levels: Vec<usize> = Vec::new();
        let mut found = 0;
        for &node in &frontier {
            if rest {
                if S::NAMES {
                    path.clear();
                    self.write_path(node, &mut path);
                }
                found += self.collect_rest(node, &mut path, &mut levels, sink);
                continue;
            }
            let id = self.nodes[node as usize].name;
            if id != NONE {
                if S::NAMES {
                    path.clear();
                    self.write_path(node, &mut path);
                }
                sink.name(node, id, &path);
                found += 1;
            }
        }
        self.frontier = frontier;
        Ok(found)
    }

    /// Hands `sink` every name the trailing wildcard takes at `node`, whose text `path` holds when
    /// `S::NAMES`; returns how many.
    fn collect_rest<S: Sink>(
        &self,
        node: u32,
        path: &mut String,
        levels: &mut Vec<usize>,
        sink: &mut S,
    ) -> usize {
        if self.dialect == Dialect::Mqtt && node != ROOT {
            // MQTT's `#` also matches the parent level: the node itself.
            return self.collect_subtree(node, path, levels, sink);
        }
        let separator = self.dialect.separator();
        let base = path.len();
        let mut found = 0;
        let mut child = self.nodes[node as usize].first_child;
        while child != NONE {
            if !self.skips_dollar(node, child) {
                if S::NAMES {
                    path.truncate(base);
                    if node != ROOT {
                        path.push_str(separator);
                    }
                    path.push_str(self.segment_text(child));
                }
                found += self.collect_subtree(child, path, levels, sink);
            }
            child = self.nodes[child as usize].next_sibling;
        }
        path.truncate(base);
        found
    }

    /// Validates `pattern` and follows its tokens down from the root, compacting the trie first if
    /// many nodes were placed since it last was. Returns the nodes the tokens before a trailing
    /// wildcard reach, in walk order, and whether the pattern ends with one (whose names are then
    /// those below the returned nodes); otherwise the returned nodes are the matches, names or not.
    /// The caller puts the vector back into `self.frontier` when done, so walks do not allocate.
    fn reach(&mut self, pattern: &str) -> Result<(Vec<u32>, bool), Violation> {
        self.dialect.validate_pattern(pattern)?;
        self.compact_if_scattered();
        let tokens = tokenize(pattern, self.dialect);
        let mut frontier = std::mem::take(&mut self.frontier);
        let mut next = std::mem::take(&mut self.next_frontier);
        frontier.clear();
        if self.names > 0 {
            frontier.push(ROOT);
        }
        let mut rest = false;
        for token in &tokens {
            next.clear();
            match token {
                Token::Literal(text) => {
                    let Some(segment) = self.segments.get(text) else {
                        frontier.clear();
                        break;
                    };
                    for &node in &frontier {
                        let child = self.child_by_segment(node, segment);
                        if child != NONE {
                            next.push(child);
                        }
                    }
                }
                Token::One => {
                    for &node in &frontier {
                        self.push_children_reversed(node, &mut next);
                    }
                }
                Token::Rest => {
                    // Always the last token.
                    rest = true;
                    break;
                }
            }
            std::mem::swap(&mut frontier, &mut next);
            if frontier.is_empty() {
                break;
            }
        }
        self.next_frontier = next;
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

    /// Appends the children of `node` to `out`, last to first (the js engine's stack order), but
    /// for those a leading MQTT wildcard does not reach.
    fn push_children_reversed(&self, node: u32, out: &mut Vec<u32>) {
        let first = self.nodes[node as usize].first_child;
        if first == NONE {
            return;
        }
        let dollar_rule = self.dialect == Dialect::Mqtt && node == ROOT;
        // The first child's `prev_sibling` is the last child.
        let mut child = self.nodes[first as usize].prev_sibling;
        loop {
            if !(dollar_rule && self.segment_text(child).starts_with('$')) {
                out.push(child);
            }
            if child == first {
                return;
            }
            child = self.nodes[child as usize].prev_sibling;
        }
    }

    /// The child of `node` along segment id `segment`, or `NONE`: a look along the first few
    /// children, then the edge table when there are more.
    fn child_by_segment(&self, node: u32, segment: u32) -> u32 {
        let mut child = self.nodes[node as usize].first_child;
        for _ in 0..SCANNED_CHILDREN {
            if child == NONE {
                return NONE;
            }
            let n = &self.nodes[child as usize];
            if n.segment == segment {
                return child;
            }
            child = n.next_sibling;
        }
        if child == NONE {
            return NONE;
        }
        self.children.get(&self.nodes, node, segment)
    }

    /// MQTT: a wildcard in the first level does not reach a first level starting with `$`.
    fn skips_dollar(&self, node: u32, child: u32) -> bool {
        self.dialect == Dialect::Mqtt
            && node == ROOT
            && self
                .segments
                .text(self.nodes[child as usize].segment)
                .starts_with('$')
    }

    /// Hands `sink` every name in the subtree of `top`, `top` included, depth first; returns how
    /// many. Follows the parent and sibling links instead of keeping a stack. With `S::NAMES`,
    /// `path` holds the text of `top` on entry and is kept as the text of the node visited
    /// (`levels` holds the path lengths of its ancestors below `top`); it is `top`'s again on return.
    fn collect_subtree<S: Sink>(
        &self,
        top: u32,
        path: &mut String,
        levels: &mut Vec<usize>,
        sink: &mut S,
    ) -> usize {
        if !S::NAMES && self.placed_since_compaction == 0 {
            return self.collect_run(top, sink);
        }
        let separator = self.dialect.separator();
        levels.clear();
        let mut found = 0;
        let mut node = top;
        loop {
            let n = &self.nodes[node as usize];
            if n.is_name() {
                sink.name(node, n.name, path);
                found += 1;
            }
            if n.first_child != NONE {
                node = n.first_child;
                if S::NAMES {
                    levels.push(path.len());
                    path.push_str(separator);
                    path.push_str(self.segment_text(node));
                }
                continue;
            }
            loop {
                if node == top {
                    return found;
                }
                let n = &self.nodes[node as usize];
                if S::NAMES {
                    // Back to the parent's text.
                    path.truncate(levels.last().copied().unwrap_or(0));
                }
                if n.next_sibling != NONE {
                    node = n.next_sibling;
                    if S::NAMES {
                        path.push_str(separator);
                        path.push_str(self.segment_text(node));
                    }
                    break;
                }
                node = n.parent;
                if S::NAMES {
                    levels.pop();
                }
            }
        }
    }

    /// `collect_subtree` without names on a trie laid out depth first with nothing placed since
    /// (compact.rs): the subtree of `top` is then the run of positions from `top` up to the next
    /// node in depth-first order, so its names are read straight through that run instead of by
    /// following links. Positions freed since the compaction lie inside the run of the subtree they
    /// left and hold no name; removals only unlink, so the next node in depth-first order is still
    /// the first next sibling of `top` or of an ancestor.
    fn collect_run<S: Sink>(&self, top: u32, sink: &mut S) -> usize {
        let end = self.run_end(top) as usize;
        let names = self.nodes[top as usize].names as usize;
        sink.run(top, &self.nodes[top as usize..end], names);
        names
    }

    /// The position after the subtree of `top` in a depth-first layout (see `collect_run`).
    fn run_end(&self, top: u32) -> u32 {
        let mut node = top;
        while node != ROOT {
            let n = &self.nodes[node as usize];
            if n.next_sibling != NONE {
                return n.next_sibling;
            }
            node = n.parent;
        }
        self.nodes.len() as u32
    }
}
