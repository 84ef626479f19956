import type { Router } from '@aws-lambda-powertools/event-handler/http';
import { HttpError, RequestValidationError } from '@aws-lambda-powertools/event-handler/http';
import { IdempotencyAlreadyInProgressError } from '@aws-lambda-powertools/idempotency';
import type { Logger } from '@aws-lambda-powertools/logger';
import { CldError, type ErrorCode } from '../errors.js';
import type { ErrorBody } from './api-schemas.js';
import { HTTP_ERROR_CODES } from './http-error-codes.js';

/**
 * The HTTP edge's error mapping (STYLE.md: only the HTTP edge maps errors to status codes):
 * every error response is JSON `{ code, message }`, never a stack trace. Domain errors keep their
 * code; a policy denial is reported as NOT_FOUND so a caller cannot probe for resources it may
 * not see; a missing channel secret is a 503; anything unexpected is a 500 with a generic
 * message (and is logged in full).
 */

/** The JSON body of every error response (`z.infer` of api-schemas.ts `ErrorBodySchema`). */
export type { ErrorBody } from './api-schemas.js';

/** Status code per domain error code. */
const STATUS: Partial<Record<ErrorCode, number>> = {
  VALIDATION: 400,
  INVALID_URN: 400,
  NOT_FOUND: 404,
  POLICY_DENIED: 404,
  IDEMPOTENCY_CONFLICT: 422,
  APPROVAL_DECIDED: 409,
  DECISION_CONFLICT: 409,
  APPROVAL_EXPIRED: 410,
  MESSAGE_ENDED: 409,
  LIMIT_EXCEEDED: 429,
  BUDGET_EXCEEDED: 429,
};

/** Codes whose `details` go into the body: the current state of the caller's own resource. */
const PUBLIC_DETAILS: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['MESSAGE_ENDED']);

/** Codes of Powertools' HTTP errors, by `errorType`. */
const HTTP_CODES: Record<string, ErrorBody['code']> = {
  BadRequestError: 'BAD_REQUEST',
  UnauthorizedError: 'UNAUTHORIZED',
  ForbiddenError: 'FORBIDDEN',
  NotFoundError: 'NOT_FOUND',
  MethodNotAllowedError: 'METHOD_NOT_ALLOWED',
  RequestEntityTooLargeError: 'PAYLOAD_TOO_LARGE',
  RequestValidationError: 'VALIDATION',
  ServiceUnavailableError: 'UNAVAILABLE',
};

/** Maps any thrown value to a status and `{code, message}`. */
export function errorResponse(error: unknown): { status: number; body: ErrorBody } {
  if (error instanceof RequestValidationError) return { status: 400, body: validationBody(error) };
  if (error instanceof HttpError) {
    const code = HTTP_CODES[error.errorType] ?? 'ERROR';
    return { status: error.statusCode, body: { code, message: error.message } };
  }
  if (error instanceof CldError) {
    if (error.code === 'CONFIG')
      return { status: 503, body: { code: 'UNAVAILABLE', message: 'this channel is not configured' } };
    const status = STATUS[error.code];
    if (status === undefined) return internal();
    if (error.code === 'POLICY_DENIED') return { status, body: { code: 'NOT_FOUND', message: 'not found' } };
    const code = error.code;
    if (!isHttpCode(code)) return internal();
    if (code === 'DECISION_CONFLICT' && error.details)
      return { status, body: { code, message: error.message, current: error.details } };
    const details = PUBLIC_DETAILS.has(code) && error.details ? { details: error.details } : {};
    return { status, body: { code, message: error.message, ...details } };
  }
  if (error instanceof URIError)
    return { status: 400, body: { code: 'VALIDATION', message: 'malformed percent-encoding in the path' } };
  if (error instanceof IdempotencyAlreadyInProgressError)
    return { status: 409, body: { code: 'IN_PROGRESS', message: 'the same request is being processed' } };
  return internal();
}

/** Registers the mapping as the router's only error handler (it also receives route-not-found). */
export function useErrorResponses(router: Router, logger: () => Logger | undefined): void {
  router.errorHandler(Error, async (error) => {
    const { status, body } = errorResponse(error);
    const log = logger();
    if (status >= 500) log?.error('request failed', { error: describe(error) });
    else log?.info('request rejected', { status, code: body.code, reason: body.message });
    return Response.json(body, { status });
  });
}

function validationBody(error: RequestValidationError): ErrorBody {
  if (error.cause instanceof Error && /JSON/.test(error.cause.message))
    return { code: 'VALIDATION', message: 'request body is not valid JSON' };
  const issues = (error.details?.issues ?? []) as { message: string; path?: readonly PropertyKey[] }[];
  const message = issues.length
    ? issues
        .map((issue) => {
          const path = (issue.path ?? []).map((p) => String(p)).join('.');
          return path ? `${path}: ${issue.message}` : issue.message;
        })
        .join('; ')
    : error.message;
  return { code: 'VALIDATION', message };
}

/** Whether a domain code is one the contract names for error responses (api-schemas.ts `HTTP_ERROR_CODES`). */
function isHttpCode(code: string): code is ErrorBody['code'] {
  return (HTTP_ERROR_CODES as readonly string[]).includes(code);
}

function internal(): { status: number; body: ErrorBody } {
  return { status: 500, body: { code: 'INTERNAL', message: 'internal error' } };
}

function describe(error: unknown): Record<string, unknown> {
  if (error instanceof CldError) return { ...error.toJSON(), stack: error.stack };
  if (error instanceof Error) return { name: error.name, message: error.message, stack: error.stack };
  return { message: String(error) };
}
