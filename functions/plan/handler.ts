import { planStep } from '../../shared/domain/plan.js';
import { getDeps } from '../../shared/runtime/compose.js';
import { createStepHandler } from '../../shared/runtime/middleware.js';

/**
 * The plan function: reacts to the S3 "Object Created" EventBridge events the routing table
 * sends it (shared/events/routing.ts) and runs the plan step (shared/domain/plan.ts).
 * Thin by design: parse → authorize → call shared → return, all in the shared middleware chain.
 */
export const handler = createStepHandler('plan', planStep, getDeps);
