import type { KnownBlock, WebClient } from '@slack/web-api';
import { ChannelError } from '../errors.js';
import { escapeSlackText } from './slack.js';

/**
 * Delivery adapters: what leaves the system when an answer is ready. Slack through its
 * maintained Web API client (`@slack/web-api` `WebClient`, base URL configurable so tests point it
 * at a local receiver); slash-command `response_url`s and Teams webhooks with `fetch`. Every call
 * has a timeout and throws on failure, so the reply step fails and the event is retried; the
 * exactly-once guard around each call (idempotency.ts) keeps retries from posting twice.
 */

/** Slack's limit for `markdown_text` in `chat.postMessage`, in characters. */
export const SLACK_MARKDOWN_LIMIT = 12_000;

/** Text kept of an answer posted to a Teams webhook, in characters (Teams caps a message at ~28 KB). */
export const TEAMS_TEXT_LIMIT = 20_000;

/**
 * Retries of one Slack Web API call by the client itself (so a call makes up to 1 + this many
 * attempts, each bounded by `CLD_DELIVERY_TIMEOUT_MS`; the reply function's Lambda timeout is
 * sized from it in infra/lib/functions.ts).
 */
export const SLACK_CLIENT_RETRIES = 2;

/** Slack delivery. */
export interface SlackDelivery {
  /**
   * `chat.postMessage` (in a thread when `threadTs` is given). Markdown goes as `markdown_text`,
   * escaped here (`&`, `<`, `>`: slack.ts `escapeSlackText`), so an answer never mentions or links
   * on its own; `text` and `blocks` are mrkdwn the caller composed and escaped. With `blocks`
   * (Block Kit), `text` is the notification's fallback.
   */
  postMessage(
    token: string,
    message: {
      channel: string;
      threadTs?: string | undefined;
      markdown?: string;
      text?: string;
      blocks?: KnownBlock[];
    },
  ): Promise<{ ts: string }>;
  /**
   * `chat.postEphemeral`: mrkdwn `text` (composed and escaped by the caller) only `user` sees, in
   * the thread when `threadTs` is given.
   */
  postEphemeral(
    token: string,
    message: { channel: string; user: string; threadTs?: string | undefined; text: string },
  ): Promise<void>;
  /** `chat.update` of a message the bot posted (replaces its text; idempotent by nature). */
  update(token: string, message: { channel: string; ts: string; text: string }): Promise<void>;
  /** POSTs Markdown (escaped, then as mrkdwn) to a slash command's `response_url` (visible to the channel). */
  respond(responseUrl: string, text: string): Promise<void>;
  /**
   * POSTs a message payload to a `response_url` (a slash command's or an interaction's,
   * https://api.slack.com/interactivity/handling#message_responses): `replace_original` to
   * rewrite the message a button was on, `response_type: 'ephemeral'` to tell only the clicker.
   * `timeoutMs` (default `CLD_DELIVERY_TIMEOUT_MS`) bounds the call when an answer is due soon.
   */
  respondWith(responseUrl: string, payload: SlackResponsePayload, timeoutMs?: number): Promise<void>;
}

/** A `response_url` message payload (https://api.slack.com/interactivity/handling#message_responses). */
export interface SlackResponsePayload {
  text: string;
  blocks?: KnownBlock[];
  response_type?: 'ephemeral' | 'in_channel';
  replace_original?: boolean;
  thread_ts?: string;
}

/** Teams delivery. */
export interface TeamsDelivery {
  /** POSTs a message with an Adaptive Card to an incoming-webhook or Workflows URL. */
  post(webhookUrl: string, markdown: string): Promise<void>;
}

