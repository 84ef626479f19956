/**
 * `idempotentDelivery` (Powertools `makeIdempotent`) on both persistence layers: the local one
 * (memory and journal) and Powertools' own `DynamoDBPersistenceLayer` configured for the
 * projections table's key schema, through the real `DynamoDBClient` against dynalite. A delivery
 * stands for a reply posted to Slack or Teams: it must run once under retries and duplicates.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IdempotencyAlreadyInProgressError } from '@aws-lambda-powertools/idempotency';
import type { BasePersistenceLayer } from '@aws-lambda-powertools/idempotency/persistence';
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { InvalidUrnError } from '../../shared/errors.js';
import {
  DELIVERY_RECORD_TTL_S,
  dynamoDBIdempotencyLayer,
  IDEMPOTENCY_PK,
  idempotentDelivery,
  LocalPersistenceLayer,
} from '../../shared/projections/idempotency.js';
import { type DynaliteHandle, startDynalite } from '../helpers/dynalite.js';

const REPLY = 'cld:common.Conversation.0123456789abcdef/common.Message.aaaaaaaaaaaaaaaa';
const OTHER_REPLY = 'cld:common.Conversation.0123456789abcdef/common.Message.bbbbbbbbbbbbbbbb';

/** A delivery that counts its runs and answers like Slack's chat.postMessage (a `ts`). */
function slackPost() {
  const posted: string[] = [];
  return {
    posted,
    deliver: (text: string) => async () => {
      posted.push(text);
      return { ok: true, ts: `1700000000.${posted.length.toString().padStart(6, '0')}` };
    },
  };
}

/** Retries a call the way Lambda retries a failed invocation, until it succeeds (bounded). */
async function withRetries<T>(call: () => Promise<T>, waitMs = 20): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (!(error instanceof IdempotencyAlreadyInProgressError) || attempt >= 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
  }
}

type MakeLayer = () => Promise<{ layer: BasePersistenceLayer; cleanup: () => Promise<void> }>;

function deliveryContract(name: string, make: MakeLayer): void {
  describe(`idempotentDelivery on ${name}`, () => {
    let layer: BasePersistenceLayer;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      ({ layer, cleanup } = await make());
    });

    afterEach(async () => {
      await cleanup();
    });

    it('posts once and returns the first result to every repeat', async () => {
      const slack = slackPost();

      const first = await idempotentDelivery(layer, REPLY, slack.deliver('answer'));
      const again = await idempotentDelivery(layer, REPLY, slack.deliver('answer, retried'));

      expect(slack.posted).toEqual(['answer']);
      expect(again).toEqual(first);
      expect(first).toEqual({ ok: true, ts: '1700000000.000001' });
    });

    it('posts once when duplicates arrive together; the ones that find it in progress succeed on retry', async () => {
      const slack = slackPost();
      let release: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      let firstStarted: () => void = () => undefined;
      const started = new Promise<void>((resolve) => {
        firstStarted = resolve;
      });
      const slow = async () => {
        firstStarted(); // the in-progress record is stored: a duplicate now finds it
        await gate;
        return slack.deliver('answer')();
      };

      const first = idempotentDelivery(layer, REPLY, slow);
      await started;
      const duplicates = Array.from({ length: 4 }, () =>
        idempotentDelivery(layer, REPLY, slack.deliver('dup')),
      );
      const settled = await Promise.allSettled(duplicates);
      release();

      expect(
        settled.every(
          (s) => s.status === 'rejected' && s.reason instanceof IdempotencyAlreadyInProgressError,
        ),
      ).toBe(true);
      const result = await first;
      const retried = await Promise.all(
        Array.from({ length: 4 }, () =>
          withRetries(() => idempotentDelivery(layer, REPLY, slack.deliver('dup'))),
        ),
      );
      expect(slack.posted).toEqual(['answer']);
      expect(retried).toEqual(Array(4).fill(result));
    });

    it('runs again after a failed delivery (the record is removed) and then only once', async () => {
      const slack = slackPost();
      let failures = 0;
      const flaky = async () => {
        if (failures++ === 0) throw new Error('Slack answered 503');
        return slack.deliver('answer')();
      };

      await expect(idempotentDelivery(layer, REPLY, flaky)).rejects.toThrow('Slack answered 503');
      const result = await idempotentDelivery(layer, REPLY, flaky);
      await idempotentDelivery(layer, REPLY, flaky);

      expect(failures).toBe(2);
      expect(slack.posted).toEqual(['answer']);
      expect(result.ts).toBe('1700000000.000001');
    });

    it('lets a retry run once the in-progress window of a killed delivery has passed, not before', async () => {
      const slack = slackPost();
      // The layers (ours and Powertools') read the clock with Date.now(): a fake clock for Date
      // alone moves the window without sleeping, and leaves the timers I/O needs real.
      vi.useFakeTimers({ toFake: ['Date'], now: Date.parse('2026-01-01T00:00:00Z') });
      try {
        // A process killed mid-delivery: the effect never completes and nothing cleans up.
        let killedStarted: () => void = () => undefined;
        const started = new Promise<void>((resolve) => {
          killedStarted = resolve;
        });
        void idempotentDelivery(
          layer,
          REPLY,
          () => {
            killedStarted(); // called once the in-progress record is stored
            return new Promise<never>(() => undefined);
          },
          { inProgressMs: 60_000 },
        );
        await started;

        vi.advanceTimersByTime(59_000);
        await expect(idempotentDelivery(layer, REPLY, slack.deliver('too early'))).rejects.toBeInstanceOf(
          IdempotencyAlreadyInProgressError,
        );

        vi.advanceTimersByTime(2_000);
        const result = await idempotentDelivery(layer, REPLY, slack.deliver('after the window'));

        expect(slack.posted).toEqual(['after the window']);
        expect(result.ok).toBe(true);
      } finally {
        vi.useRealTimers();
      }
    });

    it('keeps replies apart: another URN is another delivery', async () => {
      const slack = slackPost();

      await idempotentDelivery(layer, REPLY, slack.deliver('one'));
      await idempotentDelivery(layer, OTHER_REPLY, slack.deliver('two'));

      expect(slack.posted).toEqual(['one', 'two']);
    });

    it('rejects a malformed reply URN before any record is written', async () => {
      const slack = slackPost();

      await expect(
        idempotentDelivery(layer, 'slack:C123/1700000000.1', slack.deliver('x')),
      ).rejects.toBeInstanceOf(InvalidUrnError);
      expect(slack.posted).toEqual([]);
    });
  });
}

