import * as z from 'zod';
import { MAX_LIST_LIMIT } from '../projections/user-conversations.js';
import {
  AcceptedSchema,
  API_SCHEMAS,
  ApprovalDecidedSchema,
  ConversationListSchema,
  ConversationViewSchema,
  type HTTP_ERROR_CODES,
  ResourceBodySchema,
  ToolDecidedSchema,
  ToolsPageSchema,
} from './api-schemas.js';
import { strongEtag } from './console-assets.js';
import { ListQuerySchema } from './conversation-list.js';
import {
  AddMessageBodySchema,
  ApprovalPath,
  DecideBodySchema,
  PathId,
  StartConversationBodySchema,
} from './http-schemas.js';
import { DecisionBodySchema, PathName, ToolsQuery } from './operator-routes.js';
import { API_ROUTES, type ApiRoute } from './routes.js';
import { SlackCommandSchema, SlackEventsBodySchema } from './slack.js';
import { TeamsActivitySchema } from './teams.js';

/**
 * The HTTP API's OpenAPI 3.1 document (https://spec.openapis.org/oas/v3.1.1), generated from the
 * code: the paths from {@link API_ROUTES} (the table API Gateway and `serve` route by), the
 * request bodies, path and query parameters from the zod schemas the handlers validate with, the
 * response bodies from api-schemas.ts (which the handlers' view types are inferred from), through
 * zod's own JSON Schema output (`z.toJSONSchema`, draft 2020-12, the dialect of OpenAPI 3.1).
 * `npm run build:openapi` writes it to `openapi.json`; `GET /openapi.json` serves it.
 */

type ErrorCode = (typeof HTTP_ERROR_CODES)[number];
type Schema = z.ZodType;

/** A successful response of an operation. */
interface Success {
  description: string;
  /** JSON body; a `string` is a media type with a free body (the console's files). */
  body?: Schema | { mediaType: string; schema?: Record<string, unknown> }[];
  headers?: ('Location' | 'ETag' | 'Cache-Control')[];
}

/** What the generator needs of one route beyond {@link ApiRoute}. */
interface OperationSpec {
  operationId: string;
  tag: 'conversations' | 'resources' | 'operators' | 'console' | 'webhooks';
  path?: z.ZodObject;
  query?: z.ZodObject;
  headers?: ('Idempotency-Key' | 'If-None-Match')[];
  body?: { mediaType: 'application/json' | 'application/x-www-form-urlencoded'; schema: Schema };
  responses: Record<number, Success>;
  /** Error statuses and the codes each may carry (beyond the ones every route of its kind has). */
  errors: Partial<Record<number, readonly ErrorCode[]>>;
  security?: 'slack' | 'teams';
}

const json = { mediaType: 'application/json' as const };
const POST_ERRORS = { 413: ['PAYLOAD_TOO_LARGE'], 415: ['UNSUPPORTED_MEDIA_TYPE'] } as const;
const notModified = { description: 'Not Modified: `If-None-Match` matched the current `ETag`; no body.' };

/** An operator's decision on a discovered tool (`POST /tools/{name}/approve` and `…/revoke`). */
function toolDecision(operationId: string): OperationSpec {
  return {
    operationId,
    tag: 'operators',
    path: PathName,
    body: { ...json, schema: DecisionBodySchema },
    responses: { 200: { description: 'The decision is stored.', body: ToolDecidedSchema } },
    errors: {
      400: ['VALIDATION'],
      403: ['FORBIDDEN'],
      404: ['NOT_FOUND'],
      409: ['DECISION_CONFLICT'],
      ...POST_ERRORS,
    },
  };
}

/**
 * The operations, by API Gateway route key (`METHOD path`); each entry of API_ROUTES has one.
 * Built on call: http-api.ts serves the document and holds the schemas (a circular import).
 */
