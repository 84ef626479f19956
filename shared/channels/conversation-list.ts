import * as z from 'zod';
import { NAMES } from '../domain/common.js';
import { outcomeOf } from '../domain/outcome.js';
import { type TurnStatus, worstStatus } from '../domain/progress.js';
import { ValidationError } from '../errors.js';
import { MAX_LIST_LIMIT, type UserConversationStore } from '../projections/user-conversations.js';
import type { ResourceIndex } from '../resources/resource-index.js';
import { userActor } from '../runtime/conversation.js';
import { childUrn } from '../urn.js';

/**
 * `GET /conversations` (issue 15): the caller's own conversations, newest first, from the
 * conversations-per-user projection (shared/projections/user-conversations.ts; one query on the
 * caller's partition, never a bucket listing). Each row's status is read from its messages'
 * answers — one `GET` per message, by the answer's deterministic URN — so a row is `done`,
 * `partial` or `failed` exactly when `GET /conversations/{id}` says so; an unanswered one is `running` (the
 * status view tells `pending`, `running` and `stalled` apart).
 */

/** One row of the list. */
export interface ConversationSummary {
  /** Public id (`GET /conversations/{id}`). */
  id: string;
  urn: string;
  /** The first message, cut to 200 characters. */
  title: string;
  createdAt: string;
  /**
   * `running` while a message is unanswered; else `failed` when an answer failed, else `partial`
   * when an answer left parts unanswered, else `done`.
   */
  status: Extract<TurnStatus, 'running' | 'done' | 'partial' | 'failed'>;
  /** How many user messages it holds. */
  messages: number;
}

/** The body of `GET /conversations`. */
export interface ConversationList {
  conversations: ConversationSummary[];
  /** Cursor of the next (older) page: pass it as `?after=`. */
  next?: string;
}

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
