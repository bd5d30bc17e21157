import type { TopicProgress } from './progress.js';

/**
 * The deliveries a group acked lately, so a repeated ack of one stays harmless after the offset moved
 * on: exactly the last `capacity`, as (progress, offset, attempt) in a ring of arrays that grow with
 * the acks up to `capacity` (a group that acks little holds little). Recording one writes three slots
 * and hashes nothing, where a set of handle strings would hash and insert a new string per ack.
 *
 * Looking one up (only for an ack below the committed offset: a repeat, or a handle from long ago)
 * goes through an index by progress and offset, built from the ring on the first lookup and kept up
 * to date while lookups go on; it is dropped once `capacity` acks pass without one. A burst of
 * repeats therefore costs one build, and a stray one at most a build per `capacity` acks.
 */
export class RecentAcks {
  /** The ring: grown as acks come, up to `capacity`, then overwritten from `next` on. */
  private readonly progress: TopicProgress[] = [];
  private readonly offsets: number[] = [];
  private readonly attempts: number[] = [];
  private next = 0;
  private index: Map<TopicProgress, Map<number, number>> | undefined;
  /** Acks recorded since the last lookup (the index goes once this reaches `capacity`). */
  private sinceLookup = 0;

  constructor(private readonly capacity: number) {}

  add(progress: TopicProgress, offset: number, attempt: number): void {
    if (this.index !== undefined && ++this.sinceLookup >= this.capacity) this.index = undefined;
    if (this.progress.length < this.capacity) {
      this.progress.push(progress);
      this.offsets.push(offset);
      this.attempts.push(attempt);
    } else {
      const at = this.next;
      this.next = at + 1 === this.capacity ? 0 : at + 1;
      if (this.index !== undefined) {
        this.unindex(
          this.index,
          this.progress[at] as TopicProgress,
          this.offsets[at] as number,
          this.attempts[at] as number,
        );
      }
      this.progress[at] = progress;
      this.offsets[at] = offset;
      this.attempts[at] = attempt;
    }
    if (this.index !== undefined) {
      let offsets = this.index.get(progress);
      if (offsets === undefined) {
        offsets = new Map();
        this.index.set(progress, offsets);
      }
      offsets.set(offset, attempt);
    }
  }

  has(progress: TopicProgress, offset: number, attempt: number): boolean {
    this.sinceLookup = 0;
    if (this.index === undefined) this.index = this.build();
    return this.index.get(progress)?.get(offset) === attempt;
  }

  private build(): Map<TopicProgress, Map<number, number>> {
    const index = new Map<TopicProgress, Map<number, number>>();
    for (let i = 0; i < this.progress.length; i++) {
      const progress = this.progress[i] as TopicProgress;
      let offsets = index.get(progress);
      if (offsets === undefined) {
        offsets = new Map();
        index.set(progress, offsets);
      }
      offsets.set(this.offsets[i] as number, this.attempts[i] as number);
    }
    return index;
  }

  private unindex(
    index: Map<TopicProgress, Map<number, number>>,
    progress: TopicProgress,
    offset: number,
    attempt: number,
  ) {
    const offsets = index.get(progress);
    if (offsets?.get(offset) !== attempt) return;
    offsets.delete(offset);
    if (offsets.size === 0) index.delete(progress);
  }
}