function operations(): Record<string, OperationSpec> {
  return {
    'POST /conversations': {
      operationId: 'startConversation',
      tag: 'conversations',
      headers: ['Idempotency-Key'],
      body: { ...json, schema: StartConversationBodySchema },
      responses: {
        202: {
          description: 'Accepted: the message is stored and planning started; poll `statusUrl`.',
          body: AcceptedSchema,
          headers: ['Location'],
        },
      },
      errors: {
        400: ['VALIDATION'],
        ...POST_ERRORS,
        422: ['IDEMPOTENCY_CONFLICT'],
        429: ['LIMIT_EXCEEDED', 'BUDGET_EXCEEDED'],
      },
    },
    'POST /conversations/{id}/messages': {
      operationId: 'addMessage',
      tag: 'conversations',
      path: PathId,
      headers: ['Idempotency-Key'],
      body: { ...json, schema: AddMessageBodySchema },
      responses: {
        202: {
          description: 'Accepted: the message is stored and planning started; poll `statusUrl`.',
          body: AcceptedSchema,
          headers: ['Location'],
        },
      },
      errors: {
        400: ['VALIDATION'],
        404: ['NOT_FOUND'],
        ...POST_ERRORS,
        422: ['IDEMPOTENCY_CONFLICT'],
        429: ['LIMIT_EXCEEDED', 'BUDGET_EXCEEDED'],
      },
    },
    'GET /conversations': {
      operationId: 'listConversations',
      tag: 'conversations',
      query: ListQuerySchema,
      responses: {
        200: {
          description: 'The caller’s conversations, newest first.',
          body: ConversationListSchema,
          headers: ['Cache-Control'],
        },
      },
      errors: { 400: ['VALIDATION'], 503: ['UNAVAILABLE'] },
    },
    'GET /conversations/{id}': {
      operationId: 'getConversation',
      tag: 'conversations',
      path: PathId,
      headers: ['If-None-Match'],
      responses: {
        200: {
          description: 'The status view.',
          body: ConversationViewSchema,
          headers: ['ETag', 'Cache-Control'],
        },
        304: { ...notModified, headers: ['ETag', 'Cache-Control'] },
      },
      errors: { 400: ['VALIDATION'], 404: ['NOT_FOUND'] },
    },
    'POST /conversations/{id}/approvals/{approvalId}': {
      operationId: 'decideApproval',
      tag: 'conversations',
      path: ApprovalPath,
      body: { ...json, schema: DecideBodySchema },
      responses: {
        200: {
          description: 'The decision is stored (or was already this one).',
          body: ApprovalDecidedSchema,
        },
      },
      errors: {
        400: ['VALIDATION'],
        404: ['NOT_FOUND'],
        409: ['APPROVAL_DECIDED', 'MESSAGE_ENDED'],
        410: ['APPROVAL_EXPIRED'],
        ...POST_ERRORS,
      },
    },
    'GET /resources/{urn+}': {
      operationId: 'getResource',
      tag: 'resources',
      path: z.strictObject({
        urn: z.string().min(1).describe('A `cld:` URN; its `/` may be sent encoded (`%2F`) or not.'),
      }),
      responses: { 200: { description: 'The stored resource.', body: ResourceBodySchema } },
      errors: { 400: ['VALIDATION', 'INVALID_URN'], 404: ['NOT_FOUND'] },
    },
    'GET /': {
      operationId: 'getConsole',
      tag: 'console',
      headers: ['If-None-Match'],
      responses: {
        200: { description: 'The console’s page.', body: [{ mediaType: 'text/html' }], headers: ['ETag'] },
        304: notModified,
      },
      errors: { 404: ['NOT_FOUND'] },
    },
    'GET /console/{file}': {
      operationId: 'getConsoleFile',
      tag: 'console',
      path: z.strictObject({ file: z.string().min(1) }),
      headers: ['If-None-Match'],
      responses: {
        200: {
          description: 'A script, style sheet or the sign-in configuration.',
          body: [
            { mediaType: 'text/javascript' },
            { mediaType: 'text/css' },
            { mediaType: 'application/json' },
          ],
          headers: ['ETag'],
        },
        304: notModified,
      },
      errors: { 404: ['NOT_FOUND'] },
    },
    'GET /openapi.json': {
      operationId: 'getOpenApi',
      tag: 'console',
      headers: ['If-None-Match'],
      responses: {
        200: {
          description: 'This document.',
          body: [{ mediaType: 'application/json', schema: { type: 'object' } }],
          headers: ['ETag', 'Cache-Control'],
        },
        304: notModified,
      },
      errors: {},
    },
    'GET /tools': {
      operationId: 'listTools',
      tag: 'operators',
      query: ToolsQuery,
      responses: {
        200: { description: 'One page of the discovered tools, by server.', body: ToolsPageSchema },
      },
      errors: { 400: ['VALIDATION'], 403: ['FORBIDDEN'] },
    },
    'POST /tools/{name}/approve': toolDecision('approveTool'),
    'POST /tools/{name}/revoke': toolDecision('revokeTool'),
    'POST /slack/events': {
      operationId: 'slackEvents',
      tag: 'webhooks',
      security: 'slack',
      body: { ...json, schema: SlackEventsBodySchema },
      responses: {
        200: {
          description: 'Acknowledged (no body), or the `url_verification` challenge echoed.',
          body: [{ mediaType: 'application/json', schema: jsonObject({ challenge: { type: 'string' } }) }],
        },
      },
      errors: { 400: ['VALIDATION'], 413: ['PAYLOAD_TOO_LARGE'], 503: ['UNAVAILABLE'] },
    },
    'POST /slack/commands': {
      operationId: 'slackCommands',
      tag: 'webhooks',
      security: 'slack',
      body: { mediaType: 'application/x-www-form-urlencoded', schema: SlackCommandSchema },
      responses: {
        200: {
          description: 'Acknowledged (no body), or an ephemeral usage message.',
          body: [
            {
              mediaType: 'application/json',
              schema: jsonObject({ response_type: { const: 'ephemeral' }, text: { type: 'string' } }),
            },
          ],
        },
      },
      errors: { 400: ['VALIDATION'], 413: ['PAYLOAD_TOO_LARGE'], 503: ['UNAVAILABLE'] },
    },
    'POST /slack/interactions': {
      operationId: 'slackInteractions',
      tag: 'webhooks',
      security: 'slack',
      body: {
        mediaType: 'application/x-www-form-urlencoded',
        schema: z.looseObject({
          payload: z.string().describe('The interaction (`block_actions`) as JSON text.'),
        }),
      },
      responses: { 200: { description: 'Acknowledged (no body).' } },
      errors: { 400: ['VALIDATION'], 404: ['NOT_FOUND'], 413: ['PAYLOAD_TOO_LARGE'], 503: ['UNAVAILABLE'] },
    },
    'POST /teams/messages': {
      operationId: 'teamsMessages',
      tag: 'webhooks',
      security: 'teams',
      body: { ...json, schema: TeamsActivitySchema },
      responses: {
        200: {
          description: 'The reply shown in the channel (the answer follows as its own post).',
          body: [
            {
              mediaType: 'application/json',
              schema: jsonObject({ type: { const: 'message' }, text: { type: 'string' } }, ['type', 'text']),
            },
          ],
        },
      },
      errors: { 400: ['VALIDATION'], 413: ['PAYLOAD_TOO_LARGE'], 503: ['UNAVAILABLE'] },
    },
  };
}

