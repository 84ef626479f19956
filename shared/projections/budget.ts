import type { Limits } from '../domain/limits.js';
import { BudgetExceededError } from '../errors.js';
import type { Usage } from '../resources/schemas.js';
import { rootOf } from '../urn.js';
import type { ProjectionKey, ProjectionStore, ProjectionValues } from './port.js';

/**
 * Budgets (DESIGN.md principle 6; issue 5): tokens, model calls and tool calls per conversation,
 * counted in the projection store, and wall time per user Message. Each stored resource that records a
 * model call (the `plan.Plan`, a `turn-k` Message, a `plan.Verdict`) is charged its
 * `usage.totalTokens` and one model call; each `tool.Call` one tool call. The charge's member is
 * the resource's `meta.hash`, so a resource is charged once however often its step runs, and
 * replay (shared/projections/replay.ts) recomputes the same totals from the resources alone.
 *
 * The wall-time budget counts per message, from the user Message's `createdAt` (its turn's
 * start), not per conversation: a follow-up in a thread hours after the first message starts with
 * its whole wall time, while the three counts go on adding up over the conversation. It needs no
 * projection: the time is the stored message's own.
 *
 * Budgets are checked before each model call and before tool calls are stored. Steps run
 * concurrently, so a budget can be overshot by what is in flight when it is reached (at most one
 * model call per running step); once reached, every later check fails.
 */

/** Projection name of a conversation's budget. */
export const BUDGET = 'budget';

/** What a conversation has spent. */
export interface BudgetUsage {
  /** Tokens (input + output, as the model reported them). */
  tokens: number;
  modelCalls: number;
  toolCalls: number;
  /**
   * When the conversation's first charge happened (ISO 8601). Informational: the wall-time budget
   * counts per message, from the user Message's `createdAt` ({@link BudgetClock}).
   */
  since?: string;
}

/** Key of a conversation's budget projection. */
export function budgetKey(conversation: string): ProjectionKey {
  return { conversation, name: BUDGET };
}

/** The budget view of a projection (absent values are 0). */
export function budgetOf(projection: ProjectionValues | undefined): BudgetUsage {
  return {
    tokens: projection?.values.tokens ?? 0,
    modelCalls: projection?.values.modelCalls ?? 0,
    toolCalls: projection?.values.toolCalls ?? 0,
    ...(projection?.since ? { since: projection.since } : {}),
  };
}

/** The charge a stored model-call resource carries: its tokens and one model call. */
export function modelCharge(usage: Usage | undefined): Record<string, number> {
  return { tokens: usage?.totalTokens ?? 0, modelCalls: 1 };
}

/** The charge of a stored `tool.Call`: one tool call. */
export const TOOL_CHARGE: Readonly<Record<string, number>> = { toolCalls: 1 };

/**
 * Charges a stored resource to its conversation's budget, once.
 * @param resource the stored resource (its `meta.hash` is the charge's member)
 * @param amounts from {@link modelCharge} or {@link TOOL_CHARGE}
 * @param now time of the charge (the budget's `since` when it is the first)
 * @returns the conversation's usage after the charge
 */
export async function charge(
  store: ProjectionStore,
  resource: { meta: { id: string; hash: string } },
  amounts: Readonly<Record<string, number>>,
  now: Date,
): Promise<BudgetUsage> {
  const { projection } = await store.applyOnce(
    budgetKey(rootOf(resource.meta.id)),
    resource.meta.hash,
    amounts,
    {
      since: now.toISOString(),
    },
  );
  return budgetOf(projection);
}

/** Reads a conversation's usage (zero when nothing was charged yet). */
export async function readBudget(store: ProjectionStore, conversation: string): Promise<BudgetUsage> {
  return budgetOf(await store.get(budgetKey(conversation)));
}

/** The times the wall-time budget of one user Message is checked with. */
export interface BudgetClock {
  /** The time of the check. */
  now: Date;
  /**
   * `createdAt` of the user Message whose work is checked (ISO 8601): its wall time counts from
   * here. Undefined (a message stored without a time): the wall time is not checked.
   */
  messageStartedAt: string | undefined;
}

/**
 * The first budget that is used up, as the error a task fails with: a conversation budget that
 * `usage` has used up, or the wall time of the message the work is for; undefined when there is
 * room for `next` more model calls and tool calls.
 * @param clock now, and when the user Message was stored ({@link BudgetClock})
 * @param next what the caller is about to spend (default: one model call, no tool call)
 */
export function budgetExceeded(
  usage: BudgetUsage,
  limits: Limits,
  clock: BudgetClock,
  next: { modelCalls?: number; toolCalls?: number } = { modelCalls: 1 },
): BudgetExceededError | undefined {
  const exceeded = (budget: string, used: number, limit: number, unit: string, scope = 'conversation') =>
    new BudgetExceededError(
      `${scope} budget exceeded: ${unit} ${used.toLocaleString('en-US')} of ${limit.toLocaleString('en-US')} (limit ${budget})`,
      { details: { budget, used, limit } },
    );
  if (usage.tokens >= limits.conversationTokens)
    return exceeded('conversationTokens', usage.tokens, limits.conversationTokens, 'tokens');
  const modelCalls = next.modelCalls ?? 0;
  if (modelCalls > 0 && usage.modelCalls + modelCalls > limits.conversationModelCalls)
    return exceeded('conversationModelCalls', usage.modelCalls, limits.conversationModelCalls, 'model calls');
  const toolCalls = next.toolCalls ?? 0;
  if (toolCalls > 0 && usage.toolCalls + toolCalls > limits.conversationToolCalls)
    return exceeded('conversationToolCalls', usage.toolCalls, limits.conversationToolCalls, 'tool calls');
  if (clock.messageStartedAt) {
    const elapsed = clock.now.getTime() - Date.parse(clock.messageStartedAt);
    if (elapsed > limits.messageWallTimeMs)
      return exceeded('messageWallTimeMs', elapsed, limits.messageWallTimeMs, 'wall time ms', 'message');
  }
  return undefined;
}
