import { createHash, randomUUID } from 'node:crypto';
import { Router, UnauthorizedError } from '@aws-lambda-powertools/event-handler/http';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { decideApproval } from '../domain/approval.js';
import { startConversation } from '../domain/conversation.js';
import { MAX_MESSAGE_CHARS } from '../domain/limits.js';
import { ConfigError, NotFoundError, ValidationError } from '../errors.js';
import type { Accepted } from './api-schemas.js';
import { compression } from './compression.js';
import { consoleResponse, noneMatch, parseConsoleAuth, strongEtag } from './console-assets.js';
import type { ChannelDeps, Channels } from './context.js';
import { listConversations, parseListQuery } from './conversation-list.js';
import {
  conversationView,
  httpConversationName,
  httpConversationUrn,
  httpUser,
  ownConversation,
  readCallerResource,
} from './conversations.js';
import { callerSubject, header, mediaTypeOf } from './gateway.js';
import { useErrorResponses } from './http-errors.js';
import {
  AddMessageBodySchema,
  ApprovalPath,
  DecideBodySchema,
  PathId,
  StartConversationBodySchema,
} from './http-schemas.js';
import { assertSameRequest, checkPriorRequest, requestFingerprint } from './idempotency.js';
import { isOperatorPath, operatorActor, registerOperatorRoutes } from './operator-routes.js';
import { bodyLimit, sameRoute } from './request-guards.js';

/**
 * The HTTP API (API Gateway HTTP API, payload format 2.0), routed with Powertools' `Router`:
 * - `POST /conversations` `{message, assistant?, tool?}` → 202 `{id, conversation, message, statusUrl}`
 * - `POST /conversations/{id}/messages` `{message}` → 202, same shape
 * - `GET /conversations` → the caller's conversations, newest first (conversation-list.ts)
 * - `GET /conversations/{id}` → the status view (conversations.ts), its `approvals` included, with a
 *   strong `ETag`; a matching `If-None-Match` → 304 with no body (what the console polls with)
 * - `POST /conversations/{id}/approvals/{approvalId}` `{decision: "approve"|"deny", reason?}` →
 *   200 `{approval}` (shared/domain/approval.ts `ApprovalView`); the same decision again → 200;
 *   another decision → 409 `APPROVAL_DECIDED`; an undecided request whose message already ended
 *   → 409 `MESSAGE_ENDED` with `details: {message, status, endedAt}`; an expired request → 410
 *   `APPROVAL_EXPIRED`; an unknown request or someone else's conversation → 404
 * - `GET /` and `GET /console/{file}` → the web console (console-assets.ts), no caller needed
 * - `GET /openapi.json` → this API's OpenAPI 3.1 document (openapi.ts), no caller needed, with a strong `ETag`
 * - `GET /resources/{urn}` → one resource, through the policy gate: of the caller's own
 *   conversations, or of the shared document corpora (what an answer's `citations` name)
 * - `GET /tools`, `POST /tools/{name}/approve|revoke` → the operator routes (operator-routes.ts)
 * An optional `Idempotency-Key` header makes a retried POST store nothing new; reused with another
 * body it is refused with 422 (`IDEMPOTENCY_CONFLICT`), nothing stored.
 * The caller is the JWT `sub` the authorizer validated (`requestContext.authorizer.jwt.claims`);
 * without it → 401. Bodies are JSON (415 otherwise), at most `CLD_HTTP_MAX_BODY_BYTES` (413),
 * validated with strict zod schemas (unknown fields → 400). Errors are `{code, message}`
 * (http-errors.ts). Every check runs before anything is stored.
 */

/** What `POST` answers (202): `z.infer` of api-schemas.ts `AcceptedSchema`. */
export type { Accepted } from './api-schemas.js';
/** Longest accepted user message, in characters (shared/domain/limits.ts, the same on every channel). */
export { MAX_MESSAGE_CHARS };

type Env = { store: { request: { user: string } } };

