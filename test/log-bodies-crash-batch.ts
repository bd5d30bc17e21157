/**
 * The batches of test/log-bodies-crash.test.ts and its writer: batch `b` has `RECORDS` records,
 * record `i` going to LMQ `lmqOf(i)` with the body `bodyFor('b<b>', i, bodyBytes(b, i))`, so a reader
 * can tell from a body alone which record it is and check it whole. A batch is several times the
 * native engine's 256 KiB part, and segments of `SEGMENT_BYTES` fill in the middle of parts.
 */
export const RECORDS = 600;
export const SEGMENT_BYTES = 1024 * 1024;
export const LMQS = ['q0', 'q1', 'q2', 'q3', 'q4'] as const;

export function lmqOf(i: number): number {
  return i % LMQS.length;
}

export function bodyBytes(batch: number, i: number): number {
  return 200 + ((batch * 7919 + i * 104_729) % 3000);
}

/** The batch and record number a body says it is, or undefined for any other body. */
export function recordOf(body: Buffer): { batch: number; i: number } | undefined {
  const match = /^b(\d+)#(\d+)\|/.exec(body.subarray(0, 32).toString('latin1'));
  return match === null ? undefined : { batch: Number(match[1]), i: Number(match[2]) };
}
