#!/usr/bin/env node
// The packaging test (`npm run test:pack`): builds, packs, installs the tarball into a fresh
// directory and proves that it holds a prebuilt binary for every target the package ships (each
// checked for format, CPU, libc, Node-API entry point and version without loading it), and, in
// processes that cannot find cargo or rustc, that the binary for this machine loads; that without it `auto` falls back to js and `native` fails with a typed error naming
// platform, arch and libc; that a stale binary is refused; and that the package works from
// `require`, from `import` and from TypeScript; and that the `litetopic` command runs through npx
// (--help, a short demo that cleans up after itself, and a quick pattern benchmark from the compiled
// suites the package ships, with the devDependency peers absent, writing its results under --out);
// and that prepack refuses a tree with one platform's binary missing or built for another version.
//
//   node scripts/test-pack.mjs [--no-build] [--keep]
//
// Without --no-build it runs `npm run build` and `npm run build:prebuilds` first. --no-build packs
// what is already built; --keep leaves the temporary directories for inspection.
// Prints one `ok - ...` / `not ok - ...` line per check and `test:pack: N passed, M failed`.
import { spawnSync } from 'node:child_process';
import {
  accessSync,
  constants,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { problemsFor } from './inspect-binary.mjs';
import { prebuildFile, TARGETS, targetName } from './prebuild-targets.mjs';

// The libc check below asks for a process report; without its network section, which can stall
// for seconds on some hosts, it costs a few milliseconds.
if (process.report) process.report.excludeNetwork = true;

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = new Set(process.argv.slice(2));
for (const arg of args) {
  if (arg !== '--no-build' && arg !== '--keep') {
    console.error(`test:pack: unknown argument ${arg} (accepted: --no-build, --keep)`);
    process.exit(2);
  }
}

// ---------------------------------------------------------------------------------------------
// Reporting

const results = [];

function report(name, ok, detail) {
  results.push(ok);
  console.log(`${ok ? 'ok' : 'not ok'} - ${name}`);
  if (!ok && detail) {
    for (const line of String(detail).trimEnd().split('\n')) console.log(`#   ${line}`);
  }
}

/** Runs `fn`; a thrown error (or a returned string) fails the check with that text as detail. */
function check(name, fn) {
  try {
    const failure = fn();
    report(name, failure === undefined, failure);
  } catch (error) {
    report(name, false, error instanceof Error ? error.message : String(error));
  }
}

function processOutput(result) {
  const parts = [];
  if (result.error) parts.push(`spawn error: ${result.error.message}`);
  if (result.status !== 0 && result.status !== null) parts.push(`exit status ${result.status}`);
  if (result.signal) parts.push(`killed by ${result.signal}`);
  if (result.stdout?.trim()) parts.push(`stdout:\n${result.stdout.trimEnd()}`);
  if (result.stderr?.trim()) parts.push(`stderr:\n${result.stderr.trimEnd()}`);
  return parts.join('\n');
}

// ---------------------------------------------------------------------------------------------
// Platform facts (the same rule as ts/engine/load.ts and scripts/build-native.mjs)

const libc =
  process.platform !== 'linux' ? undefined : process.report.getReport().header.glibcVersionRuntime ? 'glibc' : 'musl';
const prebuild = `prebuilds/${process.platform}-${process.arch}/${libc === undefined ? 'litetopic.node' : `litetopic.${libc}.node`}`;

// ---------------------------------------------------------------------------------------------
// Environments

/** The parent environment without npm's script variables and without any litetopic setting. */
function baseEnvironment() {
  const env = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(key) || key.startsWith('LITETOPIC_') || key === 'NODE_PATH') continue;
    env[key] = value;
  }
  return env;
}

function isExecutable(file) {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

const hasRustTools = (dir) => ['cargo', 'rustc'].some((tool) => isExecutable(join(dir, tool)));

/** The PATH minus every directory holding cargo or rustc, with node reachable as `node`. */
function pathWithoutRust(scratch) {
  const dirs = (process.env.PATH ?? '').split(delimiter).filter((dir) => dir !== '' && !hasRustTools(dir));
  if (hasRustTools(dirname(process.execPath))) {
    const nodeDir = join(scratch, 'node-bin');
    mkdirSync(nodeDir, { recursive: true });
    symlinkSync(process.execPath, join(nodeDir, 'node'));
    dirs.unshift(nodeDir);
  }
  return dirs.join(delimiter);
}

/** npm's command-line entry, run with this node so that it needs nothing else from PATH. */
function npmCommand() {
  const fromEnv = process.env.npm_execpath;
  if (fromEnv && /\.c?js$/.test(fromEnv) && existsSync(fromEnv)) return [process.execPath, fromEnv];
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, 'npm');
    if (dir !== '' && isExecutable(candidate)) {
      const real = realpathSync(candidate);
      return /\.c?js$/.test(real) ? [process.execPath, real] : [real];
    }
  }
  const beside = join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js');
  if (existsSync(beside)) return [process.execPath, beside];
  throw new Error('cannot find npm');
}

