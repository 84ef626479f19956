import { join } from 'node:path';
import * as z from 'zod';
import { ValidationError } from '../errors.js';
import { lazyStrictObject } from '../resources/lazy-schema.js';
import { JsonlJournal } from './journal.js';

/**
 * The "conversations per user" projection (issue 15): what `GET /conversations` lists — the
 * caller's own conversations, newest first — without listing the bucket. The HTTP channel writes
 * it when it stores a user Message (a new conversation or a follow-up); the list's statuses are
 * then read from the conversations' answers (shared/channels/conversation-list.ts), never kept
 * here, so nothing in this projection can drift from the event log but the set of conversations.
 *
 * Item on the projections table (shared/projections/port.ts has the others):
 *
 * | `pk` | `sk` | attributes |
 * |---|---|---|
 * | `user#<user>` | `<createdAt ISO 8601>#<conversation URN>` | `id` (S): public id; `title` (S): the first message, ≤ 200 chars; `createdAt` (S); `messages` (SS): URNs of its user Messages |
 *
 * The sort key starts with the creation time, so one `Query` on the user's partition in reverse
 * order pages newest first; a retried write names the same key (the conversation's stored
 * creation time) and adds to a set, so it changes nothing. Like every projection it can be
 * rebuilt from the resources (each Conversation's `actor` and its user Messages).
 */

/** Partition key of a user's items. */
export function userPartition(user: string): string {
  return `user#${user}`;
}

/** Most items one {@link UserConversationStore.list} call returns. */
export const MAX_LIST_LIMIT = 100;

/** Longest title kept: the first message's first 200 characters. */
export const MAX_TITLE_CHARS = 200;

/** One conversation of a user. */
export interface UserConversation {
  /** URN of the conversation. */
  conversation: string;
  /** Public id (the `{id}` of `GET /conversations/{id}`). */
  id: string;
  /** Its first message, cut to 200 characters. */
  title: string;
  /** Creation time of the conversation (ISO 8601). */
  createdAt: string;
  /** URNs of its user Messages, sorted. */
  messages: string[];
}

/** A page of a user's conversations, newest first. */
export interface UserConversationPage {
  items: UserConversation[];
  /** Opaque cursor of the next (older) page; absent on the last page. */
  next?: string;
}

/** The port (DynamoDB in AWS, a journaled local store in the embedded default). */
export interface UserConversationStore {
  /**
   * Records that `user` stored `message` in `conversation` (creating the item on first use; the
   * id, title and creation time of the first record stay). Idempotent.
   * @throws ValidationError for a malformed user, conversation URN, time or message URN
   */
  record(user: string, conversation: Omit<UserConversation, 'messages'>, message: string): Promise<void>;
  /**
   * The user's conversations, newest first, at most `limit` (1-{@link MAX_LIST_LIMIT}, default 20),
   * after the cursor `after` (from a previous page's `next`).
   * @throws ValidationError for a malformed user, limit or cursor
   */
  list(user: string, options?: { limit?: number; after?: string }): Promise<UserConversationPage>;
}

const CONVERSATION = /^cld:common\.Conversation\.[0-9a-f]{16}$/;
const USER = /^[A-Za-z0-9._@:-]{1,200}$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/** The sort key of an item: creation time, then URN (both fixed-format, so order is time order). */
export function userConversationKey(
  conversation: Pick<UserConversation, 'createdAt' | 'conversation'>,
): string {
  return `${conversation.createdAt}#${conversation.conversation}`;
}

/**
 * Validates a record call (both adapters reject the same input).
 * @throws ValidationError
 */
export function assertValidRecord(
  user: string,
  conversation: Omit<UserConversation, 'messages'>,
  message: string,
): void {
  assertValidUser(user);
  if (!CONVERSATION.test(conversation.conversation))
    throw new ValidationError(`not a conversation URN: ${conversation.conversation.slice(0, 120)}`);
  if (!ISO.test(conversation.createdAt))
    throw new ValidationError(`createdAt must be an ISO 8601 UTC time, got "${conversation.createdAt}"`);
  if (!conversation.id || conversation.id.length > 128)
    throw new ValidationError('id must be 1-128 characters');
  if (!message.startsWith(`${conversation.conversation}/common.Message.`))
    throw new ValidationError('message must be a Message directly under the conversation');
}

/** @throws ValidationError for a user id outside `[A-Za-z0-9._@:-]{1,200}` */
export function assertValidUser(user: string): void {
  if (!USER.test(user)) throw new ValidationError('user ids are 1-200 of A-Z a-z 0-9 . _ @ : -');
}

