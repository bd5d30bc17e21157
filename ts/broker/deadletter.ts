/**
 * Dead letters (docs/BROKER.md, "Dead letters"): a message that would be delivered beyond its group's
 * `maxReconsumeTimes`, or one a consumer moves explicitly, is appended to the group's dead-letter
 * queue — the LMQ `%LMQ%$<parent>$%DLQ%<group>` — with its original lite topic, offset, message id
 * and attempt count in reserved properties, and then counts as acked, so its lite topic goes on.
 * The dead-letter queue is not a lite topic (its name is outside the lite alphabet): patterns never
 * match it and expiry never deletes it. It is read with `broker.deadLetters()` and a dead letter is
 * sent again to its lite topic with `broker.resendDeadLetter()`.
 */
import { InvalidArgumentError } from '../errors.js';
import type { Dispatcher } from './dispatcher.js';
import type { Delivery, TopicProgress } from './progress.js';
import type { BrokerContext, GroupState } from './state.js';
import { lmqName } from './store.js';
import type { SendMessage } from './types.js';

/** The dead-letter "lite topic" of group `g` is `%DLQ%g` (an LMQ name only). */
export const DEAD_LETTER_PREFIX = '%DLQ%';
/** Reserved properties of a dead letter; the original properties are kept beside them. */
export const DEAD_LETTER_PROPERTIES = Object.freeze({
  liteTopic: '%DLQ%.liteTopic',
  offset: '%DLQ%.offset',
  messageId: '%DLQ%.messageId',
  reconsumeTimes: '%DLQ%.reconsumeTimes',
  storeTimestamp: '%DLQ%.storeTimestamp',
});
/** Most dead letters one `deadLetters()` call returns. */
export const MAX_DEAD_LETTER_READ = 1000;

export function deadLetterLmq(parent: string, group: string): string {
  return lmqName(parent, `${DEAD_LETTER_PREFIX}${group}`);
}

/** One message of a dead-letter queue, as `broker.deadLetters()` returns it. */
export interface DeadLetter {
  /** Its offset in the dead-letter queue. */
  offset: number;
  /** Where it came from. */
  liteTopic: string;
  originalOffset: number;
  originalMessageId: string;
  /** The `reconsumeTimes` of its last delivery (deliveries = this + 1; 0 if never delivered). */
  reconsumeTimes: number;
  body: Buffer;
  key?: string;
  tag?: string;
  /** The original properties (the reserved ones removed). */
  properties: Record<string, string>;
  /** When it was moved. */
  storeTimestamp: number;
}

export class DeadLetters {
  constructor(
    private readonly context: BrokerContext,
    private readonly dispatcher: Dispatcher,
    private readonly messageId: (position: number) => string,
  ) {}

  /**
   * Moves `delivery` (hidden as MOVING_TO_DEAD_LETTERS by the caller) to the dead-letter queue, then
   * settles it. If the append fails the delivery becomes visible again and is retried later.
   */
  async move(group: GroupState, liteTopic: string, progress: TopicProgress, delivery: Delivery): Promise<void> {
    const { store, clock } = this.context;
    try {
      const [message] = store.read(lmqName(group.parent.name, liteTopic), delivery.offset, 1);
      if (message !== undefined && message.offset === delivery.offset) {
        const properties: Record<string, string> = {
          ...message.properties,
          [DEAD_LETTER_PROPERTIES.liteTopic]: liteTopic,
          [DEAD_LETTER_PROPERTIES.offset]: String(delivery.offset),
          [DEAD_LETTER_PROPERTIES.messageId]: this.messageId(message.position),
          [DEAD_LETTER_PROPERTIES.reconsumeTimes]: String(delivery.attempt),
          [DEAD_LETTER_PROPERTIES.storeTimestamp]: String(message.storeTimestamp),
        };
        await store.append([
          {
            lmqs: [deadLetterLmq(group.parent.name, group.name)],
            body: message.body,
            key: message.key,
            tag: message.tag,
            properties,
          },
        ]);
      }
    } catch (error) {
      if (progress.delivery(delivery.offset) === delivery) delivery.invisibleUntil = clock.now();
      this.dispatcher.ready(group, liteTopic);
      throw error;
    }
    if (group.progress.get(liteTopic) !== progress) return; // the lite topic expired meanwhile
    progress.settle(delivery.offset);
    this.context.journal.hot('ack', group, progress, delivery.offset);
    this.context.counters.deadLettered(group.name);
    this.dispatcher.armWake(group, progress);
    this.dispatcher.ready(group, liteTopic);
    await this.context.journal.settle();
  }

  /** Up to `maxNum` dead letters of `group` from `fromOffset`. */
  read(group: GroupState, fromOffset: number, maxNum: number): DeadLetter[] {
    if (!Number.isSafeInteger(fromOffset) || fromOffset < 0) {
      throw new InvalidArgumentError('fromOffset must be a non-negative integer', { value: fromOffset });
    }
    if (!Number.isInteger(maxNum) || maxNum < 1 || maxNum > MAX_DEAD_LETTER_READ) {
      throw new InvalidArgumentError(`maxNum must be an integer from 1 to ${MAX_DEAD_LETTER_READ}`, { value: maxNum });
    }
    const lmq = deadLetterLmq(group.parent.name, group.name);
    if (this.context.store.maxOffset(lmq) <= fromOffset) return [];
    return this.context.store.read(lmq, fromOffset, maxNum).map((message) => {
      const properties = { ...message.properties };
      const take = (name: string) => {
        const value = properties[name] ?? '';
        delete properties[name];
        return value;
      };
      const letter: DeadLetter = {
        offset: message.offset,
        liteTopic: take(DEAD_LETTER_PROPERTIES.liteTopic),
        originalOffset: Number(take(DEAD_LETTER_PROPERTIES.offset)),
        originalMessageId: take(DEAD_LETTER_PROPERTIES.messageId),
        reconsumeTimes: Number(take(DEAD_LETTER_PROPERTIES.reconsumeTimes)),
        body: Buffer.from(message.body),
        properties,
        storeTimestamp: message.storeTimestamp,
      };
      take(DEAD_LETTER_PROPERTIES.storeTimestamp);
      if (message.key !== undefined) letter.key = message.key;
      if (message.tag !== undefined) letter.tag = message.tag;
      return letter;
    });
  }

  /** The message to send to put dead letter `letter` back on its lite topic. */
  static resendable(letter: DeadLetter): SendMessage {
    const message: SendMessage = { liteTopic: letter.liteTopic, body: letter.body, properties: letter.properties };
    if (letter.key !== undefined) message.key = letter.key;
    if (letter.tag !== undefined) message.tag = letter.tag;
    return message;
  }
}
