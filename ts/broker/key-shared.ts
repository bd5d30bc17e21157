/**
 * Key-shared consumption (docs/BROKER.md, "Key-shared groups"): a shared group may spread one lite topic over its clients by
 * message key. A key's hash `murmur3(utf8(key))` (seed 0; a message without a key has the reserved
 * key "", hash 0) keeps its low 16 bits; the 65,536 values are cut into `buckets` equal ranges, and
 * the buckets of each lite topic are dealt to the group's live clients of that lite topic by
 * rendezvous hashing of (client id, lite topic, bucket) with bounded loads. This module holds the
 * configuration, the hashing and the assignment; `key-shared-progress.ts` holds the per-topic rules.
 */

import { murmur3 } from '../common/murmur3.js';
import { InvalidArgumentError } from '../errors.js';
import type { ClientState, GroupState } from './state.js';

export const MIN_KEY_SHARED_BUCKETS = 16;
export const MAX_KEY_SHARED_BUCKETS = 1024;
export const DEFAULT_KEY_SHARED_BUCKETS = 64;
/**
 * Most messages past the group's committed offset that a key-shared lite topic examines: the bound
 * on the memory for skipped offsets (one map entry, offset → 32-bit key hash, per message).
 */
export const DEFAULT_KEY_SHARED_WINDOW_MESSAGES = 10_000;
export const MAX_KEY_SHARED_WINDOW_MESSAGES = 1_000_000;
/** Number of hash values the buckets cut: the low 16 bits of the key hash. */
const HASH_SPACE = 65_536;

/** A group's key-shared settings, as given to `createGroup` and kept in the state journal. */
export interface KeySharedConfig {
  /** A power of two from 16 to 1024. */
  buckets: number;
  /** See `DEFAULT_KEY_SHARED_WINDOW_MESSAGES`. */
  windowMessages: number;
}

/** What `createGroup` accepts under `keyShared`. */
export interface KeySharedOptions {
  /** Power of two, 16..1024; default 64. */
  buckets?: number;
  /** Messages examined past the committed offset; default 10,000. */
  windowMessages?: number;
}

/** Checked options, or undefined when the group is not key-shared. */
export function checkKeyShared(value: unknown): KeySharedConfig | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object') {
    throw new InvalidArgumentError('keyShared must be an object { buckets?, windowMessages? }', { value });
  }
  const options = value as KeySharedOptions;
  for (const key of Object.keys(options)) {
    if (key !== 'buckets' && key !== 'windowMessages')
      throw new InvalidArgumentError(`unknown keyShared option ${key}`, { value: key });
  }
  const buckets = options.buckets ?? DEFAULT_KEY_SHARED_BUCKETS;
  if (
    typeof buckets !== 'number' ||
    !Number.isInteger(buckets) ||
    buckets < MIN_KEY_SHARED_BUCKETS ||
    buckets > MAX_KEY_SHARED_BUCKETS ||
    (buckets & (buckets - 1)) !== 0
  ) {
    throw new InvalidArgumentError(
      `keyShared.buckets must be a power of two from ${MIN_KEY_SHARED_BUCKETS} to ${MAX_KEY_SHARED_BUCKETS} (got ${String(buckets)})`,
      { value: buckets },
    );
  }
  const windowMessages = options.windowMessages ?? DEFAULT_KEY_SHARED_WINDOW_MESSAGES;
  if (
    typeof windowMessages !== 'number' ||
    !Number.isInteger(windowMessages) ||
    windowMessages < 1 ||
    windowMessages > MAX_KEY_SHARED_WINDOW_MESSAGES
  ) {
    throw new InvalidArgumentError(
      `keyShared.windowMessages must be an integer from 1 to ${MAX_KEY_SHARED_WINDOW_MESSAGES} (got ${String(windowMessages)})`,
      { value: windowMessages },
    );
  }
  return { buckets, windowMessages };
}

