/**
 * The read floor under the log suite's warm read: the Rust example `log_append` in its `floor` mode
 * maps the segment files a closed native log left, and copies and checksums every record in each
 * LMQ's offset order with nothing else done (native/core/examples/log_append.rs). A read by LMQ copies
 * and checks each record, so it cannot beat that; run right after each round's native read, on the
 * same directory, the floor pairs with the read by round.
 *
 * The example is built once per run with cargo (a source checkout with a Rust toolchain); without
 * one the floor is left out, with the reason.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { COMPILED, PACKAGE_ROOT } from './lib.js';

/** Nanoseconds per record of each floor pass (the fastest of three). */
export interface FloorSample {
  records: number;
  copyNs: number;
  checksumNs: number;
  copyChecksumNs: number;
}

let program: { path: string } | { why: string } | undefined;

/** The example's binary, built on first use; or why there is none. */
export function floorProgram(): { path: string } | { why: string } {
  if (program !== undefined) return program;
  const manifest = join(PACKAGE_ROOT, 'native', 'core', 'Cargo.toml');
  if (COMPILED || !existsSync(manifest)) {
    program = { why: 'needs a source checkout (native/core)' };
    return program;
  }
  const built = spawnSync(
    'cargo',
    ['build', '--release', '--quiet', '--manifest-path', manifest, '--example', 'log_append'],
    { cwd: PACKAGE_ROOT, encoding: 'utf8' },
  );
  const path = join(PACKAGE_ROOT, 'target', 'release', 'examples', 'log_append');
  program =
    built.status === 0 && existsSync(path)
      ? { path }
      : {
          why: `cargo could not build the log_append example: ${(built.stderr ?? String(built.error)).trim().slice(0, 200)}`,
        };
  return program;
}

/** The read floor over the closed native log in `dir`. */
export function readFloor(dir: string): FloorSample {
  const found = floorProgram();
  if ('why' in found) throw new Error(found.why);
  return JSON.parse(execFileSync(found.path, ['floor', dir], { encoding: 'utf8' })) as FloorSample;
}
