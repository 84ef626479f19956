import * as z from 'zod';
import type { DeadLetterInput } from '../domain/dead-letter.js';
import { ConfigError, ValidationError } from '../errors.js';
import { toResourcePut } from './envelope.js';

/**
 * Dead letters as AWS delivers them: an SQS record of a step's dead-letter queue, turned into
 * the dead-letter step's input (`DeadLetterInput`, shared/domain/dead-letter.ts). Two services
 * write to a step's queue (infra/lib/step-function.ts), so a record has one of two shapes:
 *
 * | source | SQS message body | error, attempts |
 * |---|---|---|
 * | `lambda-on-failure`: the function's asynchronous invocation failed every attempt (its on-failure destination) | the invocation record: `requestContext` (`condition`, `approximateInvokeCount`), `requestPayload` (the S3 event), `responsePayload` (`errorType`, `errorMessage`) | from the record |
 * | `eventbridge-target`: the rule could not deliver the event to the function (the target's DLQ) | the S3 event itself | message attributes `ERROR_CODE`, `ERROR_MESSAGE`, `RETRY_ATTEMPTS` |
 *
 * Sources: Lambda, "Capturing records of Lambda asynchronous invocations" (invocation record);
 * EventBridge, "Using dead-letter queues to process undelivered events" (message attributes);
 * Lambda, "Using Lambda with Amazon SQS" (the SQS event record).
 *
 * The step a letter is for comes from the queue it was read from (`eventSourceARN`), by the
 * map in `CLD_DEAD_LETTER_QUEUES` that the stack sets on the consumer.
 */

/** Environment variable naming the consumed dead-letter queues: JSON `{ "<step>": "<queue ARN>" }`. */
export const DEAD_LETTER_QUEUES_VARIABLE = 'CLD_DEAD_LETTER_QUEUES';

const STEP_NAME = /^[a-z][a-z0-9-]*$/;

/** An SQS queue ARN (`arn:<partition>:sqs:<region>:<account>:<name>`; standard queues only). */
export const QueueArnSchema = z
  .string()
  .regex(/^arn:aws[a-z-]*:sqs:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,80}$/, 'an SQS queue ARN');

/** `CLD_DEAD_LETTER_QUEUES` parsed: step name by queue ARN. */
export type DeadLetterQueues = ReadonlyMap<string, string>;

/** The value of `CLD_DEAD_LETTER_QUEUES`: one queue per step, at least one, no queue twice. */
export const DeadLetterQueuesSchema = z
  .record(z.string(), QueueArnSchema)
  .superRefine((map, ctx) => {
    for (const step of Object.keys(map).filter((key) => !STEP_NAME.test(key)))
      ctx.addIssue({ code: 'custom', path: [step], message: 'not a function name such as tool' });
  })
  .refine((map) => Object.keys(map).length > 0, 'names no queue')
  .refine(
    (map) => new Set(Object.values(map)).size === Object.values(map).length,
    'names one queue for two steps',
  );

/**
 * Parses `CLD_DEAD_LETTER_QUEUES` (at cold start).
 * @param value the variable's JSON text, e.g. `{"tool":"arn:aws:sqs:eu-west-1:111122223333:Cld-dev-ToolDLQ"}`
 * @returns step name by queue ARN
 * @throws ConfigError naming the variable when it is missing, not JSON, or not such a map
 */
export function parseDeadLetterQueues(value: string | undefined): DeadLetterQueues {
  if (value === undefined || value.trim() === '')
    throw new ConfigError(`${DEAD_LETTER_QUEUES_VARIABLE} is not set (the stack sets it on the consumer)`);
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch (error) {
    throw new ConfigError(`${DEAD_LETTER_QUEUES_VARIABLE} is not JSON`, { cause: error });
  }
  const parsed = DeadLetterQueuesSchema.safeParse(json);
  if (!parsed.success)
    throw new ConfigError(`invalid ${DEAD_LETTER_QUEUES_VARIABLE}: ${z.prettifyError(parsed.error)}`);
  return new Map(Object.entries(parsed.data).map(([step, arn]) => [arn, step]));
}

