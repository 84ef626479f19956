import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { getChannels } from '../../shared/channels/context.js';
import { normalizeRequestEvent } from '../../shared/channels/gateway.js';
import { createSlackRouter } from '../../shared/channels/slack-router.js';
import { getDeps } from '../../shared/runtime/compose.js';

/**
 * The Slack function (HTTP API routes `POST /slack/events`, `POST /slack/commands` and
 * `POST /slack/interactions`, no authorizer): verifies the Slack signature, stores the
 * conversation (or the user's decision on an approval request) and acknowledges within
 * Slack's 3 seconds (shared/channels/slack-router.ts). Thin by design.
 */
const app = createSlackRouter({ deps: getDeps, channels: getChannels });

/** Lambda entry point. */
export const handler = (
  event: APIGatewayProxyEventV2,
  context: Context,
): Promise<APIGatewayProxyStructuredResultV2> => app.resolve(normalizeRequestEvent(event), context);
