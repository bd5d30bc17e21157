/**
 * The binary form of group progress in the state journal (docs/FORMAT.md, "Broker state", version
 * 2): compaction writes every group's progress as a few large binary records instead of one JSON
 * record per lite topic, so a reopen with 100,000 lite topics decodes them straight into progress
 * objects, without 100,000 `JSON.parse` calls and the arrays they build. A binary payload starts
 * with a 0 byte, which no JSON record can (they start with `[`).
 *
 * Layout of one record's payload (little-endian):
 *   u8 0, u8 kind 1 (progress batch), u16 group name length, group name (UTF-8), u32 count n, then n ×
 *   { u16 lite topic length, lite topic (UTF-8), f64 committed, f64 next, u32 deliveries d,
 *     d × (f64 offset, u32 attempt, f64 invisible until, u8 acked) }
 * Numbers that are offsets or times are f64: integers up to 2^53, as everywhere in the broker.
 *
 * Version 3 adds the hot records in binary (`encodeHot`): `start`, `ack` and `deliver`, written on
 * every arrival that starts a group's progress, every ack and every POP, whose JSON text cost more
 * than the rest of an ack. Version 4 names their group and lite topic by number (`writeHotById`),
 * each number given by a `NAME` record (`encodeNames`, `writeNamed`) once per file: writing a name cost more
 * than the rest of such a record.
 */
import type { TopicProgress } from './progress.js';

export const BINARY_RECORD = 0;
const PROGRESS_BATCH = 1;
/** Version 3: the records of every arrival, delivery and ack (`HotKind`), in binary. */
const HOT_KINDS = { start: 2, ack: 3, deliver: 4 } as const;
/**
 * Version 4: a name given a number, from this record on (a later `NAME` record may give the number
 * to another name), so hot records name their group and lite topic by number.
 */
const NAME = 5;
/** Version 4: the hot records, naming group and lite topic by the numbers `NAME` records gave. */
const HOT_BY_ID_KINDS = { start: 6, ack: 7, deliver: 8 } as const;
/** The largest binary kind this release knows. */
const LAST_KIND = HOT_BY_ID_KINDS.deliver;
/** The largest number a `NAME` record gives (a u32). */
export const MAX_NAME_ID = 0xffff_ffff;
/** A batch is closed once it reaches this size (records stay far below MAX_JOURNAL_RECORD_BYTES). */
const BATCH_BYTES = 1024 * 1024;
const TOPIC_FIXED_BYTES = 2 + 8 + 8 + 4;
const DELIVERY_BYTES = 8 + 4 + 8 + 1;

/** The deliveries a progress record keeps: every one in [committed, next), acked or not. */
function deliveryCount(progress: TopicProgress): number {
  let count = 0;
  for (let offset = progress.committed; offset < progress.next; offset++) {
    if (progress.delivery(offset) !== undefined) count++;
  }
  return count;
}

/**
 * The binary records holding `progress` (lite topic → progress) of group `group`, each after
 * `reserve` bytes left for the caller (the journal's frame header), so compaction frames them in
 * place instead of copying every batch into a frame.
 */
export function encodeProgress(group: string, progress: ReadonlyMap<string, TopicProgress>, reserve = 0): Buffer[] {
  return [...progressBatches(group, progress, reserve)];
}

/**
 * `encodeProgress` one record at a time, each closed once it reaches `batchBytes`; `each` is called
 * with every progress as its batch is written. The map may change between records (a compaction
 * runs across event-loop turns): a batch is gathered and written in one go, so each progress is
 * written as it was at one moment, and the iteration goes on over the map as it is then (lite topics
 * added since are written too, deleted ones not).
 */
