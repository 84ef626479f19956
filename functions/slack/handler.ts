import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { getChannels } from '../../shared/channels/context.js';
import { createSlackRouter } from '../../shared/channels/slack-router.js';
import { getDeps } from '../../shared/runtime/compose.js';

/**
 * The Slack function (HTTP API routes `POST /slack/events` and `POST /slack/commands`, no
 * authorizer): verifies the Slack signature, stores the conversation and acknowledges within
 * Slack's 3 seconds (shared/channels/slack-router.ts). Thin by design.
 */
const app = createSlackRouter({ deps: getDeps, channels: getChannels });

/** Lambda entry point. */
export const handler = (
  event: APIGatewayProxyEventV2,
  context: Context,
): Promise<APIGatewayProxyStructuredResultV2> => app.resolve(event, context);
