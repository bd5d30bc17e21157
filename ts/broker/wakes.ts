/**
 * The dispatcher's wake-ups: each (group, lite topic) with a hidden delivery is woken when its first
 * hidden delivery becomes visible again (dispatcher.ts `armWake`). Every POP arms one and nearly
 * every ack cancels it, so they are kept in one binary min-heap by (deadline, order of arming) under
 * a single scheduler timer for the earliest, rather than a timer each (a `setTimeout`, its closures
 * and its bookkeeping per delivery). The heap is held in arrays side by side (deadlines and arming
 * numbers in typed arrays): an arming adds no object.
 *
 * Cancelling is lazy: the entry stays in the heap, stale, because its progress no longer carries its
 * arming number (`TopicProgress.wake`). Stale entries are dropped when they reach the top, and all
 * at once whenever the heap has doubled since it last held only current ones: it never holds more
 * than twice the wake-ups that were pending then (or 1,024), and the clean-up costs O(1) per
 * arming, amortised.
 */
import type { Clock } from '../log.js';
import type { TopicProgress } from './progress.js';
import type { Scheduler } from './timers.js';

/** Entries the heap may hold before it first drops stale ones. */
const MIN_COMPACT_LENGTH = 1024;
/** Room the heap's arrays start with. */
const INITIAL_ROOM = 64;

/** Whether a wake-up due at `at`, armed as number `armed`, comes out before one due at `otherAt` armed as `otherArmed`. */
function earlier(at: number, armed: number, otherAt: number, otherArmed: number): boolean {
  return at < otherAt || (at === otherAt && armed < otherArmed);
}

/** What `TopicProgress.wake` holds while no wake-up of it is pending. */
export const NO_WAKE = -1;

export class WakeQueue<G> {
  /** Entry `i`: due at `at[i]`, armed as number `armed[i]`, for `progress[i]` of `groups[i]`. */
  private at = new Float64Array(INITIAL_ROOM);
  private armed = new Float64Array(INITIAL_ROOM);
  private progress: (TopicProgress | undefined)[] = [];
  private groups: (G | undefined)[] = [];
  private count = 0;
  private nextArmed = 0;
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
    private readonly wake: (group: G, progress: TopicProgress) => void,
  ) {}

  /**
   * Arms a wake-up of `progress` at `at` and returns its arming number: it is current while
   * `progress.wake` holds that number.
   */
  add(at: number, group: G, progress: TopicProgress): number {
    if (this.count >= this.compactAt) this.compact();
    const armed = this.nextArmed++;
    // Deadlines are mostly armed in increasing order (now + the same invisible time), so the push
    // usually stops at once.
    this.push(at, armed, group, progress);
    if (at < this.timerAt && !this.firing) this.arm(at);
    return armed;
  }

  /** Entries held, current or stale (tests check the bound on it). */
  get size(): number {
    return this.count;
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
      // A wake-up arms only deadlines after its own clock reading: nothing it adds is due in this loop.
      while (this.count > 0 && (this.at[0] as number) <= now) {
        const progress = this.progress[0] as TopicProgress;
        const group = this.groups[0] as G;
        const armed = this.armed[0] as number;
        this.popTop();
        if (progress.wake === armed) this.wake(group, progress);
      }
    } finally {
      this.firing = false;
      if (this.count > 0) this.arm(this.at[0] as number);
    }
  }

  private push(at: number, armed: number, group: G, progress: TopicProgress): void {
    if (this.count === this.at.length) this.grow();
    let i = this.count++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!earlier(at, armed, this.at[parent] as number, this.armed[parent] as number)) break;
      this.move(parent, i);
      i = parent;
    }
    this.place(i, at, armed, group, progress);
  }

  /** Whether entry `i` comes out before entry `j`. */
  private before(i: number, j: number): boolean {
    return earlier(this.at[i] as number, this.armed[i] as number, this.at[j] as number, this.armed[j] as number);
  }

  /** Removes the first entry and restores the order. */
  private popTop(): void {
    const last = --this.count;
    if (last > 0) this.move(last, 0);
    this.clear(last);
    if (last > 1) this.down(0);
  }

  /** Moves entry `i` down to where it belongs among its children. */
  private down(from: number): void {
    const n = this.count;
    const at = this.at[from] as number;
    const armed = this.armed[from] as number;
    const group = this.groups[from] as G;
    const progress = this.progress[from] as TopicProgress;
    let i = from;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      const right = child + 1;
      if (right < n && this.before(right, child)) child = right;
      if (!earlier(this.at[child] as number, this.armed[child] as number, at, armed)) break;
      this.move(child, i);
      i = child;
    }
    this.place(i, at, armed, group, progress);
  }

  private move(from: number, to: number): void {
    this.at[to] = this.at[from] as number;
    this.armed[to] = this.armed[from] as number;
    this.groups[to] = this.groups[from];
    this.progress[to] = this.progress[from];
  }

  private place(i: number, at: number, armed: number, group: G, progress: TopicProgress): void {
    this.at[i] = at;
    this.armed[i] = armed;
    this.groups[i] = group;
    this.progress[i] = progress;
  }

  /** Forgets what slot `i` referred to, so a stale entry keeps no progress from being collected. */
  private clear(i: number): void {
    this.groups[i] = undefined;
    this.progress[i] = undefined;
  }

  private grow(): void {
    const at = new Float64Array(this.at.length * 2);
    at.set(this.at);
    this.at = at;
    const armed = new Float64Array(this.armed.length * 2);
    armed.set(this.armed);
    this.armed = armed;
  }

  /** Drops every stale entry and restores the heap order (Floyd's heapify, O(n)). */
  private compact(): void {
    let kept = 0;
    for (let i = 0; i < this.count; i++) {
      const progress = this.progress[i] as TopicProgress;
      if (progress.wake !== this.armed[i]) continue;
      if (i !== kept) this.move(i, kept);
      kept++;
    }
    for (let i = kept; i < this.count; i++) this.clear(i);
    this.count = kept;
    for (let i = (kept >> 1) - 1; i >= 0; i--) this.down(i);
    this.compactAt = Math.max(MIN_COMPACT_LENGTH, 2 * kept);
  }
}
