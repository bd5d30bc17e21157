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
            self.sorted.extend(self.map.keys().cloned());
            self.sorted.sort_unstable();
            self.sorted_valid = true;
        }
        let mut start = self.sorted.partition_point(|name| &name[..] < prefix);
        if let Some(after) = after {
            start = start.max(self.sorted.partition_point(|name| &name[..] <= after));
        }
        let mut matching = self.sorted[start..]
            .iter()
            .take_while(|name| name.starts_with(prefix));
        let names: Vec<Arc<[u8]>> = matching.by_ref().take(limit).cloned().collect();
        NamePage {
            names,
            more: matching.next().is_some(),
        }
    }
}
