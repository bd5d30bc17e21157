//! litetopic's engine core, pure Rust with no knowledge of Node.
//!
//! Module map (each has a twin of the same name in `ts/engine/js/`):
//! - [`limits`]: every bound, in one place, mirrored by `ts/common/limits.ts`.
//! - [`error`]: stable error codes and the validation reasons shared with the js engine.
//! - [`dialect`]: the three pattern dialects (lite, mqtt, nats), their splitting and topic rules.
//! - [`pattern`]: validation, compilation and single-pattern matching, and in
//!   [`pattern::pattern_index`] the reverse pattern index (topic → ids of the subscriptions that
//!   match it).
//! - [`trie`]: the topic-name trie (pattern → stored names, idle names), over the same interner.
//! - [`hash`]: CRC-32C and MurmurHash3, the checksums and hashes of the on-disk format.
//! - [`log`]: the memory-mapped commit log, its recovery and checkpoints (docs/FORMAT.md).
//! - [`queue`]: the consume queues (one light queue per LMQ name) indexing the log.

pub mod dialect;
pub mod error;
pub mod hash;
mod interner;
pub mod limits;
pub mod log;
pub mod pattern;
mod prefetch;
pub mod queue;
pub mod trie;

#[cfg(test)]
mod test_rng;

pub use dialect::Dialect;
pub use error::{ErrorCode, Reason, Violation};
pub use pattern::pattern_index::PatternIndex;
pub use pattern::Pattern;
pub use trie::{
    Plan, TopicTrie, PLAN_COPY, PLAN_FREE, PLAN_LIST_END, PLAN_LIST_START, PLAN_NAME, PLAN_NAMES_BY_ID,
    PLAN_NEW_NAME,
};
