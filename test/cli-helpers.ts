/**
 * Runs the `litetopic` command as a user would: a child process on the TypeScript sources (through
 * tsx, so the tests never see a stale dist/), real files, stdout, stderr and the exit code.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const ROOT = join(__dirname, '..');
const FROM_SOURCES = ['--import', 'tsx', join(ROOT, 'ts', 'cli', 'main.ts')];
/**
 * LITETOPIC_TEST_CLI=dist runs the compiled command (dist/cli/main.js, fresh from `npm run build:ts`)
 * instead: `npm run test:arm64` sets it, since an emulated Node takes seconds to load tsx and
 * transform the sources for every command. `bench` still runs from the sources: it records how it
 * was started, and the tests check what a checkout records.
 */
function command(args: readonly string[]): string[] {
  if (process.env.LITETOPIC_TEST_CLI !== 'dist' || args[0] === 'bench') return FROM_SOURCES;
  return [join(ROOT, 'dist', 'cli', 'main.js')];
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A fresh directory under the system temporary directory. */
export function scratch(prefix = 'litetopic-cli-test-'): string {
  return realpathSync(mkdtempSync(join(tmpdir(), prefix)));
}

/** `litetopic <args>`; `env` adds to (or, with undefined values, removes from) the environment. */
export function cli(args: readonly string[], env: Record<string, string | undefined> = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
    for (const [key, value] of Object.entries(env)) if (value === undefined) delete childEnv[key];
    // Not a terminal: progress comes as plain lines.
    const child = spawn(process.execPath, [...command(args), ...args], { cwd: ROOT, env: childEnv });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Starts `script` (a .ts file) with tsx and resolves once it prints `ready`. */
export function startHolder(script: string, args: readonly string[]): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: ROOT });
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('ready')) resolve(child);
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.on('exit', (code) => reject(new Error(`holder exited with ${code} before ready: ${out}`)));
  });
}
