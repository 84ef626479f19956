/**
 * The conversations-per-user projection (shared/projections/user-conversations.ts): one contract
 * for the local store (memory and journaled) and the DynamoDB adapter through the real client
 * against dynalite.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  LocalUserConversationStore,
  type UserConversationStore,
} from '../../shared/projections/user-conversations.js';
import { DynamoDBUserConversationStore } from '../../shared/projections/user-conversations-dynamodb.js';
import { type DynaliteHandle, startDynalite } from '../helpers/dynalite.js';

const urn = (n: number) => `cld:common.Conversation.${n.toString(16).padStart(16, '0')}`;
const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 0, minute)).toISOString();
const conversation = (n: number, minute: number) => ({
  conversation: urn(n),
  id: `id-${n}`,
  title: `question ${n}`,
  createdAt: at(minute),
});
const message = (n: number, m = 1) => `${urn(n)}/common.Message.${m.toString(16).padStart(16, '0')}`;

let dynalite: DynaliteHandle;
let tables = 0;
let dir: string;

beforeAll(async () => {
  dynalite = await startDynalite();
  dir = await mkdtemp(join(tmpdir(), 'cld-users-'));
});

afterAll(async () => {
  await dynalite?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe.each<[string, () => Promise<UserConversationStore>]>([
  ['local (memory)', async () => new LocalUserConversationStore()],
  ['local (journaled)', async () => new LocalUserConversationStore(await mkdtemp(join(dir, 's-')))],
  [
    'DynamoDB (dynalite)',
    async () =>
      new DynamoDBUserConversationStore({
        client: dynalite.client,
        tableName: await dynalite.createTable(`users-${++tables}`),
      }),
  ],
])('conversations per user, %s', (_, create) => {
  it('lists a user’s conversations newest first, each once with all its messages', async () => {
    const store = await create();
    await store.record('alice', conversation(1, 10), message(1));
    await store.record('alice', conversation(2, 30), message(2));
    await store.record('alice', conversation(3, 20), message(3));
    await store.record('alice', conversation(1, 10), message(1, 2)); // a follow-up
    await store.record('alice', { ...conversation(1, 10), title: 'retitled' }, message(1)); // a retry

    const page = await store.list('alice');

    expect(page.items.map((c) => c.id)).toEqual(['id-2', 'id-3', 'id-1']);
    expect(page.items[2]).toEqual({ ...conversation(1, 10), messages: [message(1), message(1, 2)] });
    expect(page.next).toBeUndefined();
  });

  it('keeps users apart: another user’s conversations are not listed', async () => {
    const store = await create();
    await store.record('alice', conversation(1, 10), message(1));
    await store.record('bob', conversation(2, 20), message(2));

    expect((await store.list('alice')).items.map((c) => c.id)).toEqual(['id-1']);
    expect((await store.list('bob')).items.map((c) => c.id)).toEqual(['id-2']);
    expect((await store.list('carol')).items).toEqual([]);
  });

  it('pages with a cursor: a full page has a next cursor, the last page none', async () => {
    const store = await create();
    for (let n = 1; n <= 5; n++) await store.record('alice', conversation(n, n), message(n));

    const first = await store.list('alice', { limit: 2 });
    const second = await store.list('alice', { limit: 2, ...(first.next ? { after: first.next } : {}) });
    const third = await store.list('alice', { limit: 2, ...(second.next ? { after: second.next } : {}) });
    const exact = await store.list('alice', { limit: 5 });

    expect([first, second, third].map((p) => p.items.map((c) => c.id))).toEqual([
      ['id-5', 'id-4'],
      ['id-3', 'id-2'],
      ['id-1'],
    ]);
    expect(third.next).toBeUndefined();
    expect(exact.next).toBeUndefined();
  });

  it.each([
    ['a limit of 0', { limit: 0 }, /limit/],
    ['a limit over 100', { limit: 101 }, /limit/],
    ['a cursor it did not make', { after: 'bm90IGEga2V5' }, /cursor/],
  ])('refuses %s', async (_, options, error) => {
    const store = await create();
    await expect(store.list('alice', options)).rejects.toThrow(error);
  });

  it('refuses a record with a malformed user, URN or message', async () => {
    const store = await create();
    await expect(store.record('a b', conversation(1, 1), message(1))).rejects.toThrow(/user ids/);
    await expect(
      store.record('alice', { ...conversation(1, 1), conversation: 'cld:common.Conversation.x' }, message(1)),
    ).rejects.toThrow(/conversation URN/);
    await expect(store.record('alice', conversation(1, 1), message(2))).rejects.toThrow(
      /under the conversation/,
    );
  });
});

describe('the local journal', () => {
  it('is read back by a new store (a restarted process)', async () => {
    const path = await mkdtemp(join(dir, 'j-'));
    const first = new LocalUserConversationStore(path);
    await first.record('alice', conversation(1, 1), message(1));
    await first.record('alice', conversation(1, 1), message(1, 2));
    await first.record('alice', conversation(1, 1), message(1, 2));

    const second = new LocalUserConversationStore(path);

    expect((await second.list('alice')).items).toEqual([
      { ...conversation(1, 1), messages: [message(1), message(1, 2)] },
    ]);
  });
});