export function* progressBatches(
  group: string,
  progress: ReadonlyMap<string, TopicProgress>,
  reserve = 0,
  batchBytes = BATCH_BYTES,
  each?: (progress: TopicProgress) => void,
): Generator<Buffer, void, undefined> {
  const groupBytes = Buffer.byteLength(group, 'utf8');
  // The lite topics of the batch being gathered, with their delivery counts.
  let names: string[] = [];
  let entries: TopicProgress[] = [];
  let counts: number[] = [];
  let bytes = 0;
  const flush = (): Buffer => {
    const out = Buffer.allocUnsafe(reserve + 4 + groupBytes + 4 + bytes);
    out[reserve] = BINARY_RECORD;
    out[reserve + 1] = PROGRESS_BATCH;
    let at = writeName(out, reserve + 2, group);
    out.writeUInt32LE(names.length, at);
    at += 4;
    for (let i = 0; i < names.length; i++) {
      const entry = entries[i] as TopicProgress;
      at = writeName(out, at, names[i] as string);
      out.writeDoubleLE(entry.committed, at);
      out.writeDoubleLE(entry.next, at + 8);
      out.writeUInt32LE(counts[i] as number, at + 16);
      at += 20;
      for (let offset = entry.committed; offset < entry.next; offset++) {
        const delivery = entry.delivery(offset);
        if (delivery === undefined) continue;
        out.writeDoubleLE(offset, at);
        out.writeUInt32LE(delivery.attempt, at + 8);
        out.writeDoubleLE(delivery.invisibleUntil, at + 12);
        out[at + 20] = delivery.acked ? 1 : 0;
        at += DELIVERY_BYTES;
      }
      each?.(entry);
    }
    names = [];
    entries = [];
    counts = [];
    bytes = 0;
    return out;
  };
  // Gathered and written without a yield in between: the counts hold when the batch is written.
  // By value (each keyed by its own lite topic): no [key, value] array per entry.
  for (const entry of progress.values()) {
    const liteTopic = entry.liteTopic;
    const size = Buffer.byteLength(liteTopic, 'utf8');
    const count = deliveryCount(entry);
    names.push(liteTopic);
    entries.push(entry);
    counts.push(count);
    bytes += TOPIC_FIXED_BYTES + size + DELIVERY_BYTES * count;
    if (bytes >= batchBytes) yield flush();
  }
  if (names.length > 0) yield flush();
}

/** The records written on every arrival, delivery and ack: binary from version 3. */
export type HotKind = keyof typeof HOT_KINDS;
const HOT_KIND_NAMES: readonly (HotKind | undefined)[] = [
  undefined,
  undefined,
  'start',
  'ack',
  'deliver',
  undefined,
  'start',
  'ack',
  'deliver',
];

/** Bytes of a name field's name (UTF-8), or -1 for one too long for its u16 length. */
export function nameBytes(name: string): number {
  const length = Buffer.byteLength(name, 'utf8');
  return length > 0xffff ? -1 : length;
}

/** Writes a name field at `at`: u16 length, then the name (UTF-8); returns where it ends. */
function writeName(out: Buffer, at: number, name: string): number {
  const bytes = out.write(name, at + 2, 'utf8');
  out.writeUInt16LE(bytes, at);
  return at + 2 + bytes;
}

/**
 * Bytes of the binary payload of `[kind, group, liteTopic, value]` (`writeHot`), or -1 when a name
 * is too long for its u16 length: the JSON form then carries the record.
 */
export function hotBytes(group: string, liteTopic: string, value: number | readonly number[]): number {
  const groupBytes = nameBytes(group);
  const liteBytes = nameBytes(liteTopic);
  if (groupBytes < 0 || liteBytes < 0) return -1;
  return 6 + groupBytes + liteBytes + (typeof value === 'number' ? 8 : 4 + 8 * value.length);
}

/**
 * Writes the binary payload of `[kind, group, liteTopic, value]` (version 3) at `at`, where
 * `hotBytes` bytes are free: u8 0, u8 kind (2 start, 3 ack, 4 deliver), u16 group length, group
 * (UTF-8), u16 lite topic length, lite topic (UTF-8), then for `start` and `ack` the f64 offset, for
 * `deliver` a u32 count `n` and `n` f64 numbers (offset, attempt, invisible until, ...).
 */
export function writeHot(
  out: Buffer,
  at: number,
  kind: HotKind,
  group: string,
  liteTopic: string,
  value: number | readonly number[],
): void {
  out[at] = BINARY_RECORD;
  out[at + 1] = HOT_KINDS[kind];
  const end = writeName(out, at + 2, group);
  writeValue(out, writeName(out, end, liteTopic), value);
}

/** A hot record's value at `at`: the f64 offset, or a u32 count and that many f64 numbers. */
function writeValue(out: Buffer, at: number, value: number | readonly number[]): void {
  if (typeof value === 'number') {
    out.writeDoubleLE(value, at);
    return;
  }
  let end = out.writeUInt32LE(value.length, at);
  for (const number of value) end = out.writeDoubleLE(number, end);
}

/** The binary payload of `[kind, group, liteTopic, value]` (`writeHot`), or undefined as `hotBytes` says. */
export function encodeHot(
  kind: HotKind,
  group: string,
  liteTopic: string,
  value: number | readonly number[],
): Buffer | undefined {
  const bytes = hotBytes(group, liteTopic, value);
  if (bytes < 0) return undefined;
  const out = Buffer.allocUnsafe(bytes);
  writeHot(out, 0, kind, group, liteTopic, value);
  return out;
}

/**
 * The `[kind, group, liteTopic, value]` a binary hot record (checked by `checkBinary`) holds, or
 * undefined for a record that is not one. A version 4 record names its group and lite topic by
 * number: `nameOf` gives the name of each (the `NAME` records replayed so far).
 */