function npm(npmArgs, options) {
  const [command, ...prefix] = npmCommand();
  return spawnSync(command, [...prefix, ...npmArgs], { encoding: 'utf8', timeout: 120_000, ...options });
}

// ---------------------------------------------------------------------------------------------
// The consumer's scripts. Each asserts and exits non-zero with the reason on stderr.

const consumerScripts = {
  'native.cjs': `
const assert = require('node:assert/strict');
const { dirname, join } = require('node:path');
const { realpathSync } = require('node:fs');
const lt = require('litetopic');
const info = lt.engineInfo();
assert.equal(info.active, 'native', 'active engine: ' + JSON.stringify(info));
assert.equal(info.requested, 'auto');
assert.equal(info.nativeLoadError, undefined);
const installed = realpathSync(dirname(require.resolve('litetopic/package.json')));
assert.equal(realpathSync(info.nativePath), join(installed, ${JSON.stringify(prebuild)}), 'the binary comes from the installed package');
assert.equal(lt.nativeAvailable(), true);
assert.equal(lt.matches('pay__*', 'pay__refund', { engine: 'native' }), true);
assert.equal(lt.matches('pay__*', 'pay__refund__x', { engine: 'native' }), false);
const index = new lt.PatternIndex({ engine: 'native' });
assert.equal(index.engine, 'native');
index.add('pay__*', 1);
index.add('pay__**', 2);
index.add('ship__*', 3);
assert.deepEqual(index.match('pay__refund'), [1, 2]);
console.log(JSON.stringify(info));
`,
  'esm.mjs': `
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { engineInfo, PatternIndex, compilePattern, LitetopicError } from 'litetopic';
import litetopic from 'litetopic';
const info = engineInfo();
assert.equal(info.active, 'native', 'active engine: ' + JSON.stringify(info));
const index = new PatternIndex();
assert.equal(index.engine, 'native');
index.add('pay__*', 7);
assert.deepEqual(index.match('pay__refund'), [7]);
assert.equal(compilePattern('a/+/c', { dialect: 'mqtt' }).matches('a/b/c'), true);
// One copy of the code behind both faces: no dual-package state.
const required = createRequire(import.meta.url)('litetopic');
assert.equal(required.engineInfo, engineInfo);
assert.equal(required.LitetopicError, LitetopicError);
assert.equal(litetopic.PatternIndex, PatternIndex);
console.log(JSON.stringify(info));
`,
  'fallback.cjs': `
const assert = require('node:assert/strict');
const lt = require('litetopic');
const info = lt.engineInfo();
assert.equal(info.active, 'js', 'active engine: ' + JSON.stringify(info));
assert.equal(info.requested, 'auto');
assert.equal(info.nativePath, undefined);
assert.equal(typeof info.nativeLoadError, 'string');
assert.ok(info.nativeLoadError.length > 0, 'nativeLoadError is empty');
assert.match(info.nativeLoadError, new RegExp(process.env.EXPECT_LOAD_ERROR, 'i'));
assert.equal(lt.nativeAvailable(), false);
assert.equal(lt.matches('pay__*', 'pay__refund'), true);
assert.equal(lt.matches('pay__*', 'pay__refund__x'), false);
const index = new lt.PatternIndex();
assert.equal(index.engine, 'js');
index.add('pay__**', 4);
assert.deepEqual(index.match('pay__refund__full'), [4]);
assert.throws(() => lt.matches('pay__*', 'pay__refund', { engine: 'native' }), { code: 'ENGINE_UNAVAILABLE' });
console.log(JSON.stringify(info));
`,
  'forced.cjs': `
const assert = require('node:assert/strict');
const lt = require('litetopic');
const libc = process.platform !== 'linux' ? undefined : process.report.getReport().header.glibcVersionRuntime ? 'glibc' : 'musl';
function expectUnavailable(what, fn) {
  let thrown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  assert.ok(thrown !== undefined, what + ' did not throw');
  assert.ok(thrown instanceof lt.LitetopicError, what + ' threw something that is not a LitetopicError: ' + thrown);
  assert.ok(thrown instanceof lt.EngineUnavailableError, what + ' threw something that is not an EngineUnavailableError');
  assert.equal(thrown.code, 'ENGINE_UNAVAILABLE');
  for (const word of [process.platform, process.arch, ...(libc ? [libc] : [])]) {
    assert.ok(thrown.message.includes(word), what + ': the message does not name ' + word + ': ' + thrown.message);
  }
  assert.match(thrown.message, new RegExp(process.env.EXPECT_LOAD_ERROR, 'i'));
  return thrown;
}
const error = expectUnavailable('engineInfo()', () => lt.engineInfo());
expectUnavailable('matches()', () => lt.matches('pay__*', 'pay__refund'));
expectUnavailable('new PatternIndex()', () => new lt.PatternIndex());
console.log(error.message);
`,
  'js.cjs': `
const assert = require('node:assert/strict');
const lt = require('litetopic');
const info = lt.engineInfo();
assert.deepEqual(info, { active: 'js', requested: 'js' });
assert.equal('nativeLoadError' in info, false);
assert.equal('nativePath' in info, false);
assert.equal(lt.matches('pay__*', 'pay__refund'), true);
assert.equal(new lt.PatternIndex().engine, 'js');
console.log(JSON.stringify(info));
`,
  'check.cts': `
import { compilePattern, engineInfo, LitetopicError, type EngineInfo, type Matcher, PatternIndex } from 'litetopic';
import lt = require('litetopic');

const info: EngineInfo = engineInfo();
const active: 'native' | 'js' = info.active;
const requested: 'auto' | 'native' | 'js' = info.requested;
const why: string | undefined = info.nativeLoadError;
const matcher: Matcher = compilePattern('pay__*', { dialect: 'lite', engine: 'js' });
const hit: boolean = matcher.matches('pay__refund');
const index = new PatternIndex({ dialect: 'mqtt' });
const added: boolean = index.add('a/+', 1);
const ids: number[] = index.match('a/b');
const count: number = index.matchInto('a/b', new Uint32Array(4));
const sameClass: typeof LitetopicError = lt.LitetopicError;
// @ts-expect-error: not a dialect
compilePattern('x', { dialect: 'amqp' });
// @ts-expect-error: not an engine
new PatternIndex({ engine: 'rust' });
export { active, added, count, hit, ids, requested, sameClass, why };
`,
  'check.mts': `
import {
  Broker,
  CommitLog,
  compilePattern,
  engineInfo,
  type EngineInfo,
  LitetopicError,
  matches,
  PatternIndex,
  type StoredMessage,
} from 'litetopic';

const info: EngineInfo = engineInfo();
const active: 'native' | 'js' = info.active;
const path: string | undefined = info.nativePath;
const hit: boolean = compilePattern('a.*', { dialect: 'nats' }).matches('a.b') && matches('a/#', 'a', { dialect: 'mqtt' });
const index = new PatternIndex();
index.add('t__**', 2);
const ids: readonly number[] = index.match('t__x');
function codeOf(error: unknown): string | undefined {
  return error instanceof LitetopicError ? error.code : undefined;
}
// The storage and broker surface, typed end to end.
async function storage(dir: string): Promise<number> {
  const log: CommitLog = await CommitLog.open(dir, { flush: 'sync' });
  const [result] = await log.append([{ lmqs: ['q'], body: 'x' }]);
  const messages: StoredMessage[] = log.read('q', 0, 1);
  const broker: Broker = await Broker.open({});
  broker.createTopic('agents');
  await broker.send('agents', { liteTopic: 't1', body: 'x' });
  // @ts-expect-error: flush is 'async' or 'sync'
  await CommitLog.open(dir, { flush: 'always' });
  return (result?.position ?? 0) + messages.length;
}
// @ts-expect-error: engineInfo takes no argument
engineInfo('native');
// @ts-expect-error: match takes a string
index.match(42);
export { active, codeOf, hit, ids, path, storage };
`,
  'tsconfig.json': `${JSON.stringify(
    {
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: 'ES2022',
        lib: ['ES2023'],
        module: 'nodenext',
        moduleResolution: 'nodenext',
        // The API hands out Buffers and EventEmitters, so a consumer has Node's types, as every
        // TypeScript program on Node does; they come from this repository (the check stays offline).
        typeRoots: [join(root, 'node_modules', '@types')],
        types: ['node'],
        // Type-check the shipped declarations too (dist/**/*.d.ts and binding.d.ts).
        skipLibCheck: false,
      },
      files: ['check.cts', 'check.mts'],
    },
    null,
    2,
  )}\n`,
};

