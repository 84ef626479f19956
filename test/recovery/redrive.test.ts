/**
 * The sweeper's redrive path end to end on the embedded adapters (issue 12): a conversation whose
 * events were lost is found through the open-conversations projection, re-driven with the real
 * `EventBridgeClient` against a local `PutEvents` stub, and the accepted entries — delivered to
 * the local bus as EventBridge delivers them to a rule's target — match the routing table's
 * rules and run the real handlers to the answer. A conversation that stays stalled is answered
 * with a `STALLED` error after `maxRedrives` redrives, not before.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConversation } from '../../shared/domain/conversation.js';
import { type SweepDeps, sweep } from '../../shared/domain/sweep.js';
import type { ResourceEvent } from '../../shared/events/envelope.js';
import { createEventBridgeClient, EventBridgePublisher } from '../../shared/events/eventbridge-publisher.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import { builtinPolicy } from '../../shared/policy/select.js';
import { replayConversation } from '../../shared/projections/replay.js';
import { ResourceIndex } from '../../shared/resources/resource-index.js';
import type { Message } from '../../shared/resources/schemas.js';
import { createLocalRuntime, LOCAL_BUCKET, type LocalRuntime } from '../../shared/runtime/local.js';
import { ingest } from '../../shared/search/ingest.js';
import type { MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import { keyOf } from '../../shared/urn.js';
import { deliveredEvent, type EventBridgeStub, startEventBridgeStub } from '../helpers/eventbridge-stub.js';
import { PARTIAL_QUESTION } from '../helpers/partial.js';

const MINUTE = 60_000;
let dataDir: string;
let runtime: LocalRuntime;
let stub: EventBridgeStub;
let clock: number;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'cld-redrive-'));
  clock = Date.now();
  runtime = await createLocalRuntime({ dataDir, backoffMs: () => 5, now: () => new Date(clock) });
  await ingest(['node_modules/aws-cdk-lib/aws-s3'], {
    resources: runtime.deps.resources,
    index: runtime.deps.search as MiniSearchIndex,
    actor: SYSTEM_ACTOR,
    cwd: process.cwd(),
  });
  await runtime.bus.idle();
  stub = await startEventBridgeStub();
});

afterAll(async () => {
  await stub?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

/** The sweep's ports: the runtime's stores, the real EventBridge client against the stub. */
function sweepDeps(): SweepDeps {
  const client = createEventBridgeClient({
    endpoint: stub.endpoint,
    region: 'eu-west-1',
    credentials: { accessKeyId: 'stub', secretAccessKey: 'stub' },
    maxAttempts: 1,
  });
  return {
    resources: runtime.deps.resources,
    projections: runtime.deps.projections,
    open: runtime.openConversations,
    publisher: new EventBridgePublisher({ client, bucket: LOCAL_BUCKET, eventBusName: 'default' }),
    limits: runtime.deps.limits,
    logger: new Logger({ serviceName: 'cld', logLevel: 'SILENT' }),
    now: () => new Date(clock),
  };
}

/** A conversation whose user Message was stored but whose event was lost (written without notifications). */
async function lostConversation(name: string) {
  const silent = new ResourceIndex(runtime.storage, builtinPolicy());
  return startConversation(
    silent,
    {
      user: 'cli:redrive',
      channel: { kind: 'cli' },
      content: '1. How do I send S3 object events to EventBridge? 2. How do I grant read access to a bucket?',
      conversationName: name,
      now: new Date(clock),
    },
    { openConversations: runtime.openConversations },
  );
}

