// Reads what a prebuilt addon is without loading it, so binaries for other platforms can be checked
// here: the file format and CPU (ELF or Mach-O, x64 or arm64), the libraries it links against, the
// oldest glibc it needs, whether it exports the Node-API entry point (napi_register_module_v1) and
// the litetopic version it was built for (the marker native/napi/src/lib.rs keeps in every binary).
//
//   node scripts/inspect-binary.mjs <file>...   prints one JSON object per file
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const NAPI_ENTRY = 'napi_register_module_v1';
const VERSION_MARKER = 'litetopic-version:';

const ELF_MACHINES = { 62: 'x64', 183: 'arm64' };
const MACHO_CPUS = { 16777223: 'x64', 16777228: 'arm64' };

/** The NUL-terminated string at `at`. */
function cString(bytes, at) {
  const end = bytes.indexOf(0, at);
  return bytes.toString('latin1', at, end < 0 ? bytes.length : end);
}

/**
 * The version after the marker, or undefined when the binary carries none. The prefix alone may also
 * appear elsewhere (the code that strips it holds it too), so only a prefix followed by a version and
 * its NUL counts.
 */
function markedVersion(bytes) {
  for (
    let at = bytes.indexOf(VERSION_MARKER, 0, 'latin1');
    at >= 0;
    at = bytes.indexOf(VERSION_MARKER, at + 1, 'latin1')
  ) {
    const start = at + VERSION_MARKER.length;
    const end = bytes.indexOf(0, start);
    const text = bytes.toString('latin1', start, end < 0 ? start : end);
    if (end >= 0 && end - start <= 64 && /^\d+\.\d+\.\d+[0-9A-Za-z.+-]*$/.test(text)) return text;
  }
  return undefined;
}

/** A 64-bit little-endian ELF shared object (the only kind the targets produce). */
function inspectElf(bytes) {
  const info = { format: 'elf', platform: 'linux', needed: [], exports: [], imports: [] };
  if (bytes[4] !== 2 || bytes[5] !== 1) return { ...info, problem: 'not a 64-bit little-endian ELF file' };
  info.shared = bytes.readUInt16LE(16) === 3;
  info.arch = ELF_MACHINES[bytes.readUInt16LE(18)] ?? `e_machine ${bytes.readUInt16LE(18)}`;
  const shoff = Number(bytes.readBigUInt64LE(40));
  const shentsize = bytes.readUInt16LE(58);
  const shnum = bytes.readUInt16LE(60);
  const sections = [];
  for (let i = 0; i < shnum; i++) {
    const at = shoff + i * shentsize;
    if (at + 64 > bytes.length) return { ...info, problem: 'section headers run past the end of the file' };
    sections.push({
      type: bytes.readUInt32LE(at + 4),
      offset: Number(bytes.readBigUInt64LE(at + 24)),
      size: Number(bytes.readBigUInt64LE(at + 32)),
      link: bytes.readUInt32LE(at + 40),
    });
  }
  const stringsOf = (section) => sections[section.link]?.offset ?? 0;
  const glibc = [];
  for (const section of sections) {
    if (section.type === 11) {
      // SHT_DYNSYM: the names this object exports are its defined (st_shndx != 0) global symbols.
      const strings = stringsOf(section);
      for (let at = section.offset; at + 24 <= section.offset + section.size; at += 24) {
        const bind = bytes[at + 4] >> 4;
        if (bind !== 1 && bind !== 2) continue;
        const name = cString(bytes, strings + bytes.readUInt32LE(at));
        if (bytes.readUInt16LE(at + 6) !== 0) info.exports.push(name);
        else if (name !== '') info.imports.push(name);
      }
    } else if (section.type === 6) {
      // SHT_DYNAMIC: DT_NEEDED (1) names each library the loader must find.
      const strings = stringsOf(section);
      for (let at = section.offset; at + 16 <= section.offset + section.size; at += 16) {
        if (bytes.readBigInt64LE(at) === 1n)
          info.needed.push(cString(bytes, strings + Number(bytes.readBigUInt64LE(at + 8))));
      }
    } else if (section.type === 0x6ffffffe) {
      // SHT_GNU_verneed: the symbol versions asked of each library, GLIBC_2.17 and the like.
      const strings = stringsOf(section);
      let need = section.offset;
      for (;;) {
        let aux = need + bytes.readUInt32LE(need + 8);
        for (let n = bytes.readUInt16LE(need + 2); n > 0; n--) {
          const name = cString(bytes, strings + bytes.readUInt32LE(aux + 8));
          if (name.startsWith('GLIBC_2.')) glibc.push(name.slice('GLIBC_'.length));
          const next = bytes.readUInt32LE(aux + 12);
          if (next === 0) break;
          aux += next;
        }
        const next = bytes.readUInt32LE(need + 12);
        if (next === 0) break;
        need += next;
      }
    }
  }
  const newer = (a, b) => {
    const [x, y] = [a.split('.').map(Number), b.split('.').map(Number)];
    for (let i = 0; i < Math.max(x.length, y.length); i++)
      if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) > (y[i] ?? 0);
    return false;
  };
  if (glibc.length > 0) info.glibcNeeded = glibc.reduce((a, b) => (newer(b, a) ? b : a));
  // A glibc build asks for libc.so.6; a musl build asks for libc.so (or libc.musl-*), which musl's
  // loader answers with itself.
  if (info.needed.includes('libc.so.6')) info.libc = 'glibc';
  else if (info.needed.some((n) => n === 'libc.so' || n.startsWith('libc.musl-') || n.startsWith('ld-musl-')))
    info.libc = 'musl';
  return info;
}

