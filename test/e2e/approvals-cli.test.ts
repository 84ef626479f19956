/**
 * Approvals from the terminal (issue 23, item 3): `ask` stopped at a tool call that needs
 * approval (CLD_TOOL_APPROVAL `{"search":"always"}`) shows the request — tool, input, asking task
 * — and, without a terminal, exits 5 (cli/errors.ts EXIT.APPROVAL_NEEDED) with the commands that
 * decide it; `cld approvals list|approve|deny` decide it through shared/domain/approval.ts
 * `decideApproval`, run the conversation on and print its answer; on a terminal `ask` asks y/N.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { spawnCli } from '../helpers/spawn-cli.js';

/** One CLI run on a loaded 2-core machine (19–22 s wall at load 16 under tsx, less as the built bin). */
const CLI_RUN_MS = 60_000;
vi.setConfig({ testTimeout: 3 * CLI_RUN_MS, hookTimeout: CLI_RUN_MS });

const DOCS = 'node_modules/aws-cdk-lib/aws-events';
const QUESTION = 'How do I match only keys with a given prefix in an event rule?';
const REQUEST = /^ {2}request: (cld:common\.Conversation\.[0-9a-f]{16}\/\S+\/tool\.Approval\.[0-9a-f]{16})$/m;

let env: Record<string, string>;
const cli = (args: string[]) => spawnCli(args, { env, killAfterMs: 2 * CLI_RUN_MS });

beforeAll(async () => {
  env = {
    CLD_DATA_DIR: await mkdtemp(join(tmpdir(), 'cld-approvals-cli-')),
    CLD_TOOL_APPROVAL: '{"search":"always"}',
  };
  const ingested = await cli(['ingest', DOCS]);
  expect(ingested.code).toBe(0);
});

describe('ask without a terminal, then cld approvals', () => {
  it('stops with exit code 5 showing the request; approvals list shows it; approve runs the search and answers', async () => {
    const asked = await cli(['ask', QUESTION]);
    expect(asked.code).toBe(5);
    expect(asked.stdout).toContain(`approval pending: search {"query":"${QUESTION}"}`);
    expect(asked.stdout).toContain(`  asked by task: ${QUESTION}`);
    const request = REQUEST.exec(asked.stdout)?.[1] as string;
    expect(request).toBeDefined();
    expect(asked.stdout).toContain(`  approve: cld approvals approve ${request}`);
    expect(asked.stdout).toContain(`  deny:    cld approvals deny ${request}`);
    expect(asked.stderr).toMatch(/^cld: waiting for approval of 1 tool call\(s\)/);

    const listed = await cli(['approvals', 'list']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(`  request: ${request}`);

    const approved = await cli(['approvals', 'approve', request]);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toContain(`recorded: approved search (${request})`);
    // The search ran: the answer cites chunks of the ingested README.
    expect(approved.stdout).toMatch(/Sources:\n- aws-events README/);
    expect((await cli(['approvals', 'list'])).stdout.trim()).toBe('no approval is waiting');

    // Decided once: the other decision is refused (exit 1), naming the first.
    const again = await cli(['approvals', 'deny', request]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already decided: approve by cli:/);
  });

  it('deny answers the call DENIED: the search never runs', async () => {
    const asked = await cli(['ask', QUESTION]);
    expect(asked.code).toBe(5);
    const request = REQUEST.exec(asked.stdout)?.[1] as string;
    const conversation = request.split('/')[0] as string;
    // The next ask names the waiting conversation and how to see what it waits for, not "resume".
    const next = await cli(['ask', QUESTION]);
    expect(next.stdout).toContain(
      `conversation ${conversation} waits for your approval of a tool call: cld approvals list ${conversation}`,
    );
    expect(next.stdout).not.toContain(`cld resume ${conversation}`);
    const denied = await cli(['approvals', 'deny', request, '--reason', 'not now']);
    expect(denied.code).toBe(0);
    expect(denied.stdout).toContain(`recorded: denied search (${request})`);
    expect(denied.stdout).not.toMatch(/Sources:\n- aws-events README/);
    const all = await cli(['approvals', 'list', '--all']);
    expect(all.stdout).toContain('approval denied: search');
  });

  it('answers a request URN with nothing stored with exit code 3, a malformed one with 2', async () => {
    const missing = await cli([
      'approvals',
      'approve',
      'cld:common.Conversation.0123456789abcdef/common.Message.0123456789abcdef/plan.Task.0123456789abcdef/tool.Call.0123456789abcdef/tool.Approval.0123456789abcdef',
    ]);
    expect(missing.code).toBe(3);
    expect((await cli(['approvals', 'approve', 'not-a-urn'])).code).toBe(2);
  });
});

describe('ask on a terminal', () => {
  it('asks y/N for the waiting call and, on y, runs it and prints the answer', async () => {
    let answered = false;
    const asked = await spawnCli(['ask', QUESTION], {
      env,
      tty: true,
      killAfterMs: 2 * CLI_RUN_MS,
      onStdout: (stdout, child) => {
        if (answered || !stdout.includes('approve search? [y/N]')) return;
        answered = true;
        child.stdin?.write('y\n');
      },
    });
    expect(answered).toBe(true);
    expect(asked.code).toBe(0);
    expect(asked.stdout).toContain(`approval pending: search {"query":"${QUESTION}"}`);
    expect(asked.stdout).toMatch(/Sources:\r?\n- aws-events README/);
  });
});
