/**
 * Broker crash safety with real processes (issue 6): a child sends, POPs and acks under
 * `flush: 'sync'` and is killed with SIGKILL at a random moment, again and again on the same
 * directory; a last child drains the group. Then: every message whose send resolved is acked, and
 * no message is acked twice (an ack that resolved is durable, so its message is never delivered
 * again); a message is delivered again only if it was in flight (popped, not acked) at a kill, and
 * then with a higher `reconsumeTimes`; acks follow offset order per lite topic (FIFO across restarts).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EngineName } from '../ts/index.js';
import { tempDir } from './broker-helpers.js';
import { runFixture } from './child.js';
import { ENGINES } from './engines.js';

const fixture = join(__dirname, 'fixtures', 'broker-worker.ts');
const KILLS = 5;

/** Runs the worker; in `load` mode kills it `ms` after it is ready. Returns its complete lines. */
function run(dir: string, engine: EngineName, mode: 'load' | 'drain', first: number, ms: number): Promise<string[]> {
  return runFixture(fixture, [dir, engine, mode, String(first), String(ms)], mode === 'load' ? ms : undefined);
}

describe.each(ENGINES)('%s engine', (engine) => {
  it('acks every sent message exactly once across SIGKILLs under sync', { timeout: 180_000 }, async () => {
    const dir = tempDir();
    const rounds: string[][] = [];
    for (let kill = 0; kill < KILLS; kill++) {
      rounds.push(await run(dir, engine, 'load', kill * 1_000_000, 300 + ((kill * 131) % 400)));
    }
    rounds.push(await run(dir, engine, 'drain', 0, 0));
    expect(rounds[rounds.length - 1]?.at(-1)).toBe('done');

    const sent = new Set<number>();
    const acking = new Set<number>();
    const acks = new Map<number, number>();
    const lastAck = new Map<string, number>();
    const lastReconsume = new Map<number, number>();
    let redeliveredAfterKill = 0;
    let ackedAtKill = 0;
    for (const [round, lines] of rounds.entries()) {
      for (const line of lines) {
        const [kind, nText, lite, offsetText, reconsumeText] = line.split(' ');
        const n = Number(nText);
        const offset = Number(offsetText);
        if (kind === 'S') sent.add(n);
        if (kind === 'P') {
          expect(acks.has(n), `message ${n} delivered after its ack resolved`).toBe(false);
          const reconsume = Number(reconsumeText);
          const before = lastReconsume.get(n);
          if (before !== undefined) {
            // Delivered again: only after a kill (invisible times outlast a round), with a higher count.
            expect(reconsume, `message ${n} in round ${round}`).toBeGreaterThan(before);
            redeliveredAfterKill++;
            if (acking.has(n)) ackedAtKill--; // its ack was cut by the kill before it was durable
          }
          lastReconsume.set(n, reconsume);
        }
        if (kind === 'a') {
          acking.add(n);
          ackedAtKill++;
        }
        if (kind === 'A') {
          acks.set(n, (acks.get(n) ?? 0) + 1);
          ackedAtKill--;
          expect(offset, `FIFO on ${lite}`).toBeGreaterThan(lastAck.get(lite as string) ?? -1);
          lastAck.set(lite as string, offset);
        }
      }
    }
    // Every message sent was acked: its ack resolved, or it was being acked at a kill and never came back.
    for (const n of sent) expect(acking.has(n), `message ${n} acked`).toBe(true);
    for (const [n, count] of acks) expect(count, `message ${n} acked`).toBe(1);
    expect(sent.size).toBeGreaterThan(KILLS);
    console.info(
      `${engine}: ${sent.size} sent and acked once each over ${KILLS} kills; ${redeliveredAfterKill} redelivered ` +
        `after a kill; ${ackedAtKill} acks durable but cut from the output by a kill`,
    );
  });
});
