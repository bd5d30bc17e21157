//! Every bound the core enforces, with its unit last. Mirrored by `ts/engine/js/limits.ts`; a test
//! compares the two through the binding.

/// Default longest lite topic name, in UTF-8 bytes (DESIGN.md §3).
pub const MAX_LITE_TOPIC_BYTES: usize = 64;

/// The largest `maxBytes` a caller may configure for lite topic names. RocketMQ caps topic names far
/// below this; the ceiling only keeps a typo (an extra zero or two) from disabling the check.
pub const MAX_LITE_TOPIC_BYTES_CEILING: usize = 1024;

/// MQTT topic names and filters are UTF-8 strings with a 16-bit length prefix (MQTT 3.1.1 §1.5.3),
/// so neither may exceed this many bytes.
pub const MAX_MQTT_TOPIC_BYTES: usize = 65_535;

/// Keys per block of the trie's idle set (names ordered by last activity). A block is moved in one
/// piece on insert and removal, so this bounds that cost; appends fill blocks to exactly this size.
pub const TRIE_IDLE_BLOCK_ENTRIES: usize = 512;
