import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

/**
 * vitest `globalSetup`: one directory per test run for what several test files build from this
 * tree's source and can share (the CLI bin, the bundled cloud assembly: test/helpers/run-cache.ts),
 * so each is built once per run instead of once per file. It lies under `node_modules/.cache/`
 * (inside the project, so the packages left external resolve from its `node_modules`) and is
 * removed when the run ends.
 */
export default function setup(project: TestProject): () => void {
  const cache = join(project.config.root, 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(join(cache, 'cld-test-run-'));
  project.provide('runCacheDir', dir);
  return () => rmSync(dir, { recursive: true, force: true });
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** Directory of the run's shared builds (test/global-setup.ts). */
    runCacheDir: string;
  }
}
