// qlobber 8 ships no type declarations; this covers what the benchmarks use.
declare module 'qlobber' {
  export interface QlobberOptions {
    separator?: string;
    wildcard_one?: string;
    wildcard_some?: string;
    match_empty_levels?: boolean;
    cache_adds?: boolean;
    cache_splits?: number;
    max_words?: number;
    max_wildcard_somes?: number;
  }

  /** A topic trie whose `match` returns each matching value once. */
  export class QlobberDedup<V = unknown> {
    constructor(options?: QlobberOptions);
    add(topic: string, value: V): this;
    remove(topic: string, value?: V): this;
    match(topic: string): Set<V>;
    test(topic: string, value: V): boolean;
    clear(): this;
  }
}
