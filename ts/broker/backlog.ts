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

export class BacklogQueue {
  private progress: (TopicProgress | undefined)[] = [];
  private numbers: number[] = [];
  private head = 0;

  /** Entries held, those that no longer count included. */
  get length(): number {
    return this.progress.length - this.head;
  }

  /** Adds `progress` at the end, under the number it waits with now. */
  push(progress: TopicProgress): void {
    this.progress.push(progress);
    this.numbers.push(progress.backlogEntry);
  }

  /**
   * Takes the first entry: its progress when that still waits under the entry's number, else
   * undefined (also when there is no entry).
   */
  shift(): TopicProgress | undefined {
    const at = this.head;
    if (at >= this.progress.length) return undefined;
    const progress = this.progress[at] as TopicProgress;
    const number = this.numbers[at] as number;
    this.progress[at] = undefined;
    this.head = at + 1;
    if (this.head === this.progress.length) {
      this.progress.length = 0;
      this.numbers.length = 0;
      this.head = 0;
    } else if (this.head >= MIN_CUT && this.head * 2 >= this.progress.length) {
      this.progress = this.progress.slice(this.head);
      this.numbers = this.numbers.slice(this.head);
      this.head = 0;
    }
    return waits(progress, number) ? progress : undefined;
  }

  /** Drops the entries that no longer count, keeping the others in order. */
  prune(): void {
    const progress: TopicProgress[] = [];
    const numbers: number[] = [];
    for (let i = this.head; i < this.progress.length; i++) {
      const entry = this.progress[i] as TopicProgress;
      const number = this.numbers[i] as number;
      if (!waits(entry, number)) continue;
      progress.push(entry);
      numbers.push(number);
    }
    this.progress = progress;
    this.numbers = numbers;
    this.head = 0;
  }
}

/** Whether an entry made for `progress` under `number` still counts. */
function waits(progress: TopicProgress, number: number): boolean {
  return progress.backlogged && progress.backlogEntry === number && !progress.removed;
}
