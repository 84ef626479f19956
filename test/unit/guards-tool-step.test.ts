import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultCatalog } from '../../shared/catalog/catalog.js';
import {
  APPROVAL_NAMES,
  approvalUrnOf,
  decideApproval,
  decisionUrnOf,
  executionUrnOf,
} from '../../shared/domain/approval.js';
import { assistantActor, NAMES, planActor, toolActor } from '../../shared/domain/common.js';
import { userActor } from '../../shared/domain/conversation.js';
import { DEFAULT_LIMITS } from '../../shared/domain/limits.js';
import type { Deps } from '../../shared/domain/ports.js';
import { toolStep } from '../../shared/domain/tool.js';
import type { ResourcePutEvent } from '../../shared/events/envelope.js';
import { OfflineChatModel } from '../../shared/llm/offline.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import { withMeta } from '../../shared/resources/meta.js';
import type {
  ApprovalDecision,
  ApprovalRequest,
  Assistant,
  Conversation,
  ExecutionClaim,
  Message,
  Task,
  Tool,
  ToolCallResource,
} from '../../shared/resources/schemas.js';
import { assembleDeps, seedCatalog } from '../../shared/runtime/assemble.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import type { ToolImplementation } from '../../shared/tools/port.js';
import { childUrn, keyOf } from '../../shared/urn.js';

/**
 * Guards of the tool step (issue 22, finding 10), each by the result Message it writes: a call of
 * a tool the task's assistant is not granted, unknown tools, arguments the tool's JSON schema
 * refuses, a run past the tool's timeout, an implementation that throws NotFound / Validation /
 * InvalidUrn, and an approved run whose claim expired without a result (EXECUTION_INTERRUPTED);
 * and the approval guarantees the step applies to a stored decision (by another user, after the
 * request expired). The step runs on the real ResourceIndex and built-in policy over the
 * filesystem storage without notifications, so nothing but the step under test reacts.
 */

const USER = 'http:alice';
let dir: string;
let base: Deps;
/** The resources' storage itself: what a write past every check would leave. */
let storage: FilesystemStorage;
let clock: number;
let counter = 0;

/** A tool for the test catalog: `{n: integer}` required, no extra fields, 30 ms timeout. */
function testTool(name: string): Tool {
  return {
    meta: withMeta({ type: 'common.Tool', name }),
    function: {
      name,
      description: `Test tool ${name}.`,
      parameters: {
        type: 'object',
        properties: { n: { type: 'integer' } },
        required: ['n'],
        additionalProperties: false,
      },
    },
    timeoutMs: 30,
  };
}

const TESTER: Assistant = {
  meta: withMeta({ type: 'common.Assistant', name: 'tester', purpose: 'Runs test tools.' }),
  tools: ['echo', 'slow', 'read', 'search'],
};

/** Test tools' implementations: `echo` returns its input unchecked; `slow` never settles. */
const IMPLEMENTATIONS: [string, ToolImplementation][] = [
  ['echo', { name: 'echo', execute: async (input) => ({ echoed: input }) as never }],
  ['slow', { name: 'slow', execute: () => new Promise(() => undefined) }],
];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cld-guards-tool-'));
  clock = Date.parse('2026-01-01T00:00:00.000Z');
  storage = new FilesystemStorage(join(dir, 'resources'));
  base = await assembleDeps({
    storage,
    indexStorage: new FilesystemStorage(dir),
    model: new OfflineChatModel(),
    limits: DEFAULT_LIMITS,
    logger: new Logger({ serviceName: 'cld', logLevel: 'SILENT' }),
    now: () => new Date(clock),
  });
  await seedCatalog(base.resources);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true, maxRetries: 10 });
});

/** Deps over the same storage with the test catalog; `approval` marks catalog tools `always`. */
function depsWith(approval: Record<string, 'always'> = {}): Deps {
  const catalog = defaultCatalog(approval);
  return {
    ...base,
    catalog: {
      assistants: [...catalog.assistants, TESTER],
      tools: [...catalog.tools, testTool('echo'), testTool('slow')],
    },
    tools: new Map([...base.tools, ...IMPLEMENTATIONS]),
  };
}

