import * as z from 'zod';
import { DeliveryFailedError, toErrorInfo, ValidationError } from '../errors.js';
import { toResourcePut } from '../events/envelope.js';
import { typePathOf } from '../events/routing.js';
import { countOutput } from '../projections/counters.js';
import type { Task } from '../resources/schemas.js';
import { childUrn, parentOf, rootOf, typeOf } from '../urn.js';
import { failTask, roundOf } from './assistant.js';
import { answerMessage, assistantActor, outputUrn, planActor, type StepOutcome } from './common.js';
import { failPlanning } from './plan.js';
import type { Deps } from './ports.js';

/**
 * The dead-letter step (issue 5: "poison events in the dead-letter store with the affected task
 * marked failed"). An event that failed every attempt — Lambda's asynchronous invocation tries
 * three times, then sends it to the on-failure destination; the local bus does the same — would
 * leave its task pending forever. This step fails the task the event was for, with a
 * `DELIVERY_FAILED` reason, through the same create-only writes as any failure, so the parent
 * and the user are told:
 *
 * | target | resource of the event | affected | what is written |
 * |---|---|---|---|
 * | plan | user Message | the request | a `plan.Plan` with the error, then the answer saying planning failed |
 * | plan | root task output | the request | the output is counted, then the answer with the error |
 * | assistant | `plan.Task` | that task | its failed output |
 * | assistant | subtask output | the parent task | the output is counted, then the parent's failed output |
 * | assistant | tool result / turn under task T | T | T's failed output |
 * | tool | `tool.Call` under T | T | T's failed output |
 * | any other (channels) | — | nothing in the task tree | nothing |
 *
 * Counting a dead-lettered output keeps the projections equal to a replay from storage.
 * Idempotent: a second dead letter of the same event finds the outputs written.
 */

/** A dead letter as this step takes it (the local bus's `DeadLetter`; a DLQ record's payload). */
export const DeadLetterSchema = z.looseObject({
  /** The step that failed on the event: `plan`, `assistant`, `tool`, ... */
  target: z.string().min(1),
  /** The S3 "Object Created" EventBridge event that failed. */
  event: z.unknown(),
  /** Attempts made. */
  attempts: z.number().int().positive(),
  /** The last attempt's error. */
  error: z.strictObject({ code: z.string(), message: z.string() }),
});
export type DeadLetterInput = z.infer<typeof DeadLetterSchema>;

/**
 * Fails the task a dead-lettered event was for (table above).
 * @throws ValidationError for a malformed letter or event; storage and policy errors
 */
export async function deadLetterStep(input: unknown, deps: Deps): Promise<StepOutcome> {
  const parsed = DeadLetterSchema.safeParse(input);
  if (!parsed.success) throw new ValidationError(`invalid dead letter: ${z.prettifyError(parsed.error)}`);
  const letter = parsed.data;
  const { urn } = toResourcePut(letter.event);
  const error = new DeliveryFailedError(
    `event for ${urn} failed ${letter.attempts} times in the ${letter.target} step: ${letter.error.message}`,
    { details: { target: letter.target, urn, attempts: letter.attempts, cause: letter.error } },
  );
  deps.logger.error('dead letter', { urn, target: letter.target, error: letter.error });
  const path = typePathOf(urn);

  if (letter.target === 'plan') {
    if (path === 'common.Conversation/common.Message') return failPlanning(urn, error, deps);
    const task = parentOf(urn) as string;
    if (path.endsWith('/plan.Task/common.Message') && urn === outputUrn(task)) {
      const messageUrn = parentOf(task) as string;
      await countOutput(deps.projections, messageUrn, 0, urn);
      return failAnswer(messageUrn, error, deps);
    }
  }

  if (letter.target === 'assistant' || letter.target === 'tool') {
    if (typeOf(urn) === 'plan.Task') return failTask(await taskAt(urn, deps), error, deps);
    const task = parentOf(urn) as string;
    if (typeOf(task) === 'plan.Task') {
      if (letter.target === 'assistant' && urn === outputUrn(task)) {
        const parent = parentOf(task) as string;
        if (typeOf(parent) !== 'plan.Task')
          return { action: 'ignored', urn, detail: 'root output (plan step)' };
        const [child, supervisor] = await Promise.all([taskAt(task, deps), taskAt(parent, deps)]);
        await countOutput(deps.projections, parent, roundOf(supervisor, child), urn);
        return failTask(supervisor, error, deps);
      }
      return failTask(await taskAt(task, deps), error, deps);
    }
  }
  return { action: 'ignored', urn, detail: `no task to fail for a dead letter of ${letter.target}` };
}

async function taskAt(urn: string, deps: Deps): Promise<Task> {
  return deps.resources.getAs(assistantActor(urn), 'plan.Task', urn);
}

/** The final answer saying the request did not complete (create-only: an answer written before stands). */
async function failAnswer(messageUrn: string, error: DeliveryFailedError, deps: Deps): Promise<StepOutcome> {
  const answer = answerMessage(
    messageUrn,
    { content: `I could not complete this request: ${error.message}`, error: toErrorInfo(error) },
    deps.now(),
  );
  const { created } = await deps.resources.put(planActor(messageUrn), answer);
  return {
    action: created ? 'failed' : 'ignored',
    urn: childUrn(rootOf(messageUrn), 'common.Message', answer.meta.name),
  };
}
