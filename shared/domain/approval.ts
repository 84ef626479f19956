import { ApprovalDecidedError, ApprovalExpiredError, MessageEndedError, NotFoundError } from '../errors.js';
import type { DecisionFacts } from '../policy/port.js';
import { withMeta } from '../resources/meta.js';
import type { ResourceIndex } from '../resources/resource-index.js';
import type {
  AnyResource,
  ApprovalDecision,
  ApprovalRequest,
  Conversation,
  ToolCallResource,
} from '../resources/schemas.js';
import { childUrn, isWithin, parentOf, parseUrn, rootOf } from '../urn.js';
import { userActor } from './conversation.js';
import { answerUrnOf, endedTurn, turnMessageOf } from './turn.js';

/**
 * Human approval of tool calls (issue 14, part 3). A call of a tool that needs approval (its
 * catalog entry's `approval`, or the policy's default `approval.always` of policies/rules.json)
 * is not run when the tool function first sees it; the function writes a request instead:
 *
 * ```
 * <task>/tool.Call.<h>                                   the call (assistant)
 * <task>/tool.Call.<h>/tool.Approval.<h>                 the request, name `approval` (tool function)
 * <task>/tool.Call.<h>/tool.Approval.<h>/tool.Decision.<h>   the decision, name `decision` (a channel, as the user)
 * <task>/tool.Call.<h>/tool.Approval.<h>/tool.Execution.<h>  the run's claim, name `execution` (tool function)
 * ```
 *
 * The conversation's user (the URN's root Conversation's `actor`, at any task depth) decides
 * through a channel (HTTP route, Slack button, Teams reply); the decision's `RESOURCE_PUT`
 * (routing rule `ToolOnDecision`) brings the tool function back, which runs the call — only if
 * the policy allows `execute` with the decision's facts — or answers it `DENIED`. A request
 * without a decision expires `approvalTtlMs` (shared/domain/limits.ts) after it was written: the
 * channels refuse a late decision, views show `expired`, and the sweeper's redrive of the call
 * makes the tool function answer it `DENIED` (`APPROVAL_EXPIRED`). An undecided request whose
 * user Message already ended (its answer is stored, whatever its status) takes no decision: the
 * channels refuse it (`MESSAGE_ENDED`, HTTP 409) and nothing runs.
 */

/** Names of the approval resources (one of each per call). */
export const APPROVAL_NAMES = { request: 'approval', decision: 'decision', execution: 'execution' } as const;

/** URN of the approval request of a call. */
export function approvalUrnOf(callUrn: string): string {
  return childUrn(callUrn, 'tool.Approval', APPROVAL_NAMES.request);
}

/** URN of the decision on an approval request. */
export function decisionUrnOf(requestUrn: string): string {
  return childUrn(requestUrn, 'tool.Decision', APPROVAL_NAMES.decision);
}

/** URN of the execution claim of an approved request. */
export function executionUrnOf(requestUrn: string): string {
  return childUrn(requestUrn, 'tool.Execution', APPROVAL_NAMES.execution);
}

/** The public id of a request: the hash of its URN's last element (16 hex). */
export function approvalIdOf(requestUrn: string): string {
  return requestUrn.slice(requestUrn.lastIndexOf('.') + 1);
}

/**
 * The call a `tool.Call` or `tool.Decision` event is about: the URN itself for a call, the
 * grandparent for a decision.
 * @throws InvalidUrnError
 */
export function callUrnOfEvent(urn: string): string {
  const elements = parseUrn(urn).elements;
  const last = elements[elements.length - 1]?.type;
  if (last === 'tool.Decision') return parentOf(parentOf(urn) as string) as string;
  return urn;
}

/** Builds the approval request of `call` (task title for display, the conversation's user). */
export function approvalRequest(
  call: ToolCallResource,
  taskTitle: string,
  user: string,
  ttlMs: number,
  now: Date,
): ApprovalRequest {
  return {
    meta: withMeta(
      {
        type: 'tool.Approval',
        name: APPROVAL_NAMES.request,
        parent: call.meta.id,
        purpose: `Approval of a call of ${call.call.name} by the conversation's user`,
      },
      now,
    ),
    tool: call.call.name,
    input: call.call.input,
    task: taskTitle.slice(0, 200),
    user,
    expiresAt: new Date(now.getTime() + ttlMs).toISOString(),
  };
}

