import { Router, UnauthorizedError } from '@aws-lambda-powertools/event-handler/http';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import * as z from 'zod';
import { startConversation } from '../domain/conversation.js';
import { ValidationError } from '../errors.js';
import { decideSlackInteraction, SlackBlockActionsSchema, SlackInteractionSchema } from './approvals.js';
import type { ChannelDeps, Channels } from './context.js';
import { header, rawBody } from './gateway.js';
import { useErrorResponses } from './http-errors.js';
import { bodyLimit, sameRoute } from './request-guards.js';
import {
  decideSlackEvent,
  SlackCommandSchema,
  SlackEventCallbackSchema,
  SlackEventsBodySchema,
  SlackUrlVerificationSchema,
  slashCommandInput,
} from './slack.js';
import { verifySlackSignature } from './verification.js';

/**
 * The Slack function's routes (`POST /slack/events`, `POST /slack/commands`,
 * `POST /slack/interactions`), behind no authorizer: every request must carry a valid Slack
 * signature over its raw body, checked before anything is parsed or stored (401 otherwise; a
 * timestamp more than 5 minutes away is refused the same way, so a captured request cannot be
 * replayed later). Within Slack's 3 seconds the handler only stores the Conversation and user
 * Message (or the user's decision on an approval request) and answers 200; the work continues
 * through events and the reply step posts the answer. A member who mentions the bot in a thread
 * whose conversation is another user's gets a short ephemeral notice instead
 * (`CLD_SLACK_THREAD_REPLIES`, slack.ts `decideSlackEvent`).
 */
