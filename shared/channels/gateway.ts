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
