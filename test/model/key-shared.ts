/**
 * Reference bookkeeping for the key-shared model test: what was sent (offset → key), every delivery
 * seen and its fate, which clients are alive. It checks the invariants of issue 7 from the outside:
 * (I1) at most one client holds hidden unacked messages of a key, and of a bucket; (I2) per key, first
 * deliveries in offset order; (I3) at the end every message acked exactly once; (I4) a message goes
 * out again only after its invisible time ended, it was released, or its holder left.
 */
import { bucketOf, keyHash } from '../../ts/broker/key-shared.js';

interface SeenDelivery {
  client: string;
  attempt: number;
  invisibleUntil: number;
  acked: boolean;
}

export class KeySharedModel {
  /** offset → key ("" without one). */
  readonly keys: string[] = [];
  /** offset → its current delivery. */
  readonly current = new Map<number, SeenDelivery>();
  /** Per key, the offsets first-delivered so far (a prefix of the key's offsets). */
  private readonly firstDelivered = new Map<string, number>();
  readonly ackCount = new Map<number, number>();
  /** Clients alive → the clock time of their last call. */
  readonly lastSeen = new Map<string, number>();

  constructor(
    readonly buckets: number,
    readonly sessionTimeoutMs: number,
  ) {}

  sent(key: string | undefined): void {
    this.keys.push(key ?? '');
  }

  bucket(offset: number): number {
    return bucketOf(keyHash(this.keys[offset]), this.buckets);
  }

  /** Offsets of `key`, in order. */
  private offsetsOf(key: string): number[] {
    const out: number[] = [];
    this.keys.forEach((k, offset) => {
      if (k === key) out.push(offset);
    });
    return out;
  }

  /** A POP of `client` at `now` returned `messages`; throws on I2 or I4. */
  popped(
    client: string,
    now: number,
    invisibleTimeMs: number,
    messages: readonly { offset: number; key?: string; reconsumeTimes: number }[],
  ): void {
    for (const m of messages) {
      const key = this.keys[m.offset] as string;
      if ((m.key ?? '') !== key) throw new Error(`offset ${m.offset}: key ${m.key} but ${key} was sent`);
      const before = this.current.get(m.offset);
      if (m.reconsumeTimes === 0) {
        if (before !== undefined) throw new Error(`offset ${m.offset} delivered twice as a first delivery`);
        const order = this.offsetsOf(key);
        const done = this.firstDelivered.get(key) ?? 0;
        if (order[done] !== m.offset)
          throw new Error(`I2: key ${key} first-delivered ${m.offset}, expected ${order[done]}`);
        this.firstDelivered.set(key, done + 1);
      } else {
        if (before === undefined || before.attempt !== m.reconsumeTimes - 1 || before.acked) {
          throw new Error(`offset ${m.offset} redelivered with attempt ${m.reconsumeTimes} after ${before?.attempt}`);
        }
        if (before.invisibleUntil > now && this.lastSeen.has(before.client)) {
          throw new Error(
            `I4: offset ${m.offset} redelivered while hidden until ${before.invisibleUntil} (now ${now})`,
          );
        }
      }
      this.current.set(m.offset, {
        client,
        attempt: m.reconsumeTimes,
        invisibleUntil: now + invisibleTimeMs,
        acked: false,
      });
    }
  }

  /** Whether the broker must accept an ack of (offset, attempt); marks it acked. */
  ack(offset: number, attempt: number): 'accept' | 'harmless' | 'reject' {
    const d = this.current.get(offset);
    if (d === undefined || d.attempt !== attempt) return 'reject';
    if (d.acked) return 'harmless';
    d.acked = true;
    this.ackCount.set(offset, (this.ackCount.get(offset) ?? 0) + 1);
    return 'accept';
  }

  /** `changeInvisibleTime(h, 0)`: accepted for a current delivery, which becomes visible now. */
  release(offset: number, attempt: number, now: number): 'accept' | 'reject' {
    const d = this.current.get(offset);
    if (d === undefined || d.attempt !== attempt || d.acked) return 'reject';
    d.invisibleUntil = now;
    return 'accept';
  }

  /** `client` left (close or session expiry): its deliveries are released. */
  left(client: string, now: number): void {
    this.lastSeen.delete(client);
    for (const d of this.current.values())
      if (d.client === client && !d.acked) d.invisibleUntil = Math.min(d.invisibleUntil, now);
  }

  /** Clients whose session ended by `now`. */
  expired(now: number): string[] {
    return [...this.lastSeen].filter(([, seen]) => seen + this.sessionTimeoutMs <= now).map(([id]) => id);
  }

  /** I1 at `now`. */
  checkExclusive(now: number): void {
    const byKey = new Map<string, string>();
    const byBucket = new Map<number, string>();
    for (const [offset, d] of this.current) {
      if (d.acked || d.invisibleUntil <= now) continue;
      const key = this.keys[offset] as string;
      const bucket = this.bucket(offset);
      if ((byKey.get(key) ?? d.client) !== d.client)
        throw new Error(`I1: key ${key} held by ${byKey.get(key)} and ${d.client}`);
      if ((byBucket.get(bucket) ?? d.client) !== d.client) {
        throw new Error(`I1: bucket ${bucket} held by ${byBucket.get(bucket)} and ${d.client}`);
      }
      byKey.set(key, d.client);
      byBucket.set(bucket, d.client);
    }
  }

  /** I3: every offset acked exactly once. */
  checkComplete(): void {
    for (let offset = 0; offset < this.keys.length; offset++) {
      if (this.ackCount.get(offset) !== 1)
        throw new Error(`I3: offset ${offset} acked ${this.ackCount.get(offset) ?? 0} times`);
    }
  }
}
