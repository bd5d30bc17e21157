/**
 * The queues of a group's backlog (dispatcher.ts): lite topics with messages ready and no client with
 * room, in the order they began to wait, placed as clients make room.
 *
 * Leaving the backlog removes nothing from a queue: each entry remembers the number its progress was
 * given when it entered the backlog (`TopicProgress.backlogEntry`), and it counts only while the
 * progress still waits under that number. A progress that leaves and enters again gets a new number,
 * and its older entries no longer count: it waits at the end, as in a Set where it was deleted and
 * added again. This replaces a Set's hash insert and delete per wait with an array push, and a
 * queue taken from the front never walks its emptied part again.
 */
import type { TopicProgress } from './progress.js';

/** Emptied front entries kept before the arrays are cut (amortised O(1) per entry). */
const MIN_CUT = 1024;
/**
 * Entries the arrays may have room for and keep once the queue is empty: a queue that empties and
 * fills again with every dispatch writes over its slots instead of growing new arrays each time; one
 * that held more lets them go.
 */
const KEEP_EMPTY = 4096;

export class BacklogQueue {
  /** Entries from `head` to `tail`: the progress of each and its number (`TopicProgress.backlogEntry`). */
  private progress: (TopicProgress | undefined)[] = [];
  private numbers: number[] = [];
  private head = 0;
  private tail = 0;

  /** Entries held, those that no longer count included. */
  get length(): number {
    return this.tail - this.head;
  }

  /** Adds `progress` at the end, under the number it waits with now. */
  push(progress: TopicProgress): void {
    this.progress[this.tail] = progress;
    this.numbers[this.tail] = progress.backlogEntry;
    this.tail++;
  }

  /**
   * Takes the first entry: its progress when that still waits under the entry's number, else
   * undefined (also when there is no entry).
   */
  shift(): TopicProgress | undefined {
    const at = this.head;
    if (at >= this.tail) return undefined;
    const progress = this.progress[at] as TopicProgress;
    const number = this.numbers[at] as number;
    this.progress[at] = undefined;
    this.head = at + 1;
    if (this.head === this.tail) {
      this.head = 0;
      this.tail = 0;
      if (this.progress.length > KEEP_EMPTY) {
        this.progress = [];
        this.numbers = [];
      }
    } else if (this.head >= MIN_CUT && this.head * 2 >= this.tail) {
      this.progress = this.progress.slice(this.head, this.tail);
      this.numbers = this.numbers.slice(this.head, this.tail);
      this.tail -= this.head;
      this.head = 0;
    }
    return waits(progress, number) ? progress : undefined;
  }

  /** Drops the entries that no longer count, keeping the others in order (in place). */
  prune(): void {
    let kept = 0;
    for (let i = this.head; i < this.tail; i++) {
      const entry = this.progress[i] as TopicProgress;
      const number = this.numbers[i] as number;
      if (!waits(entry, number)) continue;
      this.progress[kept] = entry;
      this.numbers[kept] = number;
      kept++;
    }
    // The slots past the kept entries hold no progress (they would keep it from being collected).
    for (let i = kept; i < this.tail; i++) this.progress[i] = undefined;
    this.head = 0;
    this.tail = kept;
  }
}

/** Whether an entry made for `progress` under `number` still counts. */
function waits(progress: TopicProgress, number: number): boolean {
  return progress.backlogged && progress.backlogEntry === number && !progress.removed;
}