/**
 * Checks the code directory of the signature at `offset` (a big-endian SuperBlob): every page hash
 * must be the SHA-256 of that page of the file. Returns what is wrong, or undefined.
 */
function codeSignatureProblem(bytes, offset) {
  if (bytes.readUInt32BE(offset) !== 0xfade0cc0) return 'the signature is not a SuperBlob';
  const count = bytes.readUInt32BE(offset + 8);
  for (let i = 0; i < count; i++) {
    const blob = offset + bytes.readUInt32BE(offset + 12 + i * 8 + 4);
    if (bytes.readUInt32BE(blob) !== 0xfade0c02) continue; // not the CodeDirectory
    const hashOffset = bytes.readUInt32BE(blob + 16);
    const codeSlots = bytes.readUInt32BE(blob + 28);
    const codeLimit = bytes.readUInt32BE(blob + 32);
    const hashSize = bytes[blob + 36];
    const hashType = bytes[blob + 37];
    const pageSize = 2 ** bytes[blob + 39];
    if (hashType !== 2 || hashSize !== 32) return `hash type ${hashType} is not SHA-256`;
    for (let slot = 0; slot < codeSlots; slot++) {
      const page = bytes.subarray(slot * pageSize, Math.min((slot + 1) * pageSize, codeLimit));
      const expected = bytes.subarray(blob + hashOffset + slot * 32, blob + hashOffset + (slot + 1) * 32);
      if (!createHash('sha256').update(page).digest().equals(expected)) return `page ${slot} does not match its hash`;
    }
    return codeSlots * pageSize >= codeLimit ? undefined : 'the code directory does not cover the code';
  }
  return 'the signature has no code directory';
}