/**
 * Parses list options into a limit and the sort key to start after.
 * @throws ValidationError for a limit outside 1-{@link MAX_LIST_LIMIT} or a malformed cursor
 */
export function listOptions(options: { limit?: number; after?: string } = {}): {
  limit: number;
  after?: string;
} {
  const limit = options.limit ?? 20;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT)
    throw new ValidationError(`limit must be 1-${MAX_LIST_LIMIT}`);
  if (options.after === undefined) return { limit };
  const after = decodeCursor(options.after);
  return { limit, after };
}

/** The cursor of a page that ends with `key` (base64url of the sort key). */
export function encodeCursor(key: string): string {
  return Buffer.from(key, 'utf8').toString('base64url');
}

/** @throws ValidationError for a cursor that is not one {@link encodeCursor} made */
export function decodeCursor(cursor: string): string {
  const key = /^[A-Za-z0-9_-]{1,400}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  const [at, urn] = key.split('#');
  if (!at || !urn || !ISO.test(at) || !CONVERSATION.test(urn)) throw new ValidationError('malformed cursor');
  return key;
}

const EntrySchema = lazyStrictObject(() => ({
  user: z.string().regex(USER),
  conversation: z.string().regex(CONVERSATION),
  id: z.string().min(1).max(128),
  title: z.string().max(MAX_TITLE_CHARS),
  createdAt: z.string().regex(ISO),
  message: z.string().min(1),
}));

/**
 * The local store: items in memory, every new record appended to `<dir>/users.jsonl` before the
 * call resolves (a repeated record appends nothing). One process owns the directory (as the local
 * projection store). Without a directory it is memory only.
 */
export class LocalUserConversationStore implements UserConversationStore {
  private items: Promise<Map<string, Map<string, UserConversation>>> | undefined;
  private readonly journal: JsonlJournal | undefined;

  /** @param dir `<data dir>/projections`; undefined → memory only. */
  constructor(readonly dir?: string) {
    this.journal = dir ? new JsonlJournal(join(dir, 'users.jsonl')) : undefined;
  }

  async record(
    user: string,
    conversation: Omit<UserConversation, 'messages'>,
    message: string,
  ): Promise<void> {
    assertValidRecord(user, conversation, message);
    const entry = { user, ...conversation, title: conversation.title.slice(0, MAX_TITLE_CHARS), message };
    if (!apply(await this.load(), entry)) return;
    await this.journal?.append(entry);
  }

  async list(user: string, options?: { limit?: number; after?: string }): Promise<UserConversationPage> {
    assertValidUser(user);
    const { limit, after } = listOptions(options);
    const keys = [...((await this.load()).get(user)?.entries() ?? [])]
      .filter(([key]) => after === undefined || key < after)
      .sort(([a], [b]) => (a < b ? 1 : a > b ? -1 : 0));
    const page = keys.slice(0, limit).map(([, item]) => ({ ...item, messages: [...item.messages] }));
    const last = page.at(-1);
    return {
      items: page,
      ...(keys.length > limit && last ? { next: encodeCursor(userConversationKey(last)) } : {}),
    };
  }

  private load(): Promise<Map<string, Map<string, UserConversation>>> {
    this.items ??= this.read();
    return this.items;
  }

  private async read(): Promise<Map<string, Map<string, UserConversation>>> {
    const items = new Map<string, Map<string, UserConversation>>();
    if (!this.journal) return items;
    (await this.journal.readAll()).forEach((record, i) => {
      const parsed = EntrySchema.safeParse(record);
      if (!parsed.success)
        throw new ValidationError(`${this.journal?.path} line ${i + 1}: ${z.prettifyError(parsed.error)}`);
      apply(items, parsed.data);
    });
    return items;
  }
}

/** Applies one record; returns whether it changed anything. */
function apply(
  items: Map<string, Map<string, UserConversation>>,
  entry: z.infer<typeof EntrySchema>,
): boolean {
  const { user, message, ...conversation } = entry;
  const mine = items.get(user) ?? new Map<string, UserConversation>();
  items.set(user, mine);
  const key = userConversationKey(conversation);
  const item = mine.get(key);
  if (!item) {
    mine.set(key, { ...conversation, messages: [message] });
    return true;
  }
  if (item.messages.includes(message)) return false;
  item.messages = [...item.messages, message].sort();
  return true;
}
