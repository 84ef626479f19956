import type { KnownBlock } from '@slack/web-api';
import * as z from 'zod';
import { type ApprovalView, approvalIdOf, decideApproval } from '../domain/approval.js';
import { ApprovalDecidedError, ApprovalExpiredError, MessageEndedError, NotFoundError } from '../errors.js';
import type { ResourceIndex } from '../resources/resource-index.js';
import type { ApprovalRequest, Conversation } from '../resources/schemas.js';
import { parseUrn, rootOf } from '../urn.js';
import { ownConversation } from './conversations.js';
import type { SlackResponsePayload } from './delivery.js';
import { escapeSlackText, slackUser } from './slack.js';

/**
 * Human approval of tool calls on the chat channels (issue 14, part 3; shared/domain/approval.ts):
 * - the notice the reply step posts when a request is written (`…-Call-Approval`, routing rule
 *   `ReplyOnApprovalRequest`): on Slack a message in the conversation's thread with Block Kit
 *   buttons "Approve" / "Deny" whose `value` is the request's URN, on Teams a message naming the
 *   request's id and the replies that decide it;
 * - Slack's interaction payload (`POST /slack/interactions`, block_actions) and a Teams reply
 *   `approve <id> [reason]` / `deny <id> [reason]`, both turned into {@link decideApproval} as
 *   the channel's user — who must be the conversation's user, or nothing is decided.
 */

/** `action_id` of the Approve button. */
export const APPROVE_ACTION = 'cld.approval.approve';
/** `action_id` of the Deny button. */
export const DENY_ACTION = 'cld.approval.deny';

/** Characters of a call's input shown in a notice (JSON, cut with an ellipsis). */
export const NOTICE_INPUT_CHARS = 600;

/** The call's input as one line of JSON, at most {@link NOTICE_INPUT_CHARS}. */
export function inputPreview(input: unknown): string {
  const json = JSON.stringify(input) ?? 'null';
  return json.length <= NOTICE_INPUT_CHARS ? json : `${json.slice(0, NOTICE_INPUT_CHARS - 1)}…`;
}

/** The plain-text fallback of a notice (Slack notifications, screen readers). */
export function noticeText(request: ApprovalRequest): string {
  return `Approval needed: ${request.tool} for "${escapeMrkdwn(request.task)}" (request ${approvalIdOf(request.meta.id)}, expires ${request.expiresAt})`;
}

/**
 * The Slack notice (Block Kit): what is asked (tool, task, input, expiry) and two buttons whose
 * `value` is the request's URN (at most 2,000 characters, Slack's limit for a button value).
 */
export function slackApprovalBlocks(request: ApprovalRequest): KnownBlock[] {
  const id = approvalIdOf(request.meta.id);
  return [
    {
      type: 'section',
      text: {
        type: 'mrkdwn',
        text: `:raising_hand: *Approval needed* to call the tool \`${request.tool}\` for the task _${escapeMrkdwn(request.task)}_`,
      },
    },
    {
      type: 'section',
      text: {
        type: 'mrkdwn',
        text: `\`\`\`${escapeMrkdwn(inputPreview(request.input).replace(/```/g, "'''"))}\`\`\``,
      },
    },
    {
      type: 'context',
      elements: [{ type: 'mrkdwn', text: `Request \`${id}\` · expires ${request.expiresAt}` }],
    },
    {
      type: 'actions',
      block_id: `cld.approval.${id}`,
      elements: [
        {
          type: 'button',
          action_id: APPROVE_ACTION,
          text: { type: 'plain_text', text: 'Approve' },
          style: 'primary',
          value: request.meta.id,
        },
        {
          type: 'button',
          action_id: DENY_ACTION,
          text: { type: 'plain_text', text: 'Deny' },
          style: 'danger',
          value: request.meta.id,
        },
      ],
    },
  ];
}

/** The notice once decided (or expired): the buttons are replaced by the outcome. */
export function slackDecidedBlocks(view: ApprovalView): KnownBlock[] {
  return [
    {
      type: 'section',
      text: {
        type: 'mrkdwn',
        text: `Call of the tool \`${view.tool}\` for the task _${escapeMrkdwn(view.task)}_`,
      },
    },
    { type: 'context', elements: [{ type: 'mrkdwn', text: outcomeText(view) }] },
  ];
}

