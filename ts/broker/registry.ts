/**
 * Subscriptions (docs/BROKER.md, "Subscriptions"): which clients of a group hold which lite topics. Every change is
 * computed as a target set first, checked against the quotas, and only then applied, so a failed
 * call changes nothing. Explicit groups hold lite topic names; wildcard groups hold patterns, whose
 * matching lite topics are found through the parent's trie (never a scan of every lite topic) and,
 * for lite topics created later, through the group's pattern index when their first message lands.
 */

import { getEngine } from '../engine/load.js';
import { InvalidArgumentError, type InvalidPatternError } from '../errors.js';
import { compilePattern, invalidPattern, type Matcher } from '../pattern.js';
import type { Dispatcher } from './dispatcher.js';
import { newProgress } from './key-shared-progress.js';
import { checkQuota } from './quota.js';
import { type StartPosition, startOffset } from './start.js';
import { type BrokerContext, type ClientState, type GroupState, keepProgress } from './state.js';
import { lmqName } from './store.js';

export type UnsubscribeReason = 'evicted' | 'expired';

export class Registry {
  /** (client, lite topic) references across the broker. */
  subscriptionCount = 0;

  constructor(
    private readonly context: BrokerContext,
    private readonly dispatcher: Dispatcher,
  ) {}

  /** Explicit groups: makes `client`'s lite topics exactly `target` (partial add/remove build it). */
  setTopics(client: ClientState, target: ReadonlySet<string>, start: StartPosition): void {
    const added = [...target].filter((t) => !client.topics.has(t));
    const removed = [...client.topics].filter((t) => !target.has(t));
    this.checkTopics(client, target.size, added, removed.length);
    for (const liteTopic of removed) this.detach(client, liteTopic, undefined);
    for (const liteTopic of added) this.attach(client, liteTopic, start);
  }

  /** Partial add: costs what is added, not the size of the client's subscription. */
  addTopics(client: ClientState, names: Iterable<string>, start: StartPosition): void {
    const added = new Set<string>();
    for (const name of names) if (!client.topics.has(name)) added.add(name);
    const list = [...added];
    this.checkTopics(client, client.topics.size + list.length, list, 0);
    for (const liteTopic of list) this.attach(client, liteTopic, start);
  }

  /** Partial remove: costs what is removed. */
  removeTopics(client: ClientState, names: Iterable<string>): void {
    const removed = new Set<string>();
    for (const name of names) if (client.topics.has(name)) removed.add(name);
    for (const liteTopic of removed) this.detach(client, liteTopic, undefined);
  }

  /**
   * Wildcard groups: makes `client`'s patterns exactly `target` (empty = catch-all, every lite topic).
   * Its lite topics become the existing ones any of the patterns match.
   */
  setPatterns(client: ClientState, target: ReadonlyMap<string, Matcher>, start: StartPosition): void {
    const { limits } = this.context;
    checkQuota(limits, 'maxPatternsPerClient', target.size, [...target.keys()]);
    const trie = client.group.parent.trie;
    const addedPatterns = [...target.keys()].filter((p) => !client.patterns.has(p));
    const removedPatterns = [...client.patterns.keys()].filter((p) => !target.has(p));
    const added = new Set<string>();
    for (const pattern of addedPatterns) {
      for (const name of trie.expand(pattern)) if (!client.topics.has(name)) added.add(name);
    }
    const removed = new Set<string>();
    for (const pattern of removedPatterns) {
      for (const name of trie.expand(pattern)) {
        if (client.topics.has(name) && ![...target.values()].some((m) => m.matches(name))) removed.add(name);
      }
    }
    this.checkTopics(client, client.topics.size - removed.size + added.size, [...added], removed.size);
    const index = client.group.patternIndex;
    for (const pattern of removedPatterns) {
      client.patterns.delete(pattern);
      index?.remove(pattern, client.id);
    }
    for (const pattern of addedPatterns) {
      client.patterns.set(pattern, target.get(pattern) as Matcher);
      index?.add(pattern, client.id);
    }
    for (const liteTopic of removed) this.detach(client, liteTopic, undefined);
    for (const liteTopic of added) this.attach(client, liteTopic, start);
    this.updateCatchAll(client);
  }

  /**
   * Adds a lite topic created after `client`'s patterns were set, from `offset` (its first message).
   * Throws `QuotaExceededError` and changes nothing when a quota refuses it.
   */
  attachArrived(client: ClientState, liteTopic: string, offset: number): void {
    if (client.closed || client.topics.has(liteTopic)) return;
    this.checkTopics(client, client.topics.size + 1, [liteTopic], 0);
    this.attach(client, liteTopic, offset);
  }

