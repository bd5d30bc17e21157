/**
 * Key-shared groups (docs/BROKER.md, "Key-shared groups"): hash vectors, the bucket assignment's balance and
 * stability, single client ≡ plain FIFO, join under load, leave and crash, stuck clients and keys,
 * late acks, nacks and dead letters, flapping ownership, more clients than buckets, bounded memory
 * and admin, on every engine with a manual clock. Restart: broker-key-shared-restart.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { assignBuckets, bucketOf, keyHash } from '../ts/broker/key-shared.js';
import type { Broker, Consumer, PoppedMessage } from '../ts/index.js';
import { bodies, openBroker } from './broker-helpers.js';
import { bucketOfKey, owners, sendKeyed, seq } from './broker-key-shared-helpers.js';
import { ENGINES } from './engines.js';

const HOT = 'hot';

function keyOf(message: PoppedMessage): string {
  return message.key ?? '';
}

async function ackAll(consumer: Consumer, messages: readonly PoppedMessage[]): Promise<void> {
  for (const message of messages) await consumer.ack(message);
}

/** Keys `k0..k<n-1>`, `rounds` times over. */
function keys(n: number, rounds = 1): string[] {
  return Array.from({ length: n * rounds }, (_, i) => `k${i % n}`);
}

async function keySharedBroker(engine: Parameters<typeof openBroker>[0], buckets = 16, options = {}) {
  const test = await openBroker(engine, options);
  test.broker.createGroup('g', { bindTopic: 'agents', subModel: 'shared', keyShared: { buckets } });
  return test;
}

async function join(broker: Broker, clientId: string, liteTopic = HOT): Promise<Consumer> {
  const consumer = broker.consumer({ group: 'g', clientId });
  await consumer.subscribe([liteTopic], { offset: { policy: 'min' } });
  return consumer;
}

/** A key-shared group of 16 buckets with clients `a` and `b` on the hot lite topic. */
async function twoClients(engine: Parameters<typeof openBroker>[0], options = {}) {
  const test = await keySharedBroker(engine, 16, options);
  return { ...test, a: await join(test.broker, 'a'), b: await join(test.broker, 'b') };
}

/** Checks first deliveries per key come in sequence order, and returns how often each body came. */
class Ledger {
  readonly firstSeen = new Map<string, number>();
  readonly deliveries = new Map<string, number>();
  record(messages: readonly PoppedMessage[]): void {
    for (const message of messages) {
      const body = message.body.toString();
      this.deliveries.set(body, (this.deliveries.get(body) ?? 0) + 1);
      if (message.reconsumeTimes > 0) continue;
      const last = this.firstSeen.get(keyOf(message)) ?? -1;
      expect(seq(message), `first deliveries of ${keyOf(message)} in order`).toBe(last + 1);
      this.firstSeen.set(keyOf(message), seq(message));
    }
  }
  get duplicates(): number {
    let extra = 0;
    for (const count of this.deliveries.values()) extra += count - 1;
    return extra;
  }
}

/**
 * POPs clients `a` and `b` (of a 16-bucket group on HOT) in turn until both come back empty, at most
 * `rounds` times, recording every batch and acking each message through its bucket's owner.
 */
async function drainPair(a: Consumer, b: Consumer, ledger: Ledger, rounds: number): Promise<void> {
  const owner = owners(['a', 'b'], HOT, 16);
  for (let round = 0; round < rounds; round++) {
    const batch = [...(await a.pop({ maxNum: 32 })), ...(await b.pop({ maxNum: 32 }))];
    if (batch.length === 0) return;
    ledger.record(batch);
    for (const m of batch) await (owner[bucketOfKey(m.key, 16)] === 'a' ? a : b).ack(m);
  }
}

