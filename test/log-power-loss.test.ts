/**
 * The js engine's power-loss sweep: the scenario of test/log-sweep.ts runs on a storage that
 * records what each call made durable (test/log-power-model.ts), and is cut by a power loss at each
 * of its I/O calls in turn. From there on every call fails; the directory is then replaced by what a
 * power loss could leave on disk, in several ways, and reopened (with each engine in turn) against
 * the model of acknowledged records. The native engine's power-loss sweep is
 * native/core/src/log/tests/power.rs.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SEGMENT_HEADER_BYTES } from '../ts/common/limits.js';
import { encodeBatch } from '../ts/common/log-encode.js';
import { openJsLog } from '../ts/engine/js/log/log.js';
import { segmentFileName } from '../ts/engine/js/log/segment.js';
import { CommitLog } from '../ts/index.js';
import { ENGINES, RUN_TESTS_WITHOUT_NATIVE } from './engines.js';
import { ALL, type Disk, describeLoss, LOSSES, type Loss, materialize, PowerStorage } from './log-power-model.js';
import { innerStorage, removeDir, runScenario, type Scenario, SEGMENT, sweepDir, verify } from './log-sweep.js';

/** Runs `scenario` with the power lost at call `n`; the problems found, one per kind of loss of `losses`. */
async function powerCase(scenario: Scenario, n: number, losses: readonly Loss[]): Promise<string[]> {
  const dir = sweepDir();
  const problems: string[] = [];
  try {
    const storage = new PowerStorage(n, dir, innerStorage(scenario));
    const model = await runScenario(dir, storage, scenario);
    const disk = storage.crashed;
    if (disk === undefined) return problems;
    // Losses that leave the same files (nothing was pending of what they differ in) are checked once.
    const seen = new Set<string>();
    for (const [k, loss] of losses.entries()) {
      const files = disk.after(loss);
      const digest = createHash('sha256');
      for (const [path, bytes] of [...files].sort(([a], [b]) => (a < b ? -1 : 1))) digest.update(path).update(bytes);
      const key = digest.digest('hex');
      if (seen.has(key)) continue;
      seen.add(key);
      const image = materialize(dir, files);
      try {
        const engine = ENGINES[(n + k) % ENGINES.length] as (typeof ENGINES)[number];
        const why = await verify(image, model, engine);
        if (why !== undefined) {
          problems.push(`${scenario}, power lost at call ${n}, ${describeLoss(loss)}, ${engine}: ${why}`);
        }
      } finally {
        removeDir(image);
      }
    }
  } finally {
    removeDir(dir);
  }
  return problems;
}

/** Every power loss of `losses` at every call of `scenario`; the problems found. */
async function sweep(scenario: Scenario, losses: readonly Loss[]): Promise<string[]> {
  const dir = sweepDir();
  let calls: number;
  try {
    const storage = new PowerStorage(0, dir, innerStorage(scenario));
    const model = await runScenario(dir, storage, scenario);
    expect(await verify(dir, model, 'js')).toBeUndefined();
    calls = storage.calls;
  } finally {
    removeDir(dir);
  }
  const problems: string[] = [];
  for (let n = 1; n <= calls; n++) problems.push(...(await powerCase(scenario, n, losses)));
  return problems;
}