/** A 64-bit little-endian Mach-O file (what both darwin targets produce). */
function inspectMachO(bytes) {
  const info = { format: 'mach-o', platform: 'darwin', needed: [], exports: [] };
  const cpu = bytes.readUInt32LE(4);
  info.arch = MACHO_CPUS[cpu] ?? `cputype 0x${cpu.toString(16)}`;
  const filetype = bytes.readUInt32LE(12);
  info.shared = filetype === 6 || filetype === 8; // MH_DYLIB or MH_BUNDLE
  const ncmds = bytes.readUInt32LE(16);
  let at = 32;
  for (let i = 0; i < ncmds; i++) {
    if (at + 8 > bytes.length) return { ...info, problem: 'load commands run past the end of the file' };
    const cmd = bytes.readUInt32LE(at);
    const size = bytes.readUInt32LE(at + 4);
    if (cmd === 0x2) {
      // LC_SYMTAB: defined (N_SECT) external (N_EXT) symbols are the exports; C names carry a `_`.
      const symoff = bytes.readUInt32LE(at + 8);
      const nsyms = bytes.readUInt32LE(at + 12);
      const stroff = bytes.readUInt32LE(at + 16);
      for (let s = 0; s < nsyms; s++) {
        const entry = symoff + s * 16;
        const type = bytes[entry + 4];
        if ((type & 0x0e) === 0x0e && (type & 0x01) === 1) {
          const name = cString(bytes, stroff + bytes.readUInt32LE(entry));
          info.exports.push(name.startsWith('_') ? name.slice(1) : name);
        }
      }
    } else if (cmd === 0xc || cmd === 0x80000018) {
      // LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB: the name sits at the offset the command gives.
      info.needed.push(cString(bytes, at + bytes.readUInt32LE(at + 8)));
    } else if (cmd === 0x1d) {
      // LC_CODE_SIGNATURE: Apple Silicon refuses to run unsigned code, so arm64 binaries carry at
      // least an ad-hoc signature; its page hashes must match the file.
      info.codeSignature = codeSignatureProblem(bytes, bytes.readUInt32LE(at + 8)) ?? 'valid';
    } else if (cmd === 0x32) {
      // LC_BUILD_VERSION: the oldest macOS the binary runs on, encoded xxxx.yy.zz.
      const minos = bytes.readUInt32LE(at + 12);
      info.minMacOS = `${minos >>> 16}.${(minos >> 8) & 0xff}`;
    }
    at += size;
  }
  return info;
}

/** What the file at `path` is; `problem` is set when it is not a binary this package could ship. */
export function inspectBinary(path) {
  let bytes;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    return { path, problem: `cannot read: ${error.code ?? error.message}` };
  }
  let info;
  if (bytes.length >= 64 && bytes.readUInt32BE(0) === 0x7f454c46) info = inspectElf(bytes);
  else if (bytes.length >= 32 && bytes.readUInt32LE(0) === 0xfeedfacf) info = inspectMachO(bytes);
  else info = { format: 'unknown', needed: [], exports: [], problem: 'neither ELF nor 64-bit Mach-O' };
  const { exports, ...rest } = info;
  return { path, ...rest, napiEntry: exports.includes(NAPI_ENTRY), version: markedVersion(bytes) };
}

/**
 * Everything wrong with `path` as the prebuilt addon for `target` built for litetopic `version`;
 * an empty list when it fits.
 */
export function problemsFor(path, target, version) {
  const info = inspectBinary(path);
  if (info.problem !== undefined) return { info, problems: [info.problem] };
  const problems = [];
  const format = target.platform === 'darwin' ? 'mach-o' : 'elf';
  if (info.format !== format) problems.push(`is ${info.format}, not ${format}`);
  if (info.platform !== target.platform) problems.push(`is built for ${info.platform}, not ${target.platform}`);
  if (info.arch !== target.arch) problems.push(`is built for ${info.arch}, not ${target.arch}`);
  if (!info.shared) problems.push('is not a shared library');
  if (target.libc !== undefined && info.libc !== target.libc) {
    problems.push(`links ${info.needed.join(', ') || 'no libraries'}, not ${target.libc}`);
  }
  if (!info.napiEntry) problems.push(`does not export ${NAPI_ENTRY}`);
  if (target.platform === 'darwin' && target.arch === 'arm64' && info.codeSignature !== 'valid') {
    problems.push(
      `has ${info.codeSignature === undefined ? 'no code signature' : `a bad code signature: ${info.codeSignature}`}, which Apple Silicon refuses`,
    );
  }
  if (info.version !== version) {
    problems.push(
      `is stale: built for litetopic ${info.version ?? 'an unknown version (no version marker)'}, the package is ${version}`,
    );
  }
  return { info, problems };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const path of process.argv.slice(2)) {
    const { imports, ...shown } = inspectBinary(path);
    console.log(JSON.stringify({ ...shown, imports: imports?.length }));
  }
}
