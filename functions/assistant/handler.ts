import { assistantStep } from '../../shared/domain/assistant.js';
import { getDeps } from '../../shared/runtime/compose.js';
import { createStepHandler } from '../../shared/runtime/middleware.js';

/**
 * The assistant function: reacts to the S3 "Object Created" EventBridge events the routing table
 * sends it (shared/events/routing.ts) and runs the assistant step (shared/domain/assistant.ts).
 * Thin by design: parse → authorize → call shared → return, all in the shared middleware chain.
 */
export const handler = createStepHandler('assistant', assistantStep, getDeps);
