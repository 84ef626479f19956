import { ValidationError } from '../errors.js';
import type { Actor } from '../policy/port.js';
import type { OpenConversationStore } from '../projections/open-conversations.js';
import { withMeta } from '../resources/meta.js';
import type { ResourceIndex } from '../resources/resource-index.js';
import type { Conversation, Message } from '../resources/schemas.js';
import { childUrn } from '../urn.js';
import { NAMES } from './common.js';

/** What a channel knows when a user writes. */
export interface StartConversationInput {
  /** The caller's identity (the policy's user). */
  user: string;
  channel: Conversation['channel'];
  /** The user's message text. */
  content: string;
  /** Conversation name (a channel thread id, a UUID...); same name → same conversation URN. */
  conversationName: string;
  /** Message name within the conversation (default `message-1`). */
  messageName?: string;
  /** SHA-256 (hex) of the request that stored the message, kept on it (Idempotency-Key requests). */
  requestHash?: string;
  now?: Date;
}

/** URNs of what was stored and where the answer will appear. */
export interface StartedConversation {
  conversation: string;
  message: string;
  /** URN of the final assistant Message once the plan step writes it. */
  answer: string;
  /**
   * The user Message as stored: this call's, or the earlier one when the message existed
   * (`created: false`), whose content and `requestHash` may differ from this call's.
   */
  stored: Message;
  /** False when the message existed already (a repeated call: nothing new was written). */
  created: boolean;
  /** Creation time of the Conversation as stored (ISO 8601): the first call's, on a repeat too. */
  conversationCreatedAt: string;
}

/** The policy actor of a channel caller in a conversation. */
export function userActor(user: string, conversation: string): Actor {
  return { kind: 'user', id: user, conversation };
}

/**
 * Stores a Conversation and the user's Message (DESIGN.md "Flow": a channel puts Conversation +
 * user Message, which emits the `RESOURCE_PUT` that starts planning). Idempotent: the same
 * names give the same URNs and a repeated call writes nothing new. With `openConversations`, the
 * conversation is opened there (shared/projections/open-conversations.ts) *before* the Message is
 * written, so a process that dies right after the write leaves it where resume and the sweeper
 * look; an item opened for a Message never written is closed by them.
 * @throws ValidationError for empty content, PolicyDeniedError
 */
export async function startConversation(
  resources: ResourceIndex,
  input: StartConversationInput,
  options: { openConversations?: OpenConversationStore | undefined } = {},
): Promise<StartedConversation> {
  const now = input.now ?? new Date();
  const meta = withMeta(
    { type: 'common.Conversation', name: input.conversationName, purpose: input.content.slice(0, 200) },
    now,
  );
  const actor = userActor(input.user, meta.id);
  const conversation: Conversation = { meta, actor: input.user, channel: input.channel };
  const storedConversation = await resources.put(actor, conversation);
  await options.openConversations?.touch(meta.id, now);
  const message: Message = {
    meta: withMeta({ type: 'common.Message', name: input.messageName ?? 'message-1', parent: meta.id }, now),
    role: 'user',
    content: input.content,
    ...(input.requestHash ? { requestHash: input.requestHash } : {}),
  };
  const outcome = await resources.put(actor, message);
  return {
    stored: outcome.resource,
    created: outcome.created,
    conversationCreatedAt: storedConversation.resource.meta.createdAt ?? now.toISOString(),
    conversation: meta.id,
    message: message.meta.id,
    answer: childUrn(meta.id, 'common.Message', NAMES.answer(message.meta.id)),
  };
}

/** Most user messages {@link addUserMessage} looks past for a free name. */
export const MAX_MESSAGES_PER_CONVERSATION = 1_000;

/**
 * Adds the user's message to a conversation (created when new) under the first free name of
 * `message-1`, `message-2`, …: each name is tried with a create-only put, so two callers adding
 * to one conversation at once get two messages, each planned and answered on its own. With
 * `openConversations`, the conversation is opened there first (as {@link startConversation}).
 * @returns the URNs as {@link startConversation} does, with the message name used
 * @throws ValidationError when the conversation already holds
 *   {@link MAX_MESSAGES_PER_CONVERSATION} messages; PolicyDeniedError
 */
export async function addUserMessage(
  resources: ResourceIndex,
  input: Omit<StartConversationInput, 'messageName'>,
  options: { openConversations?: OpenConversationStore | undefined } = {},
): Promise<StartedConversation & { messageName: string }> {
  const now = input.now ?? new Date();
  for (let n = 1; n <= MAX_MESSAGES_PER_CONVERSATION; n++) {
    const messageName = `message-${n}`;
    const started = await startConversation(resources, { ...input, messageName, now }, options);
    if (started.created) return { ...started, messageName };
  }
  throw new ValidationError(
    `conversation ${childUrn(undefined, 'common.Conversation', input.conversationName)} already holds ${MAX_MESSAGES_PER_CONVERSATION} messages; start a new one`,
  );
}
