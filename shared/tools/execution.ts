import * as z from 'zod';
import { toErrorInfo } from '../errors.js';
import type { Tool, ToolStatus } from '../resources/schemas.js';

/**
 * What executing one tool call gave, before it is stored as the tool result Message
 * (seeds/tool-protocol.md `ToolResult`: status, output, error). Shared by the built-in tools'
 * executor (shared/domain/tool.ts) and the MCP executor (shared/tools/mcp/execute.ts).
 */
export interface Execution {
  status: ToolStatus;
  /** The result as the model reads it (JSON for built-in tools). */
  content: string;
  error?: { code: string; message: string };
}

/** A failed execution: content `{"error":{status,message}}` and the error code (default: the status). */
export function failure(
  status: Exclude<ToolStatus, 'OK'>,
  message: string,
  code: string = status,
): Execution {
  return { status, content: JSON.stringify({ error: { status, message } }), error: { code, message } };
}

/**
 * Runs `run` with an AbortSignal that aborts after `timeoutMs`; resolves `'timeout'` then,
 * whether or not `run` heeds the signal. Rejections of `run` before the timeout pass through.
 */
export async function withTimeout<T>(
  timeoutMs: number,
  run: (signal: AbortSignal) => Promise<T>,
): Promise<T | 'timeout'> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve('timeout');
    }, timeoutMs);
  });
  try {
    return await Promise.race([run(controller.signal), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A Tool's compiled argument check, or why its schema cannot be checked. */
export type ArgumentCheck = { schema: z.ZodType } | { unsupported: string };

const checks = new WeakMap<Tool, ArgumentCheck>();

/**
 * The argument check of a Tool: its JSON schema (`function.parameters`) converted once with zod's
 * `z.fromJSONSchema` (zod 4, draft 2020-12 and draft-07 keywords), so the functions validate with
 * the zod they already carry instead of a second validator (ajv, ~130 KB of the `tool` bundle).
 * Defaults in the schema do not change the input: the implementation gets the arguments as the
 * model wrote them. Constructs zod cannot express (`if`/`then`/`else`, `not`, `unevaluated*`,
 * `dependent*`, external `$ref`) make the Tool uncheckable; test/search/tools.test.ts checks
 * that every catalog Tool converts and agrees with a JSON Schema validator. Built-in and
 * discovered (MCP) tools alike; a discovered tool whose schema cannot be checked is not stored
 * (shared/tools/registry.ts `toolFromDefinition`).
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

/** The arguments' problems in one line (zod's pretty error, `; `-joined). */
export function argumentProblems(error: z.ZodError): string {
  return z.prettifyError(error).replaceAll('\n', '; ');
}
