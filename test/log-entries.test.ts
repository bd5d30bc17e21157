/**
 * The js engine's check of a checkpoint's entries before a read trusts their sizes (the native
 * engine's twin is tested in native/core/src/queue/stored.rs): one record may be named by as many
 * entries in a row as a record names LMQs, and no more, since each entry adds its size to what a read
 * allocates.
 */
import { describe, expect, it } from 'vitest';
import { MAX_LMQS_PER_RECORD } from '../ts/common/limits.js';
import { checkEntry } from '../ts/engine/js/queue.js';

/** Runs the check over `entries` as a block load does; returns the first refusal. */
function firstRefusal(entries: readonly [number, number][], endPosition: number): string | undefined {
  let previous = -1;
  let previousSize = 0;
  let repeats = 0;
  for (const [position, size] of entries) {
    const wrong = checkEntry(position, size, previous, previousSize, endPosition, repeats);
    if (wrong !== undefined) return wrong;
    repeats = position === previous && size === previousSize ? repeats + 1 : 1;
    previous = position;
    previousSize = size;
  }
  return undefined;
}

describe('checkpoint entries naming one record', () => {
  it('are allowed as often as a record names LMQs, and refused beyond', () => {
    const most = Array.from({ length: MAX_LMQS_PER_RECORD }, () => [64, 100] as [number, number]);
    expect(firstRefusal(most, 1_000)).toBeUndefined();
    expect(firstRefusal([...most, [64, 100]], 1_000)).toMatch(/too often/);
    const next = Array.from({ length: MAX_LMQS_PER_RECORD }, () => [164, 100] as [number, number]);
    expect(firstRefusal([...most, ...next], 1_000)).toBeUndefined();
  });
});
