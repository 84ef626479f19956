import { InvalidUrnError } from '../errors.js';
import type { Actor } from '../policy/port.js';
import type { BudgetClock } from '../projections/budget.js';
import type { ResourceIndex } from '../resources/resource-index.js';
import type { Message } from '../resources/schemas.js';
import { childUrn, parseUrn, rootOf } from '../urn.js';
import { NAMES } from './common.js';
import { outcomeOf } from './outcome.js';

/**
 * A *turn* is one user Message and the work under it (its Plan, Tasks, tool calls, approval
 * requests); it ends when its answer (`answer-<hash>` under the Conversation) is stored, whatever
 * that answer says (done, partial, failed, stalled, or any status added later). Whether a turn ended is
 * asked here and only here, so a new status of an answer needs no change in the callers: the
 * open statuses are listed, every other status is an ended one.
 */

/**
 * Status of one turn (a user Message): `done`, `partial` (answered, some parts not: the answer's
 * `unanswered`, shared/domain/outcome.ts) and `failed` are ended ({@link isEnded}); the others
 * are open.
 */
export type TurnStatus = 'pending' | 'running' | 'stalled' | 'done' | 'partial' | 'failed';

/** Statuses of a turn whose answer is not stored yet (shared/domain/progress.ts). */
export const OPEN_STATUSES: readonly TurnStatus[] = ['pending', 'running', 'stalled'];

/** Whether a turn with this status ended (its answer is stored): every status but the open ones. */
export function isEnded(status: TurnStatus): boolean {
  return !OPEN_STATUSES.includes(status);
}

/**
 * The status an answer gives its turn: `failed` when it carries an error, `partial` when it names
 * parts not answered (`unanswered`), else `done` (shared/domain/outcome.ts).
 */
export function answerStatus(answer: Message): TurnStatus {
  return outcomeOf(answer);
}

/**
 * The user Message a URN belongs to: the URN's first two elements
 * (`cld:common.Conversation.<h>/common.Message.<h>`), for a Task, tool call, approval request or
 * decision at any depth under it, and for the Message itself.
 * @throws InvalidUrnError when `urn` is not a URN, or not under a user Message of a Conversation
 */
export function turnMessageOf(urn: string): string {
  const [conversation, message] = parseUrn(urn).elements;
  if (conversation?.type !== 'common.Conversation' || message?.type !== 'common.Message')
    throw new InvalidUrnError(`not under a user Message of a Conversation: ${urn.slice(0, 200)}`);
  return `${rootOf(urn)}/${message.type}.${message.hash}`;
}

/** URN of the answer to a user Message (a child of the Conversation). */
export function answerUrnOf(messageUrn: string): string {
  return childUrn(rootOf(messageUrn), 'common.Message', NAMES.answer(messageUrn));
}

/** A turn that ended: its answer and the status the answer gives it. */
export interface EndedTurn {
  /** URN of the user Message. */
  message: string;
  answer: Message;
  /** An ended status ({@link isEnded}): `done`, `failed`, … */
  status: TurnStatus;
  /** When the answer was stored (ISO 8601), when known. */
  endedAt?: string;
}

/**
 * Whether the turn of `messageUrn` ended: its answer read as `actor` (one read; the policy gate
 * applies).
 * @returns the ended turn, or undefined while it is open
 * @throws PolicyDeniedError, storage errors
 */
export async function endedTurn(
  resources: ResourceIndex,
  actor: Actor,
  messageUrn: string,
): Promise<EndedTurn | undefined> {
  const answer = await resources.find(actor, 'common.Message', answerUrnOf(messageUrn));
  if (!answer) return undefined;
  return {
    message: messageUrn,
    answer,
    status: answerStatus(answer),
    ...(answer.meta.createdAt ? { endedAt: answer.meta.createdAt } : {}),
  };
}

/**
 * The clock of the wall-time budget for work under a user Message (shared/projections/budget.ts):
 * `now` and the message's `createdAt`, read as `actor` (one read, usually from the read cache).
 * @param urn the user Message, or any URN under it (a Task)
 * @throws NotFoundError when the message is not stored; PolicyDeniedError, InvalidUrnError
 */
export async function budgetClock(
  resources: ResourceIndex,
  actor: Actor,
  urn: string,
  now: Date,
): Promise<BudgetClock> {
  const message = await resources.getAs(actor, 'common.Message', turnMessageOf(urn));
  return { now, messageStartedAt: message.meta.createdAt };
}
