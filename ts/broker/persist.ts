/**
 * What the broker keeps across restarts (docs/FORMAT.md, "Broker state"): topics,
 * groups, each group's progress per lite topic (committed offset, and every handed-out message after
 * it with its attempt and invisible deadline). Each change is one small record appended to the state
 * journal when the change is made; replaying the records in order rebuilds the state, and a
 * compaction writes the current state as the same records. Subscriptions are session state and are
 * not kept: clients subscribe again and resume from their group's progress.
 */
import { LogCorruptError } from '../errors.js';
import {
  encodeRecord,
  frameRecord,
  type JournalNamed,
  type NameCarrier,
  RECORD_HEADER_BYTES,
  SETTLED,
  type StateJournal,
} from './journal.js';
import { KeySharedProgress, newProgress } from './key-shared-progress.js';
import type { TopicProgress } from './progress.js';
import {
  BadRecord,
  checkAttempt,
  checkGroupConfig,
  checkName,
  checkNumbers,
  checkOffset,
  checkTime,
  checkTopicAttributes,
} from './record-shape.js';
import {
  checkBinary,
  decodeBinary,
  decodeHot,
  decodeNames,
  type HotKind,
  hotByIdBytes,
  hotBytes,
  isNameRecord,
  isProgressBatch,
  type ProgressSink,
  progressBatches,
  writeHot,
  writeHotById,
} from './snapshot.js';
import type { GroupConfig, GroupState, ParentTopic } from './state.js';

/**
 * Bytes of a progress batch a compaction writes: each is made in one go, between which the event
 * loop runs, so this bounds how long a compaction holds it (a few hundred microseconds).
 */
const SNAPSHOT_BATCH_BYTES = 64 * 1024;

/** Topic attributes that are persisted. */
export interface TopicAttributes {
  liteTopicExpirationMs?: number;
}

/**
 * One journal record, a JSON array whose first element names it:
 * - `["epoch", id]`: the directory's broker id (part of every receipt handle).
 * - `["topic", name, attributes]`, `["group", name, config]`: created or updated.
 * - `["start", group, lite, offset]`: the group starts the lite topic at `offset` (fresh progress).
 * - `["deliver", group, lite, [offset, attempt, invisibleUntil, ...]]`: messages handed out, or a
 *   new invisible deadline for a current delivery.
 * - `["ack", group, lite, offset]`: acked (or moved to the dead-letter queue).
 * - `["drop", parent, lite]`: the lite topic expired; every group's progress on it is gone.
 * - `["skip", group, lite, offset]`: `admin.skipCorrupt` moved the group past a corrupt offset, as if
 *   acked.
 * - `["progress", group, lite, committed, next, [offset, attempt, invisibleUntil, acked, ...]]`:
 *   a whole progress, as compaction writes it.
 */
export type StateRecord =
  | ['epoch', string]
  | ['topic', string, TopicAttributes]
  | ['group', string, GroupConfig]
  | ['start', string, string, number]
  | ['deliver', string, string, number[]]
  | ['ack', string, string, number]
  | ['drop', string, string]
  | ['skip', string, string, number]
  | ['progress', string, string, number, number, number[]];

/** Where the broker's parts report changes: the journal, or nothing without a directory. */
export interface JournalRecorder {
  /** Whether records are kept at all: false without a directory, where callers skip building them. */
  readonly keeps: boolean;
  record(record: StateRecord): void;
  /**
   * A hot record (`start`, `deliver`, `ack`) of `group` on the lite topic of `progress`: what
   * `record([kind, group.name, progress.liteTopic, value])` writes, without looking either name up.
   * The lite topic's number is kept on its info (`progress.lite`, shared by every group's progress
   * of it) when the progress has one, else on the progress.
   */
  hot(
    kind: HotKind,
    group: JournalNamed & { readonly name: string },
    progress: JournalNamed & { readonly liteTopic: string; readonly lite?: JournalNamed | undefined },
    value: number | readonly number[],
  ): void;
  /** Under `flush: 'sync'`, waits until every change so far is durable; otherwise at once. */
  settle(): Promise<void>;
  /** Waits until every change so far is durable, whatever the flush mode. */
  durable(): Promise<void>;
  /** Throws the journal's failure (`IO_ERROR`), if it failed: a change made now could not be kept. */
  check(): void;
}

