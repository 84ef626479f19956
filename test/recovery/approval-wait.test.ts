/**
 * Approvals that wait (issue 21, item 6): a 2-part question whose two `search` calls both need
 * the user's approval. The user decides one; the clock moves past the sweeper's stall time again
 * and again — as many sweeps as it takes the sweeper to answer a stalled message `STALLED`
 * (`maxRedrives` + 1) — and the message still waits, its second request still open; approving the
 * second ends it `done`. Once through the sweep the local runtimes run (shared/domain/sweep.ts),
 * once through the sweeper's Lambda handler as deployed (shared/runtime/sweeper-handler.ts, which
 * functions/sweeper/handler.ts exports) with the real EventBridge client against a local
 * `PutEvents` stub. Before the fix, a finished sibling's output counted as work to re-drive, so
 * "waiting only for people" was never true: the first sweep re-drove it and the fourth answered it
 * `STALLED` while the second request was open.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalStatus, decideApproval } from '../../shared/domain/approval.js';
import { startConversation } from '../../shared/domain/conversation.js';
import { conversationProgress, type TurnProgress } from '../../shared/domain/progress.js';
import { type SweepOutcome, sweep } from '../../shared/domain/sweep.js';
import type { ResourceEvent } from '../../shared/events/envelope.js';
import { createEventBridgeClient, EventBridgePublisher } from '../../shared/events/eventbridge-publisher.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import { builtinPolicy } from '../../shared/policy/select.js';
import { ResourceIndex } from '../../shared/resources/resource-index.js';
import type { AnyResource, ApprovalRequest, Conversation, Message } from '../../shared/resources/schemas.js';
import {
  createLocalRuntime,
  LOCAL_BUCKET,
  type LocalRuntime,
  localContext,
} from '../../shared/runtime/local.js';
import { localSweepDeps } from '../../shared/runtime/local-recovery.js';
import { createSweeperHandler, type SweepSummary } from '../../shared/runtime/sweeper-handler.js';
import { ingest } from '../../shared/search/ingest.js';
import type { MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import { deliveredEvent, type EventBridgeStub, startEventBridgeStub } from '../helpers/eventbridge-stub.js';

const MINUTE = 60_000;
const USER = 'cli:approver';
const QUESTION =
  '1. How do I send S3 object events to EventBridge? 2. How do I grant read access to a bucket?';

let dataDir: string;
let runtime: LocalRuntime;
let stub: EventBridgeStub;
let clock: number;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'cld-approval-wait-'));
  clock = Date.parse('2026-01-01T00:00:00.000Z');
  runtime = await createLocalRuntime({
    dataDir,
    toolApproval: { search: 'always' },
    backoffMs: () => 5,
    now: () => new Date(clock),
    // Requests that wait for hours, and the wall time that counts the wait, raised together (as
    // the README says): the sweeps below move the clock 4 × 11 min. Stall time and redrives are
    // the defaults the sweeper runs with in AWS.
    limits: { approvalTtlMs: 6 * 60 * MINUTE, messageWallTimeMs: 12 * 60 * MINUTE },
  });
  // The aws-s3 README (60 chunks): both parts find their answer and pass the supervisor.
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
  await rm(dataDir, { recursive: true, force: true, maxRetries: 10 });
});

/** Everything stored under the conversation, the Conversation included. */
async function stored(conversation: string): Promise<AnyResource[]> {
  const root = await runtime.deps.resources.get(SYSTEM_ACTOR, conversation);
  return [root, ...(await runtime.deps.resources.list(SYSTEM_ACTOR, conversation))];
}

/** The progress of the conversation's only message at the runtime's clock. */
async function turn(conversation: string): Promise<TurnProgress> {
  const progress = conversationProgress(conversation, await stored(conversation), {
    now: new Date(clock),
    stallAfterMs: runtime.deps.limits.stallAfterMs,
  });
  expect(progress.turns).toHaveLength(1);
  return progress.turns[0] as TurnProgress;
}

async function answerOf(answerUrn: string): Promise<Message | undefined> {
  return (await runtime.deps.resources.find(SYSTEM_ACTOR, 'common.Message', answerUrn)) as
    | Message
    | undefined;
}

async function requestsOf(conversation: string): Promise<ApprovalRequest[]> {
  return (await runtime.deps.resources.list(SYSTEM_ACTOR, conversation, {
    type: 'tool.Approval',
  })) as ApprovalRequest[];
}

