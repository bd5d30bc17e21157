//! Pattern walks over the trie: expansion and counting visit only the subtrees a pattern can reach.
//! A literal token is one edge lookup, the one-segment wildcard takes each child, and the trailing
//! wildcard takes a whole subtree without matching any name (counting it is O(1): every node keeps
//! the number of names below it).
//!
//! Order of results: the walk keeps a stack of (node, token) and pushes a node's children first to
//! last, so one-segment wildcards come out last child first; a subtree under a trailing wildcard
//! comes out depth first, children in order of creation. The js engine walks identically, so both
//! give the same order for the same history; callers should treat it as unspecified.

use super::{Node, TopicTrie, NONE, ROOT};
use crate::dialect::Dialect;
use crate::error::Violation;
use crate::pattern::{tokenize, Token};

impl TopicTrie {
    /// Appends to `out` the id of every stored name `pattern` matches; returns how many.
    pub fn expand_into(&mut self, pattern: &str, out: &mut Vec<u32>) -> Result<usize, Violation> {
        self.dialect.validate_pattern(pattern)?;
        let start = out.len();
        let tokens = tokenize(pattern, self.dialect);
        let literals = self.literal_ids(&tokens);
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        if self.names > 0 {
            stack.push((ROOT, 0));
        }
        while let Some((node, at)) = stack.pop() {
            match tokens.get(at as usize) {
                None => {
                    if self.nodes[node as usize].is_name() {
                        out.push(node);
                    }
                }
                Some(Token::Literal(_)) => self.push_literal(node, literals[at as usize], at + 1, &mut stack),
                Some(Token::One) => self.push_children(node, at + 1, &mut stack),
                Some(Token::Rest) => {
                    if self.dialect == Dialect::Mqtt && node != ROOT {
                        // MQTT's `#` also matches the parent level: the node itself.
                        self.collect_subtree(node, out);
                    } else {
                        let mut child = self.nodes[node as usize].first_child;
                        while child != NONE {
                            if !self.skips_dollar(node, child) {
                                self.collect_subtree(child, out);
                            }
                            child = self.nodes[child as usize].next_sibling;
                        }
                    }
                }
            }
        }
        self.stack = stack;
        Ok(out.len() - start)
    }

    /// How many stored names `pattern` matches, without listing them.
    pub fn count(&mut self, pattern: &str) -> Result<usize, Violation> {
        self.dialect.validate_pattern(pattern)?;
        let tokens = tokenize(pattern, self.dialect);
        let literals = self.literal_ids(&tokens);
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        if self.names > 0 {
            stack.push((ROOT, 0));
        }
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

    /// Appends every name in the subtree of `top`, `top` included, depth first. Follows the
    /// parent and sibling links instead of keeping a stack.
    fn collect_subtree(&self, top: u32, out: &mut Vec<u32>) {
        let mut node = top;
        loop {
            let n = &self.nodes[node as usize];
            if n.is_name() {
                out.push(node);
            }
            if n.first_child != NONE {
                node = n.first_child;
                continue;
            }
            loop {
                if node == top {
                    return;
                }
                let n = &self.nodes[node as usize];
                if n.next_sibling != NONE {
                    node = n.next_sibling;
                    break;
                }
                node = n.parent;
            }
        }
    }
}
