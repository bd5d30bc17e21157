/**
 * Test-side readers of the checkpoint file, written from docs/FORMAT.md rather than from the engines:
 * the LMQ directory of a version 2 file (to damage one LMQ's block), and the same checkpoint with
 * its directory reordered (still valid).
 */
import { crc32c } from '../ts/common/crc32c.js';

export interface DirectoryEntry {
  name: string;
  min: number;
  next: number;
  lastWrite: number;
  firstPosition: number;
  crc: number;
  /** Byte offset of the LMQ's entry block. */
  at: number;
}

function u64(bytes: Buffer, at: number): number {
  return Number(bytes.readBigUInt64LE(at));
}

/** The directory of a version 2 checkpoint, in file order, and where the blocks begin. */
export function checkpointDirectory(bytes: Buffer): { entries: DirectoryEntry[]; directoryEnd: number } {
  if (bytes.toString('latin1', 0, 8) !== 'LTCKPT02' || bytes.readUInt32LE(8) !== 2) throw new Error('not version 2');
  const segments = bytes.readUInt32LE(32);
  const count = u64(bytes, 40);
  const directoryEnd = u64(bytes, 48);
  let at = 64 + 16 * segments;
  let blockAt = directoryEnd;
  const entries: DirectoryEntry[] = [];
  for (let i = 0; i < count; i++) {
    const length = bytes.readUInt16LE(at);
    const name = bytes.toString('utf8', at + 2, at + 2 + length);
    at += 2 + length;
    const entry = {
      name,
      min: u64(bytes, at),
      next: u64(bytes, at + 8),
      lastWrite: u64(bytes, at + 16),
      firstPosition: u64(bytes, at + 24),
      crc: bytes.readUInt32LE(at + 32),
      at: blockAt,
    };
    entries.push(entry);
    blockAt += 24 * (entry.next - entry.min);
    at += 40;
  }
  return { entries, directoryEnd };
}

/** The same version 2 checkpoint with its directory (and blocks) in reverse order: still valid. */
export function checkpointReversed(bytes: Buffer): Buffer {
  const { entries, directoryEnd } = checkpointDirectory(bytes);
  const segments = bytes.readUInt32LE(32);
  const head = Buffer.from(bytes.subarray(0, 64 + 16 * segments));
  const directory: Buffer[] = [];
  const blocks: Buffer[] = [];
  for (const entry of [...entries].reverse()) {
    const name = Buffer.from(entry.name, 'utf8');
    const part = Buffer.alloc(2 + name.length + 40);
    part.writeUInt16LE(name.length, 0);
    name.copy(part, 2);
    let at = 2 + name.length;
    for (const value of [entry.min, entry.next, entry.lastWrite, entry.firstPosition]) {
      part.writeBigUInt64LE(BigInt(value), at);
      at += 8;
    }
    part.writeUInt32LE(entry.crc, at);
    directory.push(part);
    blocks.push(bytes.subarray(entry.at, entry.at + 24 * (entry.next - entry.min)));
  }
  const out = Buffer.concat([head, ...directory, ...blocks]);
  if (out.length !== bytes.length) throw new Error('reordering changed the size');
  out.writeBigUInt64LE(BigInt(directoryEnd), 48);
  out.writeUInt32LE(crc32c(out, 64, directoryEnd), 56);
  out.writeUInt32LE(crc32c(out, 0, 60), 60);
  return out;
}
