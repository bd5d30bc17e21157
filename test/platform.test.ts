/**
 * The loader's choice of prebuilt addon, for every target given rather than detected, and the libc
 * detection that reads node's dynamic loader instead of asking for a process report. Engine-free:
 * nothing here loads an engine.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  TARGETS as BUILD_TARGETS,
  prebuildFile as buildPrebuildFile,
  targetName as buildTargetName,
} from '../scripts/prebuild-targets.mjs';
import {
  detectLibc,
  elfInterpreter,
  interpreterOf,
  missingReason,
  type PlatformTarget,
  PREBUILT_TARGETS,
  prebuildFile,
  shipsFor,
  targetName,
} from '../ts/engine/platform.js';

const TARGETS: { target: PlatformTarget; file: string }[] = [
  { target: { platform: 'linux', arch: 'x64', libc: 'glibc' }, file: 'prebuilds/linux-x64/litetopic.glibc.node' },
  { target: { platform: 'linux', arch: 'x64', libc: 'musl' }, file: 'prebuilds/linux-x64/litetopic.musl.node' },
  { target: { platform: 'linux', arch: 'arm64', libc: 'glibc' }, file: 'prebuilds/linux-arm64/litetopic.glibc.node' },
  { target: { platform: 'linux', arch: 'arm64', libc: 'musl' }, file: 'prebuilds/linux-arm64/litetopic.musl.node' },
  { target: { platform: 'darwin', arch: 'arm64', libc: undefined }, file: 'prebuilds/darwin-arm64/litetopic.node' },
  { target: { platform: 'darwin', arch: 'x64', libc: undefined }, file: 'prebuilds/darwin-x64/litetopic.node' },
  { target: { platform: 'win32', arch: 'x64', libc: undefined }, file: 'prebuilds/win32-x64/litetopic.node' },
];

describe('prebuilt addon choice', () => {
  it.each(TARGETS)('$file for $target.platform $target.arch $target.libc', ({ target, file }) => {
    expect(prebuildFile(target)).toBe(join(...file.split('/')));
  });

  it.each(TARGETS)('says why none fits $target.platform $target.arch $target.libc, unless one ships', ({ target }) => {
    const reason = missingReason(target);
    if (shipsFor(target)) {
      expect(reason).toBeUndefined();
    } else {
      expect(reason).toContain(targetName(target));
      for (const shipped of PREBUILT_TARGETS) expect(reason).toContain(targetName(shipped));
    }
  });

  it('ships every target the build produces, and the build produces every target the loader expects', () => {
    const loader = PREBUILT_TARGETS.map(({ platform, arch, libc }) => ({ platform, arch, libc }));
    const build = BUILD_TARGETS.map(({ platform, arch, libc }) => ({ platform, arch, libc }));
    expect(build).toEqual(loader);
    for (const target of BUILD_TARGETS) {
      expect(buildPrebuildFile(target).split('/')).toEqual(prebuildFile(target).split(/[\\/]/));
      expect(buildTargetName(target)).toBe(targetName(target));
    }
  });

  it('ships Linux on x64 and arm64 for glibc and musl, and macOS on arm64 and x64', () => {
    expect(PREBUILT_TARGETS.map(targetName)).toEqual([
      'linux-x64-glibc',
      'linux-arm64-glibc',
      'linux-x64-musl',
      'linux-arm64-musl',
      'darwin-arm64',
      'darwin-x64',
    ]);
    expect(missingReason({ platform: 'win32', arch: 'x64', libc: undefined })).toMatch(
      /^no prebuilt binary for win32-x64: this package ships linux-x64-glibc, .*darwin-x64/,
    );
  });

  it('tells libc apart: a glibc build does not serve musl', () => {
    const shipped: PlatformTarget[] = [{ platform: 'linux', arch: 'x64', libc: 'glibc' }];
    expect(missingReason({ platform: 'linux', arch: 'x64', libc: 'glibc' }, shipped)).toBeUndefined();
    expect(missingReason({ platform: 'linux', arch: 'x64', libc: 'musl' }, shipped)).toMatch(/linux-x64-musl/);
    expect(missingReason({ platform: 'linux', arch: 'arm64', libc: 'glibc' }, shipped)).toMatch(/linux-arm64-glibc/);
  });
});

/** A minimal ELF image whose one program header is PT_INTERP naming `interpreter`. */
function elfImage(interpreter: string, wide: boolean, little: boolean): Buffer {
  const image = Buffer.alloc(512);
  image.writeUInt32BE(0x7f454c46, 0);
  image[4] = wide ? 2 : 1;
  image[5] = little ? 1 : 2;
  const u16 = (value: number, at: number) => (little ? image.writeUInt16LE(value, at) : image.writeUInt16BE(value, at));
  const u32 = (value: number, at: number) => (little ? image.writeUInt32LE(value, at) : image.writeUInt32BE(value, at));
  const word = (value: number, at: number) =>
    wide
      ? little
        ? image.writeBigUInt64LE(BigInt(value), at)
        : image.writeBigUInt64BE(BigInt(value), at)
      : u32(value, at);
  const programHeaders = 100;
  const nameAt = 300;
  word(programHeaders, wide ? 32 : 28);
  u16(wide ? 56 : 32, wide ? 54 : 42);
  u16(2, wide ? 56 : 44);
  // The first program header is PT_LOAD (1), the second PT_INTERP (3).
  u32(1, programHeaders);
  const interp = programHeaders + (wide ? 56 : 32);
  u32(3, interp);
  word(nameAt, interp + (wide ? 8 : 4));
  word(interpreter.length + 1, interp + (wide ? 32 : 16));
  image.write(interpreter, nameAt, 'latin1');
  return image;
}

describe('libc detection', () => {
  const readFrom = (image: Buffer) => (at: number, size: number) => image.subarray(at, at + size);

  it.each([
    [true, true],
    [true, false],
    [false, true],
    [false, false],
  ])('reads PT_INTERP of an ELF image (64-bit %s, little-endian %s)', (wide, little) => {
    for (const name of ['/lib/ld-musl-aarch64.so.1', '/lib64/ld-linux-x86-64.so.2']) {
      const image = elfImage(name, wide, little);
      expect(interpreterOf(image, readFrom(image))).toBe(name);
    }
  });

  it('finds nothing in what is not an ELF file, or is cut short', () => {
    const text = Buffer.from('#!/bin/sh\necho not an executable\n'.padEnd(128, ' '));
    expect(interpreterOf(text, readFrom(text))).toBeUndefined();
    const image = elfImage('/lib/ld-musl-x86_64.so.1', true, true);
    expect(interpreterOf(image.subarray(0, 120), readFrom(image))).toBeUndefined();
    expect(elfInterpreter('/nonexistent/node')).toBeUndefined();
  });

  it.runIf(process.platform === 'linux')('agrees with the process report on this machine', () => {
    const header = (process.report.getReport() as { header: { glibcVersionRuntime?: string } }).header;
    expect(detectLibc()).toBe(header.glibcVersionRuntime ? 'glibc' : 'musl');
  });
});
