/**
 * Crash safety with real processes: a child appends as fast as it can (four appends in flight) and is
 * killed with SIGKILL at a random moment, again and again on the same directory, alternating the
 * engine that reopens it. After each kill: every append the child saw resolve is present and intact
 * (under `sync` that is the durability promise; under `async` a process crash loses nothing either,
 * because resolved bytes are in the page cache — docs/FORMAT.md "Durability"); nothing corrupt is
 * ever returned; the log accepts new appends.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EngineName } from '../ts/index.js';
import { runFixture } from './child.js';
import { ENGINES } from './engines.js';
import { bodyFor, openLog, tempDir } from './log-helpers.js';

const fixture = join(__dirname, 'fixtures', 'log-writer.ts');
const KILLS = 6;

interface Ack {
  n: number;
  lmq: string;
  offset: number;
  length: number;
}

/** Runs the writer, kills it `ms` after it is ready; returns what it acknowledged. */
async function runAndKill(dir: string, engine: EngineName, flush: string, first: number, ms: number): Promise<Ack[]> {
  const lines = await runFixture(fixture, [dir, engine, flush, String(first), String(first + ms)], ms);
  return lines.map((line) => {
    const [n, lmq, offset, length] = line.split(' ');
    return { n: Number(n), lmq: lmq as string, offset: Number(offset), length: Number(length) };
  });
}

describe.each(ENGINES)('%s engine', (engine) => {
  const other: EngineName = ENGINES.includes('native') ? (engine === 'native' ? 'js' : 'native') : 'js';

  it.each(['sync', 'async'])(
    'keeps every acknowledged append across SIGKILLs (%s)',
    { timeout: 120_000 },
    async (flush) => {
      const dir = tempDir();
      const acked: Ack[] = [];
      let first = 0;
      for (let kill = 0; kill < KILLS; kill++) {
        const acks = await runAndKill(dir, engine, flush, first, 80 + ((kill * 97) % 300));
        acked.push(...acks);
        first += 1_000_000;
        // Reopen with the other engine on odd rounds: recovery must agree on what the log holds.
        const log = await openLog(dir, kill % 2 === 1 ? other : engine, { segmentBytes: 64 * 1024 });
        for (const ack of acked) {
          const [message] = log.read(ack.lmq, ack.offset, 1);
          expect(message?.offset).toBe(ack.offset);
          expect(message?.properties.n).toBe(String(ack.n));
          expect(message?.body.equals(bodyFor('r', ack.n, ack.length))).toBe(true);
        }
        for (const lmq of log.listLmqs().lmqs) {
          if (lmq === 'after-crash') continue;
          for (const message of log.read(lmq, 0, 65_536)) {
            const n = Number(message.properties.n);
            expect(bodyFor('r', n, message.body.length).equals(message.body)).toBe(true);
          }
        }
        await log.append([{ lmqs: ['after-crash'], body: 'still serving' }]);
        await log.close();
      }
      expect(acked.length).toBeGreaterThan(KILLS);
    },
  );
});
