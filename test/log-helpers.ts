/**
 * Shared by the commit-log tests: temporary directories that are removed after each test, a manual
 * clock, deterministic record contents (so a reader can check a body knowing only its LMQ and
 * offset), and small file surgery for corruption tests.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { CommitLog, type CommitLogOptions, type EngineName } from '../ts/index.js';

export { bodyFor } from './log-body.js';

const created: string[] = [];
const opened: CommitLog[] = [];

afterEach(async () => {
  for (const log of opened.splice(0)) await log.close().catch(() => undefined);
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fresh directory, removed after the test. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'litetopic-log-'));
  created.push(dir);
  return dir;
}

/** Opens a log that is closed after the test if the test does not close it. */
export async function openLog(dir: string, engine: EngineName, options: CommitLogOptions = {}): Promise<CommitLog> {
  const log = await CommitLog.open(dir, { engine, ...options });
  opened.push(log);
  return log;
}

export class ManualClock {
  constructor(public ms = 1_700_000_000_000) {}
  now(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

export function segmentFiles(dir: string): string[] {
  return readdirSync(join(dir, 'segments'))
    .filter((name) => name.endsWith('.seg'))
    .sort()
    .map((name) => join(dir, 'segments', name));
}

/** Flips one bit of the byte at `at` in `file`. */
export function flipByte(file: string, at: number): void {
  const bytes = readFileSync(file);
  bytes[at] = (bytes[at] as number) ^ 0x10;
  writeFileSync(file, bytes);
}

/** Every file below `dir` with a hash of its bytes: what "unchanged" means for a directory. */
export function directoryDigest(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const path = join(dir, name);
    if (statSync(path).isFile()) out[name] = createHash('sha256').update(readFileSync(path)).digest('hex');
  }
  return out;
}
