import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // One directory per run for builds test files share (test/helpers/run-cache.ts).
    globalSetup: ['test/global-setup.ts'],
  },
});
