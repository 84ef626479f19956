import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  type DynamoDBClientConfig,
} from '@aws-sdk/client-dynamodb';
import {
  BatchWriteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  paginateQuery,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import * as z from 'zod';
import { ValidationError } from '../errors.js';
import {
  type ApplyResult,
  assertValidApply,
  assertValidKey,
  type Projection,
  type ProjectionKey,
  type ProjectionStore,
} from './port.js';

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
  return new DynamoDBClient({
    requestHandler: new NodeHttpHandler({ connectionTimeout: 3_000, requestTimeout: 10_000 }),
    ...config,
  });
}

/** A stored item as DocumentClient unmarshalls it (sets arrive as `Set`). */
const ItemSchema = z.looseObject({
  pk: z.string(),
  sk: z.string(),
  members: z.set(z.string()).optional(),
  since: z.string().optional(),
});

const NON_VALUES = new Set(['pk', 'sk', 'members', 'since', 'expiration']);

/**
 * The DynamoDB adapter of the projection store (item shapes in port.ts). `applyOnce` is one
 * `UpdateItem`:
 * `ADD members :member, <value> :n, … [SET since = if_not_exists(since, :since)]` with
 * `ConditionExpression: attribute_not_exists(members) OR NOT contains(members, :m)` and
 * `ReturnValues: ALL_NEW`. A failed condition means the member was applied before: nothing
 * changed, and the item is read back with a strongly consistent `GetItem`. No transactions
 * (`TransactWriteItems`) are used, so a single-item conditional write is the whole guarantee.
 */
export class DynamoDBProjectionStore implements ProjectionStore {
  private readonly documents: DynamoDBDocumentClient;
  private readonly table: string;

  constructor(options: DynamoDBProjectionStoreOptions) {
    this.documents = DynamoDBDocumentClient.from(options.client);
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
    const values: Record<string, unknown> = { ':member': member, ':memberSet': new Set([member]) };
    const adds = ['#members :memberSet'];
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
    try {
      const result = await this.documents.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: key.conversation, sk: key.name },
          UpdateExpression: update,
          ConditionExpression: 'attribute_not_exists(#members) OR NOT contains(#members, :member)',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        }),
      );
      return { applied: true, projection: toProjection(result.Attributes) };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const projection = await this.get(key);
      if (!projection) throw new ValidationError(`projection ${key.name} vanished after a failed condition`);
      return { applied: false, projection };
    }
  }

  async get(key: ProjectionKey): Promise<Projection | undefined> {
    assertValidKey(key);
    const result = await this.documents.send(
      new GetCommand({
        TableName: this.table,
        Key: { pk: key.conversation, sk: key.name },
        ConsistentRead: true,
      }),
    );
    return result.Item ? toProjection(result.Item) : undefined;
  }

  async list(conversation: string): Promise<Projection[]> {
    assertValidKey({ conversation, name: '-' });
    const projections: Projection[] = [];
    for await (const page of paginateQuery(
      { client: this.documents },
      {
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': conversation },
        ConsistentRead: true,
      },
    )) {
      for (const item of page.Items ?? []) projections.push(toProjection(item));
    }
    return projections.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async deleteConversation(conversation: string): Promise<number> {
    const keys = (await this.list(conversation)).map((p) => ({ pk: p.conversation, sk: p.name }));
    for (let i = 0; i < keys.length; i += 25) {
      let requests = keys.slice(i, i + 25).map((Key) => ({ DeleteRequest: { Key } }));
      // BatchWriteItem may leave items unprocessed under throttling: resend them with backoff.
      for (let attempt = 0; requests.length > 0; attempt++) {
        if (attempt > 0)
          await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 50 * 2 ** attempt)));
        const result = await this.documents.send(
          new BatchWriteCommand({ RequestItems: { [this.table]: requests } }),
        );
        requests = (result.UnprocessedItems?.[this.table] ?? []) as typeof requests;
      }
    }
    return keys.length;
  }
}

/** Parses a stored item into a Projection. @throws ValidationError for a malformed item */
function toProjection(item: Record<string, unknown> | undefined): Projection {
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
    members: [...(parsed.data.members ?? [])].sort(),
    ...(parsed.data.since !== undefined ? { since: parsed.data.since } : {}),
  };
}
