import * as z from 'zod';
import { NAMES, outputUrn, type StepOutcome } from '../domain/common.js';
import { ValidationError } from '../errors.js';
import type { ResourcePutEvent } from '../events/envelope.js';
import { typePathOf } from '../events/routing.js';
import type { Conversation, Message } from '../resources/schemas.js';
import { userActor } from '../runtime/conversation.js';
import type { Deps } from '../runtime/deps.js';
import { childUrn, parentOf, parseUrn, rootOf } from '../urn.js';
import type { Channels } from './context.js';
import { type TaskView, type TurnView, taskCounts, turnOf } from './conversations.js';
import { deliveryGuard, type Once } from './idempotency.js';
import { type SlackAddress, SlackAddressSchema } from './slack.js';

/**
 * The reply step (DESIGN.md "Flow": channel ◄─ final Message). It reacts to:
 * - a Message directly under a conversation: when it is the final answer (role `assistant`,
 *   named `answer-…` for the user Message in `inReplyTo`), it reads the Conversation and delivers
 *   per `channel.kind`: Slack → `chat.postMessage` in the thread (or the slash command's
 *   `response_url`), Teams → the webhook stored in the address, `http`/`cli` → nothing to push
 *   (clients poll `GET /conversations/{id}`);
 * - a task output: for a Slack thread whose plan has two or more tasks, one progress message in
 *   the thread, posted once and then updated (`chat.update`) with the counts derived from the
 *   stored state.
 * Every delivery runs through the exactly-once guard keyed by the reply's URN, on the Deps'
 * idempotency layer (`deps.idempotency`: the projections table in AWS, the journaled local layer
 * in the embedded default), so duplicated and retried events post once. The step reads as the
 * user actor scoped to the conversation (`userActor('function:reply', conversation)`) and writes
 * nothing.
 */

/** The policy identity of the reply function (a read-only user actor per conversation). */
export const REPLY_USER = 'function:reply';

/** Where a Teams reply goes, stored in the Conversation's `channel.address`. */
export const TeamsAddressSchema = z.looseObject({ webhook: z.url({ protocol: /^https?$/ }) });

/** Runs the reply step for one `RESOURCE_PUT`. @throws ChannelError, ConfigError, ValidationError, PolicyDeniedError */
export async function replyStep(
  event: ResourcePutEvent,
  deps: Deps,
  channels: Channels,
): Promise<StepOutcome> {
  const path = typePathOf(event.urn);
  const once = deliveryGuard(deps.idempotency);
  if (path === 'common.Conversation/common.Message')
    return onConversationMessage(event.urn, deps, channels, once);
  if (/^common\.Conversation\/common\.Message(\/plan\.Task)+\/common\.Message$/.test(path)) {
    if (event.urn !== outputUrn(parentOf(event.urn) as string))
      return ignored(event.urn, 'not a task output');
    return onTaskOutput(event.urn, deps, channels, once);
  }
  return ignored(event.urn, `not for reply: ${path}`);
}

async function onConversationMessage(
  urn: string,
  deps: Deps,
  channels: Channels,
  once: Once,
): Promise<StepOutcome> {
  const conversationUrn = rootOf(urn);
  const actor = userActor(REPLY_USER, conversationUrn);
  const answer = await deps.resources.getAs(actor, 'common.Message', urn);
  if (answer.role !== 'assistant' || !answer.inReplyTo) return ignored(urn, `role ${answer.role}`);
  if (urn !== childUrn(conversationUrn, 'common.Message', NAMES.answer(answer.inReplyTo)))
    return ignored(urn, 'not the final answer of its user message');
  const conversation = await deps.resources.getAs(actor, 'common.Conversation', conversationUrn);
  switch (conversation.channel.kind) {
    case 'slack':
      return deliverToSlack(answer, conversation, deps, channels, once);
    case 'teams': {
      const address = addressOf(TeamsAddressSchema, conversation);
      await once(answer.meta.id, async () => {
        await channels.teams.post(address.webhook, answer.content);
        return { delivered: 'teams' };
      });
      return { action: 'delivered', urn, detail: 'teams webhook' };
    }
    default:
      return ignored(urn, `channel ${conversation.channel.kind}: clients poll`);
  }
}

