/**
 * The open-conversations projection (shared/projections/open-conversations.ts): one contract for
 * the local store (memory and journaled) and the DynamoDB adapter through the real client against
 * dynalite.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  LocalOpenConversationStore,
  type OpenConversationStore,
} from '../../shared/projections/open-conversations.js';
import { DynamoDBOpenConversationStore } from '../../shared/projections/open-conversations-dynamodb.js';
import { type DynaliteHandle, startDynalite } from '../helpers/dynalite.js';

const A = 'cld:common.Conversation.000000000000000a';
const B = 'cld:common.Conversation.000000000000000b';
const t = (minute: number) => new Date(Date.UTC(2026, 0, 1, 0, minute));

let dynalite: DynaliteHandle;
let tables = 0;
let dir: string;

beforeAll(async () => {
  dynalite = await startDynalite();
  dir = await mkdtemp(join(tmpdir(), 'cld-open-'));
});

afterAll(async () => {
  await dynalite?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe.each<[string, () => Promise<OpenConversationStore>]>([
  ['local (memory)', async () => new LocalOpenConversationStore()],
  ['local (journaled)', async () => new LocalOpenConversationStore(await mkdtemp(join(dir, 's-')))],
  [
    'DynamoDB (dynalite)',
    async () =>
      new DynamoDBOpenConversationStore({
        client: dynalite.client,
        tableName: await dynalite.createTable(`open-${++tables}`),
      }),
  ],
])('open conversations, %s', (_, create) => {
  it('moves progress forward only, and lists by idle time (at the cutoff included, after it not)', async () => {
    const store = await create();
    await store.touch(A, t(10));
    await store.touch(A, t(5)); // an older touch arrives late
    await store.touch(B, t(20));

    expect((await store.list()).map((o) => [o.conversation, o.progress])).toEqual([
      [A, t(10).toISOString()],
      [B, t(20).toISOString()],
    ]);
    expect((await store.list(t(10))).map((o) => o.conversation)).toEqual([A]);
    expect((await store.list(new Date(t(10).getTime() - 1))).map((o) => o.conversation)).toEqual([]);
  });

  it('records redrives and closes only when nothing touched the item after it was read', async () => {
    const store = await create();
    await store.touch(A, t(10));
    await store.recordRedrive(A, 2, '2026-01-01T00:09:00.000Z');
    expect(await store.list()).toEqual([
      { conversation: A, progress: t(10).toISOString(), redrives: 2, seen: '2026-01-01T00:09:00.000Z' },
    ]);
    await store.touch(A, t(11));
    await store.close(A, t(10).toISOString()); // read before the touch: stays open
    expect((await store.list()).map((o) => o.conversation)).toEqual([A]);
    await store.close(A, t(11).toISOString());
    expect(await store.list()).toEqual([]);
    await store.recordRedrive(A, 1, undefined); // closed: not reopened
    expect(await store.list()).toEqual([]);
  });

  it('refuses a key that is not a conversation URN', async () => {
    const store = await create();
    await expect(store.touch('cld:common.Conversation.x', t(1))).rejects.toThrow(/not a conversation URN/);
  });
});

describe('the local journal', () => {
  it('is read back by a new store (a restarted process), compacted to the open items', async () => {
    const path = await mkdtemp(join(dir, 'j-'));
    const first = new LocalOpenConversationStore(path);
    for (let minute = 1; minute <= 10; minute++) await first.touch(A, t(minute));
    await first.touch(B, t(3));
    await first.close(B, t(3).toISOString());

    const second = new LocalOpenConversationStore(path);

    expect(await second.list()).toEqual([{ conversation: A, progress: t(10).toISOString(), redrives: 0 }]);
  });
});
