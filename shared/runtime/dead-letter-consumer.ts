import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import type { SQSBatchResponse } from 'aws-lambda';
import * as z from 'zod';
import type { StepOutcome } from '../domain/common.js';
import { type DeadLetterInput, deadLetterStep } from '../domain/dead-letter.js';
import type { Deps } from '../domain/ports.js';
import { CldError, toErrorInfo, ValidationError } from '../errors.js';
import {
  DEAD_LETTER_QUEUES_VARIABLE,
  type DeadLetterQueues,
  parseDeadLetterQueues,
  toDeadLetterRecord,
} from '../events/dead-letter-record.js';
import { rootOf } from '../urn.js';

/**
 * The consumer of the steps' dead-letter queues in AWS (issue 5's guarantee, deploy side): an
 * SQS event source mapping hands it batches of dead letters (shared/events/dead-letter-record.ts)
 * and it runs the dead-letter step on each, so the task an event was for fails instead of staying
 * pending. The batch is Powertools batch's (`BatchProcessor` with `EventType.SQS`,
 * `processPartialResponse`; @aws-lambda-powertools/batch 2.35.0), which answers with
 * `batchItemFailures` (the mapping has `ReportBatchItemFailures`): a record that does not adapt
 * or whose step fails is reported alone and redelivered by SQS — after `maxReceiveCount` receives
 * it moves to the consumer's own dead-letter queue — while the rest of the batch is deleted. The
 * step is idempotent (create-only writes, apply-once counters), so a redelivered or duplicated
 * letter writes nothing new.
 */

const SqsEventSchema = z.looseObject({ Records: z.array(z.unknown()) });

/** What the batch response needs of a record: its SQS `messageId`. */
const RecordIdSchema = z.looseObject({ messageId: z.string().min(1) });

/** The dead-letter step as the consumer calls it (a parameter for tests). */
export type DeadLetterStepFn = (input: DeadLetterInput, deps: Deps) => Promise<StepOutcome>;

/**
 * Runs the dead-letter step on each record, one after another (`processInParallel: false`:
 * letters of one task in a batch then see each other's writes, and the logger's per-record keys
 * stay the record's).
 *
 * When every record of the batch fails, Powertools' default stands (`throwOnFullBatchFailure`
 * not set): the invocation fails with `FullBatchFailureError` instead of listing every record.
 * SQS redrives the whole batch either way (each receive counts towards `maxReceiveCount`), but a
 * batch in which nothing can be handled is most likely a fault of the function itself (storage,
 * table or a grant), and a failed invocation shows it in the function's `Errors` metric and lets
 * the event source mapping back off, where an answer listing every record would pass as a
 * success.
 * @param event an SQS event (`{ Records: [...] }`)
 * @returns the records that failed, by `messageId`; `[]` when all were handled
 * @throws ValidationError when `event` is not an SQS event or a record has no `messageId` (the
 *   whole batch is then retried: a failure cannot be reported for a record without an id);
 *   FullBatchFailureError (@aws-lambda-powertools/batch) when every record failed
 */
export async function consumeDeadLetters(
  event: unknown,
  deps: Deps,
  queues: DeadLetterQueues,
  step: DeadLetterStepFn = deadLetterStep,
): Promise<SQSBatchResponse> {
  const parsed = SqsEventSchema.safeParse(event);
  if (!parsed.success) throw new ValidationError(`not an SQS event: ${z.prettifyError(parsed.error)}`);
  const records = parsed.data.Records;
  for (const record of records) {
    if (!RecordIdSchema.safeParse(record).success)
      throw new ValidationError('an SQS record has no messageId: the batch cannot report it alone');
  }
  const handleRecord = async (record: unknown): Promise<void> => {
    const { messageId } = RecordIdSchema.parse(record);
    deps.logger.appendKeys({ messageId });
    try {
      const letter = toDeadLetterRecord(record, queues);
      deps.logger.appendKeys({
        urn: letter.urn,
        conversation: rootOf(letter.urn),
        step: letter.letter.target,
      });
      const outcome = await step(letter.letter, deps);
      deps.logger.info('dead letter handled', {
        ...outcome,
        source: letter.source,
        receiveCount: letter.receiveCount,
      });
    } catch (error) {
      deps.logger.error('dead letter not handled; left in the queue for redelivery', {
        error: error instanceof CldError ? error.toJSON() : toErrorInfo(error),
      });
      throw error;
    } finally {
      deps.logger.removeKeys(['messageId', 'urn', 'conversation', 'step']);
    }
  };
  // One processor per call: it holds the batch's state, and two calls in one process (tests,
  // handlers sharing a module) may overlap.
  const processor = new BatchProcessor(EventType.SQS);
  const response = await processPartialResponse(
    { Records: records as { messageId: string }[] },
    handleRecord,
    processor,
    {
      processInParallel: false,
    },
  );
  return { batchItemFailures: response.batchItemFailures };
}

/** Options of {@link createDeadLetterHandler}. */
export interface DeadLetterHandlerOptions {
  /**
   * The composition root, called at every invocation and memoised by the caller (kept once
   * composed; a failed composition is retried by the next invocation: compose.ts `getDeps`).
   */
  getDeps: () => Promise<Deps>;
  /** The queue map; default: `CLD_DEAD_LETTER_QUEUES` parsed once, at the first invocation. */
  queues?: () => DeadLetterQueues;
  step?: DeadLetterStepFn;
}

/**
 * The dead-letter function's Lambda handler (Middy: deps and the queue map loaded once, the
 * Powertools logger given the Lambda context, then {@link consumeDeadLetters}).
 * @throws ConfigError at the first invocation when `CLD_DEAD_LETTER_QUEUES` is missing or invalid
 */
export function createDeadLetterHandler(options: DeadLetterHandlerOptions) {
  let deps: Deps | undefined;
  let queues: DeadLetterQueues | undefined;
  const readQueues =
    options.queues ?? (() => parseDeadLetterQueues(process.env[DEAD_LETTER_QUEUES_VARIABLE]));
  return middy<unknown, SQSBatchResponse>()
    .before(async (request) => {
      queues ??= readQueues();
      deps = await options.getDeps();
      await injectLambdaContext(deps.logger).before?.(request);
    })
    .handler((event: unknown) =>
      consumeDeadLetters(event, deps as Deps, queues as DeadLetterQueues, options.step),
    );
}
