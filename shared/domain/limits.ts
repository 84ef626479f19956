import * as z from 'zod';
import { lazyStrictObject } from '../resources/lazy-schema.js';

/**
 * Per-conversation limits (DESIGN.md principle 6, "bounded by construction"). When a shape limit
 * (depth, breadth, turns, rounds, task tokens) is hit the task fails with a `LIMIT_EXCEEDED`
 * reason; when a budget (`conversation*`, counted in the projection store, or the per-message
 * `messageWallTimeMs`; shared/projections/budget.ts) is used up it fails with `BUDGET_EXCEEDED`
 * naming the budget.
 * Either way its parent is told and the final answer says what did not complete.
 */
export const LimitsSchema = lazyStrictObject(() => ({
  /** Maximum task nesting depth (root tasks are depth 1). */
  maxDepth: z.number().int().min(1).max(16).default(4),
  /** Maximum subtasks of one task (and root tasks of one plan). */
  maxSubtasks: z.number().int().min(1).max(32).default(8),
  /** Maximum model turns of one task's inner loop. */
  maxTurns: z.number().int().min(1).max(50).default(6),
  /** Maximum corrective rounds of one supervised task. */
  maxCorrectiveRounds: z.number().int().min(0).max(5).default(2),
  /** Token budget of one model call's context window (cl100k estimate). */
  contextTokens: z.number().int().min(512).max(200_000).default(8_000),
  /** Maximum tokens (input + output, as the model reports) one task may spend. */
  taskTokens: z.number().int().min(1_000).default(100_000),
  /** Maximum tool calls the model may request in one turn. */
  toolCallsPerTurn: z.number().int().min(1).max(16).default(4),
  /** Budget: tokens (input + output, as models report them) one conversation may spend. */
  conversationTokens: z.number().int().min(1).default(5_000_000),
  /**
   * Budget: model calls (plans, inner-loop turns, verdicts) of one conversation. At most
   * 1,000,000: each charge is an item of its own in the projection store (shared/projections/
   * port.ts), so no item grows with the budget; a 10,000-task plan makes about 20,000 calls.
   */
  conversationModelCalls: z.number().int().min(1).max(1_000_000).default(2_000),
  /** Budget: tool calls of one conversation (at most 1,000,000, as model calls). */
  conversationToolCalls: z.number().int().min(0).max(1_000_000).default(1_000),
  /**
   * Budget: wall time of one user Message, in milliseconds from when it was stored (its
   * `createdAt`; default 30 min). Per message, not per conversation: a follow-up in a thread
   * hours later has its own 30 min. The other `conversation*` budgets add up over the conversation.
   */
  messageWallTimeMs: z
    .number()
    .int()
    .min(1)
    .default(30 * 60_000),
  /**
   * Stall detection: a conversation with an unanswered message and no resource created for this
   * long (ms) is `stalled` (shared/domain/progress.ts) and re-driven by the sweeper. Default 10 min:
   * above the longest step (a model call of 3 × 120 s, the model steps' 420 s timeout), so a step
   * that is merely slow is not re-driven.
   */
  stallAfterMs: z
    .number()
    .int()
    .min(1_000)
    .default(10 * 60_000),
  /**
   * Redrives of a stalled conversation without progress in between before the sweeper answers
   * its open messages with a `STALLED` error (shared/domain/sweep.ts).
   */
  maxRedrives: z.number().int().min(0).max(20).default(3),
  /**
   * How long a request for the user's approval of a tool call waits for a decision (ms) before it
   * expires and the call is answered `DENIED` (`APPROVAL_EXPIRED`; shared/domain/approval.ts).
   * Default 20 min: below the default wall-time budget (`messageWallTimeMs`, which counts the
   * wait), so an approval given in time never finds the budget used up. Raise both together.
   */
  approvalTtlMs: z
    .number()
    .int()
    .min(1_000)
    .max(30 * 24 * 60 * 60_000)
    .default(20 * 60_000),
}));
export type Limits = z.infer<typeof LimitsSchema>;

/** The defaults. (`__PURE__`: a bundle that never reads them does not compute them at import.) */
export const DEFAULT_LIMITS: Limits = /* @__PURE__ */ LimitsSchema.parse({});

/**
 * Longest user message, in characters (UTF-16 code units, as `String.length` counts them), on
 * every channel: the HTTP API and the CLI refuse a longer one before storing anything, and the
 * plan step fails one that reached it some other way (a Slack or Teams message) with this limit
 * named. About 4,000 tokens: half of the default context window (`contextTokens`).
 */
export const MAX_MESSAGE_CHARS = 16_000;
