/**
 * The dispatcher's wake-ups: each (group, lite topic) with a hidden delivery is woken when its first
 * hidden delivery becomes visible again (dispatcher.ts `armWake`). Every POP arms one and nearly
 * every ack cancels it, so they are kept in one min-heap by (deadline, order of arming) under a
 * single scheduler timer for the earliest, rather than a timer each (a `setTimeout`, its closures
 * and its bookkeeping per delivery).
 *
 * Cancelling is lazy: the entry stays in the heap, stale, because its progress no longer points at
 * it (`TopicProgress.wake`). Stale entries are dropped when they reach the top, and all at once
 * whenever the heap has doubled since it last held only current ones: it never holds more than
 * twice the wake-ups that were pending then (or 1,024), and the clean-up costs O(1) per arming,
 * amortised.
 */
import type { Clock } from '../log.js';
import { MinHeap } from './heap.js';
import type { TopicProgress } from './progress.js';
import type { Scheduler } from './timers.js';

/** Entries the heap may hold before it first drops stale ones. */
const MIN_COMPACT_LENGTH = 1024;

export interface WakeEntry<G> {
  readonly at: number;
  /** Arming order: entries due at the same time run in the order they were armed. */
  readonly seq: number;
  readonly group: G;
  readonly liteTopic: string;
  readonly progress: TopicProgress;
}

const before = <G>(a: WakeEntry<G>, b: WakeEntry<G>) => a.at < b.at || (a.at === b.at && a.seq < b.seq);

export class WakeQueue<G> {
  private readonly heap = new MinHeap<WakeEntry<G>>(before);
  private seq = 0;
  private compactAt = MIN_COMPACT_LENGTH;
  /** The deadline the scheduler timer is set for (Infinity: none). */
  private timerAt = Number.POSITIVE_INFINITY;
  private cancelTimer: (() => void) | undefined;
  /** Inside `fire`, which sets the timer once it is done. */
  private firing = false;

  constructor(
    private readonly scheduler: Scheduler,
    private readonly clock: Clock,
    /** Runs a wake-up that is due and still current. */
    private readonly wake: (entry: WakeEntry<G>) => void,
  ) {}

  /** Arms a wake-up of `progress` at `at`; it is current while `progress.wake` is the returned entry. */
  add(at: number, group: G, liteTopic: string, progress: TopicProgress): WakeEntry<G> {
    if (this.heap.size >= this.compactAt) this.compact();
    const entry: WakeEntry<G> = { at, seq: this.seq++, group, liteTopic, progress };
    // Deadlines are mostly armed in increasing order (now + the same invisible time), so the push
    // usually stops at once.
    this.heap.push(entry);
    if (at < this.timerAt && !this.firing) this.arm(at);
    return entry;
  }

  /** Entries held, current or stale (tests check the bound on it). */
  get size(): number {
    return this.heap.size;
  }

  private arm(at: number): void {
    this.cancelTimer?.();
    this.timerAt = at;
    this.cancelTimer = this.scheduler.at(at, () => this.fire());
  }

  /** Runs every current wake-up that is due, then sets the timer for the next one. */
  private fire(): void {
    this.cancelTimer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = this.clock.now();
    this.firing = true;
    try {
      for (;;) {
        const top = this.heap.peek();
        if (top === undefined || top.at > now) break;
        this.heap.pop();
        // A wake-up arms only deadlines after its own clock reading: nothing it adds is due in this loop.
        if (top.progress.wake === top) this.wake(top);
      }
    } finally {
      this.firing = false;
      const top = this.heap.peek();
      if (top !== undefined) this.arm(top.at);
    }
  }

  /** Drops every stale entry and restores the heap order (Floyd's heapify, O(n)). */
  private compact(): void {
    this.heap.retain((entry) => entry.progress.wake === entry);
    this.compactAt = Math.max(MIN_COMPACT_LENGTH, 2 * this.heap.size);
  }
}
