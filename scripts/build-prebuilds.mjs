#!/usr/bin/env node
// `npm run build:prebuilds`: builds the native addon for every target the package ships
// (scripts/prebuild-targets.mjs) and stages each at prebuildify's path, prebuilds/<platform>-<arch>/.
//
// All targets are built in one cargo invocation through cargo-zigbuild, which links with zig: one
// toolchain for Linux (glibc and musl) and macOS, and the host's build dependencies (the napi-rs
// macros) compiled once for all targets. The glibc builds link against glibc 2.17 symbols, so they
// load on distributions older than this machine; the host target is rebuilt this way too, replacing
// the build:native output, so what ships is the portable build. Each staged file is then checked
// (scripts/inspect-binary.mjs): format, CPU, libc, the Node-API entry point and the version marker.
//
//   node scripts/build-prebuilds.mjs [<target>...]     e.g. linux-arm64-glibc darwin-x64
//
// scripts/setup-cross.sh installs what this needs (Rust targets, zig and cargo-zigbuild from PyPI).
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { problemsFor } from './inspect-binary.mjs';
import { prebuildPathIn, TARGETS, targetName } from './prebuild-targets.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;

const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !TARGETS.some((t) => targetName(t) === name));
if (unknown.length > 0) {
  console.error(`build:prebuilds: unknown target ${unknown.join(', ')} (known: ${TARGETS.map(targetName).join(', ')})`);
  process.exit(2);
}
const targets = wanted.length === 0 ? TARGETS : TARGETS.filter((t) => wanted.includes(targetName(t)));

const zigbuild = spawnSync('cargo-zigbuild', ['--version'], { encoding: 'utf8' });
if (zigbuild.status !== 0) {
  console.error(
    'build:prebuilds: cargo-zigbuild is not installed (or cargo is not on PATH); run "sudo scripts/setup-cross.sh" ' +
      'to install it with zig and the Rust targets.',
  );
  process.exit(1);
}

const env = { ...process.env };
for (const target of targets) {
  // A cdylib for musl must link libc dynamically: Rust's musl targets link it statically by default,
  // and a statically linked addon cannot share the C library of the node process that loads it.
  if (target.libc === 'musl') {
    env[`CARGO_TARGET_${target.rust.toUpperCase().replaceAll('-', '_')}_RUSTFLAGS`] = '-C target-feature=-crt-static';
  }
}
// The oldest macOS Node 20 supports on Intel; Apple Silicon Macs start at macOS 11, so the same floor
// serves both.
env.MACOSX_DEPLOYMENT_TARGET ??= '10.15';

const args = ['zigbuild', '--release', '--locked', '-p', 'litetopic-napi'];
for (const target of targets) args.push('--target', target.zig);
console.log(`build:prebuilds: cargo ${args.join(' ')}`);
const started = Date.now();
const build = spawnSync('cargo', args, { cwd: root, env, stdio: 'inherit' });
if (build.status !== 0) {
  console.error(`build:prebuilds: cargo zigbuild failed (exit ${build.status ?? build.signal})`);
  process.exit(1);
}
console.log(`build:prebuilds: ${targets.length} target(s) built in ${Math.round((Date.now() - started) / 1000)} s`);

let failed = false;
for (const target of targets) {
  const built = join(
    root,
    'target',
    target.rust,
    'release',
    target.platform === 'darwin' ? 'liblitetopic_napi.dylib' : 'liblitetopic_napi.so',
  );
  const staged = prebuildPathIn(root, target);
  mkdirSync(dirname(staged), { recursive: true });
  // Copy beside the destination, then rename over it: a process that has the old addon loaded keeps
  // its (now unlinked) file, whereas overwriting the file in place would crash it.
  copyFileSync(built, `${staged}.tmp`);
  renameSync(`${staged}.tmp`, staged);
  const { info, problems } = problemsFor(staged, target, version);
  const facts = [
    info.arch,
    info.libc ?? info.format,
    info.glibcNeeded && `glibc >= ${info.glibcNeeded}`,
    info.minMacOS && `macOS >= ${info.minMacOS}`,
  ]
    .filter(Boolean)
    .join(', ');
  if (problems.length === 0)
    console.log(`ok - ${targetName(target)}: ${relative(root, staged)} (${facts}, version ${info.version})`);
  else {
    failed = true;
    console.log(`not ok - ${targetName(target)}: ${relative(root, staged)} ${problems.join('; ')}`);
  }
}
process.exit(failed ? 1 : 0);