/** Builds the router; `deps` and `channels` are the composition roots (called per request, memoised by them). */
export function createHttpApi(options: {
  deps: () => Promise<ChannelDeps>;
  channels: () => Channels;
}): Router<Env> {
  const app = new Router<Env>();
  let logger: ChannelDeps['logger'] | undefined;
  useErrorResponses(app as unknown as Router, () => logger);

  // The route that matched is the route that runs, and no body over the limit is looked at;
  // then authentication, then the content type: nothing reaches a route without a caller.
  app.use(async ({ next }) => {
    logger = (await options.deps()).logger;
    await next();
  });
  // Bodies go out gzipped when the client accepts it: Lambda returns at most 6 MB.
  app.use(compression());
  app.use(sameRoute());
  app.use(bodyLimit(() => options.channels().config.CLD_HTTP_MAX_BODY_BYTES));
  app.use(async ({ reqCtx, next }) => {
    // The console's static files and the OpenAPI document hold no data: the only routes without a caller.
    const path = new URL(reqCtx.req.url).pathname;
    if (
      reqCtx.req.method === 'GET' &&
      (path === '/' || path === '/openapi.json' || path.startsWith('/console/'))
    )
      return next();
    const subject = callerSubject(reqCtx.event);
    if (!subject) throw new UnauthorizedError('missing or invalid credentials');
    reqCtx.set('user', httpUser(subject));
    // Operator routes: the role before anything of the request is validated (403, not a 400).
    if (isOperatorPath(path)) operatorActor(subject, options.channels().config.CLD_OPERATOR_SUBJECTS);
    const event = reqCtx.event as APIGatewayProxyEventV2;
    if (reqCtx.req.method === 'POST') {
      if (mediaTypeOf(header(event, 'content-type')) !== 'application/json')
        return Response.json(
          { code: 'UNSUPPORTED_MEDIA_TYPE', message: 'send the body as application/json' },
          { status: 415 },
        );
    }
    await next();
  });

  app.post(
    '/conversations',
    async (reqCtx) => {
      const deps = await options.deps();
      const body = reqCtx.valid.req.body;
      checkHints(deps, body);
      const user = reqCtx.get('user') as string;
      const key = idempotencyKey(reqCtx.event as APIGatewayProxyEventV2);
      const id = key ? uuidFor(user, key) : randomUUID();
      const fingerprint = key ? requestFingerprint(body) : undefined;
      if (key && fingerprint)
        await checkPriorRequest(deps.resources, {
          user,
          conversation: httpConversationUrn(user, id),
          messageName: `message-${key}`,
          fingerprint,
          content: body.message,
        });
      const started = await startConversation(
        deps.resources,
        {
          user,
          channel: { kind: 'http' },
          content: body.message,
          conversationName: httpConversationName(user, id),
          messageName: `message-${key ?? randomUUID()}`,
          ...(fingerprint ? { requestHash: fingerprint } : {}),
          now: deps.now(),
        },
        { openConversations: deps.openConversations },
      );
      if (fingerprint) assertSameRequest(started.stored, fingerprint, body.message);
      await deps.userConversations?.record(
        user,
        {
          conversation: started.conversation,
          id,
          title: body.message.slice(0, 200),
          createdAt: started.conversationCreatedAt,
        },
        started.message,
      );
      return accepted(reqCtx.event as APIGatewayProxyEventV2, options.channels().config, id, started);
    },
    { validation: { req: { body: StartConversationBodySchema } } },
  );

  app.post(
    '/conversations/:id/messages',
    async (reqCtx) => {
      const deps = await options.deps();
      const { id } = reqCtx.valid.req.path;
      const body = reqCtx.valid.req.body;
      checkHints(deps, body);
      const user = reqCtx.get('user') as string;
      const conversation = await ownConversation(deps.resources, user, httpConversationUrn(user, id));
      const key = idempotencyKey(reqCtx.event as APIGatewayProxyEventV2);
      const fingerprint = key ? requestFingerprint(body) : undefined;
      if (key && fingerprint)
        await checkPriorRequest(deps.resources, {
          user,
          conversation: conversation.meta.id,
          messageName: `message-${key}`,
          fingerprint,
          content: body.message,
        });
      const started = await startConversation(
        deps.resources,
        {
          user,
          channel: conversation.channel,
          content: body.message,
          conversationName: conversation.meta.name,
          messageName: `message-${key ?? randomUUID()}`,
          ...(fingerprint ? { requestHash: fingerprint } : {}),
          now: deps.now(),
        },
        { openConversations: deps.openConversations },
      );
      if (fingerprint) assertSameRequest(started.stored, fingerprint, body.message);
      await deps.userConversations?.record(
        user,
        {
          conversation: started.conversation,
          id,
          title: conversation.meta.purpose.slice(0, 200),
          createdAt: started.conversationCreatedAt,
        },
        started.message,
      );
      return accepted(reqCtx.event as APIGatewayProxyEventV2, options.channels().config, id, started);
    },
    { validation: { req: { path: PathId, body: AddMessageBodySchema } } },
  );

  app.get(
    '/conversations/:id',
    async (reqCtx) => {
      const deps = await options.deps();
      const { id } = reqCtx.valid.req.path;
      const user = reqCtx.get('user') as string;
      const conversation = await ownConversation(deps.resources, user, httpConversationUrn(user, id));
      const view = await conversationView(deps.resources, user, conversation, id, {
        now: deps.now(),
        stallAfterMs: deps.limits.stallAfterMs,
        limits: deps.limits,
      });
      // A strong validator of the view: an unchanged tree costs a 304 and no body (RFC 9110 §13.1.2).
      const body = JSON.stringify(view);
      const etag = strongEtag(body);
      const headers = { etag, 'cache-control': 'private, no-cache' };
      if (noneMatch(header(reqCtx.event as APIGatewayProxyEventV2, 'if-none-match'), etag))
        return new Response(null, { status: 304, headers });
      return new Response(body, { status: 200, headers: { ...headers, 'content-type': 'application/json' } });
    },
    { validation: { req: { path: PathId } } },
  );

  app.post(
    '/conversations/:id/approvals/:approvalId',
    async (reqCtx) => {
      const deps = await options.deps();
      const { id, approvalId } = reqCtx.valid.req.path;
      const body = reqCtx.valid.req.body;
      const user = reqCtx.get('user') as string;
      const conversation = await ownConversation(deps.resources, user, httpConversationUrn(user, id));
      const { view } = await decideApproval(deps.resources, {
        user,
        channel: 'http',
        conversation,
        request: approvalId,
        decision: body.decision,
        reason: body.reason,
        now: deps.now(),
      });
      return Response.json({ approval: view });
    },
    { validation: { req: { path: ApprovalPath, body: DecideBodySchema } } },
  );

  app.get('/conversations', async (reqCtx) => {
    const deps = await options.deps();
    const query = parseListQuery((reqCtx.event as APIGatewayProxyEventV2).queryStringParameters);
    if (!deps.userConversations)
      throw new ConfigError('the conversations-per-user projection is not configured');
    const list = await listConversations(
      deps.userConversations,
      deps.resources,
      reqCtx.get('user') as string,
      query,
    );
    return Response.json(list, { headers: { 'cache-control': 'private, no-cache' } });
  });

  const consoleFile = async (event: APIGatewayProxyEventV2, name: string) => {
    const config = options.channels().config;
    if (!config.CLD_CONSOLE_DIR) throw new NotFoundError('the console is not installed (CLD_CONSOLE_DIR)');
    return consoleResponse(
      config.CLD_CONSOLE_DIR,
      name,
      parseConsoleAuth(config.CLD_CONSOLE_AUTH),
      header(event, 'if-none-match'),
    );
  };
  // The contract, generated once per container from the same schemas (openapi.ts), at its first
  // request: openapi.ts and the ≈ 130 schemas of api-schemas.ts load then, not at every cold
  // start. Public and cacheable.
  app.get('/openapi.json', async (reqCtx) => {
    const { openApiFile } = await import('./openapi.js');
    const { body, etag } = openApiFile();
    const headers = { etag, 'cache-control': 'public, max-age=300, must-revalidate' };
    if (noneMatch(header(reqCtx.event as APIGatewayProxyEventV2, 'if-none-match'), etag))
      return new Response(null, { status: 304, headers });
    return new Response(body, { status: 200, headers: { ...headers, 'content-type': 'application/json' } });
  });
  app.get('/', (reqCtx) => consoleFile(reqCtx.event as APIGatewayProxyEventV2, 'index.html'));
  app.get('/console/:file', (reqCtx) =>
    consoleFile(reqCtx.event as APIGatewayProxyEventV2, reqCtx.params.file as string),
  );

  // `{urn}` may hold `/` (encoded as %2F or not): a regex route takes the rest of the path.
  app.get(/^\/resources\/(?<urn>.+)$/, async (reqCtx) => {
    const deps = await options.deps();
    const urn = reqCtx.params.urn as string;
    return Response.json(await readCallerResource(deps.resources, reqCtx.get('user') as string, urn));
  });

  registerOperatorRoutes(app, options);
  return app;
}