  /** `client` loses `liteTopic` because it expired; it hears `unsubscribed` with reason `expired`. */
  expire(client: ClientState, liteTopic: string): void {
    if (client.topics.has(liteTopic)) this.detach(client, liteTopic, 'expired');
  }

  /** Drops everything `client` holds and re-dispatches its events at once (complete remove). */
  close(client: ClientState): void {
    if (client.closed) return;
    for (const liteTopic of [...client.topics]) this.detach(client, liteTopic, undefined);
    for (const pattern of client.patterns.keys()) client.group.patternIndex?.remove(pattern, client.id);
    client.patterns.clear();
    client.group.catchAll.delete(client);
    client.closed = true;
    client.group.clients.delete(client.clientId);
    client.group.byId.delete(client.id);
    client.cancelStallCheck?.();
    client.cancelSessionCheck?.();
    this.dispatcher.withdraw(client);
    for (const waiter of [...client.waiters]) waiter.finish();
  }

  /** Quotas for a change that leaves `client` with `finalCount` lite topics, adding `added`. */
  private checkTopics(client: ClientState, finalCount: number, added: readonly string[], removedCount: number): void {
    const { limits } = this.context;
    checkQuota(limits, 'maxLiteTopicsPerClient', finalCount, added);
    let evicted = 0;
    if (client.group.exclusive) {
      for (const liteTopic of added) {
        for (const holder of client.group.holdersOf(liteTopic) ?? []) if (holder !== client) evicted++;
      }
    }
    const total = this.subscriptionCount + added.length - removedCount - evicted;
    checkQuota(limits, 'maxSubscriptionsPerBroker', total, added);
  }

  /** Catch-all status follows the pattern set; events for lite topics no longer wanted move on. */
  private updateCatchAll(client: ClientState): void {
    const group = client.group;
    if (client.catchAll) {
      if (!group.catchAll.has(client)) this.dispatcher.joinAll(group, client);
      return;
    }
    if (!group.catchAll.delete(client)) return;
    for (const progress of [...client.events])
      if (!client.topics.has(progress.liteTopic)) this.dispatcher.move(client, progress.liteTopic);
  }

  /** `start`: where a new progress starts, or the offset of a message just stored (an arrival's). */
  private attach(client: ClientState, liteTopic: string, start: StartPosition | number): void {
    const group = client.group;
    let progress = group.progress.get(liteTopic);
    if (group.exclusive && progress?.hasHolders === true)
      for (const holder of [...progress.holders()]) this.detach(holder, liteTopic, 'evicted');
    if (progress === undefined) {
      // A lite topic being deleted by expiry starts again from nothing. Any other starts inside what
      // its LMQ stores (an arrival's offset is stored; a position was asked of the store now), so it
      // need not ask the store for the LMQ's minimum offset before the next retention pass.
      const expiring = group.parent.expiring.has(liteTopic);
      const offset = expiring
        ? 0
        : typeof start === 'number'
          ? start
          : startOffset(this.context.store, lmqName(group.parent.name, liteTopic), start);
      progress = newProgress(group.config, liteTopic, offset);
      if (!expiring) this.dispatcher.startsAtStored(progress);
      group.progress.set(liteTopic, progress);
      keepProgress(group, progress);
      // Committed now, so a restart before the first POP still starts where this subscription chose.
      this.context.journal.hot('start', group, progress, offset);
    }
    progress.addHolder(client);
    client.topics.add(liteTopic);
    this.subscriptionCount++;
    this.dispatcher.ready(group, liteTopic, undefined, 0, progress);
  }

  private detach(client: ClientState, liteTopic: string, reason: UnsubscribeReason | undefined): void {
    const progress = client.group.progress.get(liteTopic);
    progress?.dropHolder(client);
    client.topics.delete(liteTopic);
    this.subscriptionCount--;
    if (!client.catchAll) this.dispatcher.move(client, liteTopic);
    if (reason !== undefined) client.notify('unsubscribed', { liteTopic, reason });
  }
}

/**
 * The valid patterns of `items`, compiled. Invalid ones never match and are dropped; a non-empty
 * list with no valid pattern is refused with the first `InvalidPatternError` (never "receive all").
 */
export function compilePatterns(items: readonly string[], group: GroupState): Map<string, Matcher> {
  const engine = getEngine(group.parent.trie.engine);
  const compiled = new Map<string, Matcher>();
  let firstError: InvalidPatternError | undefined;
  for (const item of items) {
    if (typeof item !== 'string') throw new InvalidArgumentError('patterns must be strings', { value: item });
    const error = invalidPattern(engine, item, group.config.dialect);
    if (error !== undefined) firstError ??= error;
    else if (!compiled.has(item))
      compiled.set(item, compilePattern(item, { engine: engine.name, dialect: group.config.dialect }));
  }
  if (compiled.size === 0 && firstError !== undefined) throw firstError;
  return compiled;
}
