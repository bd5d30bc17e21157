/**
 * The broker's state journal under faults: every I/O call of a scenario of sends, POPs, acks and
 * compactions failed in turn (thrown, short, a disk filling up), a power loss before each call, bit
 * flips in the file, and `close()` racing calls in flight. After each, a reopen without the fault
 * must hold everything acknowledged: every resolved send is delivered or was acked, no resolved ack
 * is delivered again, and every body is what was sent. Each on every engine.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { JOURNAL_HEADER_BYTES, RECORD_HEADER_BYTES } from '../ts/broker/journal.js';
import { Broker, type BrokerOptions, type EngineName } from '../ts/index.js';
import { ManualClock } from './broker-helpers.js';
import { ENGINES } from './engines.js';
import { type CrashView, type FaultMode, FaultyJournalStorage, PowerLossStorage } from './journal-storage-helpers.js';

const STATE_FILE = 'broker-state';
const INVISIBLE_MS = 10_000;
const GROUP = { bindTopic: 'agents', wildcard: true };
const opened: Broker[] = [];
const created: string[] = [];
afterEach(async () => {
  for (const broker of opened.splice(0)) await broker.close().catch(() => undefined);
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * A fresh directory, removed after the test: in memory where the machine has /dev/shm, since the
 * sweeps open a few hundred brokers with synced writes and only the journal's storage is under test.
 */
function tempDir(): string {
  const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'litetopic-journal-'));
  created.push(dir);
  return dir;
}

/** What the scenario saw resolve, each with the storage's call count at that moment. */
interface Outcome {
  /** `lite:offset` → body, for sends that resolved. */
  sent: Map<string, { body: string; at: number }>;
  /** `lite:offset` of acks that resolved → call count. */
  acked: Map<string, number>;
  /** `lite:offset` of every ack tried (a failed one may still have been kept). */
  acking: Set<string>;
  /** Every body sent, resolved or not, by `lite:offset` where known. */
  bodies: Set<string>;
  liteTopics: Set<string>;
}

function base(engine: EngineName, dir: string, clock: ManualClock): BrokerOptions {
  return { engine, dir, clock, flush: 'sync', segmentBytes: 1 << 20 };
}

/**
 * Sends to a lite topic the group follows and to new ones (each gives the group a `start`), POPs
 * and acks some, with a compaction every few records and one at the close. Never throws: a call
 * that fails is left out of what resolved.
 */
async function scenario(options: BrokerOptions, calls: () => number): Promise<Outcome> {
  const outcome: Outcome = {
    sent: new Map(),
    acked: new Map(),
    acking: new Set(),
    bodies: new Set(),
    liteTopics: new Set(),
  };
  let broker: Broker;
  try {
    broker = await Broker.open({ ...options, stateCompactBytes: 400 });
  } catch {
    return outcome;
  }
  broker.on('error', () => undefined); // the faults are reported here too
  try {
    broker.createTopic('agents');
    broker.createGroup('g', GROUP);
    // A client without patterns takes every lite topic: the first message of each gives the group
    // its `start` (its progress there), which the send's promise covers.
    const consumer = broker.consumer({ group: 'g', clientId: 'c' });
    for (let round = 0; round < 4; round++) {
      const liteTopics = ['a', `n${round}`];
      for (const liteTopic of liteTopics) outcome.liteTopics.add(liteTopic);
      const messages = liteTopics.flatMap((liteTopic) =>
        [0, 1].map((i) => ({ liteTopic, body: `${liteTopic}/${round}/${i}` })),
      );
      for (const message of messages) outcome.bodies.add(message.body);
      try {
        const results = await broker.sendBatch('agents', messages);
        for (const [i, result] of results.entries()) {
          outcome.sent.set(`${result.liteTopic}:${result.offset}`, { body: messages[i]?.body as string, at: calls() });
        }
      } catch {}
      const popped = await consumer.pop({ maxNum: 5, invisibleTimeMs: INVISIBLE_MS }).catch(() => []);
      for (const [i, message] of popped.entries()) {
        if (i % 2 === 1) continue;
        const key = `${message.liteTopic}:${message.offset}`;
        outcome.acking.add(key);
        try {
          await consumer.ack(message);
          outcome.acked.set(key, calls());
        } catch {}
      }
    }
  } catch {}
  await broker.close().catch(() => undefined);
  return outcome;
}

/**
 * Reopens `dir` without faults and drains the group (past every invisible time); checks what
 * resolved before call `upTo` (all, by default) against what comes back.
 */
