import { getDeps } from '../../shared/runtime/compose.js';
import { createSweeperHandler } from '../../shared/runtime/sweeper-handler.js';

/**
 * The sweeper function: invoked by a scheduled EventBridge rule, it finds conversations that made
 * no progress for the stall time in the open-conversations projection, re-drives them with
 * `PutEvents` (source `cld`) and fails those that stay stalled (shared/domain/sweep.ts).
 * Thin by design: parse → call shared → return.
 */
export const handler = createSweeperHandler({ getDeps });