async function approve(conversation: Conversation, request: ApprovalRequest): Promise<void> {
  // What every channel calls (HTTP route, Slack button, Teams reply), as the conversation's user.
  await decideApproval(runtime.deps.resources, {
    user: USER,
    channel: 'http',
    conversation,
    request: request.meta.id,
    decision: 'approve',
    now: new Date(clock),
  });
  await runtime.bus.idle();
}

/**
 * Asks the 2-part question and approves the request of one part; returns once that part is done
 * and the other part's request is still open.
 */
async function oneOfTwoApproved(name: string) {
  const started = await startConversation(
    runtime.deps.resources,
    { user: USER, channel: { kind: 'cli' }, content: QUESTION, conversationName: name, now: new Date(clock) },
    { openConversations: runtime.openConversations },
  );
  await runtime.bus.idle();
  const conversation = await runtime.deps.resources.getAs(
    SYSTEM_ACTOR,
    'common.Conversation',
    started.conversation,
  );
  const requests = await requestsOf(started.conversation);
  expect(requests.map((r) => r.tool)).toEqual(['search', 'search']);
  const [first, second] = requests as [ApprovalRequest, ApprovalRequest];
  clock += MINUTE;
  await approve(conversation, first);
  // One part finished (its output stored); the other still waits for its request.
  const outputs = (await stored(started.conversation)).filter(
    (r) => r.meta.type === 'common.Message' && r.meta.name === 'output',
  );
  expect(outputs).toHaveLength(1);
  expect(await requestsOf(started.conversation)).toHaveLength(2);
  expect(approvalStatus(second, undefined, new Date(clock))).toBe('pending');
  return { started, conversation, second };
}

/** Runs `sweepOnce` maxRedrives + 1 times, each after the stall time: enough to answer a stalled message STALLED. */
async function sweepPastStallTime(sweepOnce: () => Promise<void>): Promise<void> {
  const { maxRedrives, stallAfterMs } = runtime.deps.limits;
  expect({ maxRedrives, stallAfterMs }).toEqual({ maxRedrives: 3, stallAfterMs: 10 * MINUTE });
  for (let i = 0; i <= maxRedrives; i++) {
    clock += stallAfterMs + MINUTE;
    await sweepOnce();
    await runtime.bus.idle();
  }
}

/** The message still waits for the second request, and nothing answered it. */
async function expectStillWaiting(
  started: { conversation: string; answer: string },
  second: ApprovalRequest,
): Promise<void> {
  expect(await answerOf(started.answer)).toBeUndefined();
  const now = await turn(started.conversation);
  expect(now.status).toBe('running');
  expect(now.waitingFor).toEqual([expect.stringContaining("the user's approval of tool search")]);
  expect(now.waitingFor[0]).toContain(second.meta.id.slice(-16));
  expect((await runtime.openConversations.list()).map((o) => o.conversation)).toContain(started.conversation);
}

/** Approving the second request ends the message `done`, and the next sweep closes its item. */
async function expectDoneAfterSecondApproval(
  started: { conversation: string; answer: string },
  conversation: Conversation,
  second: ApprovalRequest,
): Promise<void> {
  clock += MINUTE;
  await approve(conversation, second);
  const answer = await answerOf(started.answer);
  expect(answer?.error).toBeUndefined();
  expect(answer?.content.length).toBeGreaterThan(0);
  expect((await turn(started.conversation)).status).toBe('done');
  expect(await requestsOf(started.conversation)).toHaveLength(2); // no other call needed a person
}

