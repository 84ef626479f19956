import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IdempotencyAlreadyInProgressError } from '@aws-lambda-powertools/idempotency';
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import rules from '../../policies/rules.json' with { type: 'json' };
import { parseChannelConfig } from '../../shared/channels/config.js';
import { createChannels, provideChannels } from '../../shared/channels/context.js';
import { createOnce, DELIVERY_RECORD_SECONDS } from '../../shared/channels/idempotency.js';
import { replyStep } from '../../shared/channels/reply.js';
import { escapeSlackText, slackThreadName } from '../../shared/channels/slack.js';
import { NAMES } from '../../shared/domain/common.js';
import { startConversation } from '../../shared/domain/conversation.js';
import type { Deps } from '../../shared/domain/ports.js';
import { s3ObjectCreatedEvent, toResourcePut } from '../../shared/events/envelope.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import { RulesPolicy } from '../../shared/policy/rules.js';
import { dynamoDBIdempotencyLayer, IDEMPOTENCY_PK } from '../../shared/projections/idempotency.js';
import { withMeta } from '../../shared/resources/meta.js';
import { ResourceIndex } from '../../shared/resources/resource-index.js';
import type { Conversation, Message } from '../../shared/resources/schemas.js';
import { createLocalRuntime, type LocalRuntime } from '../../shared/runtime/local.js';
import { ingest } from '../../shared/search/ingest.js';
import type { MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import { keyOf } from '../../shared/urn.js';
import { type DynaliteHandle, startDynalite } from '../helpers/dynalite.js';
import { DOCS, type Receiver, sleep, startReceiver, until } from './helpers.js';

/**
 * Exactly-once delivery under at-least-once events. In AWS the reply step's guard is Powertools
 * idempotency on `deps.idempotency`: the `DynamoDBPersistenceLayer` that the composition root
 * builds on the projections table (`pk` = `idempotency`, `sk` = the key), driven here through the
 * real SDK client against dynalite with the stack's key schema. The end-to-end cases run the
 * local runtime, whose `deps.idempotency` is the journaled local layer.
 */

let dynamo: DynaliteHandle;

beforeAll(async () => {
  dynamo = await startDynalite('cld-projections-reply');
});

afterAll(async () => {
  await dynamo?.stop();
});

/** The layer `composeFromEnv` builds in AWS (a fresh instance: Powertools configures a layer once). */
function layer() {
  return dynamoDBIdempotencyLayer({ client: dynamo.client, tableName: dynamo.tableName });
}

/** The items of the idempotency partition whose sort key starts with `prefix`. */
async function records(prefix: string) {
  const { Items } = await dynamo.client.send(
    new QueryCommand({
      TableName: dynamo.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': { S: IDEMPOTENCY_PK }, ':prefix': { S: prefix } },
      ConsistentRead: true,
    }),
  );
  return Items ?? [];
}

describe('createOnce on the projections table (DynamoDBPersistenceLayer, dynalite)', () => {
  it('runs the effect once per key and returns the stored result to later calls', async () => {
    const once = createOnce(await layer(), 'test.sequential');
    let runs = 0;
    const effect = async () => ({ ts: `ts-${++runs}` });

    const results = [await once('cld:a', effect), await once('cld:a', effect), await once('cld:a', effect)];

    expect(runs).toBe(1);
    expect(results).toEqual([{ ts: 'ts-1' }, { ts: 'ts-1' }, { ts: 'ts-1' }]);
    expect(await once('cld:b', effect)).toEqual({ ts: 'ts-2' });
  });

  it('lets one of several concurrent calls run the effect; the others are told it is in progress', async () => {
    const once = createOnce(await layer(), 'test.concurrent', 0);
    let runs = 0;
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const effect = async () => {
      runs++;
      await gate;
      return { ok: true };
    };
    const outcomes: PromiseSettledResult<unknown>[] = [];
    const calls = [1, 2, 3, 4].map(() =>
      once('cld:concurrent', effect).then(
        (value) => outcomes.push({ status: 'fulfilled', value }),
        (reason: unknown) => outcomes.push({ status: 'rejected', reason }),
      ),
    );

    // While the first effect is held, every other call can only find the key in progress.
    await until(async () => (runs === 1 && outcomes.length === 3 ? true : undefined));
    const whileHeld = [...outcomes];
    release();
    await Promise.all(calls);

    expect(runs).toBe(1);
    for (const outcome of whileHeld) {
      expect(outcome.status).toBe('rejected');
      expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(IdempotencyAlreadyInProgressError);
    }
    expect(outcomes.at(-1)).toEqual({ status: 'fulfilled', value: { ok: true } });
    expect(await once('cld:concurrent', effect)).toEqual({ ok: true });
    expect(runs).toBe(1);
  });

  it('makes concurrent duplicates wait for the first result instead of failing', async () => {
    const once = createOnce(await layer(), 'test.waiting', 5_000);
    let runs = 0;
    const effect = async () => {
      runs++;
      await sleep(300);
      return { ts: 'first' };
    };

    const results = await Promise.all([1, 2, 3].map(() => once('cld:waiting', effect)));

    expect(runs).toBe(1);
    expect(results).toEqual([{ ts: 'first' }, { ts: 'first' }, { ts: 'first' }]);
  });

  it('forgets a failed effect, so the retried event runs it again', async () => {
    const once = createOnce(await layer(), 'test.failure');
    let runs = 0;
    const flaky = async () => {
      runs++;
      if (runs === 1) throw new Error('slack is down');
      return { ts: 'posted' };
    };

    await expect(once('cld:flaky', flaky)).rejects.toThrow('slack is down');
    expect(await once('cld:flaky', flaky)).toEqual({ ts: 'posted' });
    expect(await once('cld:flaky', flaky)).toEqual({ ts: 'posted' });
    expect(runs).toBe(2);
  });

  it('keeps one record per key in the idempotency partition, expiring after a day', async () => {
    const once = createOnce(await layer(), 'test.records');
    const before = Math.floor(Date.now() / 1000);
    await once('cld:r1', async () => 1);
    await once('cld:r2', async () => 2);

    const items = await records('test.records#');
    expect(items).toHaveLength(2);
    expect(items.map((item) => item.status?.S)).toEqual(['COMPLETED', 'COMPLETED']);
    for (const item of items) {
      const expiration = Number(item.expiration?.N);
      expect(expiration).toBeGreaterThanOrEqual(before + DELIVERY_RECORD_SECONDS);
      expect(expiration).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + DELIVERY_RECORD_SECONDS);
    }
  });
});

