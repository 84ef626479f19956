/**
 * Every `code` an error response of the HTTP API carries (http-errors.ts maps the domain's codes
 * and Powertools' HTTP errors to these; the local gateway and API Gateway add `BAD_REQUEST`,
 * `NOT_FOUND`, `PAYLOAD_TOO_LARGE`, `UNAUTHORIZED`). A module of its own, so that the error
 * mapping does not load api-schemas.ts (its ≈ 130 zod schemas describe the API for openapi.ts and
 * the view types; built at import, they cost every cold start of `http`, `slack` and `teams`).
 */
export const HTTP_ERROR_CODES = [
  'VALIDATION',
  'INVALID_URN',
  'BAD_REQUEST',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'IDEMPOTENCY_CONFLICT',
  'APPROVAL_DECIDED',
  'DECISION_CONFLICT',
  'MESSAGE_ENDED',
  'APPROVAL_EXPIRED',
  'IN_PROGRESS',
  'LIMIT_EXCEEDED',
  'BUDGET_EXCEEDED',
  'UNAVAILABLE',
  'INTERNAL',
  'ERROR',
] as const;
