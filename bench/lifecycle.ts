/**
 * The lifecycle suite: how long a broker directory with 10,000,000 messages over
 * 100,000 lite topics takes to reopen after SIGKILL and after a clean close, on both engines
 * (bench/lifecycle-reopen.ts); and expiry of 100,000 idle lite topics among 1,000,000 — time per
 * `runMaintenance()` sweep and send-to-pop latency while sweeping next to expiry off, in the same run
 * (bench/lifecycle-expiry.ts). `--quick`: 200,000 messages over 10,000 lite topics, expiry among 50,000.
 *
 *   npm run bench -- lifecycle [--quick]
 */

import { loadavg } from 'node:os';
import { benchSeed } from './lib.js';
import { benchExpiry, type ExpiryConfig } from './lifecycle-expiry.js';
import { printLifecycleResult } from './lifecycle-print.js';
import { benchReopen, ENGINES } from './lifecycle-reopen.js';
import type { ExpiryRow, LifecycleBenchConfig, LifecycleBenchResult, ReopenRow } from './lifecycle-result.js';
import { checkLifecycleTargets } from './lifecycle-targets.js';
import { freeBytes } from './log-disk.js';

const SEED = benchSeed(20_250_606);
const GIB = 2 ** 30;
/** What one message costs on disk, bytes (100 B body, its LMQ name, headers; measured ≈ 211 B). */
const BYTES_PER_MESSAGE = 256;
/** Preallocated segments (the active one and a spare) plus room left free. */
const DISK_OVERHEAD_BYTES = 0.5 * GIB + 2 * GIB;

function configFor(quick: boolean): LifecycleBenchConfig {
  const expiry: ExpiryConfig = quick
    ? {
        topics: 50_000,
        idle: 5000,
        loadTopics: 200,
        watchTopics: 500,
        rate: 2000,
        windowMs: 500,
        sweepEveryMs: 200,
        minWindows: 3,
        maxWindows: 12,
      }
    : {
        topics: 1_000_000,
        idle: 100_000,
        loadTopics: 1000,
        watchTopics: 1000,
        rate: 5000,
        windowMs: 1000,
        sweepEveryMs: 100,
        minWindows: 5,
        maxWindows: 60,
      };
  return quick
    ? { quick, seed: SEED, messages: 200_000, liteTopics: 10_000, expiry }
    : { quick, seed: SEED, messages: 10_000_000, liteTopics: 100_000, expiry };
}

/** Halves the message count until one engine's directory fits in the free space (one exists at a time). */
function fitDisk(config: LifecycleBenchConfig, free: number): LifecycleBenchConfig {
  const need = (messages: number) => messages * BYTES_PER_MESSAGE + DISK_OVERHEAD_BYTES;
  let messages = config.messages;
  while (messages > config.liteTopics && need(messages) > free) messages = Math.floor(messages / 2);
  if (messages === config.messages) return config;
  const scaleNote = `asked for ${config.messages.toLocaleString('en-US')} messages, but ${(free / GIB).toFixed(1)} GiB is free under os.tmpdir()`;
  return { ...config, messages, scaleNote };
}

/** Runs the lifecycle suite, prints its tables and returns the figures. */
export async function runLifecycleBench(options: { quick: boolean }): Promise<LifecycleBenchResult> {
  const config = fitDisk(configFor(options.quick), freeBytes());
  const loadBefore = loadavg()[0] as number;
  console.log(
    `\n# lifecycle${config.quick ? ' (quick)' : ''}: seed ${SEED}; reopen with ${config.messages.toLocaleString('en-US')} messages over ` +
      `${config.liteTopics.toLocaleString('en-US')} lite topics; expiry of ${config.expiry.idle.toLocaleString('en-US')} idle ` +
      `among ${config.expiry.topics.toLocaleString('en-US')} lite topics; engines ${ENGINES.join(', ')}`,
  );
  if (config.scaleNote) console.log(`scaled down: ${config.scaleNote}`);
  const reopen: ReopenRow[] = [];
  for (const engine of ENGINES) {
    console.log(`reopen, ${engine}: writing`);
    const rows = await benchReopen(engine, config.messages, config.liteTopics, config.seed);
    reopen.push(...rows);
    for (const r of rows) {
      const outcome = r.error === undefined ? `${r.openMs.toFixed(0)} ms` : `failed: ${r.error}`;
      console.log(`  ${engine}, ${r.shutdown === 'kill' ? 'after SIGKILL' : 'clean'}: Broker.open ${outcome}`);
    }
  }
  printLifecycleResult({ config, reopen });
  const expiry: ExpiryRow[] = [];
  for (const engine of ENGINES) {
    console.log(`expiry, ${engine}: writing`);
    const row = await benchExpiry(engine, config.expiry);
    expiry.push(row);
    console.log(
      `  ${engine}: ${row.sweeps} sweeps, ${row.expired.toLocaleString('en-US')} expired` +
        (row.error === undefined ? '' : `; failed: ${row.error.split('\n')[0]}`),
    );
  }
  printLifecycleResult({ config, expiry });
  const targets = checkLifecycleTargets(reopen, expiry);
  config.loadAverage = [loadBefore, loadavg()[0] as number];
  console.log(`\nload average (1 min): ${config.loadAverage.map((l) => l.toFixed(1)).join(' before, ')} after`);
  printLifecycleResult({ config, targets });
  return { config, reopen, expiry, targets };
}
