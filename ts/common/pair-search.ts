/**
 * Binary search over entries kept sorted by a pair of numbers held in two parallel arrays: the
 * trie's pending edits (place, then order) and its idle set's blocks (timestamp, then id).
 */

/**
 * The first index below `length` whose pair (`firsts[i]`, `seconds[i]`) is not below
 * (`first`, `second`), or `length` when every pair is below it.
 */
export function firstPairFrom(
  firsts: ArrayLike<number>,
  seconds: ArrayLike<number>,
  length: number,
  first: number,
  second: number,
): number {
  let low = 0;
  let high = length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    const midFirst = firsts[mid] as number;
    if (midFirst < first || (midFirst === first && (seconds[mid] as number) < second)) low = mid + 1;
    else high = mid;
  }
  return low;
}
