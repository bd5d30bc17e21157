/**
 * Which prebuilt addon fits a platform: the target triple the loader looks for, the file it lives
 * in (prebuildify's `prebuilds/<platform>-<arch>/<name>.<libc>.node` layout) and, when the package
 * ships none for it, a sentence saying so. The choice is a pure function of (platform, arch, libc),
 * so it is tested for every target without running on them; only `detectLibc` looks at the machine.
 */
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';

export type Libc = 'glibc' | 'musl';

/** What the loader needs to know about a machine to pick an addon. */
export interface PlatformTarget {
  platform: NodeJS.Platform;
  arch: string;
  /** Linux only; undefined elsewhere. */
  libc: Libc | undefined;
}

/** The base name of the addon file, as napi-rs names it (`napi.binaryName` in package.json). */
export const ADDON_NAME = 'litetopic';

/**
 * The targets the package is built for, in the order docs list them. scripts/prebuild-targets.mjs
 * holds the same list with the Rust target of each (the build runs before this file is compiled);
 * test/platform.test.ts keeps the two equal.
 */
export const PREBUILT_TARGETS: readonly PlatformTarget[] = [
  { platform: 'linux', arch: 'x64', libc: 'glibc' },
  { platform: 'linux', arch: 'arm64', libc: 'glibc' },
  { platform: 'linux', arch: 'x64', libc: 'musl' },
  { platform: 'linux', arch: 'arm64', libc: 'musl' },
  { platform: 'darwin', arch: 'arm64', libc: undefined },
  { platform: 'darwin', arch: 'x64', libc: undefined },
];

/** `linux-x64-glibc`, `darwin-arm64`: how messages name a target. */
export function targetName(target: PlatformTarget): string {
  const base = `${target.platform}-${target.arch}`;
  return target.libc === undefined ? base : `${base}-${target.libc}`;
}

/** The addon's path below the package root: a libc tag on Linux only, as prebuildify names it. */
export function prebuildFile(target: PlatformTarget): string {
  const file = target.libc === undefined ? `${ADDON_NAME}.node` : `${ADDON_NAME}.${target.libc}.node`;
  return join('prebuilds', `${target.platform}-${target.arch}`, file);
}

/** Whether the package is built for `target`. */
export function shipsFor(target: PlatformTarget, shipped: readonly PlatformTarget[] = PREBUILT_TARGETS): boolean {
  return shipped.some((t) => t.platform === target.platform && t.arch === target.arch && t.libc === target.libc);
}

/** Why no addon loads on `target` when none ships for it; undefined when one does. */
export function missingReason(
  target: PlatformTarget,
  shipped: readonly PlatformTarget[] = PREBUILT_TARGETS,
): string | undefined {
  if (shipsFor(target, shipped)) return undefined;
  return (
    `no prebuilt binary for ${targetName(target)}: this package ships ${shipped.map(targetName).join(', ')} ` +
    '(a source checkout builds one for its own machine with "npm run build:native", which needs cargo)'
  );
}

/** PT_INTERP in an ELF program header: the dynamic loader a binary asks for. */
const PT_INTERP = 3;
/** Enough of the head of an executable to hold its ELF header and program headers. */
const ELF_HEAD_BYTES = 4096;

/**
 * The dynamic loader named by the ELF file at `path` (e.g. `/lib/ld-musl-x86_64.so.1`), or
 * undefined for a static or unreadable binary. Only the first few KiB are read.
 */
export function elfInterpreter(path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    const head = Buffer.alloc(ELF_HEAD_BYTES);
    const length = readSync(fd, head, 0, head.length, 0);
    return interpreterOf(head.subarray(0, length), (at, size) => {
      const bytes = Buffer.alloc(size);
      return bytes.subarray(0, readSync(fd, bytes, 0, size, at));
    });
  } finally {
    closeSync(fd);
  }
}

/** Parses the program headers of an ELF image (32 or 64 bit, either byte order) for PT_INTERP. */
export function interpreterOf(head: Buffer, readAt: (at: number, size: number) => Buffer): string | undefined {
  if (head.length < 52 || head.readUInt32BE(0) !== 0x7f454c46) return undefined;
  const wide = head[4] === 2;
  const little = head[5] === 1;
  const u16 = (at: number) => (little ? head.readUInt16LE(at) : head.readUInt16BE(at));
  const u32 = (at: number) => (little ? head.readUInt32LE(at) : head.readUInt32BE(at));
  const word = (at: number) => (wide ? Number(little ? head.readBigUInt64LE(at) : head.readBigUInt64BE(at)) : u32(at));
  if (wide && head.length < 64) return undefined;
  const programHeaders = word(wide ? 32 : 28);
  const entrySize = u16(wide ? 54 : 42);
  const count = u16(wide ? 56 : 44);
  for (let i = 0; i < count; i++) {
    const at = programHeaders + i * entrySize;
    if (at + (wide ? 56 : 32) > head.length) return undefined;
    if (u32(at) !== PT_INTERP) continue;
    const offset = word(at + (wide ? 8 : 4));
    const size = word(at + (wide ? 32 : 16));
    if (size === 0 || size > 4096) return undefined;
    const name = readAt(offset, size);
    const end = name.indexOf(0);
    return name.subarray(0, end < 0 ? name.length : end).toString('latin1');
  }
  return undefined;
}

/**
 * The C library this Node links against, on Linux; undefined elsewhere. Read from the dynamic
 * loader node's own binary names, which costs one small read, then from `ldd`'s script; a process
 * report is the last resort, asked with its network section off, since gathering that section can
 * stall on some hosts.
 */
export function detectLibc(execPath: string = process.execPath): Libc | undefined {
  if (process.platform !== 'linux') return undefined;
  const interpreter = elfInterpreter(execPath);
  if (interpreter !== undefined) return interpreter.includes('musl') ? 'musl' : 'glibc';
  try {
    if (readFileSync('/usr/bin/ldd', 'latin1').includes('musl')) return 'musl';
  } catch {
    // No ldd: ask the process report below.
  }
  const report = process.report as (NodeJS.ProcessReport & { excludeNetwork?: boolean }) | undefined;
  if (report === undefined) return 'glibc';
  const excluded = report.excludeNetwork;
  report.excludeNetwork = true;
  try {
    const header = (report.getReport() as { header?: { glibcVersionRuntime?: string } }).header;
    return header?.glibcVersionRuntime ? 'glibc' : 'musl';
  } finally {
    report.excludeNetwork = excluded;
  }
}
