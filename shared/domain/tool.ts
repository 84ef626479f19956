import {
  InvalidUrnError,
  NotFoundError,
  PolicyDeniedError,
  toErrorInfo,
  ValidationError,
} from '../errors.js';
import type { ResourcePutEvent } from '../events/envelope.js';
import type { JsonValue } from '../llm/port.js';
import { needsApprovalReason } from '../policy/rules.js';
import { withMeta } from '../resources/meta.js';
import type {
  ApprovalRequest,
  ExecutionClaim,
  Message,
  Task,
  ToolCallResource,
  ToolStatus,
} from '../resources/schemas.js';
import { argumentCheck, argumentProblems, type Execution, failure, withTimeout } from '../tools/execution.js';
import { executeMcp } from '../tools/mcp/execute.js';
import { approvedTool, isMcpName } from '../tools/registry.js';
import { childUrn, parentOf, rootOf } from '../urn.js';
import {
  APPROVAL_NAMES,
  approvalRequest,
  approvalStatus,
  approvalUrnOf,
  callUrnOfEvent,
  decisionFacts,
  decisionUrnOf,
} from './approval.js';
import { assistantActor, assistantOf, NAMES, type StepOutcome, toolActor } from './common.js';
import type { Deps } from './ports.js';
import { endedTurn, turnMessageOf } from './turn.js';

/**
 * The tool step (seed roadmap-v2 step 11; result statuses from seeds/tool-protocol.md): executes
 * one persisted `tool.Call` — tool resolved from the catalog, arguments validated against the
 * Tool's JSON schema, every resource access policy-checked as the calling task's scope, a
 * timeout — and persists the result (or a typed error: ERROR, TIMEOUT, NOT_FOUND,
 * INVALID_ARGUMENTS) as a tool Message under the task. A call of a tool that needs the user's
 * approval passes the approval gate first (shared/domain/approval.ts): the step reacts to the
 * call (writes the request and stops) and to the decision (runs the call, or answers DENIED).
 * A discovered MCP tool (`<server>__<tool>`) runs through shared/tools/mcp/execute.ts instead of a
 * built-in implementation: same statuses, approved tools only (the tool registry).
 */
export async function toolStep(event: ResourcePutEvent, deps: Deps): Promise<StepOutcome> {
  const callUrn = callUrnOfEvent(event.urn);
  const taskUrn = parentOf(callUrn) as string;
  const reader = assistantActor(taskUrn);
  const call = await deps.resources.getAs(reader, 'tool.Call', callUrn);
  const resultUrn = childUrn(taskUrn, 'common.Message', NAMES.result(call.meta.name));
  if (await deps.resources.find(reader, 'common.Message', resultUrn)) {
    return { action: 'ignored', urn: event.urn, detail: 'result exists' };
  }
  const task = await deps.resources.getAs(reader, 'plan.Task', taskUrn);
  const started = Date.now();
  const gate = await approvalGate(call, task, deps);
  if (gate.kind === 'wait') return { action: gate.action, urn: gate.urn, detail: gate.detail };
  const { status, content, error } =
    gate.kind === 'answer'
      ? gate.execution
      : await execute(call.call.name, call.call.input, taskUrn, task.assistant, deps);
  const result: Message = {
    meta: withMeta(
      {
        type: 'common.Message',
        name: NAMES.result(call.meta.name),
        parent: taskUrn,
        purpose: `Result of ${call.call.name}`,
      },
      deps.now(),
    ),
    role: 'tool',
    content,
    toolCallId: call.call.id,
    status,
    ...(error ? { error } : {}),
  };
  await deps.resources.put(toolActor(taskUrn, call.call.name), result);
  deps.logger.info('tool executed', {
    call: callUrn,
    tool: call.call.name,
    status,
    ms: Date.now() - started,
  });
  return { action: 'tool-result', urn: result.meta.id, detail: `${call.call.name}: ${status}` };
}

/** What the approval gate lets the step do with a call. */
type Gate =
  | { kind: 'run' }
  | { kind: 'answer'; execution: Execution }
  | { kind: 'wait'; action: string; urn: string; detail: string };

/**
 * The gate before a call runs (shared/domain/approval.ts): asks the policy whether the tool
 * function may `execute` the call as it is; a tool that needs approval is denied with
 * `needsApprovalReason`, and then the call runs only with the user's approving decision, which
 * the policy checks again (its facts: who decided, when, before the request expired). A call of a
 * tool that is not in the catalog goes on to {@link execute}, which answers it NOT_FOUND.
 */
