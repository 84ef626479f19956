import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { inject } from 'vitest';
import { buildCli } from '../../scripts/build-cli.js';

/**
 * Builds shared by the test files of one run (the directory test/global-setup.ts provides): the
 * first file that needs one builds it, under a lock (a directory created atomically, holding the
 * builder's pid), while a file in another worker that needs it too waits; every later file reuses
 * it. A build that fails or whose process died leaves no result, and the next caller builds again.
 */

/** Marker written into a build's directory once it is complete. */
const COMPLETE = '.complete';

/** Whether a process with this pid is alive. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The directory of the run's build `name`, built by `build(dir)` if no file of this run has built
 * it yet.
 * @param name directory name of the build in the run's cache directory
 * @param build writes the build into the (existing, empty) directory it is given
 * @throws whatever `build` throws
 */
export async function sharedBuild(
  name: string,
  build: (dir: string) => void | Promise<void>,
): Promise<string> {
  const dir = join(inject('runCacheDir'), name);
  const lock = `${dir}.lock`;
  for (;;) {
    if (existsSync(join(dir, COMPLETE))) return dir;
    try {
      mkdirSync(lock);
    } catch {
      const holder = Number(readFileSync(join(lock, 'pid'), { encoding: 'utf8', flag: 'a+' }));
      if (holder && !alive(holder)) rmSync(lock, { recursive: true, force: true });
      await sleep(250);
      continue;
    }
    try {
      writeFileSync(join(lock, 'pid'), String(process.pid));
      if (existsSync(join(dir, COMPLETE))) return dir;
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir);
      await build(dir);
      writeFileSync(join(dir, COMPLETE), '');
      return dir;
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
}

/**
 * Path of the `cld` bin built from this tree's source exactly as `npm run build:cli` builds
 * `dist/cld.mjs` (scripts/build-cli.ts), once per test run. Tests run the CLI as `node <bin> …`:
 * a start then costs a node start, not tsx transpiling cli/main.ts and what it imports (about
 * 1.5 s of CPU less per `ask`). `npm start --` (tsx) itself is run by test/e2e/ask.test.ts.
 */
export async function cliBin(): Promise<string> {
  return join(await sharedBuild('cli', (dir) => buildCli(dir)), 'cld.mjs');
}
