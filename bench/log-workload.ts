/**
 * The seeded commit-log workload: records of one body size spread over agent LMQs named
 * `%LMQ%$agents$t<i>__a<j>` (100 tenants × 100 agents for the suite's 10,000 LMQs), each record
 * in one LMQ drawn uniformly. Bodies are views into one random pool, so a million 1 KiB records cost
 * no gigabyte of memory while every body still differs. The same (records, bodyBytes, seed) always
 * yields the same records.
 */
import type { AppendRecord } from '../ts/index.js';
import { mulberry32 } from './workload.js';

/** Agents per tenant in the LMQ names: name i is tenant `i / AGENTS_PER_TENANT`, agent `i % AGENTS_PER_TENANT`. */
const AGENTS_PER_TENANT = 100;
/** Random bytes the bodies are cut from, in bodies: enough that neighbouring records differ. */
const POOL_BODIES = 4096;

export interface LogWorkload {
  bodyBytes: number;
  /** Every LMQ name, by index. */
  lmqs: string[];
  /** The records as `CommitLog.append` takes them. */
  records: AppendRecord[];
  /** Record i's LMQ, as an index into `lmqs` (what the peers key their queues by). */
  lmqIndex: Uint32Array;
  /** Record i's body (the same view as `records[i].body`). */
  bodies: Buffer[];
  /** Body bytes of all records: the payload that MB/s and bytes-on-disk ratios refer to. */
  payloadBytes: number;
  /** How many records each LMQ gets, by index (what a full read of it must return). */
  perLmq: Uint32Array;
}

export function lmqName(index: number): string {
  return `%LMQ%$agents$t${Math.floor(index / AGENTS_PER_TENANT)}__a${index % AGENTS_PER_TENANT}`;
}

/** A pool of seeded random bytes and a function cutting a body of `bodyBytes` from it at random. */
export function bodySource(bodyBytes: number, seed: number): () => Buffer {
  const random = mulberry32(seed);
  const pool = Buffer.allocUnsafe(bodyBytes * POOL_BODIES + bodyBytes);
  for (let i = 0; i < pool.length; i++) pool[i] = Math.floor(random() * 256);
  const span = pool.length - bodyBytes;
  return () => {
    const at = Math.floor(random() * span);
    return pool.subarray(at, at + bodyBytes);
  };
}

export function makeLogWorkload(records: number, lmqCount: number, bodyBytes: number, seed: number): LogWorkload {
  const random = mulberry32(seed);
  const nextBody = bodySource(bodyBytes, seed + 1);
  const lmqs = Array.from({ length: lmqCount }, (_, i) => lmqName(i));
  const lmqIndex = new Uint32Array(records);
  const perLmq = new Uint32Array(lmqCount);
  const bodies: Buffer[] = new Array(records);
  const list: AppendRecord[] = new Array(records);
  for (let i = 0; i < records; i++) {
    const lmq = Math.floor(random() * lmqCount);
    const body = nextBody();
    lmqIndex[i] = lmq;
    perLmq[lmq] = (perLmq[lmq] as number) + 1;
    bodies[i] = body;
    list[i] = { lmqs: [lmqs[lmq] as string], body };
  }
  return { bodyBytes, lmqs, records: list, lmqIndex, bodies, payloadBytes: records * bodyBytes, perLmq };
}

const prefixCache = new WeakMap<LogWorkload, Map<number, LogWorkload>>();

/** The first `records` records of `work` as a workload of their own (sharing its bodies), made once. */
export function prefixOf(work: LogWorkload, records: number): LogWorkload {
  if (records >= work.records.length) return work;
  let byLength = prefixCache.get(work);
  if (byLength === undefined) {
    byLength = new Map();
    prefixCache.set(work, byLength);
  }
  let prefix = byLength.get(records);
  if (prefix === undefined) {
    const lmqIndex = work.lmqIndex.slice(0, records);
    const perLmq = new Uint32Array(work.lmqs.length);
    for (const lmq of lmqIndex) perLmq[lmq] = (perLmq[lmq] as number) + 1;
    prefix = {
      bodyBytes: work.bodyBytes,
      lmqs: work.lmqs,
      records: work.records.slice(0, records),
      lmqIndex,
      bodies: work.bodies.slice(0, records),
      payloadBytes: records * work.bodyBytes,
      perLmq,
    };
    byLength.set(records, prefix);
  }
  return prefix;
}
