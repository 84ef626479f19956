import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  APPROVE_ACTION,
  DENY_ACTION,
  decideFromChat,
  decideSlackInteraction,
  parseTypedDecision,
  type SlackBlockActions,
  slackApprovalBlocks,
  teamsApprovalText,
} from '../../shared/channels/approvals.js';
import type { Channels } from '../../shared/channels/context.js';
import { replyStep } from '../../shared/channels/reply.js';
import { typedDecisionText } from '../../shared/channels/teams.js';
import { approvalIdOf, approvalRequest, decisionUrnOf } from '../../shared/domain/approval.js';
import { answerMessage, toolActor } from '../../shared/domain/common.js';
import { sweeperActor } from '../../shared/domain/sweep.js';
import { turnMessageOf } from '../../shared/domain/turn.js';
import { StalledError, toErrorInfo } from '../../shared/errors.js';
import { type ResourcePutEvent, s3ObjectCreatedEvent, toResourcePut } from '../../shared/events/envelope.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import { withMeta } from '../../shared/resources/meta.js';
import type { ApprovalRequest, Conversation, ToolCallResource } from '../../shared/resources/schemas.js';
import { createLocalRuntime, type LocalRuntime } from '../../shared/runtime/local.js';
import { childUrn, keyOf, rootOf } from '../../shared/urn.js';
import { startWaitingForApproval } from '../helpers/approvals.js';

/**
 * The chat side of the approval of tool calls (shared/channels/approvals.ts) on the real resource
 * index and policy: a Slack button press decides only as the conversation's user, never after
 * expiry, never twice otherwise; Teams' typed replies; the reply step's notice for a request of a
 * nested task, posted once however often its event comes.
 */

const TEAM = 'T0TEAM';
const ALICE = `slack:${TEAM}:U0ALICE`;

let dir: string;
let runtime: LocalRuntime;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cld-chat-approvals-'));
  runtime = await createLocalRuntime({ dataDir: dir, toolApproval: { search: 'always' } });
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true, maxRetries: 10 });
});

/** A conversation of Alice's whose first search call waits for approval. */
async function waitingRequest(
  name: string,
): Promise<{ conversation: Conversation; request: ApprovalRequest }> {
  const { conversation, requests } = await startWaitingForApproval(runtime, ALICE, name);
  const [request] = requests;
  if (!request) throw new Error('no approval request');
  return { conversation, request };
}

function pressed(request: ApprovalRequest, actionId: string, user = 'U0ALICE'): SlackBlockActions {
  return {
    type: 'block_actions',
    team: { id: TEAM },
    user: { id: user },
    response_url: 'https://hooks.slack.com/actions/T0TEAM/1/abc',
    actions: [
      {
        action_id: actionId,
        value: request.meta.id,
        block_id: `cld.approval.${approvalIdOf(request.meta.id)}`,
      },
    ],
  };
}

async function decisionOf(request: ApprovalRequest) {
  return runtime.deps.resources.find(SYSTEM_ACTOR, 'tool.Decision', decisionUrnOf(request.meta.id));
}

describe('parseTypedDecision (Teams replies)', () => {
  const id = '0123456789abcdef';
  it.each<[string, ReturnType<typeof parseTypedDecision>]>([
    [`approve ${id}`, { decision: 'approve', id }],
    [`Approve ${id.toUpperCase()}`, { decision: 'approve', id }],
    [
      `deny ${id} too expensive, use the docs`,
      { decision: 'deny', id, reason: 'too expensive, use the docs' },
    ],
    [`  deny   ${id}  `, { decision: 'deny', id }],
    ['approve the plan', undefined],
    [`approve ${id}0`, undefined],
    [`please approve ${id}`, undefined],
    ['deny', undefined],
    ['How do I approve a pull request?', undefined],
  ])('%j → %j', (text, expected) => {
    expect(parseTypedDecision(text)).toEqual(expected);
  });

  it('keeps at most 1,000 characters of reason', () => {
    expect(parseTypedDecision(`deny ${id} ${'x'.repeat(2_000)}`)?.reason).toHaveLength(1_000);
  });
});

