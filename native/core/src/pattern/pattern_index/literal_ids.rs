//! The ids of one pattern without wildcards, as the pattern index keeps them by pattern text.

/// The ids of one pattern without wildcards. Most such patterns name one subscriber, whose id is
/// kept inline: no allocation per pattern, and a lookup that finds it reads no second one.
#[derive(Debug)]
pub(super) enum LiteralIds {
    One(u32),
    /// Two or more, ascending.
    Many(Vec<u32>),
}

impl LiteralIds {
    pub(super) fn as_slice(&self) -> &[u32] {
        match self {
            LiteralIds::One(id) => std::slice::from_ref(id),
            LiteralIds::Many(ids) => ids,
        }
    }

    /// Adds `id`; false when it was there already.
    pub(super) fn insert(&mut self, id: u32) -> bool {
        match self {
            LiteralIds::One(existing) if *existing == id => false,
            LiteralIds::One(existing) => {
                let (low, high) = (id.min(*existing), id.max(*existing));
                *self = LiteralIds::Many(vec![low, high]);
                true
            }
            LiteralIds::Many(ids) => match ids.binary_search(&id) {
                Ok(_) => false,
                Err(at) => {
                    ids.insert(at, id);
                    true
                }
            },
        }
    }

    /// Removes `id`: `None` when it was not there, else whether no id is left.
    pub(super) fn remove(&mut self, id: u32) -> Option<bool> {
        match self {
            LiteralIds::One(existing) => (*existing == id).then_some(true),
            LiteralIds::Many(ids) => {
                let at = ids.binary_search(&id).ok()?;
                ids.remove(at);
                if let [last] = ids[..] {
                    *self = LiteralIds::One(last);
                }
                Some(false)
            }
        }
    }

    /// Ids held in an allocation of their own (none when the one id is inline).
    pub(super) fn heap_ids(&self) -> usize {
        match self {
            LiteralIds::One(_) => 0,
            LiteralIds::Many(ids) => ids.capacity(),
        }
    }
}
