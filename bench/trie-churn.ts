/**
 * The trie on a live broker: names come and go while wildcard subscriptions expand.
 * One trie per engine holds `names` distinct workload names; the first `expand` of a session, an
 * agent and a tenant is timed right after they were added. Then each round adds 1,000 new names
 * and removes 1,000 live ones (the same names in both engines), and expands the three patterns
 * once just after the changes ("changed"); then both engines look the same names up, which changes
 * nothing, and expand each pattern once more ("unchanged": the same expand on a trie that did not
 * change, after as much traffic through the same paths, so that both calls meet caches alike), and
 * then five times back to back ("repeated", the median: everything in cache). Every
 * call is timed on its own: an `expand` is synchronous, so its time is the event-loop delay it
 * causes. A young-generation collection runs before each timed `expand`, so that the garbage of
 * the calls before it (the adds, the other engine) is not collected inside it; collections an
 * `expand` causes itself still count. Before the rounds, a throwaway trie per engine goes through
 * rounds of its own, so that the timed rounds meet compiled code, as on a live broker. Ratios are
 * paired by round (changed over unchanged of the same pattern and engine, native over js of the
 * same call), and summarized by their median and worst round.
 *
 * Each engine keeps `REPLICAS` tries with the same history, and each figure of a round is the median
 * of the replicas' calls: a changed expand happens once per round and trie, and on a machine shared
 * with other work one call in a round can be held up by the scheduler, which made the worst round
 * a measure of the machine. A cost of the change itself (a lay-down, a collection the expand's own
 * allocation causes) comes in every replica in the same round, so the median keeps it. The second
 * half (below) keeps one trie per engine and drops the others first: the longest single calls are
 * taken there, as the event-loop delay a caller meets, and three tries' heap would lengthen the
 * collections that land in a call beyond what one trie's causes.
 *
 * Then as many rounds again change the names the same way and expand the three patterns and a wide
 * one (`WIDE_PATTERN`, a walk down every node of the first three levels) once per engine. Walks
 * like it lay the trie out again (docs/TRIE.md: the nodes were added in random order, so the first
 * few start a compaction pass, which the walks after them carry on a step each); the section
 * reports the longest single call of every pattern over all the rounds, so a pass that held the
 * event loop inside one call would show there. They come after the paired rounds, whose ratios
 * they would otherwise disturb: a wide walk sweeps the caches before the next round's changed calls.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { TopicTrie } from '../ts/index.js';
import { lib, stats } from './lib.js';
import { distinctNames } from './trie-memory.js';

const { median, roundRatios } = stats;

const ENGINES = ['native', 'js'] as const;
type EngineName = (typeof ENGINES)[number];
/** Names added and removed in each round. */
export const CHURN_NAMES_PER_ROUND = 1000;
/** Tries per engine with the same history; a round's figure is the median of theirs. */
export const REPLICAS = 3;
/** Repeated expands timed per round and pattern; the median is the round's repeated figure. */
const REPEATED_CALLS = 5;
/** A walk down every node of the first three levels: the kind of walk that compacts the trie. */
export const WIDE_PATTERN = '*__*__*__code';
/** The tenant the patterns come from: the hottest, about 11% of the names. */
const TENANT = 'tenant0';
/** Names of the warm-up trie, its rounds, and the names added and removed in each. */
const WARM_UP_NAMES = 20_000;
const WARM_UP_ROUNDS = 100;
const WARM_UP_NAMES_PER_ROUND = 100;

export interface ChurnFirstRow {
  engine: EngineName;
  pattern: string;
  matched: number;
  ms: number;
}