const MessageAttributeSchema = z.looseObject({
  dataType: z.string(),
  stringValue: z.string().optional(),
});

/** One record of an SQS event as Lambda's event source mapping delivers it (validated, extra fields kept). */
export const SqsRecordSchema = z.looseObject({
  messageId: z.string().min(1),
  receiptHandle: z.string().min(1),
  body: z.string(),
  attributes: z.looseObject({
    ApproximateReceiveCount: z.string(),
    SentTimestamp: z.string(),
  }),
  messageAttributes: z.record(z.string(), MessageAttributeSchema),
  md5OfBody: z.string(),
  eventSource: z.literal('aws:sqs'),
  eventSourceARN: z.string().min(1),
  awsRegion: z.string(),
});
export type SqsRecord = z.infer<typeof SqsRecordSchema>;

/**
 * The invocation record Lambda sends to an on-failure destination (version 1.0). `condition` is
 * `RetriesExhausted` or `EventAgeExceeded`; `responsePayload` is the function's error response
 * (`errorType`, `errorMessage`, `trace` from the Node.js runtime), absent when no attempt ran
 * to completion.
 */
export const InvocationRecordSchema = z.looseObject({
  version: z.string(),
  timestamp: z.string(),
  requestContext: z.looseObject({
    requestId: z.string(),
    functionArn: z.string(),
    condition: z.string().min(1),
    approximateInvokeCount: z.number().int().nonnegative(),
  }),
  requestPayload: z.unknown(),
  responseContext: z
    .looseObject({
      statusCode: z.number().int(),
      executedVersion: z.string().optional(),
      functionError: z.string().optional(),
    })
    .optional(),
  responsePayload: z.unknown().optional(),
});
export type InvocationRecord = z.infer<typeof InvocationRecordSchema>;

const ErrorResponseSchema = z.looseObject({
  errorType: z.string().optional(),
  errorMessage: z.string().optional(),
});

/** How a letter reached the queue (table above). */
export type DeadLetterSource = 'lambda-on-failure' | 'eventbridge-target';

/** A dead-letter queue record, adapted. */
export interface DeadLetterRecord {
  /** The SQS message id (the `itemIdentifier` of a batch item failure). */
  messageId: string;
  source: DeadLetterSource;
  /** URN of the resource whose `RESOURCE_PUT` failed. */
  urn: string;
  /** How many times SQS has handed this record to the consumer (`ApproximateReceiveCount`). */
  receiveCount: number;
  /** The dead-letter step's input. */
  letter: DeadLetterInput;
}

/**
 * Turns one SQS record of a step's dead-letter queue into the dead-letter step's input. Nothing
 * is written here: a record that does not adapt is the caller's to report as a batch item
 * failure (it stays in the queue, then moves to the consumer's own dead-letter queue).
 *
 * - `target`: the step whose queue `eventSourceARN` is, by `queues`;
 * - `event`: the S3 "Object Created" event (the invocation record's `requestPayload`, or the
 *   body itself), validated here;
 * - `attempts`: Lambda's `approximateInvokeCount`, or EventBridge's `RETRY_ATTEMPTS` + 1; at
 *   least 1 — an event throttled until it aged out (count 0) was still attempted once;
 * - `error`: `{ code, message }` — `errorType`/`errorMessage` of the function's error response
 *   (or the `condition` when there is none), or EventBridge's `ERROR_CODE`/`ERROR_MESSAGE`.
 *
 * @param record one element of an SQS event's `Records`
 * @param queues step name by queue ARN ({@link parseDeadLetterQueues})
 * @throws ValidationError (with `details.messageId` when the record has one) for a record that
 *   is not an SQS record, comes from a queue `queues` does not name, has a body that is not
 *   JSON, is neither shape above, or does not carry an S3 "Object Created" event of a resource
 */