/** One line saying how a request stands (used on Slack and Teams). */
export function outcomeText(view: ApprovalView): string {
  const id = `request ${view.id}`;
  switch (view.status) {
    case 'approved':
      return `:white_check_mark: Approved by ${who(view.decision?.by)} (${id})`;
    case 'denied':
      return `:no_entry: Denied by ${who(view.decision?.by)}${view.decision?.reason ? `: ${escapeMrkdwn(view.decision.reason)}` : ''} (${id})`;
    case 'expired':
      return `:hourglass: Expired undecided at ${view.expiresAt} (${id})`;
    case 'closed':
      return `:lock: Closed undecided: its message already ended, so the call does not run (${id})`;
    default:
      return `Waiting for a decision (${id})`;
  }
}

/**
 * The Teams notice (Markdown in an Adaptive Card): what is asked, and the replies that decide it,
 * mentioning the outgoing webhook in the thread of the question.
 */
export function teamsApprovalText(request: ApprovalRequest): string {
  const id = approvalIdOf(request.meta.id);
  return [
    `**Approval needed** to call the tool \`${request.tool}\` for the task "${request.task}".`,
    '',
    `Input: \`${inputPreview(request.input)}\``,
    '',
    `Reply in the thread of your question, mentioning me: \`approve ${id}\` or \`deny ${id} [reason]\`. The request expires ${request.expiresAt}.`,
  ].join('\n');
}

/** A decision typed as a reply (Teams): `approve <id> [reason]` or `deny <id> [reason]`. */
export interface TypedDecision {
  decision: 'approve' | 'deny';
  /** The request's public id (16 hex). */
  id: string;
  reason?: string;
}

const TYPED = /^(approve|deny)\s+([0-9a-f]{16})\b\s*(.*)$/is;

/**
 * Reads a typed decision from a message's text (mentions already removed). Case-insensitive
 * verb; the reason (at most 1,000 characters) is the rest of the text. Anything else is not a
 * decision (`undefined`): it stays a normal follow-up message.
 */
export function parseTypedDecision(text: string): TypedDecision | undefined {
  const match = TYPED.exec(text.trim());
  if (!match) return undefined;
  const reason = (match[3] ?? '').trim().slice(0, 1_000);
  return {
    decision: (match[1] as string).toLowerCase() as 'approve' | 'deny',
    id: (match[2] as string).toLowerCase(),
    ...(reason ? { reason } : {}),
  };
}

/** What came of a decision a chat user asked for. */
export type ChatDecision =
  | { outcome: 'decided'; view: ApprovalView; created: boolean }
  | { outcome: 'decided-otherwise'; message: string }
  | { outcome: 'expired'; message: string }
  /** The request's user Message already ended (answered: done, failed, …): nothing was decided. */
  | { outcome: 'ended'; message: string; status: string }
  | { outcome: 'not-found'; message: string };

/**
 * Decides a request as a chat user and turns the refusals a user may cause into outcomes
 * (not theirs or unknown, its message already ended, decided otherwise, expired); nothing is
 * stored for those.
 * @throws PolicyDeniedError, InvalidUrnError and storage errors
 */
export async function decideFromChat(
  resources: ResourceIndex,
  input: {
    user: string;
    channel: 'slack' | 'teams';
    conversation: Conversation;
    request: string;
    decision: 'approve' | 'deny';
    reason?: string | undefined;
    now: Date;
  },
): Promise<ChatDecision> {
  try {
    const { view, created } = await decideApproval(resources, input);
    return { outcome: 'decided', view, created };
  } catch (error) {
    if (error instanceof NotFoundError)
      return { outcome: 'not-found', message: 'This approval request is not yours to decide.' };
    if (error instanceof MessageEndedError)
      return { outcome: 'ended', message: error.message, status: String(error.details?.status ?? 'ended') };
    if (error instanceof ApprovalExpiredError) return { outcome: 'expired', message: error.message };
    if (error instanceof ApprovalDecidedError)
      return { outcome: 'decided-otherwise', message: error.message };
    throw error;
  }
}

