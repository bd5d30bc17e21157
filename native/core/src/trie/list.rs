//! Listing names in a total order, page by page, for admin queries (docs/TRIE.md).
//!
//! Order: segment by segment, each segment compared by UTF-16 code units (JavaScript's string
//! order, so both engines agree), and a name before its extensions: `a`, `a__b`, `a__c`, `ab`.
//! A page resumes strictly after a cursor name, which need not still exist. Children are kept in
//! order of creation, so each visited node's children are sorted when the page reaches them.

use super::{TopicTrie, NONE, ROOT};
use std::cmp::Ordering;

/// Compares two segments by UTF-16 code units, as JavaScript's `<` does.
pub fn compare_segments(a: &str, b: &str) -> Ordering {
    // UTF-8 byte order is code point order, which differs from UTF-16 order only past U+FFFF.
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

/// A node's children in list order and how many of them the page has taken.
type Frame = (Vec<u32>, usize);

impl TopicTrie {
    /// Appends to `out` the ids of up to `limit` names in list order: names made of the whole
    /// segments of `prefix` followed by any others (`prefix` itself included; every name when
    /// `prefix` is empty), strictly after `after` when given. Returns whether more names follow.
    pub fn list(&self, prefix: &str, limit: usize, after: Option<&str>, out: &mut Vec<u32>) -> bool {
        let start = out.len();
        let mut prefix_segments = Vec::new();
        let mut top = ROOT;
        if !prefix.is_empty() {
            for segment in self.dialect.split(prefix) {
                top = self.child(top, segment);
                if top == NONE {
                    return false;
                }
                prefix_segments.push(segment);
            }
        }
        let mut frames: Vec<Frame> = Vec::new();
        let after_segments: Vec<&str> = after.map(|a| self.dialect.split(a).collect()).unwrap_or_default();
        match after.map(|_| compare_paths(&after_segments, &prefix_segments)) {
            // No cursor, or one before every name under the prefix: from the beginning.
            None | Some(Ordering::Less) => {
                if top != ROOT && self.nodes[top as usize].is_name() {
                    if limit == 0 {
                        return true;
                    }
                    out.push(self.nodes[top as usize].name);
                }
                frames.push((self.sorted_children(top), 0));
            }
            Some(Ordering::Greater) => return false,
            Some(Ordering::Equal) => {
                self.frames_after(top, &after_segments[prefix_segments.len()..], &mut frames)
            }
        }
        while let Some(frame) = frames.last_mut() {
            let Some(&child) = frame.0.get(frame.1) else {
                frames.pop();
                continue;
            };
            if out.len() - start == limit {
                // Every node but the root holds at least one name, so one more follows.
                return true;
            }
            frame.1 += 1;
            if self.nodes[child as usize].is_name() {
                out.push(self.nodes[child as usize].name);
            }
            if self.links[child as usize].first_child != NONE {
                frames.push((self.sorted_children(child), 0));
            }
        }
        false
    }

    /// Sets up `frames` to continue strictly after the name `rest` continues from `top` with.
    fn frames_after(&self, top: u32, rest: &[&str], frames: &mut Vec<Frame>) {
        let mut node = top;
        for &segment in rest {
            let children = self.sorted_children(node);
            let from = children
                .partition_point(|&c| compare_segments(self.segment_text(c), segment) != Ordering::Greater);
            let same = from
                .checked_sub(1)
                .map(|i| children[i])
                .filter(|&c| self.segment_text(c) == segment);
            frames.push((children, from));
            match same {
                Some(child) => node = child,
                // The cursor is not stored; its later siblings are already in the frame.
                None => return,
            }
        }
        // The cursor's own extensions come right after it.
        frames.push((self.sorted_children(node), 0));
    }

    pub(super) fn child(&self, node: u32, segment: &str) -> u32 {
        match self.segments.get(segment) {
            Some(id) => self.children.get(&self.links, &self.edge_keys, node, id),
            None => NONE,
        }
    }

    pub(super) fn segment_text(&self, node: u32) -> &str {
        self.segments.text(self.links[node as usize].segment)
    }

    fn sorted_children(&self, node: u32) -> Vec<u32> {
        let mut children = Vec::new();
        let mut child = self.links[node as usize].first_child;
        while child != NONE {
            children.push(child);
            child = self.next_siblings[child as usize];
        }
        children.sort_unstable_by(|&a, &b| compare_segments(self.segment_text(a), self.segment_text(b)));
        children
    }
}

/// Compares a cursor with a prefix over the prefix's segments: `Less` when the cursor sorts before
/// every name under the prefix, `Greater` after all of them, `Equal` when it starts with the prefix.
fn compare_paths(cursor: &[&str], prefix: &[&str]) -> Ordering {
    for (i, p) in prefix.iter().enumerate() {
        match cursor.get(i) {
            // A proper prefix of the prefix sorts before its extensions.
            None => return Ordering::Less,
            Some(c) => match compare_segments(c, p) {
                Ordering::Equal => {}
                other => return other,
            },
        }
    }
    Ordering::Equal
}
