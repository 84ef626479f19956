/**
 * Budgets: tokens, model calls and tool calls per conversation, counted in the projection store,
 * and wall time per user Message: the check that picks the used-up budget, and whole runs on the
 * embedded default (the scripted model, two root tasks that each call `search` once and then
 * answer) where a budget runs out — the task fails with BUDGET_EXCEEDED, nothing stays pending,
 * the user's answer names the budget, and the budget projection equals a replay from storage —
 * or where a follow-up comes long after the first message's wall time and is answered.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { outputUrn } from '../../shared/domain/common.js';
import { startConversation } from '../../shared/domain/conversation.js';
import { DEFAULT_LIMITS, type Limits } from '../../shared/domain/limits.js';
import { BudgetExceededError } from '../../shared/errors.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import { budgetExceeded, readBudget } from '../../shared/projections/budget.js';
import { chargesOf, diffProjections, foldCharges } from '../../shared/projections/replay.js';
import type { AnyResource, Message } from '../../shared/resources/schemas.js';
import { createLocalRuntime } from '../../shared/runtime/local.js';
import { parseLimits } from '../../shared/runtime/settings.js';
import { SCALE_LIMITS } from '../bench/scale-limits.js';
import { ScriptedModel } from '../faults/scripted-model.js';

describe('budgetExceeded', () => {
  const limits: Limits = {
    ...DEFAULT_LIMITS,
    conversationTokens: 1_000,
    conversationModelCalls: 5,
    conversationToolCalls: 3,
    messageWallTimeMs: 60_000,
  };
  const now = new Date('2025-01-01T00:10:00.000Z');
  const since = '2025-01-01T00:09:30.000Z';
  /** A message stored 30 s ago: half its wall time left. */
  const clock = { now, messageStartedAt: since };

  it.each([
    [
      'tokens',
      { tokens: 1_000, modelCalls: 1, toolCalls: 0, since },
      {},
      'conversationTokens',
      'tokens 1,000 of 1,000',
    ],
    [
      'model calls',
      { tokens: 10, modelCalls: 5, toolCalls: 0, since },
      {},
      'conversationModelCalls',
      'model calls 5 of 5',
    ],
    [
      'tool calls',
      { tokens: 10, modelCalls: 1, toolCalls: 2, since },
      { toolCalls: 2 },
      'conversationToolCalls',
      'tool calls 2 of 3',
    ],
  ])('names the %s budget when it is used up', (_label, usage, next, budget, text) => {
    const error = budgetExceeded(usage, limits, clock, Object.keys(next).length ? next : undefined);

    expect(error).toBeInstanceOf(BudgetExceededError);
    expect(error?.code).toBe('BUDGET_EXCEEDED');
    expect(error?.details).toMatchObject({ budget });
    expect(error?.message).toContain(text);
  });

  it('lets a call through while every budget has room', () => {
    expect(
      budgetExceeded({ tokens: 999, modelCalls: 4, toolCalls: 1, since }, limits, clock),
    ).toBeUndefined();
    expect(
      budgetExceeded({ tokens: 0, modelCalls: 0, toolCalls: 1 }, limits, clock, { toolCalls: 2 }),
    ).toBeUndefined();
  });

  it("counts wall time from the user Message's creation, on both sides of the limit", () => {
    const usage = { tokens: 10, modelCalls: 1, toolCalls: 0, since: '2024-12-31T00:00:00.000Z' };
    const startedAt = (msAgo: number) => ({
      now,
      messageStartedAt: new Date(now.getTime() - msAgo).toISOString(),
    });

    // The conversation's first charge a day ago does not count: only the message's own time.
    expect(budgetExceeded(usage, limits, startedAt(60_000))).toBeUndefined();
    const error = budgetExceeded(usage, limits, startedAt(60_001));
    expect(error).toBeInstanceOf(BudgetExceededError);
    expect(error?.details).toEqual({ budget: 'messageWallTimeMs', used: 60_001, limit: 60_000 });
    expect(error?.message).toBe(
      'message budget exceeded: wall time ms 60,001 of 60,000 (limit messageWallTimeMs)',
    );
    expect(budgetExceeded(usage, limits, { now, messageStartedAt: undefined })).toBeUndefined();
  });

  it('takes the budgets from CLD_LIMITS over the defaults', () => {
    const parsed = parseLimits('{"conversationModelCalls": 7, "messageWallTimeMs": 5000}');

    expect(parsed.conversationModelCalls).toBe(7);
    expect(parsed.messageWallTimeMs).toBe(5_000);
    expect(parsed.conversationTokens).toBe(DEFAULT_LIMITS.conversationTokens);
    expect(() => parseLimits('{"conversationToolCalls": -1}')).toThrow(/conversationToolCalls/);
  });

  it('accepts a 10,000-task conversation when configured for it; the defaults stay conservative', () => {
    const scale = parseLimits(JSON.stringify(SCALE_LIMITS));
    expect(scale.maxSubtasks).toBe(10);
    expect(scale.conversationModelCalls).toBe(100_000);

    // Budgets of model and tool calls: at most 1,000,000 (one member item per charge, no set).
    expect(parseLimits('{"conversationModelCalls": 1000000}').conversationModelCalls).toBe(1_000_000);
    expect(() => parseLimits('{"conversationModelCalls": 1000001}')).toThrow(/conversationModelCalls/);
    expect(parseLimits('{"conversationToolCalls": 1000000}').conversationToolCalls).toBe(1_000_000);
    expect(() => parseLimits('{"conversationToolCalls": 1000001}')).toThrow(/conversationToolCalls/);
    expect(DEFAULT_LIMITS).toMatchObject({
      maxSubtasks: 8,
      conversationModelCalls: 2_000,
      conversationToolCalls: 1_000,
    });
  });
});

