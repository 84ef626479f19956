import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { ValidationError } from '../errors.js';
import { dynamoDBDocumentSdk } from './dynamodb.js';
import {
  assertValidRecord,
  assertValidUser,
  encodeCursor,
  listOptions,
  MAX_TITLE_CHARS,
  type UserConversation,
  type UserConversationPage,
  type UserConversationStore,
  userConversationKey,
  userPartition,
} from './user-conversations.js';

/**
 * The DynamoDB adapter of the conversations-per-user projection (item shape in
 * user-conversations.ts), on the projections table, partition `user#<user>`:
 * - `record`: one `UpdateItem` — `SET id, title, createdAt` with `if_not_exists` (the first record
 *   wins) and `ADD messages :message` (a string set, so a retried record changes nothing);
 * - `list`: `Query pk = user#<user>` with `ScanIndexForward: false` (sort keys start with the
 *   creation time: newest first), `Limit`, and `ExclusiveStartKey` from the cursor (the sort key
 *   of the previous page's last item). One partition per user: never a table scan.
 */
export class DynamoDBUserConversationStore implements UserConversationStore {
  private readonly documents: DynamoDBDocumentClient;
  private readonly table: string;

  /** @param options a DynamoDB client (module scope) and the projections table (`CLD_TABLE`) */
  constructor(options: { client: DynamoDBClient; tableName: string }) {
    this.documents = dynamoDBDocumentSdk().DynamoDBDocumentClient.from(options.client);
    this.table = options.tableName;
  }

  async record(
    user: string,
    conversation: Omit<UserConversation, 'messages'>,
    message: string,
  ): Promise<void> {
    assertValidRecord(user, conversation, message);
    await this.documents.send(
      new (dynamoDBDocumentSdk().UpdateCommand)({
        TableName: this.table,
        Key: { pk: userPartition(user), sk: userConversationKey(conversation) },
        UpdateExpression:
          'SET #id = if_not_exists(#id, :id), #title = if_not_exists(#title, :title), #createdAt = if_not_exists(#createdAt, :createdAt) ADD #messages :message',
        ExpressionAttributeNames: {
          '#id': 'id',
          '#title': 'title',
          '#createdAt': 'createdAt',
          '#messages': 'messages',
        },
        ExpressionAttributeValues: {
          ':id': conversation.id,
          ':title': conversation.title.slice(0, MAX_TITLE_CHARS),
          ':createdAt': conversation.createdAt,
          ':message': new Set([message]),
        },
      }),
    );
  }

  async list(user: string, options?: { limit?: number; after?: string }): Promise<UserConversationPage> {
    assertValidUser(user);
    const { limit, after } = listOptions(options);
    const pk = userPartition(user);
    const page = await this.documents.send(
      new (dynamoDBDocumentSdk().QueryCommand)({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': pk },
        ScanIndexForward: false,
        // One more than asked: whether there is a next page, without an empty last page.
        Limit: limit + 1,
        ...(after ? { ExclusiveStartKey: { pk, sk: after } } : {}),
      }),
    );
    const items = (page.Items ?? []).map(toUserConversation);
    const shown = items.slice(0, limit);
    const last = shown.at(-1);
    return {
      items: shown,
      ...(items.length > limit && last ? { next: encodeCursor(userConversationKey(last)) } : {}),
    };
  }
}

const ItemSchema = z.looseObject({
  pk: z.string(),
  sk: z.string(),
  id: z.string(),
  title: z.string(),
  createdAt: z.string(),
  messages: z.set(z.string()),
});

function toUserConversation(item: Record<string, unknown>): UserConversation {
  const parsed = ItemSchema.safeParse(item);
  if (!parsed.success)
    throw new ValidationError(`malformed user-conversation item: ${z.prettifyError(parsed.error)}`);
  const { sk, id, title, createdAt, messages } = parsed.data;
  return {
    conversation: sk.slice(sk.indexOf('#') + 1),
    id,
    title,
    createdAt,
    messages: [...messages].sort(),
  };
}
