// Types for scripts/prebuild-targets.mjs, so that test/platform.test.ts can compare its list with the
// loader's.
export interface BuildTarget {
  platform: NodeJS.Platform;
  arch: string;
  libc: 'glibc' | 'musl' | undefined;
  /** The Rust target triple. */
  rust: string;
  /** The target cargo-zigbuild is given (a glibc target carries the glibc version it links against). */
  zig: string;
}
export const TARGETS: readonly BuildTarget[];
export function targetName(target: Pick<BuildTarget, 'platform' | 'arch' | 'libc'>): string;
export function prebuildFile(target: Pick<BuildTarget, 'platform' | 'arch' | 'libc'>): string;
export function prebuildPathIn(root: string, target: Pick<BuildTarget, 'platform' | 'arch' | 'libc'>): string;
export function hostTarget(): BuildTarget | undefined;