describe.runIf(RUN_TESTS_WITHOUT_NATIVE)('js commit log power-loss sweep', () => {
  it('models the disk: without a power loss the directory holds everything', async () => {
    const dir = sweepDir();
    try {
      const storage = new PowerStorage(0, dir);
      const model = await runScenario(dir, storage);
      expect(storage.calls).toBeGreaterThan(50);
      expect(await verify(dir, model, 'js')).toBeUndefined();
    } finally {
      removeDir(dir);
    }
  });

  it('loses no acknowledged record and returns no bad one wherever the power is lost', {
    timeout: 180_000,
  }, async () => {
    expect(await sweep('whole', LOSSES)).toEqual([]);
  });

  it('loses no acknowledged record and returns no bad one wherever the power is lost, work running at once', {
    timeout: 180_000,
  }, async () => {
    expect(await sweep('concurrent', LOSSES)).toEqual([]);
  });

  it('loses no acknowledged record after a crash wherever the power is lost, directory changes kept', {
    timeout: 180_000,
  }, async () => {
    const losses = LOSSES.filter((loss) => loss.entries === ALL);
    expect(await sweep('afterCrash', losses)).toEqual([]);
  });

  // Recovery cuts the torn record at the end of the log: it removes the spare segment after it, then
  // truncates the cut segment to the cut and extends it back (log-recovery.ts `replayAndCut`), and
  // syncs the directory only after both. A power loss that keeps the truncation but not the removal
  // (call 13, the extension, never made; no order between the two is promised without a sync)
  // leaves a short segment followed by another, and the next open fails with LogCorruptError. So
  // recovery makes the removal of the later segments durable (`syncDir`) before it truncates.
  it('loses no acknowledged record after a crash wherever the power is lost, directory changes lost', {
    timeout: 180_000,
  }, async () => {
    const losses = LOSSES.filter((loss) => loss.entries !== ALL);
    expect(await sweep('afterCrash', losses)).toEqual([]);
  });
});

describe.each(ENGINES)('js log cut by recovery, reopened with %s', (engine) => {
  // A repair cuts the log at a corrupt record and removes the segment files after it; records
  // appended after the cut fill its segment, are synced (acknowledged) and complete it with an end
  // marker; the power goes before the next segment is created. The removed segments must not come
  // back: their old records would be replayed after the complete segment, restarting the LMQ ahead
  // of the acknowledged records.
  it('keeps a segment removed by a cut removed across a power loss', async () => {
    const dir = sweepDir();
    let image: string | undefined;
    try {
      const now = 1_700_000_000_000;
      const body = (byte: number, length: number) => Buffer.alloc(length, byte);
      const first = await openJsLog(dir, { segmentBytes: SEGMENT, nowMs: now, readOnly: false, repair: false });
      const old = encodeBatch(
        Array.from({ length: 40 }, (_, i) => ({ lmqs: ['q'], body: body(i, 300) })),
        now,
        SEGMENT - SEGMENT_HEADER_BYTES,
      );
      for (let from = 0; from < old.count; ) {
        from = first.append(old, from, now);
        if (from < old.count) await first.prepareSegment(now);
      }
      await first.close();
      const positions = [...old.positions];
      expect(positions.some((position) => Math.floor(position / SEGMENT) === 2)).toBe(true);
      const corrupt = positions.filter((position) => Math.floor(position / SEGMENT) === 1)[3] as number;
      const file = join(dir, 'segments', segmentFileName(SEGMENT));
      const bytes = readFileSync(file);
      bytes[(corrupt % SEGMENT) + 40] = (bytes[(corrupt % SEGMENT) + 40] as number) ^ 0x10;
      writeFileSync(file, bytes);

      // Damage with valid records after it: a plain open refuses it, a repair cuts it.
      const storage = new PowerStorage(0, dir);
      const log = await openJsLog(dir, { segmentBytes: SEGMENT, nowMs: now, readOnly: false, repair: true }, storage);
      expect(log.stats().recovery.removedSegments).toBeGreaterThan(0);
      // Larger records than before, so the old ones after the cut do not happen to continue them.
      const more = encodeBatch(
        Array.from({ length: 20 }, (_, i) => ({ lmqs: ['q'], body: body(100 + i, 600) })),
        now,
        SEGMENT - SEGMENT_HEADER_BYTES,
      );
      const done = log.append(more, 0, now);
      expect(done).toBeLessThan(20);
      await log.sync();
      const acked = [...more.offsets.subarray(0, done)];
      storage.cutPower();
      await log.close().catch(() => undefined);

      image = materialize(dir, (storage.crashed as Disk).after(LOSSES[0] as Loss));
      const reopened = await CommitLog.open(image, { engine, segmentBytes: SEGMENT });
      try {
        const offsets = reopened.read('q', 0, 1000).map((message) => message.offset);
        for (const offset of acked) expect(offsets).toContain(offset);
      } finally {
        await reopened.close();
      }
    } finally {
      removeDir(dir);
      if (image !== undefined) removeDir(image);
    }
  });
});
