import * as z from 'zod';
import { type StartConversationInput, userActor } from '../domain/conversation.js';
import { ValidationError } from '../errors.js';
import type { ResourceIndex } from '../resources/resource-index.js';
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
  | { action: 'ignore'; reason: string }
  | {
      /** Another member mentioned the bot in a thread they do not own: tell them, store nothing. */
      action: 'notice';
      reason: string;
      notice: { channel: string; threadTs: string; user: string; text: string };
    };

/** Who may continue a thread's conversation (`CLD_SLACK_THREAD_REPLIES`). */
export type SlackThreadReplies = 'owner' | 'members';

/** Name of a member's own conversation in a thread another user's conversation started. */
export function slackMemberThreadName(team: string, channel: string, threadTs: string, user: string): string {
  return `${slackThreadName(team, channel, threadTs)}:member:${user}`;
}

/** The notice a member gets who mentions the bot in a thread whose conversation is another user's. */
export function memberNoticeText(owner: string): string {
  const id = /^slack:[^:]+:(.+)$/.exec(owner)?.[1];
  return `Only ${id ? `<@${id}>` : 'the person who started it'} can continue this conversation with me. Mention me in a new message to start your own.`;
}

/**
 * Decides what an event means. `app_mention` starts (or continues) the thread's conversation; a
 * `message` in a DM does too; a `message` in a thread continues the thread's conversation only
 * when one exists (the bot was mentioned in it before). Bot messages (our own replies included),
 * edits and other subtypes, and empty texts are ignored.
 *
 * A thread's conversation belongs to the user who started it (its `actor`). Another member's
 * message in that thread is decided by `threadReplies`: `owner` (default) stores nothing — a
 * mention of the bot gets a `notice`, a plain reply is ignored; `members` starts or continues the
 * member's own conversation in the thread ({@link slackMemberThreadName}), so what they ask is
 * theirs: recorded as theirs, answered in the thread, and any approval it needs is asked of them,
 * never of the owner.
 * @throws ValidationError when the event is malformed
 */
export async function decideSlackEvent(
  resources: ResourceIndex,
  teamId: string,
  rawEvent: unknown,
  options: { threadReplies?: SlackThreadReplies } = {},
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
  let conversationName = slackThreadName(teamId, event.channel, threadTs);
  const user = slackUser(teamId, event.user);
  const inThread = event.thread_ts !== undefined && event.thread_ts !== event.ts;
  const mention = event.type === 'app_mention';
  let continues = false;
  if (!mention && event.channel_type !== 'im' && !inThread)
    return { action: 'ignore', reason: 'channel message without a mention' };
  if (inThread && event.channel_type !== 'im') {
    const urn = childUrn(undefined, 'common.Conversation', conversationName);
    const existing = await resources.find(userActor(user, urn), 'common.Conversation', urn);
    if (existing && existing.actor !== user) {
      if ((options.threadReplies ?? 'owner') === 'owner')
        return mention
          ? {
              action: 'notice',
              reason: 'a mention in a thread whose conversation is another user’s',
              notice: {
                channel: event.channel,
                threadTs,
                user: event.user,
                text: memberNoticeText(existing.actor),
              },
            }
          : { action: 'ignore', reason: 'a reply in a thread whose conversation is another user’s' };
      conversationName = slackMemberThreadName(teamId, event.channel, threadTs, event.user);
    } else if (!existing && !mention) return { action: 'ignore', reason: 'thread without a conversation' };
    continues = existing?.actor === user;
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