/**
 * Where a request stands: waiting, decided either way, expired undecided, or `closed` (undecided
 * when its message ended: a decision is refused and the call never runs). The HTTP API's
 * `ApprovalStatusSchema` (shared/channels/api-schemas.ts) is checked to infer exactly this type.
 */
export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired' | 'closed';

/**
 * Status of `request` at `now`, given its decision (if any). Times are compared as instants, not
 * as strings: `expiresAt` is any RFC 3339 UTC time the schema accepts (`…:00Z` and `…:00.000Z`
 * name the same instant but do not sort as strings).
 */
export function approvalStatus(
  request: ApprovalRequest,
  decision: ApprovalDecision | undefined,
  now: Date,
  ended = false,
): ApprovalStatus {
  if (decision) return decision.decision === 'approve' ? 'approved' : 'denied';
  if (ended) return 'closed';
  return now.getTime() > Date.parse(request.expiresAt) ? 'expired' : 'pending';
}

/** The facts of a decision the policy decides `execute` with (shared/policy/port.ts). */
export function decisionFacts(request: ApprovalRequest, decision: ApprovalDecision): DecisionFacts {
  return {
    outcome: decision.decision,
    by: decision.by,
    user: request.user,
    decidedAt: decision.meta.createdAt ?? '',
    expiresAt: request.expiresAt,
  };
}

/**
 * One approval request as channels show it: an element of `approvals` in `GET /conversations/{id}`
 * (newest first), and the body of `POST /conversations/{id}/approvals/{approvalId}`'s answer. The
 * zod schema the OpenAPI document is generated from (`ApprovalViewSchema` in
 * shared/channels/api-schemas.ts) is checked to infer exactly this type.
 */
export interface ApprovalView {
  /** Public id (16 hex): the `{approvalId}` of the decide route, and what a Teams reply names. */
  id: string;
  /** URN of the `tool.Approval`. */
  urn: string;
  /** URN of the `tool.Call` it is about. */
  call: string;
  /** Tool function name and the arguments the model gave it. */
  tool: string;
  input: unknown;
  /** Title of the task that made the call. */
  task: string;
  status: ApprovalStatus;
  /** When it was requested and when it expires undecided (ISO 8601). */
  requestedAt?: string | undefined;
  expiresAt: string;
  /** The decision, once there is one. */
  decision?:
    | {
        decision: 'approve' | 'deny';
        by: string;
        channel: string;
        reason?: string | undefined;
        decidedAt?: string | undefined;
      }
    | undefined;
}

/**
 * The view of a request and its decision at `now`.
 * @param ended whether the request's message already ended (its answer is stored): an undecided
 *   request is then `closed`
 */
export function approvalView(
  request: ApprovalRequest,
  decision: ApprovalDecision | undefined,
  now: Date,
  ended = false,
): ApprovalView {
  return {
    id: approvalIdOf(request.meta.id),
    urn: request.meta.id,
    call: parentOf(request.meta.id) as string,
    tool: request.tool,
    input: request.input,
    task: request.task,
    status: approvalStatus(request, decision, now, ended),
    ...(request.meta.createdAt ? { requestedAt: request.meta.createdAt } : {}),
    expiresAt: request.expiresAt,
    ...(decision
      ? {
          decision: {
            decision: decision.decision,
            by: decision.by,
            channel: decision.channel,
            ...(decision.reason ? { reason: decision.reason } : {}),
            ...(decision.meta.createdAt ? { decidedAt: decision.meta.createdAt } : {}),
          },
        }
      : {}),
  };
}

/**
 * The approval requests among `resources` (a conversation's subtree), with their decisions, newest
 * first; an undecided request whose message's answer is among `resources` is `closed`.
 */
export function approvalsOf(resources: readonly AnyResource[], now: Date): ApprovalView[] {
  const decisions = new Map<string, ApprovalDecision>();
  const stored = new Set<string>();
  for (const r of resources) {
    stored.add(r.meta.id);
    if (r.meta.type === 'tool.Decision') decisions.set(r.meta.parent ?? '', r as ApprovalDecision);
  }
  return resources
    .filter((r): r is ApprovalRequest => r.meta.type === 'tool.Approval')
    .sort(
      (a, b) =>
        (b.meta.createdAt ?? '').localeCompare(a.meta.createdAt ?? '') || a.meta.id.localeCompare(b.meta.id),
    )
    .map((request) =>
      approvalView(
        request,
        decisions.get(request.meta.id),
        now,
        stored.has(answerUrnOf(turnMessageOf(request.meta.id))),
      ),
    );
}

