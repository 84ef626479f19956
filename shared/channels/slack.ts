import * as z from 'zod';
import { ValidationError } from '../errors.js';
import type { ResourceIndex } from '../resources/resource-index.js';
import { type StartConversationInput, userActor } from '../runtime/conversation.js';
import { childUrn } from '../urn.js';

/**
 * Slack payloads (Events API and slash commands) and how they become conversations. Payloads
 * are validated with zod (loose: Slack adds fields over time) after the signature was verified.
 * Names are deterministic, so Slack's retries (`X-Slack-Retry-Num`) and duplicate deliveries
 * write the same URNs and create nothing twice:
 * - conversation: team + channel + thread (`thread_ts`, or the message's own `ts` when it starts
 *   a thread);
 * - message: the Slack message `ts` (unique in its channel). The issue suggested the `event_id`;
 *   the `ts` dedupes the same and more: one Slack message that arrives both as `app_mention` and
 *   as a thread `message` event (two event ids) is still one user Message.
 */

/** `url_verification` (https://api.slack.com/events/url_verification). */
export const SlackUrlVerificationSchema = z.looseObject({
  type: z.literal('url_verification'),
  challenge: z.string().min(1).max(500),
});

/** The inner event of an `event_callback` we act on (`app_mention`, `message`). */
export const SlackMessageEventSchema = z.looseObject({
  type: z.enum(['app_mention', 'message']),
  channel: z.string().min(1).max(64),
  user: z.string().min(1).max(64).optional(),
  text: z.string().max(40_000).default(''),
  ts: z.string().regex(/^\d+\.\d+$/),
  thread_ts: z
    .string()
    .regex(/^\d+\.\d+$/)
    .optional(),
  channel_type: z.string().optional(),
  subtype: z.string().optional(),
  bot_id: z.string().optional(),
});
/** A validated `app_mention` or `message` event. */
export type SlackMessageEvent = z.infer<typeof SlackMessageEventSchema>;

/** `event_callback` (https://api.slack.com/apis/events-api#callback-field). */
export const SlackEventCallbackSchema = z.looseObject({
  type: z.literal('event_callback'),
  team_id: z.string().min(1).max(64),
  event_id: z.string().min(1).max(128),
  event: z.looseObject({ type: z.string() }),
});

/** Any Events API body: verification, a callback, or something we acknowledge and ignore. */
export const SlackEventsBodySchema = z.union([
  SlackUrlVerificationSchema,
  SlackEventCallbackSchema,
  z.looseObject({ type: z.string() }),
]);

/** A slash command (form-encoded; https://api.slack.com/interactivity/slash-commands). */
export const SlackCommandSchema = z.looseObject({
  team_id: z.string().min(1).max(64),
  channel_id: z.string().min(1).max(64),
  user_id: z.string().min(1).max(64),
  command: z.string().min(1).max(64),
  text: z.string().max(4_000).default(''),
  response_url: z.url({ protocol: /^https?$/ }),
  trigger_id: z.string().min(1).max(256),
});
/** A validated slash command. */
export type SlackCommand = z.infer<typeof SlackCommandSchema>;

/** Where a Slack reply goes, stored in the Conversation's `channel.address`. */
export const SlackAddressSchema = z.looseObject({
  team: z.string().min(1),
  channel: z.string().min(1),
  /** Thread to reply in (Events API). */
  thread_ts: z.string().optional(),
  /** Slash commands: where to post the answer instead of the thread. */
  response_url: z.url().optional(),
});
/** A validated Slack reply address. */
export type SlackAddress = z.infer<typeof SlackAddressSchema>;

/** The policy user of a Slack user. */
export function slackUser(team: string, user: string): string {
  return `slack:${team}:${user}`;
}

/** Conversation name of a Slack thread. */
export function slackThreadName(team: string, channel: string, threadTs: string): string {
  return `slack:${team}:${channel}:${threadTs}`;
}