function catalogAssistant(deps: Deps, name: string): string {
  const found = deps.catalog.assistants.find((a) => a.meta.name === name);
  if (!found) throw new Error(`no assistant ${name}`);
  return found.meta.id;
}

/** Stores a conversation of USER with one task run by `assistant` and a call of `tool`. */
async function callOf(deps: Deps, assistant: string, tool: string, input: Record<string, unknown>) {
  const name = `guards-${++counter}`;
  const now = new Date(clock);
  const conversation: Conversation = {
    meta: withMeta({ type: 'common.Conversation', name }, now),
    actor: USER,
    channel: { kind: 'http' },
  };
  const message: Message = {
    meta: withMeta({ type: 'common.Message', name: 'message-1', parent: conversation.meta.id }, now),
    role: 'user',
    content: 'question',
  };
  const assistantUrn = catalogAssistant(deps, assistant);
  const task: Task = {
    meta: withMeta(
      { type: 'plan.Task', name: 'task-0', parent: message.meta.id, purpose: 'do it', evaluation: 'done' },
      now,
    ),
    title: 'the task',
    subtasks: [],
    assistant: assistantUrn,
    election: { assistant: assistantUrn, name: assistant, score: 1 },
    status: 'pending',
    depth: 1,
    round: 0,
  };
  const turn: Message = {
    meta: withMeta({ type: 'common.Message', name: NAMES.turn(1), parent: task.meta.id }, now),
    role: 'assistant',
    content: '',
    toolCalls: [{ id: 'tooluse-1', name: tool, input: input as never }],
  };
  const call: ToolCallResource = {
    meta: withMeta({ type: 'tool.Call', name: NAMES.call(1, 'tooluse-1'), parent: task.meta.id }, now),
    call: { id: 'tooluse-1', name: tool, input: input as never },
    turn: turn.meta.id,
  };
  const user = userActor(USER, conversation.meta.id);
  await deps.resources.put(user, conversation);
  await deps.resources.put(user, message);
  await deps.resources.put(planActor(message.meta.id), task);
  await deps.resources.put(assistantActor(task.meta.id, assistantUrn), turn);
  await deps.resources.put(assistantActor(task.meta.id, assistantUrn), call);
  return { conversation, task, call };
}

function eventFor(urn: string, type: ResourcePutEvent['type']): ResourcePutEvent {
  return {
    id: `event-${++counter}`,
    detailType: 'RESOURCE_PUT',
    source: 'aws.s3',
    time: new Date(clock).toISOString(),
    bucket: 'local',
    key: keyOf(urn),
    urn,
    type,
  };
}

/** Runs the tool step on the call's event and returns the result Message it stored. */
async function run(deps: Deps, call: ToolCallResource, event = eventFor(call.meta.id, 'tool.Call')) {
  await toolStep(event, deps);
  return resultOf(deps, call);
}

async function resultOf(deps: Deps, call: ToolCallResource): Promise<Message | undefined> {
  const urn = childUrn(call.meta.parent as string, 'common.Message', NAMES.result(call.meta.name));
  return deps.resources.find(SYSTEM_ACTOR, 'common.Message', urn);
}

