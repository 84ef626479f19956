import { Router, UnauthorizedError } from '@aws-lambda-powertools/event-handler/http';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import * as z from 'zod';
import { type StartConversationInput, startConversation } from '../domain/conversation.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { childUrn } from '../urn.js';
import { type ChatDecision, decideFromChat, parseTypedDecision, type TypedDecision } from './approvals.js';
import type { ChannelDeps, Channels } from './context.js';
import { ownConversation } from './conversations.js';
import { header, rawBody } from './gateway.js';
import { useErrorResponses } from './http-errors.js';
import { bodyLimit, sameRoute } from './request-guards.js';
import { TEAMS_WEBHOOK_SECRET } from './secrets.js';
import { verifyTeamsSignature } from './verification.js';

/**
 * Teams outgoing webhook (https://learn.microsoft.com/microsoftteams/platform/webhooks-and-connectors/how-to/add-outgoing-webhook):
 * Teams POSTs a Bot Framework `message` Activity when someone @mentions the webhook, signed with
 * `Authorization: HMAC <base64>`, and waits 5 seconds for a synchronous answer. The handler
 * verifies the HMAC, stores the Conversation and user Message, and answers at once with an
 * acknowledgement; the reply step later posts the answer to the incoming-webhook/Workflows URL
 * that the Conversation's address references ({@link TEAMS_WEBHOOK_SECRET}), read at send
 * time. A message `approve <id> [reason]` or `deny <id> [reason]` (approvals.ts `parseTypedDecision`) decides the approval request `<id>` of the conversation
 * it is sent in, as its user, and is answered at once with the outcome; it stores no Message.
 */

/** The fields of the Activity we use (validated loosely: Teams sends many more). */
export const TeamsActivitySchema = z.looseObject({
  type: z.literal('message'),
  id: z.string().min(1).max(256),
  text: z.string().max(28_000).default(''),
  from: z.looseObject({ id: z.string().min(1).max(256), aadObjectId: z.string().max(64).optional() }),
  conversation: z.looseObject({ id: z.string().min(1).max(512) }),
});
/** A validated Teams message Activity. */
export type TeamsActivity = z.infer<typeof TeamsActivitySchema>;

/** The policy user of a Teams user (Entra object id when Teams sends it). */
export function teamsUser(activity: TeamsActivity): string {
  return `teams:${activity.from.aadObjectId ?? activity.from.id}`;
}

/** Text of a Teams message without `<at>` mentions, HTML tags and the common entities. */
export function teamsText(text: string): string {
  return text
    .replace(/<at>.*?<\/at>/gis, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&nbsp;/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * The conversation an Activity starts or continues: one per Teams conversation (a channel thread
 * is its own conversation id), one user Message per Activity id, so a redelivery writes nothing new.
 * Its address holds a reference to the webhook secret and the Teams conversation id, never the URL.
 */
export function teamsConversationInput(activity: TeamsActivity): StartConversationInput {
  return {
    user: teamsUser(activity),
    channel: {
      kind: 'teams',
      address: { webhookSecret: TEAMS_WEBHOOK_SECRET, conversation: activity.conversation.id },
    },
    content: teamsText(activity.text),
    conversationName: `teams:${activity.conversation.id}`,
    messageName: `teams-${activity.id}`,
  };
}

/** The Teams function's route (`POST /teams/messages`). */
export function createTeamsRouter(options: {
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
  // Before the HMAC: the route that matched runs, and no body over the limit is read.
  app.use(sameRoute());
  app.use(bodyLimit(() => options.channels().config.CLD_WEBHOOK_MAX_BODY_BYTES));

  app.post('/teams/messages', async (reqCtx) => {
    const deps = await options.deps();
    const channels = options.channels();
    const event = reqCtx.event as APIGatewayProxyEventV2;
    const body = rawBody(event);
    const verification = verifyTeamsSignature({
      secret: await channels.secrets.teamsSecret(),
      authorization: header(event, 'authorization'),
      body,
    });
    if (!verification.ok) throw new UnauthorizedError(verification.reason);
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch (error) {
      throw new ValidationError('request body is not valid JSON', { cause: error });
    }
    const parsed = TeamsActivitySchema.safeParse(json);
    if (!parsed.success)
      throw new ValidationError(`invalid Teams activity: ${z.prettifyError(parsed.error)}`);
    const input = teamsConversationInput(parsed.data);
    if (!input.content) return { type: 'message', text: 'Ask me a question after the mention.' };
    const typed = parseTypedDecision(input.content);
    if (typed) {
      const decided = await decideTyped(deps, input, typed);
      deps.logger.info('teams approval reply', {
        outcome: decided.outcome,
        ...(decided.outcome === 'decided' ? { approval: decided.view.urn, created: decided.created } : {}),
      });
      return { type: 'message', text: typedDecisionText(typed, decided) };
    }
    const started = await startConversation(
      deps.resources,
      { ...input, now: deps.now() },
      { openConversations: deps.openConversations },
    );
    deps.logger.info('teams message stored', {
      conversation: started.conversation,
      message: started.message,
    });
    return { type: 'message', text: 'Working on it: the answer will be posted to this channel.' };
  });

  return app;
}

/**
 * Decides the request a typed reply names, in the Teams conversation it was sent in, as its
 * sender (who must be the conversation's user: anyone else gets `not-found`, nothing stored).
 */
async function decideTyped(
  deps: ChannelDeps,
  input: StartConversationInput,
  typed: TypedDecision,
): Promise<ChatDecision> {
  const urn = childUrn(undefined, 'common.Conversation', input.conversationName as string);
  let conversation: Awaited<ReturnType<typeof ownConversation>>;
  try {
    conversation = await ownConversation(deps.resources, input.user, urn);
  } catch (error) {
    if (error instanceof NotFoundError) return { outcome: 'not-found', message: '' };
    throw error;
  }
  return decideFromChat(deps.resources, {
    user: input.user,
    channel: 'teams',
    conversation,
    request: typed.id,
    decision: typed.decision,
    reason: typed.reason,
    now: deps.now(),
  });
}

/** The synchronous answer to a typed decision. */
export function typedDecisionText(typed: TypedDecision, decided: ChatDecision): string {
  switch (decided.outcome) {
    case 'decided':
      return decided.view.status === 'approved'
        ? `Approved request ${typed.id}: the call of ${decided.view.tool} runs now.`
        : `Denied request ${typed.id}: the call of ${decided.view.tool} will not run.`;
    case 'not-found':
      return `No approval request ${typed.id} of yours in this conversation: reply in the thread of your question.`;
    case 'expired':
      return `Request ${typed.id} expired before a decision: nothing was decided.`;
    case 'ended':
      return `Request ${typed.id} belongs to a message that already ended (${decided.status}): nothing was decided and the tool does not run.`;
    default:
      return `Request ${typed.id} was already decided otherwise: ${decided.message}`;
  }
}