export function decodeHot(
  payload: Uint8Array,
  nameOf?: (id: number) => string,
): [HotKind, string, string, number | number[]] | undefined {
  const kind = HOT_KIND_NAMES[payload[1] as number];
  if (kind === undefined) return undefined;
  const buffer = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  let group: string;
  let liteTopic: string;
  let valueAt: number;
  if ((payload[1] as number) >= HOT_BY_ID_KINDS.start) {
    if (nameOf === undefined) throw new Error('a hot record by number needs the names of its file');
    group = nameOf(buffer.readUInt32LE(2));
    liteTopic = nameOf(buffer.readUInt32LE(6));
    valueAt = 10;
  } else {
    const groupEnd = 4 + buffer.readUInt16LE(2);
    group = buffer.toString('utf8', 4, groupEnd);
    valueAt = groupEnd + 2 + buffer.readUInt16LE(groupEnd);
    liteTopic = buffer.toString('utf8', groupEnd + 2, valueAt);
  }
  if (kind !== 'deliver') return [kind, group, liteTopic, buffer.readDoubleLE(valueAt)];
  const numbers = new Array<number>(buffer.readUInt32LE(valueAt));
  for (let i = 0; i < numbers.length; i++) numbers[i] = buffer.readDoubleLE(valueAt + 4 + 8 * i);
  return [kind, group, liteTopic, numbers];
}

/** Bytes a `NAME` record takes for one name of `nameBytes` UTF-8 bytes (`NAME_RECORD_FIXED_BYTES` aside). */
export function namedBytes(nameBytes: number): number {
  return 6 + nameBytes;
}

/** Bytes of a `NAME` record's payload before its names: u8 0, u8 5, u32 count. */
export const NAME_RECORD_FIXED_BYTES = 6;

/**
 * Writes the start of a `NAME` payload at `at` (version 4): u8 0, u8 5, u32 `count`; `count` names
 * follow (`writeNamed`). From the record on, until another `NAME` record gives a number to another
 * name, hot records of the file name each of these names by its number.
 */
export function writeNameRecordHead(out: Buffer, at: number, count: number): number {
  out[at] = BINARY_RECORD;
  out[at + 1] = NAME;
  return out.writeUInt32LE(count, at + 2);
}

/** Writes one name of a `NAME` record at `at`: u32 `id`, u16 name length, the name (UTF-8); returns its end. */
export function writeNamed(out: Buffer, at: number, id: number, name: string): number {
  out.writeUInt32LE(id, at);
  return writeName(out, at + 4, name);
}

/** Bytes of the payload of a hot record naming its group and lite topic by number (`writeHotById`). */
export function hotByIdBytes(value: number | readonly number[]): number {
  return 10 + (typeof value === 'number' ? 8 : 4 + 8 * value.length);
}

/**
 * Writes a hot record of version 4 at `at` of `out` (a view of the buffer it goes into): u8 0, u8
 * kind (6 start, 7 ack, 8 deliver), u32 group number, u32 lite topic number (both given by earlier
 * `NAME` records), then the value as in `writeHot`. Every arrival, delivery and ack writes one: a
 * view's writes are compiled inline, a `Buffer`'s checked calls are not.
 */
export function writeHotById(
  out: DataView,
  at: number,
  kind: HotKind,
  groupId: number,
  liteId: number,
  value: number | readonly number[],
): void {
  out.setUint8(at, BINARY_RECORD);
  out.setUint8(at + 1, HOT_BY_ID_KINDS[kind]);
  out.setUint32(at + 2, groupId, true);
  out.setUint32(at + 6, liteId, true);
  if (typeof value === 'number') {
    out.setFloat64(at + 10, value, true);
    return;
  }
  out.setUint32(at + 10, value.length, true);
  let end = at + 14;
  for (const number of value) {
    out.setFloat64(end, number, true);
    end += 8;
  }
}

/**
 * A `NAME` record's payload giving `entries` (number, name) their numbers, after `reserve` bytes
 * left for the caller (the journal's frame header).
 */
export function encodeNames(entries: readonly (readonly [number, string])[], reserve = 0): Buffer {
  let bytes = NAME_RECORD_FIXED_BYTES;
  for (const [, name] of entries) bytes += namedBytes(Buffer.byteLength(name, 'utf8'));
  const out = Buffer.allocUnsafe(reserve + bytes);
  let at = writeNameRecordHead(out, reserve, entries.length);
  for (const [id, name] of entries) at = writeNamed(out, at, id, name);
  return out;
}

/** Whether a binary record (checked by `checkBinary`) is a `NAME` record. */
export function isNameRecord(payload: Uint8Array): boolean {
  return payload[1] === NAME;
}

