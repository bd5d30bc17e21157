/**
 * The programs in examples/ run as a user runs them: `node examples/<name>.mjs` against the built
 * package (they import `litetopic`, which resolves to this package's dist/ through its own
 * `exports`), on each engine, and exit 0. `run-handler` runs until SIGINT, which the test sends.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './cli-helpers.js';
import { ENGINES } from './engines.js';

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs an example; `interruptOn`: send SIGINT once stdout shows this text. */
function runExample(name: string, engine: string, interruptOn?: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'examples', `${name}.mjs`)], {
      cwd: ROOT,
      env: { ...process.env, LITETOPIC_ENGINE: engine },
    });
    let stdout = '';
    let stderr = '';
    let interrupted = false;
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (interruptOn !== undefined && !interrupted && stdout.includes(interruptOn)) {
        interrupted = true;
        // Let it work a moment first, so the shutdown has handlers running and messages fetched.
        setTimeout(() => child.kill('SIGINT'), 300);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

describe('examples', () => {
  it('run against the built package', () => {
    expect(existsSync(join(ROOT, 'dist', 'index.mjs')), 'dist/ is built by npm test before vitest').toBe(true);
  });

  describe.each(ENGINES)('%s engine', (engine) => {
    it('pop-loop receives and acks every message, in order per lite topic', async () => {
      const run = await runExample('pop-loop', engine);
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('received and acked 6 messages');
      for (const conversation of ['user1__conv1', 'user1__conv2', 'user2__conv1']) {
        const lines = run.stdout.split('\n').filter((line) => line.startsWith(`${conversation} #`));
        expect(lines).toEqual([
          `${conversation} #0: ${conversation}: hello`,
          `${conversation} #1: ${conversation}: how are you?`,
        ]);
      }
    });

    it('run-handler stops cleanly on SIGINT after a retry, leaving nothing hidden', async () => {
      const run = await runExample('run-handler', engine, 'running; press Ctrl-C to stop');
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('retrying job 3: temporary failure');
      const summary = /stopped cleanly: sent (\d+), handled (\d+), left for the next run (\d+)/.exec(run.stdout);
      expect(summary).not.toBeNull();
      const [sent, handled, left] = (summary as RegExpExecArray).slice(1).map(Number) as [number, number, number];
      expect(handled).toBeGreaterThan(0);
      expect(handled + left).toBeLessThanOrEqual(sent);
    });

    it('wildcard receives exactly the lite topics its patterns match', async () => {
      const run = await runExample('wildcard', engine);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('and received tenant1__agent1, tenant1__agent2__session9, tenant2__agent1__error');
    });

    it('key-shared hands each key its messages in order', async () => {
      const run = await runExample('key-shared', engine);
      expect(run.code).toBe(0);
      for (const key of ['alice', 'bob', 'carol', 'dave', 'erin', 'frank']) {
        expect(run.stdout).toContain(`${key}: ${key} step 1 -> ${key} step 2 -> ${key} step 3`);
      }
    });

    it('durable goes on after a restart where the group stopped', async () => {
      const run = await runExample('durable', engine);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('after the restart: reading 3, reading 4');
    });
  });
});