/** One button press of a `block_actions` payload (https://api.slack.com/reference/interaction-payloads/block-actions). */
export const SlackBlockActionsSchema = z.looseObject({
  type: z.literal('block_actions'),
  team: z.looseObject({ id: z.string().min(1).max(64) }),
  user: z.looseObject({ id: z.string().min(1).max(64) }),
  response_url: z.url({ protocol: /^https?$/ }),
  container: z
    .looseObject({
      message_ts: z.string().max(64).optional(),
      channel_id: z.string().max(64).optional(),
      thread_ts: z.string().max(64).optional(),
    })
    .optional(),
  channel: z.looseObject({ id: z.string().min(1).max(64) }).optional(),
  message: z.looseObject({ ts: z.string().max(64), thread_ts: z.string().max(64).optional() }).optional(),
  actions: z
    .array(
      z.looseObject({
        action_id: z.string().min(1).max(255),
        value: z.string().max(2_000).optional(),
        block_id: z.string().max(255).optional(),
      }),
    )
    .min(1),
});
/** A validated `block_actions` payload. */
export type SlackBlockActions = z.infer<typeof SlackBlockActionsSchema>;

/** Any interaction payload: block actions, or another type we acknowledge and ignore. */
export const SlackInteractionSchema = z.union([
  SlackBlockActionsSchema,
  z.looseObject({
    type: z
      .string()
      .min(1)
      .refine((type) => type !== 'block_actions'),
  }),
]);

/** What to answer a Slack user who pressed a button (through the interaction's `response_url`). */
export type SlackInteractionOutcome =
  | { action: 'ignore'; reason: string }
  | { action: 'respond'; decision: ChatDecision; payload: SlackResponsePayload };

/**
 * Handles a validated `block_actions` payload: the first action, when it is one of our buttons,
 * decides the request its `value` names as the pressing Slack user (`slack:<team>:<user>`), who
 * must be the conversation's user. The answer replaces the notice with the outcome when decided,
 * expired or its message already ended (the buttons can decide nothing any more), and tells only
 * the presser (ephemeral) when it is not theirs or decided otherwise.
 * @throws InvalidUrnError when the button's value is not a URN; PolicyDeniedError, storage errors
 */
export async function decideSlackInteraction(
  resources: ResourceIndex,
  payload: SlackBlockActions,
  now: Date,
): Promise<SlackInteractionOutcome> {
  const action = payload.actions[0] as SlackBlockActions['actions'][number];
  if (action.action_id !== APPROVE_ACTION && action.action_id !== DENY_ACTION)
    return { action: 'ignore', reason: `action ${action.action_id}` };
  const requestUrn = action.value ?? '';
  const elements = parseUrn(requestUrn).elements;
  if (elements[elements.length - 1]?.type !== 'tool.Approval')
    return { action: 'ignore', reason: 'button value is not an approval request' };
  const user = slackUser(payload.team.id, payload.user.id);
  const notYours = (): SlackInteractionOutcome => {
    const decision: ChatDecision = {
      outcome: 'not-found',
      message: 'This approval request is not yours to decide.',
    };
    return { action: 'respond', decision, payload: ephemeral(decision.message) };
  };
  let conversation: Conversation;
  try {
    conversation = await ownConversation(resources, user, rootOf(requestUrn));
  } catch (error) {
    if (error instanceof NotFoundError) return notYours();
    throw error;
  }
  const decision = await decideFromChat(resources, {
    user,
    channel: 'slack',
    conversation,
    request: requestUrn,
    decision: action.action_id === APPROVE_ACTION ? 'approve' : 'deny',
    now,
  });
  switch (decision.outcome) {
    case 'decided': {
      const text = outcomeText(decision.view);
      return {
        action: 'respond',
        decision,
        payload: { replace_original: true, text, blocks: slackDecidedBlocks(decision.view) },
      };
    }
    case 'expired':
      return {
        action: 'respond',
        decision,
        payload: {
          replace_original: true,
          text: `:hourglass: ${decision.message}: nothing was decided.`,
        },
      };
    case 'ended':
      return {
        action: 'respond',
        decision,
        payload: {
          replace_original: true,
          text: `:stop_sign: This request's message already ended (${decision.status}): nothing was decided and the tool does not run.`,
        },
      };
    case 'not-found':
      return notYours();
    default:
      return { action: 'respond', decision, payload: ephemeral(decision.message) };
  }
}

function ephemeral(text: string): SlackResponsePayload {
  return { response_type: 'ephemeral', replace_original: false, text };
}

function who(user: string | undefined): string {
  const slack = /^slack:[^:]+:(.+)$/.exec(user ?? '');
  return slack ? `<@${slack[1]}>` : (user ?? 'the user');
}

const escapeMrkdwn = escapeSlackText;
