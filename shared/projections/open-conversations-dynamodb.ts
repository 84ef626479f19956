import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { ValidationError } from '../errors.js';
import { dynamoDBClientSdk, dynamoDBDocumentSdk } from './dynamodb.js';
import {
  assertConversation,
  OPEN_PARTITION,
  type OpenConversation,
  type OpenConversationStore,
} from './open-conversations.js';

/**
 * The DynamoDB adapter of the open-conversations projection (item shape in
 * open-conversations.ts), on the projections table, partition `open`:
 * - `touch`: `UpdateItem SET progress = :at` with `ConditionExpression: attribute_not_exists(progress)
 *   OR progress < :at` (ISO 8601 strings order as times), so progress never moves back; a failed
 *   condition means a later touch won and is not an error;
 * - `list`: `Query pk = open` with `FilterExpression: progress <= :cutoff`, paginated (one partition:
 *   never a table scan);
 * - `recordRedrive`: `UpdateItem SET redrives, seen` on an existing item only;
 * - `close`: `DeleteItem` with `ConditionExpression: progress <= :read`, so a touch after the read
 *   keeps the conversation open.
 */
export class DynamoDBOpenConversationStore implements OpenConversationStore {
  private readonly documents: DynamoDBDocumentClient;
  private readonly table: string;

  /** @param options a DynamoDB client (module scope) and the projections table (`CLD_TABLE`) */
  constructor(options: { client: DynamoDBClient; tableName: string }) {
    this.documents = dynamoDBDocumentSdk().DynamoDBDocumentClient.from(options.client);
    this.table = options.tableName;
  }

  async touch(conversation: string, at: Date): Promise<void> {
    assertConversation(conversation);
    await ignoreFailedCondition(
      this.documents.send(
        new (dynamoDBDocumentSdk().UpdateCommand)({
          TableName: this.table,
          Key: { pk: OPEN_PARTITION, sk: conversation },
          UpdateExpression: 'SET #progress = :at',
          ConditionExpression: 'attribute_not_exists(#progress) OR #progress < :at',
          ExpressionAttributeNames: { '#progress': 'progress' },
          ExpressionAttributeValues: { ':at': at.toISOString() },
        }),
      ),
    );
  }

  async list(idleSince?: Date): Promise<OpenConversation[]> {
    const items: OpenConversation[] = [];
    for await (const page of dynamoDBDocumentSdk().paginateQuery(
      { client: this.documents },
      {
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: {
          ':pk': OPEN_PARTITION,
          ...(idleSince ? { ':cutoff': idleSince.toISOString() } : {}),
        },
        ...(idleSince
          ? {
              FilterExpression: '#progress <= :cutoff',
              ExpressionAttributeNames: { '#progress': 'progress' },
            }
          : {}),
      },
    )) {
      for (const item of page.Items ?? []) items.push(toOpenConversation(item));
    }
    return items.sort((a, b) => a.progress.localeCompare(b.progress));
  }

  async recordRedrive(conversation: string, redrives: number, seen: string | undefined): Promise<void> {
    assertConversation(conversation);
    await ignoreFailedCondition(
      this.documents.send(
        new (dynamoDBDocumentSdk().UpdateCommand)({
          TableName: this.table,
          Key: { pk: OPEN_PARTITION, sk: conversation },
          UpdateExpression:
            seen === undefined ? 'SET #redrives = :n REMOVE #seen' : 'SET #redrives = :n, #seen = :seen',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#redrives': 'redrives', '#seen': 'seen' },
          ExpressionAttributeValues: { ':n': redrives, ...(seen === undefined ? {} : { ':seen': seen }) },
        }),
      ),
    );
  }

  async close(conversation: string, progress: string): Promise<void> {
    assertConversation(conversation);
    await ignoreFailedCondition(
      this.documents.send(
        new (dynamoDBDocumentSdk().DeleteCommand)({
          TableName: this.table,
          Key: { pk: OPEN_PARTITION, sk: conversation },
          ConditionExpression: '#progress <= :read',
          ExpressionAttributeNames: { '#progress': 'progress' },
          ExpressionAttributeValues: { ':read': progress },
        }),
      ),
    );
  }
}

const ItemSchema = z.looseObject({
  pk: z.literal(OPEN_PARTITION),
  sk: z.string(),
  progress: z.string(),
  redrives: z.number().int().nonnegative().optional(),
  seen: z.string().optional(),
});

function toOpenConversation(item: Record<string, unknown>): OpenConversation {
  const parsed = ItemSchema.safeParse(item);
  if (!parsed.success)
    throw new ValidationError(`malformed open-conversation item: ${z.prettifyError(parsed.error)}`);
  const { sk, progress, redrives, seen } = parsed.data;
  return { conversation: sk, progress, redrives: redrives ?? 0, ...(seen ? { seen } : {}) };
}

async function ignoreFailedCondition(request: Promise<unknown>): Promise<void> {
  try {
    await request;
  } catch (error) {
    if (!(error instanceof dynamoDBClientSdk().ConditionalCheckFailedException)) throw error;
  }
}
