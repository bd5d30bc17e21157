//! Listing LMQ names in UTF-8 byte order, a page at a time. The sorted list is rebuilt only when a
//! listing follows a change to the set of names, so appends to new LMQs stay O(1).

use super::Queues;
use std::sync::Arc;

/// One page of names and whether more follow it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct NamePage {
    pub names: Vec<Arc<[u8]>>,
    pub more: bool,
}

impl Queues {
    /// Up to `limit` names starting with `prefix`, strictly after `after` when given.
    pub fn list(&mut self, prefix: &[u8], after: Option<&[u8]>, limit: usize) -> NamePage {
        if !self.sorted_valid {
            self.sorted.clear();
            self.sorted.extend(self.names.ids());
            let names = &self.names;
            self.sorted
                .sort_unstable_by(|&a, &b| names.name(a).cmp(names.name(b)));
            self.sorted_valid = true;
        }
        let name = |id: &u32| self.names.name(*id);
        let mut start = self.sorted.partition_point(|id| name(id) < prefix);
        if let Some(after) = after {
            start = start.max(self.sorted.partition_point(|id| name(id) <= after));
        }
        let mut matching = self.sorted[start..]
            .iter()
            .take_while(|id| name(id).starts_with(prefix));
        let names: Vec<Arc<[u8]>> = matching
            .by_ref()
            .take(limit)
            .map(|id| Arc::from(name(id)))
            .collect();
        NamePage {
            names,
            more: matching.next().is_some(),
        }
    }
}