/**
 * Calls `each` with every number and name a `NAME` record (checked by `checkBinary`) gives, in
 * order; false, calling nothing, for any other record.
 */
export function decodeNames(payload: Uint8Array, each: (id: number, name: string) => void): boolean {
  if (payload[1] !== NAME) return false;
  const buffer = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  const count = buffer.readUInt32LE(2);
  for (let i = 0, at = NAME_RECORD_FIXED_BYTES; i < count; i++) {
    const end = at + 6 + buffer.readUInt16LE(at + 4);
    each(buffer.readUInt32LE(at), buffer.toString('utf8', at + 6, end));
    at = end;
  }
  return true;
}

/** Whether `payload` (a binary record of kind `NAME`) has its names add up to its length. */
function checkNames(payload: Uint8Array, view: DataView): boolean {
  if (payload.length < NAME_RECORD_FIXED_BYTES) return false;
  const count = view.getUint32(2, true);
  let at = NAME_RECORD_FIXED_BYTES;
  for (let i = 0; i < count; i++) {
    if (at + 6 > payload.length) return false;
    at += 6 + view.getUint16(at + 4, true);
  }
  return at === payload.length;
}

/** Whether `payload` is a whole hot record: its parts add up to its length. */
function checkHot(payload: Uint8Array, view: DataView): boolean {
  const kind = payload[1] as number;
  let at: number;
  if (kind >= HOT_BY_ID_KINDS.start) {
    at = 10;
  } else {
    if (payload.length < 6) return false;
    at = 4 + view.getUint16(2, true);
    if (at + 2 > payload.length) return false;
    at += 2 + view.getUint16(at, true);
  }
  if (kind !== HOT_KINDS.deliver && kind !== HOT_BY_ID_KINDS.deliver) return at + 8 === payload.length;
  if (at + 4 > payload.length) return false;
  return at + 4 + 8 * view.getUint32(at, true) === payload.length;
}

/** Whether `payload` is a well-formed binary record of a kind this release knows. */
export function checkBinary(payload: Uint8Array): boolean {
  const kind = payload[1] as number;
  if (payload.length < 2 || payload[0] !== BINARY_RECORD || kind < PROGRESS_BATCH || kind > LAST_KIND) return false;
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  if (kind === NAME) return checkNames(payload, view);
  if (kind !== PROGRESS_BATCH) return checkHot(payload, view);
  if (payload.length < 8) return false;
  let at = 4 + view.getUint16(2, true);
  if (at + 4 > payload.length) return false;
  const count = view.getUint32(at, true);
  at += 4;
  for (let i = 0; i < count; i++) {
    if (at + TOPIC_FIXED_BYTES > payload.length) return false;
    at += 2 + view.getUint16(at, true);
    if (at + 20 > payload.length) return false;
    at += 20 + DELIVERY_BYTES * view.getUint32(at + 16, true);
  }
  return at === payload.length;
}

/** Receives what a progress batch holds, one lite topic at a time. */
export interface ProgressSink {
  /** A whole progress of `group` on `liteTopic`; `deliveries` calls back once per delivery. */
  progress(
    group: string,
    liteTopic: string,
    committed: number,
    next: number,
    deliveries: (each: (offset: number, attempt: number, invisibleUntil: number, acked: boolean) => void) => void,
  ): void;
}

/** Whether a binary record checked by `checkBinary` is a progress batch (else a hot record). */
export function isProgressBatch(payload: Uint8Array): boolean {
  return payload[1] === PROGRESS_BATCH;
}

/** Replays a progress batch checked by `checkBinary` into `sink`. */
export function decodeBinary(payload: Uint8Array, sink: ProgressSink): void {
  const buffer = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  let at = 4 + buffer.readUInt16LE(2);
  const group = buffer.toString('utf8', 4, at);
  const count = buffer.readUInt32LE(at);
  at += 4;
  for (let i = 0; i < count; i++) {
    const nameEnd = at + 2 + buffer.readUInt16LE(at);
    const liteTopic = buffer.toString('utf8', at + 2, nameEnd);
    const committed = buffer.readDoubleLE(nameEnd);
    const next = buffer.readDoubleLE(nameEnd + 8);
    const deliveries = buffer.readUInt32LE(nameEnd + 16);
    const first = nameEnd + 20;
    sink.progress(group, liteTopic, committed, next, (each) => {
      for (let k = 0, d = first; k < deliveries; k++, d += DELIVERY_BYTES) {
        each(buffer.readDoubleLE(d), buffer.readUInt32LE(d + 8), buffer.readDoubleLE(d + 12), buffer[d + 20] === 1);
      }
    });
    at = first + DELIVERY_BYTES * deliveries;
  }
}
