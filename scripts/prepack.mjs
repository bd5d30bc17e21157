#!/usr/bin/env node
// Runs before `npm pack` and `npm publish`. It builds nothing: it refuses to pack unless the build
// outputs are present and every target the package ships (scripts/prebuild-targets.mjs) has its
// prebuilt binary, of the right format, CPU and libc, exporting the Node-API entry point and built
// for this version, so a tarball never ships a stale or missing binary. The binary for this machine
// is also loaded and asked for its version. Run `npm run build` and `npm run build:prebuilds` first.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { problemsFor } from './inspect-binary.mjs';
import { hostTarget, prebuildPathIn, TARGETS, targetName } from './prebuild-targets.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

const problems = [];

for (const file of ['dist/index.js', 'dist/index.mjs', 'dist/index.d.ts']) {
  if (!existsSync(join(root, file))) problems.push(`${file} is missing; run "npm run build" before packing.`);
}

const expected = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
for (const target of TARGETS) {
  const binary = prebuildPathIn(root, target);
  const shown = relative(root, binary);
  if (!existsSync(binary)) {
    problems.push(`${shown} (${targetName(target)}) is missing; run "npm run build:prebuilds" before packing.`);
    continue;
  }
  const found = problemsFor(binary, target, expected).problems;
  if (found.length > 0) {
    problems.push(`${shown} (${targetName(target)}) ${found.join('; ')}; run "npm run build:prebuilds".`);
  }
}

// The binary for this machine must also load and report the version it was built for.
const host = hostTarget();
if (host !== undefined && existsSync(prebuildPathIn(root, host))) {
  const binary = prebuildPathIn(root, host);
  const shown = relative(root, binary);
  try {
    const module = { exports: {} };
    process.dlopen(module, binary);
    const built = typeof module.exports.version === 'function' ? module.exports.version() : 'unknown (no version())';
    if (built !== expected)
      problems.push(`${shown} is stale: built for litetopic ${built}, package.json is ${expected}.`);
  } catch (error) {
    problems.push(`${shown} does not load: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
  }
}

if (problems.length > 0) {
  for (const problem of problems) console.error(`prepack: ${problem}`);
  process.exit(1);
}
// stderr, so that `npm pack --json` keeps a clean stdout.
console.error(
  `prepack: dist/ and the ${TARGETS.length} prebuilt binaries (${TARGETS.map(targetName).join(', ')}, version ${expected}) are ready to pack.`,
);
