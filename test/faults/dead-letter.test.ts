/**
 * The dead-letter step, row by row (shared/domain/dead-letter.ts): on a small synthetic plan
 * (2 root tasks × 2 leaves, scripted model) one event of each kind is poisoned — it fails every
 * attempt in the step it is routed to — and the run must still end with every task settled, the
 * affected task (or the request) failed with DELIVERY_FAILED, the reason in the user's answer
 * (partial when another part answered, issue 21),
 * and projections equal to a replay. A negative control shows the harness catches a projection
 * store that counts repeats.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outputUrn } from '../../shared/domain/common.js';
import { deadLetterStep } from '../../shared/domain/dead-letter.js';
import { ValidationError } from '../../shared/errors.js';
import { s3ObjectCreatedEvent } from '../../shared/events/envelope.js';
import type { ProjectionStore } from '../../shared/projections/port.js';
import type { Message, Plan, Task } from '../../shared/resources/schemas.js';
import { createLocalRuntime, LOCAL_BUCKET } from '../../shared/runtime/local.js';
import { keyOf } from '../../shared/urn.js';
import {
  poisonProblems,
  problemsOf,
  type RunOutcome,
  runScenario,
  SCENARIOS,
  type Scenario,
  syntheticWorkload,
} from './harness.js';

const workload = syntheticWorkload([2, 2]);
const poisonScenario = SCENARIOS.find((s) => s.name === 'poison') as Scenario;
let clean: RunOutcome;

const task = (title: string) =>
  clean.resources.find((r): r is Task => r.meta.type === 'plan.Task' && (r as Task).title === title) as Task;
const outputOf = (run: RunOutcome, urn: string) =>
  run.resources.find((r) => r.meta.id === outputUrn(urn)) as Message;

beforeAll(async () => {
  clean = await runScenario(workload, SCENARIOS[0] as Scenario);
});

/**
 * Checks every poison run shares, against the clean run (no fault) and what is stated here: the
 * resources the failure cannot reach are the clean run's, the failure reaches the answer (the
 * scripted supervisors cannot correct it), settled, only the poison dead-lettered (once: no
 * duplicate deliveries here), projections = replay.
 */
function expectSettled(run: RunOutcome, answer: 'failed' | 'partial' = 'failed'): void {
  expect(run.deadLetters.length).toBe(1);
  expect(poisonProblems(run, clean, { answer })).toEqual([]);
}