export const noRecorder: JournalRecorder = {
  keeps: false,
  record: () => undefined,
  hot: () => undefined,
  settle: () => SETTLED,
  durable: () => SETTLED,
  check: () => undefined,
};

/** The number of `named` (its name `name`) in the journal's current numbering, asked for once per numbering. */
function numberOf(journal: StateJournal, named: JournalNamed, name: string): number {
  const file = journal.nameFile;
  if (named.journalFile !== file) {
    named.journalName = journal.nameId(name);
    named.journalFile = file;
  }
  return named.journalName;
}

export function journalRecorder(journal: StateJournal): JournalRecorder {
  return {
    keeps: true,
    record: (record) => {
      const kind = record[0];
      if (kind !== 'start' && kind !== 'ack' && kind !== 'deliver') {
        journal.append(record);
        return;
      }
      const [, group, liteTopic, value] = record;
      const groupId = journal.nameId(group);
      appendHot(journal, kind, group, liteTopic, groupId, groupId < 0 ? -1 : journal.nameId(liteTopic), value);
    },
    hot: (kind, group, progress, value) => {
      const groupId = numberOf(journal, group, group.name);
      const liteId = groupId < 0 ? -1 : numberOf(journal, progress.lite ?? progress, progress.liteTopic);
      appendHot(journal, kind, group.name, progress.liteTopic, groupId, liteId, value);
    },
    settle: () => journal.settle(),
    durable: () => journal.durable(),
    check: () => journal.check(),
  };
}

/**
 * Appends a hot record (`start`, `ack`, `deliver`) in its binary form, written in place in the
 * journal: its group and lite topic named by the numbers the journal gave them (snapshot.ts
 * `writeHotById`), or, when either has none (-1), in full (`writeHot`), or as JSON for a name too
 * long for a binary name field.
 */
function appendHot(
  journal: StateJournal,
  kind: HotKind,
  group: string,
  liteTopic: string,
  groupId: number,
  liteId: number,
  value: number | readonly number[],
): void {
  if (groupId >= 0 && liteId >= 0) {
    const { view, at } = journal.claim(hotByIdBytes(value));
    writeHotById(view, at, kind, groupId, liteId, value);
    journal.commit();
    return;
  }
  const bytes = hotBytes(group, liteTopic, value);
  if (bytes < 0) {
    journal.append([kind, group, liteTopic, value]);
    return;
  }
  const { buffer, at } = journal.claim(bytes);
  writeHot(buffer, at, kind, group, liteTopic, value);
  journal.commit();
}

/** The state a journal describes. */
export interface RestoredState {
  epoch: string | undefined;
  topics: Map<string, TopicAttributes>;
  groups: Map<string, GroupConfig>;
  /** group → lite topic → progress (deliveries have no holder until a client takes them). */
  progress: Map<string, Map<string, TopicProgress>>;
}

function progressOf(state: RestoredState, group: string): Map<string, TopicProgress> {
  let map = state.progress.get(group);
  if (map === undefined) {
    map = new Map();
    state.progress.set(group, map);
  }
  return map;
}

/** One delivery of a whole progress: offset, attempt, invisible deadline, acked. */
type ProgressDelivery = (offset: number, attempt: number, invisibleUntil: number, acked: boolean) => void;

/**
 * Restores a whole progress (a `progress` record or a binary batch's entry), checked: its deliveries
 * are in [committed, next) in ascending order, a FIFO progress has one for every offset there (what
 * its dispatch relies on) and a key-shared one spans no more than its window. So a progress takes
 * memory in proportion to its record, whatever the offsets say.
 */