/** The Slack adapter. @param apiUrl the Web API base URL (`https://slack.com/api/`) */
export function createSlackDelivery(options: { apiUrl: string; timeoutMs: number }): SlackDelivery {
  const clients = new Map<string, WebClient>();
  // The Web API client loads at the first call, not at the function's import (≈ 5 ms of the
  // cold import of every channel function; issue 25 cold starts).
  const client = async (token: string) => {
    let found = clients.get(token);
    if (!found) {
      const { LogLevel, WebClient } = await import('@slack/web-api');
      found = new WebClient(token, {
        slackApiUrl: options.apiUrl,
        timeout: options.timeoutMs,
        retryConfig: { retries: SLACK_CLIENT_RETRIES, factor: 2, minTimeout: 200, maxTimeout: 2_000 },
        rejectRateLimitedCalls: true,
        logLevel: LogLevel.ERROR,
      });
      clients.set(token, found);
    }
    return found;
  };
  return {
    async postMessage(token, message) {
      const thread = message.threadTs ? { thread_ts: message.threadTs } : {};
      const result = await slackCall('chat.postMessage', async () =>
        (await client(token)).chat.postMessage(
          message.blocks !== undefined
            ? {
                channel: message.channel,
                text: message.text ?? '',
                blocks: message.blocks,
                unfurl_links: false,
                ...thread,
              }
            : message.markdown !== undefined
              ? {
                  channel: message.channel,
                  markdown_text: truncate(escapeSlackText(message.markdown), SLACK_MARKDOWN_LIMIT),
                  ...thread,
                }
              : { channel: message.channel, text: message.text ?? '', unfurl_links: false, ...thread },
        ),
      );
      if (!result.ts) throw new ChannelError('chat.postMessage answered without a ts');
      return { ts: result.ts };
    },
    async postEphemeral(token, message) {
      await slackCall('chat.postEphemeral', async () =>
        (await client(token)).chat.postEphemeral({
          channel: message.channel,
          user: message.user,
          text: message.text,
          ...(message.threadTs ? { thread_ts: message.threadTs } : {}),
        }),
      );
    },
    async update(token, message) {
      await slackCall('chat.update', async () =>
        (await client(token)).chat.update({ channel: message.channel, ts: message.ts, text: message.text }),
      );
    },
    async respond(responseUrl, text) {
      await postJson(
        responseUrl,
        { response_type: 'in_channel', text: toMrkdwn(escapeSlackText(text)) },
        options.timeoutMs,
      );
    },
    async respondWith(responseUrl, payload, timeoutMs) {
      await postJson(responseUrl, payload, Math.min(timeoutMs ?? options.timeoutMs, options.timeoutMs));
    },
  };
}

/** The Teams adapter: a message with one Adaptive Card (the format Workflows and incoming webhooks accept). */
export function createTeamsDelivery(options: { timeoutMs: number }): TeamsDelivery {
  return {
    async post(webhookUrl, markdown) {
      await postJson(webhookUrl, adaptiveCardMessage(markdown), options.timeoutMs);
    },
  };
}

/**
 * The webhook body: a `message` whose attachment is an Adaptive Card 1.4 with the text as one
 * wrapped TextBlock (Adaptive Cards render a Markdown subset without headings, so `### Title`
 * lines become bold).
 */
export function adaptiveCardMessage(markdown: string): Record<string, unknown> {
  const text = truncate(markdown.replace(/^#{1,6}\s+(.+)$/gm, '**$1**'), TEAMS_TEXT_LIMIT);
  return {
    type: 'message',
    attachments: [
      {
        contentType: 'application/vnd.microsoft.card.adaptive',
        contentUrl: null,
        content: {
          $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
          type: 'AdaptiveCard',
          version: '1.4',
          body: [{ type: 'TextBlock', text, wrap: true }],
        },
      },
    ],
  };
}

/** Slack `mrkdwn` from Markdown: headings and `**bold**` become `*bold*`. */
export function toMrkdwn(markdown: string): string {
  return markdown.replace(/^#{1,6}\s+(.+)$/gm, '*$1*').replace(/\*\*(.+?)\*\*/g, '*$1*');
}

function truncate(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 20).trimEnd()}\n… (truncated)`;
}

/** Runs a Web API call, turning its failure (platform error, HTTP error, timeout) into a ChannelError. */
async function slackCall<T>(method: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const code = (error as { code?: unknown; data?: { error?: unknown } }).data?.error;
    throw new ChannelError(`Slack ${method} failed${code ? `: ${String(code)}` : ''}`, {
      cause: error,
      details: { method },
    });
  }
}

/** POSTs JSON; a network error, timeout or non-2xx answer is a ChannelError naming the origin only. */
async function postJson(url: string, body: unknown, timeoutMs: number): Promise<void> {
  const origin = new URL(url).origin;
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.arrayBuffer();
  } catch (error) {
    throw new ChannelError(`POST to ${origin} failed`, { cause: error, details: { origin } });
  }
  if (!response.ok)
    throw new ChannelError(`POST to ${origin} answered ${response.status}`, {
      details: { origin, status: response.status },
    });
}