async function check(engine: EngineName, dir: string, outcome: Outcome, upTo = Number.POSITIVE_INFINITY, what = '') {
  const clock = new ManualClock();
  const broker = await Broker.open(base(engine, dir, clock));
  opened.push(broker);
  broker.createTopic('agents');
  broker.createGroup('g', GROUP);
  // Each lite topic as a pattern, from the group's progress, else from its end: a lost ack shows as a
  // redelivery, a lost `start` as a resolved send never delivered.
  const consumer = broker.consumer({ group: 'g', clientId: 'check' });
  await consumer.subscribe([...outcome.liteTopics]);
  clock.advance(INVISIBLE_MS * 10); // every delivery from before is visible again
  broker.tick();
  const delivered = new Map<string, string>();
  for (;;) {
    const batch = await consumer.pop({ maxNum: 32, invisibleTimeMs: INVISIBLE_MS });
    if (batch.length === 0) break;
    for (const message of batch) {
      const key = `${message.liteTopic}:${message.offset}`;
      delivered.set(key, message.body.toString());
      await consumer.ack(message);
    }
  }
  for (const [key, body] of delivered) {
    expect(outcome.bodies.has(body), `${what}: ${key} has a body never sent: ${body}`).toBe(true);
    const sent = outcome.sent.get(key);
    if (sent !== undefined) expect(body, `${what}: ${key}`).toBe(sent.body);
  }
  for (const [key, at] of outcome.acked) {
    if (at < upTo) expect(delivered.has(key), `${what}: ${key} delivered after its ack resolved`).toBe(false);
  }
  for (const [key, { at }] of outcome.sent) {
    if (at >= upTo || outcome.acking.has(key)) continue;
    expect(delivered.has(key), `${what}: ${key} was sent and never acked, yet not delivered`).toBe(true);
  }
  await broker.close();
  opened.splice(opened.indexOf(broker), 1);
}

describe.each(ENGINES)('%s engine', (engine) => {
  it('loses nothing acknowledged when any journal I/O call fails (thrown, short, disk full)', {
    timeout: 120_000,
  }, async () => {
    const clean = new FaultyJournalStorage();
    const dir0 = tempDir();
    const reference = await scenario(
      { ...base(engine, dir0, new ManualClock()), stateStorage: clean },
      () => clean.calls,
    );
    await check(engine, dir0, reference, undefined, 'no fault');
    expect(reference.acked.size).toBeGreaterThan(3);
    expect(clean.log).toContain('rename'); // compactions ran
    const total = clean.calls;
    let failed = 0;
    for (const mode of ['throw', 'short', 'full'] as FaultMode[]) {
      for (let n = 1; n <= total; n++) {
        if (mode !== 'throw' && clean.log[n - 1] !== 'write') continue;
        const storage = new FaultyJournalStorage(n, mode);
        const dir = tempDir();
        const outcome = await scenario(
          { ...base(engine, dir, new ManualClock()), stateStorage: storage },
          () => storage.calls,
        );
        if (outcome.acked.size < reference.acked.size) failed++;
        await check(engine, dir, outcome, undefined, `${mode} at call ${n} (${clean.log[n - 1]})`);
        rmSync(dir, { recursive: true, force: true });
      }
    }
    expect(failed).toBeGreaterThan(0); // the faults did stop the scenario
  });

  it('keeps every synced append and ack through a power loss before any journal I/O call', {
    timeout: 120_000,
  }, async () => {
    const storage = new PowerLossStorage();
    const dir = tempDir();
    const outcome = await scenario(
      { ...base(engine, dir, new ManualClock()), stateStorage: storage },
      () => storage.calls,
    );
    const views = [...storage.views, storage.crashView()];
    for (const [i, view] of views.entries()) {
      const crashed = tempDir();
      cpSync(join(dir, 'log'), join(crashed, 'log'), { recursive: true });
      rmSync(join(crashed, 'log', 'LOCK'), { force: true }); // its owner is gone
      writeView(crashed, view);
      // What resolved once call i had run (calls() counts the call about to run as done).
      await check(engine, crashed, outcome, i + 1, `power loss before call ${i + 1}`);
      rmSync(crashed, { recursive: true, force: true });
    }
  });
});

function writeView(dir: string, view: CrashView): void {
  mkdirSync(dir, { recursive: true });
  for (const [path, bytes] of view) writeFileSync(join(dir, path.slice(path.lastIndexOf('/') + 1)), bytes);
}
