import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import * as z from 'zod';
import { handler as httpHandler } from '../../functions/http/handler.js';
import { handler as slackHandler } from '../../functions/slack/handler.js';
import { handler as teamsHandler } from '../../functions/teams/handler.js';
import type { ErrorBody } from '../channels/http-errors.js';
import { hasDotSegment } from '../channels/request-guards.js';
import { type ChannelFunction, matchRoute } from '../channels/routes.js';
import { ConfigError } from '../errors.js';

/**
 * A local stand-in for API Gateway's HTTP API (what `npm start -- serve` runs): a `node:http`
 * server on 127.0.0.1 that matches each request against the API's route table, plays the JWT
 * authorizer with bearer tokens from config, turns the request into a payload-format-2.0 event
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html)
 * and invokes the same Lambda handlers as AWS does.
 */

/** API Gateway HTTP API's own payload limit (10 MB): larger requests are refused before any handler. */
export const GATEWAY_MAX_BODY_BYTES = 10 * 1024 * 1024;

/**
 * Largest response a Lambda function may return to a synchronous invocation, in bytes of the
 * serialized result (Lambda quotas: "6 MB each for request and response"; the invoke error names
 * `maximum allowed payload size (6291556 bytes)`). API Gateway answers a larger one with a 500,
 * and so does this gateway.
 */
export const LAMBDA_MAX_RESPONSE_BYTES = 6_291_556;

/** A handler's result was larger than Lambda may return ({@link LAMBDA_MAX_RESPONSE_BYTES}). */
export class ResponseTooLargeError extends Error {
  constructor(
    readonly fn: string,
    readonly bytes: number,
  ) {
    super(
      `the ${fn} function returned ${bytes.toLocaleString('en-US')} bytes; Lambda returns at most ${LAMBDA_MAX_RESPONSE_BYTES.toLocaleString('en-US')} (API Gateway answers 500)`,
    );
    this.name = 'ResponseTooLargeError';
  }
}

/** A `Host` header API Gateway could have routed: a DNS name or IP literal, optionally a port. */
const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/** A Lambda handler behind the HTTP API. */
export type ApiHandler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

/** `CLD_API_TOKENS`: JSON object `{ "<bearer token>": "<user id>" }`. */
export const ApiTokensSchema = z.record(
  z.string().min(16, 'tokens must have at least 16 characters').max(512),
  z.string().regex(/^[A-Za-z0-9._@:-]{1,128}$/, 'user ids are 1-128 of A-Z a-z 0-9 . _ @ : -'),
);

/** Token → user, keyed by the token's SHA-256 so lookups do not compare secrets character by character. */
export type ApiTokens = ReadonlyMap<string, string>;

/** Parses `CLD_API_TOKENS`. @throws ConfigError for invalid JSON or entries */
export function parseApiTokens(json: string): ApiTokens {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new ConfigError('CLD_API_TOKENS is not JSON', { cause: error });
  }
  const parsed = ApiTokensSchema.safeParse(value);
  if (!parsed.success) throw new ConfigError(`invalid CLD_API_TOKENS: ${z.prettifyError(parsed.error)}`);
  return new Map(Object.entries(parsed.data).map(([token, user]) => [digest(token), user]));
}

/** Tokens map from a token list, for a generated development token. */
export function apiTokens(entries: Record<string, string>): ApiTokens {
  return new Map(Object.entries(entries).map(([token, user]) => [digest(token), user]));
}

/** Options of {@link startLocalGateway}. */
export interface LocalGatewayOptions {
  tokens: ApiTokens;
  /** Port on 127.0.0.1 (0 → any free port). */
  port?: number;
  /** Handlers per function (default: the functions' handlers). */
  handlers?: Partial<Record<ChannelFunction, ApiHandler>>;
  /** Called after each response: method, path, status, milliseconds. */
  onRequest?: (line: { method: string; path: string; status: number; ms: number }) => void;
  /**
   * Called when a handler throws instead of answering, or returns more than Lambda may
   * ({@link ResponseTooLargeError}): the client gets a 500.
   */
  onError?: (error: unknown) => void;
  /**
   * Largest body per function, in bytes (default and ceiling {@link GATEWAY_MAX_BODY_BYTES}):
   * a larger one is refused with 413 before it is buffered and before authentication — at once
   * when `content-length` declares it, else as soon as the bytes read pass the limit (the
   * connection is then closed, the rest never read).
   */
  maxBodyBytes?: Partial<Record<ChannelFunction, number>>;
}