// ---------------------------------------------------------------------------------------------
// The run

let scratch;

function main() {
  if (!args.has('--no-build')) {
    for (const script of ['build', 'build:prebuilds']) {
      console.log(`test:pack: npm run ${script}`);
      const build = spawnSync(npmCommand()[0], [...npmCommand().slice(1), 'run', script], {
        cwd: root,
        stdio: 'inherit',
      });
      if (build.status !== 0) {
        report(
          `npm run ${script}`,
          false,
          `exit status ${build.status}${build.error ? `: ${build.error.message}` : ''}`,
        );
        return;
      }
    }
  }

  scratch = realpathSync(mkdtempSync(join(tmpdir(), 'litetopic-pack-')));
  const packDir = join(scratch, 'pack');
  const consumer = join(scratch, 'consumer');
  const aside = join(scratch, 'aside');
  mkdirSync(packDir);
  mkdirSync(consumer);
  mkdirSync(aside);

  // 1. Pack and inspect the file list.
  let tarball;
  check('npm pack: dist/, the binary, binding.d.ts, README, LICENSE, CHANGELOG; no sources', () => {
    const packed = npm(['pack', '--json', '--pack-destination', packDir], { cwd: root, env: baseEnvironment() });
    if (packed.status !== 0) return `npm pack failed\n${processOutput(packed)}`;
    const start = packed.stdout.search(/^\[/m);
    if (start < 0) return `npm pack --json printed no JSON\n${processOutput(packed)}`;
    const [entry] = JSON.parse(packed.stdout.slice(start));
    tarball = join(packDir, entry.filename);
    if (!existsSync(tarball)) return `npm pack reported ${entry.filename}, which is not in ${packDir}`;
    const files = entry.files.map((f) => f.path);
    const required = [
      ...TARGETS.map(prebuildFile),
      'dist/index.js',
      'dist/index.mjs',
      'dist/index.d.ts',
      'dist/index.d.mts',
      'dist/cli/main.js',
      'dist/bench/run.js',
      'binding.d.ts',
      'README.md',
      'LICENSE',
      'CHANGELOG.md',
      'package.json',
    ];
    const missing = required.filter((f) => !files.includes(f));
    const forbidden = files.filter(
      (f) => /^(native|ts|test|target|node_modules|bench)\//.test(f) || /^dist\/bench\/.*\.(d\.ts|ts)$/.test(f),
    );
    const problems = [];
    if (missing.length > 0) problems.push(`missing: ${missing.join(', ')}`);
    if (forbidden.length > 0) problems.push(`must not ship: ${forbidden.join(', ')}`);
    if (problems.length > 0) return `${problems.join('\n')}\n(${files.length} files in ${entry.filename})`;
    return undefined;
  });
  if (tarball === undefined || !existsSync(tarball)) {
    report('the remaining checks', false, 'skipped: there is no tarball to install');
    return;
  }

  // 2. The consumer's environment: no cargo, no rustc.
  const env = { ...baseEnvironment(), PATH: pathWithoutRust(scratch) };
  let rustFree = false;
  check('the consumer processes cannot find cargo or rustc on PATH', () => {
    for (const tool of ['cargo', 'rustc']) {
      const probe = spawnSync(tool, ['--version'], { env, encoding: 'utf8' });
      if (probe.error?.code !== 'ENOENT') {
        return `${tool} --version ${probe.error ? `failed with ${probe.error.code}` : `ran (status ${probe.status}): ${probe.stdout.trim()}`}`;
      }
    }
    const node = spawnSync('node', ['--version'], { env, encoding: 'utf8' });
    if (node.status !== 0) return `node is not reachable on the reduced PATH\n${processOutput(node)}`;
    rustFree = true;
    return undefined;
  });

  // 3. Install the tarball into a fresh directory, offline, without cargo.
  writeFileSync(
    join(consumer, 'package.json'),
    `${JSON.stringify({ name: 'litetopic-pack-consumer', version: '1.0.0', private: true }, null, 2)}\n`,
  );
  let installed = false;
  check('npm install <tarball> into a fresh directory, offline and without cargo', () => {
    const flags = ['--no-audit', '--no-fund', '--no-save'];
    let attempt = npm(['install', tarball, ...flags, '--offline'], { cwd: consumer, env });
    if (attempt.status !== 0) {
      const offline = processOutput(attempt);
      attempt = npm(['install', tarball, ...flags, '--prefer-offline'], { cwd: consumer, env });
      if (attempt.status !== 0) return `--offline:\n${offline}\n--prefer-offline:\n${processOutput(attempt)}`;
    }
    if (!existsSync(join(consumer, 'node_modules', 'litetopic', prebuild))) {
      return `the installed package has no ${prebuild}`;
    }
    installed = true;
    return undefined;
  });
  if (installed) {
    const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
    check(
      `the installed package holds a binary for each of ${TARGETS.map(targetName).join(', ')}: ` +
        'right format, CPU and libc, the Node-API entry point, built for this version',
      () => {
        const problems = [];
        for (const target of TARGETS) {
          const file = join(consumer, 'node_modules', 'litetopic', ...prebuildFile(target).split('/'));
          if (!existsSync(file)) problems.push(`${targetName(target)}: no ${prebuildFile(target)}`);
          else {
            const found = problemsFor(file, target, version).problems;
            if (found.length > 0) problems.push(`${targetName(target)}: ${prebuildFile(target)} ${found.join('; ')}`);
          }
        }
        return problems.length === 0 ? undefined : problems.join('\n');
      },
    );
  }
  if (!installed || !rustFree) {
    report(
      'the remaining checks',
      false,
      `skipped: ${!installed ? 'the install failed' : 'cargo or rustc is reachable'}`,
    );
    return;
  }

  for (const [file, text] of Object.entries(consumerScripts)) writeFileSync(join(consumer, file), text.trimStart());

  const run = (script, extra = {}) => {
    const childEnv = { ...env, ...extra };
    for (const [key, value] of Object.entries(extra)) if (value === undefined) delete childEnv[key];
    return spawnSync(process.execPath, [script], { cwd: consumer, env: childEnv, encoding: 'utf8', timeout: 60_000 });
  };
  const passes = (result) => (result.status === 0 ? undefined : processOutput(result));

  const installedPackage = join(consumer, 'node_modules', 'litetopic');
  const installedBinary = join(installedPackage, prebuild);
  const installedPrebuilds = join(installedPackage, 'prebuilds');
  const installedManifest = join(installedPackage, 'package.json');

  // a-c: the package as shipped.
  check(`require: auto loads the shipped ${prebuild} and matches through native`, () => passes(run('native.cjs')));
  check('import: named and default exports work, report native, and share the CommonJS instance', () =>
    passes(run('esm.mjs')),
  );
  check(
    'types: a CommonJS (check.cts) and an ES module (check.mts) consumer type-check under --strict, nodenext',
    () => {
      const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
      if (!existsSync(tsc)) return `no TypeScript at ${tsc}; run npm ci in the repository`;
      return passes(
        spawnSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: consumer, env, encoding: 'utf8' }),
      );
    },
  );

  // d-e: the binary removed.
  renameSync(installedPrebuilds, join(aside, 'prebuilds'));
  try {
    check(
      'binary removed, LITETOPIC_ENGINE unset: auto falls back to js, says the install is incomplete, still matches',
      () =>
        passes(run('fallback.cjs', { LITETOPIC_ENGINE: undefined, EXPECT_LOAD_ERROR: 'the install is incomplete' })),
    );
    check(
      'binary removed, LITETOPIC_ENGINE=native: ENGINE_UNAVAILABLE (a LitetopicError) naming platform, arch, libc',
      () => passes(run('forced.cjs', { LITETOPIC_ENGINE: 'native', EXPECT_LOAD_ERROR: 'the install is incomplete' })),
    );
  } finally {
    renameSync(join(aside, 'prebuilds'), installedPrebuilds);
  }

  // f: a binary built for another version.
  const manifest = readFileSync(installedManifest, 'utf8');
  const stale = JSON.parse(manifest);
  stale.version = '9.9.9';
  writeFileSync(installedManifest, `${JSON.stringify(stale, null, 2)}\n`);
  try {
    check('stale binary (package 9.9.9): auto falls back to js with "stale", native refuses it', () => {
      if (!existsSync(installedBinary)) return `${installedBinary} was not restored`;
      return (
        passes(run('fallback.cjs', { LITETOPIC_ENGINE: undefined, EXPECT_LOAD_ERROR: 'stale' })) ??
        passes(run('forced.cjs', { LITETOPIC_ENGINE: 'native', EXPECT_LOAD_ERROR: 'stale' }))
      );
    });
  } finally {
    writeFileSync(installedManifest, manifest);
  }

  // g: js only, with the binary back in place.
  check('LITETOPIC_ENGINE=js: active js, no nativeLoadError, no nativePath', () =>
    passes(run('js.cjs', { LITETOPIC_ENGINE: 'js' })),
  );

  // h-j: the `litetopic` command through npx, as a user of the installed package runs it.
  checkCommand(consumer, env);

  // k: prepack itself, on copies of the tree with one binary missing and one stale.
  checkPrepackRefuses();
}