function restoreProgress(
  state: RestoredState,
  group: string,
  liteTopic: string,
  committed: number,
  next: number,
  deliveries: (each: ProgressDelivery) => void,
): void {
  if (committed > next) throw new BadRecord('its committed offset is past its next offset');
  const progress = newProgress(state.groups.get(group), liteTopic, committed);
  const keyShared = progress instanceof KeySharedProgress;
  if (keyShared && next - committed > progress.windowMessages) {
    throw new BadRecord('it spans more offsets than its key-shared window');
  }
  let previous = committed - 1;
  let count = 0;
  deliveries((offset, attempt, invisibleUntil, acked) => {
    if (offset <= previous || offset >= next) {
      throw new BadRecord(`delivery offset ${offset} is not in ascending order inside [committed, next)`);
    }
    previous = offset;
    count++;
    progress.restore(offset, attempt, invisibleUntil, acked);
  });
  if (!keyShared && count !== next - committed) {
    throw new BadRecord('an offset between its committed and next offsets has no delivery');
  }
  progress.next = Math.max(progress.next, next);
  progressOf(state, group).set(liteTopic, progress);
}

/** Where a binary progress batch (snapshot.ts) goes: as a `progress` record would, checked alike. */
function progressSink(state: RestoredState): ProgressSink {
  return {
    progress(group, liteTopic, committed, next, deliveries) {
      restoreProgress(
        state,
        checkName(group, 'the group'),
        checkName(liteTopic, 'the lite topic'),
        checkOffset(committed, 'the committed offset'),
        checkOffset(next, 'the next offset'),
        (each) =>
          deliveries((offset, attempt, invisibleUntil, acked) =>
            each(checkOffset(offset, 'a delivery offset'), attempt, checkTime(invisibleUntil, 'a deadline'), acked),
          ),
      );
    },
  };
}

/** Replays deliveries `[offset, attempt, invisibleUntil, ...]` handed out (a `deliver` record). */
function replayDeliveries(progress: TopicProgress | undefined, list: readonly unknown[]): void {
  for (let i = 0; i < list.length; i += 3) {
    const offset = checkOffset(list[i], 'a delivery offset');
    const attempt = checkAttempt(list[i + 1], 'a delivery attempt');
    const invisibleUntil = checkTime(list[i + 2], 'a delivery deadline');
    if (progress === undefined) continue;
    // A key-shared progress never spans more than its window (key-shared-progress.ts): one handed
    // out at `offset` means the writer had committed up to `offset - window + 1` at least, through
    // acks replayed above or through retention, which is not journaled. Skipping there now keeps
    // replay from filling the gap below it.
    if (progress instanceof KeySharedProgress && offset >= progress.committed + progress.windowMessages) {
      progress.skipTo(offset - progress.windowMessages + 1);
    }
    progress.restore(offset, attempt, invisibleUntil, false);
  }
}

/** Checks that a record has the kind and `fields` fields after it. */
function arity(record: readonly unknown[], fields: number): void {
  if (record.length !== fields + 1) throw new BadRecord(`it has ${record.length - 1} fields, not ${fields}`);
}

/**
 * The names `NAME` records gave numbers in the file being replayed (snapshot.ts), up to the record
 * being applied: the latest record giving a number decides what it names.
 */
class ReplayNames {
  private readonly names = new Map<number, string>();
  /** The name numbered `id`; a number no earlier record gave is a bad record. */
  readonly nameOf = (id: number): string => {
    const name = this.names.get(id);
    if (name === undefined) throw new BadRecord(`it names number ${id}, which no earlier record gave a name`);
    return name;
  };

  private readonly name = (id: number, name: string): void => {
    this.names.set(id, name);
  };

