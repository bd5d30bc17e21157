/**
 * The engine loader and the registries both engines share. Loader decisions are read from a fresh
 * process per environment (the choice is made once per process).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import * as jsLimits from '../ts/common/limits.js';
import { nativeRegistry } from '../ts/engine/load.js';
import {
  ERROR_CODES,
  engineInfo,
  InvalidArgumentError,
  MAX_LITE_TOPIC_BYTES_CEILING,
  matches,
  PatternIndex,
  VALIDATION_REASONS,
  validateLiteTopic,
} from '../ts/index.js';
import { ENGINES } from './engines.js';

const root = join(__dirname, '..');
const fixture = join(__dirname, 'fixtures', 'engine-info.ts');

interface Outcome {
  info?: { active: string; requested: string; nativePath?: string; nativeLoadError?: string };
  works?: boolean;
  error?: { name: string; code: string; message: string; typed: boolean };
}

function loaderIn(env: Record<string, string>): Outcome {
  const base = { ...process.env };
  delete base.LITETOPIC_ENGINE;
  delete base.LITETOPIC_NATIVE_PATH;
  const run = spawnSync(process.execPath, ['--import', 'tsx', fixture], {
    cwd: root,
    env: { ...base, ...env },
    encoding: 'utf8',
  });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as Outcome;
}

describe('loader', () => {
  it('LITETOPIC_ENGINE=js never touches native code', () => {
    const { info, works } = loaderIn({ LITETOPIC_ENGINE: 'js' });
    expect(info).toEqual({ active: 'js', requested: 'js' });
    expect(works).toBe(true);
  });

  it('auto prefers native when it loads', () => {
    const { info } = loaderIn({});
    expect(info?.requested).toBe('auto');
    expect(info?.active).toBe(ENGINES.includes('native') ? 'native' : 'js');
  });

  it('auto falls back to js with the reason when the binary is broken', () => {
    const broken = join(tmpdir(), `litetopic-broken-${process.pid}.node`);
    writeFileSync(broken, 'not a shared object');
    onTestFinished(() => rmSync(broken, { force: true }));
    const { info, works } = loaderIn({ LITETOPIC_NATIVE_PATH: broken });
    expect(info).toMatchObject({ active: 'js', requested: 'auto' });
    expect(info?.nativeLoadError).toContain(broken);
    expect(works).toBe(true);
  });

  it('native mode fails with a typed error naming platform, arch, libc and cause', () => {
    const missing = join(tmpdir(), 'litetopic-missing.node');
    const { error } = loaderIn({ LITETOPIC_ENGINE: 'native', LITETOPIC_NATIVE_PATH: missing });
    expect(error).toMatchObject({ name: 'EngineUnavailableError', code: 'ENGINE_UNAVAILABLE', typed: true });
    expect(error?.message).toContain(`platform ${process.platform}`);
    expect(error?.message).toContain(`arch ${process.arch}`);
    expect(error?.message).toMatch(/libc (glibc|musl|n\/a)/);
    expect(error?.message).toContain(missing);
  });

  it('refuses an unknown LITETOPIC_ENGINE value clearly', () => {
    const { error } = loaderIn({ LITETOPIC_ENGINE: 'fast' });
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', typed: true });
    expect(error?.message).toContain('"fast"');
  });

  it('engineInfo in this process is consistent with the engines under test', () => {
    const info = engineInfo();
    if (ENGINES.includes('native')) expect(info.nativePath).toMatch(/litetopic\.\w+\.node$|\.node$/);
    else expect(info.nativeLoadError).toBeTruthy();
  });
});

describe('options', () => {
  it('reject an unknown engine or dialect with INVALID_ARGUMENT', () => {
    expect(() => matches('a', 'a', { engine: 'wasm' as 'js' })).toThrow(InvalidArgumentError);
    expect(() => new PatternIndex({ dialect: 'amqp' as 'lite' })).toThrow(InvalidArgumentError);
    expect(() => validateLiteTopic('a', { maxBytes: 0 })).toThrow(InvalidArgumentError);
    expect(() => validateLiteTopic('a', { maxBytes: MAX_LITE_TOPIC_BYTES_CEILING + 1 })).toThrow(InvalidArgumentError);
  });
});

describe.runIf(ENGINES.includes('native'))('native binary', () => {
  const registry = nativeRegistry();

  it('was built from this version of the package', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
    const cargo = readFileSync(join(root, 'Cargo.toml'), 'utf8').match(/^version = "([^"]+)"/m)?.[1];
    expect(cargo).toBe(pkg.version);
    expect(registry?.version).toBe(pkg.version);
  });

  it('shares the error codes, validation reasons and limits of the js engine', () => {
    expect(registry?.errorCodes).toEqual([...ERROR_CODES]);
    expect(registry?.validationReasons).toEqual([...VALIDATION_REASONS]);
    expect(Object.fromEntries(registry?.limits ?? [])).toEqual({ ...jsLimits });
  });
});