export function createSlackRouter(options: {
  deps: () => Promise<ChannelDeps>;
  channels: () => Channels;
}): Router {
  const app = new Router();
  let logger: ChannelDeps['logger'] | undefined;
  useErrorResponses(app, () => logger);

  app.use(async ({ next }) => {
    logger = (await options.deps()).logger;
    await next();
  });
  // Before the signature: the route that matched runs, and no body over the limit is read.
  app.use(sameRoute());
  app.use(bodyLimit(() => options.channels().config.CLD_WEBHOOK_MAX_BODY_BYTES));
  app.use(async ({ reqCtx, next }) => {
    const deps = await options.deps();
    const event = reqCtx.event as APIGatewayProxyEventV2;
    const verification = verifySlackSignature({
      signingSecret: await options.channels().secrets.slackSigningSecret(),
      signature: header(event, 'x-slack-signature'),
      timestamp: header(event, 'x-slack-request-timestamp'),
      body: rawBody(event),
      now: deps.now(),
    });
    if (!verification.ok) throw new UnauthorizedError(verification.reason);
    await next();
  });

  app.post('/slack/events', async (reqCtx) => {
    const deps = await options.deps();
    const event = reqCtx.event as APIGatewayProxyEventV2;
    const body = parseJson(rawBody(event));
    const parsed = SlackEventsBodySchema.safeParse(body);
    if (!parsed.success) throw new ValidationError(`invalid Slack payload: ${z.prettifyError(parsed.error)}`);
    const verification = SlackUrlVerificationSchema.safeParse(body);
    if (verification.success) return { challenge: verification.data.challenge };
    const callback = SlackEventCallbackSchema.safeParse(body);
    if (!callback.success) return ack();
    const retry = header(event, 'x-slack-retry-num');
    const channels = options.channels();
    const decision = await decideSlackEvent(deps.resources, callback.data.team_id, callback.data.event, {
      threadReplies: channels.config.CLD_SLACK_THREAD_REPLIES,
    });
    if (decision.action === 'ignore') {
      deps.logger.debug('slack event ignored', { eventId: callback.data.event_id, reason: decision.reason });
      return ack();
    }
    if (decision.action === 'notice') {
      deps.logger.info('slack event refused', { eventId: callback.data.event_id, reason: decision.reason });
      // Once per Slack message: a retried delivery gets no second notice. Bounded and best effort,
      // so the 200 still comes within Slack's 3 seconds; nothing is stored either way.
      if (retry === undefined) {
        const { channel, user, threadTs, text } = decision.notice;
        try {
          const token = await channels.secrets.slackBotToken();
          await Promise.race([
            channels.slack.postEphemeral(token, { channel, user, threadTs, text }),
            new Promise((_, reject) =>
              setTimeout(() => reject(new Error('timed out')), INTERACTION_UPDATE_TIMEOUT_MS).unref(),
            ),
          ]);
        } catch (error) {
          deps.logger.warn('slack notice failed', { error: (error as Error).message });
        }
      }
      return ack();
    }
    const started = await startConversation(
      deps.resources,
      { ...decision.input, now: deps.now() },
      { openConversations: deps.openConversations },
    );
    deps.logger.info('slack message stored', {
      eventId: callback.data.event_id,
      retry,
      conversation: started.conversation,
      message: started.message,
    });
    return ack();
  });

  app.post('/slack/commands', async (reqCtx) => {
    const deps = await options.deps();
    const form = Object.fromEntries(
      new URLSearchParams(rawBody(reqCtx.event as APIGatewayProxyEventV2).toString('utf8')),
    );
    const parsed = SlackCommandSchema.safeParse(form);
    if (!parsed.success) throw new ValidationError(`invalid slash command: ${z.prettifyError(parsed.error)}`);
    const input = slashCommandInput(parsed.data, options.channels().config.CLD_SLACK_RESPONSE_URL_ORIGIN);
    if (!input.content)
      return { response_type: 'ephemeral', text: `Usage: ${parsed.data.command} <your question>` };
    const started = await startConversation(
      deps.resources,
      { ...input, now: deps.now() },
      { openConversations: deps.openConversations },
    );
    deps.logger.info('slack command stored', {
      conversation: started.conversation,
      message: started.message,
    });
    return { response_type: 'ephemeral', text: 'Working on it: the answer will be posted here.' };
  });

  // The app's Interactivity Request URL: a button of an approval notice (approvals.ts) was pressed.
  app.post('/slack/interactions', async (reqCtx) => {
    const deps = await options.deps();
    const form = new URLSearchParams(rawBody(reqCtx.event as APIGatewayProxyEventV2).toString('utf8'));
    const raw = form.get('payload');
    if (raw === null) throw new ValidationError('interaction body has no payload field');
    const parsed = SlackInteractionSchema.safeParse(parseJson(Buffer.from(raw, 'utf8')));
    if (!parsed.success)
      throw new ValidationError(`invalid Slack interaction: ${z.prettifyError(parsed.error)}`);
    const actions = SlackBlockActionsSchema.safeParse(parsed.data);
    if (!actions.success) {
      deps.logger.debug('slack interaction ignored', { type: parsed.data.type });
      return ack();
    }
    const responseUrl = actions.data.response_url;
    const allowed = new URL(options.channels().config.CLD_SLACK_RESPONSE_URL_ORIGIN).origin;
    if (new URL(responseUrl).origin !== allowed)
      throw new ValidationError(`response_url must be on ${allowed}`);
    const outcome = await decideSlackInteraction(deps.resources, actions.data, deps.now());
    if (outcome.action === 'ignore') {
      deps.logger.debug('slack interaction ignored', { reason: outcome.reason });
      return ack();
    }
    const { decision } = outcome;
    deps.logger.info('slack approval interaction', {
      outcome: decision.outcome,
      ...(decision.outcome === 'decided'
        ? { approval: decision.view.urn, status: decision.view.status, created: decision.created }
        : {}),
    });
    // The decision is stored: a failed or slow message update is logged (Slack does not retry an
    // interaction), and bounded so the 200 still comes within Slack's 3 seconds.
    try {
      await options.channels().slack.respondWith(responseUrl, outcome.payload, INTERACTION_UPDATE_TIMEOUT_MS);
    } catch (error) {
      deps.logger.warn('slack response_url update failed', { error: (error as Error).message });
    }
    return ack();
  });

  return app;
}

/**
 * How long the interaction route waits for its `response_url` update, in ms: Slack shows the
 * user an error when the 200 takes more than 3 seconds, and the decision is stored before.
 */
export const INTERACTION_UPDATE_TIMEOUT_MS = 1_500;

function ack(): Response {
  return new Response(null, { status: 200 });
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw new ValidationError('request body is not valid JSON', { cause: error });
  }
}
