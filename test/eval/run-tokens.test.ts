import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'cld-eval-tokens-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('npm run eval -- --tokens', () => {
  it('stops its billing stub when the run fails before the questions (the process exits, code 1)', () => {
    // A data directory that is a file: the local runtime fails to make it, after the stub started.
    const notADirectory = join(dir, 'file');
    writeFileSync(notADirectory, '');
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'test/eval/run.ts', '--tokens', '--only', 'q01', '--data-dir', notADirectory],
      // Generous: a cold tsx start of the eval's module graph on a loaded 2-core machine; the run
      // itself fails in about a second, and without the fix it never ends (the signal below).
      { encoding: 'utf8', timeout: 120_000 },
    );
    expect(run.signal).toBeNull();
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('ENOTDIR');
  }, 150_000);
});
