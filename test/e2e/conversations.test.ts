/**
 * Conversations by URN (issue 23, item 4): `ask --conversation` takes the URN the CLI prints or
 * the name of a stored conversation, refuses one that does not exist unless `--new` (exit 3), and
 * after Ctrl-C the next `ask` does not finish the interrupted conversation behind the user's back
 * and answer a duplicate: piped, it prints the `cld resume <urn>` line; on a terminal it offers to
 * resume it and shows its answer; the same `ask --conversation <name>` again picks it up.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startOpenAIStub } from '../helpers/openai-stub.js';
import { type CliRun, spawnCli } from '../helpers/spawn-cli.js';

/** One CLI run on a loaded 2-core machine (19–22 s wall at load 16 under tsx, less as the built bin). */
const CLI_RUN_MS = 60_000;
vi.setConfig({ testTimeout: 5 * CLI_RUN_MS, hookTimeout: CLI_RUN_MS });

const DOCS = 'node_modules/aws-cdk-lib/aws-events';
const QUESTION = 'How do I match only keys with a given prefix in an event rule?';
const INTERRUPTED =
  /^cld: interrupted; what was stored so far stays under (cld:common\.Conversation\.[0-9a-f]{16})$/m;

let dataDir: string;
let stub: Awaited<ReturnType<typeof startOpenAIStub>>;
const cli = (
  args: string[],
  options: { tty?: boolean; onStdout?: Parameters<typeof spawnCli>[1]['onStdout'] } = {},
) => spawnCli(args, { env: { CLD_DATA_DIR: dataDir }, killAfterMs: 2 * CLI_RUN_MS, ...options });

/** `ask` with a model that never answers, stopped by Ctrl-C (SIGINT) once the message is stored. */
async function interruptedAsk(args: string[]): Promise<{ run: CliRun; conversation: string }> {
  let signalled = false;
  const run = await spawnCli(['ask', ...args, QUESTION], {
    env: {
      CLD_DATA_DIR: dataDir,
      CLD_MODEL_PROVIDER: 'openai',
      CLD_OPENAI_BASE_URL: stub.baseUrl,
      CLD_MODEL_ID: 'stub-model',
    },
    killAfterMs: 2 * CLI_RUN_MS,
    onStdout: (stdout, child) => {
      if (signalled || !stdout.includes(`user: "${QUESTION}"`)) return;
      signalled = true;
      child.kill('SIGINT');
    },
  });
  expect(run.code).toBe(130);
  const conversation = INTERRUPTED.exec(run.stderr)?.[1] as string;
  expect(conversation).toBeDefined();
  return { run, conversation };
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'cld-conversations-'));
  stub = await startOpenAIStub();
  stub.respond = () => ({ hang: true });
  expect((await cli(['ingest', DOCS])).code).toBe(0);
});
afterAll(async () => {
  await stub?.stop();
});

describe('ask --conversation', () => {
  it('refuses a name with no conversation unless --new, and a conversation URN with nothing stored (exit 3)', async () => {
    const named = await cli(['ask', '--conversation', 'never-started', QUESTION]);
    expect(named.code).toBe(3);
    expect(named.stderr).toMatch(
      /^cld: no conversation named "never-started" \(cld:common\.Conversation\.[0-9a-f]{16}\); add --new to start it$/m,
    );
    const urn = await cli(['ask', '--conversation', 'cld:common.Conversation.0123456789abcdef', QUESTION]);
    expect(urn.code).toBe(3);
    expect(urn.stderr).toMatch(/^cld: no conversation stored at cld:common\.Conversation\.0123456789abcdef/m);
    // Nothing was stored by the refusals.
    expect(
      (await cli(['show', /\((cld:common\.Conversation\.[0-9a-f]{16})\)/.exec(named.stderr)?.[1] as string]))
        .code,
    ).toBe(3);
  });
});

describe('Ctrl-C, then ask again', () => {
  it('piped: prints the cld resume line instead of finishing it unseen; cld resume then answers it', async () => {
    const { conversation } = await interruptedAsk([]);
    const again = await cli(['ask', QUESTION]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(
      `conversation ${conversation} was interrupted before its answer to "${QUESTION}"; to finish it: cld resume ${conversation}`,
    );
    // Not re-driven behind the user's back: still without an answer.
    expect((await cli(['show', conversation])).stdout).not.toMatch(/answer/);
    const resumed = await cli(['resume', conversation]);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain(`${conversation}: done`);
  });

  it('on a terminal: offers to resume it and, on y, shows its answer without asking a duplicate', async () => {
    const { conversation } = await interruptedAsk([]);
    let offered = false;
    const again = await cli(['ask', QUESTION], {
      tty: true,
      onStdout: (stdout, child) => {
        if (offered || !stdout.includes('Resume it? [y/N]')) return;
        offered = true;
        child.stdin?.write('y\n');
      },
    });
    expect(offered).toBe(true);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`conversation: ${conversation} (resumed)`);
    expect(again.stdout).toMatch(/Match\.(prefix|wildcard)/);
    const shown = await cli(['show', conversation]);
    expect(shown.stdout.match(/user: "/g)).toHaveLength(1);
  });

  it('the same ask --conversation <name> --new again picks the interrupted message up and answers it', async () => {
    const { conversation } = await interruptedAsk(['--conversation', 'picked-up', '--new']);
    const again = await cli(['ask', '--conversation', 'picked-up', '--new', QUESTION]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`conversation: ${conversation} (resumed)`);
    expect(again.stdout).toContain(`continue with: cld ask --conversation ${conversation} "…"`);
    const shown = await cli(['show', conversation]);
    expect(shown.stdout.match(/user: "/g)).toHaveLength(1);
  });
});
