import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Property tests run thousands of cases per engine; give them room on a shared 2-core machine.
    testTimeout: 60_000,
  },
});