describe('hash and buckets', () => {
  it('hashes keys with murmur3_x86_32 (seed 0) and cuts the low 16 bits into equal ranges', () => {
    const vectors: [string, number, number][] = [
      ['hello', 0x248bfa47, 64071],
      ['a', 0x3c2569b2, 27058],
      ['key-0', 0xe337f8bf, 63679],
      ['', 0, 0],
    ];
    for (const [key, raw, low] of vectors) {
      expect(keyHash(key)).toBe(raw);
      expect(keyHash(key) & 0xffff).toBe(low);
    }
    expect(keyHash(undefined)).toBe(0);
    // Bucket b covers [b·65536/N, (b+1)·65536/N).
    expect(bucketOf(64071, 64)).toBe(Math.floor((64071 * 64) / 65536));
    expect(bucketOf(0, 16)).toBe(0);
    expect(bucketOf(4095, 16)).toBe(0);
    expect(bucketOf(4096, 16)).toBe(1);
    expect(bucketOf(0xffff, 1024)).toBe(1023);
    expect(bucketOf(0x1_0000, 16)).toBe(0); // only the low 16 bits count
  });

  for (const buckets of [64, 256]) {
    for (const k of [2, 3, 4, 8]) {
      it(`deals ${buckets} buckets to ${k} clients: one owner each, join order irrelevant, balanced`, () => {
        const ids = Array.from({ length: k }, (_, i) => `client-${i}`);
        const dealt = owners(ids, HOT, buckets);
        expect(dealt.every((owner) => owner !== undefined)).toBe(true);
        expect(owners([...ids].reverse(), HOT, buckets)).toEqual(dealt);
        expect(owners([ids[k - 1] as string, ...ids.slice(0, k - 1)], HOT, buckets)).toEqual(dealt);
        const counts = new Map<string, number>();
        for (const owner of dealt) counts.set(owner as string, (counts.get(owner as string) ?? 0) + 1);
        for (const id of ids) {
          expect(counts.get(id)).toBeGreaterThanOrEqual(Math.floor(buckets / k));
          expect(counts.get(id)).toBeLessThanOrEqual(Math.ceil(buckets / k));
        }
        // 10,000 uniform keys: each client's share of messages.
        const share = new Map<string, number>();
        for (let i = 0; i < 10_000; i++) {
          const owner = dealt[bucketOfKey(`key-${i}`, buckets)] as string;
          share.set(owner, (share.get(owner) ?? 0) + 1);
        }
        if (buckets >= 16 * k) {
          for (const id of ids) expect(Math.abs((share.get(id) as number) / (10_000 / k) - 1)).toBeLessThan(0.15);
        }
        // A join moves about 1/(k+1) of the buckets, a leave about 1/k: never many more.
        const joined = owners([...ids, 'client-new'], HOT, buckets);
        const movedOnJoin = joined.filter((owner, b) => owner !== dealt[b]).length;
        expect(movedOnJoin).toBeLessThanOrEqual(Math.ceil((1.5 * buckets) / (k + 1)));
        // Most of them go to the newcomer; bounded loads pass a few on between the others.
        const toNew = joined.filter((owner) => owner === 'client-new').length;
        expect(toNew).toBeGreaterThanOrEqual(Math.floor(buckets / (k + 1)));
        if (k > 1) {
          const left = owners(ids.slice(1), HOT, buckets);
          const movedOnLeave = left.filter((owner, b) => owner !== dealt[b]).length;
          expect(movedOnLeave).toBeLessThanOrEqual(Math.ceil((1.5 * buckets) / k));
        }
      });
    }
  }

  it('leaves clients beyond the bucket count idle', () => {
    const ids = Array.from({ length: 20 }, (_, i) => `c${i}`);
    const dealt = assignBuckets(ids, HOT, 16);
    expect(new Set(dealt).size).toBe(16);
    expect([...dealt].every((i) => i >= 0)).toBe(true);
  });
});

