import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assistantStep } from '../../shared/domain/assistant.js';
import { answerMessage, NAMES, outputUrn, toolActor } from '../../shared/domain/common.js';
import { sweeperActor } from '../../shared/domain/sweep.js';
import { turnMessageOf } from '../../shared/domain/turn.js';
import type { ResourcePutEvent } from '../../shared/events/envelope.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import { withMeta } from '../../shared/resources/meta.js';
import type { ApprovalRequest, Message, ToolCallResource } from '../../shared/resources/schemas.js';
import { createLocalRuntime, type LocalRuntime } from '../../shared/runtime/local.js';
import { keyOf, parentOf, rootOf } from '../../shared/urn.js';
import { startWaitingForApproval } from '../helpers/approvals.js';

/**
 * A late event on a task whose user Message already ended (the sweeper's STALLED answer, a
 * budget, a failed part) calls no model: no answer can take the task's output any more, and each
 * call is billed. The real handlers on the local runtime, the offline model counted.
 */

let dir: string;
let runtime: LocalRuntime;
let modelCalls = 0;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cld-ended-message-'));
  runtime = await createLocalRuntime({ dataDir: dir, toolApproval: { search: 'always' } });
  const model = runtime.deps.model;
  const converse = model.converse.bind(model);
  model.converse = async (request) => {
    modelCalls++;
    return converse(request);
  };
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true, maxRetries: 10 });
});

describe('the assistant step after its message ended', () => {
  it('ignores a tool result that arrives after the answer was stored, calling no model', async () => {
    const { requests } = await startWaitingForApproval(runtime, 'u-dave', 'ended-late-result');
    const request = requests[0] as ApprovalRequest;
    const callUrn = parentOf(request.meta.id) as string;
    const taskUrn = parentOf(callUrn) as string;
    const call = (await runtime.deps.resources.getAs(SYSTEM_ACTOR, 'tool.Call', callUrn)) as ToolCallResource;
    const message = turnMessageOf(taskUrn);
    await runtime.deps.resources.put(
      sweeperActor(rootOf(message), message),
      answerMessage(
        message,
        { content: 'stalled', error: { code: 'STALLED', message: 'stalled' } },
        new Date(),
      ),
    );
    // The call's result lands anyway (a run already under way when the message ended).
    const result: Message = {
      meta: withMeta(
        {
          type: 'common.Message',
          name: NAMES.result(call.meta.name),
          parent: taskUrn,
          purpose: 'late result',
        },
        new Date(),
      ),
      role: 'tool',
      content: '[]',
      toolCallId: call.call.id,
      status: 'OK',
    };
    await runtime.deps.resources.put(toolActor(taskUrn, 'search'), result);
    await runtime.bus.idle();
    const before = modelCalls;
    const event: ResourcePutEvent = {
      id: 'late-result',
      detailType: 'RESOURCE_PUT',
      source: 'aws.s3',
      time: new Date().toISOString(),
      bucket: 'local',
      key: keyOf(result.meta.id),
      urn: result.meta.id,
      type: 'common.Message',
    };
    const outcome = await assistantStep(event, runtime.deps);
    expect(outcome).toMatchObject({ action: 'ignored', detail: 'its message already ended (failed)' });
    expect(modelCalls).toBe(before);
    const output = await runtime.deps.resources.find(SYSTEM_ACTOR, 'common.Message', outputUrn(taskUrn));
    expect(output).toBeUndefined();
  });
});
