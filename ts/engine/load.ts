/**
 * Chooses the engine. `LITETOPIC_ENGINE=auto|native|js` (default `auto`) is read once, on first use.
 * `auto` loads the prebuilt native addon for this platform and falls back to the js engine when it is
 * missing, broken or stale (built for another package version), recording why; `native` throws an
 * `EngineUnavailableError` naming platform, arch, libc and the cause; `js` never touches native code.
 *
 * The addon lives at `prebuilds/<platform>-<arch>/litetopic.<libc>.node` (prebuildify's layout;
 * no libc tag off Linux). `LITETOPIC_NATIVE_PATH` points the loader at another file.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { EngineUnavailableError, InvalidArgumentError } from '../errors.js';
import type { Engine, EngineName } from './contract.js';
import { jsEngine } from './js/engine.js';
import type { NativeBinding } from './native/binding.js';
import { createNativeEngine } from './native/engine.js';
import { detectLibc, missingReason, type PlatformTarget, prebuildFile, targetName } from './platform.js';

export type EngineRequest = 'auto' | EngineName;

/** What `engineInfo()` reports. */
export interface EngineInfo {
  /** The engine used when a call does not name one. */
  active: EngineName;
  /** What `LITETOPIC_ENGINE` asked for. */
  requested: EngineRequest;
  /** The addon file that loaded, when native is available. */
  nativePath?: string;
  /** Why the native engine is not available, when it is not. */
  nativeLoadError?: string;
}

interface NativeState {
  engine?: Engine;
  binding?: NativeBinding;
  path: string;
  error?: string;
}

let nativeState: NativeState | undefined;
let defaultEngine: { engine: Engine; requested: EngineRequest } | undefined;

/** The package root: the nearest folder above this file whose package.json names `litetopic`. */
function packageRoot(): string {
  let dir = __dirname;
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      const parsed = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string };
      if (parsed.name === 'litetopic') return dir;
    }
    const up = dirname(dir);
    if (up === dir) throw new Error(`litetopic: cannot find the package root above ${__dirname}`);
    dir = up;
  }
}

function packageVersion(root: string): string {
  return (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
}

let machine: PlatformTarget | undefined;

/** This process's platform, arch and libc, found once. */
function thisMachine(): PlatformTarget {
  machine ??= { platform: process.platform, arch: process.arch, libc: detectLibc() };
  return machine;
}

/** Where the prebuilt addon for this machine is expected. */
export function prebuildPath(root: string): string {
  return join(root, prebuildFile(thisMachine()));
}

function describePlatform(): string {
  const { platform, arch, libc } = thisMachine();
  return `platform ${platform}, arch ${arch}, libc ${libc ?? 'n/a'}`;
}

function loadNative(): NativeState {
  if (nativeState !== undefined) return nativeState;
  const root = packageRoot();
  const named = process.env.LITETOPIC_NATIVE_PATH || undefined;
  const path = named ?? prebuildPath(root);
  try {
    if (!existsSync(path)) {
      // A path the caller named is reported as such, whatever the package ships for this machine.
      if (named !== undefined) throw new Error(`no binary at ${path} (named by LITETOPIC_NATIVE_PATH)`);
      const why = missingReason(thisMachine());
      throw new Error(
        why ??
          `no prebuilt binary at ${path}, although this package is built for ${targetName(thisMachine())}: the install is incomplete (a source checkout builds it with "npm run build:native", which needs cargo)`,
      );
    }
    const module = { exports: {} as NativeBinding };
    process.dlopen(module, path);
    const binding = module.exports;
    const built = typeof binding.version === 'function' ? binding.version() : 'unknown';
    const expected = packageVersion(root);
    if (built !== expected) {
      throw new Error(`stale binary at ${path}: built for litetopic ${built}, this package is ${expected}`);
    }
    nativeState = { engine: createNativeEngine(binding), binding, path };
  } catch (error) {
    nativeState = { path, error: error instanceof Error ? error.message : String(error) };
  }
  return nativeState;
}

function unavailable(state: NativeState): EngineUnavailableError {
  return new EngineUnavailableError(
    `the native engine is unavailable (${describePlatform()}): ${state.error}. ` +
      'Use LITETOPIC_ENGINE=js (or auto) to run on the pure TypeScript engine.',
    { value: state.path },
  );
}

function requestedFromEnvironment(): EngineRequest {
  const raw = process.env.LITETOPIC_ENGINE;
  if (raw === undefined || raw === '') return 'auto';
  if (raw === 'auto' || raw === 'native' || raw === 'js') return raw;
  throw new InvalidArgumentError(`LITETOPIC_ENGINE must be auto, native or js (got "${raw}")`, { value: raw });
}

function resolveDefault(): { engine: Engine; requested: EngineRequest } {
  if (defaultEngine !== undefined) return defaultEngine;
  const requested = requestedFromEnvironment();
  let engine: Engine = jsEngine;
  if (requested !== 'js') {
    const state = loadNative();
    if (state.engine !== undefined) engine = state.engine;
    else if (requested === 'native') throw unavailable(state);
  }
  defaultEngine = { engine, requested };
  return defaultEngine;
}

/** The engine for a call: the named one, or the active one when `name` is undefined. */
export function getEngine(name?: EngineName): Engine {
  if (name === undefined) return resolveDefault().engine;
  if (name === 'js') return jsEngine;
  if (name === 'native') {
    const state = loadNative();
    if (state.engine === undefined) throw unavailable(state);
    return state.engine;
  }
  throw new InvalidArgumentError(`engine must be "native" or "js" (got ${JSON.stringify(name)})`, { value: name });
}

/** Whether the native engine can be used in this process. */
export function nativeAvailable(): boolean {
  return loadNative().engine !== undefined;
}

/** Which engine is active, what was asked for and, if native is not available, why. */
export function engineInfo(): EngineInfo {
  const { engine, requested } = resolveDefault();
  const info: EngineInfo = { active: engine.name, requested };
  if (requested === 'js') return info;
  const state = loadNative();
  if (state.engine !== undefined) info.nativePath = state.path;
  else info.nativeLoadError = state.error as string;
  return info;
}

/**
 * The registries the native binary was built with, for the test that keeps the two engines' codes,
 * reasons and limits identical. Internal: not exported from the package.
 */
export function nativeRegistry():
  | { version: string; errorCodes: string[]; validationReasons: string[]; limits: [string, number][] }
  | undefined {
  const binding = loadNative().binding;
  if (binding === undefined) return undefined;
  return {
    version: binding.version(),
    errorCodes: binding.errorCodes(),
    validationReasons: binding.validationReasons(),
    limits: binding.limits(),
  };
}
