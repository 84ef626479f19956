import type { Limits } from '../../shared/domain/limits.js';

/** Plan shapes (subtasks per task at each depth): 10, 100, 1,000 and 10,000 tasks. */
export const SHAPES: Readonly<Record<number, readonly number[]>> = {
  10: [10],
  100: [10, 9],
  1000: [10, 9, 10],
  10000: [10, 9, 10, 10],
};

/** Limits a 10,000-task conversation needs (the defaults stay conservative). */
export const SCALE_LIMITS: Partial<Limits> = {
  maxSubtasks: 10,
  conversationTokens: 2_000_000_000,
  conversationModelCalls: 100_000,
  conversationToolCalls: 100_000,
  messageWallTimeMs: 24 * 3_600_000,
};
