/**
 * Frames of the broker's state journal (docs/FORMAT.md, "Broker state"): a u32 payload length, the
 * u32 CRC-32C of the payload, then the payload, all little-endian. Mirrors `seal_frames` in
 * native/core/src/hash.rs, which the native engine's `sealFrames` runs.
 */
import { crc32c } from './crc32c.js';
import { readU32, writeU32 } from './log-record.js';

/** Bytes before a frame's payload: its u32 length, then the u32 CRC-32C of the payload (`sealFrames`). */
export const FRAME_HEADER_BYTES = 8;

/**
 * Fills in the checksum of every frame in `bytes[start, end)`, which holds frames back to back (the
 * checksum written here). Returns how many frames it sealed, or -1 when the range is outside
 * `bytes` or a frame runs past `end` (the frames before it are sealed).
 */
export function sealFrames(bytes: Uint8Array, start: number, end: number): number {
  if (start < 0 || end > bytes.length || start > end) return -1;
  let count = 0;
  for (let at = start; at < end; count++) {
    if (at + FRAME_HEADER_BYTES > end) return -1;
    const payloadEnd = at + FRAME_HEADER_BYTES + readU32(bytes, at);
    if (payloadEnd > end) return -1;
    writeU32(bytes, at + 4, crc32c(bytes, at + FRAME_HEADER_BYTES, payloadEnd));
    at = payloadEnd;
  }
  return count;
}
