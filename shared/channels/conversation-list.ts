import * as z from 'zod';
import { NAMES } from '../domain/common.js';
import { userActor } from '../domain/conversation.js';
import { outcomeOf } from '../domain/outcome.js';
import { type TurnStatus, worstStatus } from '../domain/progress.js';
import { ValidationError } from '../errors.js';
import { MAX_LIST_LIMIT, type UserConversationStore } from '../projections/user-conversations.js';
import type { ResourceIndex } from '../resources/resource-index.js';
import { childUrn } from '../urn.js';
import type { ConversationList, ConversationSummary } from './api-schemas.js';

/**
 * `GET /conversations` (issue 15): the caller's own conversations, newest first, from the
 * conversations-per-user projection (shared/projections/user-conversations.ts; one query on the
 * caller's partition, never a bucket listing). Each row's status is read from its messages'
 * answers — one `GET` per message, by the answer's deterministic URN — so a row is `done`,
 * `partial` or `failed` exactly when `GET /conversations/{id}` says so; an unanswered one is `running` (the
 * status view tells `pending`, `running` and `stalled` apart).
 */

/** A row of the list and the list (`z.infer` of api-schemas.ts, what the OpenAPI document is generated from). */
export type { ConversationList, ConversationSummary } from './api-schemas.js';

/** Query of `GET /conversations`: `limit` 1-100 (default 20), `after` a cursor from `next`. */
export const ListQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(MAX_LIST_LIMIT).optional(),
  after: z.string().min(1).max(400).optional(),
});

/**
 * Parses the query string parameters of `GET /conversations`.
 * @throws ValidationError for an unknown parameter, a limit outside 1-100
 */
export function parseListQuery(
  query: Record<string, string | undefined> | undefined,
): z.infer<typeof ListQuerySchema> {
  const parsed = ListQuerySchema.safeParse(query ?? {});
  if (!parsed.success) throw new ValidationError(`invalid query: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/**
 * Lists `user`'s conversations (read as that user: the policy gate sees every answer read).
 * @throws ValidationError for a malformed cursor; PolicyDeniedError
 */
export async function listConversations(
  store: UserConversationStore,
  resources: ResourceIndex,
  user: string,
  query: { limit?: number | undefined; after?: string | undefined },
): Promise<ConversationList> {
  const page = await store.list(user, {
    ...(query.limit ? { limit: query.limit } : {}),
    ...(query.after ? { after: query.after } : {}),
  });
  const conversations = await Promise.all(
    page.items.map(async (item): Promise<ConversationSummary> => {
      const actor = userActor(user, item.conversation);
      const answers = await Promise.all(
        item.messages.map((message) =>
          resources.find(
            actor,
            'common.Message',
            childUrn(item.conversation, 'common.Message', NAMES.answer(message)),
          ),
        ),
      );
      const statuses = answers.map((answer): TurnStatus => (answer ? outcomeOf(answer) : 'running'));
      return {
        id: item.id,
        urn: item.conversation,
        title: item.title,
        createdAt: item.createdAt,
        status: worstStatus(statuses) as ConversationSummary['status'],
        messages: item.messages.length,
      };
    }),
  );
  return { conversations, ...(page.next ? { next: page.next } : {}) };
}
