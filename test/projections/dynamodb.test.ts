/**
 * The DynamoDB projection store driven through the real `DynamoDBClient` (and lib-dynamodb's
 * DocumentClient) against dynalite 4.0.0 started by the test (test/helpers/dynalite.ts), on a
 * table created with the stack's key schema. dynalite implements conditional `UpdateItem` with
 * `ADD` on numbers and string sets, `contains()`, `if_not_exists()` and `ReturnValues`, which is
 * all the adapter uses (no transactions).
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDBProjectionStore } from '../../shared/projections/dynamodb.js';
import { type DynaliteHandle, startDynalite } from '../helpers/dynalite.js';
import { CONVERSATION, output, projectionStoreContract } from './contract.js';

let dynalite: DynaliteHandle;
let tables = 0;

beforeAll(async () => {
  dynalite = await startDynalite();
});

afterAll(async () => {
  await dynalite?.stop();
});

projectionStoreContract('DynamoDB (dynalite)', async () => {
  const tableName = await dynalite.createTable(`projections-${++tables}`);
  return {
    store: new DynamoDBProjectionStore({ client: dynalite.client, tableName }),
    cleanup: async () => undefined,
  };
});

describe('DynamoDBProjectionStore items', () => {
  it('stores a counter as the documented item: pk, sk, done (N), members (SS)', async () => {
    const store = new DynamoDBProjectionStore({ client: dynalite.client, tableName: dynalite.tableName });
    const name = 'done#/common.Message.aaaaaaaaaaaaaaaa/plan.Task.bbbbbbbbbbbbbbbb#1';
    await store.applyOnce({ conversation: CONVERSATION, name }, output(1), { done: 1 });
    await store.applyOnce({ conversation: CONVERSATION, name }, output(2), { done: 1 });

    const { Item } = await dynalite.client.send(
      new GetItemCommand({
        TableName: dynalite.tableName,
        Key: { pk: { S: CONVERSATION }, sk: { S: name } },
      }),
    );

    expect(Item).toEqual({
      pk: { S: CONVERSATION },
      sk: { S: name },
      done: { N: '2' },
      members: { SS: expect.arrayContaining([output(1), output(2)]) },
    });
  });
});
