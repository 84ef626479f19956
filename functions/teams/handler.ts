import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { getChannels } from '../../shared/channels/context.js';
import { normalizeRequestEvent } from '../../shared/channels/gateway.js';
import { createTeamsRouter } from '../../shared/channels/teams.js';
import { getDeps } from '../../shared/runtime/compose.js';

/**
 * The Teams function (HTTP API route `POST /teams/messages`, no authorizer): verifies the
 * outgoing webhook's HMAC, stores the conversation and acknowledges within Teams' 5 seconds
 * (shared/channels/teams.ts). Thin by design.
 */
const app = createTeamsRouter({ deps: getDeps, channels: getChannels });

/** Lambda entry point. */
export const handler = (
  event: APIGatewayProxyEventV2,
  context: Context,
): Promise<APIGatewayProxyStructuredResultV2> => app.resolve(normalizeRequestEvent(event), context);