async function approvalGate(call: ToolCallResource, task: Task, deps: Deps): Promise<Gate> {
  const name = call.call.name;
  // A discovered MCP tool takes part once an operator approved it (shared/tools/registry.ts).
  const tool =
    deps.catalog.tools.find((t) => t.function.name === name) ??
    (await approvedTool(deps.resources, assistantActor(task.meta.id), name));
  if (!tool) return { kind: 'run' };
  const actor = toolActor(task.meta.id, name);
  const facts = { name, ...(tool.approval ? { approval: tool.approval } : {}) };
  const first = deps.resources.decide({ actor, action: 'execute', resources: [call.meta.id], tool: facts });
  if (first.allow) return { kind: 'run' };
  if (first.reason !== needsApprovalReason(name)) return denied('ERROR', 'POLICY_DENIED', first.reason);
  const reader = assistantActor(task.meta.id);
  const requestUrn = approvalUrnOf(call.meta.id);
  let request = await deps.resources.find(reader, 'tool.Approval', requestUrn);
  if (!request) {
    const conversation = await deps.resources.getAs(reader, 'common.Conversation', rootOf(call.meta.id));
    const built = approvalRequest(
      call,
      task.title,
      conversation.actor,
      deps.limits.approvalTtlMs,
      deps.now(),
    );
    request = (await deps.resources.put(actor, built)).resource;
    deps.logger.info('approval requested', { call: call.meta.id, tool: name, expiresAt: request.expiresAt });
    return {
      kind: 'wait',
      action: 'approval-requested',
      urn: requestUrn,
      detail: `${name}: waiting for the user`,
    };
  }
  const decisionUrn = decisionUrnOf(requestUrn);
  const decision = await deps.resources.find(reader, 'tool.Decision', decisionUrn);
  if (!decision) {
    if (approvalStatus(request, undefined, deps.now()) === 'expired')
      return denied(
        'DENIED',
        'APPROVAL_EXPIRED',
        `the user did not decide on this call of ${name} before ${request.expiresAt}`,
      );
    return { kind: 'wait', action: 'ignored', urn: requestUrn, detail: 'waiting for the user' };
  }
  if (decision.decision === 'deny')
    return denied(
      'DENIED',
      'APPROVAL_DENIED',
      `the user denied this call of ${name}${decision.reason ? `: ${decision.reason}` : ''}`,
    );
  const verdict = deps.resources.decide({
    actor,
    action: 'execute',
    resources: [call.meta.id, decisionUrn],
    tool: facts,
    decision: decisionFacts(request, decision),
  });
  if (!verdict.allow) {
    const late = Date.parse(decision.meta.createdAt ?? '') > Date.parse(request.expiresAt);
    return denied('DENIED', late ? 'APPROVAL_EXPIRED' : 'POLICY_DENIED', verdict.reason);
  }
  // The channels refuse a decision once the message ended; one stored just before (or delivered
  // after) the end still runs nothing: the call can reach no answer.
  if (await endedTurn(deps.resources, reader, turnMessageOf(call.meta.id)))
    return { kind: 'wait', action: 'ignored', urn: decisionUrn, detail: 'its message already ended' };
  return claimRun(request, decisionUrn, tool.timeoutMs, actor, deps);
}

/**
 * Claims the run of an approved call (create-only `tool.Execution`): only the invocation that
 * creates the claim runs it, so a duplicated or replayed decision event runs nothing. A claim
 * past its deadline without a result means the run died: the call is answered ERROR
 * (`EXECUTION_INTERRUPTED`), never run a second time.
 */
async function claimRun(
  request: ApprovalRequest,
  decisionUrn: string,
  timeoutMs: number,
  actor: ReturnType<typeof toolActor>,
  deps: Deps,
): Promise<Gate> {
  const now = deps.now();
  // A margin over the tool's timeout for the result's write after the run.
  const claim: ExecutionClaim = {
    meta: withMeta({ type: 'tool.Execution', name: APPROVAL_NAMES.execution, parent: request.meta.id }, now),
    decision: decisionUrn,
    deadline: new Date(now.getTime() + timeoutMs + CLAIM_MARGIN_MS).toISOString(),
  };
  const { created, resource } = await deps.resources.put(actor, claim);
  if (created) return { kind: 'run' };
  if (now.toISOString() > resource.deadline)
    return denied(
      'ERROR',
      'EXECUTION_INTERRUPTED',
      `the approved run of ${request.tool} started at ${resource.meta.createdAt ?? '?'} did not finish; it is not run again`,
    );
  return { kind: 'wait', action: 'ignored', urn: resource.meta.id, detail: 'the approved call is running' };
}

/** Time a run's claim holds beyond the tool's timeout (writing the result), in ms. */
export const CLAIM_MARGIN_MS = 60_000;

function denied(status: Exclude<ToolStatus, 'OK'>, code: string, message: string): Gate {
  return { kind: 'answer', execution: failure(status, message, code) };
}

async function execute(
  name: string,
  input: unknown,
  taskUrn: string,
  assistantUrn: string,
  deps: Deps,
): Promise<Execution> {
  if (isMcpName(name)) return executeMcp(name, input, taskUrn, assistantUrn, deps);
  const tool = deps.catalog.tools.find((t) => t.function.name === name);
  const implementation = deps.tools.get(name);
  if (!tool || !implementation) return failure('NOT_FOUND', `no tool named "${name}"`);
  if (!assistantOf(deps, assistantUrn).tools.includes(name)) {
    return failure('NOT_FOUND', `tool "${name}" is not available to this task's assistant`);
  }
  const check = argumentCheck(tool);
  if ('unsupported' in check) {
    return failure('ERROR', `the ${name} tool's parameters schema cannot be checked: ${check.unsupported}`);
  }
  const parsed = check.schema.safeParse(input);
  if (!parsed.success) {
    return failure(
      'INVALID_ARGUMENTS',
      `arguments do not match the ${name} schema: ${argumentProblems(parsed.error)}`,
    );
  }
  try {
    const outcome = await withTimeout(tool.timeoutMs, (signal) =>
      implementation.execute(input as Record<string, unknown>, {
        actor: toolActor(taskUrn, name),
        resources: deps.resources,
        search: deps.search,
        signal,
      }),
    );
    if (outcome === 'timeout')
      return failure('TIMEOUT', `${name} did not finish within ${tool.timeoutMs} ms`);
    return { status: 'OK', content: JSON.stringify(outcome as JsonValue) };
  } catch (error) {
    if (error instanceof NotFoundError) return failure('NOT_FOUND', error.message);
    if (error instanceof ValidationError || error instanceof InvalidUrnError) {
      return failure('INVALID_ARGUMENTS', error.message);
    }
    if (error instanceof PolicyDeniedError) return failure('ERROR', error.message, error.code);
    return failure('ERROR', toErrorInfo(error).message);
  }
}