describe('a conversation that runs out of budget', () => {
  const dirs: string[] = [];

  afterEach(async () => {
    await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  });

  /** Two root tasks (each: one `search` call, then an answer), one invocation at a time. */
  async function run(
    limits: Partial<Limits>,
    options: { now?: () => Date; messages?: number; beforeMessage?: (i: number) => void } = {},
  ) {
    const dataDir = await mkdtemp(join(tmpdir(), 'cld-budget-'));
    dirs.push(dataDir);
    const runtime = await createLocalRuntime({
      dataDir,
      model: new ScriptedModel([2]),
      limits,
      concurrency: 1,
      backoffMs: () => 1,
      ...(options.now ? { now: options.now } : {}),
    });
    const answers: (Message | undefined)[] = [];
    let conversation = '';
    for (let i = 1; i <= (options.messages ?? 1); i++) {
      options.beforeMessage?.(i);
      const started = await startConversation(runtime.deps.resources, {
        user: 'cli:budget',
        channel: { kind: 'cli' },
        content: `Run the synthetic plan (message ${i}).`,
        conversationName: 'budget-conversation',
        messageName: `message-${i}`,
        now: runtime.deps.now(),
      });
      await runtime.bus.idle();
      conversation = started.conversation;
      answers.push(
        (await runtime.deps.resources.find(SYSTEM_ACTOR, 'common.Message', started.answer)) as
          | Message
          | undefined,
      );
    }
    const root = await runtime.deps.resources.get(SYSTEM_ACTOR, conversation);
    const resources: AnyResource[] = [
      root,
      ...(await runtime.deps.resources.list(SYSTEM_ACTOR, conversation)),
    ];
    const tasks = resources.filter((r) => r.meta.type === 'plan.Task').map((r) => r.meta.id);
    const outputs = tasks.map(
      (t) => resources.find((r) => r.meta.id === outputUrn(t)) as Message | undefined,
    );
    const stored = await runtime.projections.list(conversation);
    return {
      answers,
      outputs,
      budget: await readBudget(runtime.projections, conversation),
      replay: diffProjections(stored, foldCharges(conversation, chargesOf(conversation, resources))),
      deadLetters: runtime.bus.deadLetters,
    };
  }

  it('fails the tasks whose next model call is over the limit and tells the user which budget', async () => {
    const outcome = await run({ conversationModelCalls: 3 });

    expect(outcome.budget.modelCalls).toBe(3); // the plan and each task's first turn
    expect(outcome.outputs.every(Boolean)).toBe(true);
    expect(outcome.outputs.every((o) => o?.error?.code === 'BUDGET_EXCEEDED')).toBe(true);
    const answer = outcome.answers[0];
    expect(answer?.error?.code).toBe('BUDGET_EXCEEDED');
    expect(answer?.content).toContain(
      'conversation budget exceeded: model calls 3 of 3 (limit conversationModelCalls)',
    );
    expect(outcome.replay).toEqual([]);
    expect(outcome.deadLetters).toEqual([]);
  });

  it('fails a task whose turn asks for more tool calls than the budget has left (the answer keeps the other)', async () => {
    const outcome = await run({ conversationToolCalls: 1 });

    expect(outcome.budget.toolCalls).toBe(1);
    const failed = outcome.outputs.filter((o) => o?.error);
    expect(failed).toHaveLength(1);
    expect(failed[0]?.error?.message).toContain('tool calls 1 of 1 (limit conversationToolCalls)');
    // The other root task answered: the answer keeps it and names the failed one (partial, issue 21).
    expect(outcome.answers[0]?.error).toBeUndefined();
    expect(outcome.answers[0]?.unanswered).toHaveLength(1);
    expect(outcome.answers[0]?.content).toMatch(
      /\nNot answered:\n- \S+ — conversation budget exceeded: tool calls 1 of 1 \(limit conversationToolCalls\)/,
    );
    expect(outcome.replay).toEqual([]);
  });

  it('fails on the token budget once the tokens spent reach it', async () => {
    const outcome = await run({ conversationTokens: 50 });

    expect(outcome.budget.modelCalls).toBe(1); // only the plan: it spent more than 50 tokens
    expect(outcome.budget.tokens).toBeGreaterThanOrEqual(50);
    expect(outcome.answers[0]?.content).toContain('(limit conversationTokens)');
    expect(outcome.replay).toEqual([]);
  });

  it("fails on wall time counted from the message's creation", async () => {
    let clock = Date.parse('2025-01-01T00:00:00.000Z');
    const now = () => {
      clock += 2_000; // every reading of the clock is 2 s later
      return new Date(clock);
    };

    const outcome = await run({ messageWallTimeMs: 1_000 }, { now });

    expect(outcome.answers[0]?.error?.code).toBe('BUDGET_EXCEEDED');
    expect(outcome.answers[0]?.content).toContain('message budget exceeded: wall time ms');
    expect(outcome.answers[0]?.content).toContain('(limit messageWallTimeMs)');
  });

  it('answers a follow-up that comes hours after the first message used up its wall time', async () => {
    const start = Date.parse('2025-01-01T00:00:00.000Z');
    let clock = start;
    const hours = 3 * 3_600_000; // six times the default 30 min of wall time
    expect(hours).toBeGreaterThan(DEFAULT_LIMITS.messageWallTimeMs);

    const outcome = await run(
      {},
      {
        now: () => new Date(clock),
        messages: 2,
        beforeMessage: (i) => {
          clock = start + (i - 1) * hours;
        },
      },
    );

    expect(outcome.answers[0]?.error).toBeUndefined();
    expect(outcome.answers[1]?.error).toBeUndefined();
    expect(outcome.answers[1]?.content.length).toBeGreaterThan(0);
    // The counts stay per conversation: both messages' plan and turns (1 + 2 × 2 each).
    expect(outcome.budget).toMatchObject({ modelCalls: 10, toolCalls: 4 });
    expect(outcome.replay).toEqual([]);
  });

  it('refuses to plan a later message of a conversation whose budget is used up', async () => {
    const outcome = await run({ conversationModelCalls: 5 }, { messages: 2 });

    expect(outcome.answers[0]?.error).toBeUndefined(); // 5 calls: a plan, 2 × 2 turns
    const second = outcome.answers[1];
    expect(second?.content).toMatch(
      /^I could not plan this request: conversation budget exceeded: model calls 5 of 5/,
    );
    expect(outcome.budget.modelCalls).toBe(5);
    expect(outcome.replay).toEqual([]);
  });
});
