// fast-check for the emulated arm64 test run (scripts/test-arm64.mjs), in place of the package
// itself (vitest.config.mts aliases it when LITETOPIC_TEST_RUNS_SCALE is set): every property runs
// unchanged, with its number of runs scaled down. Under emulation each run costs tens of times what
// it costs natively, and every property has its full count in `npm test`; here the point is that
// the arm64 binary goes through each property's paths at all.
import * as real from '../node_modules/fast-check/lib/fast-check.js';

const scale = Number(process.env.LITETOPIC_TEST_RUNS_SCALE);
if (!(scale > 0 && scale <= 1)) {
  throw new Error(
    `LITETOPIC_TEST_RUNS_SCALE takes a number in (0, 1] (got "${process.env.LITETOPIC_TEST_RUNS_SCALE}")`,
  );
}
/** fast-check's own default when a property names no count. */
const DEFAULT_RUNS = 100;
const scaled = (runs) => Math.max(1, Math.round(runs * scale));

function assert(property, parameters = {}) {
  const runs = parameters.numRuns ?? real.readConfigureGlobal()?.numRuns ?? DEFAULT_RUNS;
  return real.assert(property, { ...parameters, numRuns: scaled(runs) });
}

export * from '../node_modules/fast-check/lib/fast-check.js';
export { assert };
export default { ...real.default, assert };