describe('the tool step answers a call it must not run with a typed error', () => {
  it('refuses a catalog tool the task’s assistant is not granted (NOT_FOUND), and runs it for one that is', async () => {
    const deps = depsWith();
    // The editor may only `read`; `search` exists in the catalog and has an implementation.
    const refused = await callOf(deps, 'editor', 'search', { query: 'bucket' });
    const result = await run(deps, refused.call);
    expect(result).toMatchObject({ role: 'tool', status: 'NOT_FOUND' });
    expect(result?.error).toEqual({
      code: 'NOT_FOUND',
      message: 'tool "search" is not available to this task\'s assistant',
    });

    const granted = await callOf(deps, 'researcher', 'search', { query: 'bucket' });
    expect((await run(deps, granted.call))?.status).toBe('OK');
  });

  it('answers a tool that is in no catalog NOT_FOUND', async () => {
    const deps = depsWith();
    const { call } = await callOf(deps, 'tester', 'nonexistent', { n: 1 });
    const result = await run(deps, call);
    expect(result?.status).toBe('NOT_FOUND');
    expect(result?.error?.message).toBe('no tool named "nonexistent"');
  });

  it('refuses arguments the tool’s JSON schema does not accept before the implementation sees them (INVALID_ARGUMENTS)', async () => {
    const deps = depsWith();
    const valid = await callOf(deps, 'tester', 'echo', { n: 1 });
    expect(await run(deps, valid.call)).toMatchObject({ status: 'OK', content: '{"echoed":{"n":1}}' });
    for (const input of [{ n: 'one' }, {}, { n: 1, extra: true }]) {
      const { call } = await callOf(deps, 'tester', 'echo', input);
      const result = await run(deps, call);
      expect(result?.status, JSON.stringify(input)).toBe('INVALID_ARGUMENTS');
      expect(result?.error?.message).toMatch(/^arguments do not match the echo schema: /);
    }
  });

  it('answers INVALID_ARGUMENTS when the implementation rejects a URN the schema let through', async () => {
    const deps = depsWith();
    // `^cld:` passes read.json's pattern; the URN parser refuses the `..` element.
    const { call } = await callOf(deps, 'tester', 'read', { urn: 'cld:doc.Document.0123456789abcdef/..' });
    const result = await run(deps, call);
    expect(result?.status).toBe('INVALID_ARGUMENTS');
    expect(result?.error?.code).toBe('INVALID_ARGUMENTS');
  });

  it('answers NOT_FOUND when the implementation finds no such resource', async () => {
    const deps = depsWith();
    const { call } = await callOf(deps, 'tester', 'read', { urn: 'cld:doc.Document.0123456789abcdef' });
    const result = await run(deps, call);
    expect(result?.status).toBe('NOT_FOUND');
    expect(result?.error?.code).toBe('NOT_FOUND');
  });

  it('answers TIMEOUT when the run outlasts the tool’s timeoutMs', async () => {
    const deps = depsWith();
    const { call } = await callOf(deps, 'tester', 'slow', { n: 1 });
    const result = await run(deps, call);
    expect(result?.status).toBe('TIMEOUT');
    expect(result?.error).toEqual({ code: 'TIMEOUT', message: 'slow did not finish within 30 ms' });
  });
});

