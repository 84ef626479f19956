import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideApproval, decisionUrnOf } from '../../shared/domain/approval.js';
import { answerMessage, assistantActor, toolActor } from '../../shared/domain/common.js';
import { sweeperActor } from '../../shared/domain/sweep.js';
import { toolStep } from '../../shared/domain/tool.js';
import { turnMessageOf } from '../../shared/domain/turn.js';
import { NotFoundError, PolicyDeniedError } from '../../shared/errors.js';
import type { ResourcePutEvent } from '../../shared/events/envelope.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import { builtinPolicy } from '../../shared/policy/select.js';
import { withMeta } from '../../shared/resources/meta.js';
import { ResourceIndex } from '../../shared/resources/resource-index.js';
import type { ApprovalDecision, ApprovalRequest, Message } from '../../shared/resources/schemas.js';
import { createLocalRuntime, type LocalRuntime } from '../../shared/runtime/local.js';
import type { ToolImplementation } from '../../shared/tools/port.js';
import { keyOf, parentOf, rootOf } from '../../shared/urn.js';
import { startWaitingForApproval } from '../helpers/approvals.js';

/**
 * Bypasses of the approval of tool calls, on the real handlers (local runtime, offline model,
 * `search` marked `always`): a replayed or duplicated decision event runs the call once; a step
 * function cannot write a decision; a decision cannot be given for another conversation's request.
 */

let dir: string;
let runtime: LocalRuntime;
let runs = 0;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cld-approval-unit-'));
  runtime = await createLocalRuntime({ dataDir: dir, toolApproval: { search: 'always' } });
  const tools = runtime.deps.tools as Map<string, ToolImplementation>;
  const search = tools.get('search') as ToolImplementation;
  tools.set('search', {
    name: 'search',
    execute: async (input, context) => {
      runs++;
      return search.execute(input, context);
    },
  });
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true, maxRetries: 10 });
});

function start(user: string, name: string) {
  return startWaitingForApproval(runtime, user, name);
}

function eventFor(urn: string, id: string): ResourcePutEvent {
  return {
    id,
    detailType: 'RESOURCE_PUT',
    source: 'aws.s3',
    time: new Date().toISOString(),
    bucket: 'local',
    key: keyOf(urn),
    urn,
    type: 'tool.Decision',
  };
}

describe('approval bypasses on the real handlers', () => {
  it('runs an approved call once, however often its decision event is delivered or replayed', async () => {
    const { conversation, requests } = await start('u-alice', 'approval-once');
    const request = requests[0] as ApprovalRequest;
    expect(request.user).toBe('u-alice');
    expect(runs).toBe(0);

    await decideApproval(runtime.deps.resources, {
      user: 'u-alice',
      channel: 'cli',
      conversation,
      request: request.meta.id,
      decision: 'approve',
      now: new Date(),
    });
    const decision = decisionUrnOf(request.meta.id);
    // The bus delivers the decision's event; duplicates and replays arrive at once beside it.
    await Promise.all([1, 2, 3].map((i) => toolStep(eventFor(decision, `dup-${i}`), runtime.deps)));
    await runtime.bus.idle();
    await toolStep(eventFor(decision, 'replay-later'), runtime.deps);

    // One approval, one run: later calls of the model wait for approvals of their own.
    expect(requests).toHaveLength(1);
    expect(runs).toBe(1);
    const task = parentOf(parentOf(request.meta.id) as string) as string;
    const results = (await runtime.deps.resources.list(SYSTEM_ACTOR, task, {
      type: 'common.Message',
    })) as Message[];
    expect(results.filter((m) => m.role === 'tool' && m.status === 'OK')).toHaveLength(1);
  });

  it('runs nothing for an approval stored just before its message ended (the channels refuse later ones)', async () => {
    const { conversation, requests } = await start('u-carol', 'approval-ended');
    const request = requests[0] as ApprovalRequest;
    const before = runs;
    // The decision is stored (the channel's check saw the message open), then the message ends
    // before the decision's event is handled.
    const silent = new ResourceIndex(runtime.storage, builtinPolicy());
    await decideApproval(silent, {
      user: 'u-carol',
      channel: 'cli',
      conversation,
      request: request.meta.id,
      decision: 'approve',
      now: new Date(),
    });
    const message = turnMessageOf(request.meta.id);
    await runtime.deps.resources.put(
      sweeperActor(rootOf(message), message),
      answerMessage(
        message,
        { content: 'stalled', error: { code: 'STALLED', message: 'stalled' } },
        new Date(),
      ),
    );

    const outcome = await toolStep(eventFor(decisionUrnOf(request.meta.id), 'after-end'), runtime.deps);
    await runtime.bus.idle();

    expect(outcome).toMatchObject({ action: 'ignored', detail: 'its message already ended' });
    expect(runs).toBe(before);
    const below = await runtime.deps.resources.list(SYSTEM_ACTOR, parentOf(request.meta.id) as string);
    expect(below.map((r) => r.meta.type).sort()).toEqual(['tool.Approval', 'tool.Decision']); // no claim
    const task = parentOf(parentOf(request.meta.id) as string) as string;
    const messages = (await runtime.deps.resources.list(SYSTEM_ACTOR, task, {
      type: 'common.Message',
    })) as Message[];
    expect(messages.filter((m) => m.role === 'tool')).toEqual([]);
  });

  it('lets no step function write a decision, even on its own conversation', async () => {
    const { requests } = await start('u-bob', 'approval-steps');
    const request = requests[0] as ApprovalRequest;
    const call = parentOf(request.meta.id) as string;
    const task = parentOf(call) as string;
    const forged: ApprovalDecision = {
      meta: withMeta({ type: 'tool.Decision', name: 'decision', parent: request.meta.id }),
      decision: 'approve',
      by: 'u-bob',
      channel: 'http',
    };
    for (const actor of [assistantActor(task), toolActor(task, 'search')]) {
      await expect(runtime.deps.resources.put(actor, forged)).rejects.toBeInstanceOf(PolicyDeniedError);
    }
    expect(await runtime.deps.resources.find(SYSTEM_ACTOR, 'tool.Decision', forged.meta.id)).toBeUndefined();
  });

  it('refuses a decision on a request of another conversation', async () => {
    const alice = await start('u-carol', 'approval-carol');
    const mallory = await start('u-mallory', 'approval-mallory');
    const target = alice.requests[0] as ApprovalRequest;
    await expect(
      decideApproval(runtime.deps.resources, {
        user: 'u-mallory',
        channel: 'cli',
        conversation: mallory.conversation,
        request: target.meta.id,
        decision: 'approve',
        now: new Date(),
      }),
    ).rejects.toBeInstanceOf(NotFoundError);
    await expect(
      decideApproval(runtime.deps.resources, {
        user: 'u-mallory',
        channel: 'cli',
        conversation: alice.conversation,
        request: target.meta.id,
        decision: 'approve',
        now: new Date(),
      }),
    ).rejects.toBeInstanceOf(NotFoundError);
    expect(rootOf(target.meta.id)).toBe(alice.conversation.meta.id);
    expect(
      await runtime.deps.resources.find(SYSTEM_ACTOR, 'tool.Decision', decisionUrnOf(target.meta.id)),
    ).toBeUndefined();
  });
});
