/**
 * Runs a test fixture in a child process (`node --import tsx <fixture> ...args`), as the crash tests
 * need: the fixture prints `ready` once it is set up, then one line per acknowledged step, each with
 * `printSync`. With `killAfterReadyMs` the child is killed with SIGKILL that long after `ready` and
 * must die of it; without, it must exit with code 0. Resolves with the complete lines after `ready`
 * (a line cut by the kill acknowledged nothing and is dropped). `prefix`, when given, is a command
 * that runs node (`unshare ... sh -c '... exec "$@"' sh`, say).
 */
import { spawn } from 'node:child_process';
import { writeSync } from 'node:fs';

export function runFixture(
  fixture: string,
  args: readonly string[],
  killAfterReadyMs?: number,
  prefix: readonly string[] = [],
): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const command = [...prefix, process.execPath, '--import', 'tsx', fixture, ...args];
    const child = spawn(command[0] as string, command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let kill: NodeJS.Timeout | undefined;
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (killAfterReadyMs !== undefined && kill === undefined && out.startsWith('ready\n')) {
        kill = setTimeout(() => child.kill('SIGKILL'), killAfterReadyMs);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    // 'close', not 'exit': 'exit' may come while what the child wrote is still unread in the pipe.
    child.on('close', (code, signal) => {
      clearTimeout(kill);
      const expected = killAfterReadyMs === undefined ? code === 0 : signal === 'SIGKILL';
      if (!expected) return reject(new Error(`${fixture} exited with ${code ?? signal}: ${err}`));
      const lines = out.split('\n');
      lines.pop();
      resolve(lines.filter((line) => line !== 'ready'));
    });
  });
}

const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * Writes `text` to the standard output before returning, for fixtures: the bytes are then in the
 * pipe, where a SIGKILL cannot lose them. `process.stdout.write` to a pipe is not enough: once the
 * pipe is full (the reader is slow) it queues the rest in the process, and a kill loses the queue,
 * so a line printed after its step resolved could be gone while the step itself stayed done.
 */
export function printSync(text: string): void {
  const bytes = Buffer.from(text);
  for (let at = 0; at < bytes.length; ) {
    try {
      at += writeSync(1, bytes, at);
    } catch (error) {
      // A pipe made non-blocking (by any use of `process.stdout`) is full: wait for the reader.
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
      Atomics.wait(pause, 0, 0, 1);
    }
  }
}