/** A running local gateway. */
export interface LocalGateway {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** Stops accepting connections and waits for open requests to finish. */
  close(): Promise<void>;
}

const DEFAULT_HANDLERS: Record<ChannelFunction, ApiHandler> = {
  http: httpHandler,
  slack: slackHandler,
  teams: teamsHandler,
};

/** Starts the local gateway. @throws when the port cannot be bound */
export async function startLocalGateway(options: LocalGatewayOptions): Promise<LocalGateway> {
  const handlers = { ...DEFAULT_HANDLERS, ...options.handlers };
  let authority = '127.0.0.1';
  const server = createServer((req, res) => {
    const started = performance.now();
    void serveOne(req, res, {
      tokens: options.tokens,
      handlers,
      authority,
      limits: options.maxBodyBytes ?? {},
    })
      .catch((error: unknown) => {
        options.onError?.(error);
        reply(res, 500, { code: 'INTERNAL', message: 'internal error' });
      })
      .finally(() =>
        options.onRequest?.({
          method: req.method ?? '',
          path: (req.url ?? '').split('?')[0] as string,
          status: res.statusCode,
          ms: performance.now() - started,
        }),
      );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  authority = `127.0.0.1:${port}`;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeIdleConnections();
      }),
  };
}

interface Serving {
  tokens: ApiTokens;
  handlers: Record<ChannelFunction, ApiHandler>;
  /** `127.0.0.1:<port>`: the domain name the events carry (API Gateway's `domainName`). */
  authority: string;
  limits: Partial<Record<ChannelFunction, number>>;
}

/**
 * One request, in API Gateway's order: refuse what no route could take (a `Host` API Gateway
 * would not route, a dot-segment in the path: 400), match the route (404), refuse a body over the
 * function's limit before reading it (413), then authorize (401) and invoke the handler.
 */
async function serveOne(req: IncomingMessage, res: ServerResponse, serving: Serving): Promise<void> {
  const method = (req.method ?? 'GET').toUpperCase();
  const target = req.url ?? '/';
  const query = target.indexOf('?');
  const rawPath = query === -1 ? target : target.slice(0, query);
  const rawQueryString = query === -1 ? '' : target.slice(query + 1);
  if (!HOST.test(String(req.headers.host ?? '')))
    return refuse(req, res, 400, { code: 'BAD_REQUEST', message: 'missing or malformed Host header' });
  if (!rawPath.startsWith('/') || hasDotSegment(rawPath))
    return refuse(req, res, 400, {
      code: 'BAD_REQUEST',
      message: 'the request path must not contain dot-segments',
    });
  const matched = matchRoute(method, rawPath);
  if (!matched)
    return refuse(req, res, 404, { code: 'NOT_FOUND', message: `no route for ${method} ${rawPath}` });
  const limit = Math.min(
    serving.limits[matched.route.function] ?? GATEWAY_MAX_BODY_BYTES,
    GATEWAY_MAX_BODY_BYTES,
  );
  const tooLarge: ErrorBody = { code: 'PAYLOAD_TOO_LARGE', message: `request body exceeds ${limit} bytes` };
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) return refuse(req, res, 413, tooLarge);
  const body = await readBody(req, limit);
  if (body === undefined) return refuse(req, res, 413, tooLarge);
  let claims: Record<string, string> | undefined;
  if (matched.route.auth === 'jwt') {
    const bearer = /^Bearer (\S+)$/i.exec(String(req.headers.authorization ?? ''))?.[1];
    const user = bearer ? serving.tokens.get(digest(bearer)) : undefined;
    if (!user) return reply(res, 401, { code: 'UNAUTHORIZED', message: 'missing or invalid bearer token' });
    const now = Math.floor(Date.now() / 1000);
    claims = { sub: user, iss: 'cld-serve', aud: 'cld', iat: String(now), exp: String(now + 3600) };
  }
  const event = toApiGatewayEvent(req, {
    rawPath,
    rawQueryString,
    body,
    claims,
    domainName: serving.authority,
    ...matched,
  });
  const result = await serving.handlers[matched.route.function](event, lambdaContext(matched.route.function));
  // What Lambda would refuse to return never reaches the client (the gateway's 500, onError).
  const bytes = Buffer.byteLength(JSON.stringify(result));
  if (bytes > LAMBDA_MAX_RESPONSE_BYTES) throw new ResponseTooLargeError(matched.route.function, bytes);
  res.statusCode = result.statusCode ?? 200;
  for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, String(value));
  if (result.cookies?.length) res.setHeader('set-cookie', result.cookies);
  res.end(
    result.body === undefined
      ? undefined
      : Buffer.from(result.body, result.isBase64Encoded ? 'base64' : 'utf8'),
  );
}