/** `murmur3_x86_32(utf8(key), seed 0)`; no key is the reserved key "" (hash 0). */
export function keyHash(key: string | undefined): number {
  return key === undefined || key.length === 0 ? 0 : murmur3(Buffer.from(key, 'utf8'));
}

/** The bucket of a key hash: bucket b covers low-16-bit hashes [b·65536/N, (b+1)·65536/N). */
export function bucketOf(hash: number, buckets: number): number {
  return Math.floor(((hash & 0xffff) * buckets) / HASH_SPACE);
}

/**
 * Deals `buckets` buckets of `liteTopic` to `clientIds`; returns, per bucket, the index of its owner
 * in `clientIds`, or -1 with no client. Rendezvous hashing with bounded loads: every (client, bucket)
 * pair gets the score `murmur3(utf8(clientId + "\n" + liteTopic + "\n" + bucket))`; pairs are taken
 * best score first, and a pair is kept when its bucket is still free and its client holds fewer than
 * ⌊N/k⌋ buckets (or exactly that many while fewer than N mod k clients took one more). The result depends only on the set of ids (never on their order or join order),
 * every client gets ⌊N/k⌋ or ⌈N/k⌉ buckets (balance, which plain rendezvous hashing only gives on
 * average), and a join or leave moves few more buckets than the ~N/k that must move, because each
 * client keeps its best-scoring buckets: a join takes the newcomer's best buckets, and the few
 * clients left above their new share hand their worst-scoring buckets on (measured in
 * test/broker-key-shared.test.ts: at most 1.5 × N/(k+1) move). Clients beyond N get none.
 */
export function assignBuckets(clientIds: readonly string[], liteTopic: string, buckets: number): Int32Array {
  const owners = new Int32Array(buckets).fill(-1);
  const k = clientIds.length;
  if (k === 0) return owners;
  // ⌊N/k⌋ each, and the N mod k clients that first reach that many may take one more.
  const floor = Math.floor(buckets / k);
  let extra = buckets % k;
  const scores = new Float64Array(k * buckets);
  const order = new Int32Array(k * buckets);
  for (let c = 0; c < k; c++) {
    for (let b = 0; b < buckets; b++) {
      const pair = c * buckets + b;
      scores[pair] = murmur3(Buffer.from(`${clientIds[c] as string}\n${liteTopic}\n${b}`, 'utf8'));
      order[pair] = pair;
    }
  }
  const ids = clientIds;
  order.sort((x, y) => {
    const byScore = (scores[y] as number) - (scores[x] as number);
    if (byScore !== 0) return byScore;
    // Equal scores: by client id, then bucket, so the outcome never depends on the input order.
    const cx = Math.floor(x / buckets);
    const cy = Math.floor(y / buckets);
    if (cx !== cy) return (ids[cx] as string) < (ids[cy] as string) ? -1 : 1;
    return x - y;
  });
  const held = new Int32Array(k);
  let left = buckets;
  for (let i = 0; i < order.length && left > 0; i++) {
    const pair = order[i] as number;
    const c = Math.floor(pair / buckets);
    const b = pair % buckets;
    if (owners[b] !== -1) continue;
    const count = held[c] as number;
    if (count > floor || (count === floor && extra === 0)) continue;
    if (count === floor) extra--;
    owners[b] = c;
    held[c] = count + 1;
    left--;
  }
  return owners;
}

/**
 * The live clients of `group` for `liteTopic`: open, not stalled, subscribed to it (or catch-all
 * wildcard clients). Sorted by client id, so equal memberships give equal lists.
 */
export function keySharedMembers(group: GroupState, liteTopic: string): ClientState[] {
  const members: ClientState[] = [];
  const consider = (client: ClientState) => {
    if (!client.closed && !client.stalled) members.push(client);
  };
  for (const client of group.holdersOf(liteTopic) ?? []) consider(client);
  for (const client of group.catchAll) consider(client);
  members.sort((a, b) => (a.clientId < b.clientId ? -1 : a.clientId > b.clientId ? 1 : 0));
  return members;
}
