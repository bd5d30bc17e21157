/**
 * Runs a test fixture in a child process (`node --import tsx <fixture> ...args`), as the crash tests
 * need: the fixture prints `ready` once it is set up, then one line per acknowledged step. With
 * `killAfterReadyMs` the child is killed with SIGKILL that long after `ready` and must die of it;
 * without, it must exit with code 0. Resolves with the complete lines after `ready` (a line cut by
 * the kill acknowledged nothing and is dropped).
 */
import { spawn } from 'node:child_process';

export function runFixture(fixture: string, args: readonly string[], killAfterReadyMs?: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let armed = false;
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (killAfterReadyMs !== undefined && !armed && out.startsWith('ready\n')) {
        armed = true;
        setTimeout(() => child.kill('SIGKILL'), killAfterReadyMs);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.on('exit', (code, signal) => {
      const expected = killAfterReadyMs === undefined ? code === 0 : signal === 'SIGKILL';
      if (!expected) return reject(new Error(`${fixture} exited with ${code ?? signal}: ${err}`));
      const lines = out.split('\n');
      lines.pop();
      resolve(lines.filter((line) => line !== 'ready'));
    });
  });
}