deliveryContract('the local layer (memory)', async () => ({
  layer: new LocalPersistenceLayer(),
  cleanup: async () => undefined,
}));

deliveryContract('the local layer (journal)', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cld-idempotency-'));
  return { layer: new LocalPersistenceLayer(dir), cleanup: () => rm(dir, { recursive: true, force: true }) };
});

describe('the DynamoDB layer', () => {
  let dynalite: DynaliteHandle;
  let tables = 0;

  beforeAll(async () => {
    dynalite = await startDynalite();
  });

  afterAll(async () => {
    await dynalite?.stop();
  });

  deliveryContract('Powertools DynamoDBPersistenceLayer (dynalite)', async () => {
    const tableName = await dynalite.createTable(`idempotency-${++tables}`);
    return {
      layer: await dynamoDBIdempotencyLayer({ client: dynalite.client, tableName }),
      cleanup: async () => undefined,
    };
  });

  it('stores the record on the projections key schema: pk "idempotency", sk the key, TTL in expiration', async () => {
    const tableName = await dynalite.createTable(`idempotency-${++tables}`);
    const layer = await dynamoDBIdempotencyLayer({ client: dynalite.client, tableName });
    const before = Math.floor(Date.now() / 1000);

    await idempotentDelivery(layer, REPLY, async () => ({ ts: '1.2' }));

    const { Items } = await dynalite.client.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': { S: IDEMPOTENCY_PK } },
      }),
    );
    expect(Items).toHaveLength(1);
    const item = Items?.[0] ?? {};
    expect(item.sk?.S).toMatch(/^delivery#/);
    expect(item.status?.S).toBe('COMPLETED');
    expect(Number(item.expiration?.N)).toBeGreaterThanOrEqual(before + DELIVERY_RECORD_TTL_S - 1);
    expect(JSON.parse(JSON.stringify(item.data))).toEqual({ M: { ts: { S: '1.2' } } });
  });
});

describe('the local layer across processes', () => {
  it('remembers a completed delivery in its journal', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cld-idempotency-'));
    try {
      const slack = slackPost();
      await idempotentDelivery(new LocalPersistenceLayer(dir), REPLY, slack.deliver('first process'));

      const result = await idempotentDelivery(
        new LocalPersistenceLayer(dir),
        REPLY,
        slack.deliver('second process'),
      );

      expect(slack.posted).toEqual(['first process']);
      expect(result.ts).toBe('1700000000.000001');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
