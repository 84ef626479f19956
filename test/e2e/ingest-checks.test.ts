/**
 * `cld ingest` checks content, not extensions (issue 23, item 6), run as the `cld` bin (built from source):
 * a binary renamed `ls.md`, 200 KB of random bytes as `.txt` and a folder with nothing ingestible
 * are left out with one line each saying why, and a path that yields nothing exits 2 naming it;
 * the text files beside them are ingested.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { cliBin } from '../helpers/run-cache.js';

/** The `cld` bin built from this tree's source, once per run (test/helpers/run-cache.ts). */
const CLI = await cliBin();

/** One CLI run on a loaded machine: 19–22 s wall at load 16 on 2 cores (test/e2e/cli.test.ts); sized for load 30. */
const CLI_RUN_MS = 60_000;
vi.setConfig({ testTimeout: CLI_RUN_MS, hookTimeout: CLI_RUN_MS });

function cli(
  args: string[],
  dataDir: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^(CLD_|AWS_)/.test(key)));
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...clean, CLD_DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 2 * CLI_RUN_MS);
  return new Promise((resolve) => {
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr: stderr.replace(/^npm warn.*\n/gm, '') });
    });
  });
}

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'cld-ingest-checks-'));
  await mkdir(join(work, 'bad'));
  await writeFile(join(work, 'bad', 'ls.md'), await readFile('/bin/ls'));
  await writeFile(join(work, 'bad', 'random.txt'), randomBytes(200 * 1024));
  await mkdir(join(work, 'good'));
  await writeFile(join(work, 'good', 'notes.md'), '# Notes\n\nThe bucket sends events to the bus.\n');
});

describe('cld ingest', () => {
  it('leaves out a binary renamed .md and random bytes as .txt, one line each, and exits 2 for a folder of nothing ingestible', async () => {
    const result = await cli(['ingest', join(work, 'bad')], join(work, 'data-bad'));
    expect(result.stdout).toMatch(/^ingested 0 files: 0 new \(0 chunks/m);
    expect(result.stdout).toMatch(/^left out .*bad\/ls\.md: binary content \(isbinaryfile\)$/m);
    expect(result.stdout).toMatch(/^left out .*bad\/random\.txt: binary content \(isbinaryfile\)$/m);
    expect(result.stderr).toMatch(
      /^cld: nothing ingestible in .*bad: no \.md, \.markdown, \.txt file of UTF-8 text there/,
    );
    expect(result.code).toBe(2);
  });

  it('ingests the text beside a binary named explicitly, then exits 2 naming the binary', async () => {
    const result = await cli(
      ['ingest', join(work, 'good'), join(work, 'bad', 'ls.md')],
      join(work, 'data-mixed'),
    );
    expect(result.stdout).toMatch(/^ingested 1 files: 1 new \(1 chunks/m);
    expect(result.stdout).toMatch(/^left out .*bad\/ls\.md: binary content \(isbinaryfile\)$/m);
    expect(result.stderr).toMatch(/^cld: nothing ingestible in .*bad\/ls\.md:/);
    expect(result.code).toBe(2);
  });
});
