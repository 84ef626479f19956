import { createHash } from 'node:crypto';
import type * as DynamoDBSdk from '@aws-sdk/client-dynamodb';
import type { DynamoDBClient, DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import type * as DocumentSdk from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { HAS_REQUIRE, nodeHttpHandler, requireSdk } from '../aws/sdk.js';
import { ValidationError } from '../errors.js';
import {
  type ApplyResult,
  assertValidApply,
  assertValidKey,
  MEMBER_PREFIX,
  type Projection,
  type ProjectionKey,
  type ProjectionStore,
  type ProjectionValues,
} from './port.js';

let dynamoDBSdk: typeof DynamoDBSdk | undefined;
let documentSdk: typeof DocumentSdk | undefined;

/**
 * `@aws-sdk/client-dynamodb`, loaded at its first use with `require` (shared/aws/sdk.ts); the
 * other DynamoDB adapters use it too.
 */
export function dynamoDBClientSdk(): typeof DynamoDBSdk {
  dynamoDBSdk ??= (
    HAS_REQUIRE ? require('@aws-sdk/client-dynamodb') : requireSdk('@aws-sdk/client-dynamodb')
  ) as typeof DynamoDBSdk;
  return dynamoDBSdk;
}

/** `@aws-sdk/lib-dynamodb` (the document client), loaded as {@link dynamoDBClientSdk}. */
export function dynamoDBDocumentSdk(): typeof DocumentSdk {
  documentSdk ??= (
    HAS_REQUIRE ? require('@aws-sdk/lib-dynamodb') : requireSdk('@aws-sdk/lib-dynamodb')
  ) as typeof DocumentSdk;
  return documentSdk;
}

/** Options of {@link DynamoDBProjectionStore}. */
export interface DynamoDBProjectionStoreOptions {
  /** A DynamoDB client (module scope, one per cold start). */
  client: DynamoDBClient;
  /** The projections table (`CLD_TABLE`): `pk` (S) + `sk` (S), TTL attribute `expiration`. */
  tableName: string;
}

/**
 * Creates the DynamoDB client used by the projection store and the idempotency layer: keep-alive
 * HTTP with bounded timeouts, the SDK's standard retries (throttling is retried with backoff).
 */
export function createDynamoDBClient(config: DynamoDBClientConfig = {}): DynamoDBClient {
  const { DynamoDBClient } = dynamoDBClientSdk();
  const { NodeHttpHandler } = nodeHttpHandler();
  return new DynamoDBClient({
    requestHandler: new NodeHttpHandler({ connectionTimeout: 3_000, requestTimeout: 10_000 }),
    ...config,
  });
}

/** A stored counter item as DocumentClient unmarshalls it. */
const ItemSchema = z.looseObject({
  pk: z.string(),
  sk: z.string(),
  since: z.string().optional(),
});

/** A stored member item. */
const MemberItemSchema = z.looseObject({
  pk: z.string(),
  sk: z.string().startsWith(MEMBER_PREFIX),
  projection: z.string().min(1),
  member: z.string().min(1),
});

/** Attributes of a counter item that are not values (`members` is the count of member items). */
const NON_VALUES = new Set(['pk', 'sk', 'members', 'since', 'expiration']);

/**
 * Sort key of the member item of `member` in projection `name`: `member#` and 32 hex digits of
 * SHA-256(name NUL member), a fixed length whatever the lengths of name and member.
 */
export function memberSortKey(name: string, member: string): string {
  return `${MEMBER_PREFIX}${createHash('sha256').update(name).update('\0').update(member).digest('hex').slice(0, 32)}`;
}

/**
 * The DynamoDB adapter of the projection store (item shapes in port.ts). `applyOnce` is one
 * `TransactWriteItems` of two writes, all or nothing:
 * 1. `Put` of the member item with `ConditionExpression: attribute_not_exists(pk)`;
 * 2. `Update` of the projection item: `ADD members :one, <value> :n, … [SET since =
 *    if_not_exists(since, :since)]`.
 * A cancellation whose first reason is `ConditionalCheckFailed` means the member was applied
 * before: nothing changed. Either way the values are then read with one strongly consistent
 * `GetItem` (a transaction returns no values), projected to what the caller uses. Membership is
 * one fixed-size item per member instead of a set inside the projection item, so no item grows
 * with the conversation (the 400 KB item limit cannot be reached) and an apply writes two small
 * items whatever the number of members (2 × 2 WCU for the transaction, 1 RCU for the read).
 * The SDK gives each transaction a `ClientRequestToken` and keeps it across its retries, so a
 * retried request that had succeeded reports success again rather than a failed condition. IAM:
 * `dynamodb:PutItem` and `dynamodb:UpdateItem` on the table (what `TransactWriteItems` checks),
 * `GetItem`.
 */
export class DynamoDBProjectionStore implements ProjectionStore {
  private readonly documents: DynamoDBDocumentClient;
  private readonly table: string;

  constructor(options: DynamoDBProjectionStoreOptions) {
    this.documents = dynamoDBDocumentSdk().DynamoDBDocumentClient.from(options.client);
    this.table = options.tableName;
  }

  async applyOnce(
    key: ProjectionKey,
    member: string,
    increments: Readonly<Record<string, number>>,
    options: { since?: string } = {},
  ): Promise<ApplyResult> {
    assertValidApply(key, member, increments);
    const names: Record<string, string> = { '#members': 'members' };
    const values: Record<string, unknown> = { ':one': 1 };
    const adds = ['#members :one'];
    Object.entries(increments).forEach(([name, amount], i) => {
      names[`#v${i}`] = name;
      values[`:v${i}`] = amount;
      adds.push(`#v${i} :v${i}`);
    });
    let update = `ADD ${adds.join(', ')}`;
    if (options.since) {
      names['#since'] = 'since';
      values[':since'] = options.since;
      update += ' SET #since = if_not_exists(#since, :since)';
    }
    let applied = true;
    try {
      await this.documents.send(
        new (dynamoDBDocumentSdk().TransactWriteCommand)({
          TransactItems: [
            {
              Put: {
                TableName: this.table,
                Item: {
                  pk: key.conversation,
                  sk: memberSortKey(key.name, member),
                  projection: key.name,
                  member,
                },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
            {
              Update: {
                TableName: this.table,
                Key: { pk: key.conversation, sk: key.name },
                UpdateExpression: update,
                ExpressionAttributeNames: names,
                ExpressionAttributeValues: values,
              },
            },
          ],
        }),
      );
    } catch (error) {
      if (!(error instanceof dynamoDBClientSdk().TransactionCanceledException)) throw error;
      // Only the member's condition can fail; any other reason (a conflicting transaction,
      // throttling) is an error the caller's retry handles.
      if (error.CancellationReasons?.[0]?.Code !== 'ConditionalCheckFailed') throw error;
      applied = false;
    }
    const projection = await this.get(key);
    if (!projection)
      throw new ValidationError(`projection ${key.name} is missing after an apply of ${member}`);
    return { applied, projection };
  }

  async get(key: ProjectionKey): Promise<ProjectionValues | undefined> {
    assertValidKey(key);
    const result = await this.documents.send(
      new (dynamoDBDocumentSdk().GetCommand)({
        TableName: this.table,
        Key: { pk: key.conversation, sk: key.name },
        ConsistentRead: true,
      }),
    );
    return result.Item ? toProjection(result.Item) : undefined;
  }

  async list(conversation: string): Promise<Projection[]> {
    assertValidKey({ conversation, name: '-' });
    const projections: ProjectionValues[] = [];
    const members = new Map<string, string[]>();
    for await (const page of dynamoDBDocumentSdk().paginateQuery(
      { client: this.documents },
      {
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': conversation },
        ConsistentRead: true,
      },
    )) {
      for (const item of page.Items ?? []) {
        if (typeof item.sk === 'string' && item.sk.startsWith(MEMBER_PREFIX)) {
          const parsed = MemberItemSchema.safeParse(item);
          if (!parsed.success)
            throw new ValidationError(`malformed member item: ${z.prettifyError(parsed.error)}`);
          const list = members.get(parsed.data.projection) ?? [];
          list.push(parsed.data.member);
          members.set(parsed.data.projection, list);
        } else projections.push(toProjection(item));
      }
    }
    return projections
      .map((p) => ({ ...p, members: (members.get(p.name) ?? []).sort() }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async deleteConversation(conversation: string): Promise<number> {
    const projections = await this.list(conversation);
    const keys = projections.flatMap((p) => [
      { pk: p.conversation, sk: p.name },
      ...p.members.map((member) => ({ pk: p.conversation, sk: memberSortKey(p.name, member) })),
    ]);
    for (let i = 0; i < keys.length; i += 25) {
      let requests = keys.slice(i, i + 25).map((Key) => ({ DeleteRequest: { Key } }));
      // BatchWriteItem may leave items unprocessed under throttling: resend them with backoff.
      for (let attempt = 0; requests.length > 0; attempt++) {
        if (attempt > 0)
          await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 50 * 2 ** attempt)));
        const result = await this.documents.send(
          new (dynamoDBDocumentSdk().BatchWriteCommand)({ RequestItems: { [this.table]: requests } }),
        );
        requests = (result.UnprocessedItems?.[this.table] ?? []) as typeof requests;
      }
    }
    return projections.length;
  }
}

/** Parses a stored projection item into its values. @throws ValidationError for a malformed item */
function toProjection(item: Record<string, unknown> | undefined): ProjectionValues {
  const parsed = ItemSchema.safeParse(item);
  if (!parsed.success)
    throw new ValidationError(`malformed projection item: ${z.prettifyError(parsed.error)}`);
  const values: Record<string, number> = {};
  for (const [name, value] of Object.entries(parsed.data)) {
    if (NON_VALUES.has(name)) continue;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
      throw new ValidationError(`projection ${parsed.data.sk} has a malformed value ${name}`);
    values[name] = value;
  }
  return {
    conversation: parsed.data.pk,
    name: parsed.data.sk,
    values,
    ...(parsed.data.since !== undefined ? { since: parsed.data.since } : {}),
  };
}
