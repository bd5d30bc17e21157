/**
 * The disk under the commit-log benchmarks: temporary directories under os.tmpdir(), what a store
 * leaves on disk, the free space (so the large recovery log is scaled down rather than filling the
 * disk), and a `dd`-like probe of sequential write bandwidth with fdatasync and of one sync's latency,
 * since the durable targets are stated against this disk's speed.
 */

import {
  closeSync,
  fdatasyncSync,
  mkdtempSync,
  openSync,
  readdirSync,
  rmSync,
  statfsSync,
  statSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stats } from './lib.js';

const { median } = stats;

/** A fresh directory under os.tmpdir(); remove it with `removeDir`. */
export function tempDir(label: string): string {
  return mkdtempSync(join(tmpdir(), `litetopic-bench-${label}-`));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export interface DiskUsage {
  /** Sum of file sizes. */
  apparentBytes: number;
  /** Blocks actually allocated (st_blocks × 512): sparse, preallocated tails cost nothing here. */
  allocatedBytes: number;
}

export function diskUsage(path: string): DiskUsage {
  const stat = statSync(path);
  if (!stat.isDirectory()) return { apparentBytes: stat.size, allocatedBytes: stat.blocks * 512 };
  let apparentBytes = 0;
  let allocatedBytes = 0;
  for (const entry of readdirSync(path)) {
    const usage = diskUsage(join(path, entry));
    apparentBytes += usage.apparentBytes;
    allocatedBytes += usage.allocatedBytes;
  }
  return { apparentBytes, allocatedBytes };
}

/** Bytes an unprivileged writer can still use under os.tmpdir(). */
export function freeBytes(): number {
  const stats = statfsSync(tmpdir());
  return stats.bavail * stats.bsize;
}

export interface DiskProbe {
  /** Bytes written sequentially in 1 MiB writes, then one fdatasync (`dd bs=1M conv=fdatasync`). */
  bytes: number;
  seconds: number;
  bytesPerSecond: number;
  /** Median time of one 4 KiB append followed by fdatasync, µs: the floor under any synced commit. */
  syncLatencyMicros: number;
}

const PROBE_BLOCK_BYTES = 1 << 20;
const LATENCY_SAMPLES = 200;
const LATENCY_WRITE_BYTES = 4096;

export function probeDisk(bytes: number): DiskProbe {
  const dir = tempDir('disk');
  try {
    const block = Buffer.alloc(PROBE_BLOCK_BYTES, 0x5a);
    const file = join(dir, 'probe');
    let fd = openSync(file, 'w');
    const started = performance.now();
    for (let written = 0; written < bytes; written += block.length) writeSync(fd, block);
    fdatasyncSync(fd);
    const seconds = (performance.now() - started) / 1000;
    closeSync(fd);
    rmSync(file);
    fd = openSync(join(dir, 'latency'), 'a');
    const small = block.subarray(0, LATENCY_WRITE_BYTES);
    const samples: number[] = [];
    for (let i = 0; i < LATENCY_SAMPLES; i++) {
      const at = performance.now();
      writeSync(fd, small);
      fdatasyncSync(fd);
      samples.push((performance.now() - at) * 1000);
    }
    closeSync(fd);
    return { bytes, seconds, bytesPerSecond: bytes / seconds, syncLatencyMicros: median(samples) };
  } finally {
    removeDir(dir);
  }
}
