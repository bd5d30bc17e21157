/**
 * Failures of a commit log's background work (a checkpoint here) reach `onBackgroundError` and
 * `stats().lastBackgroundError`, on every engine; a broker turns its store's into its `'error'` event.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Broker, CommitLog, MemoryStore, type MessageStore, systemClock } from '../ts/index.js';
import { ENGINES } from './engines.js';
import { tempDir } from './log-helpers.js';

describe.each(ENGINES)('%s engine', (engine) => {
  it('reports a failed background checkpoint to onBackgroundError', async () => {
    const dir = tempDir();
    const log = await CommitLog.open(dir, { engine, checkpointBytes: 1_000 });
    try {
      // A directory where the checkpoint's temporary file goes: writing the checkpoint fails.
      mkdirSync(join(dir, 'checkpoint.tmp', 'blocked'), { recursive: true });
      const heard: string[] = [];
      log.onBackgroundError = (_error, during) => heard.push(during);
      await log.append(Array.from({ length: 20 }, (_, i) => ({ lmqs: ['%LMQ%$agents$t1'], body: `${i}`.padEnd(100) })));
      await expect.poll(() => heard).toEqual(['checkpoint']);
      expect(log.stats().lastBackgroundError).toBeDefined();
    } finally {
      await log.close().catch(() => undefined);
    }
  });
});

describe("a store's background failures", () => {
  it("become the broker's 'error' event", async () => {
    const store: MessageStore = new MemoryStore(systemClock);
    const broker = await Broker.open({ store });
    try {
      const heard: string[] = [];
      broker.on('error', (error: Error, info: { during: string }) => heard.push(`${info.during}: ${error.message}`));
      store.onBackgroundError?.(new Error('fsync failed'), 'background flush');
      expect(heard).toEqual(['store background flush: fsync failed']);
    } finally {
      await broker.close();
    }
  });
});
