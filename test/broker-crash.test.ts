/**
 * Broker crash safety with real processes (issue 6): a child sends, POPs, acks and dead-letters
 * under load (a shared group and a key-shared group, lite topics expiring beside them, the state
 * journal compacting) and is killed with SIGKILL at a random moment, again and again on the same
 * directory, each time reopened by the other engine; a last child drains both groups. Then, in both
 * flush modes: every message whose send resolved reaches the end of each group (acked, or moved to
 * the dead-letter queue, where it is found), and messages are popped in offset order per lite topic
 * (per key in the key-shared group) within each run.
 *
 * Under `flush: 'sync'` an ack or move that resolved is durable: its message is never delivered
 * again, is acked once, and a message is delivered again only if it was in flight at a kill, then
 * with a higher `reconsumeTimes`; order holds across the kills too. Under `flush: 'async'` a kill
 * may lose the state of the last moments (docs/BROKER.md, "Restart"): a resolved ack may come back
 * after a kill, never within the run that acked it.
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
function run(
  dir: string,
  engine: EngineName,
  flush: 'sync' | 'async',
  mode: 'load' | 'drain',
  first: number,
  ms: number,
): Promise<string[]> {
  const args = [dir, engine, mode, String(first), String(ms), flush];
  return runFixture(fixture, args, mode === 'load' ? ms : undefined);
}

interface Line {
  kind: string;
  group: string;
  n: number;
  lite: string;
  offset: number;
  reconsume: number;
  key: string;
}

function parse(line: string): Line {
  const parts = line.split(' ');
  const kind = parts[0] as string;
  if (kind === 'S')
    return {
      kind,
      group: '',
      n: Number(parts[1]),
      lite: parts[2] as string,
      offset: Number(parts[3]),
      reconsume: 0,
      key: '',
    };
  if (kind === 'D')
    return {
      kind,
      group: 'g',
      n: Number(parts[1]),
      lite: parts[2] as string,
      offset: Number(parts[3]),
      reconsume: 0,
      key: parts[4] as string,
    };
  if (kind === 'L') return { kind, group: 'g', n: Number(parts[1]), lite: '', offset: 0, reconsume: 0, key: '' };
  const [, group, n, lite, offset, fifth, sixth] = parts;
  return {
    kind,
    group: group as string,
    n: Number(n),
    lite: lite ?? '',
    offset: Number(offset),
    reconsume: kind === 'P' ? Number(fifth) : 0,
    key: (kind === 'P' ? sixth : fifth) ?? '',
  };
}

describe.each(ENGINES)('%s engine first', (engine) => {
  const other = ENGINES.find((e) => e !== engine) ?? engine;
  it.each(['sync', 'async'] as const)(
    'every sent message reaches the end of each group across SIGKILLs under %s, reopened by the other engine',
    { timeout: 240_000 },
    async (flush) => {
      const dir = tempDir();
      const rounds: string[][] = [];
      for (let kill = 0; kill < KILLS; kill++) {
        const by = kill % 2 === 0 ? engine : other;
        rounds.push(await run(dir, by, flush, 'load', kill * 1_000_000, 300 + ((kill * 131) % 400)));
      }
      rounds.push(await run(dir, KILLS % 2 === 0 ? engine : other, flush, 'drain', 0, 0));
      expect(rounds[rounds.length - 1]?.at(-1)).toBe('done');

      const sent = new Set<number>();
      const dead = new Set<number>();
      const letters = new Set<number>();
      const stats = { redelivered: 0, ackedAgain: 0, kept: 0 };
      for (const group of ['g', 'k']) {
        const acking = new Set<number>();
        const acked = new Map<number, number>(); // n → round of its last resolved ack
        const ackCount = new Map<number, number>();
        const lastReconsume = new Map<number, number>();
        const order = new Map<string, number>(); // lite (or lite/key) → last offset popped for the first time
        const acksOf: number[][] = rounds.map(() => []); // per round, the messages acked, in order
        const lost = new Set<string>(); // `round:n`: acked in that round, delivered again after its kill
        for (const [round, lines] of rounds.entries()) {
          if (flush === 'async') order.clear(); // order holds within a run; a kill may roll back
          for (const line of lines) {
            const l = parse(line);
            if (l.kind === 'S') sent.add(l.n);
            if (l.kind === 'L') letters.add(l.n);
            if (l.group !== group) continue;
            if (l.kind === 'P') {
              const ackedIn = acked.get(l.n);
              if (ackedIn !== undefined) {
                expect(flush, `message ${l.n} delivered to ${group} after its ack resolved`).toBe('async');
                expect(ackedIn, `message ${l.n} delivered to ${group} in the run that acked it`).toBeLessThan(round);
                stats.ackedAgain++;
                lost.add(`${ackedIn}:${l.n}`);
              }
              const before = lastReconsume.get(l.n);
              if (before !== undefined) {
                stats.redelivered++;
                if (flush === 'sync') expect(l.reconsume, `message ${l.n} in round ${round}`).toBeGreaterThan(before);
              } else {
                const stream = group === 'k' ? `${l.lite}/${l.key}` : l.lite;
                expect(l.offset, `order on ${stream} in ${group}`).toBeGreaterThan(order.get(stream) ?? -1);
                order.set(stream, l.offset);
              }
              lastReconsume.set(l.n, l.reconsume);
            }
            if (l.kind === 'a') acking.add(l.n);
            if (l.kind === 'A' || l.kind === 'D') {
              acked.set(l.n, round);
              acksOf[round]?.push(l.n);
              ackCount.set(l.n, (ackCount.get(l.n) ?? 0) + 1);
              if (l.kind === 'D') dead.add(l.n);
            }
          }
        }
        // A kill loses a suffix of the journal: acks of one consumer (one after the other) that came
        // back are the last ones of their run. And only the last moments: most acks of the killed runs stay.
        for (const [round, acks] of acksOf.slice(0, KILLS).entries()) {
          const first = acks.findIndex((n) => lost.has(`${round}:${n}`));
          if (first < 0) {
            stats.kept += acks.length;
            continue;
          }
          stats.kept += first;
          for (const n of acks.slice(first))
            expect(lost.has(`${round}:${n}`), `ack of ${n} by ${group} kept after a lost one`).toBe(true);
        }
        // Every message sent reached the end: its ack resolved, or it was being acked at a kill.
        for (const n of sent) expect(acking.has(n), `message ${n} acked by ${group}`).toBe(true);
        if (flush === 'sync')
          for (const [n, count] of ackCount) expect(count, `message ${n} acked by ${group}`).toBe(1);
      }
      // A move that resolved put the message in the dead-letter queue for good.
      for (const n of dead) expect(letters.has(n), `dead letter ${n}`).toBe(true);
      expect(sent.size).toBeGreaterThan(KILLS);
      expect(dead.size).toBeGreaterThan(0);
      expect(stats.kept).toBeGreaterThan(stats.ackedAgain);
      console.info(
        `${engine}/${other} ${flush}: ${sent.size} sent, ${dead.size} dead-lettered over ${KILLS} kills; ` +
          `${stats.redelivered} redelivered after a kill, ${stats.ackedAgain} delivered again after a resolved ack, ` +
          `${stats.kept} acks kept`,
      );
    },
  );
});
