/**
 * One settings path for every command, and one set of exit codes (issue 23, items 2 and 7): the
 * CLI, spawned as the `cld` bin (built from this tree's source), parses the whole environment before any command runs
 * (cli/settings.ts), honours `CLD_LIMITS` and `CLD_TOOL_APPROVAL` in `ask` as `serve` and the
 * functions do, refuses a malformed, unknown or out-of-range setting with exit code 2 naming it,
 * and answers a URN with nothing stored under it with exit code 3 (cli/errors.ts EXIT).
 */
import { spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { cliBin } from '../helpers/run-cache.js';

/** The `cld` bin built from this tree's source, once per run (test/helpers/run-cache.ts). */
const CLI = await cliBin();

/**
 * Wall time one CLI run may take on a loaded machine, in ms: 19–22 s wall at load 16 on 2 cores
 * under tsx, less as the built bin (test/e2e/cli.test.ts); sized for load 30.
 */
const CLI_RUN_MS = 60_000;
vi.setConfig({ testTimeout: CLI_RUN_MS, hookTimeout: CLI_RUN_MS });

/** A small folder to ask about: the aws-events module's README. */
const DOCS = 'node_modules/aws-cdk-lib/aws-events';
const QUESTION = 'How do I match only keys with a given prefix in an event rule?';

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI with only `env`'s `CLD_*` settings (this process's are dropped). */
function cli(args: string[], env: Record<string, string>): Promise<CliResult> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^(CLD_|AWS_)/.test(key)));
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...clean, ...env },
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
      resolve({
        code,
        stdout,
        stderr: stderr
          .split('\n')
          .filter((line) => !line.startsWith('npm warn'))
          .join('\n'),
      });
    });
  });
}

let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'cld-settings-'));
});

describe('every command parses the same settings', () => {
  it.each([
    [['ask', QUESTION]],
    [['serve', '--port', '0']],
    [['resume']],
    [['tools', 'list']],
  ])('%j refuses CLD_LIMITS that is not JSON with exit code 2, before doing anything', async (args) => {
    const result = await cli(args, { CLD_DATA_DIR: dataDir, CLD_LIMITS: '{bad' });
    expect(result.stderr.trim()).toBe('cld: CLD_LIMITS is not JSON');
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
  });

  it.each([
    [
      'an unknown key of CLD_LIMITS',
      ['ask', QUESTION],
      { CLD_LIMITS: '{"toolCalls":1}' },
      /CLD_LIMITS.*\n?.*"toolCalls"/,
    ],
    [
      'an out-of-range value of CLD_LIMITS',
      ['resume'],
      { CLD_LIMITS: '{"conversationToolCalls":-1}' },
      /invalid CLD_LIMITS[\s\S]*conversationToolCalls/,
    ],
    [
      'an unknown value of CLD_TOOL_APPROVAL',
      ['ask', QUESTION],
      { CLD_TOOL_APPROVAL: '{"search":"sometimes"}' },
      /CLD_TOOL_APPROVAL[\s\S]*search/,
    ],
    [
      'an out-of-range channel setting',
      ['tools', 'list'],
      { CLD_HTTP_MAX_BODY_BYTES: '0' },
      /CLD_HTTP_MAX_BODY_BYTES/,
    ],
  ])('refuses %s with exit code 2 naming it', async (_what, args, env, message) => {
    const result = await cli(args, { CLD_DATA_DIR: dataDir, ...env });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^cld: /);
    expect(result.stderr).toMatch(message);
  });
});

describe('ask honours the settings serve and the functions honour', () => {
  it('stops at CLD_LIMITS conversationToolCalls 0: the search tool never runs, exit code 1 naming the limit', async () => {
    const asked = await cli(['ask', '--docs', DOCS, QUESTION], {
      CLD_DATA_DIR: await mkdtemp(join(tmpdir(), 'cld-settings-limit-')),
      CLD_LIMITS: '{"conversationToolCalls":0}',
    });
    expect(asked.stdout).toMatch(
      /output FAILED: conversation budget exceeded: tool calls 0 of 0 \(limit conversationToolCalls\)/,
    );
    expect(asked.stdout).not.toMatch(/^ +result OK/m);
    expect(asked.stderr).toMatch(/^cld: the request failed: .*conversationToolCalls/m);
    expect(asked.code).toBe(1);
  });

  it('asks for approval before a search when CLD_TOOL_APPROVAL says "always", and runs none without it', async () => {
    const asked = await cli(['ask', '--docs', DOCS, QUESTION], {
      CLD_DATA_DIR: await mkdtemp(join(tmpdir(), 'cld-settings-approval-')),
      CLD_TOOL_APPROVAL: '{"search":"always"}',
    });
    expect(asked.stdout).toMatch(/tool search\(/);
    expect(asked.stdout).toMatch(/tool\.Approval/);
    expect(asked.stdout).not.toMatch(/^ +result OK/m);
    expect(asked.code).not.toBe(0);
  });
});

describe('exit codes agree across commands', () => {
  const UNSTORED = 'cld:common.Conversation.0123456789abcdef';

  it.each([
    [['show', UNSTORED], 3, `cld: nothing stored at ${UNSTORED}`],
    [['replay', UNSTORED], 3, `cld: no conversation stored at ${UNSTORED}`],
    [['resume', UNSTORED], 3, `cld: no conversation stored at ${UNSTORED}`],
    [['show', 'cld:common.Conversation.xyz'], 2, 'cld: URN element "common.Conversation.xyz"'],
  ])('%j exits %i with one line', async (args, code, line) => {
    const result = await cli(args, { CLD_DATA_DIR: dataDir });
    expect(result.stderr.split('\n')[0]).toContain(line);
    expect(result.code).toBe(code);
  });
});
