//! Every bound the core enforces, with its unit last. Mirrored by `ts/shared/limits.ts`; a test
//! compares the two through the binding.

/// Default longest lite topic name, in UTF-8 bytes (docs/PATTERNS.md).
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

/// Bytes of a segment header (docs/FORMAT.md).
pub const SEGMENT_HEADER_BYTES: usize = 64;

/// Smallest segment a log may be configured with, in bytes.
pub const MIN_SEGMENT_BYTES: usize = 4096;

/// Largest segment, in bytes: in-segment offsets and record sizes stay within 32 bits.
pub const MAX_SEGMENT_BYTES: usize = 1024 * 1024 * 1024;

/// Segment size when none is given, in bytes.
pub const DEFAULT_SEGMENT_BYTES: usize = 256 * 1024 * 1024;

/// Most LMQs one record may be dispatched to.
pub const MAX_LMQS_PER_RECORD: usize = 64;

/// Longest LMQ name, in UTF-8 bytes.
pub const MAX_LMQ_NAME_BYTES: usize = 1024;

/// Longest key, tag, property name or property value, in UTF-8 bytes (a u16 length on disk).
pub const MAX_FIELD_BYTES: usize = 65_535;

/// Most properties on one record (a u16 count on disk).
pub const MAX_PROPERTIES: usize = 65_535;

/// Most records one `append` call may carry.
pub const MAX_APPEND_RECORDS: usize = 65_536;

/// Most records one `read` call may return.
pub const MAX_READ_RECORDS: usize = 65_536;
