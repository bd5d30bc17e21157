#!/usr/bin/env node
// Runs before `npm pack` and `npm publish`. It builds nothing: it refuses to pack unless the build
// outputs are present and the prebuilt binary for this platform is the one built for this version,
// so a tarball never ships a stale or missing binary. Run `npm run build` first.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

// The libc check below asks for a process report; without its network section, which can stall
// for seconds on some hosts, it costs a few milliseconds.
if (process.report) process.report.excludeNetwork = true;

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function fail(message) {
  console.error(`prepack: ${message}`);
  process.exit(1);
}

for (const file of ['dist/index.js', 'dist/index.mjs', 'dist/index.d.ts']) {
  if (!existsSync(join(root, file))) fail(`${file} is missing; run "npm run build" before packing.`);
}

// The same rule as the loader (ts/engine/load.ts, prebuildPath) and scripts/build-native.mjs.
const libc =
  process.platform !== 'linux' ? undefined : process.report.getReport().header.glibcVersionRuntime ? 'glibc' : 'musl';
const binary = join(
  root,
  'prebuilds',
  `${process.platform}-${process.arch}`,
  libc === undefined ? 'litetopic.node' : `litetopic.${libc}.node`,
);
const shown = relative(root, binary);
if (!existsSync(binary)) fail(`${shown} is missing; run "npm run build" (with cargo installed) before packing.`);

const expected = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
let built;
try {
  const module = { exports: {} };
  process.dlopen(module, binary);
  built = typeof module.exports.version === 'function' ? module.exports.version() : 'unknown (no version())';
} catch (error) {
  fail(`${shown} does not load: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
}
if (built !== expected) {
  fail(`${shown} is stale: built for litetopic ${built}, package.json is ${expected}; run "npm run build".`);
}

// stderr, so that `npm pack --json` keeps a clean stdout.
console.error(`prepack: dist/ and ${shown} (version ${built}) are ready to pack.`);