/** Builds the payload-format-2.0 event API Gateway would send for this request. */
export function toApiGatewayEvent(
  req: Pick<IncomingMessage, 'headers' | 'method' | 'socket'>,
  request: {
    rawPath: string;
    rawQueryString: string;
    body: Buffer;
    routeKey: string;
    pathParameters: Record<string, string>;
    claims?: Record<string, string> | undefined;
    /** The API's domain (`requestContext.domainName`); default the request's `Host`. */
    domainName?: string;
  },
): APIGatewayProxyEventV2 {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }
  headers['x-forwarded-proto'] = 'http';
  const cookies = headers.cookie?.split(/;\s*/).filter(Boolean);
  delete headers.cookie;
  const query = new URLSearchParams(request.rawQueryString);
  const queryStringParameters: Record<string, string> = {};
  for (const key of new Set(query.keys())) queryStringParameters[key] = query.getAll(key).join(',');
  const textual = /^(application\/(json|x-www-form-urlencoded)|text\/)/i.test(headers['content-type'] ?? '');
  const now = new Date();
  const requestId = randomUUID();
  const event: APIGatewayProxyEventV2 & { requestContext: { authorizer?: unknown } } = {
    version: '2.0',
    routeKey: request.routeKey,
    rawPath: request.rawPath,
    rawQueryString: request.rawQueryString,
    ...(cookies?.length ? { cookies } : {}),
    headers,
    ...(Object.keys(queryStringParameters).length ? { queryStringParameters } : {}),
    ...(Object.keys(request.pathParameters).length ? { pathParameters: request.pathParameters } : {}),
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: request.domainName ?? headers.host ?? '127.0.0.1',
      domainPrefix: 'local',
      http: {
        method: (req.method ?? 'GET').toUpperCase(),
        path: request.rawPath,
        protocol: 'HTTP/1.1',
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId,
      routeKey: request.routeKey,
      stage: '$default',
      time: now.toISOString(),
      timeEpoch: now.getTime(),
      ...(request.claims ? { authorizer: { jwt: { claims: request.claims, scopes: null } } } : {}),
    },
    isBase64Encoded: request.body.length > 0 && !textual,
    ...(request.body.length > 0
      ? { body: textual ? request.body.toString('utf8') : request.body.toString('base64') }
      : {}),
  };
  return event;
}

/**
 * Reads the body, counting bytes as they arrive; past `limit` it stops (nothing more is read or
 * kept) and returns undefined. Chunks are kept only while the total is within the limit.
 */
async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  // destroyOnReturn: false — leaving the loop early must not close the socket before the 413 is sent.
  for await (const chunk of req.iterator({ destroyOnReturn: false })) {
    size += (chunk as Buffer).length;
    if (size > limit) return undefined; // leaving the loop stops reading
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/**
 * Answers an error before (or instead of) reading the body: with `Connection: close`, and the
 * connection destroyed once the answer is sent, so an unread body is cut off, never buffered.
 */
function refuse(req: IncomingMessage, res: ServerResponse, status: number, body: ErrorBody): void {
  if (!req.complete) {
    res.setHeader('connection', 'close');
    res.once('finish', () => req.socket.destroy());
  }
  reply(res, status, body);
}

function reply(res: ServerResponse, status: number, body: ErrorBody): void {
  if (res.headersSent) return void res.end();
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(body));
}

function lambdaContext(name: ChannelFunction): Context {
  const functionName = `cld-${name}`;
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => 30_000,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

function digest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