function jsonObject(properties: Record<string, unknown>, required: string[] = []): Record<string, unknown> {
  return { type: 'object', properties, ...(required.length ? { required } : {}) };
}

/** The HTTP status text used as the description of an error response. */
const REASONS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  410: 'Gone',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

const REF = (id: string) => `#/components/schemas/${id}`;

/** JSON Schema (draft 2020-12) of a zod schema, without `$schema` (OpenAPI 3.1 sets the dialect). */
function jsonSchema(schema: Schema, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return rest;
}

/** A response body's schema: a `$ref` to its component when it has one. */
function bodySchema(schema: Schema): Record<string, unknown> {
  const id = API_SCHEMAS.get(schema)?.id;
  return id ? { $ref: REF(id) } : jsonSchema(schema, 'output');
}

/** OpenAPI path template of an API Gateway one: `{urn+}` → `{urn}` (OpenAPI has no greedy parameter). */
export function openApiPath(gatewayPath: string): string {
  return gatewayPath.replace(/\{([A-Za-z]+)\+\}/g, '{$1}');
}

function parameters(spec: OperationSpec, route: ApiRoute): Record<string, unknown>[] {
  const list: Record<string, unknown>[] = [];
  const add = (where: 'path' | 'query', object: z.ZodObject | undefined) => {
    if (!object) return;
    const schema = jsonSchema(object, where === 'query' ? 'output' : 'input') as {
      properties?: Record<string, Record<string, unknown>>;
      required?: string[];
    };
    for (const [name, property] of Object.entries(schema.properties ?? {})) {
      const { description, default: _default, ...rest } = property;
      list.push({
        name,
        in: where,
        required: where === 'path' || ((schema.required ?? []).includes(name) && _default === undefined),
        ...(description ? { description } : {}),
        schema: _default === undefined ? rest : { ...rest, default: _default },
      });
    }
  };
  add('path', spec.path);
  add('query', spec.query);
  const pathNames = [...route.path.matchAll(/\{([A-Za-z]+)\+?\}/g)].map((m) => m[1]);
  const declared = list.filter((p) => p.in === 'path').map((p) => p.name);
  if (pathNames.join() !== declared.join())
    throw new Error(`${route.method} ${route.path}: path parameters ${declared} do not match the route`);
  for (const header of spec.headers ?? []) list.push({ $ref: `#/components/parameters/${header}` });
  return list;
}