describe('Slack button presses (decideSlackInteraction)', () => {
  it('puts the request URN in both buttons of the notice, under our action ids', async () => {
    const { request } = await waitingRequest('slack-blocks');
    const blocks = slackApprovalBlocks(request);
    const actions = blocks.find((b) => b.type === 'actions') as unknown as {
      block_id: string;
      elements: { action_id: string; value: string }[];
    };
    expect(actions.block_id).toBe(`cld.approval.${approvalIdOf(request.meta.id)}`);
    expect(actions.elements.map((e) => [e.action_id, e.value])).toEqual([
      [APPROVE_ACTION, request.meta.id],
      [DENY_ACTION, request.meta.id],
    ]);
    expect(teamsApprovalText(request)).toContain(`\`approve ${approvalIdOf(request.meta.id)}\``);
  });

  it("decides nothing for another user's press, for an unknown action, or after expiry", async () => {
    const { request } = await waitingRequest('slack-refusals');
    const now = new Date();

    const bob = await decideSlackInteraction(
      runtime.deps.resources,
      pressed(request, APPROVE_ACTION, 'U0BOB'),
      now,
    );
    expect(bob).toMatchObject({
      action: 'respond',
      decision: { outcome: 'not-found' },
      payload: { response_type: 'ephemeral', replace_original: false },
    });
    const other = await decideSlackInteraction(
      runtime.deps.resources,
      pressed(request, 'some.other.button'),
      now,
    );
    expect(other).toEqual({ action: 'ignore', reason: 'action some.other.button' });
    const late = new Date(Date.parse(request.expiresAt) + 1_000);
    const expired = await decideSlackInteraction(
      runtime.deps.resources,
      pressed(request, APPROVE_ACTION),
      late,
    );
    expect(expired).toMatchObject({ decision: { outcome: 'expired' }, payload: { replace_original: true } });
    expect(await decisionOf(request)).toBeUndefined();
  });

  it('decides as the conversation user, replaces the buttons with the outcome, and refuses the other button later', async () => {
    const { request } = await waitingRequest('slack-decide');
    const now = new Date();

    const denied = await decideSlackInteraction(runtime.deps.resources, pressed(request, DENY_ACTION), now);
    expect(denied).toMatchObject({ action: 'respond', decision: { outcome: 'decided', created: true } });
    if (denied.action !== 'respond') throw new Error('unreachable');
    expect(denied.payload.replace_original).toBe(true);
    expect(denied.payload.text).toMatch(/Denied by <@U0ALICE>/);
    expect(JSON.stringify(denied.payload.blocks)).not.toContain(APPROVE_ACTION);
    expect(await decisionOf(request)).toMatchObject({ decision: 'deny', by: ALICE, channel: 'slack' });

    const again = await decideSlackInteraction(runtime.deps.resources, pressed(request, DENY_ACTION), now);
    expect(again).toMatchObject({ decision: { outcome: 'decided', created: false } });
    const approve = await decideSlackInteraction(
      runtime.deps.resources,
      pressed(request, APPROVE_ACTION),
      now,
    );
    expect(approve).toMatchObject({
      decision: { outcome: 'decided-otherwise' },
      payload: { response_type: 'ephemeral' },
    });
    expect((await decisionOf(request))?.decision).toBe('deny');
  });
});

describe('a decision from chat on a request whose message ended', () => {
  /** Ends the request's message with a STALLED answer, as the sweeper did before issue 21. */
  async function endMessage(request: ApprovalRequest): Promise<string> {
    const message = turnMessageOf(request.meta.id);
    const error = new StalledError('no progress after 3 redrive(s)');
    await runtime.deps.resources.put(
      sweeperActor(rootOf(message), message),
      answerMessage(message, { content: error.message, error: toErrorInfo(error) }, new Date()),
    );
    return message;
  }

  it('replaces the Slack buttons with the end and decides nothing, whichever button', async () => {
    const { request } = await waitingRequest('slack-ended');
    await endMessage(request);

    for (const action of [APPROVE_ACTION, DENY_ACTION]) {
      const pressedAfter = await decideSlackInteraction(
        runtime.deps.resources,
        pressed(request, action),
        new Date(),
      );

      expect(pressedAfter).toMatchObject({
        action: 'respond',
        decision: { outcome: 'ended', status: 'failed' },
        payload: { replace_original: true },
      });
      if (pressedAfter.action !== 'respond') throw new Error('unreachable');
      expect(pressedAfter.payload.text).toContain("This request's message already ended (failed)");
      expect(pressedAfter.payload.blocks).toBeUndefined();
    }
    expect(await decisionOf(request)).toBeUndefined();
  });

  it('answers a Teams reply that the message ended and decides nothing', async () => {
    const { conversation, request } = await waitingRequest('teams-ended');
    await endMessage(request);
    const typed = { decision: 'approve' as const, id: approvalIdOf(request.meta.id) };

    const decided = await decideFromChat(runtime.deps.resources, {
      user: ALICE,
      channel: 'teams',
      conversation,
      request: typed.id,
      decision: typed.decision,
      now: new Date(),
    });

    expect(decided).toMatchObject({ outcome: 'ended', status: 'failed' });
    expect(typedDecisionText(typed, decided)).toBe(
      `Request ${typed.id} belongs to a message that already ended (failed): nothing was decided and the tool does not run.`,
    );
    expect(await decisionOf(request)).toBeUndefined();
  });
});

