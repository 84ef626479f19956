/**
 * The DynamoDB projection store driven through the real `DynamoDBClient` (and lib-dynamodb's
 * DocumentClient) against dynalite 4.0.0 started by the test (test/helpers/dynalite.ts), on a
 * table created with the stack's key schema. dynalite implements conditional `UpdateItem` with
 * `ADD` on numbers, `if_not_exists()` and conditional `PutItem`; its missing `TransactWriteItems`
 * is emulated by the proxy test/helpers/dynalite.ts puts in front of it.
 */
import { GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import pLimit from 'p-limit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDBProjectionStore, memberSortKey } from '../../shared/projections/dynamodb.js';
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
  it('stores a counter as the documented items: the counter (done, members N) and one item per member', async () => {
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
    const { Item: member } = await dynalite.client.send(
      new GetItemCommand({
        TableName: dynalite.tableName,
        Key: { pk: { S: CONVERSATION }, sk: { S: memberSortKey(name, output(1)) } },
      }),
    );

    expect(Item).toEqual({ pk: { S: CONVERSATION }, sk: { S: name }, done: { N: '2' }, members: { N: '2' } });
    expect(memberSortKey(name, output(1))).toMatch(/^member#[0-9a-f]{32}$/);
    expect(member).toEqual({
      pk: { S: CONVERSATION },
      sk: { S: memberSortKey(name, output(1)) },
      projection: { S: name },
      member: { S: output(1) },
    });
  });

  it('applies more members than one 400 KB item could hold, exactly once, under duplicated concurrent applies', async () => {
    const tableName = await dynalite.createTable('projections-large');
    const store = new DynamoDBProjectionStore({ client: dynalite.client, tableName });
    const budget = { conversation: CONVERSATION, name: 'budget' };
    // 410 members of 1,024 bytes (the longest allowed): 420 KB, past the 400 KB item limit in one set.
    const members = Array.from(
      { length: 410 },
      (_, i) => `${output(i)}#${'x'.repeat(1_024 - output(i).length - 1)}`,
    );
    expect(members.every((m) => Buffer.byteLength(m) === 1_024)).toBe(true);
    // Negative control: the same members as one string set do not fit one item.
    await expect(
      dynalite.client.send(
        new UpdateItemCommand({
          TableName: tableName,
          Key: { pk: { S: CONVERSATION }, sk: { S: 'one-item-set' } },
          UpdateExpression: 'ADD #m :m',
          ExpressionAttributeNames: { '#m': 'members' },
          ExpressionAttributeValues: { ':m': { SS: members } },
        }),
      ),
    ).rejects.toThrow(/size/i);

    const limit = pLimit(16);
    // Every member once, and every tenth twice more (duplicated deliveries), interleaved.
    const calls = members.flatMap((member, i) => (i % 10 === 0 ? [member, member, member] : [member]));
    const results = await Promise.all(
      calls.map((member) => limit(() => store.applyOnce(budget, member, { tokens: 10, modelCalls: 1 }))),
    );

    expect(calls).toHaveLength(492);
    expect(results.filter((r) => r.applied)).toHaveLength(410);
    expect(await store.get(budget)).toEqual({
      conversation: CONVERSATION,
      name: 'budget',
      values: { tokens: 4_100, modelCalls: 410 },
    });
    const [listed] = await store.list(CONVERSATION);
    expect(listed?.members).toEqual([...members].sort());
    expect(await store.deleteConversation(CONVERSATION)).toBe(1);
    expect(await store.list(CONVERSATION)).toEqual([]);
  }, 120_000);
});
