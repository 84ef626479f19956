import { configDefaults, defineConfig } from 'vitest/config';

/**
 * The infra tests load aws-cdk-lib and synthesize the app; a fresh process per file paid for
 * loading it and for CDK's built-in CloudFormation validation engine (about 13 s of CPU per synth
 * in a new process) every time. They keep no state between files (no mocks, no environment
 * changes), so they run without isolation: a worker runs several of them, the engine and the
 * modules loaded once. 8 of these files: 172.7 s of CPU isolated, 39.4 s not (issue 23).
 */
const INFRA = ['test/infra/**/*.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // One directory per run for builds test files share (test/helpers/run-cache.ts).
    globalSetup: ['test/global-setup.ts'],
    projects: [
      { extends: true, test: { name: 'infra', include: INFRA, isolate: false } },
      {
        extends: true,
        test: {
          name: 'isolated',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...INFRA],
        },
      },
    ],
  },
});
