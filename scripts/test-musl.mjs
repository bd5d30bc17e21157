#!/usr/bin/env node
// `npm run test:musl`: checks the musl binaries as far as a machine without a musl Node can. No
// registry this project reaches offers one (npm's node packages are glibc builds; Alpine's packages
// are out of reach), so the binary is loaded by musl's own dynamic loader instead of by Node: a small
// C program built with musl-gcc dlopens it with every symbol bound at once (RTLD_NOW), beside a stub
// library standing in for Node's napi_* functions, and looks up napi_register_module_v1. That proves
// musl's loader accepts the binary, finds its C library and resolves every C library function it
// calls; what runs inside Node is covered by the same Rust code on glibc.
//
// linux-x64-musl runs natively; linux-arm64-musl is only inspected (format, CPU, libc, entry point,
// version), since building the probe for arm64 musl needs a cross C toolchain for musl.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inspectBinary, problemsFor } from './inspect-binary.mjs';
import { prebuildPathIn, TARGETS, targetName } from './prebuild-targets.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
const work = join(root, 'target', 'musl-test');

const results = [];
function report(name, failure) {
  results.push(failure === undefined);
  console.log(`${failure === undefined ? 'ok' : 'not ok'} - ${name}`);
  if (failure !== undefined) for (const line of String(failure).trimEnd().split('\n')) console.log(`#   ${line}`);
}

function compile(args) {
  const result = spawnSync('musl-gcc', args, { cwd: work, encoding: 'utf8' });
  if (result.error) return `musl-gcc: ${result.error.message} (run "sudo scripts/setup-cross.sh")`;
  return result.status === 0 ? undefined : `musl-gcc ${args.join(' ')}\n${result.stderr}`;
}

const PROBE = `#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
  if (argc != 3) return 2;
  if (!dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) { fprintf(stderr, "stub: %s\\n", dlerror()); return 1; }
  void *addon = dlopen(argv[2], RTLD_NOW);
  if (!addon) { fprintf(stderr, "addon: %s\\n", dlerror()); return 1; }
  if (!dlsym(addon, "napi_register_module_v1")) { fprintf(stderr, "no napi_register_module_v1\\n"); return 1; }
  puts("loaded");
  return 0;
}
`;

for (const target of TARGETS.filter((t) => t.libc === 'musl')) {
  const binary = prebuildPathIn(root, target);
  const shown = relative(root, binary);
  const { info, problems } = problemsFor(binary, target, version);
  report(
    `${targetName(target)}: ${shown} is a ${target.arch} ELF shared object needing only musl's libc.so, exporting napi_register_module_v1, version ${version}`,
    problems.length > 0
      ? problems.join('; ')
      : info.needed.join() !== 'libc.so'
        ? `links ${info.needed.join(', ')}`
        : undefined,
  );
  if (problems.length > 0 || target.arch !== 'x64' || process.arch !== 'x64') continue;

  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  // Node's functions: every napi_* / node_api_* symbol the addon imports, as empty stubs. Anything
  // else it imports must come from musl.
  const napi = inspectBinary(binary).imports.filter((name) => /^(napi|node_api)_/.test(name));
  writeFileSync(join(work, 'stub.c'), napi.map((name) => `void ${name}(void) {}\n`).join(''));
  writeFileSync(join(work, 'probe.c'), PROBE);
  const built = compile(['-shared', '-fPIC', '-o', 'stub.so', 'stub.c']) ?? compile(['-o', 'probe', 'probe.c']);
  if (built !== undefined) {
    report(`${targetName(target)}: musl's dynamic loader binds every symbol of ${shown}`, built);
    continue;
  }
  const probe = (file) => spawnSync(join(work, 'probe'), [join(work, 'stub.so'), file], { encoding: 'utf8' });
  const loaded = probe(binary);
  report(
    `${targetName(target)}: musl's dynamic loader binds every symbol of ${shown} (${napi.length} napi functions stubbed)`,
    loaded.status === 0 && loaded.stdout.includes('loaded')
      ? undefined
      : `exit ${loaded.status ?? loaded.signal}${loaded.error ? ` (${loaded.error.message})` : ''}\n${loaded.stdout}${loaded.stderr}`,
  );
  // The probe must be able to fail: the glibc build of the same code needs glibc's libraries.
  const glibc = TARGETS.find((t) => t.platform === 'linux' && t.arch === target.arch && t.libc === 'glibc');
  const control = probe(prebuildPathIn(root, glibc));
  report(
    `${targetName(glibc)}: the same probe refuses the glibc build`,
    control.status !== 0 ? undefined : `the probe loaded the glibc build\n${control.stdout}${control.stderr}`,
  );
}

const passed = results.filter(Boolean).length;
console.log(`test:musl: ${passed} passed, ${results.length - passed} failed`);
process.exit(passed === results.length ? 0 : 1);