describe('a 2-part question whose two tool calls both need approval', () => {
  it('still waits after one decision and sweeps past the stall time, and ends done on the second approval (local sweep)', async () => {
    const { started, conversation, second } = await oneOfTwoApproved('approval-wait-local');
    const outcomes: SweepOutcome[] = [];

    await sweepPastStallTime(async () => {
      outcomes.push(...(await sweep(localSweepDeps(runtime), { mode: 'sweep' })));
    });

    const mine = outcomes.filter((o) => o.conversation === started.conversation);
    expect(mine.map((o) => o.action)).toEqual(['waiting', 'waiting', 'waiting', 'waiting']);
    expect(mine.every((o) => o.events === 0)).toBe(true);
    await expectStillWaiting(started, second);

    await expectDoneAfterSecondApproval(started, conversation, second);
    clock += runtime.deps.limits.stallAfterMs + MINUTE;
    const closing = await sweep(localSweepDeps(runtime), { mode: 'sweep' });
    expect(closing.find((o) => o.conversation === started.conversation)?.action).toBe('closed');
  });

  it('still waits through the sweeper Lambda handler as deployed, and ends done on the second approval', async () => {
    const { started, conversation, second } = await oneOfTwoApproved('approval-wait-handler');
    const client = createEventBridgeClient({
      endpoint: stub.endpoint,
      region: 'eu-west-1',
      credentials: { accessKeyId: 'stub', secretAccessKey: 'stub' },
      maxAttempts: 1,
    });
    const handler = createSweeperHandler({
      getDeps: async () => runtime.deps,
      publisher: async () =>
        new EventBridgePublisher({ client, bucket: LOCAL_BUCKET, eventBusName: 'default' }),
    });
    const context = { ...localContext('plan'), functionName: 'cld-sweeper' } as Context;
    const summaries: SweepSummary[] = [];
    const accepted = stub.accepted.length;
    let delivered = accepted;

    await sweepPastStallTime(async () => {
      const scheduled = {
        version: '0',
        id: `sweep-${summaries.length + 1}`,
        'detail-type': 'Scheduled Event',
        source: 'aws.events',
        account: '111122223333',
        time: new Date(clock).toISOString(),
        region: 'eu-west-1',
        resources: ['arn:aws:events:eu-west-1:111122223333:rule/cld-sweeper'],
        detail: {},
      };
      summaries.push((await handler(scheduled, context)) as SweepSummary);
      // What EventBridge would deliver of any redrive, as it delivers it to a rule's target.
      for (const entry of stub.accepted.slice(delivered))
        runtime.bus.publish(deliveredEvent(entry) as ResourceEvent);
      delivered = stub.accepted.length;
    });

    expect(summaries.map((s) => ({ redriven: s.redriven, failed: s.failed, events: s.events }))).toEqual(
      Array.from({ length: 4 }, () => ({ redriven: 0, failed: 0, events: 0 })),
    );
    expect(summaries.every((s) => s.conversations >= 1)).toBe(true);
    expect(stub.accepted.length).toBe(accepted);
    await expectStillWaiting(started, second);

    await expectDoneAfterSecondApproval(started, conversation, second);
  });

  it('answers a stalled follow-up STALLED but not the message beside it that waits for a person', async () => {
    const name = 'approval-wait-beside-stalled';
    const first = await startConversation(
      runtime.deps.resources,
      {
        user: USER,
        channel: { kind: 'cli' },
        content: 'How do I send S3 object events to EventBridge?',
        conversationName: name,
        now: new Date(clock),
      },
      { openConversations: runtime.openConversations },
    );
    await runtime.bus.idle();
    const [request] = await requestsOf(first.conversation);
    expect(request?.tool).toBe('search');
    // A follow-up whose event was lost (stored without notifications).
    const silent = new ResourceIndex(runtime.storage, builtinPolicy());
    const followUp = await startConversation(silent, {
      user: USER,
      channel: { kind: 'cli' },
      content: 'And how do I grant read access to a bucket?',
      conversationName: name,
      messageName: 'message-2',
      now: new Date(clock),
    });
    // Re-driven events accepted by EventBridge but never delivered (a throttled target).
    const client = createEventBridgeClient({
      endpoint: stub.endpoint,
      region: 'eu-west-1',
      credentials: { accessKeyId: 'stub', secretAccessKey: 'stub' },
      maxAttempts: 1,
    });
    const deps = {
      ...localSweepDeps(runtime),
      publisher: new EventBridgePublisher({ client, bucket: LOCAL_BUCKET, eventBusName: 'default' }),
    };
    const accepted = stub.accepted.length;
    const outcomes: SweepOutcome[] = [];

    await sweepPastStallTime(async () => {
      outcomes.push(...(await sweep(deps, { mode: 'sweep', conversations: [first.conversation] })));
    });

    expect(outcomes.map((o) => o.action)).toEqual(['redriven', 'redriven', 'redriven', 'failed']);
    // Only the stalled follow-up was re-driven.
    expect(stub.accepted.slice(accepted).map((a) => JSON.parse(a.entry.Detail).urn)).toEqual(
      Array.from({ length: 3 }, () => followUp.message),
    );
    expect((await answerOf(followUp.answer))?.error?.code).toBe('STALLED');
    expect(await answerOf(first.answer)).toBeUndefined();
    expect((await runtime.openConversations.list()).map((o) => o.conversation)).toContain(first.conversation);

    clock += MINUTE;
    const conversation = await runtime.deps.resources.getAs(
      SYSTEM_ACTOR,
      'common.Conversation',
      first.conversation,
    );
    await approve(conversation, request as ApprovalRequest);
    const answer = await answerOf(first.answer);
    expect(answer?.error).toBeUndefined();
    expect(answer?.content.length).toBeGreaterThan(0);
  });
});
