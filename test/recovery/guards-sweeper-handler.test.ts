import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConversation } from '../../shared/domain/conversation.js';
import type { Deps } from '../../shared/domain/ports.js';
import { ConfigError, ValidationError } from '../../shared/errors.js';
import { LocalRedrivePublisher } from '../../shared/events/redrive.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import { builtinPolicy } from '../../shared/policy/select.js';
import { ResourceIndex } from '../../shared/resources/resource-index.js';
import type { Message } from '../../shared/resources/schemas.js';
import { createLocalRuntime, LOCAL_BUCKET, type LocalRuntime } from '../../shared/runtime/local.js';
import { createSweeperHandler, publisherFromEnv } from '../../shared/runtime/sweeper-handler.js';

/**
 * The sweeper's Lambda handler in-process (issue 22, finding 10: shared/runtime/sweeper-handler.ts
 * had no in-process coverage), on the local adapters: the open-conversations projection and
 * stores of a local runtime, the local redrive publisher onto its bus, invoked with an EventBridge
 * "Scheduled Event" as AWS sends it. It leaves a conversation alone until it stalled, re-drives a
 * stalled one to its answer, closes it on the next sweep, and refuses an event that is not a
 * Scheduled Event and a composition without the projection.
 */

/** An EventBridge scheduled-rule event (EventBridge User Guide, "Scheduled events"). */
function scheduledEvent(time: Date) {
  return {
    version: '0',
    id: '89d1a02d-5ec7-412e-82f5-13505f849b41',
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '123456789012',
    time: time.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region: 'eu-west-1',
    resources: ['arn:aws:events:eu-west-1:123456789012:rule/cld-sweeper'],
    detail: {},
  };
}

const CONTEXT = {
  callbackWaitsForEmptyEventLoop: true,
  functionName: 'cld-sweeper',
  functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:cld-sweeper',
  memoryLimitInMB: '512',
  awsRequestId: 'c6af9ac6-7b61-11e6-9a41-93e812345678',
  logGroupName: '/aws/lambda/cld-sweeper',
  logStreamName: '2026/01/01/[$LATEST]abcdef',
  getRemainingTimeInMillis: () => 60_000,
  done: () => undefined,
  fail: () => undefined,
  succeed: () => undefined,
} as Context;

let dir: string;
let runtime: LocalRuntime;
let clock: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cld-guards-sweeper-'));
  clock = Date.now();
  runtime = await createLocalRuntime({ dataDir: dir, backoffMs: () => 5, now: () => new Date(clock) });
});

afterAll(async () => {
  await runtime?.bus.idle();
  await rm(dir, { recursive: true, force: true, maxRetries: 10 });
});

/** A conversation whose user Message was stored but whose event was lost (no notifications). */
function lostConversation(name: string) {
  return startConversation(
    new ResourceIndex(runtime.storage, builtinPolicy()),
    {
      user: 'cli:sweeper',
      channel: { kind: 'cli' },
      content: 'How do I send S3 object events to EventBridge?',
      conversationName: name,
      now: new Date(clock),
    },
    { openConversations: runtime.openConversations },
  );
}

function handlerFor(deps: Deps = runtime.deps) {
  let published = 0;
  const local = new LocalRedrivePublisher(runtime.bus, LOCAL_BUCKET);
  const handler = createSweeperHandler({
    getDeps: async () => deps,
    publisher: async () => ({
      publish: async (urns) => {
        published += urns.length;
        await local.publish(urns);
      },
    }),
  });
  return { handler, published: () => published };
}

describe('the sweeper handler in-process', () => {
  it('re-drives a conversation once it stalled, to its answer, and closes it on the next run', async () => {
    const started = await lostConversation('guards-sweeper');
    const { handler, published } = handlerFor();

    clock += runtime.deps.limits.stallAfterMs - 1_000;
    const early = await handler(scheduledEvent(new Date(clock)), CONTEXT);
    expect(early).toMatchObject({ redriven: 0, failed: 0, events: 0 });
    expect(published()).toBe(0);
    expect(await runtime.deps.resources.find(SYSTEM_ACTOR, 'common.Message', started.answer)).toBeUndefined();

    clock += 2_000;
    const stalled = await handler(scheduledEvent(new Date(clock)), CONTEXT);
    expect(stalled).toEqual({ conversations: 1, redriven: 1, failed: 0, closed: 0, events: 1 });
    expect(published()).toBe(1);
    await runtime.bus.idle();
    const answer = (await runtime.deps.resources.find(SYSTEM_ACTOR, 'common.Message', started.answer)) as
      | Message
      | undefined;
    expect(answer?.role).toBe('assistant');
    expect(answer?.error).toBeUndefined();

    clock += runtime.deps.limits.stallAfterMs + 1_000;
    const after = await handler(scheduledEvent(new Date(clock)), CONTEXT);
    expect(after).toEqual({ conversations: 1, redriven: 0, failed: 0, closed: 1, events: 0 });
    const last = await handler(scheduledEvent(new Date(clock)), CONTEXT);
    expect(last.conversations).toBe(0);
  });

  it.each([
    ['a Scheduled Event from another source', { ...scheduledEvent(new Date()), source: 'cld' }],
    ['an S3 Object Created event', { ...scheduledEvent(new Date()), 'detail-type': 'Object Created' }],
    ['an event without time', { 'detail-type': 'Scheduled Event', source: 'aws.events' }],
    ['no event', null],
  ])('refuses %s (ValidationError) and publishes nothing', async (_, event) => {
    const { handler, published } = handlerFor();
    await expect(handler(event, CONTEXT)).rejects.toBeInstanceOf(ValidationError);
    expect(published()).toBe(0);
  });

  it('refuses to run without the open-conversations projection (ConfigError)', async () => {
    const { openConversations: _, ...without } = runtime.deps;
    const { handler } = handlerFor(without as Deps);
    await expect(handler(scheduledEvent(new Date()), CONTEXT)).rejects.toBeInstanceOf(ConfigError);
  });

  it('names the missing bus or bucket of the default publisher (ConfigError)', async () => {
    await expect(publisherFromEnv({ CLD_BUCKET: 'b' })).rejects.toThrow(/CLD_EVENT_BUS and CLD_BUCKET/);
  });
});