describe.each(ENGINES)('%s engine', (engine) => {
  it('checks the options: buckets a power of two from 16 to 1024, shared groups only', async () => {
    const { broker } = await openBroker(engine);
    for (const buckets of [8, 48, 2048, 0, 1.5, '64']) {
      expect(() =>
        broker.createGroup('bad', { bindTopic: 'agents', keyShared: { buckets: buckets as number } }),
      ).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
    expect(() => broker.createGroup('bad', { bindTopic: 'agents', subModel: 'exclusive', keyShared: {} })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
    broker.createGroup('ok', { bindTopic: 'agents', keyShared: {} });
    expect(broker.admin.groupInfo('ok').keyShared).toEqual({ buckets: 64, windowMessages: 10_000, withheld: [] });
    expect(() => broker.createGroup('ok', { bindTopic: 'agents', keyShared: { buckets: 128 } })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
    expect(() => broker.createGroup('ok', { bindTopic: 'agents' })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
    broker.createGroup('ok', { bindTopic: 'agents', keyShared: { buckets: 64 } });
  });

  it.each([16, 1024])('with a single client behaves as plain FIFO (%i buckets)', async (buckets) => {
    const { broker, advance } = await openBroker(engine);
    broker.createGroup('plain', { bindTopic: 'agents' });
    broker.createGroup('ks', { bindTopic: 'agents', keyShared: { buckets } });
    const plain = broker.consumer({ group: 'plain', clientId: 'p' });
    const ks = broker.consumer({ group: 'ks', clientId: 'k' });
    for (const c of [plain, ks]) await c.subscribe([HOT], { offset: { policy: 'min' } });
    const mixed = Array.from({ length: 100 }, (_, i) => (i % 7 === 0 ? undefined : `k${(i * 13) % 11}`));
    await sendKeyed(broker, HOT, mixed);
    for (;;) {
      const p = await plain.pop({ maxNum: 16 });
      const k = await ks.pop({ maxNum: 16 });
      expect(bodies(k)).toEqual(bodies(p));
      if (p.length === 0) break;
      await ackAll(plain, p);
      await ackAll(ks, k);
    }
    // One key (no keys at all): also the same blocking and redelivery as plain FIFO.
    await sendKeyed(
      broker,
      HOT,
      Array.from({ length: 10 }, () => undefined),
    );
    const p1 = await plain.pop({ maxNum: 4, invisibleTimeMs: 1000 });
    const k1 = await ks.pop({ maxNum: 4, invisibleTimeMs: 1000 });
    expect(bodies(k1)).toEqual(bodies(p1));
    expect(await ks.pop()).toEqual([]);
    expect(await plain.pop()).toEqual([]);
    advance(1000);
    const p2 = await plain.pop({ maxNum: 8 });
    const k2 = await ks.pop({ maxNum: 8 });
    expect(bodies(k2)).toEqual(bodies(p2));
    expect(k2.map((m) => m.reconsumeTimes)).toEqual(p2.map((m) => m.reconsumeTimes));
    expect(broker.admin.groupInfo('ks', { liteTopic: HOT }).liteTopic?.committedOffset).toBe(
      broker.admin.groupInfo('plain', { liteTopic: HOT }).liteTopic?.committedOffset,
    );
  });

  it('spreads one hot lite topic over its clients by key: each gets only its buckets, keys in order', async () => {
    const { broker } = await keySharedBroker(engine, 16);
    const ids = ['a', 'b', 'c', 'd'];
    const consumers = new Map<string, Consumer>();
    for (const id of ids) consumers.set(id, await join(broker, id));
    const dealt = owners(ids, HOT, 16);
    await sendKeyed(broker, HOT, keys(200, 3));
    const ledger = new Ledger();
    const got = new Map<string, number>();
    for (let round = 0; round < 100; round++) {
      let any = false;
      for (const [id, consumer] of consumers) {
        const batch = await consumer.pop({ maxNum: 8 });
        ledger.record(batch);
        for (const m of batch) expect(dealt[bucketOfKey(m.key, 16)]).toBe(id);
        got.set(id, (got.get(id) ?? 0) + batch.length);
        any ||= batch.length > 0;
        await ackAll(consumer, batch);
      }
      if (!any) break;
    }
    expect(ledger.deliveries.size).toBe(600);
    expect(ledger.duplicates).toBe(0);
    for (const id of ids) expect(got.get(id)).toBeGreaterThan(60);
    expect(broker.admin.groupInfo('g').totalLag).toBe(0);
    const info = broker.admin.clientInfo('g', 'a');
    expect(info?.keySharedBuckets).toEqual([
      { liteTopic: HOT, buckets: dealt.flatMap((owner, b) => (owner === 'a' ? [b] : [])) },
    ]);
  });

  it('join under load: only the computed buckets move, each waits for its drain, then flows in order', async () => {
    const { broker } = await keySharedBroker(engine, 16);
    const a = await join(broker, 'a');
    await sendKeyed(broker, HOT, keys(64, 2));
    const ledger = new Ledger();
    const held = await a.pop({ maxNum: 32, invisibleTimeMs: 60_000 });
    ledger.record(held);
    expect(held).toHaveLength(32);
    const b = await join(broker, 'b');
    const after = owners(['a', 'b'], HOT, 16);
    const moved = after.flatMap((owner, bucket) => (owner === 'b' ? [bucket] : []));
    expect(moved.length).toBe(8);
    const heldBuckets = new Set(held.map((m) => bucketOfKey(m.key, 16)));
    const withheld = moved.filter((bucket) => heldBuckets.has(bucket));
    expect(broker.admin.groupInfo('g').keyShared?.withheld).toEqual(
      withheld.map((bucket) => ({ liteTopic: HOT, bucket, owner: 'b', holder: 'a' })),
    );
    expect(broker.admin.clientInfo('g', 'b')?.keySharedBuckets).toEqual([{ liteTopic: HOT, buckets: moved }]);
    // B gets the moved buckets A holds nothing of; A keeps only its own buckets.
    const fromB = await b.pop({ maxNum: 32 });
    ledger.record(fromB);
    for (const m of fromB) {
      expect(after[bucketOfKey(m.key, 16)]).toBe('b');
      expect(withheld).not.toContain(bucketOfKey(m.key, 16));
    }
    const fromA = await a.pop({ maxNum: 32 });
    ledger.record(fromA);
    for (const m of fromA) expect(after[bucketOfKey(m.key, 16)]).toBe('a');
    // A acks what it held of one withheld bucket at a time; that bucket then flows to B.
    for (const bucket of withheld) {
      expect((await b.pop({ maxNum: 32 })).filter((m) => bucketOfKey(m.key, 16) === bucket)).toEqual([]);
      await ackAll(
        a,
        held.filter((m) => bucketOfKey(m.key, 16) === bucket),
      );
      const next = await b.pop({ maxNum: 32 });
      ledger.record(next);
      expect(next.some((m) => bucketOfKey(m.key, 16) === bucket)).toBe(true);
      await ackAll(b, next);
    }
    expect(broker.admin.groupInfo('g').keyShared?.withheld).toEqual([]);
    await ackAll(
      a,
      held.filter((m) => !withheld.includes(bucketOfKey(m.key, 16))),
    );
    await ackAll(a, fromA);
    await ackAll(b, fromB);
    for (const c of [a, b, a, b]) {
      const rest = await c.pop({ maxNum: 32 });
      ledger.record(rest);
      await ackAll(c, rest);
    }
    expect(ledger.deliveries.size).toBe(128);
    expect(ledger.duplicates).toBe(0);
    expect(broker.admin.groupInfo('g').totalLag).toBe(0);
  });

  it('a graceful leave redelivers what the leaver held to the new owners at once, in order', async () => {
    const { broker, a, b } = await twoClients(engine);
    await sendKeyed(broker, HOT, keys(40, 3));
    const ledger = new Ledger();
    const heldByA = await a.pop({ maxNum: 20, invisibleTimeMs: 60_000 });
    ledger.record(heldByA);
    const fromB = await b.pop({ maxNum: 20 });
    ledger.record(fromB);
    await ackAll(b, fromB);
    await a.close();
    const again: PoppedMessage[] = [];
    for (let round = 0; round < 20; round++) {
      const batch = await b.pop({ maxNum: 32 });
      if (batch.length === 0) break;
      ledger.record(batch);
      again.push(...batch);
      await ackAll(b, batch);
    }
    // Every held message came back before anything newer of its key.
    for (const m of heldByA) {
      const redelivered = again.findIndex((x) => x.body.toString() === m.body.toString());
      expect(again[redelivered]?.reconsumeTimes).toBe(1);
      const newer = again.findIndex((x) => keyOf(x) === keyOf(m) && seq(x) > seq(m));
      if (newer >= 0) expect(redelivered).toBeLessThan(newer);
    }
    expect(ledger.deliveries.size).toBe(120);
    expect(ledger.duplicates).toBe(heldByA.length);
    expect(broker.admin.groupInfo('g').totalLag).toBe(0);
  });

  it('a crashed client: its session ends, its buckets and held messages go to the others in order', async () => {
    const { broker, advance, a, b } = await twoClients(engine, { sessionTimeoutMs: 10_000 });
    await sendKeyed(broker, HOT, keys(40, 3));
    const ledger = new Ledger();
    const heldByA = await a.pop({ maxNum: 20, invisibleTimeMs: 60_000 });
    ledger.record(heldByA);
    // A crashes: no more calls. B keeps working and heartbeating.
    for (let t = 0; t < 12; t++) {
      const batch = await b.pop({ maxNum: 32 });
      ledger.record(batch);
      await ackAll(b, batch);
      advance(1000);
    }
    expect(broker.admin.clientInfo('g', 'a')).toBeNull();
    for (let round = 0; round < 20; round++) {
      const batch = await b.pop({ maxNum: 32 });
      if (batch.length === 0) break;
      ledger.record(batch);
      await ackAll(b, batch);
    }
    expect(ledger.deliveries.size).toBe(120);
    expect(ledger.duplicates).toBe(heldByA.length);
    expect(broker.admin.groupInfo('g').totalLag).toBe(0);
  });

  it('a stuck client blocks a moved bucket no longer than its invisible time; its late ack is rejected', async () => {
    const { broker, advance } = await keySharedBroker(engine, 16);
    const a = await join(broker, 'a');
    await sendKeyed(broker, HOT, keys(64, 2));
    const held = [
      ...(await a.pop({ maxNum: 32, invisibleTimeMs: 5000 })),
      ...(await a.pop({ maxNum: 32, invisibleTimeMs: 5000 })),
    ];
    const b = await join(broker, 'b');
    const after = owners(['a', 'b'], HOT, 16);
    const movedHeld = held.filter((m) => after[bucketOfKey(m.key, 16)] === 'b');
    expect(movedHeld.length).toBeGreaterThan(0);
    const before = await b.pop({ maxNum: 32 });
    for (const m of before) expect(movedHeld.map(keyOf)).not.toContain(keyOf(m));
    await ackAll(b, before);
    advance(5000);
    const redelivered = [...(await b.pop({ maxNum: 32 })), ...(await b.pop({ maxNum: 32 }))];
    for (const m of movedHeld) {
      const again = redelivered.find((x) => x.body.toString() === m.body.toString());
      expect(again?.reconsumeTimes).toBe(1);
    }
    // A wakes up and acks: too late, B holds those messages now.
    await expect(a.ack(movedHeld[0] as PoppedMessage)).rejects.toMatchObject({ code: 'INVALID_RECEIPT' });
    // An expired key-shared delivery cannot be hidden again either (it may belong to another client).
    const stillA = held.find((m) => after[bucketOfKey(m.key, 16)] === 'a') as PoppedMessage;
    await expect(a.changeInvisibleTime(stillA, 1000)).rejects.toMatchObject({ code: 'INVALID_RECEIPT' });
    await ackAll(b, redelivered);
  });

  it('a nack (invisible time 0) goes again before newer messages of its key; dead-lettering unblocks the key', async () => {
    const { broker } = await openBroker(engine);
    broker.createGroup('g', { bindTopic: 'agents', keyShared: { buckets: 16 }, maxReconsumeTimes: 1 });
    const c = await join(broker, 'c');
    await sendKeyed(broker, HOT, ['x', 'y', 'x', 'y', 'x']);
    const first = await c.pop({ maxNum: 1 });
    expect(bodies(first)).toEqual(['x#0']);
    // x is blocked behind x#0; y flows.
    const second = await c.pop({ maxNum: 32 });
    expect(bodies(second)).toEqual(['y#0', 'y#1']);
    await c.changeInvisibleTime(first[0] as PoppedMessage, 0);
    const third = await c.pop({ maxNum: 32 });
    expect(bodies(third)).toEqual(['x#0', 'x#1', 'x#2']);
    expect(third[0]?.reconsumeTimes).toBe(1);
    await c.changeInvisibleTime(third[0] as PoppedMessage, 0);
    await ackAll(c, third.slice(1));
    // x#0 would exceed maxReconsumeTimes: it goes to the dead-letter queue and x goes on.
    expect(await c.pop({ maxNum: 32 })).toEqual([]);
    await broker.runMaintenance();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(broker.readDeadLetters('g').map((d) => d.body.toString())).toEqual(['x#0']);
    await ackAll(c, second);
    expect(broker.admin.groupInfo('g').totalLag).toBe(0);
  });

  it('regression (model): a key hidden past another delivery deadline is woken when it ends', async () => {
    const { broker, advance } = await keySharedBroker(engine, 16);
    const c = await join(broker, 'c');
    await sendKeyed(broker, HOT, [undefined, undefined]);
    const both = await c.pop({ maxNum: 2, invisibleTimeMs: 100 });
    await c.changeInvisibleTime(both[0] as PoppedMessage, 0);
    expect(bodies(await c.pop({ maxNum: 1, invisibleTimeMs: 5000 }))).toEqual(['#0']);
    advance(1000);
    expect(await c.pop()).toEqual([]); // #1 expired, but waits behind #0 (same key)
    advance(4000);
    const again = await c.pop();
    expect(again.map((m) => [m.body.toString(), m.reconsumeTimes])).toEqual([
      ['#0', 2],
      ['#1', 1],
    ]);
  });

  it('a stuck key does not slow the other keys down', async () => {
    const rounds = async (stuck: boolean) => {
      const { broker, advance, a, b } = await twoClients(engine);
      await sendKeyed(broker, HOT, keys(50, 8));
      let others = 0;
      let steps = 0;
      while (others < 50 * 8 - (stuck ? 8 : 0) && steps < 200) {
        steps++;
        for (const c of [a, b]) {
          const batch = await c.pop({ maxNum: 8, invisibleTimeMs: 3000 });
          for (const m of batch) {
            if (stuck && keyOf(m) === 'k7') continue; // never acked: expires, comes back, forever
            await c.ack(m);
            others += 1;
          }
        }
        advance(100);
      }
      return steps;
    };
    const free = await rounds(false);
    const blocked = await rounds(true);
    // The same number of POP rounds drains every other key (ratio 1; 10% slack).
    expect(free / blocked).toBeGreaterThanOrEqual(0.9);
  });

  it('flapping ownership A→B→A never deadlocks and delivers every message once per holder change', async () => {
    const { broker } = await keySharedBroker(engine, 16);
    let a = await join(broker, 'a');
    const b = await join(broker, 'b');
    await sendKeyed(broker, HOT, keys(30, 4));
    const ledger = new Ledger();
    for (let flap = 0; flap < 6; flap++) {
      const fromA = await a.pop({ maxNum: 6 });
      const fromB = await b.pop({ maxNum: 6 });
      ledger.record(fromA);
      ledger.record(fromB);
      await ackAll(b, fromB);
      await ackAll(a, fromA.slice(0, 3));
      await a.close(); // A's rest goes back to B at once
      a = await join(broker, 'a');
    }
    for (let round = 0; round < 50; round++) {
      const batch = [...(await a.pop({ maxNum: 32 })), ...(await b.pop({ maxNum: 32 }))];
      if (batch.length === 0) break;
      ledger.record(batch);
      for (const m of batch) await (owners(['a', 'b'], HOT, 16)[bucketOfKey(m.key, 16)] === 'a' ? a : b).ack(m);
    }
    expect(ledger.deliveries.size).toBe(120);
    expect(broker.admin.groupInfo('g').totalLag).toBe(0);
  });

  it('with more clients than buckets the extra clients stay idle and everything is delivered', async () => {
    const { broker } = await keySharedBroker(engine, 16);
    const clients: Consumer[] = [];
    for (let i = 0; i < 20; i++) clients.push(await join(broker, `c${String(i).padStart(2, '0')}`));
    await sendKeyed(broker, HOT, keys(300));
    const ledger = new Ledger();
    let busy = 0;
    for (const c of clients) {
      const batch = await c.pop({ maxNum: 32 });
      const rest = await c.pop({ maxNum: 32 });
      ledger.record([...batch, ...rest]);
      if (batch.length > 0) busy++;
      await ackAll(c, [...batch, ...rest]);
    }
    expect(busy).toBeLessThanOrEqual(16);
    for (const c of clients) {
      const more = await c.pop({ maxNum: 32 });
      ledger.record(more);
      await ackAll(c, more);
    }
    expect(ledger.deliveries.size).toBe(300);
    expect(broker.admin.groupInfo('g').totalLag).toBe(0);
  });

  it('acks out of order across buckets over a large backlog: one holder per key, order per key, each once', async () => {
    const { broker } = await keySharedBroker(engine, 16);
    const clients = [await join(broker, 'a'), await join(broker, 'b'), await join(broker, 'c')];
    const total = 6000;
    await sendKeyed(broker, HOT, keys(400, total / 400));
    const ledger = new Ledger();
    const holder = new Map<string, { client: number; count: number }>();
    const held: { client: number; message: PoppedMessage }[] = [];
    let random = 7;
    const draw = (n: number) => {
      random = (random * 1_103_515_245 + 12_345) % 2 ** 31;
      return random % n;
    };
    for (let round = 0; round < 2000 && ledger.deliveries.size < total; round++) {
      for (let i = 0; i < clients.length; i++) {
        const batch = await (clients[i] as Consumer).pop({ maxNum: 1 + draw(24) });
        ledger.record(batch);
        for (const message of batch) {
          const h = holder.get(keyOf(message));
          expect(h === undefined || h.client === i, `${keyOf(message)} held by one client`).toBe(true);
          holder.set(keyOf(message), { client: i, count: (h?.count ?? 0) + 1 });
          held.push({ client: i, message });
        }
      }
      // Ack a random part of what is held, in random order, across clients and buckets.
      for (let n = draw(held.length + 1); n > 0; n--) {
        const [{ client, message }] = held.splice(draw(held.length), 1) as [(typeof held)[number]];
        await (clients[client] as Consumer).ack(message);
        const h = holder.get(keyOf(message)) as { client: number; count: number };
        if (--h.count === 0) holder.delete(keyOf(message));
      }
    }
    for (const { client, message } of held) await (clients[client] as Consumer).ack(message);
    expect(ledger.deliveries.size).toBe(total);
    expect(ledger.duplicates).toBe(0);
    expect(broker.admin.groupInfo('g').totalLag).toBe(0);
  });

  it('redelivers expired messages first for their keys, deep in a large backlog, then goes on', async () => {
    const { broker, advance, a, b } = await twoClients(engine);
    await sendKeyed(broker, HOT, keys(500, 10));
    const ledger = new Ledger();
    // Let the window move deep into the backlog first, then `a` holds a batch it never acks.
    for (let i = 0; i < 20; i++) {
      for (const c of [a, b]) {
        const batch = await c.pop({ maxNum: 32 });
        ledger.record(batch);
        await ackAll(c, batch);
      }
    }
    const lost = await a.pop({ maxNum: 32, invisibleTimeMs: 1000 });
    ledger.record(lost);
    expect(lost).toHaveLength(32);
    for (let i = 0; i < 10; i++) {
      const batch = await b.pop({ maxNum: 32 });
      ledger.record(batch);
      await ackAll(b, batch);
    }
    advance(1000);
    const lostKeys = new Set(lost.map(keyOf));
    const again = [...(await a.pop({ maxNum: 32 })), ...(await a.pop({ maxNum: 32 }))];
    ledger.record(again);
    // Every expired message comes again, each before anything newer of its key.
    const redelivered = again.filter((m) => m.reconsumeTimes === 1).map((m) => m.body.toString());
    expect(redelivered.sort()).toEqual(lost.map((m) => m.body.toString()).sort());
    for (const key of lostKeys) {
      const ofKey = again.filter((m) => keyOf(m) === key);
      const firstNew = ofKey.findIndex((m) => m.reconsumeTimes === 0);
      if (firstNew >= 0) expect(ofKey.slice(firstNew).every((m) => m.reconsumeTimes === 0)).toBe(true);
    }
    await ackAll(a, again);
    await drainPair(a, b, ledger, 200);
    expect(ledger.deliveries.size).toBe(5000);
    expect(ledger.duplicates).toBe(32);
    expect(broker.admin.groupInfo('g').totalLag).toBe(0);
  });

  it('a key stuck on a large backlog holds only itself; it resumes in order when its message comes back', async () => {
    const { broker, advance, a, b } = await twoClients(engine);
    const sent = Array.from({ length: 3000 }, (_, i) => (i % 3 === 0 ? `k${i % 200}` : 'stuck'));
    await sendKeyed(broker, HOT, sent);
    const owner = owners(['a', 'b'], HOT, 16)[bucketOfKey('stuck', 16)] === 'a' ? a : b;
    const ledger = new Ledger();
    const drain = () => drainPair(a, b, ledger, 400);
    const stuck = await owner.pop({ maxNum: 1, invisibleTimeMs: 1000 });
    expect(bodies(stuck)).toEqual(['stuck#0']);
    ledger.record(stuck);
    // Every other key flows, the stuck key's bucket included; nothing newer of the stuck key.
    await drain();
    expect(ledger.deliveries.size).toBe(1001);
    advance(1000);
    const again = await owner.pop({ maxNum: 32 });
    expect(bodies(again).slice(0, 2)).toEqual(['stuck#0', 'stuck#1']);
    expect(again[0]?.reconsumeTimes).toBe(1);
    ledger.record(again);
    await ackAll(owner, again);
    await drain();
    expect(ledger.deliveries.size).toBe(3000);
    expect(broker.admin.groupInfo('g').totalLag).toBe(0);
  });

  it('bounds the window of skipped offsets; a blocked key holds it until its invisible time ends', async () => {
    const { broker, advance } = await openBroker(engine);
    broker.createGroup('g', { bindTopic: 'agents', keyShared: { buckets: 16, windowMessages: 8 } });
    const c = await join(broker, 'c');
    await sendKeyed(broker, HOT, ['stuck', ...keys(20)]);
    const first = await c.pop({ maxNum: 1, invisibleTimeMs: 1000 });
    expect(bodies(first)).toEqual(['stuck#0']);
    // Seven more fit in the window past the unacked offset 0; the rest waits.
    const batch = await c.pop({ maxNum: 32 });
    expect(batch).toHaveLength(7);
    await ackAll(c, batch);
    expect(await c.pop({ maxNum: 32 })).toEqual([]);
    advance(1000);
    const again = await c.pop({ maxNum: 32 });
    expect(bodies(again)[0]).toBe('stuck#0');
    await ackAll(c, again);
    // Once it is acked the window moves on, eight messages at a time.
    expect(bodies(again)).toEqual(['stuck#0']);
    const rest = await c.pop({ maxNum: 32 });
    expect(rest).toHaveLength(8);
    await ackAll(c, rest);
    expect(await c.pop({ maxNum: 32 })).toHaveLength(5);
  });
});