function responses(spec: OperationSpec, route: ApiRoute): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [status, success] of Object.entries(spec.responses)) {
    const content = !success.body
      ? undefined
      : Array.isArray(success.body)
        ? Object.fromEntries(
            success.body.map((b) => [b.mediaType, b.schema ? { schema: b.schema } : {}] as const),
          )
        : { 'application/json': { schema: bodySchema(success.body) } };
    out[status] = {
      description: success.description,
      ...(success.headers
        ? {
            headers: Object.fromEntries(
              success.headers.map((h) => [h, { $ref: `#/components/headers/${h}` }] as const),
            ),
          }
        : {}),
      ...(content ? { content } : {}),
    };
  }
  const errors: Partial<Record<number, readonly ErrorCode[]>> = { ...spec.errors };
  const more = (status: number, ...codes: ErrorCode[]) => {
    errors[status] = [...new Set([...(errors[status] ?? []), ...codes])];
  };
  if (route.auth === 'jwt' || spec.security) more(401, 'UNAUTHORIZED');
  // The gateway's own answers: no route for the path (404), a body over its limit (413), a path
  // with dot-segments or a malformed `Host` (400 `BAD_REQUEST`, local-gateway.ts and sameRoute()).
  if (route.method === 'POST') more(413, 'PAYLOAD_TOO_LARGE');
  more(400, 'BAD_REQUEST');
  more(500, 'INTERNAL');
  for (const status of Object.keys(errors)
    .map(Number)
    .sort((a, b) => a - b)) {
    const codes = errors[status] ?? [];
    out[String(status)] = {
      description: `${REASONS[status] ?? 'Error'}: \`code\` ${codes.map((c) => `\`${c}\``).join(' or ')}.`,
      content: {
        'application/json': {
          schema: codes.length
            ? { allOf: [{ $ref: REF('Error') }, { properties: { code: { enum: codes } } }] }
            : { $ref: REF('Error') },
        },
      },
    };
  }
  return out;
}

/** Every component schema of {@link API_SCHEMAS}, as JSON Schema draft 2020-12. */
function componentSchemas(): Record<string, unknown> {
  // Output shapes: what the API sends (defaults applied, optional fields may be absent).
  const { schemas } = z.toJSONSchema(API_SCHEMAS, { io: 'output', unrepresentable: 'any', uri: REF });
  return Object.fromEntries(
    Object.entries(schemas)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([id, schema]) => {
        const { $schema: _s, $id: _i, ...rest } = schema as Record<string, unknown>;
        return [id, rest];
      }),
  );
}

/**
 * Builds the OpenAPI 3.1 document of `routes` (default {@link API_ROUTES}).
 * @throws Error when a route has no operation spec, or an operation spec no route (the two tables
 *   must not drift), or a route's path parameters differ from its zod path schema
 */
export function openApiDocument(routes: readonly ApiRoute[] = API_ROUTES): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const OPERATIONS = operations();
  const keys = new Set(routes.map((r) => `${r.method} ${r.path}`));
  for (const key of Object.keys(OPERATIONS))
    if (!keys.has(key)) throw new Error(`OpenAPI operation ${key} names no route of API_ROUTES`);
  for (const route of routes) {
    const key = `${route.method} ${route.path}`;
    const spec = OPERATIONS[key];
    if (!spec) throw new Error(`route ${key} has no OpenAPI operation (shared/channels/openapi.ts)`);
    const params = parameters(spec, route);
    const security =
      route.auth === 'jwt'
        ? [{ bearerAuth: [] }]
        : spec.security === 'slack'
          ? [{ slackSignature: [], slackTimestamp: [] }]
          : spec.security === 'teams'
            ? [{ teamsHmac: [] }]
            : [];
    const operation = {
      operationId: spec.operationId,
      tags: [spec.tag],
      summary: route.description,
      'x-cld-function': route.function,
      ...(params.length ? { parameters: params } : {}),
      ...(spec.body
        ? {
            requestBody: {
              required: true,
              content: { [spec.body.mediaType]: { schema: jsonSchema(spec.body.schema, 'input') } },
            },
          }
        : {}),
      responses: responses(spec, route),
      security,
    };
    const path = openApiPath(route.path);
    paths[path] = { ...paths[path], [route.method.toLowerCase()]: operation };
  }
  return {
    openapi: '3.1.1',
    info: {
      title: 'cld HTTP API',
      version: '1',
      summary:
        'Start and follow conversations of the cld multi-agent system; decide approvals; operate tools.',
      description:
        'Every error response is JSON `{code, message}` (schema `Error`); a stored failure of a step is `ErrorInfo`. ' +
        `Lists are paged: \`GET /conversations?limit=1..${MAX_LIST_LIMIT}&after=<next>\`, \`GET /tools?limit=&cursor=<nextCursor>\`. ` +
        'Generated from the code (shared/channels/openapi.ts); `npm run build:openapi` writes it.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    tags: [
      { name: 'conversations', description: 'A caller’s own conversations (JWT `sub`).' },
      { name: 'resources', description: 'Single stored resources, through the policy gate.' },
      { name: 'operators', description: 'The tool registry (callers listed in `CLD_OPERATOR_SUBJECTS`).' },
      { name: 'console', description: 'The web console’s static files and this document (no caller).' },
      { name: 'webhooks', description: 'Slack and Teams request URLs (signed requests).' },
    ],
    paths,
    components: {
      schemas: componentSchemas(),
      parameters: {
        'Idempotency-Key': {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description:
            'Makes a retried POST store nothing new and answer the same 202; reused with another body → 422 ' +
            '`IDEMPOTENCY_CONFLICT` (IETF draft "The Idempotency-Key HTTP Header Field").',
          schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{8,128}$' },
        },
        'If-None-Match': {
          name: 'If-None-Match',
          in: 'header',
          required: false,
          description: 'An `ETag` from a previous answer: unchanged → 304 with no body (RFC 9110 §13.1.2).',
          schema: { type: 'string' },
        },
      },
      headers: {
        Location: {
          description: 'Relative reference to the status view, `/conversations/{id}` (RFC 9110 §10.2.2).',
          schema: { type: 'string' },
        },
        ETag: { description: 'Strong validator of the body (RFC 9110 §8.8.3).', schema: { type: 'string' } },
        'Cache-Control': { description: 'Caching directives (RFC 9111 §5.2).', schema: { type: 'string' } },
      },
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'A JWT of the configured issuer and audience; the caller is its `sub`.',
        },
        slackSignature: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Slack-Signature',
          description:
            '`v0=` HMAC-SHA256 of `v0:<timestamp>:<raw body>` with the Slack signing secret ' +
            '(https://api.slack.com/authentication/verifying-requests-from-slack).',
        },
        slackTimestamp: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Slack-Request-Timestamp',
          description: 'Unix seconds the signature covers; older than 5 minutes → 401.',
        },
        teamsHmac: {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description:
            '`HMAC <base64>`: HMAC-SHA256 of the raw body with the outgoing webhook security token ' +
            '(https://learn.microsoft.com/microsoftteams/platform/webhooks-and-connectors/how-to/add-outgoing-webhook).',
        },
      },
    },
  };
}

/** The document as served and committed: pretty JSON with a final newline, and its strong `ETag`. */
export interface OpenApiFile {
  body: string;
  etag: string;
}

let file: OpenApiFile | undefined;

/** {@link openApiDocument} serialised once per process (`openapi.json`'s exact bytes). */
export function openApiFile(): OpenApiFile {
  if (!file) {
    const body = `${JSON.stringify(openApiDocument(), null, 2)}\n`;
    file = { body, etag: strongEtag(body) };
  }
  return file;
}
