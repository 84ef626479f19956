import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { getChannels } from '../../shared/channels/context.js';
import { normalizeRequestEvent } from '../../shared/channels/gateway.js';
import { createHttpApi } from '../../shared/channels/http-api.js';
import { getDeps } from '../../shared/runtime/compose.js';

/**
 * The HTTP API function (API Gateway HTTP API, payload format 2.0, JWT authorizer): routes
 * `/conversations*` and `/resources/*` with Powertools' Router (shared/channels/http-api.ts).
 * Thin by design: parse → authorize → call shared → return.
 */
const app = createHttpApi({ deps: getDeps, channels: getChannels });

/** Lambda entry point. */
export const handler = (
  event: APIGatewayProxyEventV2,
  context: Context,
): Promise<APIGatewayProxyStructuredResultV2> => app.resolve(normalizeRequestEvent(event), context);