async function deliverToSlack(
  answer: Message,
  conversation: Conversation,
  deps: Deps,
  channels: Channels,
  once: Once,
): Promise<StepOutcome> {
  const address = addressOf(SlackAddressSchema, conversation);
  const urn = answer.meta.id;
  if (address.response_url) {
    const responseUrl = address.response_url;
    await once(urn, async () => {
      await channels.slack.respond(responseUrl, answer.content);
      return { delivered: 'response_url' };
    });
    return { action: 'delivered', urn, detail: 'slack response_url' };
  }
  const token = await channels.secrets.slackBotToken();
  // The progress message (when there is one) shows the final counts before the answer appears.
  const turn = await turnOf(deps.resources, REPLY_USER, answer.inReplyTo as string);
  if (taskCounts(turn.tasks).total >= 2) await showProgress(turn, address, token, channels, once);
  const posted = await once(urn, () =>
    channels.slack.postMessage(token, {
      channel: address.channel,
      threadTs: address.thread_ts,
      markdown: answer.content,
    }),
  );
  return { action: 'delivered', urn, detail: `slack ts ${posted.ts}` };
}

async function onTaskOutput(urn: string, deps: Deps, channels: Channels, once: Once): Promise<StepOutcome> {
  const conversationUrn = rootOf(urn);
  const conversation = await deps.resources.getAs(
    userActor(REPLY_USER, conversationUrn),
    'common.Conversation',
    conversationUrn,
  );
  if (conversation.channel.kind !== 'slack') return ignored(urn, `channel ${conversation.channel.kind}`);
  const address = addressOf(SlackAddressSchema, conversation);
  if (address.response_url) return ignored(urn, 'slash command: no thread to show progress in');
  const messageUrn = userMessageOf(urn);
  const turn = await turnOf(deps.resources, REPLY_USER, messageUrn);
  if (turn.answer) return ignored(urn, 'already answered');
  const counts = taskCounts(turn.tasks);
  if (counts.total < 2) return ignored(urn, 'single task: the answer is the only reply');
  const token = await channels.secrets.slackBotToken();
  await showProgress(turn, address, token, channels, once);
  return {
    action: 'progress',
    urn: messageUrn,
    detail: `${counts.done + counts.failed}/${counts.total} tasks`,
  };
}

/** Posts the thread's progress message once (its `ts` is the stored result), else updates it. */
async function showProgress(
  turn: TurnView,
  address: SlackAddress,
  token: string,
  channels: Channels,
  once: Once,
) {
  const text = progressText(turn);
  let posted = false;
  const { ts } = await once(`${turn.urn}#progress`, async () => {
    posted = true;
    return channels.slack.postMessage(token, { channel: address.channel, threadTs: address.thread_ts, text });
  });
  if (!posted) await channels.slack.update(token, { channel: address.channel, ts, text });
}

/**
 * The progress text of a user message: counts and one line per task (status, title, assistant).
 * Derived from stored state only, so any update order converges on the final text.
 */
export function progressText(turn: TurnView): string {
  const counts = taskCounts(turn.tasks);
  const finished = counts.done + counts.failed;
  const head =
    turn.answer || finished === counts.total
      ? `:white_check_mark: Done: ${finished} of ${counts.total} tasks${counts.failed ? ` (${counts.failed} failed)` : ''}`
      : `:hourglass_flowing_sand: Working on it: ${finished} of ${counts.total} tasks done`;
  const lines: string[] = [head];
  const walk = (tasks: readonly TaskView[], indent: string) => {
    for (const task of tasks) {
      lines.push(`${indent}${ICON[task.status]} ${task.title} (${task.assistant})`);
      walk(task.subtasks, `${indent}    `);
    }
  };
  walk(turn.tasks, '');
  return lines.join('\n');
}

const ICON: Record<TaskView['status'], string> = {
  pending: '○',
  running: '◐',
  waiting: '◔',
  done: '✓',
  failed: '✗',
};

/** The user Message a task resource belongs to (the second URN element). */
function userMessageOf(urn: string): string {
  const parts = urn.split('/');
  const message = parts.slice(0, 2).join('/');
  parseUrn(message);
  return message;
}

function addressOf<T extends z.ZodType>(schema: T, conversation: Conversation): z.infer<T> {
  const parsed = schema.safeParse(conversation.channel.address ?? {});
  if (!parsed.success)
    throw new ValidationError(
      `conversation ${conversation.meta.id} has an invalid ${conversation.channel.kind} address: ${z.prettifyError(parsed.error)}`,
    );
  return parsed.data;
}

function ignored(urn: string, detail: string): StepOutcome {
  return { action: 'ignored', urn, detail };
}