/**
 * The `Idempotency-Key` header (IETF draft "The Idempotency-Key HTTP Header Field"), when sent:
 * a retried POST with the same key names the same conversation and message, so it stores nothing
 * new and answers the same 202; the body's fingerprint is stored on the message, and a reuse of
 * the key with another body is refused (422).
 * @throws ValidationError for a key that is not 8-128 of `A-Z a-z 0-9 _ -`
 */
function idempotencyKey(event: APIGatewayProxyEventV2): string | undefined {
  const key = header(event, 'idempotency-key');
  if (key === undefined) return undefined;
  if (!/^[A-Za-z0-9_-]{8,128}$/.test(key))
    throw new ValidationError('Idempotency-Key must be 8-128 characters of A-Z a-z 0-9 _ -');
  return key;
}

/** A UUID (RFC 9562 version 8, from SHA-256) for a caller's idempotency key. */
function uuidFor(user: string, key: string): string {
  const hex = createHash('sha256').update(`${user}\u0000${key}`).digest('hex');
  const variant = ((Number.parseInt(hex[16] as string, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** @throws ValidationError when a hint names no catalog entry */
function checkHints(deps: ChannelDeps, body: { assistant?: string | undefined; tool?: string | undefined }) {
  if (body.assistant && !deps.catalog.assistants.some((a) => a.meta.name === body.assistant))
    throw new ValidationError(`assistant "${body.assistant}" is not in the catalog`);
  if (body.tool && !deps.catalog.tools.some((t) => t.function.name === body.tool))
    throw new ValidationError(`tool "${body.tool}" is not in the catalog`);
}

/**
 * The 202 of a POST. `Location` is a relative reference (RFC 9110 §10.2.2) to the status view;
 * `statusUrl` is absolute: `CLD_PUBLIC_BASE_URL` when configured, else the domain API Gateway
 * received the request on (`requestContext.domainName`, set by API Gateway and by `serve`'s
 * gateway, never the client's `Host` header).
 */
function accepted(
  event: APIGatewayProxyEventV2,
  config: Channels['config'],
  id: string,
  started: { conversation: string; message: string },
): Response {
  const stage =
    event.requestContext.stage && event.requestContext.stage !== '$default'
      ? `/${encodeURIComponent(event.requestContext.stage)}`
      : '';
  const path = `${stage}/conversations/${id}`;
  const proto = header(event, 'x-forwarded-proto') === 'http' ? 'http' : 'https';
  const base =
    config.CLD_PUBLIC_BASE_URL?.replace(/\/+$/, '') ?? `${proto}://${event.requestContext.domainName}`;
  const statusUrl = `${base}${path}`;
  const body: Accepted = { id, conversation: started.conversation, message: started.message, statusUrl };
  return Response.json(body, { status: 202, headers: { location: path } });
}
