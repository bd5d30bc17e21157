/**
 * A panic in the native engine never reaches Node: the binding catches it at the boundary, on the
 * JavaScript thread and on the libuv thread pool alike (native/napi/src/guard.rs), and the caller
 * gets `InternalError` (`INTERNAL_ERROR`) with the log failed, as after an I/O failure, until it is
 * reopened. Each case runs test/fixtures/native-panic.ts in a child process with
 * LITETOPIC_TEST_PANIC_AT naming the point that panics; the child must run to its end and exit 0.
 *
 * Native only by nature: the js engine has no panics to catch (its failures are typed errors).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ENGINES } from './engines.js';

const FIXTURE = join(__dirname, 'fixtures', 'native-panic.ts');
const dirs: string[] = [];

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

interface Step {
  step: string;
  ok?: boolean;
  code?: string;
  message?: string;
  records?: number;
}

/** Runs the fixture with `point` armed; resolves with its steps once it exits 0. */
function run(point: string): Promise<Step[]> {
  const dir = mkdtempSync(join(tmpdir(), 'litetopic-panic-'));
  dirs.push(dir);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, dir, point], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LITETOPIC_TEST_PANIC_AT: point, RUST_BACKTRACE: '0' },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.on('exit', (code, signal) => {
      if (code !== 0) return reject(new Error(`the child exited with ${code ?? signal}: ${err}`));
      const lines = out.split('\n').filter((line) => line !== '');
      resolve(lines.map((line) => JSON.parse(line) as Step));
    });
  });
}

const native = ENGINES.includes('native');

describe.skipIf(!native)('a panic in the native engine', () => {
  it('while opening rejects the open with INTERNAL_ERROR; the directory opens again', async () => {
    const steps = await run('open');
    expect(steps.map((s) => [s.step, s.code ?? s.ok])).toEqual([
      ['open', 'INTERNAL_ERROR'],
      ['reopen', true],
    ]);
    expect(steps[0]?.message).toContain('LITETOPIC_TEST_PANIC_AT reached open');
  });

  // Thread-pool tasks (sync, checkpoint, file removal, segment preparation) and a call on the
  // JavaScript thread that panics while it holds the log's lock.
  it.each(['sync', 'checkpoint', 'retain', 'prepare_segment', 'list_lmqs'])(
    'at %s gives INTERNAL_ERROR, fails the log until reopened, and loses nothing appended',
    async (point) => {
      const steps = await run(point);
      expect(steps.map((s) => [s.step, s.code ?? s.ok])).toEqual([
        [point, 'INTERNAL_ERROR'],
        ['read after', 'INTERNAL_ERROR'],
        ['append after', 'INTERNAL_ERROR'],
        ['close', 'INTERNAL_ERROR'],
        ['reopen', true],
      ]);
      // Every later call names the panic that failed the log.
      for (const step of steps.slice(0, 4)) expect(step.message).toContain(`LITETOPIC_TEST_PANIC_AT reached ${point}`);
      // The fixture appends nothing when the panic is in the preparation that opening starts.
      expect(steps[4]?.records).toBe(point === 'prepare_segment' ? 0 : 3);
    },
  );

  it.each(['topic_trie_stats', 'pattern_index_stats'])(
    'in a call on a topic trie or pattern index (%s) gives INTERNAL_ERROR and fails that handle only',
    async (point) => {
      const steps = await run(point);
      expect(steps.map((s) => [s.step, s.code ?? s.ok])).toEqual([
        [point, 'INTERNAL_ERROR'],
        ['add after', 'INTERNAL_ERROR'],
        ['stats after', 'INTERNAL_ERROR'],
        ['new handle', true],
      ]);
      expect(steps[1]?.message).toContain(`LITETOPIC_TEST_PANIC_AT reached ${point}`);
    },
  );

  it('while closing rejects the close with INTERNAL_ERROR', async () => {
    const steps = await run('close');
    expect(steps.map((s) => [s.step, s.code ?? s.ok])).toEqual([['close', 'INTERNAL_ERROR']]);
  });
});