describe('the reply step on deps.idempotency (projections table)', () => {
  let slack: Receiver;
  let dataDir: string;
  let resources: ResourceIndex;

  beforeAll(async () => {
    slack = await startReceiver();
    dataDir = await mkdtemp(join(tmpdir(), 'cld-reply-ddb-'));
    resources = new ResourceIndex(new FilesystemStorage(dataDir), new RulesPolicy(rules));
  });

  afterAll(async () => {
    await slack?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  /** A Slack-thread conversation with its user Message and final answer, stored as the system writes them. */
  async function storeAnswered(threadTs: string) {
    const conversation: Conversation = {
      meta: withMeta({ type: 'common.Conversation', name: slackThreadName('T1', 'C7', threadTs) }),
      actor: 'slack:T1:U1',
      channel: { kind: 'slack', address: { team: 'T1', channel: 'C7', thread_ts: threadTs } },
    };
    const user: Message = {
      meta: withMeta({ type: 'common.Message', name: `slack-${threadTs}`, parent: conversation.meta.id }),
      role: 'user',
      content: 'How do I version a bucket?',
    };
    const answer: Message = {
      meta: withMeta({
        type: 'common.Message',
        name: NAMES.answer(user.meta.id),
        parent: conversation.meta.id,
      }),
      role: 'assistant',
      content: 'Set `versioned: true`.',
      inReplyTo: user.meta.id,
    };
    const actor = { kind: 'user', id: conversation.actor, conversation: conversation.meta.id } as const;
    await resources.put(actor, conversation);
    await resources.put(actor, user);
    await resources.put(
      { kind: 'plan', id: 'function:plan', conversation: conversation.meta.id, message: user.meta.id },
      answer,
    );
    return answer;
  }

  it('posts a final answer once when its event arrives four times at once and again later', async () => {
    const answer = await storeAnswered('1700000300.000001');
    const deps = { resources, idempotency: await layer() } as unknown as Deps;
    const channels = createChannels(
      parseChannelConfig({ CLD_SLACK_BOT_TOKEN: 'xoxb-ddb', CLD_SLACK_API_URL: `${slack.url}/api/` }),
    );
    const event = toResourcePut(s3ObjectCreatedEvent('cld-test', keyOf(answer.meta.id), 1));

    const outcomes = await Promise.all([1, 2, 3, 4].map(() => replyStep(event, deps, channels)));
    const later = await replyStep(event, deps, channels);

    const posts = slack.requests.filter(
      (r) => r.path === '/api/chat.postMessage' && r.fields.thread_ts === '1700000300.000001',
    );
    expect(posts).toHaveLength(1);
    expect(posts[0]?.fields.markdown_text).toBe(escapeSlackText(answer.content));
    const ts = (posts[0]?.answered as { ts: string }).ts;
    for (const outcome of [...outcomes, later])
      expect(outcome).toEqual({ action: 'delivered', urn: answer.meta.id, detail: `slack ts ${ts}` });
    const items = await records('cld.reply#');
    expect(items).toHaveLength(1);
    expect(items[0]?.status?.S).toBe('COMPLETED');
    expect(items[0]?.data).toEqual({ M: { ts: { S: ts } } });
  });
});

describe('the reply step under duplicated, shuffled delivery (local runtime, journaled layer)', () => {
  let runtime: LocalRuntime;
  let slack: Receiver;
  let dataDir: string;

  beforeAll(async () => {
    slack = await startReceiver();
    dataDir = await mkdtemp(join(tmpdir(), 'cld-reply-'));
    runtime = await createLocalRuntime({
      dataDir,
      faults: { copies: 3, shuffle: true, maxDelayMs: 10, seed: 11 },
      backoffMs: () => 150,
    });
    await ingest(DOCS, {
      resources: runtime.deps.resources,
      index: runtime.deps.search as MiniSearchIndex,
      actor: SYSTEM_ACTOR,
      cwd: process.cwd(),
    });
    const config = parseChannelConfig({
      CLD_SLACK_BOT_TOKEN: 'xoxb-reply-test',
      CLD_SLACK_API_URL: `${slack.url}/api/`,
    });
    provideChannels(createChannels(config));
  });

  afterAll(async () => {
    provideChannels(undefined);
    await slack?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  async function askInThread(threadTs: string, content: string) {
    const started = await startConversation(runtime.deps.resources, {
      user: 'slack:T1:U1',
      channel: { kind: 'slack', address: { team: 'T1', channel: 'C1', thread_ts: threadTs } },
      content,
      conversationName: slackThreadName('T1', 'C1', threadTs),
      messageName: `slack-${threadTs}`,
    });
    await runtime.bus.idle();
    return started;
  }

  it('posts the answer once and the progress message once, though every event arrives three times', async () => {
    const started = await askInThread(
      '1700000100.000001',
      '1. How do I send S3 object events to EventBridge? 2. How do I grant read access to a bucket?',
    );

    const inThread = slack.requests.filter(
      (r) => r.path === '/api/chat.postMessage' && r.fields.thread_ts === '1700000100.000001',
    );
    const answers = inThread.filter((r) => r.fields.markdown_text !== undefined);
    const progress = inThread.filter((r) => r.fields.text !== undefined);
    const answer = (await runtime.deps.resources.get(SYSTEM_ACTOR, started.answer)) as Message;
    expect(runtime.bus.stats.routed).toBeGreaterThan(0);
    expect(answers).toHaveLength(1);
    expect(answers[0]?.fields.markdown_text).toBe(escapeSlackText(answer.content));
    expect(progress).toHaveLength(1);
    expect(runtime.bus.deadLetters).toEqual([]);
    // The guard ran on the runtime's deps.idempotency: its journal holds the two delivery records.
    const journal = (await readFile(join(dataDir, 'projections', 'idempotency.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { key: string; record?: { status: string } });
    const completed = new Set(
      journal.filter((e) => e.record?.status === 'COMPLETED').map((e) => e.key.split('#')[0]),
    );
    expect(completed).toEqual(new Set(['cld.reply']));
  });

  it('retries a failed post (Slack answering 500) and still posts exactly once', async () => {
    // Three failures exhaust the Web API client's own attempts (1 + 2 retries): the step fails once.
    slack.failNext(3, 500);
    const failuresBefore = runtime.bus.stats.failures;

    await askInThread('1700000200.000001', 'How do I enable versioning on a bucket?');

    const attempts = slack.requests.filter(
      (r) => r.path === '/api/chat.postMessage' && r.fields.thread_ts === '1700000200.000001',
    );
    expect(attempts.filter((r) => r.answered?.ok === false)).toHaveLength(3);
    expect(attempts.filter((r) => r.answered?.ok === true)).toHaveLength(1);
    expect(runtime.bus.stats.failures).toBeGreaterThan(failuresBefore);
    expect(runtime.bus.deadLetters).toEqual([]);
  });
});
