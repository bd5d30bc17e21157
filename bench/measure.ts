/**
 * A thin layer over tinybench. Each case runs a whole batch per iteration (a timer read costs about
 * as much as the cheapest calls measured here) and returns a checksum that must equal the expected
 * one, so no implementation can skip work or have its result optimized away.
 *
 * Cases run interleaved, in several rounds with the order reversed every other round, and each
 * figure is the median over rounds: on a shared 2-core VM the machine speeds up and slows down by
 * tens of percent over seconds, and running one case after another would turn that into ratios.
 */
import { Bench, type Task } from 'tinybench';
import { stats } from './lib.js';

const { median, pairedRatio, spreadPercent } = stats;

export interface Timing {
  /** Time budget per case over all rounds, ms. */
  timeMs: number;
  /** Warm-up per case before the first round, ms; later rounds only re-warm briefly. */
  warmupMs: number;
  /** Minimum iterations per case and round. */
  iterations: number;
  rounds: number;
}

export interface Case {
  name: string;
  /** Operations (calls or topics) one iteration performs. */
  operations: number;
  /** Runs one iteration and returns its checksum. */
  run: () => number;
  expected: number;
}

/** Per-operation figures of one case. */
export interface Measurement {
  name: string;
  /** Median time per operation, ns: the median over rounds of each round's median. */
  medianNs: number;
  /** Mean time per operation over all rounds, ns. */
  meanNs: number;
  /** Operations per second at the median. */
  opsPerSecond: number;
  /** Range of the rounds' medians relative to their median, %: how steady the figure was. */
  spreadPercent: number;
  samples: number;
  /** Each round's median time per operation, ns, in round order (for paired comparisons). */
  roundMediansNs: number[];
}

/**
 * How many times faster `ours` is than `theirs`, paired by round (see `pairedRatio`): the median
 * over rounds of the ratio of the two cases' medians in that round.
 */
export function pairedSpeedup(ours: Measurement, theirs: Measurement): number {
  return pairedRatio(theirs.roundMediansNs, ours.roundMediansNs);
}

interface RoundFigures {
  medianNs: number;
  meanNs: number;
  samples: number;
}

function checked(c: Case): () => void {
  return () => {
    const got = c.run();
    if (got !== c.expected) throw new Error(`${c.name}: checksum ${got}, expected ${c.expected}`);
  };
}

function roundFigures(task: Task | undefined, c: Case): RoundFigures {
  const result = task?.result;
  if (result?.state !== 'completed') {
    const why = result?.state === 'errored' ? result.error.message : (result?.state ?? 'missing');
    throw new Error(`benchmark "${c.name}" did not complete: ${why}`);
  }
  // tinybench reports latency per iteration in ms.
  return {
    medianNs: (result.latency.p50 * 1e6) / c.operations,
    meanNs: (result.latency.mean * 1e6) / c.operations,
    samples: result.latency.samplesCount,
  };
}

/** Re-warm-up per case in rounds after the first, ms: the code is optimized by then. */
const REWARM_MS = 10;

async function runRound(cases: readonly Case[], timing: Timing, round: number): Promise<RoundFigures[]> {
  const bench = new Bench({
    time: timing.timeMs / timing.rounds,
    warmupTime: round === 0 ? timing.warmupMs : Math.min(REWARM_MS, timing.warmupMs),
    iterations: timing.iterations,
    warmupIterations: 2,
    throws: true,
  });
  const order = round % 2 === 1 ? [...cases].reverse() : cases;
  for (const c of order) bench.add(c.name, checked(c), { async: false });
  await bench.run();
  return cases.map((c) => roundFigures(bench.getTask(c.name), c));
}

/**
 * A case's figures from one time per operation per round, ns; `meanNs` and `samples` default to
 * the rounds' own mean and count (for cases timed once per round).
 */
export function fromRounds(
  name: string,
  roundNs: readonly number[],
  meanNs = roundNs.reduce((a, b) => a + b, 0) / roundNs.length,
  samples = roundNs.length,
): Measurement {
  const medianNs = median(roundNs);
  return {
    name,
    medianNs,
    meanNs,
    opsPerSecond: 1e9 / medianNs,
    spreadPercent: spreadPercent(roundNs),
    samples,
    roundMediansNs: [...roundNs],
  };
}

function combine(name: string, rounds: readonly RoundFigures[]): Measurement {
  const samples = rounds.reduce((sum, r) => sum + r.samples, 0);
  const meanNs = rounds.reduce((sum, r) => sum + r.meanNs * r.samples, 0) / samples;
  return fromRounds(
    name,
    rounds.map((r) => r.medianNs),
    meanNs,
    samples,
  );
}

/** Runs the cases in interleaved rounds and returns their figures in the order given. */
export async function measure(cases: readonly Case[], timing: Timing): Promise<Measurement[]> {
  const rounds: RoundFigures[][] = [];
  for (let round = 0; round < timing.rounds; round++) rounds.push(await runRound(cases, timing, round));
  return cases.map((c, i) =>
    combine(
      c.name,
      rounds.map((figures) => figures[i] as RoundFigures),
    ),
  );
}

/**
 * Memory after a full collection, for the fresh-process memory measurements (run with
 * `--expose-gc`). Twice: the first pass can leave work (weak references, finalizers) for the second.
 */
export function collectedMemory(): NodeJS.MemoryUsage {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with --expose-gc');
  gc();
  gc();
  return process.memoryUsage();
}
