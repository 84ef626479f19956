import { getChannels } from '../../shared/channels/context.js';
import { replyStep } from '../../shared/channels/reply.js';
import { getDeps } from '../../shared/runtime/compose.js';
import { createStepHandler } from '../../shared/runtime/middleware.js';

/**
 * The reply function: reacts to the S3 "Object Created" events the routing table sends it
 * (final answers and task outputs) and delivers answers to Slack and Teams exactly once, guarded
 * by Powertools idempotency on `deps.idempotency` (the projections table in AWS;
 * shared/channels/reply.ts). Thin by design: all in the shared middleware chain.
 */
export const handler = createStepHandler(
  'reply',
  (event, deps) => replyStep(event, deps, getChannels()),
  getDeps,
);
