import { BadRequestError, RequestEntityTooLargeError } from '@aws-lambda-powertools/event-handler/http';
import type { Middleware } from '@aws-lambda-powertools/event-handler/types';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { header } from './gateway.js';

/**
 * The checks every channel route runs first, before authentication (JWT subject, Slack or Teams
 * signature) and before the body is parsed: what a request may be, independently of who sent it.
 * Registered as the first middlewares of the HTTP API, Slack and Teams routers; `serve`'s local
 * gateway applies the same rules before it even reads the body (shared/runtime/local-gateway.ts).
 */

/**
 * A path segment that is a dot-segment (RFC 3986 §3.3: `.` or `..`) once percent-decoded, in any
 * case (`%2e`, `%2E`, `.%2e`, ...). URL parsers resolve them, so a path holding one would be
 * routed somewhere other than where API Gateway matched it.
 */
export function hasDotSegment(rawPath: string): boolean {
  return rawPath.split('/').some((segment) => /^(\.|%2e){1,2}$/i.test(segment));
}

/**
 * The path the Router resolves routes on (`new URL(request.url).pathname`) must be the raw path
 * API Gateway matched (`event.rawPath`): a path the URL parser rewrites (dot-segments, `\`, a
 * `Host` header that shifts the path) is refused with 400 instead of running another route than
 * the one that matched.
 */
export function sameRoute(): Middleware {
  return async ({ reqCtx, next }) => {
    const event = reqCtx.event as APIGatewayProxyEventV2;
    const rawPath = event.rawPath ?? '';
    if (hasDotSegment(rawPath) || new URL(reqCtx.req.url).pathname !== rawPath)
      throw new BadRequestError(
        'the request path must not contain dot-segments or other parts a URL parser rewrites',
      );
    await next();
  };
}

/**
 * Size of the request body in bytes without decoding it: the declared `content-length` when
 * larger (API Gateway passes it on), else the size of `body` (base64 or UTF-8).
 */
export function declaredBodyBytes(
  event: Pick<APIGatewayProxyEventV2, 'body' | 'isBase64Encoded' | 'headers'>,
): number {
  const declared = Number(header(event, 'content-length') ?? 0);
  const body = event.body ?? '';
  const actual = Buffer.byteLength(body, event.isBase64Encoded ? 'base64' : 'utf8');
  return Math.max(Number.isFinite(declared) ? declared : 0, actual);
}

/**
 * Refuses a body over `limit()` bytes with 413 (`PAYLOAD_TOO_LARGE`), whatever the method and
 * before anything else looks at it.
 */
export function bodyLimit(limit: () => number): Middleware {
  return async ({ reqCtx, next }) => {
    const size = declaredBodyBytes(reqCtx.event as APIGatewayProxyEventV2);
    const max = limit();
    if (size > max)
      throw new RequestEntityTooLargeError(`request body is ${size} bytes; the limit is ${max}`);
    await next();
  };
}