  /** Takes in a `NAME` record; false for any other. */
  apply(payload: Uint8Array): boolean {
    return decodeNames(payload, this.name);
  }
}

/** Applies one record, checking every field first; a record of an unknown kind is skipped. */
function apply(state: RestoredState, sink: ProgressSink, names: ReplayNames, item: unknown): void {
  let record: readonly unknown[];
  if (item instanceof Uint8Array) {
    if (!checkBinary(item)) throw new BadRecord('its binary layout is not valid');
    if (isProgressBatch(item)) {
      decodeBinary(item, sink);
      return;
    }
    if (names.apply(item)) return;
    const hot = decodeHot(item, names.nameOf);
    if (hot === undefined) return;
    record = hot;
  } else if (Array.isArray(item)) {
    record = item;
  } else {
    throw new BadRecord('it is neither a JSON array nor a binary record');
  }
  const kind = record[0];
  switch (kind) {
    case 'epoch':
      arity(record, 1);
      state.epoch = checkName(record[1], 'the epoch');
      break;
    case 'topic':
      arity(record, 2);
      state.topics.set(checkName(record[1], 'the topic'), checkTopicAttributes(record[2]));
      break;
    case 'group':
      arity(record, 2);
      state.groups.set(checkName(record[1], 'the group'), checkGroupConfig(record[2]));
      break;
    case 'start': {
      arity(record, 3);
      const group = checkName(record[1], 'the group');
      const liteTopic = checkName(record[2], 'the lite topic');
      const offset = checkOffset(record[3], 'the start offset');
      progressOf(state, group).set(liteTopic, newProgress(state.groups.get(group), liteTopic, offset));
      break;
    }
    case 'deliver': {
      arity(record, 3);
      const group = checkName(record[1], 'the group');
      const liteTopic = checkName(record[2], 'the lite topic');
      replayDeliveries(state.progress.get(group)?.get(liteTopic), checkNumbers(record[3], 3, 'the deliveries'));
      break;
    }
    case 'ack': {
      arity(record, 3);
      const group = checkName(record[1], 'the group');
      const liteTopic = checkName(record[2], 'the lite topic');
      state.progress.get(group)?.get(liteTopic)?.settle(checkOffset(record[3], 'the acked offset'));
      break;
    }
    case 'drop': {
      arity(record, 2);
      const parent = checkName(record[1], 'the topic');
      const liteTopic = checkName(record[2], 'the lite topic');
      for (const [name, config] of state.groups) {
        if (config.bindTopic === parent) state.progress.get(name)?.delete(liteTopic);
      }
      break;
    }
    case 'skip': {
      // A group moved past a record found corrupt (admin.skipCorrupt): as an ack of that offset.
      arity(record, 3);
      const group = checkName(record[1], 'the group');
      const liteTopic = checkName(record[2], 'the lite topic');
      state.progress.get(group)?.get(liteTopic)?.skipCorrupt(checkOffset(record[3], 'the skipped offset'));
      break;
    }
    case 'progress': {
      arity(record, 5);
      const list = checkNumbers(record[5], 4, 'the deliveries');
      restoreProgress(
        state,
        checkName(record[1], 'the group'),
        checkName(record[2], 'the lite topic'),
        checkOffset(record[3], 'the committed offset'),
        checkOffset(record[4], 'the next offset'),
        (each) => {
          for (let i = 0; i < list.length; i += 4) {
            const acked = list[i + 3];
            if (acked !== 0 && acked !== 1) throw new BadRecord("a delivery's acked flag is not 0 or 1");
            each(
              checkOffset(list[i], 'a delivery offset'),
              checkAttempt(list[i + 1], 'a delivery attempt'),
              checkTime(list[i + 2], 'a delivery deadline'),
              acked === 1,
            );
          }
        },
      );
      break;
    }
    default:
      // A kind a newer minor release added is skipped; something that is not a kind is corrupt.
      if (typeof kind !== 'string') throw new BadRecord('its kind is not a string');
      break;
  }
}

