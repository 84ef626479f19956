/**
 * Typed errors with a stable `code`, a `name` ending in `Error`, an optional `cause`
 * and `toJSON()` (house style, STYLE.md "Errors, logs, ids"). Only the HTTP edge maps
 * codes to status codes; everything else treats them as data.
 */

/** Stable machine-readable error codes used across the system (the OpenAPI document lists them). */
export const ERROR_CODES = [
  'VALIDATION',
  'INVALID_URN',
  'NOT_FOUND',
  'POLICY_DENIED',
  'LIMIT_EXCEEDED',
  'BUDGET_EXCEEDED',
  'MODEL_ERROR',
  'CONFIG',
  'TOOL_ERROR',
  'TOOL_UNAVAILABLE',
  'DELIVERY_FAILED',
  'STALLED',
  'CHANNEL_ERROR',
  'IDEMPOTENCY_CONFLICT',
  'APPROVAL_DECIDED',
  'APPROVAL_EXPIRED',
  'MESSAGE_ENDED',
  'DECISION_CONFLICT',
] as const;

/** One of {@link ERROR_CODES}. */
export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * Base class: every error the domain throws on purpose is a `CldError`. Each class states its
 * `name` as a field rather than reading `new.target.name`: the function bundles are minified
 * without esbuild's `keepNames` (infra/lib/bundling.ts), so a class's own name is not kept there.
 */
export class CldError extends Error {
  override name = 'CldError';
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options?.details;
  }

  /** `{ name, code, message, details? }`: safe to log and to store in a resource. */
  toJSON(): { name: string; code: ErrorCode; message: string; details?: Record<string, unknown> } {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      ...(this.details ? { details: this.details } : {}),
    };
  }
}

/** Input from outside (event, body, model output, stored JSON, CLI argument) did not parse. */
export class ValidationError extends CldError {
  override name = 'ValidationError';
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('VALIDATION', message, options);
  }
}

/** A string is not a well-formed `cld:` URN (see shared/urn.ts for the grammar). */
export class InvalidUrnError extends CldError {
  override name = 'InvalidUrnError';
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('INVALID_URN', message, options);
  }
}

/** A resource or key that was asked for does not exist. */
export class NotFoundError extends CldError {
  override name = 'NotFoundError';
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('NOT_FOUND', message, options);
  }
}

/** The policy gate denied a get or put; `details.reason` carries the policy's reason. */
export class PolicyDeniedError extends CldError {
  override name = 'PolicyDeniedError';
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('POLICY_DENIED', message, options);
  }
}

/**
 * An `Idempotency-Key` was reused with another request body than the one it first came with
 * (IETF draft "The Idempotency-Key HTTP Header Field" §2.7: 422); nothing was stored.
 */
export class IdempotencyConflictError extends CldError {
  override name = 'IdempotencyConflictError';
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('IDEMPOTENCY_CONFLICT', message, options);
  }
}

/**
 * An approval request has a decision already, and another one was given (the first decision is
 * the only one: `details.decision` names it). The HTTP edge answers 409.
 */
export class ApprovalDecidedError extends CldError {
  override name = 'ApprovalDecidedError';
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('APPROVAL_DECIDED', message, options);
  }
}

/**
 * A concurrent operator decision on the same tool was stored instead of this one (a conditional
 * create lost the race): nothing of this request was stored. `details.status` is the tool's
 * status now and `details.decision` the decision that won. The HTTP edge answers 409.
 */
export class DecisionConflictError extends CldError {
  override name = 'DecisionConflictError';
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('DECISION_CONFLICT', message, options);
  }
}

/** An approval request expired before a decision was given; nothing was stored. The HTTP edge answers 410. */
export class ApprovalExpiredError extends CldError {
  override name = 'ApprovalExpiredError';
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('APPROVAL_EXPIRED', message, options);
  }
}

/**
 * A decision came for an approval request whose user Message already ended (its answer is
 * stored: done, failed, stalled, …); nothing was stored and nothing runs. `details` gives the
 * message's current state (`message`, `status`, `endedAt`). The HTTP edge answers 409.
 */
export class MessageEndedError extends CldError {
  override name = 'MessageEndedError';
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('MESSAGE_ENDED', message, options);
  }
}

/** A per-conversation limit (depth, breadth, iterations, corrective rounds, tokens) was hit. */
export class LimitExceededError extends CldError {
  override name = 'LimitExceededError';
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('LIMIT_EXCEEDED', message, options);
  }
}

/** A per-conversation budget (tokens, model calls, tool calls, wall time) was exceeded. */
export class BudgetExceededError extends CldError {
  override name = 'BudgetExceededError';
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('BUDGET_EXCEEDED', message, options);
  }
}

/**
 * The model adapter failed (throttled after retries, timed out, rejected the request, or answered
 * malformed output). `retryable`: the same call may succeed later (throttling, 5xx, a timeout), so
 * a step lets its invocation fail and the event is retried. `malformed`: the service answered but
 * its reply could not be used (a body that does not parse or fails the Converse shape, tool-call
 * arguments that are not a JSON object): not retryable as an event, but another call may well
 * answer differently, as a model's invalid output can.
 */
export class ModelError extends CldError {
  override name = 'ModelError';
  readonly retryable: boolean;
  readonly malformed: boolean;
  constructor(
    message: string,
    options?: {
      cause?: unknown;
      details?: Record<string, unknown>;
      retryable?: boolean;
      malformed?: boolean;
    },
  ) {
    super('MODEL_ERROR', message, options);
    this.retryable = options?.retryable ?? false;
    this.malformed = options?.malformed ?? false;
  }
}

/**
 * A tool's server could not be reached (an MCP server refused the connection, timed out while
 * connecting, or answered HTTP 5xx/429): the tool step throws it, so the invocation fails and the
 * event is retried (Lambda's asynchronous retries, the local bus's), then dead-lettered, which
 * fails the task. `details`: `{ server }`.
 */
export class ToolUnavailableError extends CldError {
  override name = 'ToolUnavailableError';
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('TOOL_UNAVAILABLE', message, options);
  }
}

/** Configuration (environment, CLI flags) is missing or invalid; thrown at init. */
export class ConfigError extends CldError {
  override name = 'ConfigError';
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('CONFIG', message, options);
  }
}

/**
 * A channel refused or failed a reply leaving the system (Slack Web API error, a webhook answering
 * non-2xx, a timeout); the reply step fails so its event is retried. `details` names the target.
 */
export class ChannelError extends CldError {
  override name = 'ChannelError';
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('CHANNEL_ERROR', message, options);
  }
}

/**
 * An event failed every delivery attempt (Lambda's asynchronous retries, then the dead-letter
 * queue): the task it was for is failed with this error so its parent and the user are told.
 * `details`: `{ target, urn, attempts, cause: { code, message } }`.
 */
export class DeliveryFailedError extends CldError {
  override name = 'DeliveryFailedError';
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('DELIVERY_FAILED', message, options);
  }
}

/**
 * A conversation made no progress (no resource created) for the stall time, and re-driving its
 * pending work a bounded number of times did not help (shared/domain/sweep.ts): the open turns
 * are answered with this error. `details`: `{ redrives, waitingFor }`.
 */
export class StalledError extends CldError {
  override name = 'StalledError';
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('STALLED', message, options);
  }
}

/** Serialises any thrown value into `{ code, message }` for storing in a resource. */
export function toErrorInfo(error: unknown): { code: string; message: string } {
  if (error instanceof CldError) return { code: error.code, message: error.message };
  if (error instanceof Error) return { code: 'ERROR', message: error.message };
  return { code: 'ERROR', message: String(error) };
}
