import { z } from 'zod';

/**
 * Per-conversation limits (DESIGN.md principle 6, "bounded by construction"). When one is hit
 * the task fails with a `LIMIT_EXCEEDED` reason and its parent is told.
 */
export const LimitsSchema = z.strictObject({
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
});
export type Limits = z.infer<typeof LimitsSchema>;

/** The defaults. */
export const DEFAULT_LIMITS: Limits = LimitsSchema.parse({});