/** What a channel decides. */
export interface DecideInput {
  /** The channel's user id (`http:<sub>`, `slack:<team>:<user>`, `teams:<Entra object id>`). */
  user: string;
  channel: ApprovalDecision['channel'];
  /** The conversation, as read by the channel (its `actor` must be `user`). */
  conversation: Conversation;
  /** The request: its URN, or its public id ({@link approvalIdOf}) within the conversation. */
  request: string;
  decision: ApprovalDecision['decision'];
  reason?: string | undefined;
  now: Date;
}

/**
 * Writes the user's decision on a request of one of their conversations, through the policy gate
 * as that user (rule `user-decide-call`). Idempotent: the same decision again returns the stored
 * one (`created: false`).
 * A request without a decision whose user Message already ended (its answer is stored: done,
 * failed, stalled, …) is refused: the call can no longer reach an answer, so nothing is stored
 * and nothing runs. A request decided before the end keeps its decision: the same decision again
 * is still the idempotent repeat (a retried request), another one `ApprovalDecidedError`.
 * @returns the request's view after the decision, and whether this call stored it
 * @throws NotFoundError when the conversation is not the user's or has no such request;
 *   MessageEndedError when it has no decision and its message ended (`details`: `message`,
 *   `status`, `endedAt`; nothing stored); ApprovalExpiredError when it expired undecided (nothing stored);
 *   ApprovalDecidedError when it has another decision; PolicyDeniedError, InvalidUrnError
 */
export async function decideApproval(
  resources: ResourceIndex,
  input: DecideInput,
): Promise<{ view: ApprovalView; created: boolean }> {
  const conversationUrn = input.conversation.meta.id;
  if (input.conversation.actor !== input.user) throw new NotFoundError('conversation not found');
  const actor = userActor(input.user, conversationUrn);
  const request = await findRequest(resources, input.user, conversationUrn, input.request);
  const decisionUrn = decisionUrnOf(request.meta.id);
  const existing = await resources.find(actor, 'tool.Decision', decisionUrn);
  const ended = existing ? undefined : await endedTurn(resources, actor, turnMessageOf(request.meta.id));
  if (ended) {
    throw new MessageEndedError(
      `approval request ${approvalIdOf(request.meta.id)} belongs to a message that already ended (${ended.status}): nothing was decided`,
      {
        details: {
          message: ended.message,
          status: ended.status,
          ...(ended.endedAt ? { endedAt: ended.endedAt } : {}),
        },
      },
    );
  }
  if (!existing && input.now.toISOString() > request.expiresAt) {
    throw new ApprovalExpiredError(
      `approval request ${approvalIdOf(request.meta.id)} expired at ${request.expiresAt}`,
    );
  }
  const decision: ApprovalDecision = existing ?? {
    meta: withMeta(
      {
        type: 'tool.Decision',
        name: APPROVAL_NAMES.decision,
        parent: request.meta.id,
        purpose: `The user's decision on a call of ${request.tool}`,
      },
      input.now,
    ),
    decision: input.decision,
    by: input.user,
    channel: input.channel,
    ...(input.reason ? { reason: input.reason } : {}),
  };
  const { created, resource: stored } = existing
    ? { created: false, resource: existing }
    : await resources.put(actor, decision);
  if (stored.decision !== input.decision) {
    throw new ApprovalDecidedError(
      `approval request ${approvalIdOf(request.meta.id)} was already decided: ${stored.decision} by ${stored.by}`,
      { details: { decision: stored.decision, by: stored.by } },
    );
  }
  return { view: approvalView(request, stored, input.now), created };
}

const APPROVAL_ID = /^[0-9a-f]{16}$/;

/**
 * The request named by URN or public id in one of `user`'s conversations.
 * @throws NotFoundError when there is none (a URN of another conversation included)
 */
async function findRequest(
  resources: ResourceIndex,
  user: string,
  conversation: string,
  request: string,
): Promise<ApprovalRequest> {
  const actor = userActor(user, conversation);
  let urn: string | undefined;
  if (APPROVAL_ID.test(request)) {
    const urns = await resources.listUrns(actor, conversation, { type: 'tool.Approval' });
    urn = urns.find((candidate) => approvalIdOf(candidate) === request);
  } else if (isWithin(request, conversation) && rootOf(request) === conversation) {
    urn = request;
  }
  const found = urn ? await resources.find(actor, 'tool.Approval', urn) : undefined;
  if (!found) throw new NotFoundError('approval request not found');
  return found;
}
