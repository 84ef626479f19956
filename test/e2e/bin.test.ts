/**
 * The `cld` bin (issue 23, item 5): package.json's `bin` names dist/cld.mjs, which
 * `npm run build:cli` (run by `prepare`, so by `npm ci`) builds with esbuild; run with plain
 * `node`, no tsx, it prints the usage and answers with the documented exit codes.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it, vi } from 'vitest';

/** Building the bin (esbuild, a few hundred modules) and one run, on a loaded 2-core machine. */
const BUILD_MS = 120_000;
vi.setConfig({ testTimeout: 60_000, hookTimeout: BUILD_MS });

const run = promisify(execFile);
const BIN = 'dist/cld.mjs';

beforeAll(async () => {
  if (!existsSync(BIN)) await run(process.execPath, ['--import', 'tsx', 'scripts/build-cli.ts']);
});

async function cld(args: string[], env: Record<string, string> = {}) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^(CLD_|AWS_)/.test(key)));
  return run(process.execPath, [BIN, ...args], { env: { ...clean, ...env } }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({
      code: error.code,
      stdout: error.stdout,
      stderr: error.stderr,
    }),
  );
}

describe('the cld bin', () => {
  it('is what package.json names, with a node shebang', () => {
    const manifest = JSON.parse(readFileSync('package.json', 'utf8')) as { bin: Record<string, string> };
    expect(manifest.bin).toEqual({ cld: BIN });
    expect(readFileSync(BIN, 'utf8').split('\n')[0]).toBe('#!/usr/bin/env node');
  });

  it('prints the usage with every command on --help, exit code 0', async () => {
    const result = await cld(['--help']);
    expect(result.code).toBe(0);
    for (const command of ['ingest', 'ask', 'show', 'resume', 'replay', 'serve', 'tools', 'approvals'])
      expect(result.stdout).toMatch(new RegExp(`^ {2}cld ${command}\\b`, 'm'));
  });

  it('answers an unknown command with the usage and exit code 2, a URN with nothing stored with 3', async () => {
    const unknown = await cld(['frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^cld: unknown command "frobnicate"\nusage:/);
    const dataDir = await mkdtemp(join(tmpdir(), 'cld-bin-'));
    const missing = await cld(['show', 'cld:common.Conversation.0123456789abcdef'], {
      CLD_DATA_DIR: dataDir,
    });
    expect(missing.stderr.trim()).toBe('cld: nothing stored at cld:common.Conversation.0123456789abcdef');
    expect(missing.code).toBe(3);
  });
});
