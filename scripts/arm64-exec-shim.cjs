// Preloaded (NODE_OPTIONS=--require) into every process of the emulated arm64 test run, see
// scripts/test-arm64.mjs. This machine runs arm64 programs only through qemu-user, without the
// kernel's binfmt_misc hand-off, so a child process that starts an arm64 executable (node itself, the
// esbuild binary tsx uses) would fail with ENOEXEC. The shim prefixes such commands with the emulator,
// so the tests spawn children exactly as they would on an arm64 machine. A command that execs its
// arguments (`unshare ... node ...`) gets the emulator put before the arm64 program among them.
'use strict';
const childProcess = require('node:child_process');
const { closeSync, fstatSync, openSync, readSync } = require('node:fs');
const { syncBuiltinESMExports } = require('node:module');
const { promisify } = require('node:util');

const emulator = process.env.LITETOPIC_ARM64_QEMU;
const sysroot = process.env.LITETOPIC_ARM64_SYSROOT;
/** ELF e_machine of AArch64. */
const EM_AARCH64 = 183;
const known = new Map();

/** Whether `file` is an AArch64 ELF program one may run: executable, not a library (read once per path). */
function isArm64(file) {
  if (typeof file !== 'string' || !file.startsWith('/') || file.endsWith('.node') || file.endsWith('.so')) return false;
  let verdict = known.get(file);
  if (verdict === undefined) {
    verdict = false;
    try {
      const fd = openSync(file, 'r');
      try {
        const head = Buffer.alloc(20);
        const executable = (fstatSync(fd).mode & 0o111) !== 0;
        if (executable && readSync(fd, head, 0, 20, 0) === 20 && head.readUInt32BE(0) === 0x7f454c46) {
          verdict = head.readUInt16LE(18) === EM_AARCH64;
        }
      } finally {
        closeSync(fd);
      }
    } catch {
      verdict = false;
    }
    known.set(file, verdict);
  }
  return verdict;
}

/** Rewrites (file, args) to run an arm64 file, the command or one it execs, under the emulator. */
function emulated(file, args) {
  if (emulator === undefined) return undefined;
  if (isArm64(file)) return [emulator, ['-L', sysroot, file, ...args]];
  const at = args.findIndex(isArm64);
  if (at === -1) return undefined;
  return [file, [...args.slice(0, at), emulator, '-L', sysroot, ...args.slice(at)]];
}

for (const name of ['spawn', 'spawnSync', 'execFile', 'execFileSync']) {
  const original = childProcess[name];
  childProcess[name] = function patched(file, args, ...rest) {
    const rewritten = emulated(file, Array.isArray(args) ? args : []);
    if (rewritten === undefined) return original.call(this, file, args, ...rest);
    return Array.isArray(args)
      ? original.call(this, rewritten[0], rewritten[1], ...rest)
      : original.call(this, rewritten[0], rewritten[1], args, ...rest);
  };
}
// util.promisify(execFile) resolves { stdout, stderr } through execFile's own promisified form, which
// calls the unpatched function: give the patched one a form of its own that goes through the patch.
childProcess.execFile[promisify.custom] = (file, ...rest) => {
  let child;
  const promise = new Promise((resolve, reject) => {
    child = childProcess.execFile(file, ...rest, (error, stdout, stderr) => {
      if (error) reject(Object.assign(error, { stdout, stderr }));
      else resolve({ stdout, stderr });
    });
  });
  promise.child = child;
  return promise;
};
syncBuiltinESMExports();
