/**
 * Shared by the key-shared tests: keyed sends, and the bucket a message's key falls in.
 */
import { assignBuckets, bucketOf, keyHash } from '../ts/broker/key-shared.js';
import type { Broker, Consumer, PoppedMessage } from '../ts/index.js';

/** Sends one message per key to `liteTopic`, body `<key>#<n>` where n counts that key's messages. */
export async function sendKeyed(
  broker: Broker,
  liteTopic: string,
  keys: readonly (string | undefined)[],
  counts = new Map<string, number>(),
): Promise<void> {
  const messages = keys.map((key) => {
    const name = key ?? '';
    const n = counts.get(name) ?? 0;
    counts.set(name, n + 1);
    return key === undefined ? { liteTopic, body: `#${n}` } : { liteTopic, key, body: `${key}#${n}` };
  });
  await broker.sendBatch('agents', messages);
}

export function bucketOfKey(key: string | undefined, buckets: number): number {
  return bucketOf(keyHash(key), buckets);
}

/** The owner id of each bucket of `liteTopic` for these client ids. */
export function owners(ids: readonly string[], liteTopic: string, buckets: number): (string | undefined)[] {
  const sorted = [...ids].sort();
  return Array.from(assignBuckets(sorted, liteTopic, buckets), (i) => (i < 0 ? undefined : sorted[i]));
}

/** The per-key sequence number of a body `<key>#<n>`. */
export function seq(message: PoppedMessage): number {
  const body = message.body.toString();
  return Number(body.slice(body.lastIndexOf('#') + 1));
}

export async function popAll(consumer: Consumer, maxNum = 32): Promise<PoppedMessage[]> {
  return consumer.pop({ maxNum });
}
