/**
 * The js engine's fault sweep: the scenario of test/log-sweep.ts runs once to count its I/O calls,
 * then once per call with that call failing (`CountingStorage`: an EIO, a short write, or a disk
 * that fails for good from there), going on as a user would. Each run's directory is then reopened
 * with each engine in turn, and checked against the model: every acknowledged record is there and
 * byte-identical, every record read is one that was appended at the offset it was given, no LMQ
 * went back, and the log takes a new append. The native engine's own sweep is in
 * native/core/src/log/tests/faults.rs (its storage is injected from Rust).
 */
import { mkdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SEGMENT_HEADER_BYTES } from '../ts/common/limits.js';
import { encodeBatch } from '../ts/common/log-encode.js';
import type { EncodedBatch } from '../ts/engine/contract.js';
import { openJsLog } from '../ts/engine/js/log/log.js';
import { CountingStorage, type Fault } from '../ts/engine/js/log/storage.js';
import { LogIoError } from '../ts/errors.js';
import { CommitLog } from '../ts/index.js';
import { ENGINES, RUN_TESTS_WITHOUT_NATIVE } from './engines.js';
import {
  crashedHalf,
  innerStorage,
  type Model,
  removeDir,
  runScenario,
  type Scenario,
  SEGMENT,
  sweepDir,
  verify,
} from './log-sweep.js';

const SCENARIOS: readonly Scenario[] = ['whole', 'afterCrash', 'concurrent'];

/** Runs `scenario` failing call `n`; the problem found, if any. */
async function sweepCase(
  scenario: Scenario,
  n: number,
  fault: Fault,
  persistent: boolean,
): Promise<string | undefined> {
  const dir = sweepDir();
  try {
    const storage = new CountingStorage(n, fault, persistent, innerStorage(scenario));
    const model = await runScenario(dir, storage, scenario);
    const engine = ENGINES[n % ENGINES.length] as (typeof ENGINES)[number];
    const why = await verify(dir, model, engine);
    const kind = storage.kinds[n - 1] ?? 'none';
    return why === undefined
      ? undefined
      : `${scenario}, call ${n} (${kind}, ${fault}, persistent ${persistent}): ${why}`;
  } finally {
    removeDir(dir);
  }
}

/** An unfaulted run's calls, by kind. */
async function countCalls(scenario: Scenario = 'whole'): Promise<string[]> {
  const dir = sweepDir();
  try {
    const storage = new CountingStorage(0, 'fail', false, innerStorage(scenario));
    const model = await runScenario(dir, storage, scenario);
    expect(await verify(dir, model, 'js')).toBeUndefined();
    return storage.kinds;
  } finally {
    removeDir(dir);
  }
}

describe.runIf(RUN_TESTS_WITHOUT_NATIVE)('js commit log fault sweep', () => {
  it('runs a scenario that rolls segments, deletes LMQs, checkpoints, retains and acknowledges records', async () => {
    const dir = sweepDir();
    try {
      const model: Model = await runScenario(dir, new CountingStorage(0));
      expect(model.acknowledged).toBeGreaterThan(40);
      expect(model.lmqs.get('b')?.generation).toBe(1);
      expect(model.lmqs.get('c')?.generation).toBe(1);
      expect([...model.lmqs.values()].some((state) => state.floor > 0)).toBe(true);
      for (const engine of ENGINES) expect(await verify(dir, model, engine)).toBeUndefined();
    } finally {
      removeDir(dir);
    }
    const crashed = sweepDir();
    try {
      await crashedHalf(crashed);
      const log = await openJsLog(crashed, { segmentBytes: SEGMENT, nowMs: 1, readOnly: false, repair: false });
      expect(log.stats().recovery).toMatchObject({ removedSegments: 1 });
      expect(log.stats().recovery.cutPosition).toBeGreaterThan(0);
      await log.close();
    } finally {
      removeDir(crashed);
    }
    const kinds = new Set(await countCalls());
    for (const kind of [
      'create',
      'open',
      'write',
      'writeAsync',
      'truncate',
      'datasync',
      'rename',
      'unlink',
      'syncDir',
    ]) {
      expect(kinds, kind).toContain(kind);
    }
  });

  it.each(SCENARIOS)(
    'loses no acknowledged record and returns no bad one whichever single call fails (%s)',
    { timeout: 120_000 },
    async (scenario) => {
      const kinds = await countCalls(scenario);
      const problems: string[] = [];
      for (let n = 1; n <= kinds.length + 1; n++) {
        const failed = await sweepCase(scenario, n, 'fail', false);
        if (failed !== undefined) problems.push(failed);
        if (kinds[n - 1] === 'write' || kinds[n - 1] === 'writeAsync') {
          const torn = await sweepCase(scenario, n, 'tear', false);
          if (torn !== undefined) problems.push(torn);
        }
      }
      expect(problems).toEqual([]);
    },
  );

  it.each(SCENARIOS)(
    'loses no acknowledged record and returns no bad one when the disk fails for good (%s)',
    { timeout: 120_000 },
    async (scenario) => {
      const kinds = await countCalls(scenario);
      const problems: string[] = [];
      for (let n = 1; n <= kinds.length + 1; n++) {
        const write = kinds[n - 1] === 'write' || kinds[n - 1] === 'writeAsync';
        const failed = await sweepCase(scenario, n, write ? 'tear' : 'fail', true);
        if (failed !== undefined) problems.push(failed);
      }
      expect(problems).toEqual([]);
    },
  );
});

describe.each(ENGINES)('js retention with a failed removal, reopened with %s', (engine) => {
  it('leaves no gap in the segment files for the next retention to make', async () => {
    const dir = sweepDir();
    try {
      const now = 1_700_000_000_000;
      /** Two retentions, the first one's first removal failing (call `failAt`; 0 fails none). */
      const retireTwice = async (failAt: number): Promise<number> => {
        const storage = new CountingStorage(failAt);
        const log = await openJsLog(
          dir,
          { segmentBytes: SEGMENT, nowMs: now, readOnly: false, repair: false },
          storage,
        );
        const batch = (from: number) =>
          encodeBatch(
            Array.from({ length: 40 }, (_, i) => ({ lmqs: ['q'], body: Buffer.alloc(300, from + i) })),
            now,
            SEGMENT - SEGMENT_HEADER_BYTES,
          );
        const appendAll = async (records: EncodedBatch) => {
          for (let from = 0; from < records.count; ) {
            from = log.append(records, from, now);
            if (from < records.count) await log.prepareSegment(now);
          }
        };
        await appendAll(batch(0));
        const before = storage.calls;
        const first = log.retain(-1, 2 * SEGMENT);
        if (failAt === 0) await first;
        else await expect(first).rejects.toThrow(LogIoError);
        await appendAll(batch(40));
        await log.retain(-1, 2 * SEGMENT);
        await log.close();
        return before;
      };
      const before = await retireTwice(0);
      removeDir(dir);
      mkdirSync(dir);
      // The first counted call of the first retention is its first removal.
      await retireTwice(before + 1);
      const log = await CommitLog.open(dir, { engine, segmentBytes: SEGMENT });
      try {
        expect(log.maxOffset('q')).toBe(80);
        expect(log.read('q', 0, 100).at(-1)?.offset).toBe(79);
      } finally {
        await log.close();
      }
    } finally {
      removeDir(dir);
    }
  });
});
