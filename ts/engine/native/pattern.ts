/**
 * Native adapters for single patterns. Batches cross the boundary as one NUL-joined string (NUL is
 * invalid in every dialect); when a value contains NUL the joined string splits into more parts than
 * expected, the binding says so, and these adapters take the per-item path instead. A panic in the
 * binding arrives as `INTERNAL_ERROR` and is rethrown typed (`toTypedError`).
 */

import { DIALECTS } from '../../common/dialect.js';
import type { CompiledMatcher, DialectName, Violation } from '../contract.js';
import type { NativeBinding } from './binding.js';
import { toTypedError } from './log.js';

export function toViolation(native: ReturnType<NativeBinding['validatePattern']>): Violation | null {
  if (native === null) return null;
  const violation: Violation = {
    code: native.code as Violation['code'],
    reason: native.reason as Violation['reason'],
    position: native.position,
    message: native.message,
  };
  if (native.limit !== undefined && native.limit !== null) violation.limit = native.limit;
  if (native.actual !== undefined && native.actual !== null) violation.actual = native.actual;
  return violation;
}

export function nativeCompile(binding: NativeBinding, pattern: string, dialect: DialectName): CompiledMatcher {
  let handle: ReturnType<NativeBinding['matcherNew']>;
  try {
    handle = binding.matcherNew(pattern, DIALECTS[dialect].id);
  } catch (error) {
    throw toTypedError(error);
  }
  const matches = binding.matcherMatches;
  return {
    matches: (topic) => {
      try {
        return typeof topic === 'string' && matches(handle, topic);
      } catch (error) {
        throw toTypedError(error);
      }
    },
  };
}

export function nativeExpand(
  binding: NativeBinding,
  patterns: readonly string[],
  candidates: readonly string[],
  dialect: DialectName,
): number[] {
  try {
    return expandJoined(binding, patterns, candidates, DIALECTS[dialect].id);
  } catch (error) {
    throw toTypedError(error);
  }
}

function expandJoined(
  binding: NativeBinding,
  patterns: readonly string[],
  candidates: readonly string[],
  id: number,
): number[] {
  // A pattern containing NUL is invalid; dropping it keeps the join unambiguous.
  const usable = patterns.filter((p) => !p.includes('\0'));
  const found = binding.expandJoined(usable.join('\0'), candidates.join('\0'), candidates.length, id);
  if (found !== null) return Array.from(found);
  // Some candidate holds NUL (so it matches nothing): expand the others and map indexes back.
  const kept: number[] = [];
  for (let i = 0; i < candidates.length; i++) if (!(candidates[i] as string).includes('\0')) kept.push(i);
  const again = binding.expandJoined(
    usable.join('\0'),
    kept.map((i) => candidates[i]).join('\0'),
    kept.length,
    id,
  ) as Uint32Array;
  return Array.from(again, (i) => kept[i] as number);
}
