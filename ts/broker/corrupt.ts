/**
 * Corrupt records met by a POP (docs/BROKER.md, "Corrupt records"). A read of a lite topic that fails
 * with `LOG_CORRUPT` (a bad checksum on a record recovery did not re-read, bit rot on a running log)
 * must not burn the healthy messages read with it, nor stop the POP: the POP delivers what it read
 * below the corrupt offset, releases what it took at or after it, and holds the lite topic at that
 * offset for the group. The hold is retried after a pause that doubles with every failed attempt, so
 * a transient fault heals on its own while a bad record is not read again on every POP; the broker
 * reports it once, through its `'error'` event, and admin lists it until `admin.skipCorrupt` moves
 * the group past it.
 */
import { LogCorruptError } from '../errors.js';
import type { TopicProgress } from './progress.js';
import type { BrokerContext, GroupState } from './state.js';
import type { MessageStore } from './store.js';

/** The first retry of a held offset comes this long after it was found corrupt. */
export const CORRUPT_RETRY_FIRST_MS = 1_000;
/** The pause between retries doubles up to this. */
export const CORRUPT_RETRY_MAX_MS = 300_000;

/**
 * A message of a lite topic that could not be read for a group: a `LogCorruptError` (code
 * `LOG_CORRUPT`) that also says which lite topic, group and offset. `file` and `position` come from
 * the log's own error, when it gave them; `cause` is that error.
 */
export class CorruptMessageError extends LogCorruptError {
  readonly group: string;
  readonly liteTopic: string;
  readonly offset: number;

  constructor(group: string, liteTopic: string, offset: number, cause: unknown) {
    const from = cause as { file?: unknown; position?: unknown; message?: unknown };
    const details: { file?: string; position?: number; cause?: unknown } = { cause };
    if (typeof from?.file === 'string') details.file = from.file;
    if (typeof from?.position === 'number') details.position = from.position;
    super(
      `the message at offset ${offset} of lite topic ${liteTopic} cannot be read for group ${group}: ` +
        `${typeof from?.message === 'string' ? from.message : String(cause)}; the lite topic waits at it ` +
        'until it reads again or admin.skipCorrupt moves the group past it',
      details,
    );
    this.group = group;
    this.liteTopic = liteTopic;
    this.offset = offset;
  }
}

/** A group's hold on one offset of a lite topic found corrupt. */
export interface CorruptHold {
  offset: number;
  /** The error reported when it was found. */
  error: CorruptMessageError;
  /** Clock time it was first found. */
  foundAt: number;
  /** Reads of it that failed so far. */
  failures: number;
  /** Clock time from which the next POP may read it again. */
  retryAt: number;
}

/** Whether `error` is the store's (or any litetopic) corruption error. */
export function isCorrupt(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'LOG_CORRUPT';
}

/** The pause before the next read of an offset that failed `failures` times. */
export function retryDelay(failures: number): number {
  return Math.min(CORRUPT_RETRY_MAX_MS, CORRUPT_RETRY_FIRST_MS * 2 ** Math.min(30, Math.max(0, failures - 1)));
}

/**
 * Holds `offset` of `liteTopic` for `group` after a failed read: the lite topic waits at it until its
 * retry time. The first failure is reported through the broker's background-error hook; later ones
 * only push the retry time back.
 */
export function holdCorrupt(
  context: BrokerContext,
  group: GroupState,
  liteTopic: string,
  progress: TopicProgress,
  offset: number,
  cause: unknown,
  now: number,
): void {
  const known = progress.corruptHold(offset) !== undefined;
  const hold = progress.hold(offset, now, () => new CorruptMessageError(group.name, liteTopic, offset, cause));
  if (hold !== undefined && !known) context.report(hold.error, 'message read');
}

/**
 * `store.read(lmq, from, max)`, except that a corrupt record does not fail it: the messages that can
 * be read are returned (a corrupt one is missing from the result, as a retired one would be) and
 * `onCorrupt` is called with each corrupt offset. Only when the whole read fails with `LOG_CORRUPT`
 * are the offsets read one by one.
 */
export function readAround(
  store: MessageStore,
  lmq: string,
  from: number,
  max: number,
  onCorrupt: (offset: number, error: unknown) => void,
): { offset: number; key: string | undefined }[] {
  try {
    return store.read(lmq, from, max);
  } catch (error) {
    if (!isCorrupt(error)) throw error;
  }
  const out: { offset: number; key: string | undefined }[] = [];
  const end = Math.min(from + max, store.maxOffset(lmq));
  for (let offset = from; offset < end; offset++) {
    try {
      for (const message of store.read(lmq, offset, 1)) if (message.offset === offset) out.push(message);
    } catch (error) {
      if (!isCorrupt(error)) throw error;
      onCorrupt(offset, error);
    }
  }
  return out;
}
