/**
 * Time for the broker: a clock to read and a scheduler to wake things at a clock time (invisible
 * time expiry, long-poll deadlines, stall checks). With the system clock a deadline is one real
 * `setTimeout`; with a manual clock nothing runs on its own: `broker.tick()` runs every deadline the
 * clock has reached, so tests drive time step by step and get the same outcome every run.
 */
import type { Clock } from '../log.js';

export interface Scheduler {
  /**
   * Runs `task` once the clock reaches `atMs`; the returned function cancels it. With `keepAlive`
   * a system timer keeps Node running until then (a waiting POP); others do not.
   */
  at(atMs: number, task: () => void, keepAlive?: boolean): () => void;
  /** Runs every task that is due (manual time); a no-op for system time, where timers fire on their own. */
  runDue(): void;
  /** Cancels everything. */
  clear(): void;
}

/**
 * Real timers: one `setTimeout` per deadline, unref'd so an idle broker does not keep Node alive;
 * a long poll's deadline is the exception, as a caller is awaiting it.
 */
export class SystemScheduler implements Scheduler {
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(private readonly clock: Clock) {}

  at(atMs: number, task: () => void, keepAlive = false): () => void {
    const timer = setTimeout(
      () => {
        this.timers.delete(timer);
        task();
      },
      Math.max(0, atMs - this.clock.now()),
    );
    if (!keepAlive) timer.unref();
    this.timers.add(timer);
    return () => {
      clearTimeout(timer);
      this.timers.delete(timer);
    };
  }

  runDue(): void {}

  clear(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }
}

interface ManualTask {
  atMs: number;
  seq: number;
  task: () => void;
  cancelled: boolean;
}

/** Deadlines kept in order and run by `runDue()` when the (manual) clock has passed them. */
export class ManualScheduler implements Scheduler {
  /** Sorted by (atMs, seq); a few hundred entries at most in tests, so a sorted array is enough. */
  private tasks: ManualTask[] = [];
  private seq = 0;

  constructor(private readonly clock: Clock) {}

  at(atMs: number, task: () => void): () => void {
    const entry: ManualTask = { atMs, seq: this.seq++, task, cancelled: false };
    let low = 0;
    let high = this.tasks.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((this.tasks[mid] as ManualTask).atMs <= atMs) low = mid + 1;
      else high = mid;
    }
    this.tasks.splice(low, 0, entry);
    return () => {
      entry.cancelled = true;
    };
  }

  runDue(): void {
    const now = this.clock.now();
    // Tasks may schedule more tasks; those due now run in this same call.
    for (;;) {
      const first = this.tasks[0];
      if (first === undefined || first.atMs > now) break;
      this.tasks.shift();
      if (!first.cancelled) first.task();
    }
    this.tasks = this.tasks.filter((t) => !t.cancelled);
  }

  clear(): void {
    this.tasks = [];
  }
}
