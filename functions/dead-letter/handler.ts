import { getDeps } from '../../shared/runtime/compose.js';
import { createDeadLetterHandler } from '../../shared/runtime/dead-letter-consumer.js';

/**
 * The dead-letter function: consumes the dead-letter queues of the task-tree steps (plan,
 * assistant, tool) through SQS event source mappings and fails the task each dead-lettered event
 * was for (shared/runtime/dead-letter-consumer.ts, shared/domain/dead-letter.ts). Answers with
 * `batchItemFailures`, so one bad record is redelivered alone. Queue → step map from
 * `CLD_DEAD_LETTER_QUEUES`. Thin by design: parse → call shared → return.
 */
export const handler = createDeadLetterHandler({ getDeps });
