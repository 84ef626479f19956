import { MIMEType } from 'node:util';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import * as z from 'zod';

/**
 * Reading API Gateway HTTP API (payload format 2.0) events: the raw body bytes that signatures
 * are computed over, headers, and the caller the JWT authorizer put into the request context
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html).
 */

/** The raw request body as bytes: base64-decoded when API Gateway encoded it, else UTF-8. */
export function rawBody(event: Pick<APIGatewayProxyEventV2, 'body' | 'isBase64Encoded'>): Buffer {
  if (event.body === undefined || event.body === null) return Buffer.alloc(0);
  return event.isBase64Encoded ? Buffer.from(event.body, 'base64') : Buffer.from(event.body, 'utf8');
}

/** A header's value (names compared case-insensitively), or undefined. */
export function header(event: Pick<APIGatewayProxyEventV2, 'headers'>, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(event.headers ?? {}))
    if (key.toLowerCase() === wanted) return value;
  return undefined;
}

/** The claims API Gateway's JWT authorizer passes on (`requestContext.authorizer.jwt.claims`). */
const JwtContextSchema = z.looseObject({
  requestContext: z.looseObject({
    authorizer: z.looseObject({
      jwt: z.looseObject({
        claims: z.looseObject({ sub: z.union([z.string().min(1), z.number().transform(String)]) }),
      }),
    }),
  }),
});

/**
 * The authenticated caller's subject (`sub` claim), or undefined when the event carries no JWT
 * claims (no authorizer ran: the route is misconfigured, and the caller is rejected).
 */
export function callerSubject(event: unknown): string | undefined {
  const parsed = JwtContextSchema.safeParse(event);
  return parsed.success ? parsed.data.requestContext.authorizer.jwt.claims.sub : undefined;
}

/**
 * A media type's essence (`type/subtype`, lowercased) by the WHATWG MIME Sniffing parser
 * (`node:util` `MIMEType`): `APPLICATION/JSON; charset=UTF-8` → `application/json`. Undefined for
 * a missing or malformed header. Media types are case-insensitive (RFC 9110 §8.3.1).
 */
export function mediaTypeOf(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  try {
    return new MIMEType(value).essence;
  } catch {
    return undefined;
  }
}

/**
 * The event as the functions' routers should see it (issue 22 finding 6):
 * - a `GET` or `HEAD` request's body is dropped: API Gateway passes it on, but it has no meaning
 *   (RFC 9110 §9.3.1) and a Web `Request` cannot carry one (Powertools' Router would throw, a 500);
 * - `Content-Type` is rewritten in its canonical form (type, subtype and parameter names
 *   lowercased by `MIMEType`), so `APPLICATION/JSON; charset=UTF-8` is parsed as JSON, as
 *   `application/json` is (Powertools compares it case-sensitively). A malformed one is kept.
 * Pure: returns a new event, the argument is not changed.
 */
export function normalizeRequestEvent<E extends APIGatewayProxyEventV2>(event: E): E {
  const method = event.requestContext?.http?.method?.toUpperCase();
  const bodiless = method === 'GET' || method === 'HEAD';
  const headers = { ...(event.headers ?? {}) };
  for (const name of Object.keys(headers)) {
    if (name.toLowerCase() !== 'content-type') continue;
    try {
      headers[name] = String(new MIMEType(headers[name] ?? ''));
    } catch {
      // Malformed: left for the route's media-type check to refuse.
    }
  }
  const { body: _body, ...rest } = event;
  return {
    ...(bodiless ? rest : event),
    headers,
    ...(bodiless ? { isBase64Encoded: false } : {}),
  } as E;
}
