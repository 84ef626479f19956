import * as z from 'zod';
import { NAMES, outputUrn, type StepOutcome } from '../domain/common.js';
import { userActor } from '../domain/conversation.js';
import { outcomeOf } from '../domain/outcome.js';
import type { Deps } from '../domain/ports.js';
import { ValidationError } from '../errors.js';
import type { ResourcePutEvent } from '../events/envelope.js';
import { typePathOf } from '../events/routing.js';
import type { ResourceIndex } from '../resources/resource-index.js';
import type { Conversation, Message, Task } from '../resources/schemas.js';
import { childUrn, parentOf, parseUrn, rootOf, typeOf } from '../urn.js';
import { noticeText, slackApprovalBlocks, teamsApprovalText } from './approvals.js';
import type { Channels } from './context.js';
import type { TaskSummary } from './conversations.js';
import { deliveryGuard, type Once } from './idempotency.js';
import { TEAMS_WEBHOOK_SECRET } from './secrets.js';
import { escapeSlackText, type SlackAddress, SlackAddressSchema } from './slack.js';

/**
 * The reply step (DESIGN.md "Flow": channel ◄─ final Message). It reacts to:
 * - a Message directly under a conversation: when it is the final answer (role `assistant`,
 *   named `answer-…` for the user Message in `inReplyTo`), it reads the Conversation and delivers
 *   ({@link answerText}: a partial answer says so first) per `channel.kind`: Slack → `chat.postMessage` in the thread (or the slash command's
 *   `response_url`), Teams → the webhook the address references (read from its secret at send time), `http`/`cli` → nothing to push
 *   (clients poll `GET /conversations/{id}`);
 * - a task output of depth ≤ {@link PROGRESS_DEPTH}: for a Slack thread whose plan has two or
 *   more tasks, one progress message in the thread, posted once and then updated (`chat.update`)
 *   with the counts derived from the stored keys and a line per task of depth ≤ 2
 *   ({@link progressOf}: what it reads does not grow with the tasks below).
 * - an approval request under a tool call (shared/domain/approval.ts), at any task depth: the
 *   conversation's user is asked on the channel the conversation came from — Slack: a message in
 *   the thread (or to the slash command's `response_url`) with "Approve"/"Deny" buttons
 *   (approvals.ts `slackApprovalBlocks`), Teams: a message naming the request and the replies
 *   that decide it; `http`/`cli`: nothing to push (`GET /conversations/{id}` lists `approvals`).
 * Every delivery runs through the exactly-once guard keyed by the reply's URN, on the Deps'
 * idempotency layer (`deps.idempotency`: the projections table in AWS, the journaled local layer
 * in the embedded default), so duplicated and retried events post once. The step reads as the
 * user actor scoped to the conversation (`userActor('function:reply', conversation)`) and writes
 * nothing.
 */

/** The policy identity of the reply function (a read-only user actor per conversation). */
export const REPLY_USER = 'function:reply';

/**
 * Where a Teams reply goes, stored in the Conversation's `channel.address`: the name of the
 * webhook secret (`webhookSecret: "teamsWebhookUrl"`, shared/channels/secrets.ts
 * `TEAMS_WEBHOOK_SECRET`), resolved when the reply is posted. A `webhook` URL is accepted for
 * conversations stored before the reference, and not used: the reply posts to the URL the
 * secret holds now.
 */
export const TeamsAddressSchema = z.union([
  z.looseObject({ webhookSecret: z.literal(TEAMS_WEBHOOK_SECRET) }),
  z.looseObject({ webhook: z.url({ protocol: /^https?$/ }) }),
]);

/** Posts to the Teams webhook of a conversation: the URL its secret holds at send time. */
async function postToTeams(conversation: Conversation, channels: Channels, markdown: string): Promise<void> {
  addressOf(TeamsAddressSchema, conversation);
  await channels.teams.post(await channels.secrets.teamsWebhookUrl(), markdown);
}

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
  if (/^common\.Conversation\/common\.Message(\/plan\.Task)+\/tool\.Call\/tool\.Approval$/.test(path))
    return onApprovalRequest(event.urn, deps, channels, once);
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
      await once(answer.meta.id, async () => {
        await postToTeams(conversation, channels, answerText(answer));
        return { delivered: 'teams' };
      });
      return { action: 'delivered', urn, detail: 'teams webhook' };
    }
    default:
      return ignored(urn, `channel ${conversation.channel.kind}: clients poll`);
  }
}