/**
 * Escapes text for any Slack text field (Slack "Formatting message text", section "Escaping
 * text"): `&` → `&amp;`, `<` → `&lt;`, `>` → `&gt;`, and nothing else. Slack parses `<…>` as a
 * mention, special mention (`<!channel>`) or link (`<https://…|label>`), so any text that did not
 * come from our own code (what a user typed, task titles, model output) is escaped before it is
 * posted, or the bot would ping or link on its author's behalf.
 */
export function escapeSlackText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Removes user/channel mentions (`<@U123>`, `<#C1|name>`) and decodes Slack's three escapes. */
export function slackText(text: string): string {
  return text
    .replace(/<[@#!][^>]*>/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ')
    .trim();
}

/** What to do with one Events API callback. */
export type SlackEventDecision =
  | { action: 'start'; input: StartConversationInput; continues: boolean }
  | { action: 'ignore'; reason: string };

/**
 * Decides what an event means. `app_mention` starts (or continues) the thread's conversation; a
 * `message` in a DM does too; a `message` in a thread continues the thread's conversation only
 * when one exists (the bot was mentioned in it before). Bot messages (our own replies included),
 * edits and other subtypes, and empty texts are ignored.
 * @throws ValidationError when the event is malformed
 */
export async function decideSlackEvent(
  resources: ResourceIndex,
  teamId: string,
  rawEvent: unknown,
): Promise<SlackEventDecision> {
  const type = (rawEvent as { type?: unknown } | null)?.type;
  if (type !== 'app_mention' && type !== 'message')
    return { action: 'ignore', reason: `event ${String(type)}` };
  const parsed = SlackMessageEventSchema.safeParse(rawEvent);
  if (!parsed.success) throw new ValidationError(`invalid Slack event: ${z.prettifyError(parsed.error)}`);
  const event = parsed.data;
  if (event.bot_id || event.subtype)
    return { action: 'ignore', reason: `bot message or subtype ${event.subtype}` };
  if (!event.user) return { action: 'ignore', reason: 'no user' };
  const content = slackText(event.text);
  if (!content) return { action: 'ignore', reason: 'empty text' };
  const threadTs = event.thread_ts ?? event.ts;
  const conversationName = slackThreadName(teamId, event.channel, threadTs);
  const user = slackUser(teamId, event.user);
  const inThread = event.thread_ts !== undefined && event.thread_ts !== event.ts;
  let continues = false;
  if (event.type === 'message' && event.channel_type !== 'im') {
    if (!inThread) return { action: 'ignore', reason: 'channel message without a mention' };
    const urn = childUrn(undefined, 'common.Conversation', conversationName);
    const existing = await resources.find(userActor(user, urn), 'common.Conversation', urn);
    if (!existing) return { action: 'ignore', reason: 'thread without a conversation' };
    continues = true;
  }
  return {
    action: 'start',
    continues,
    input: {
      user,
      channel: { kind: 'slack', address: { team: teamId, channel: event.channel, thread_ts: threadTs } },
      content,
      conversationName,
      messageName: `slack-${event.ts}`,
    },
  };
}

/**
 * The conversation a slash command starts (one per invocation: `trigger_id`), replying via its
 * `response_url`.
 * @throws ValidationError when `response_url` does not have the allowed origin
 */
export function slashCommandInput(command: SlackCommand, responseUrlOrigin: string): StartConversationInput {
  if (new URL(command.response_url).origin !== new URL(responseUrlOrigin).origin)
    throw new ValidationError(`response_url must be on ${new URL(responseUrlOrigin).origin}`);
  return {
    user: slackUser(command.team_id, command.user_id),
    channel: {
      kind: 'slack',
      address: { team: command.team_id, channel: command.channel_id, response_url: command.response_url },
    },
    content: slackText(command.text),
    conversationName: `slack:${command.team_id}:${command.channel_id}:command:${command.trigger_id}`,
    messageName: 'message-1',
  };
}