describe('typedDecisionText (the synchronous Teams answer)', () => {
  const typed = { decision: 'approve' as const, id: '0123456789abcdef' };
  it.each<[Parameters<typeof typedDecisionText>[1], RegExp]>([
    [{ outcome: 'not-found', message: '' }, /No approval request 0123456789abcdef of yours/],
    [{ outcome: 'expired', message: 'x' }, /expired before a decision: nothing was decided/],
    [{ outcome: 'decided-otherwise', message: 'already decided: deny' }, /already decided otherwise/],
    [{ outcome: 'ended', message: 'x', status: 'done' }, /already ended \(done\): nothing was decided/],
  ])('%j', (decided, expected) => {
    expect(typedDecisionText(typed, decided)).toMatch(expected);
  });
});

describe('the reply step on an approval request', () => {
  it("asks the user in the conversation's Slack thread, for a request of a nested task, once", async () => {
    const conversationUrn = childUrn(
      undefined,
      'common.Conversation',
      'slack:T0TEAM:C0NOTICE:1700000000.000001',
    );
    const conversation: Conversation = {
      meta: withMeta({ type: 'common.Conversation', name: 'slack:T0TEAM:C0NOTICE:1700000000.000001' }),
      actor: ALICE,
      channel: {
        kind: 'slack',
        address: { team: TEAM, channel: 'C0NOTICE', thread_ts: '1700000000.000001' },
      },
    };
    expect(conversation.meta.id).toBe(conversationUrn);
    // Stored as the Slack function stores it; the nested task's call and request as the steps would.
    await runtime.deps.resources.put(
      { kind: 'user', id: ALICE, conversation: conversationUrn },
      conversation,
    );
    const message = childUrn(conversationUrn, 'common.Message', 'slack-1700000000.000001');
    const sub = childUrn(childUrn(message, 'plan.Task', 'task-1'), 'plan.Task', 'task-1');
    const call: ToolCallResource = {
      meta: withMeta({ type: 'tool.Call', name: 'call-1', parent: sub }),
      call: { id: 'tooluse-1', name: 'search', input: { query: 'EventBridge' } },
      turn: childUrn(sub, 'common.Message', 'turn-1'),
    };
    const request = approvalRequest(call, 'Find the S3 event setup', ALICE, 60_000, new Date());
    await runtime.deps.resources.put(toolActor(sub, 'search'), request);

    const posts: Record<string, unknown>[] = [];
    const channels = {
      secrets: { slackBotToken: async () => 'xoxb-test' },
      slack: {
        postMessage: async (_token: string, posted: Record<string, unknown>) => {
          posts.push(posted);
          return { ts: `1700000001.00000${posts.length}` };
        },
      },
    } as unknown as Channels;
    const event: ResourcePutEvent = toResourcePut(s3ObjectCreatedEvent('local', keyOf(request.meta.id), 1));
    const outcomes = await Promise.all([1, 2, 3].map(() => replyStep(event, runtime.deps, channels)));

    expect(outcomes.map((o) => o.action)).toEqual(['delivered', 'delivered', 'delivered']);
    expect(posts).toHaveLength(1);
    expect(posts[0]).toMatchObject({ channel: 'C0NOTICE', threadTs: '1700000000.000001' });
    expect(String(posts[0]?.text)).toContain(`Approval needed: search for "Find the S3 event setup"`);
    expect(JSON.stringify(posts[0]?.blocks)).toContain(request.meta.id);
  });
});
