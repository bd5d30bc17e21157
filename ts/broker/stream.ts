/**
 * `consumer.messages()`: the messages as a stream, for the embedded consumer and the RocketMQ one
 * alike. POPs with long poll until the consumer closes or the signal aborts; each message carries
 * its own `ack`, `nack`, `extend` and `deadLetter`. When the loop ends early (`break`, a throw, an
 * abort), the messages of the current batch not yet handed out are made visible again at once, and
 * so is what a POP cut short by an abort brings back later.
 */
import { ClosedError, InvalidArgumentError } from '../errors.js';
import type { RunTarget } from './run.js';
import type { PopOptions, PoppedMessage } from './types.js';

/** A popped message with its own settling methods, as `messages()` yields it. */
export interface StreamedMessage extends PoppedMessage {
  ack(): Promise<void>;
  /** Visible again after `delayMs` (default 0: at once), for a new delivery. */
  nack(delayMs?: number): Promise<void>;
  /** Hidden for `ms` from now (the message is still being worked on). */
  extend(ms: number): Promise<void>;
  /** To the group's dead-letter queue now. */
  deadLetter(): Promise<void>;
}

/** `messages()` options: a POP's, and a signal that ends the stream. */
export interface StreamOptions extends PopOptions {
  signal?: AbortSignal;
}

/** What a stream needs of its consumer: the calls a runner makes, less what only runs use. */
export type StreamTarget = Pick<RunTarget, 'closed' | 'pop' | 'ack' | 'changeInvisibleTime' | 'deadLetter' | 'report'>;

/** Long-poll wait of each POP of a stream unless the options say otherwise. */
export const DEFAULT_STREAM_WAIT_MS = 30_000;

/**
 * The stream of `target`'s messages. `checkPop` checks the POP options as the consumer's `pop`
 * would, once, before the first POP.
 */
export async function* streamMessages(
  target: StreamTarget,
  options: StreamOptions | undefined,
  checkPop: (pop: PopOptions) => void,
): AsyncGenerator<StreamedMessage, void, undefined> {
  const { signal, ...rest } = options ?? {};
  const pop = { waitMs: DEFAULT_STREAM_WAIT_MS, ...rest };
  checkPop(pop);
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new InvalidArgumentError('signal must be an AbortSignal', { value: signal });
  }
  let batch: PoppedMessage[] = [];
  let handedOut = 0;
  try {
    while (!target.closed && !aborted(signal)) {
      batch = await popUnlessAborted(target, pop, signal);
      for (handedOut = 0; handedOut < batch.length; ) {
        if (aborted(signal)) return;
        const message = batch[handedOut++] as PoppedMessage;
        yield streamed(target, message);
      }
    }
  } finally {
    releaseAll(target, batch.slice(handedOut));
  }
}

/** A POP that gives up when `signal` aborts; what it returns after that is released. */
async function popUnlessAborted(
  target: StreamTarget,
  pop: PopOptions,
  signal: AbortSignal | undefined,
): Promise<PoppedMessage[]> {
  const popping = target.pop(pop).catch((error: unknown) => {
    if (error instanceof ClosedError) return [];
    throw error;
  });
  if (signal === undefined) return popping;
  let onAbort: (() => void) | undefined;
  const abort = new Promise<'aborted'>((resolve) => {
    onAbort = () => resolve('aborted');
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    const first = await Promise.race([popping, abort]);
    if (first !== 'aborted') return first;
    popping.then((late) => releaseAll(target, late)).catch(() => undefined);
    return [];
  } finally {
    signal.removeEventListener('abort', onAbort as () => void);
  }
}

function streamed(target: StreamTarget, message: PoppedMessage): StreamedMessage {
  return {
    ...message,
    ack: () => target.ack(message),
    nack: (delayMs = 0) => target.changeInvisibleTime(message, delayMs),
    extend: (ms) => target.changeInvisibleTime(message, ms),
    deadLetter: () => target.deadLetter(message),
  };
}

/** Makes popped messages visible again now; a closed consumer's were released by its close. */
function releaseAll(target: StreamTarget, messages: readonly PoppedMessage[]): void {
  for (const message of messages) {
    if (target.closed) return;
    target.changeInvisibleTime(message, 0).catch((error: unknown) => {
      if (!(error instanceof ClosedError)) target.report(error, 'releasing unconsumed messages');
    });
  }
}

/** Read through a call: an abort can happen while the stream is suspended at a `yield`. */
function aborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}
