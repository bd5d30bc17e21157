#!/usr/bin/env node
// Builds the native addon from source with `napi build --release` and stages it where the loader
// and `npm pack` expect it: prebuilds/<platform>-<arch>/litetopic.<libc>.node (prebuildify's layout).
// It also regenerates binding.d.ts, the checked-in contract between Rust and TypeScript.
//
// Without cargo it says so and leaves the js engine to do the work, unless LITETOPIC_REQUIRE_NATIVE=1
// (set in CI), where a missing native build is a failure.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The libc check below asks for a process report; without its network section, which can stall
// for seconds on some hosts, it costs a few milliseconds.
if (process.report) process.report.excludeNetwork = true;

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const required = process.env.LITETOPIC_REQUIRE_NATIVE === '1';

const cargo = spawnSync('cargo', ['--version'], { encoding: 'utf8' });
if (cargo.status !== 0) {
  const message = 'build:native: cargo is not installed, so the native addon is not built; the js engine will be used.';
  if (required) {
    console.error(`${message}\nLITETOPIC_REQUIRE_NATIVE=1 makes this a failure.`);
    process.exit(1);
  }
  console.warn(message);
  process.exit(0);
}

const outputDir = join(root, 'target', 'napi');
const napi = spawnSync(
  process.execPath,
  [
    join(root, 'node_modules', '@napi-rs', 'cli', 'dist', 'cli.js'),
    'build',
    '--release',
    '--manifest-path',
    join(root, 'native', 'napi', 'Cargo.toml'),
    '--package-json-path',
    join(root, 'package.json'),
    '--output-dir',
    outputDir,
    // Relative to --output-dir: the repository root.
    '--dts',
    '../../binding.d.ts',
  ],
  { cwd: root, stdio: 'inherit' },
);
if (napi.status !== 0) process.exit(napi.status ?? 1);

const target = prebuildPath(root);
mkdirSync(dirname(target), { recursive: true });
// Copy beside the target, then rename over it: a process that has the old addon loaded keeps its
// (now unlinked) file, whereas overwriting the file in place would crash it.
copyFileSync(join(outputDir, 'litetopic.node'), `${target}.tmp`);
renameSync(`${target}.tmp`, target);
console.log(`build:native: staged ${target}`);

// The file name must be the one the loader (ts/engine/load.ts, prebuildPath) looks for. The loader is
// TypeScript and this script runs before it is built, so its two small rules are repeated here; the
// pack test proves the two agree.
function prebuildPath(base) {
  const libc =
    process.platform !== 'linux' ? undefined : process.report.getReport().header.glibcVersionRuntime ? 'glibc' : 'musl';
  const file = libc === undefined ? 'litetopic.node' : `litetopic.${libc}.node`;
  return join(base, 'prebuilds', `${process.platform}-${process.arch}`, file);
}
