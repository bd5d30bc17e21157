/**
 * The engines every behaviour test runs against. Both, always, when the native addon is built. In CI
 * (CI=true) or with LITETOPIC_REQUIRE_NATIVE=1 a missing native engine fails the run instead of
 * quietly testing js alone.
 */
import { type EngineName, engineInfo, nativeAvailable } from '../ts/index.js';

const nativeRequired = process.env.CI === 'true' || process.env.LITETOPIC_REQUIRE_NATIVE === '1';

function listEngines(): EngineName[] {
  if (nativeAvailable()) return ['native', 'js'];
  const why = engineInfo().nativeLoadError ?? 'unknown reason';
  if (nativeRequired) {
    throw new Error(`the native engine is required here (CI or LITETOPIC_REQUIRE_NATIVE=1) but did not load: ${why}`);
  }
  console.warn(`\n*** native engine unavailable (${why}); testing the js engine only ***\n`);
  return ['js'];
}

export const ENGINES: readonly EngineName[] = listEngines();

/**
 * (writer, reader) pairs for the tests that open one engine's directory with the other: both ways
 * when the native engine is here, else js with itself.
 */
export const WRITER_READER_PAIRS: readonly [EngineName, EngineName][] = ENGINES.includes('native')
  ? [
      ['native', 'js'],
      ['js', 'native'],
    ]
  : [['js', 'js']];