/**
 * Replays records in order: JSON records, and binary records (`Uint8Array`: progress batches and hot
 * records). Every field is checked before it is applied (record-shape.ts); a record that fails throws
 * `LogCorruptError` naming `file` and the record's place, and no state comes back, so nothing of a
 * journal that fails is applied. A record of an unknown kind is skipped (written by a newer minor
 * release).
 */
export function replay(records: readonly unknown[], file = 'the broker state journal'): RestoredState {
  const state: RestoredState = { epoch: undefined, topics: new Map(), groups: new Map(), progress: new Map() };
  const sink = progressSink(state);
  const names = new ReplayNames();
  for (let i = 0; i < records.length; i++) {
    try {
      apply(state, sink, names, records[i]);
    } catch (error) {
      if (!(error instanceof BadRecord)) throw error;
      throw new LogCorruptError(
        `${file}: record ${i + 1} of ${records.length} (${recordKind(records[i])}) is not valid: ${error.message}`,
        { file, cause: error },
      );
    }
  }
  return state;
}

/**
 * What the records of one journal file say, in order, as `StateRecord`s (for inspection and tests):
 * binary hot records decoded with the names their file numbered, `NAME` records taken in and left
 * out, progress batches kept as their payloads. Records are not checked here
 * (`replay` does that).
 */
export function decodeRecords(records: readonly unknown[]): unknown[] {
  const names = new ReplayNames();
  const out: unknown[] = [];
  for (const item of records) {
    if (!(item instanceof Uint8Array) || isProgressBatch(item)) out.push(item);
    else if (!names.apply(item)) out.push(decodeHot(item, names.nameOf) ?? item);
  }
  return out;
}

/** A record's kind for a message: its name, or what it is when it has none. */
function recordKind(item: unknown): string {
  if (item instanceof Uint8Array) {
    if (isProgressBatch(item)) return 'a binary progress batch';
    return isNameRecord(item) ? 'a binary name record' : 'a binary record';
  }
  if (Array.isArray(item) && typeof item[0] === 'string') return `"${item[0].slice(0, 32)}"`;
  return 'not a record';
}

/**
 * The records that describe the current state (what compaction writes), framed: epoch, topics and
 * groups as JSON records, every group's progress as binary batches (snapshot.ts) framed in place
 * (their checksums left to the journal: `frameRecord`), which replay as `progress` records would.
 * Made one record at a time: a compaction takes them across event-loop turns while the state goes
 * on changing, each progress written as it is when its batch is made (`progressBatches`), and
 * `names` carries each group and progress it writes.
 */
export function* snapshot(
  epoch: string,
  parents: Iterable<ParentTopic>,
  groups: Iterable<GroupState>,
  topicAttributes: (parent: ParentTopic) => TopicAttributes,
  names?: NameCarrier,
): Generator<Buffer, void, undefined> {
  const records: StateRecord[] = [['epoch', epoch]];
  for (const parent of parents) records.push(['topic', parent.name, topicAttributes(parent)]);
  const all = [...groups];
  for (const group of all) records.push(['group', group.name, group.config]);
  yield* records.map(encodeRecord);
  for (const group of all) {
    names?.carry(group, group.name);
    // The lite topic's number is kept on its info, shared by every group's progress (see `hot`): carried
    // once per lite topic; the progress's own, only when the info has none.
    const carry =
      names === undefined
        ? undefined
        : (progress: TopicProgress) => {
            const lite = progress.lite;
            if (lite === undefined || !names.carry(lite, progress.liteTopic)) names.carry(progress, progress.liteTopic);
          };
    for (const batch of progressBatches(group.name, group.progress, RECORD_HEADER_BYTES, SNAPSHOT_BATCH_BYTES, carry)) {
      yield frameRecord(batch);
    }
  }
}
