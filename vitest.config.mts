import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * `npm run test:arm64` sets LITETOPIC_TEST_RUNS_SCALE: under emulation the property tests keep
 * their properties and run a fraction of their cases (scripts/arm64-fast-check.mjs).
 */
const scaledRuns = process.env.LITETOPIC_TEST_RUNS_SCALE !== undefined;

export default defineConfig({
  resolve: scaledRuns
    ? {
        alias: [
          {
            find: /^fast-check$/,
            replacement: fileURLToPath(new URL('scripts/arm64-fast-check.mjs', import.meta.url)),
          },
        ],
      }
    : {},
  test: {
    include: ['test/**/*.test.ts'],
    // Property tests run thousands of cases per engine; give them room on a shared 2-core machine.
    testTimeout: 60_000,
  },
});
