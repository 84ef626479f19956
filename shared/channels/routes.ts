/**
 * The HTTP API's routes, declared once (as the routing table is for events): API Gateway route
 * keys in its template syntax, the function that serves each, and its authorization. The CDK
 * stack turns it into HTTP API routes; `serve` matches requests against the same table to build
 * the API Gateway v2 event (`routeKey`, `pathParameters`) and to play the JWT authorizer.
 */

/** Channel functions behind the HTTP API. */
export type ChannelFunction = 'http' | 'slack' | 'teams';

/** One HTTP API route. */
export interface ApiRoute {
  method: 'GET' | 'POST';
  /** API Gateway path template (`{name}` one segment, `{name+}` greedy). */
  path: string;
  /** The function (Lambda integration, payload format 2.0). */
  function: ChannelFunction;
  /**
   * `jwt`: the HTTP API JWT authorizer; `none`: the function verifies a signature itself, or the
   * route serves the console's static files (no data).
   */
  auth: 'jwt' | 'none';
  description: string;
}

/** The routes (issue 4 "HTTP API", "Slack", "Teams"). */
export const API_ROUTES: readonly ApiRoute[] = [
  {
    method: 'POST',
    path: '/conversations',
    function: 'http',
    auth: 'jwt',
    description: 'Start a conversation: 202 with its id and status URL.',
  },
  {
    method: 'POST',
    path: '/conversations/{id}/messages',
    function: 'http',
    auth: 'jwt',
    description: 'Add a user message to one of the caller’s conversations.',
  },
  {
    method: 'GET',
    path: '/conversations',
    function: 'http',
    auth: 'jwt',
    description: 'The caller’s conversations, newest first, with their status (`?limit=&after=`).',
  },
  {
    method: 'GET',
    path: '/conversations/{id}',
    function: 'http',
    auth: 'jwt',
    description: 'Status, task tree and final answer of one of the caller’s conversations.',
  },
  {
    method: 'POST',
    path: '/conversations/{id}/approvals/{approvalId}',
    function: 'http',
    auth: 'jwt',
    description: 'Approve or deny a pending tool call of one of the caller’s conversations.',
  },
  {
    method: 'GET',
    path: '/resources/{urn+}',
    function: 'http',
    auth: 'jwt',
    description: 'One resource of the caller’s conversations, through the policy gate.',
  },
  {
    method: 'GET',
    path: '/',
    function: 'http',
    auth: 'none',
    description: 'The web console (a static page: it holds no data, and signs in before any call).',
  },
  {
    method: 'GET',
    path: '/console/{file}',
    function: 'http',
    auth: 'none',
    description: 'The web console’s script, style and sign-in configuration.',
  },
  {
    method: 'GET',
    path: '/openapi.json',
    function: 'http',
    auth: 'none',
    description:
      'This API’s OpenAPI 3.1 document (generated from the code; public, like the console’s files).',
  },
  {
    method: 'GET',
    path: '/tools',
    function: 'http',
    auth: 'jwt',
    description: 'Operators: discovered MCP tools and their approval status.',
  },
  {
    method: 'POST',
    path: '/tools/{name}/approve',
    function: 'http',
    auth: 'jwt',
    description: 'Operators: approve a discovered tool (its current definition).',
  },
  {
    method: 'POST',
    path: '/tools/{name}/revoke',
    function: 'http',
    auth: 'jwt',
    description: 'Operators: revoke a discovered tool.',
  },
  {
    method: 'POST',
    path: '/slack/events',
    function: 'slack',
    auth: 'none',
    description: 'Slack Events API request URL (signed with the signing secret).',
  },
  {
    method: 'POST',
    path: '/slack/commands',
    function: 'slack',
    auth: 'none',
    description: 'Slack slash command request URL (signed with the signing secret).',
  },
  {
    method: 'POST',
    path: '/slack/interactions',
    function: 'slack',
    auth: 'none',
    description:
      'Slack Interactivity request URL: Approve/Deny buttons of approval requests (signed with the signing secret).',
  },
  {
    method: 'POST',
    path: '/teams/messages',
    function: 'teams',
    auth: 'none',
    description: 'Teams outgoing webhook callback URL (HMAC-signed with the security token).',
  },
];

/** A request matched to a route. */
export interface MatchedRoute {
  route: ApiRoute;
  /** API Gateway `routeKey`, e.g. `GET /conversations/{id}`. */
  routeKey: string;
  /** Path parameters, URL-decoded as API Gateway passes them. */
  pathParameters: Record<string, string>;
}

/**
 * Matches a method and raw path (no query) against {@link API_ROUTES} as API Gateway does:
 * `{name}` matches one non-empty segment, `{name+}` the rest of the path.
 * A malformed percent-encoding is passed on raw (the handler rejects it).
 * @returns the match, or undefined when no route has this method and path.
 */
export function matchRoute(method: string, rawPath: string): MatchedRoute | undefined {
  for (const route of API_ROUTES) {
    if (route.method !== method.toUpperCase()) continue;
    const names: string[] = [];
    const source = route.path
      .split('/')
      .map((segment) => {
        const param = /^\{([a-zA-Z]+)(\+?)\}$/.exec(segment);
        if (!param) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
        names.push(param[1] as string);
        return param[2] ? '(.+)' : '([^/]+)';
      })
      .join('/');
    const match = new RegExp(`^${source}$`).exec(rawPath);
    if (!match) continue;
    const pathParameters: Record<string, string> = {};
    names.forEach((name, i) => {
      pathParameters[name] = decodeOrRaw(match[i + 1] as string);
    });
    return { route, routeKey: `${route.method} ${route.path}`, pathParameters };
  }
  return undefined;
}

function decodeOrRaw(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