describe('sweeper redrive through EventBridge PutEvents', () => {
  it('leaves a conversation alone until it has been idle for the stall time', async () => {
    const started = await lostConversation('redrive-early');
    const before = stub.requests.length;
    clock += runtime.deps.limits.stallAfterMs - 1_000;

    const outcomes = await sweep(sweepDeps(), { mode: 'sweep' });

    expect(outcomes.map((o) => o.conversation)).not.toContain(started.conversation);
    expect(stub.requests.length).toBe(before);
  });

  it('re-drives a stalled conversation with PutEvents (source cld) that the rules route to the steps, to the answer', async () => {
    const started = await lostConversation('redrive-answered');
    clock += runtime.deps.limits.stallAfterMs + MINUTE;
    stub.failNextEntries(1); // a partial failure: the entry is sent again
    const accepted = stub.accepted.length;

    const outcomes = await sweep(sweepDeps(), { mode: 'sweep', conversations: [started.conversation] });

    const outcome = outcomes.find((o) => o.conversation === started.conversation);
    expect(outcome).toMatchObject({ action: 'redriven', events: 1, redrives: 1, waitingFor: ['the plan'] });
    const request = stub.requests.at(-1);
    expect(request?.target).toBe('AWSEvents.PutEvents');
    expect(request?.contentType).toBe('application/x-amz-json-1.1');
    const entries = stub.accepted.slice(accepted);
    expect(entries).toHaveLength(1);
    expect(entries[0]?.entry).toMatchObject({
      Source: 'cld',
      DetailType: 'RESOURCE_PUT',
      EventBusName: 'default',
    });
    expect(JSON.parse(entries[0]?.entry.Detail ?? '{}')).toEqual({
      bucket: { name: LOCAL_BUCKET },
      object: { key: keyOf(started.message) },
      urn: started.message,
      reason: 'redrive',
    });

    const routedBefore = runtime.bus.stats.byTarget.plan;
    for (const entry of entries) runtime.bus.publish(deliveredEvent(entry) as ResourceEvent);
    await runtime.bus.idle();

    expect(runtime.bus.stats.byTarget.plan).toBeGreaterThan(routedBefore);
    const answer = (await runtime.deps.resources.find(SYSTEM_ACTOR, 'common.Message', started.answer)) as
      | Message
      | undefined;
    expect(answer?.error).toBeUndefined();
    expect(answer?.content).toContain('EventBridge');
    const replay = await replayConversation(
      runtime.deps.resources,
      runtime.projections,
      SYSTEM_ACTOR,
      started.conversation,
    );
    expect(replay.differences).toEqual([]);
    // Answered: the next sweep closes its item.
    clock += runtime.deps.limits.stallAfterMs + MINUTE;
    const next = await sweep(sweepDeps(), { mode: 'sweep', conversations: [started.conversation] });
    expect(next[0]?.action).toBe('closed');
    expect((await runtime.openConversations.list()).map((o) => o.conversation)).not.toContain(
      started.conversation,
    );
  });

  it('closes a conversation answered partial and re-drives nothing for it (issue 21)', async () => {
    const started = await startConversation(
      runtime.deps.resources,
      {
        user: 'cli:redrive',
        channel: { kind: 'cli' },
        content: PARTIAL_QUESTION,
        conversationName: 'redrive-partial',
        now: new Date(clock),
      },
      { openConversations: runtime.openConversations },
    );
    await runtime.bus.idle();
    const answer = (await runtime.deps.resources.find(SYSTEM_ACTOR, 'common.Message', started.answer)) as
      | Message
      | undefined;
    expect(answer?.error).toBeUndefined();
    expect(answer?.unanswered).toHaveLength(1);
    const requests = stub.requests.length;
    clock += runtime.deps.limits.stallAfterMs + MINUTE;

    const [outcome] = await sweep(sweepDeps(), { mode: 'sweep', conversations: [started.conversation] });

    expect(outcome?.action).toBe('closed');
    expect(stub.requests.length).toBe(requests);
    expect((await runtime.openConversations.list()).map((o) => o.conversation)).not.toContain(
      started.conversation,
    );
  });

  it(`answers a conversation with STALLED after maxRedrives redrives without progress, not before`, async () => {
    const started = await lostConversation('redrive-stalled');
    const { maxRedrives, stallAfterMs } = runtime.deps.limits;
    expect(maxRedrives).toBe(3);
    for (let redrive = 1; redrive <= maxRedrives; redrive++) {
      clock += stallAfterMs + MINUTE;
      const [outcome] = await sweep(sweepDeps(), { mode: 'sweep', conversations: [started.conversation] });
      // The events are accepted but never delivered (a rule that does not match, a throttled target).
      expect(outcome).toMatchObject({ action: 'redriven', redrives: redrive });
      expect(
        await runtime.deps.resources.find(SYSTEM_ACTOR, 'common.Message', started.answer),
      ).toBeUndefined();
    }
    clock += stallAfterMs + MINUTE;

    const [outcome] = await sweep(sweepDeps(), { mode: 'sweep', conversations: [started.conversation] });

    expect(outcome).toMatchObject({ action: 'failed', redrives: maxRedrives });
    const answer = (await runtime.deps.resources.find(
      SYSTEM_ACTOR,
      'common.Message',
      started.answer,
    )) as Message;
    expect(answer.error?.code).toBe('STALLED');
    expect(answer.content).toMatch(/after 3 redrive\(s\); still waiting for: the plan/);
  });
});
