/**
 * Crash safety of `appendBodies` with real processes: a child appends batches of body-only records,
 * each several times the native engine's 256 KiB part and crossing segment rolls, and is killed with
 * SIGKILL part way, again on the same directory, the engines taking turns to reopen it. After each
 * kill: every batch the child saw resolve is there whole and byte for byte; every record there is one
 * the child gave, in its LMQ at the next offset; of each batch the log holds a prefix, and in each run
 * only the last batch it holds may be cut short (the writes are in order, so a kill leaves one cut).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CommitLog, EngineName } from '../ts/index.js';
import { runFixture } from './child.js';
import { ENGINES } from './engines.js';
import { bodyBytes, LMQS, lmqOf, RECORDS, recordOf, SEGMENT_BYTES } from './log-bodies-crash-batch.js';
import { bodyFor, openLog, tempDir } from './log-helpers.js';

const fixture = join(__dirname, 'fixtures', 'log-bodies-writer.ts');
const KILLS = 3;
/** Batch numbers of one run of the writer start at a multiple of this. */
const RUN_BATCHES = 1_000_000;

/**
 * How many records of each batch the log holds, each checked against what was given (the problems
 * found are added to `problems`, one line each, not asserted one by one: there are tens of thousands).
 */
function recordsByBatch(log: CommitLog, problems: string[]): Map<number, number> {
  const held = new Map<number, number>();
  const highest = new Map<number, number>();
  for (const [lmq, name] of LMQS.entries()) {
    let last = -1;
    let lastBatch = -1;
    for (let from = 0; ; ) {
      const read = log.read(name, from, 65_536);
      if (read.length === 0) break;
      for (const message of read) {
        const where = `${name} offset ${message.offset}`;
        if (message.offset !== from++) problems.push(`${where}: expected offset ${from - 1}`);
        const record = recordOf(message.body);
        if (record === undefined) {
          problems.push(`${where}: a body no batch has`);
          continue;
        }
        const { batch, i } = record;
        if (lmqOf(i) !== lmq) problems.push(`${where}: b${batch}#${i} belongs to another LMQ`);
        if (!message.body.equals(bodyFor(`b${batch}`, i, bodyBytes(batch, i))))
          problems.push(`${where}: b${batch}#${i} differs`);
        if (!(batch > lastBatch || (batch === lastBatch && i > last))) problems.push(`${where}: out of write order`);
        [lastBatch, last] = [batch, i];
        held.set(batch, (held.get(batch) ?? 0) + 1);
        highest.set(batch, Math.max(highest.get(batch) ?? 0, i));
      }
    }
  }
  // Of each batch a prefix: its records from the first, none missing.
  for (const [batch, count] of held) {
    if (highest.get(batch) !== count - 1) problems.push(`batch ${batch}: ${count} records, not its first ${count}`);
  }
  return held;
}

describe.each(ENGINES)('%s engine', (engine) => {
  const other: EngineName = ENGINES.includes('native') ? (engine === 'native' ? 'js' : 'native') : 'js';

  it('keeps every acknowledged body batch across SIGKILLs, and a prefix of the one cut', {
    timeout: 60_000,
  }, async () => {
    const dir = tempDir();
    const acked: number[] = [];
    for (let kill = 0; kill < KILLS; kill++) {
      const first = kill * RUN_BATCHES;
      const lines = await runFixture(fixture, [dir, engine, String(first)], 150 + kill * 120);
      acked.push(...lines.map(Number));
      const log = await openLog(dir, kill % 2 === 1 ? other : engine, { segmentBytes: SEGMENT_BYTES });
      const problems: string[] = [];
      const held = recordsByBatch(log, problems);
      expect(problems).toEqual([]);
      for (const batch of acked) expect(held.get(batch), `acknowledged batch ${batch}`).toBe(RECORDS);
      for (let run = 0; run <= kill; run++) {
        const batches = [...held.keys()].filter((b) => Math.floor(b / RUN_BATCHES) === run).sort((a, b) => a - b);
        // The batches of a run are there from its first on, all whole but its last.
        expect(batches).toEqual(batches.map((_, k) => run * RUN_BATCHES + k));
        for (const batch of batches.slice(0, -1)) expect(held.get(batch), `batch ${batch}`).toBe(RECORDS);
      }
      await log.close();
    }
    expect(acked.length).toBeGreaterThan(0);
  });
});
