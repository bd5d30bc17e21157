/**
 * Every bound the engines enforce, with its unit last. Mirrors `native/core/src/limits.rs`; a test
 * compares the two through the binding.
 */

/** Default longest lite topic name, in UTF-8 bytes (docs/PATTERNS.md). */
export const MAX_LITE_TOPIC_BYTES = 64;

/**
 * The largest `maxBytes` a caller may configure for lite topic names. RocketMQ caps topic names far
 * below this; the ceiling only keeps a typo (an extra zero or two) from disabling the check.
 */
export const MAX_LITE_TOPIC_BYTES_CEILING = 1024;

/** MQTT topic names and filters are UTF-8 strings with a 16-bit length prefix (MQTT 3.1.1 §1.5.3). */
export const MAX_MQTT_TOPIC_BYTES = 65_535;

/**
 * Keys per block of the trie's idle set (names ordered by last activity). A block is moved in one
 * piece on insert and removal, so this bounds that cost; appends fill blocks to exactly this size.
 */
export const TRIE_IDLE_BLOCK_ENTRIES = 512;

/** Bytes of a segment header (docs/FORMAT.md). */
export const SEGMENT_HEADER_BYTES = 64;

/** Smallest segment a log may be configured with, in bytes. */
export const MIN_SEGMENT_BYTES = 4096;

/** Largest segment, in bytes: in-segment offsets and record sizes stay within 32 bits. */
export const MAX_SEGMENT_BYTES = 1024 * 1024 * 1024;

/** Segment size when none is given, in bytes. */
export const DEFAULT_SEGMENT_BYTES = 256 * 1024 * 1024;

/** Most LMQs one record may be dispatched to. */
export const MAX_LMQS_PER_RECORD = 64;

/** Longest LMQ name, in UTF-8 bytes. */
export const MAX_LMQ_NAME_BYTES = 1024;

/** Longest key, tag, property name or property value, in UTF-8 bytes (a u16 length on disk). */
export const MAX_FIELD_BYTES = 65_535;

/** Most properties on one record (a u16 count on disk). */
export const MAX_PROPERTIES = 65_535;

/** Most records one `append` call may carry. */
export const MAX_APPEND_RECORDS = 65_536;

/** Most records one `read` call may return. */
export const MAX_READ_RECORDS = 65_536;
