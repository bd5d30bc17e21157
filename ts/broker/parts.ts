/** The broker internals a `Consumer` forwards to (kept apart so consumer.ts does not import broker.ts). */
import type { Popper } from './pop.js';
import type { Registry } from './registry.js';

export interface BrokerParts {
  readonly registry: Registry;
  readonly popper: Popper;
  /** Throws `ClosedError` once the broker is closed. */
  checkOpen(): void;
  /** Checks lite topic names (quota on length, then characters); returns them. */
  liteTopics(names: readonly string[]): string[];
  /** Under `flush: 'sync'`, resolves once the state changes made so far are durable. */
  settle(): Promise<void>;
  /** The client called: its session is alive (the implicit heartbeat). */
  seen(client: import('./state.js').ClientState): void;
  /**
   * The consumer closes: `registry.close`; its in-flight messages go to others now when `release`
   * (always in key-shared groups, whose buckets move).
   */
  leave(client: import('./state.js').ClientState, release: boolean): void;
  /** Moves a current delivery to the group's dead-letter queue. */
  deadLetter(client: import('./state.js').ClientState, handle: string): Promise<void>;
  /** Reports a failure of work done for a consumer in the background (the broker's `'error'` event). */
  report(error: unknown, during: string): void;
}