describe('the tool step on approved calls', () => {
  /** A call of `search` (marked `always`) with its request written by the step, at `clock`. */
  async function requested() {
    const deps = depsWith({ search: 'always' });
    const stored = await callOf(deps, 'researcher', 'search', { query: 'bucket' });
    await toolStep(eventFor(stored.call.meta.id, 'tool.Call'), deps);
    const request = await deps.resources.getAs(
      SYSTEM_ACTOR,
      'tool.Approval',
      approvalUrnOf(stored.call.meta.id),
    );
    expect(await resultOf(deps, stored.call)).toBeUndefined();
    return { deps, ...stored, request };
  }

  /**
   * Stores an approving decision past every check (the channels' and the put policy's), as a
   * forged or raced write would leave it: the step must judge the decision as stored.
   */
  async function storeDecision(request: ApprovalRequest, by: string, at: Date): Promise<void> {
    const decision: ApprovalDecision = {
      meta: withMeta({ type: 'tool.Decision', name: APPROVAL_NAMES.decision, parent: request.meta.id }, at),
      decision: 'approve',
      by,
      channel: 'http',
    };
    await storage.put(keyOf(decision.meta.id), JSON.stringify(decision));
  }

  it('answers EXECUTION_INTERRUPTED when an approved run’s claim is past its deadline with no result, and runs nothing', async () => {
    const { deps, conversation, call, request } = await requested();
    await decideApproval(deps.resources, {
      user: USER,
      channel: 'http',
      conversation,
      request: request.meta.id,
      decision: 'approve',
      now: new Date(clock),
    });
    // A run claimed at `clock` that died: its claim stands, no result was written.
    const claim: ExecutionClaim = {
      meta: withMeta(
        { type: 'tool.Execution', name: APPROVAL_NAMES.execution, parent: request.meta.id },
        new Date(clock),
      ),
      decision: decisionUrnOf(request.meta.id),
      deadline: new Date(clock + 1_000).toISOString(),
    };
    await deps.resources.put(toolActor(call.meta.parent as string, 'search'), claim);
    let runs = 0;
    const counting: Deps = {
      ...deps,
      tools: new Map([...deps.tools, ['search', { name: 'search', execute: async () => ++runs }]]),
    };
    const decisionEvent = eventFor(decisionUrnOf(request.meta.id), 'tool.Decision');

    // Within the deadline the run may still be going: nothing is answered.
    await toolStep(decisionEvent, counting);
    expect(await resultOf(deps, call)).toBeUndefined();

    const later: Deps = { ...counting, now: () => new Date(clock + 1_001) };
    const result = await run(later, call, decisionEvent);
    expect(result?.status).toBe('ERROR');
    expect(result?.error?.code).toBe('EXECUTION_INTERRUPTED');
    expect(runs).toBe(0);
    expect(
      (await deps.resources.getAs(SYSTEM_ACTOR, 'tool.Execution', executionUrnOf(request.meta.id))).deadline,
    ).toBe(claim.deadline);
  });

  it('runs an approved call once, with the claim it writes', async () => {
    const { deps, conversation, call, request } = await requested();
    await decideApproval(deps.resources, {
      user: USER,
      channel: 'http',
      conversation,
      request: request.meta.id,
      decision: 'approve',
      now: new Date(clock),
    });
    const result = await run(deps, call, eventFor(decisionUrnOf(request.meta.id), 'tool.Decision'));
    expect(result?.status).toBe('OK');
  });

  it('does not run a call on a stored approval by someone other than the conversation’s user (DENIED)', async () => {
    const { deps, call, request } = await requested();
    await storeDecision(request, 'http:mallory', new Date(clock));
    const result = await run(deps, call, eventFor(decisionUrnOf(request.meta.id), 'tool.Decision'));
    expect(result?.status).toBe('DENIED');
    expect(result?.error?.code).toBe('POLICY_DENIED');
  });

  it('does not run a call on an approval stored after the request expired (DENIED, APPROVAL_EXPIRED), and runs one stored at the expiry', async () => {
    const late = await requested();
    const expiresAt = Date.parse(late.request.expiresAt);
    expect(expiresAt - clock).toBe(DEFAULT_LIMITS.approvalTtlMs);
    await storeDecision(late.request, USER, new Date(expiresAt + 1));
    const denied = await run(
      { ...late.deps, now: () => new Date(expiresAt + 2) },
      late.call,
      eventFor(decisionUrnOf(late.request.meta.id), 'tool.Decision'),
    );
    expect(denied?.status).toBe('DENIED');
    expect(denied?.error?.code).toBe('APPROVAL_EXPIRED');

    const onTime = await requested();
    await storeDecision(onTime.request, USER, new Date(expiresAt));
    const ran = await run(
      { ...onTime.deps, now: () => new Date(expiresAt + 2) },
      onTime.call,
      eventFor(decisionUrnOf(onTime.request.meta.id), 'tool.Decision'),
    );
    expect(ran?.status).toBe('OK');
  });

  it('answers a request left undecided past its expiry DENIED (APPROVAL_EXPIRED), and waits at the expiry', async () => {
    const { deps, call, request } = await requested();
    const expiresAt = Date.parse(request.expiresAt);
    await toolStep(eventFor(call.meta.id, 'tool.Call'), { ...deps, now: () => new Date(expiresAt) });
    expect(await resultOf(deps, call)).toBeUndefined();
    const result = await run({ ...deps, now: () => new Date(expiresAt + 1) }, call);
    expect(result?.status).toBe('DENIED');
    expect(result?.error?.code).toBe('APPROVAL_EXPIRED');
  });
});