describe('dead letters fail the task the event was for', () => {
  it('plan step, user Message: a Plan with the error and an answer saying planning failed', async () => {
    const message = clean.resources.find(
      (r) => r.meta.type === 'common.Message' && (r as Message).role === 'user',
    );
    const run = await runScenario(workload, poisonScenario, {
      target: 'plan',
      urn: message?.meta.id as string,
    });

    expectSettled(run);
    const plan = run.resources.find((r): r is Plan => r.meta.type === 'plan.Plan') as Plan;
    expect(plan.tasks).toEqual([]);
    expect(plan.error?.code).toBe('DELIVERY_FAILED');
    expect(run.resources.some((r) => r.meta.type === 'plan.Task')).toBe(false);
    expect(run.answer?.content).toMatch(
      /^I could not plan this request: event for .* failed 3 times in the plan step/,
    );
  });

  it('plan step, root task output: the output is counted and the answer carries the error', async () => {
    const root = task('S2');
    const run = await runScenario(workload, poisonScenario, { target: 'plan', urn: outputUrn(root.meta.id) });

    expectSettled(run);
    expect(run.answer?.error?.code).toBe('DELIVERY_FAILED');
    expect(run.answer?.content).toContain(
      `event for ${outputUrn(root.meta.id)} failed 3 times in the plan step`,
    );
    const rootCounter = run.projections.find(
      (p) => p.name.startsWith('done#') && p.name.split('/').length === 2,
    );
    expect(rootCounter?.members).toContain(outputUrn(root.meta.id));
  });

  it('assistant step, a leaf Task: the leaf fails, runs nothing, and the failure reaches the answer as the part not answered', async () => {
    const leaf = task('S2.1');
    const run = await runScenario(workload, poisonScenario, { target: 'assistant', urn: leaf.meta.id });

    // Its sibling S2.2 and the other root S1 answered: the answer keeps them (partial, issue 21).
    expectSettled(run, 'partial');
    expect(outputOf(run, leaf.meta.id).error?.code).toBe('DELIVERY_FAILED');
    expect(run.resources.some((r) => r.meta.parent === leaf.meta.id && r.meta.type === 'tool.Call')).toBe(
      false,
    );
    expect(run.answer?.content).toContain(`event for ${leaf.meta.id} failed 3 times in the assistant step`);
  });

  it('assistant step, a subtask output: counted for its parent, and the parent fails (the answer keeps the other root)', async () => {
    const leaf = task('S2.2');
    const run = await runScenario(workload, poisonScenario, {
      target: 'assistant',
      urn: outputUrn(leaf.meta.id),
    });

    // The other root S1 answered: the answer keeps it and names S2 (partial, issue 21).
    expectSettled(run, 'partial');
    expect(outputOf(run, leaf.meta.id).error).toBeUndefined();
    const parent = outputOf(run, task('S2').meta.id);
    expect(parent.error?.code).toBe('DELIVERY_FAILED');
    expect(parent.error?.message).toContain(
      `event for ${outputUrn(leaf.meta.id)} failed 3 times in the assistant step`,
    );
    expect(run.answer?.error).toBeUndefined();
    expect(run.answer?.unanswered?.map((p) => p.task)).toEqual([task('S2').meta.id]);
  });

  it('the harness catches a projection store that counts a repeated member again', async () => {
    const countsRepeats = (inner: ProjectionStore): ProjectionStore => ({
      ...inner,
      get: (key) => inner.get(key),
      list: (conversation) => inner.list(conversation),
      deleteConversation: (conversation) => inner.deleteConversation(conversation),
      applyOnce: async (key, member, increments, options) => {
        const first = await inner.applyOnce(key, member, increments, options);
        // The broken store: a repeat adds its increments under a fresh member name.
        return first.applied ? first : inner.applyOnce(key, `${member}#again`, increments, options);
      },
    });
    const duplicates = SCENARIOS.find((s) => s.name === 'duplicates') as Scenario;

    const run = await runScenario(workload, duplicates, undefined, { tamper: countsRepeats });

    expect(run.replay.length).toBeGreaterThan(0);
    expect(problemsOf(run, clean).some((p) => p.startsWith('projections differ from the replay'))).toBe(true);
  });
});

describe('deadLetterStep input', () => {
  let dataDir: string;
  let runtime: Awaited<ReturnType<typeof createLocalRuntime>>;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'cld-dead-letter-'));
    runtime = await createLocalRuntime({ dataDir });
  });

  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('writes nothing for a dead letter of a step outside the task tree (a channel reply)', async () => {
    const answer = `${clean.conversation}/common.Message.0123456789abcdef`;
    const outcome = await deadLetterStep(
      {
        target: 'reply',
        event: s3ObjectCreatedEvent(LOCAL_BUCKET, keyOf(answer), 10),
        attempts: 3,
        error: { code: 'ERROR', message: 'Slack answered 500' },
      },
      runtime.deps,
    );

    expect(outcome.action).toBe('ignored');
    expect(await runtime.storage.findByPrefix('cld/common.Conversation.')).toEqual([]);
  });

  it.each([
    ['no target', { event: {}, attempts: 3, error: { code: 'E', message: 'm' } }],
    ['zero attempts', { target: 'tool', event: {}, attempts: 0, error: { code: 'E', message: 'm' } }],
    [
      'an event that is not an S3 event',
      { target: 'tool', event: { hello: 1 }, attempts: 3, error: { code: 'E', message: 'm' } },
    ],
  ])('rejects a letter with %s', async (_label, letter) => {
    await expect(deadLetterStep(letter, runtime.deps)).rejects.toBeInstanceOf(ValidationError);
  });
});