/** Runs prepack in a copy of the packed files; returns its result. `change` edits the copy first. */
function prepackIn(name, change) {
  const copy = join(scratch, name);
  mkdirSync(join(copy, 'scripts'), { recursive: true });
  for (const file of ['prepack.mjs', 'inspect-binary.mjs', 'prebuild-targets.mjs']) {
    cpSync(join(root, 'scripts', file), join(copy, 'scripts', file));
  }
  cpSync(join(root, 'package.json'), join(copy, 'package.json'));
  symlinkSync(join(root, 'dist'), join(copy, 'dist'));
  cpSync(join(root, 'prebuilds'), join(copy, 'prebuilds'), { recursive: true });
  change(copy);
  return spawnSync(process.execPath, [join(copy, 'scripts', 'prepack.mjs')], { encoding: 'utf8' });
}

function checkPrepackRefuses() {
  const missing = TARGETS.at(-1);
  const stale = TARGETS.find((t) => t.platform === 'linux' && t.arch === 'arm64' && t.libc === 'musl') ?? TARGETS[1];
  check(`prepack refuses to pack without ${prebuildFile(missing)}, naming it`, () => {
    const result = prepackIn('prepack-missing', (copy) => rmSync(join(copy, ...prebuildFile(missing).split('/'))));
    const named = result.stderr.includes(`${prebuildFile(missing)} (${targetName(missing)}) is missing`);
    return result.status === 1 && named ? undefined : `expected exit 1 naming the file\n${processOutput(result)}`;
  });
  check(`prepack refuses a ${prebuildFile(stale)} built for another version, naming both versions`, () => {
    const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
    const result = prepackIn('prepack-stale', (copy) => {
      const file = join(copy, ...prebuildFile(stale).split('/'));
      const bytes = readFileSync(file);
      const at = bytes.indexOf(`litetopic-version:${version}\0`, 0, 'latin1');
      if (at < 0) throw new Error(`${file} has no version marker for ${version}`);
      // Another version of the same length, so that nothing else in the file moves.
      const other = version === '9.9.9' ? '8.8.8' : '9.9.9'.padEnd(version.length, '9').slice(0, version.length);
      bytes.write(other, at + 'litetopic-version:'.length, 'latin1');
      writeFileSync(file, bytes);
    });
    const named = /is stale: built for litetopic [0-9.]+, the package is/.test(result.stderr);
    return result.status === 1 && named ? undefined : `expected exit 1 calling it stale\n${processOutput(result)}`;
  });
}

