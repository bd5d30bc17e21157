// The targets the package ships a prebuilt addon for, with the Rust target that builds each. The
// loader's list (ts/engine/platform.ts, PREBUILT_TARGETS) is the same; test/platform.test.ts keeps the
// two equal. This copy exists because the build runs before the TypeScript is compiled.
//
// `zig` is the target cargo-zigbuild is given: a glibc target names the oldest glibc it links against
// (2.17, the oldest Rust's std supports), so the binary also loads on older distributions.
import { join } from 'node:path';

export const TARGETS = [
  {
    platform: 'linux',
    arch: 'x64',
    libc: 'glibc',
    rust: 'x86_64-unknown-linux-gnu',
    zig: 'x86_64-unknown-linux-gnu.2.17',
  },
  {
    platform: 'linux',
    arch: 'arm64',
    libc: 'glibc',
    rust: 'aarch64-unknown-linux-gnu',
    zig: 'aarch64-unknown-linux-gnu.2.17',
  },
  { platform: 'linux', arch: 'x64', libc: 'musl', rust: 'x86_64-unknown-linux-musl', zig: 'x86_64-unknown-linux-musl' },
  {
    platform: 'linux',
    arch: 'arm64',
    libc: 'musl',
    rust: 'aarch64-unknown-linux-musl',
    zig: 'aarch64-unknown-linux-musl',
  },
  { platform: 'darwin', arch: 'arm64', libc: undefined, rust: 'aarch64-apple-darwin', zig: 'aarch64-apple-darwin' },
  { platform: 'darwin', arch: 'x64', libc: undefined, rust: 'x86_64-apple-darwin', zig: 'x86_64-apple-darwin' },
];

/** `linux-x64-glibc`, `darwin-arm64`: as the loader names a target. */
export function targetName(target) {
  const base = `${target.platform}-${target.arch}`;
  return target.libc === undefined ? base : `${base}-${target.libc}`;
}

/** prebuildify's path below the package root, with `/` separators (as npm pack lists files). */
export function prebuildFile(target) {
  const file = target.libc === undefined ? 'litetopic.node' : `litetopic.${target.libc}.node`;
  return `prebuilds/${target.platform}-${target.arch}/${file}`;
}

/** The same path, joined for this file system. */
export function prebuildPathIn(root, target) {
  return join(root, ...prebuildFile(target).split('/'));
}

/** The target this process runs on, or undefined when the package ships none for it. */
export function hostTarget() {
  let libc;
  if (process.platform === 'linux') {
    // The libc check asks for a process report; without its network section, which can stall for
    // seconds on some hosts, it costs a few milliseconds.
    if (process.report) process.report.excludeNetwork = true;
    libc = process.report.getReport().header.glibcVersionRuntime ? 'glibc' : 'musl';
  }
  return TARGETS.find((t) => t.platform === process.platform && t.arch === process.arch && t.libc === libc);
}
