import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Message, Plan, Task, ToolCallResource, Verdict } from '../../shared/resources/schemas.js';
import { isWithin, parentOf, typeOf } from '../../shared/urn.js';
import { DOCS, QUESTION, type RunResult, runAsk, withoutTimestamps } from './local-run.js';

const run = promisify(execFile);

/**
 * Wall time one CLI run may take on a loaded machine, in ms: 5–6 s of CPU before any output (tsx
 * transpiles the CLI: issue 23, item 5), 19–22 s wall at load 16 on 2 cores; `ask --docs` also
 * ingests two aws-cdk-lib folders (22 s wall as its own run at that load). Sized for load 30.
 */
const CLI_RUN_MS = 60_000;

/** Runs the real CLI as a user does (`npm start -- ...` is `tsx cli/main.ts ...`). */
async function cli(args: string[], dataDir: string) {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'cli/main.ts', ...args], {
      env: { ...withoutModel(process.env), CLD_DATA_DIR: dataDir },
      timeout: 2 * CLI_RUN_MS,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout: string; stderr: string };
    return { code: e.code ?? 1, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('ask on the aws-cdk-lib documents, end to end (local runtime, offline model)', () => {
  let clean: RunResult;

  beforeAll(async () => {
    clean = await runAsk();
  });

  it('plans one root task with one subtask per question, each with an elected assistant and scores', () => {
    const tasks = clean.resources.filter((r): r is Task => r.meta.type === 'plan.Task');
    const plan = clean.resources.find((r): r is Plan => r.meta.type === 'plan.Plan');
    expect(plan?.tasks).toHaveLength(1);
    const root = tasks.find((t) => t.meta.id === plan?.tasks[0]) as Task;
    expect(root.subtasks).toHaveLength(2);
    expect(root.election.name).toBe('coordinator');
    const leaves = tasks.filter((t) => parentOf(t.meta.id) === root.meta.id && t.round === 0);
    expect(leaves.map((t) => t.title)).toEqual([
      'How do I send S3 object events to EventBridge?',
      'How do I match only keys with a given prefix in an event rule?',
    ]);
    for (const leaf of leaves) {
      expect(leaf.election.name).toBe('researcher');
      expect(leaf.election.score).toBeGreaterThan(leaf.election.runnerUp?.score ?? 1);
    }
  });

  it('runs the search tool for each leaf and stores OK results under the task', () => {
    const calls = clean.resources.filter((r): r is ToolCallResource => r.meta.type === 'tool.Call');
    expect(calls.length).toBeGreaterThanOrEqual(2);
    expect(new Set(calls.map((c) => c.call.name))).toEqual(new Set(['search']));
    const results = clean.resources.filter(
      (r): r is Message => r.meta.type === 'common.Message' && (r as Message).role === 'tool',
    );
    expect(results).toHaveLength(calls.length);
    expect(results.every((r) => r.status === 'OK')).toBe(true);
    for (const call of calls) expect(typeOf(parentOf(call.meta.id) as string)).toBe('plan.Task');
  });

  it('stores a passing verdict of the supervisor and answers with citations of document chunks', () => {
    const verdicts = clean.resources.filter((r): r is Verdict => r.meta.type === 'plan.Verdict');
    expect(verdicts.at(-1)?.pass).toBe(true);
    expect(clean.answer?.role).toBe('assistant');
    expect(clean.answer?.error).toBeUndefined();
    expect(clean.answer?.citations?.length).toBeGreaterThanOrEqual(2);
    for (const citation of clean.answer?.citations ?? [])
      expect(citation).toMatch(/^cld:doc\.Document\.[0-9a-f]{16}\/doc\.Chunk\.[0-9a-f]{16}$/);
    // The Sources block lists each citation by its document and heading (issue 21 item 4).
    expect(clean.answer?.sources?.map((s) => s.urn)).toEqual(clean.answer?.citations);
    const listed = clean.answer?.content.split('\nSources:\n')[1]?.split('\n') ?? [];
    for (const source of clean.answer?.sources ?? []) {
      expect(source.label).toMatch(/^aws-(s3|events) README › \S/);
      expect(listed).toContain(`- ${source.label}`);
    }
    expect(clean.answer?.content.toLowerCase()).toContain('eventbridge');
    expect(clean.answer?.content).toMatch(/prefix/i);
    // The facts a CDK user types, as code taken from the cited chunks (issue 11).
    expect(clean.answer?.content).toMatch(/```ts\n[^`]*eventBridgeEnabled: true/);
    expect(clean.answer?.content).toMatch(/```ts\n[^`]*events\.Match\.(prefix|wildcard)\(/);
    expect(clean.answer?.content).not.toMatch(/^#{1,3} (?!How do I)/m);
  });

  it('keeps every resource of the run under the conversation URN', () => {
    for (const resource of clean.resources) expect(isWithin(resource.meta.id, clean.conversation)).toBe(true);
    expect(clean.runtime.bus.deadLetters).toEqual([]);
  });

  it('ends with the same resources and answer when every event is delivered twice, shuffled and delayed', async () => {
    const faulty = await runAsk({ faults: { copies: 2, shuffle: true, maxDelayMs: 20, seed: 7 } });
    expect(faulty.runtime.bus.stats.routed).toBe(2 * clean.runtime.bus.stats.routed);
    const key = (r: { meta: { id: string } }) => r.meta.id;
    expect(faulty.resources.map(key).sort()).toEqual(clean.resources.map(key).sort());
    const byUrn = new Map(clean.resources.map((r) => [r.meta.id, withoutTimestamps(r)]));
    for (const resource of faulty.resources)
      expect(withoutTimestamps(resource)).toEqual(byUrn.get(resource.meta.id));
    expect(faulty.answer?.content).toBe(clean.answer?.content);
    expect(faulty.runtime.bus.deadLetters).toEqual([]);
  });
});

describe('the cld CLI', () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'cld-cli-'));
  });
  afterAll(() => undefined);

  it(
    'asks with --docs, prints the answer, citations and the conversation URN, and show prints the tree',
    async () => {
      const asked = await cli(['ask', ...DOCS.flatMap((d) => ['--docs', d]), QUESTION], dataDir);
      expect(asked.stderr).toBe('');
      expect(asked.code).toBe(0);
      expect(asked.stdout).toContain('model: offline');
      expect(asked.stdout).toMatch(/Sources:\n- (?:[^\n]* \()?cld:doc\.Document\./);
      const urn = /conversation: (cld:common\.Conversation\.[0-9a-f]{16})/.exec(asked.stdout)?.[1] as string;
      expect(urn).toBeDefined();
      const shown = await cli(['show', urn], dataDir);
      expect(shown.code).toBe(0);
      expect(shown.stdout).toContain('verdict round 1: pass');
      expect(shown.stdout).toMatch(/researcher \(0\.\d+; runner-up/);
    },
    3 * CLI_RUN_MS,
  ); // ask with ingest (two runs' work), then show

  it(
    'works against what was ingested before when --docs is left out',
    async () => {
      const asked = await cli(['ask', 'How do I enable EventBridge notifications on a bucket?'], dataDir);
      expect(asked.code).toBe(0);
      expect(asked.stdout).toMatch(/Sources:\n- (?:[^\n]* \()?cld:doc\.Document\./);
    },
    CLI_RUN_MS,
  );

  it.each([
    [['ask', '--docs', 'no/such/folder', 'q?'], /docs path does not exist: no\/such\/folder/],
    [['show', 'cld:common.Conversation.xyz'], /URN element "common\.Conversation\.xyz"/],
    [['show', 'urn:other'], /URN must start with "cld:"/],
    [['frobnicate'], /unknown command "frobnicate"/],
  ])(
    'fails with one clear line for %j',
    async (args, message) => {
      const result = await cli(args as string[], dataDir);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(message);
      expect(result.stderr.split('\n')[0]).toMatch(/^cld: /);
    },
    CLI_RUN_MS,
  );
});

function withoutModel(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { CLD_MODEL_ID: _model, CLD_DATA_DIR: _dir, ...rest } = env;
  return rest;
}
