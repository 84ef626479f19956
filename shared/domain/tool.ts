import * as z from 'zod';
import {
  InvalidUrnError,
  NotFoundError,
  PolicyDeniedError,
  toErrorInfo,
  ValidationError,
} from '../errors.js';
import type { ResourcePutEvent } from '../events/envelope.js';
import type { JsonValue } from '../llm/port.js';
import { withMeta } from '../resources/meta.js';
import type { Message, Tool, ToolStatus } from '../resources/schemas.js';
import type { Deps } from '../runtime/deps.js';
import { childUrn, parentOf } from '../urn.js';
import { assistantActor, assistantOf, NAMES, type StepOutcome, toolActor } from './common.js';

/**
 * The tool step (seed roadmap-v2 step 11; result statuses from seeds/tool-protocol.md): executes
 * one persisted `tool.Call` — tool resolved from the catalog, arguments validated against the
 * Tool's JSON schema, every resource access policy-checked as the calling task's scope, a
 * timeout — and persists the result (or a typed error: ERROR, TIMEOUT, NOT_FOUND,
 * INVALID_ARGUMENTS) as a tool Message under the task.
 */
export async function toolStep(event: ResourcePutEvent, deps: Deps): Promise<StepOutcome> {
  const taskUrn = parentOf(event.urn) as string;
  const reader = assistantActor(taskUrn);
  const call = await deps.resources.getAs(reader, 'tool.Call', event.urn);
  const resultUrn = childUrn(taskUrn, 'common.Message', NAMES.result(call.meta.name));
  if (await deps.resources.find(reader, 'common.Message', resultUrn)) {
    return { action: 'ignored', urn: event.urn, detail: 'result exists' };
  }
  const task = await deps.resources.getAs(reader, 'plan.Task', taskUrn);
  const started = Date.now();
  const { status, content, error } = await execute(
    call.call.name,
    call.call.input,
    taskUrn,
    task.assistant,
    deps,
  );
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
    call: event.urn,
    tool: call.call.name,
    status,
    ms: Date.now() - started,
  });
  return { action: 'tool-result', urn: result.meta.id, detail: `${call.call.name}: ${status}` };
}

interface Execution {
  status: ToolStatus;
  content: string;
  error?: { code: string; message: string };
}

/** A Tool's compiled argument check, or why its schema cannot be checked. */
type ArgumentCheck = { schema: z.ZodType } | { unsupported: string };

const checks = new WeakMap<Tool, ArgumentCheck>();

/**
 * The argument check of a Tool: its JSON schema (`function.parameters`) converted once with zod's
 * `z.fromJSONSchema` (zod 4, draft 2020-12 and draft-07 keywords), so the functions validate with
 * the zod they already carry instead of a second validator (ajv, ~130 KB of the `tool` bundle).
 * Defaults in the schema do not change the input: the implementation gets the arguments as the
 * model wrote them. Constructs zod cannot express (`if`/`then`/`else`, `not`, `unevaluated*`,
 * `dependent*`, external `$ref`) make the Tool uncheckable; test/search/tools.test.ts checks
 * that every catalog Tool converts and agrees with a JSON Schema validator.
 */
export function argumentCheck(tool: Tool): ArgumentCheck {
  let check = checks.get(tool);
  if (!check) {
    try {
      check = {
        schema: z.fromJSONSchema(tool.function.parameters as Parameters<typeof z.fromJSONSchema>[0]),
      };
    } catch (error) {
      check = { unsupported: toErrorInfo(error).message };
    }
    checks.set(tool, check);
  }
  return check;
}

async function execute(
  name: string,
  input: unknown,
  taskUrn: string,
  assistantUrn: string,
  deps: Deps,
): Promise<Execution> {
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
      `arguments do not match the ${name} schema: ${z.prettifyError(parsed.error).replaceAll('\n', '; ')}`,
    );
  }
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve('timeout');
    }, tool.timeoutMs);
  });
  try {
    const outcome = await Promise.race([
      implementation.execute(input as Record<string, unknown>, {
        actor: toolActor(taskUrn, name),
        resources: deps.resources,
        search: deps.search,
        signal: controller.signal,
      }),
      timeout,
    ]);
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
  } finally {
    clearTimeout(timer);
  }
}

function failure(status: Exclude<ToolStatus, 'OK'>, message: string, code: string = status): Execution {
  return { status, content: JSON.stringify({ error: { status, message } }), error: { code, message } };
}
