/**
 * A client's queued events (dispatcher.ts): lite topics, as the group's progress on each, in the
 * order they were queued, each at most once. A POP takes them from the front, a client that leaves
 * or stops holding a lite topic has one taken from anywhere.
 *
 * An array walked from a head index, not a `Set`: a set used as a queue keeps the entries deleted
 * from its front until it is rehashed, and taking its first entry walks over all of them, so a POP
 * from a long queue paid for every event taken before it. Each progress keeps its place in the
 * queue it waits in (`TopicProgress.eventQueue`), so membership and removal need no lookup; a
 * key-shared lite topic waits at several clients at once, and keeps its places in the others in a
 * map (`TopicProgress.otherEventQueues`).
 */
import type { TopicProgress } from './progress.js';

/** Emptied slots a queue may hold beyond its entries before it is packed (plus as many as it holds). */
const SLACK = 32;
/**
 * Slots an emptied queue keeps to write over: a queue that a POP empties and dispatch fills again
 * does not grow a new array each time; one that held more lets it go.
 */
const KEEP_EMPTY = 4096;

export class EventQueue implements Iterable<TopicProgress> {
  /** The entries at their places from `head` to `tail`, undefined once taken; none live below `head`. */
  private slots: (TopicProgress | undefined)[] = [];
  private head = 0;
  private tail = 0;
  private count = 0;

  get size(): number {
    return this.count;
  }

  has(progress: TopicProgress): boolean {
    return this.placeOf(progress) >= 0;
  }

  /** Queues `progress` at the end, unless it is queued here already. */
  add(progress: TopicProgress): void {
    if (this.has(progress)) return;
    this.setPlace(progress, this.tail);
    this.slots[this.tail++] = progress;
    this.count++;
  }

  /** The entry at the front, if any. */
  first(): TopicProgress | undefined {
    return this.count === 0 ? undefined : this.slots[this.head];
  }

  /** Takes `progress` off the queue; whether it was queued. */
  delete(progress: TopicProgress): boolean {
    const place = this.placeOf(progress);
    if (place < 0) return false;
    this.clearPlace(progress);
    this.slots[place] = undefined;
    if (--this.count === 0) {
      this.head = 0;
      this.tail = 0;
      if (this.slots.length > KEEP_EMPTY) this.slots = [];
      return true;
    }
    if (place === this.head) {
      while (this.slots[this.head] === undefined) this.head++;
    }
    // Emptied slots (the front, and entries taken from the middle) stay within the entries' count.
    if (this.tail - this.head - this.count > this.count + SLACK) this.pack();
    return true;
  }

  *[Symbol.iterator](): IterableIterator<TopicProgress> {
    for (let i = this.head; i < this.tail; i++) {
      const progress = this.slots[i];
      if (progress !== undefined) yield progress;
    }
  }

  /** Moves the entries to the front of the array, in order, giving them their new places. */
  private pack(): void {
    let kept = 0;
    for (let i = this.head; i < this.tail; i++) {
      const progress = this.slots[i];
      if (progress === undefined) continue;
      this.setPlace(progress, kept);
      this.slots[kept++] = progress;
    }
    // The slots after the entries hold no progress (they would keep it from being collected).
    for (let i = kept; i < this.tail; i++) this.slots[i] = undefined;
    this.head = 0;
    this.tail = kept;
  }

  private placeOf(progress: TopicProgress): number {
    if (progress.eventQueue === this) return progress.eventPlace;
    return progress.otherEventQueues?.get(this) ?? -1;
  }

  private setPlace(progress: TopicProgress, place: number): void {
    if (progress.eventQueue === undefined || progress.eventQueue === this) {
      progress.eventQueue = this;
      progress.eventPlace = place;
      return;
    }
    progress.otherEventQueues ??= new Map();
    progress.otherEventQueues.set(this, place);
  }

  private clearPlace(progress: TopicProgress): void {
    if (progress.eventQueue === this) {
      progress.eventQueue = undefined;
      progress.eventPlace = -1;
      return;
    }
    const others = progress.otherEventQueues;
    if (others === undefined) return;
    others.delete(this);
    if (others.size === 0) progress.otherEventQueues = undefined;
  }
}
