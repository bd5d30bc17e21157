/**
 * A batch that meets a real full disk part way through its write, on every engine, in both forms of
 * append (`appendBodies`, which the native engine writes 256 KiB at a time, and `append` of records
 * with keys and properties). The writer runs in a child process on a tmpfs of its own
 * (test/fixtures/log-full-disk.ts, in a user and mount namespace), copies its directory out, and the
 * copy is reopened here with each engine, with and without `repair`.
 *
 * What holds: the batch rejects with `IO_ERROR`, and the failed log refuses every later read, append
 * and close with it; after a reopen every acknowledged record is there, byte for byte, followed by
 * the records of the rejected batch that reached the disk before it filled: a whole prefix of the
 * batch, each record identical to what was given, the same for both engines and both `repair`
 * settings, and the log appends after it. A rejected batch is therefore not "none": as when the next
 * segment cannot be prepared (docs/FORMAT.md, "Durability"), what was written before the failure
 * stays stored, and a retry stores it again. Through a broker the same holds for a rejected
 * `sendBatch` (docs/BROKER.md, "Restart"): after a restart its group receives every acknowledged
 * message and then that prefix of the rejected batch, in order and intact, and nothing else.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Broker, type EngineName } from '../ts/index.js';
import { runFixture } from './child.js';
import { ENGINES } from './engines.js';
import { ACKED, BODY_BYTES, BROKER_GROUP, BROKER_TOPIC, DISK_BYTES, FAILED, LMQ } from './log-full-disk-batch.js';
import { bodyFor, openLog, tempDir } from './log-helpers.js';

const FIXTURE = join(__dirname, 'fixtures', 'log-full-disk.ts');
const SEGMENT_BYTES = 4 * 1024 * 1024;

/** Whether this host lets an unprivileged process mount a tmpfs in namespaces of its own. */
function tmpfsAvailable(): boolean {
  const probe = spawnSync('unshare', ['-rm', 'sh', '-c', 'mount -t tmpfs -o size=64k tmpfs "$1"', 'probe', tempDir()], {
    stdio: 'ignore',
  });
  return probe.status === 0;
}

const AVAILABLE = tmpfsAvailable();
if (!AVAILABLE)
  console.warn('\n*** no user and mount namespaces here (unshare -rm): the full-disk tests are skipped ***\n');

/** Runs the fixture on a fresh tmpfs; resolves to its steps (`{ step: outcome }`) and the copied directory. */
async function writeOnFullDisk(
  engine: EngineName,
  form: 'bodies' | 'append' | 'broker',
): Promise<{ steps: Record<string, string | number>; dir: string }> {
  const mount = tempDir();
  const copy = join(tempDir(), 'copy');
  const script = `mount -t tmpfs -o size=${DISK_BYTES} tmpfs "$1" && shift && exec "$@"`;
  const lines = await runFixture(FIXTURE, [mount, engine, form, copy], undefined, [
    'unshare',
    '-rm',
    'sh',
    '-c',
    script,
    'sh',
    mount,
  ]);
  const steps = Object.assign({}, ...lines.map((line) => JSON.parse(line) as object));
  return { steps, dir: copy };
}

/** A copy of `dir` to open, so that one open's cut does not change what the next one sees. */
function copyOf(dir: string): string {
  const copy = join(tempDir(), 'log');
  mkdirSync(copy);
  cpSync(dir, copy, { recursive: true });
  return copy;
}

/** How many records of the rejected batch the LMQ holds after the acknowledged ones, each checked. */
function storedOfFailed(bodies: readonly Buffer[]): number {
  for (let n = 0; n < ACKED; n++) expect(bodies[n]?.equals(bodyFor('acked', n, BODY_BYTES)), `acked ${n}`).toBe(true);
  const failed = bodies.slice(ACKED);
  for (const [n, body] of failed.entries()) {
    expect(body.equals(bodyFor('failed', n, BODY_BYTES)), `record ${n} of the rejected batch`).toBe(true);
  }
  return failed.length;
}

describe.runIf(AVAILABLE).each(ENGINES)('written by %s on a full disk', (writer) => {
  it.each([
    { form: 'bodies', call: 'appendBodies' },
    { form: 'append', call: 'append' },
  ] as const)(
    '$call: a batch rejected part way keeps what it wrote before the failure whole, on every reopen',
    { timeout: 20_000 },
    async ({ form }) => {
      const { steps, dir } = await writeOnFullDisk(writer, form);
      expect(steps.acked).toBe(ACKED);
      // The system's error, on both engines (a short write is continued until the disk says why).
      for (const step of ['failedBatch', 'readAfter', 'appendAfter', 'close']) {
        expect(String(steps[step]), step).toBe('IO_ERROR ENOSPC');
      }
      const seen = new Set<number>();
      for (const reader of ENGINES) {
        for (const repair of [false, true]) {
          const log = await openLog(copyOf(dir), reader, { segmentBytes: SEGMENT_BYTES, repair });
          expect(log.stats().recovery.corruption).toBeNull();
          const read = log.read(LMQ, 0, 65_536);
          expect(read.map((message) => message.offset)).toEqual(read.map((_, i) => i));
          const stored = storedOfFailed(read.map((message) => message.body));
          seen.add(stored);
          const [after] = await log.append([{ lmqs: [LMQ], body: 'after' }]);
          expect(after?.offsets).toEqual([ACKED + stored]);
          await log.close();
        }
      }
      // Every reopen sees the same records, and they are some of the batch: the disk filled part way.
      expect(seen.size).toBe(1);
      const [stored] = [...seen] as [number];
      expect(stored).toBeGreaterThan(0);
      expect(stored).toBeLessThan(FAILED);
    },
  );
});

describe.runIf(AVAILABLE).each(ENGINES)('a broker on %s on a full disk', (writer) => {
  it('delivers every acknowledged message and then a whole prefix of a rejected sendBatch, after a restart', {
    timeout: 30_000,
  }, async () => {
    const { steps, dir } = await writeOnFullDisk(writer, 'broker');
    expect(steps.acked).toBe(ACKED);
    expect(String(steps.failedBatch)).toBe('IO_ERROR ENOSPC');
    const seen = new Set<number>();
    for (const reader of ENGINES) {
      const broker = await Broker.open({ engine: reader, dir: copyOf(dir), flush: 'sync' });
      try {
        const consumer = broker.consumer({ group: BROKER_GROUP, clientId: 'c' });
        await consumer.subscribe([LMQ]);
        const delivered: Buffer[] = [];
        for (
          let batch = await consumer.pop({ maxNum: 32 });
          batch.length > 0;
          batch = await consumer.pop({ maxNum: 32 })
        ) {
          for (const message of batch) {
            expect(message.liteTopic).toBe(LMQ);
            expect(message.offset, `read by ${reader}`).toBe(delivered.length);
            delivered.push(message.body);
            await consumer.ack(message);
          }
        }
        seen.add(storedOfFailed(delivered));
        // The broker keeps serving: a new send is stored after what the restart found.
        const [sent] = await broker.sendBatch(BROKER_TOPIC, [{ liteTopic: LMQ, body: 'after' }]);
        expect(sent?.offset).toBe(delivered.length);
      } finally {
        await broker.close();
      }
    }
    // Both engines deliver the same messages from the same directory: some of the rejected batch
    // (the disk filled part way through it), not all.
    expect(seen.size).toBe(1);
    const [stored] = [...seen] as [number];
    expect(stored).toBeGreaterThan(0);
    expect(stored).toBeLessThan(FAILED);
  });
});
