/**
 * Every bound the engines enforce, with its unit last. Mirrors `native/core/src/limits.rs`; a test
 * compares the two through the binding.
 */

/** Default longest lite topic name, in UTF-8 bytes (DESIGN.md §3). */
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