/** Asks the conversation's user to decide an approval request, once per request. */
async function onApprovalRequest(
  urn: string,
  deps: Deps,
  channels: Channels,
  once: Once,
): Promise<StepOutcome> {
  const conversationUrn = rootOf(urn);
  const actor = userActor(REPLY_USER, conversationUrn);
  const [request, conversation] = await Promise.all([
    deps.resources.getAs(actor, 'tool.Approval', urn),
    deps.resources.getAs(actor, 'common.Conversation', conversationUrn),
  ]);
  const key = `${urn}#notice`;
  switch (conversation.channel.kind) {
    case 'slack': {
      const address = addressOf(SlackAddressSchema, conversation);
      const text = noticeText(request);
      const blocks = slackApprovalBlocks(request);
      if (address.response_url) {
        const responseUrl = address.response_url;
        await once(key, async () => {
          await channels.slack.respondWith(responseUrl, { response_type: 'ephemeral', text, blocks });
          return { delivered: 'response_url' };
        });
        return { action: 'delivered', urn, detail: 'approval notice to slack response_url' };
      }
      const token = await channels.secrets.slackBotToken();
      const posted = await once(key, () =>
        channels.slack.postMessage(token, {
          channel: address.channel,
          threadTs: address.thread_ts,
          text,
          blocks,
        }),
      );
      return { action: 'delivered', urn, detail: `approval notice, slack ts ${posted.ts}` };
    }
    case 'teams': {
      await once(key, async () => {
        await postToTeams(conversation, channels, teamsApprovalText(request));
        return { delivered: 'teams' };
      });
      return { action: 'delivered', urn, detail: 'approval notice to teams webhook' };
    }
    default:
      return ignored(urn, `channel ${conversation.channel.kind}: clients poll approvals`);
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
      await channels.slack.respond(responseUrl, answerText(answer));
      return { delivered: 'response_url' };
    });
    return { action: 'delivered', urn, detail: 'slack response_url' };
  }
  const token = await channels.secrets.slackBotToken();
  // The progress message (when there is one) shows the final counts before the answer appears.
  const progress = await progressOf(deps.resources, answer.inReplyTo as string);
  if (progress.total >= 2) await showProgress(progress, address, token, channels, once);
  const posted = await once(urn, () =>
    channels.slack.postMessage(token, {
      channel: address.channel,
      threadTs: address.thread_ts,
      markdown: answerText(answer),
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
  // Only the outputs of the tasks the message lists update it (bounded: ≤ maxSubtasks + maxSubtasks²),
  // so a 10,000-task plan costs about a hundred updates, not one per task.
  // The output of a task of depth d has d + 1 URN elements below the message.
  if (urn.split('/').length - messageUrn.split('/').length - 1 > PROGRESS_DEPTH)
    return ignored(urn, `output below depth ${PROGRESS_DEPTH}: the progress message lists no deeper task`);
  const progress = await progressOf(deps.resources, messageUrn);
  if (progress.answered) return ignored(urn, 'already answered');
  if (progress.total < 2) return ignored(urn, 'single task: the answer is the only reply');
  const token = await channels.secrets.slackBotToken();
  await showProgress(progress, address, token, channels, once);
  return {
    action: 'progress',
    urn: messageUrn,
    detail: `${progress.finished}/${progress.total} tasks`,
  };
}

/** Depth of the tasks the progress message lists one line each (root tasks are depth 1). */
export const PROGRESS_DEPTH = 2;

/** What the progress message of a user message shows. */
export interface ProgressView {
  /** URN of the user Message. */
  urn: string;
  /** True when the final answer is stored. */
  answered: boolean;
  /** Tasks of the plan (all depths, correctives included) and how many have an output. */
  total: number;
  finished: number;
  /** Failed tasks among those listed (depth ≤ {@link PROGRESS_DEPTH}). */
  failed: number;
  /** Tasks of depth ≤ {@link PROGRESS_DEPTH}, each with its subtasks down to that depth. */
  tasks: TaskSummary[];
}

/**
 * Reads what the progress message needs and no more: one listing of the message's URNs (the
 * counts come from the keys: a task is finished when its output exists), and the tasks of depth
 * ≤ {@link PROGRESS_DEPTH} with their outputs. The cost does not grow with the tasks below.
 */
export async function progressOf(resources: ResourceIndex, messageUrn: string): Promise<ProgressView> {
  const conversation = rootOf(messageUrn);
  const actor = userActor(REPLY_USER, conversation);
  const answerUrn = childUrn(conversation, 'common.Message', NAMES.answer(messageUrn));
  const [urns, answer] = await Promise.all([
    resources.listUrns(actor, messageUrn),
    resources.find(actor, 'common.Message', answerUrn),
  ]);
  const present = new Set(urns);
  const parents = new Set(urns.map((u) => parentOf(u)));
  const tasks = urns.filter((u) => typeOf(u) === 'plan.Task');
  const finished = tasks.filter((t) => present.has(outputUrn(t))).length;
  const base = messageUrn.split('/').length;
  const shown = tasks.filter((t) => t.split('/').length - base <= PROGRESS_DEPTH);
  const read = await resources.getMany(actor, [
    ...shown,
    ...shown.map(outputUrn).filter((o) => present.has(o)),
  ]);
  const byUrn = new Map(read.map((r) => [r.meta.id, r]));
  let failed = 0;
  const view = (parent: string): TaskSummary[] =>
    shown
      .filter((t) => parentOf(t) === parent)
      .map((t) => byUrn.get(t) as Task | undefined)
      .filter((t): t is Task => t !== undefined)
      .sort((a, b) => a.round - b.round || a.meta.name.localeCompare(b.meta.name, 'en', { numeric: true }))
      .map((task) => {
        const output = byUrn.get(outputUrn(task.meta.id)) as Message | undefined;
        if (output?.error) failed++;
        const hasChildren = parents.has(task.meta.id);
        return {
          urn: task.meta.id,
          title: task.title,
          status: output
            ? outcomeOf(output)
            : task.subtasks.length > 0
              ? 'waiting'
              : hasChildren
                ? 'running'
                : 'pending',
          assistant: task.election.name,
          score: task.election.score,
          depth: task.depth,
          round: task.round,
          verdicts: [],
          subtasks: view(task.meta.id),
        };
      });
  const listed = view(messageUrn);
  return {
    urn: messageUrn,
    answered: answer !== undefined,
    total: tasks.length,
    finished,
    failed,
    tasks: listed,
  };
}

/** Posts the thread's progress message once (its `ts` is the stored result), else updates it. */
async function showProgress(
  progress: ProgressView,
  address: SlackAddress,
  token: string,
  channels: Channels,
  once: Once,
) {
  const text = progressText(progress);
  let posted = false;
  const { ts } = await once(`${progress.urn}#progress`, async () => {
    posted = true;
    return channels.slack.postMessage(token, { channel: address.channel, threadTs: address.thread_ts, text });
  });
  if (!posted) await channels.slack.update(token, { channel: address.channel, ts, text });
}

/**
 * The progress text of a user message: counts over every task, and one line per task of depth
 * ≤ {@link PROGRESS_DEPTH} (status, title, assistant; titles and names Slack-escaped, as they come
 * from what the user typed). Derived from stored state only, so any
 * update order converges on the final text.
 */
export function progressText(progress: ProgressView): string {
  const head =
    progress.answered || progress.finished === progress.total
      ? `:white_check_mark: Done: ${progress.finished} of ${progress.total} tasks${progress.failed ? ` (${progress.failed} failed)` : ''}`
      : `:hourglass_flowing_sand: Working on it: ${progress.finished} of ${progress.total} tasks done`;
  const lines: string[] = [head];
  const walk = (tasks: readonly TaskSummary[], indent: string) => {
    for (const task of tasks) {
      lines.push(`${indent}${ICON[task.status]} ${escapeSlackText(`${task.title} (${task.assistant})`)}`);
      walk(task.subtasks, `${indent}    `);
    }
  };
  walk(progress.tasks, '');
  return lines.join('\n');
}

const ICON: Record<TaskSummary['status'], string> = {
  pending: '○',
  running: '◐',
  waiting: '◔',
  done: '✓',
  partial: '◑',
  failed: '✗',
};

/**
 * The text a channel posts for a final answer: its content, led for a partial answer by one line
 * saying so and naming the parts not answered (the content's "Not answered:" section says why).
 * Markdown, as Slack's `markdown_text` and Teams webhooks take it.
 */
export function answerText(answer: Pick<Message, 'content' | 'error' | 'unanswered'>): string {
  if (outcomeOf(answer) !== 'partial') return answer.content;
  const titles = (answer.unanswered ?? []).map((p) => p.title).join('; ');
  return `⚠️ **Partial answer**: not answered: ${titles}.\n\n${answer.content}`;
}

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
