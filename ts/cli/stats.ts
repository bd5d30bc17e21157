/**
 * The statistics the command line and the benchmark suites report: medians, nearest-rank quantiles,
 * the spread of repeated figures and ratios paired by round, and a bounded sample of a stream for
 * percentiles of millions of values. One module, so every figure of a kind is computed one way.
 */

/** The median of the finite values (the mean of the middle two for an even count); NaN when there are none. */
export function median(values: readonly number[]): number {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/**
 * The `fractions` quantiles (each 0..1) of `samples` by nearest rank, from one sorted copy; NaN for
 * each when there are no samples. Nearest rank returns a value that was observed: the 0.5 quantile
 * of an even count is the lower middle value, not a mean.
 */
export function quantiles(samples: ArrayLike<number>, fractions: readonly number[]): number[] {
  const sorted = Float64Array.from(samples).sort();
  return fractions.map((fraction) => {
    if (sorted.length === 0) return Number.NaN;
    const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1));
    return sorted[rank] as number;
  });
}

/** The `fraction` quantile (0..1) of `samples` by nearest rank; NaN when there are none. */
export function quantile(samples: ArrayLike<number>, fraction: number): number {
  return quantiles(samples, [fraction])[0] as number;
}

/** The range of repeated figures relative to their median, %: how steady the figure was. */
export function spreadPercent(values: readonly number[]): number {
  return ((Math.max(...values) - Math.min(...values)) / median(values)) * 100;
}

/** `numerators[round] / denominators[round]` for each round: two cases' figures paired by round. */
export function roundRatios(numerators: readonly number[], denominators: readonly number[]): number[] {
  return numerators.map((value, round) => value / (denominators[round] ?? Number.NaN));
}

/**
 * The median over rounds of `numerators[round] / denominators[round]`. Two cases measured back to
 * back in a round see nearly the same machine speed while a shared machine drifts between rounds:
 * pairing keeps that drift out of the ratio, where a ratio of overall medians would carry it.
 */
export function pairedRatio(numerators: readonly number[], denominators: readonly number[]): number {
  return median(roundRatios(numerators, denominators));
}

/**
 * A bounded uniform sample of a stream (reservoir sampling, Vitter's algorithm R), so percentiles
 * of millions of latencies cost a fixed amount of memory. The random source is injected so runs can
 * be repeated.
 */
export class Reservoir {
  private readonly values: Float64Array;
  private seen = 0;

  constructor(
    readonly capacity: number,
    private readonly random: () => number,
  ) {
    this.values = new Float64Array(capacity);
  }

  add(value: number): void {
    if (this.seen < this.capacity) this.values[this.seen] = value;
    else {
      const slot = Math.floor(this.random() * (this.seen + 1));
      if (slot < this.capacity) this.values[slot] = value;
    }
    this.seen++;
  }

  get count(): number {
    return this.seen;
  }

  samples(): Float64Array {
    return this.values.subarray(0, Math.min(this.seen, this.capacity));
  }
}