export function toDeadLetterRecord(record: unknown, queues: DeadLetterQueues): DeadLetterRecord {
  const parsed = SqsRecordSchema.safeParse(record);
  if (!parsed.success) {
    const messageId = (record as { messageId?: unknown } | null)?.messageId;
    throw new ValidationError(`not an SQS record: ${z.prettifyError(parsed.error)}`, {
      ...(typeof messageId === 'string' ? { details: { messageId } } : {}),
    });
  }
  const sqs = parsed.data;
  const fail: Fail = (message, cause) => {
    throw new ValidationError(`dead letter ${sqs.messageId}: ${message}`, {
      details: { messageId: sqs.messageId, queue: sqs.eventSourceARN },
      ...(cause === undefined ? {} : { cause }),
    });
  };

  const target = queues.get(sqs.eventSourceARN);
  if (target === undefined) {
    return fail(
      `comes from ${sqs.eventSourceARN}, which is not the dead-letter queue of a step ` +
        `(${DEAD_LETTER_QUEUES_VARIABLE} names ${[...queues.values()].join(', ')})`,
    );
  }
  let body: unknown;
  try {
    body = JSON.parse(sqs.body);
  } catch (error) {
    return fail(`body is not JSON: ${sqs.body.slice(0, 80)}`, error);
  }

  const adapted =
    body !== null && typeof body === 'object' && 'requestContext' in body && 'requestPayload' in body
      ? fromInvocationRecord(body, fail)
      : fromEventBridgeTarget(body, sqs.messageAttributes, fail);
  let urn: string;
  try {
    urn = toResourcePut(adapted.event).urn;
  } catch (error) {
    return fail(`does not carry a resource's S3 Object Created event: ${(error as Error).message}`, error);
  }
  return {
    messageId: sqs.messageId,
    source: adapted.source,
    urn,
    receiveCount: Number(sqs.attributes.ApproximateReceiveCount) || 1,
    letter: { target, event: adapted.event, attempts: adapted.attempts, error: adapted.error },
  };
}

type Fail = (message: string, cause?: unknown) => never;

interface Adapted {
  source: DeadLetterSource;
  event: unknown;
  attempts: number;
  error: { code: string; message: string };
}

function fromInvocationRecord(body: unknown, fail: Fail): Adapted {
  const parsed = InvocationRecordSchema.safeParse(body);
  if (!parsed.success) return fail(`not a Lambda invocation record: ${z.prettifyError(parsed.error)}`);
  const { requestContext, requestPayload, responsePayload } = parsed.data;
  const response = ErrorResponseSchema.safeParse(responsePayload);
  const errorType = response.success ? response.data.errorType : undefined;
  const errorMessage = response.success ? response.data.errorMessage : undefined;
  return {
    source: 'lambda-on-failure',
    event: requestPayload,
    attempts: Math.max(1, requestContext.approximateInvokeCount),
    error: {
      code: errorType ?? requestContext.condition,
      message: errorMessage
        ? `${errorMessage} (${requestContext.condition})`
        : `no attempt returned a response (${requestContext.condition})`,
    },
  };
}

function fromEventBridgeTarget(
  body: unknown,
  attributes: SqsRecord['messageAttributes'],
  fail: Fail,
): Adapted {
  const code = attributes.ERROR_CODE?.stringValue;
  if (!code) {
    return fail(
      'is neither a Lambda invocation record (no requestContext/requestPayload) nor an EventBridge ' +
        'dead letter (no ERROR_CODE message attribute)',
    );
  }
  const retries = Number(attributes.RETRY_ATTEMPTS?.stringValue ?? '0');
  const message = attributes.ERROR_MESSAGE?.stringValue ?? 'no ERROR_MESSAGE';
  return {
    source: 'eventbridge-target',
    event: body,
    attempts: Number.isInteger(retries) && retries >= 0 ? retries + 1 : 1,
    error: { code, message: `EventBridge could not deliver the event to the function: ${message}` },
  };
}
