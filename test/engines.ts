/**
 * The engines every behaviour test runs against. Both, always, when the native addon is built. In CI
 * (CI=true) or with LITETOPIC_REQUIRE_NATIVE=1 a missing native engine fails the run instead of
 * quietly testing js alone.
 */
import { it } from 'vitest';
import { type EngineName, engineInfo, nativeAvailable } from '../ts/index.js';

const nativeRequired = process.env.CI === 'true' || process.env.LITETOPIC_REQUIRE_NATIVE === '1';

/**
 * LITETOPIC_TEST_ENGINES=native narrows the run to the native engine, which must then load. Only
 * `npm run test:arm64` sets it: under emulation the native binary is what differs by CPU, while the js
 * engine is the same TypeScript everywhere and has its full run in `npm test`.
 */
const selection = process.env.LITETOPIC_TEST_ENGINES;
if (selection !== undefined && selection !== 'native') {
  throw new Error(`LITETOPIC_TEST_ENGINES takes "native" or is unset (got "${selection}")`);
}
const nativeOnly = selection === 'native';

function listEngines(): EngineName[] {
  if (nativeAvailable()) return nativeOnly ? ['native'] : ['native', 'js'];
  const why = engineInfo().nativeLoadError ?? 'unknown reason';
  if (nativeRequired || nativeOnly) {
    throw new Error(
      `the native engine is required here (CI, LITETOPIC_REQUIRE_NATIVE=1 or LITETOPIC_TEST_ENGINES=native) but did not load: ${why}`,
    );
  }
  console.warn(`\n*** native engine unavailable (${why}); testing the js engine only ***\n`);
  return ['js'];
}

export const ENGINES: readonly EngineName[] = listEngines();

/**
 * Whether the tests that run no native code run here: those of the js engine's own parts (its
 * storage, its trie's layout passes, its lock) and of the command line's usage, help and messages.
 * Everywhere but under LITETOPIC_TEST_ENGINES=native (`npm run test:arm64`), where only the native
 * binary differs from the x64 run and each emulated Node start costs seconds; `npm test` runs them.
 */
export const RUN_TESTS_WITHOUT_NATIVE = !nativeOnly;

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

/** Where the broker behaviour tests run: an embedded engine, or a RocketMQ cluster (`Broker.connect`). */
export type Backend = EngineName | 'rocketmq';

/**
 * `npm run test:rocketmq` sets LITETOPIC_TEST_BACKEND=rocketmq (and where the cluster listens): the
 * conformance files then run against RocketMQ alone, the embedded engines having had their run in
 * `npm test`.
 */
export const ROCKETMQ_ENDPOINTS =
  process.env.LITETOPIC_TEST_BACKEND === 'rocketmq'
    ? (process.env.LITETOPIC_ROCKETMQ_ENDPOINTS ?? '127.0.0.1:8081')
    : undefined;

export const BACKENDS: readonly Backend[] = ROCKETMQ_ENDPOINTS === undefined ? ENGINES : ['rocketmq'];

/** The engine of an embedded backend, for tests that open the embedded broker themselves (marked `embeddedOnly`). */
export function embeddedEngine(backend: Backend): EngineName {
  if (backend === 'rocketmq') throw new Error('this test needs the embedded broker: mark it embeddedOnly');
  return backend;
}

/**
 * `it` for a test that cannot hold on RocketMQ: skipped there, its name saying which row of
 * docs/ROCKETMQ.md says why (manual time, admin queries, storage...).
 */
export function embeddedOnly(backend: Backend, row: string): (name: string, test: () => Promise<void> | void) => void {
  if (backend !== 'rocketmq') return (name, test) => it(name, test);
  return (name, test) => it.skip(`${name} [not on RocketMQ: docs/ROCKETMQ.md, "${row}"]`, test);
}
