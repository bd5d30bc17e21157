//! Pattern walks over the trie: expansion and counting visit only the subtrees a pattern can reach.
//! A literal token is one edge lookup, the one-segment wildcard takes each child, and the trailing
//! wildcard takes a whole subtree without matching any name (counting it is O(1): every node keeps
//! the number of names below it).
//!
//! Order of results: the walk keeps a stack of (node, token) and pushes a node's children first to
//! last, so one-segment wildcards come out last child first; a subtree under a trailing wildcard
//! comes out depth first, children in order of creation. The js engine walks identically, so both
//! give the same order for the same history; callers should treat it as unspecified.
//!
//! `expand_joined` writes the names as the walk reaches them, from a path buffer kept along the way,
//! instead of rebuilding each from its parents afterwards (a cache miss per level and name).

use super::{Node, TopicTrie, NONE, ROOT};
use crate::dialect::Dialect;
use crate::error::Violation;
use crate::pattern::{tokenize, Token};

/// What a walk starts from: the pattern's tokens, their literal segment ids, and the stack of
/// (node, token index) still to visit.
type Walk = (Vec<Token>, Vec<u32>, Vec<(u32, u32)>);

/// Where a walk puts what it finds: ids, or names written out during the walk.
trait Sink {
    /// Whether the walk keeps the path of the current node (the name so far) as it goes.
    const NAMES: bool;
    /// The name with id `id` matched; `path` is its text when `NAMES`, empty otherwise.
    fn name(&mut self, id: u32, path: &str);
}

impl Sink for Vec<u32> {
    const NAMES: bool = false;
    fn name(&mut self, id: u32, _path: &str) {
        self.push(id);
    }
}

/// Names NUL-joined into one string (NUL is invalid in every dialect's names), and where each ends.
struct Joined<'a> {
    out: &'a mut String,
    /// After each name, the length of `out` in UTF-16 code units, from where this call started.
    ends: &'a mut Vec<u32>,
    /// The length written so far in UTF-16 code units.
    utf16_len: usize,
    count: usize,
}

impl Sink for Joined<'_> {
    const NAMES: bool = true;
    fn name(&mut self, _id: u32, path: &str) {
        if self.count > 0 {
            self.out.push('\0');
            self.utf16_len += 1;
        }
        self.out.push_str(path);
        self.utf16_len += if path.is_ascii() {
            path.len()
        } else {
            path.chars().map(char::len_utf16).sum()
        };
        self.ends.push(self.utf16_len as u32);
        self.count += 1;
    }
}

impl TopicTrie {
    /// Appends to `out` the id of every stored name `pattern` matches; returns how many.
    pub fn expand_into(&mut self, pattern: &str, out: &mut Vec<u32>) -> Result<usize, Violation> {
        self.expand_walk(pattern, out)
    }

    /// Appends to `out` every stored name `pattern` matches, NUL-joined (a separator before each
    /// name but the first this call writes), in the order of [`expand_into`](Self::expand_into),
    /// and to `ends` where each name ends, in UTF-16 code units from where `out` was (what
    /// JavaScript's `slice` takes, so a caller cuts the names out without searching); returns how
    /// many. Names are written as the walk reaches them, from a path kept along the way, instead of
    /// being rebuilt from parent links one by one.
    pub fn expand_joined(
        &mut self,
        pattern: &str,
        out: &mut String,
        ends: &mut Vec<u32>,
    ) -> Result<usize, Violation> {
        let mut sink = Joined {
            out,
            ends,
            utf16_len: 0,
            count: 0,
        };
        self.expand_walk(pattern, &mut sink)?;
        Ok(sink.count)
    }