export interface ChurnRow {
  kind: 'session' | 'agent' | 'tenant';
  pattern: string;
  /** Median over rounds of the names matched after the round's changes. */
  matched: number;
  /**
   * Per engine: median and worst single call after changes, median unchanged call (after the
   * lookups) and median of the rounds' repeated calls, µs.
   */
  nativeChangedUs: number;
  nativeWorstChangedUs: number;
  nativeUnchangedUs: number;
  /** Absent from runs recorded before the unchanged call came after lookups (it was the repeated median). */
  nativeRepeatedUs?: number;
  jsChangedUs: number;
  jsWorstChangedUs: number;
  jsUnchangedUs: number;
  jsRepeatedUs?: number;
  /** Changed over unchanged, paired by round: median and worst round. */
  nativeChangedRatio: number;
  nativeWorstChangedRatio: number;
  jsChangedRatio: number;
  jsWorstChangedRatio: number;
  /** Native over js, paired by round: median and worst round, changed and unchanged calls. */
  nativeOverJsChanged: number;
  nativeOverJsWorstChanged: number;
  nativeOverJsUnchanged: number;
  nativeOverJsWorstUnchanged: number;
  /** Native over js of the repeated calls, paired by round: median round. */
  nativeOverJsRepeated?: number;
  /**
   * Median over rounds of the minor page faults during the changed and the unchanged call, per
   * engine. Absent from runs recorded before the section counted them.
   */
  nativeChangedFaults?: number;
  nativeUnchangedFaults?: number;
  jsChangedFaults?: number;
  jsUnchangedFaults?: number;
}

/** The wide walk of each round: its median (of the rounds' replica medians) and longest single call per engine, µs. */
export interface ChurnWideRow {
  pattern: string;
  /** Median over rounds of the names matched. */
  matched: number;
  nativeMedianUs: number;
  nativeWorstUs: number;
  jsMedianUs: number;
  jsWorstUs: number;
}

/** The longest single expand of the rounds, of any pattern, per engine. */
export interface ChurnLongestExpand {
  pattern: string;
  matched: number;
  us: number;
}

export interface ChurnResult {
  names: number;
  rounds: number;
  /** Tries per engine whose calls each figure is the median of; absent from runs recorded with one. */
  replicas?: number;
  first: ChurnFirstRow[];
  rows: ChurnRow[];
  /** Absent from runs recorded before the rounds had a wide walk. */
  wide?: ChurnWideRow;
  /**
   * Per engine: the longest single expand of the session, agent and tenant patterns (any call of
   * the rounds; with replicas, of the second half's), and of the wide pattern. Absent from runs recorded before the rounds had a wide walk.
   */
  longestExpand?: Record<EngineName, { narrow: ChurnLongestExpand; wide: ChurnLongestExpand }>;
  /** The longest single `add` or `remove` of the rounds per engine (of the second half's, with replicas), µs. */
  worstChangeUs: Record<EngineName, number>;
}

/** `gc` of a process started without --expose-gc: the flag set at run time, read from a new context. */
function collector(): (options: { type: 'minor' | 'major' }) => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as (options: { type: 'minor' | 'major' }) => void;
}

function timed<T>(run: () => T): [T, number] {
  const started = process.hrtime.bigint();
  const value = run();
  return [value, Number(process.hrtime.bigint() - started)];
}

/** Session, agent and tenant patterns around the hottest agent of `TENANT`. */
function churnPatterns(names: readonly string[]): { kind: ChurnRow['kind']; pattern: string }[] {
  const sample = names.find((n) => n.startsWith(`${TENANT}__agent0__`) && n.split('__').length >= 4) as string;
  const [tenant, agent, session] = sample.split('__');
  return [
    { kind: 'session', pattern: `${tenant}__${agent}__${session}__**` },
    { kind: 'agent', pattern: `${tenant}__${agent}__**` },
    { kind: 'tenant', pattern: `${tenant}__**` },
  ];
}

