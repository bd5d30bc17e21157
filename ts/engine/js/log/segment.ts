/**
 * Segment files of docs/FORMAT.md ("Segment"): names, the 64-byte header, and creating a new
 * segment (exclusive create, full size, header, sync, directory sync) off the event loop. Mirrors
 * native/core/src/log/segment.rs.
 */
import { join } from 'node:path';
import { crc32c } from '../../../common/crc32c.js';
import { MAX_SEGMENT_BYTES, MIN_SEGMENT_BYTES, SEGMENT_HEADER_BYTES } from '../../../common/limits.js';
import { readU32, readU64, writeU32, writeU64 } from '../../../common/log-record.js';
import { LogIoError } from '../../../errors.js';
import type { Storage } from './storage.js';

export const SEGMENTS_DIR = 'segments';
export const SEGMENT_VERSION = 1;
/** `LTLOGSEG` in ASCII. */
const SEGMENT_MAGIC = new TextEncoder().encode('LTLOGSEG');
const HEADER_CRC_AT = 60;
const NAME_PATTERN = /^(\d{20})\.seg$/;

/** An open segment file of the log (or the spare that will become its next one). */
export interface Segment {
  base: number;
  size: number;
  fd: number;
  path: string;
  /**
   * Newest store timestamp of a record in it (retention by age); its creation time when opened with
   * none known, -1 when created by this process and still empty.
   */
  lastTimestamp: number;
}

/** A Node system error (or anything thrown by a storage) as the log reports it. */
export function ioError(message: string, cause: unknown): LogIoError {
  const code = (cause as NodeJS.ErrnoException | undefined)?.code;
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new LogIoError(`${message}: ${reason}`, { errno: typeof code === 'string' ? code : undefined, cause });
}

/**
 * Opens an existing file for reading only where the storage can (a read-only open of the log writes
 * nothing, and needs no write permission); a storage without `openReadOnly` opens it as `open` does.
 */
export function openForReading(storage: Storage, path: string): Promise<number> {
  return storage.openReadOnly !== undefined ? storage.openReadOnly(path) : storage.open(path);
}

export function segmentFileName(base: number): string {
  return `${String(base).padStart(20, '0')}.seg`;
}

/** The base position a segment file name stands for, or undefined for any other name. */
export function parseSegmentFileName(name: string): number | undefined {
  const digits = NAME_PATTERN.exec(name)?.[1];
  if (digits === undefined) return undefined;
  const base = Number(digits);
  return Number.isSafeInteger(base) ? base : undefined;
}

export function encodeSegmentHeader(base: number, size: number, createdMs: number): Uint8Array {
  const header = new Uint8Array(SEGMENT_HEADER_BYTES);
  header.set(SEGMENT_MAGIC, 0);
  writeU32(header, 8, SEGMENT_VERSION);
  writeU32(header, 12, SEGMENT_HEADER_BYTES);
  writeU64(header, 16, base);
  writeU64(header, 24, size);
  writeU64(header, 32, createdMs);
  writeU32(header, HEADER_CRC_AT, crc32c(header, 0, HEADER_CRC_AT));
  return header;
}

/** A header read back: valid (with its size), of another format version, or invalid (with why). */
export type HeaderCheck =
  | { kind: 'valid'; size: number; createdMs: number }
  /** A valid header on a file shorter than it says: extended back when it is the last segment. */
  | { kind: 'short'; size: number; createdMs: number }
  | { kind: 'version'; version: number }
  | { kind: 'invalid'; reason: string };

/** Checks the first `length` bytes of a segment file named for `base` whose file is `fileSize` long. */
export function checkSegmentHeader(header: Uint8Array, length: number, base: number, fileSize: number): HeaderCheck {
  if (length < SEGMENT_HEADER_BYTES) return { kind: 'invalid', reason: 'shorter than a header' };
  for (let i = 0; i < SEGMENT_MAGIC.length; i++) {
    if (header[i] !== SEGMENT_MAGIC[i]) return { kind: 'invalid', reason: 'no segment magic' };
  }
  // The version decides the rest of the layout, so it is read before anything else is trusted.
  const version = readU32(header, 8);
  if (version !== SEGMENT_VERSION) return { kind: 'version', version };
  if (readU32(header, HEADER_CRC_AT) !== crc32c(header, 0, HEADER_CRC_AT)) {
    return { kind: 'invalid', reason: 'header checksum mismatch' };
  }
  if (readU32(header, 12) !== SEGMENT_HEADER_BYTES) return { kind: 'invalid', reason: 'wrong header size' };
  if (readU64(header, 16) !== base) return { kind: 'invalid', reason: 'base position differs from the file name' };
  const size = readU64(header, 24);
  if (!(size >= MIN_SEGMENT_BYTES && size <= MAX_SEGMENT_BYTES)) {
    return { kind: 'invalid', reason: `segment size ${size} out of range` };
  }
  // Shorter than its header says: recovery was cutting it (truncate, then extend) when it stopped.
  if (fileSize < size) return { kind: 'short', size, createdMs: readU64(header, 32) };
  if (size !== fileSize) return { kind: 'invalid', reason: `file is ${fileSize} bytes, header says ${size}` };
  return { kind: 'valid', size, createdMs: readU64(header, 32) };
}

/**
 * Creates segment `base` of `size` bytes in `segmentsDir`: exclusive create, sized (zero-filled),
 * header written, file and directory synced, so it is durable before any record depends on it. A
 * leftover file of that name (from a preparation that failed to clean up) is not part of the log and
 * is replaced. On failure nothing is left behind.
 */
export async function createSegment(
  storage: Storage,
  segmentsDir: string,
  base: number,
  size: number,
  nowMs: number,
): Promise<Segment> {
  const path = join(segmentsDir, segmentFileName(base));
  let fd: number;
  try {
    fd = await storage.create(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw ioError(`cannot create segment ${path}`, error);
    try {
      await storage.unlink(path);
      fd = await storage.create(path);
    } catch (retryError) {
      throw ioError(`cannot create segment ${path}`, retryError);
    }
  }
  try {
    await storage.truncate(fd, size);
    const header = encodeSegmentHeader(base, size, nowMs);
    if ((await storage.writeAsync(fd, header, 0, header.length, 0)) !== header.length) {
      throw new Error('short write of the segment header');
    }
    await storage.datasync(fd);
    await storage.syncDir(segmentsDir);
  } catch (error) {
    await storage.close(fd).catch(() => undefined);
    await storage.unlink(path).catch(() => undefined);
    throw ioError(`cannot prepare segment ${path}`, error);
  }
  return { base, size, fd, path, lastTimestamp: -1 };
}
