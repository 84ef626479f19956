import { toolStep } from '../../shared/domain/tool.js';
import { getDeps } from '../../shared/runtime/compose.js';
import { createStepHandler } from '../../shared/runtime/middleware.js';

/**
 * The tool function: reacts to the S3 "Object Created" EventBridge events the routing table
 * sends it (shared/events/routing.ts) and runs the tool step (shared/domain/tool.ts).
 * Thin by design: parse → authorize → call shared → return, all in the shared middleware chain.
 */
export const handler = createStepHandler('tool', toolStep, getDeps);