/** A deterministic shuffle (mulberry32 as in workload.ts would do; a simple LCG suffices here). */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let state = seed >>> 0;
  for (let i = out.length - 1; i > 0; i--) {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/**
 * Rounds of changes and expands on a small trie of each engine, thrown away after. On a live broker
 * the code that lays a changed subtree down runs after every round of changes, so V8 has long
 * compiled it; the measured rounds are too few for that (the first of them ran that code in the
 * interpreter), and without this they would time V8's tiers, not the trie. It runs after the
 * first expands, which stay timed as a broker that has just restored its names would meet them.
 */
function warmUp(seed: number): void {
  const pool = distinctNames(WARM_UP_NAMES + WARM_UP_ROUNDS * WARM_UP_NAMES_PER_ROUND, seed);
  const live = pool.slice(0, WARM_UP_NAMES);
  const patterns = churnPatterns(live);
  const tries = ENGINES.map((engine) => {
    const trie = new lib.TopicTrie({ engine });
    for (const name of live) trie.add(name);
    return trie;
  });
  let next = WARM_UP_NAMES;
  for (let round = 0; round < WARM_UP_ROUNDS; round++) {
    for (let i = 0; i < WARM_UP_NAMES_PER_ROUND; i++) {
      const name = pool[next++] as string;
      const at = (round * WARM_UP_NAMES_PER_ROUND + i * 7919) % live.length;
      for (const trie of tries) {
        trie.add(name);
        trie.remove(live[at] as string);
      }
      live[at] = name;
    }
    for (const trie of tries) for (const { pattern } of patterns) trie.expand(pattern);
  }
}

/** Runs the churn section: `names` names, `rounds` rounds of changes. */
export function benchChurn(names: number, rounds: number, seed: number): ChurnResult {
  const gc = collector();
  // Its own timing code: one shared with the adds would be optimized for them, and its
  // deoptimization would land inside the first expand timed after them.
  // Page faults are counted around the timed window, not in it: a fault on a fresh page is a cost
  // the time includes, and the count, unlike the time, does not depend on the machine's load.
  let lastFaults = 0;
  const expandTimed = (trie: TopicTrie, pattern: string): [number, number] => {
    gc({ type: 'minor' });
    const faultsBefore = process.resourceUsage().minorPageFault;
    const started = process.hrtime.bigint();
    const found = trie.expand(pattern).length;
    const ns = Number(process.hrtime.bigint() - started);
    lastFaults = process.resourceUsage().minorPageFault - faultsBefore;
    const engine = trie.engine as EngineName;
    const longest = longestExpand[engine][pattern === WIDE_PATTERN ? 'wide' : 'narrow'];
    if (timingRounds && ns / 1000 > longest.us) Object.assign(longest, { pattern, matched: found, us: ns / 1000 });
    return [found, ns];
  };
  // The longest calls are taken over the second half's rounds only (the first expands have their
  // own table; the paired rounds run with replicas).
  let timingRounds = false;
  const longestExpand = Object.fromEntries(
    ENGINES.map((engine) => [
      engine,
      { narrow: { pattern: '', matched: 0, us: 0 }, wide: { pattern: WIDE_PATTERN, matched: 0, us: 0 } },
    ]),
  ) as Record<EngineName, { narrow: ChurnLongestExpand; wide: ChurnLongestExpand }>;
  const pool = shuffled(distinctNames(names + 2 * rounds * CHURN_NAMES_PER_ROUND, seed), seed);
  const initial = pool.slice(0, names);
  const incoming = pool.slice(names);
  const patterns = churnPatterns(initial);
  // replicas[e][k]: replica k of engine e.
  const replicas = ENGINES.map((engine) =>
    Array.from({ length: REPLICAS }, () => {
      const trie = new lib.TopicTrie({ engine });
      for (let i = 0; i < initial.length; i++) trie.add(initial[i] as string, i);
      return trie;
    }),
  );
  let everyTrie = replicas.flat();
  /** Expands `pattern` on every replica of engine `e`: the count (all must agree), the median time and faults. */
  const expandReplicas = (e: number, pattern: string): [number, number, number] => {
    const times: number[] = [];
    const faults: number[] = [];
    const counts = new Set<number>();
    for (const trie of replicas[e] as TopicTrie[]) {
      const [found, ns] = expandTimed(trie, pattern);
      counts.add(found);
      times.push(ns);
      faults.push(lastFaults);
    }
    if (counts.size !== 1) throw new Error(`churn ${pattern}: the replicas of ${ENGINES[e]} disagree`);
    return [[...counts][0] as number, median(times), median(faults)];
  };
  const first: ChurnFirstRow[] = [];
  // The tenant first: the largest answer, and nothing walked before it.
  gc({ type: 'major' });
  for (const { pattern } of [...patterns].reverse()) {
    for (const [e, engine] of ENGINES.entries()) {
      const [found, ns] = expandReplicas(e, pattern);
      first.push({ engine, pattern, matched: found, ms: ns / 1e6 });
    }
  }
  warmUp(seed + 1);
  const live = [...initial];
  const worstChangeUs: Record<EngineName, number> = { native: 0, js: 0 };
  // Per pattern and engine, per round: the changed call, the unchanged call and the repeated median, ns.
  const changed = patterns.map(() => ENGINES.map(() => [] as number[]));
  const unchanged = patterns.map(() => ENGINES.map(() => [] as number[]));
  const repeated = patterns.map(() => ENGINES.map(() => [] as number[]));
  const changedFaults = patterns.map(() => ENGINES.map(() => [] as number[]));
  const unchangedFaults = patterns.map(() => ENGINES.map(() => [] as number[]));
  const matched = patterns.map(() => [] as number[]);
  let removeSeed = seed;
  /** Adds the round's new names and removes as many live ones, in every engine, timing each call. */
  const changeNames = (round: number): { added: string[]; removed: string[] } => {
    const added = incoming.slice(round * CHURN_NAMES_PER_ROUND, (round + 1) * CHURN_NAMES_PER_ROUND);
    const removed: string[] = [];
    for (let i = 0; i < CHURN_NAMES_PER_ROUND; i++) {
      removeSeed = (Math.imul(removeSeed, 1_664_525) + 1_013_904_223) >>> 0;
      const at = removeSeed % live.length;
      removed.push(live[at] as string);
      live[at] = live[live.length - 1] as string;
      live.pop();
    }
    live.push(...added);
    for (const trie of everyTrie) {
      const engine = trie.engine as EngineName;
      for (const name of added) {
        const [, ns] = timed(() => trie.add(name, round));
        if (timingRounds) worstChangeUs[engine] = Math.max(worstChangeUs[engine], ns / 1000);
      }
      for (const name of removed) {
        const [, ns] = timed(() => trie.remove(name));
        if (timingRounds) worstChangeUs[engine] = Math.max(worstChangeUs[engine], ns / 1000);
      }
    }
    return { added, removed };
  };
  for (let round = 0; round < rounds; round++) {
    const { added, removed } = changeNames(round);
    // Alternate which engine goes first, so neither always meets the other's garbage.
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    const counts = patterns.map(() => [] as number[]);
    const expandAll = (into: number[][][], faults: number[][][]) => {
      for (const [p, { pattern }] of patterns.entries()) {
        for (const e of order) {
          const [found, ns, pageFaults] = expandReplicas(e, pattern);
          (counts[p] as number[]).push(found);
          ((into[p] as number[][])[e] as number[]).push(ns);
          ((faults[p] as number[][])[e] as number[]).push(pageFaults);
        }
      }
    };
    expandAll(changed, changedFaults);
    // The same traffic through the same paths, changing nothing.
    for (const trie of everyTrie) {
      for (const name of added) trie.has(name);
      for (const name of removed) trie.has(name);
    }
    expandAll(unchanged, unchangedFaults);
    for (const [p, { pattern }] of patterns.entries()) {
      for (const e of order) {
        const calls: number[] = [];
        for (let i = 0; i < REPEATED_CALLS; i++) {
          const [found, ns] = expandReplicas(e, pattern);
          (counts[p] as number[]).push(found);
          calls.push(ns);
        }
        ((repeated[p] as number[][])[e] as number[]).push(median(calls));
      }
    }
    for (const [p, { pattern }] of patterns.entries()) {
      const distinct = [...new Set(counts[p])];
      if (distinct.length !== 1)
        throw new Error(`churn ${pattern}: the engines disagree (${distinct.join(', ')} names)`);
      (matched[p] as number[]).push(distinct[0] as number);
    }
  }
  const rows = patterns.map(({ kind, pattern }, p): ChurnRow => {
    const [nativeChanged, jsChanged] = changed[p] as [number[], number[]];
    const [nativeUnchanged, jsUnchanged] = unchanged[p] as [number[], number[]];
    const [nativeRepeated, jsRepeated] = repeated[p] as [number[], number[]];
    const nativeRatios = roundRatios(nativeChanged, nativeUnchanged);
    const jsRatios = roundRatios(jsChanged, jsUnchanged);
    const overChanged = roundRatios(nativeChanged, jsChanged);
    const overUnchanged = roundRatios(nativeUnchanged, jsUnchanged);
    return {
      kind,
      pattern,
      matched: median(matched[p] as number[]),
      nativeChangedUs: median(nativeChanged) / 1000,
      nativeWorstChangedUs: Math.max(...nativeChanged) / 1000,
      nativeUnchangedUs: median(nativeUnchanged) / 1000,
      nativeRepeatedUs: median(nativeRepeated) / 1000,
      jsChangedUs: median(jsChanged) / 1000,
      jsWorstChangedUs: Math.max(...jsChanged) / 1000,
      jsUnchangedUs: median(jsUnchanged) / 1000,
      jsRepeatedUs: median(jsRepeated) / 1000,
      nativeChangedRatio: median(nativeRatios),
      nativeWorstChangedRatio: Math.max(...nativeRatios),
      jsChangedRatio: median(jsRatios),
      jsWorstChangedRatio: Math.max(...jsRatios),
      nativeOverJsChanged: median(overChanged),
      nativeOverJsWorstChanged: Math.max(...overChanged),
      nativeOverJsUnchanged: median(overUnchanged),
      nativeOverJsWorstUnchanged: Math.max(...overUnchanged),
      nativeOverJsRepeated: median(roundRatios(nativeRepeated, jsRepeated)),
      nativeChangedFaults: median((changedFaults[p] as number[][])[0] as number[]),
      nativeUnchangedFaults: median((unchangedFaults[p] as number[][])[0] as number[]),
      jsChangedFaults: median((changedFaults[p] as number[][])[1] as number[]),
      jsUnchangedFaults: median((unchangedFaults[p] as number[][])[1] as number[]),
    };
  });
  // One trie per engine from here on (see the top of the file), its heap collected first.
  for (const engineReplicas of replicas) engineReplicas.length = 1;
  everyTrie = replicas.flat();
  gc({ type: 'major' });
  // The wide pattern's first call (native: its names cross to JavaScript for the first time) comes
  // before its rounds, as the first expands above do.
  for (const trie of everyTrie) trie.expand(WIDE_PATTERN);
  timingRounds = true;
  const wideNs = ENGINES.map(() => [] as number[]);
  const wideMatched: number[] = [];
  for (let round = rounds; round < 2 * rounds; round++) {
    changeNames(round);
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    const wideCounts = new Set<number>();
    for (const e of order) {
      for (const { pattern } of patterns) expandReplicas(e, pattern);
      const [found, ns] = expandReplicas(e, WIDE_PATTERN);
      wideCounts.add(found);
      (wideNs[e] as number[]).push(ns);
    }
    if (wideCounts.size !== 1) throw new Error(`churn ${WIDE_PATTERN}: the engines disagree`);
    wideMatched.push([...wideCounts][0] as number);
  }
  const [nativeWide, jsWide] = wideNs as [number[], number[]];
  const wide: ChurnWideRow = {
    pattern: WIDE_PATTERN,
    matched: median(wideMatched),
    nativeMedianUs: median(nativeWide) / 1000,
    nativeWorstUs: longestExpand.native.wide.us,
    jsMedianUs: median(jsWide) / 1000,
    jsWorstUs: longestExpand.js.wide.us,
  };
  return { names, rounds, replicas: REPLICAS, first, rows, wide, longestExpand, worstChangeUs };
}