/** `npx litetopic ...` in the consumer directory: the installed bin, offline, without cargo. */
function checkCommand(consumer, env) {
  const npx = (args, extra = {}) =>
    npm(['exec', '--offline', '--', 'litetopic', ...args], { cwd: consumer, env: { ...env, ...extra } });
  check('npx litetopic --help: the bin entry runs and lists demo, bench and inspect', () => {
    const result = npx(['--help']);
    if (result.status !== 0) return processOutput(result);
    const missing = ['usage: litetopic', 'demo', 'bench', 'inspect'].filter((w) => !result.stdout.includes(w));
    return missing.length === 0 ? undefined : `--help does not mention ${missing.join(', ')}\n${processOutput(result)}`;
  });
  check('npx litetopic demo --seconds 2: every group reports, all acked, the temporary directory is removed', () => {
    const tmp = join(scratch, 'demo-tmp');
    mkdirSync(tmp);
    const result = npx(['demo', '--seconds', '2', '--topics', '2000'], { TMPDIR: tmp });
    if (result.status !== 0) return processOutput(result);
    for (const word of ['planner', 'auditor', 'tools', 'all delivered and acked']) {
      if (!result.stdout.includes(word)) return `the demo output lacks "${word}"\n${processOutput(result)}`;
    }
    const left = readdirSync(tmp);
    return left.length === 0 ? undefined : `the demo left ${left.join(', ')} in its temporary directory`;
  });
  check(
    'npx litetopic bench pattern --quick --seed 1 --out <dir>: runs the shipped suites without the peers, ' +
      'notes each skipped peer, writes the JSON, RESULTS.md and a chart under --out only',
    () => {
      const out = join(scratch, 'bench-out');
      const result = npx(['bench', 'pattern', '--quick', '--seed', '1', '--out', out]);
      if (result.status !== 0) return processOutput(result);
      const problems = [];
      for (const peer of ['qlobber', 'mqtt-match']) {
        if (!result.stdout.includes(`peer ${peer} not installed: skipped`)) {
          problems.push(`no "peer ${peer} not installed: skipped" note`);
        }
      }
      const json = join(out, 'results', 'pattern.json');
      if (existsSync(json)) {
        const record = JSON.parse(readFileSync(json, 'utf8'));
        const skipped = (record.skippedPeers ?? []).map((p) => p.peer).sort();
        if (skipped.join() !== 'mqtt-match,qlobber') problems.push(`${json}: skippedPeers ${JSON.stringify(skipped)}`);
        if (record.result?.config?.seed !== 1) problems.push(`${json}: seed ${record.result?.config?.seed}, not 1`);
        if (!(record.result?.reverse?.length > 0)) problems.push(`${json}: no reverse-lookup rows`);
      } else problems.push(`no ${json}`);
      const markdown = join(out, 'RESULTS.md');
      if (!existsSync(markdown)) problems.push(`no ${markdown}`);
      else if (!/Peers skipped: .*qlobber \(not installed\)/.test(readFileSync(markdown, 'utf8'))) {
        problems.push(`${markdown} does not say that qlobber was skipped`);
      }
      const chart = join(out, 'charts', 'pattern-engine.svg');
      if (!existsSync(chart) || !readFileSync(chart, 'utf8').startsWith('<svg')) problems.push(`no SVG at ${chart}`);
      const installed = join(consumer, 'node_modules', 'litetopic');
      const strays = ['bench', 'litetopic-bench', join('dist', 'bench', 'results')].filter((d) =>
        existsSync(join(installed, d)),
      );
      if (strays.length > 0) problems.push(`wrote into the installed package: ${strays.join(', ')}`);
      if (existsSync(join(consumer, 'litetopic-bench')))
        problems.push('wrote ./litetopic-bench although --out was given');
      return problems.length === 0 ? undefined : `${problems.join('\n')}\n${processOutput(result)}`;
    },
  );
  check(
    'npx litetopic bench --render: results default to ./litetopic-bench; --out renders the page and charts there',
    () => {
      const missing = npx(['bench', '--render']);
      const expected = `there is no ${join(consumer, 'litetopic-bench', 'results')} to render from`;
      if (missing.status !== 1 || !missing.stderr.includes(expected)) {
        return `expected exit 1 and "${expected}"\n${processOutput(missing)}`;
      }
      const chart = join(scratch, 'bench-out', 'charts', 'pattern-engine.svg');
      rmSync(chart, { force: true });
      const rendered = npx(['bench', '--render', '--out', join(scratch, 'bench-out')]);
      if (rendered.status !== 0) return processOutput(rendered);
      return existsSync(chart) ? undefined : `--render did not redraw ${chart}\n${processOutput(rendered)}`;
    },
  );
}

try {
  main();
} catch (error) {
  report('test:pack ran to the end', false, error instanceof Error ? (error.stack ?? error.message) : String(error));
} finally {
  if (scratch !== undefined) {
    if (args.has('--keep')) console.log(`test:pack: kept ${scratch}`);
    else rmSync(scratch, { recursive: true, force: true });
  }
}

const passed = results.filter(Boolean).length;
const failed = results.length - passed;
console.log(`test:pack: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