    fn expand_walk<S: Sink>(&mut self, pattern: &str, sink: &mut S) -> Result<usize, Violation> {
        let (tokens, literals, mut stack) = self.start_walk(pattern)?;
        let separator = self.dialect.separator();
        // The text of the node being visited, and `ends[d]` the length of its prefix of depth d.
        // A node on the stack with token index `at` is `at` levels deep (every token before it took
        // one level), so the prefix of its parent is `path[..ends[at - 1]]`.
        let mut path = String::new();
        let mut ends: Vec<usize> = Vec::new();
        let mut levels: Vec<usize> = Vec::new();
        let mut found = 0;
        while let Some((node, at)) = stack.pop() {
            if S::NAMES && at > 0 {
                let depth = at as usize;
                ends.truncate(depth - 1);
                path.truncate(ends.last().copied().unwrap_or(0));
                if depth > 1 {
                    path.push_str(separator);
                }
                path.push_str(self.segment_text(node));
                ends.push(path.len());
            }
            match tokens.get(at as usize) {
                None => {
                    let n = &self.nodes[node as usize];
                    if n.is_name() {
                        sink.name(n.name, &path);
                        found += 1;
                    }
                }
                Some(Token::Literal(_)) => self.push_literal(node, literals[at as usize], at + 1, &mut stack),
                Some(Token::One) => self.push_children(node, at + 1, &mut stack),
                Some(Token::Rest) => {
                    if self.dialect == Dialect::Mqtt && node != ROOT {
                        // MQTT's `#` also matches the parent level: the node itself.
                        found += self.collect_subtree(node, &mut path, &mut levels, sink);
                    } else {
                        let base = path.len();
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
                                found += self.collect_subtree(child, &mut path, &mut levels, sink);
                            }
                            child = self.nodes[child as usize].next_sibling;
                        }
                        path.truncate(base);
                    }
                }
            }
        }
        self.stack = stack;
        Ok(found)
    }

    /// Validates and tokenizes `pattern`, resolves its literal segments to ids, and hands out the
    /// reusable walk stack holding the root (empty when there are no names), compacting the trie
    /// first if many nodes were placed since it last was. The caller puts the stack back into
    /// `self.stack` when done.
    fn start_walk(&mut self, pattern: &str) -> Result<Walk, Violation> {
        self.dialect.validate_pattern(pattern)?;
        self.compact_if_scattered();
        let tokens = tokenize(pattern, self.dialect);
        let literals = self.literal_ids(&tokens);
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        if self.names > 0 {
            stack.push((ROOT, 0));
        }
        Ok((tokens, literals, stack))
    }

    /// How many stored names `pattern` matches, without listing them.
    pub fn count(&mut self, pattern: &str) -> Result<usize, Violation> {
        let (tokens, literals, mut stack) = self.start_walk(pattern)?;
        let mut total = 0;
        while let Some((node, at)) = stack.pop() {
            match tokens.get(at as usize) {
                None => total += usize::from(self.nodes[node as usize].is_name()),
                Some(Token::Literal(_)) => self.push_literal(node, literals[at as usize], at + 1, &mut stack),
                Some(Token::One) => self.push_children(node, at + 1, &mut stack),
                Some(Token::Rest) => total += self.rest_count(node),
            }
        }
        self.stack = stack;
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

    /// The segment id of each literal token, looked up once per walk instead of once per node
    /// (`NONE` for a segment no name has, and for wildcards).
    fn literal_ids(&self, tokens: &[Token]) -> Vec<u32> {
        tokens
            .iter()
            .map(|token| match token {
                Token::Literal(text) => self.segments.get(text).unwrap_or(NONE),
                _ => NONE,
            })
            .collect()
    }

    fn push_literal(&self, node: u32, segment: u32, next: u32, stack: &mut Vec<(u32, u32)>) {
        if segment != NONE {
            let child = self.children.get(&self.nodes, node, segment);
            if child != NONE {
                stack.push((child, next));
            }
        }
    }

    fn push_children(&self, node: u32, next: u32, stack: &mut Vec<(u32, u32)>) {
        let mut child = self.nodes[node as usize].first_child;
        while child != NONE {
            if !self.skips_dollar(node, child) {
                stack.push((child, next));
            }
            child = self.nodes[child as usize].next_sibling;
        }
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
        let separator = self.dialect.separator();
        levels.clear();
        let mut found = 0;
        let mut node = top;
        loop {
            let n = &self.nodes[node as usize];
            if n.is_name() {
                sink.name(n.name, path);
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
}
