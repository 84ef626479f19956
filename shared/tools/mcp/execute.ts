import { assistantActor, assistantOf } from '../../domain/common.js';
import type { Deps } from '../../domain/ports.js';
import { ConfigError, ToolUnavailableError } from '../../errors.js';
import { argumentCheck, argumentProblems, type Execution, failure, withTimeout } from '../execution.js';
import { assistantMayUse, entriesOf, readRegistry, serverOfName } from '../registry.js';
import { McpCallError, type McpCallResult } from './client.js';

/**
 * The `tool` step's executor for discovered MCP tools (issue 14 part 1), with the built-in
 * tools' contract (seeds/tool-protocol.md statuses):
 * - NOT_FOUND: no configured server of that name, no current tool of that name, a tool that is
 *   not `approved` (pending or revoked: checked at every call, from the stored decisions), or
 *   one the task's assistant does not name (neither the tool nor its server);
 * - INVALID_ARGUMENTS: the input does not match the tool's input schema (checked before calling);
 * - TIMEOUT: no answer within the server's `timeoutMs`;
 * - ERROR: `isError: true`, a JSON-RPC error, a malformed answer, a result over `maxResultChars`;
 * - a server that cannot be reached throws {@link ToolUnavailableError}: the invocation fails and
 *   the event is retried, then dead-lettered (which fails the task).
 */

/**
 * Executes one call of a discovered tool (`<server>__<tool>`) for a task.
 * @throws ToolUnavailableError when the server cannot be reached (retried by the event's redelivery)
 */
export async function executeMcp(
  name: string,
  input: unknown,
  taskUrn: string,
  assistantUrn: string,
  deps: Deps,
): Promise<Execution> {
  const server = deps.mcp?.servers.find((s) => s.name === serverOfName(name));
  if (!deps.mcp || !server)
    return failure('NOT_FOUND', `no MCP server "${serverOfName(name)}" is configured`);
  const view = await readRegistry(deps.resources, assistantActor(taskUrn), server.name);
  const entry = entriesOf(view).find((e) => e.name === name);
  if (!entry?.tool.mcp) return failure('NOT_FOUND', `no tool named "${name}"`);
  if (entry.status !== 'approved')
    return failure('NOT_FOUND', `tool "${name}" is ${entry.status}: an operator has not approved it`);
  if (!assistantMayUse(assistantOf(deps, assistantUrn), entry.tool))
    return failure('NOT_FOUND', `tool "${name}" is not available to this task's assistant`);
  const check = argumentCheck(entry.tool);
  if ('unsupported' in check)
    return failure('ERROR', `the ${name} tool's input schema cannot be checked: ${check.unsupported}`);
  const parsed = check.schema.safeParse(input);
  if (!parsed.success)
    return failure(
      'INVALID_ARGUMENTS',
      `arguments do not match the ${name} schema: ${argumentProblems(parsed.error)}`,
    );
  const sessions = deps.mcp.sessions;
  const tool = entry.tool.mcp.tool;
  let outcome: McpCallResult | 'timeout';
  try {
    outcome = await withTimeout(entry.tool.timeoutMs, async (signal) =>
      (await sessions.session(server, signal)).callTool(tool, input as Record<string, unknown>, signal),
    );
  } catch (error) {
    sessions.drop(server.name);
    if (error instanceof ToolUnavailableError) throw error;
    if (error instanceof ConfigError) return failure('ERROR', error.message, error.code);
    if (error instanceof McpCallError) return failure('ERROR', error.message, 'TOOL_ERROR');
    return failure('ERROR', `${name}: ${(error as Error).message}`, 'TOOL_ERROR');
  }
  if (outcome === 'timeout') {
    sessions.drop(server.name);
    return failure('TIMEOUT', `${name} did not finish within ${entry.tool.timeoutMs} ms`);
  }
  const content = resultText(outcome);
  if (outcome.isError) return failure('ERROR', `${name} reported an error: ${content}`, 'TOOL_ERROR');
  if (content.length > server.maxResultChars)
    return failure(
      'ERROR',
      `${name} returned ${content.length} characters; the limit is ${server.maxResultChars} (maxResultChars)`,
      'TOOL_ERROR',
    );
  return { status: 'OK', content };
}

/**
 * The text the model reads: the text blocks joined when every block is text and there is no
 * structured content; otherwise the JSON of `{content, structuredContent}`.
 */
function resultText(result: McpCallResult): string {
  const texts = result.content.flatMap((block) => {
    const b = block as { type?: unknown; text?: unknown };
    return b.type === 'text' && typeof b.text === 'string' ? [b.text] : [];
  });
  if (result.structuredContent === undefined && texts.length === result.content.length)
    return texts.join('\n');
  return JSON.stringify({
    content: result.content,
    ...(result.structuredContent !== undefined ? { structuredContent: result.structuredContent } : {}),
  });
}
