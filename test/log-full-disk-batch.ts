/**
 * The batches of test/log-full-disk.test.ts and its fixture: `ACKED` records that fit, then one of
 * `FAILED` records larger than the fixture's disk. Record `n` of each has the body
 * `bodyFor(kind, n, BODY_BYTES)`, so a reader can check any record knowing only its batch and number.
 */
export const ACKED = 8;
export const FAILED = 3000;
export const BODY_BYTES = 1000;
export const LMQ = 'q';
/** The parent topic and group of the fixture's `broker` form (the lite topic is `LMQ`). */
export const BROKER_TOPIC = 'agents';
export const BROKER_GROUP = 'g';
/** The tmpfs the fixture writes on: far less than the failed batch (3 MB), more than the rest. */
export const DISK_BYTES = 1024 * 1024;
