import { createHash } from 'node:crypto';
import { DecisionConflictError, NotFoundError, ValidationError } from '../errors.js';
import type { Actor } from '../policy/port.js';
import { withMeta } from '../resources/meta.js';
import type { ResourceIndex } from '../resources/resource-index.js';
import type { Assistant, Tool, ToolApproval, ToolDiscovery } from '../resources/schemas.js';
import { childUrn } from '../urn.js';
import { argumentCheck } from './execution.js';
import type { McpConnector, McpToolDefinition } from './mcp/client.js';
import type { McpServerConfig } from './mcp/config.js';

/**
 * The tool registry (seed tool-integration-notes.md "Tool Registry": discovery, validation,
 * approval before use; issue 14 parts 1 and 2), as resources under one root:
 *
 * ```
 * cld:tool.Registry.<h("default")>
 *   /tool.Server.<h(server)>
 *     /tool.Discovery.<h("discovery-<ISO time>")>      what one tools/list returned (newest = current)
 *     /common.Tool.<h("<server>__<tool>@<schema hash>")>  one definition of one tool
 *       /tool.ToolApproval.<h("approval-<n>")>         operator decisions, newest = status
 * ```
 *
 * A Tool's URN includes the hash of its name, description and input schema, so a tool whose
 * definition changes is a new resource with no approval: `pending` until an operator approves
 * it (a changed tool is a new tool). Nothing is edited: a revocation is the next approval
 * resource. The model sees a discovered tool as `<server>__<tool>` (Bedrock tool names are
 * `[a-zA-Z0-9_-]{1,64}`), so names of different servers never clash.
 */

/** Root of the registry. */
export const REGISTRY_URN = childUrn(undefined, 'tool.Registry', 'default');

/** Separates server and tool in a function name (server names have no `_`). */
export const MCP_SEPARATOR = '__';

/** A discovered tool's status: approved (newest decision), revoked (newest decision), or pending (none). */
export type ToolStatusName = 'pending' | 'approved' | 'revoked';

/** URN of a server's element in the registry. */
export function serverUrn(server: string): string {
  return childUrn(REGISTRY_URN, 'tool.Server', server);
}

/** True when a function name is a discovered tool's (`<server>__<tool>`). */
export function isMcpName(name: string): boolean {
  return name.includes(MCP_SEPARATOR);
}

/** The server part of a discovered tool's function name. */
export function serverOfName(name: string): string {
  return name.slice(0, name.indexOf(MCP_SEPARATOR));
}

/**
 * The function name of a server's tool: `<server>__<tool>`, characters outside
 * `[A-Za-z0-9_-]` replaced by `_`, cut to 64 with 8 hex of the tool name's SHA-256 when longer.
 */
export function functionNameOf(server: string, tool: string): string {
  const name = `${server}${MCP_SEPARATOR}${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  if (name.length <= 64) return name;
  return `${name.slice(0, 55)}_${sha256(tool).slice(0, 8)}`;
}

/**
 * SHA-256 (hex) of the canonical JSON (keys sorted) of a definition's name, description, input
 * schema and annotations (when it declares any: a tool that stops declaring itself read-only is a
 * changed tool too).
 */
export function schemaHashOf(definition: McpToolDefinition): string {
  return sha256(
    canonicalJson({
      name: definition.name,
      description: definition.description ?? '',
      inputSchema: definition.inputSchema,
      ...(definition.annotations ? { annotations: definition.annotations } : {}),
    }),
  );
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** JSON with object keys sorted at every level. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}

/**
 * The Tool resource for a server's tool definition (validated: name, description, an object
 * input schema that compiles). `function.parameters` is the input schema without `$schema` and
 * with `properties` (Bedrock's `inputSchema.json`).
 * @throws ValidationError for a definition that is not usable
 */
export function toolFromDefinition(server: McpServerConfig, definition: unknown, now: Date): Tool {
  const def = definition as Partial<McpToolDefinition> | null;
  if (!def || typeof def.name !== 'string' || def.name.length === 0 || def.name.length > 128)
    throw new ValidationError('tool name is missing or longer than 128 characters');
  if (
    def.description !== undefined &&
    (typeof def.description !== 'string' || def.description.length > 10_000)
  )
    throw new ValidationError(`tool ${def.name}: description is not a string of at most 10,000 characters`);
  const schema = def.inputSchema;
  if (!schema || typeof schema !== 'object' || Array.isArray(schema) || schema.type !== 'object')
    throw new ValidationError(`tool ${def.name}: inputSchema is not an object schema`);
  const annotations =
    def.annotations && typeof def.annotations === 'object' && !Array.isArray(def.annotations)
      ? def.annotations
      : undefined;
  const clean = {
    name: def.name,
    inputSchema: schema,
    ...(def.description ? { description: def.description } : {}),
    ...(annotations ? { annotations } : {}),
  };
  const schemaHash = schemaHashOf(clean);
  const name = functionNameOf(server.name, def.name);
  const { $schema: _dialect, ...parameters } = schema;
  const description = def.description?.trim() || `${def.name} (MCP server ${server.name})`;
  const tool: Tool = {
    meta: withMeta(
      {
        type: 'common.Tool',
        name: `${name}@${schemaHash.slice(0, 16)}`,
        parent: serverUrn(server.name),
        purpose: description,
        applicability: `A tool of the MCP server "${server.name}"; usable once an operator approved it.`,
      },
      now,
    ),
    function: {
      name,
      description,
      parameters: { properties: {}, ...parameters, type: 'object' } as Tool['function']['parameters'],
    },
    timeoutMs: server.timeoutMs,
    // MCP annotations: a tool is read-only only when it says so (`readOnlyHint: true`; the spec's
    // default is false, and `destructiveHint` defaults to true). Each call of any other tool needs
    // the approval of the conversation's user (shared/domain/approval.ts).
    ...(annotations?.readOnlyHint === true ? {} : { approval: 'always' as const }),
    mcp: { server: server.name, tool: def.name, schemaHash },
  };
  const check = argumentCheck(tool);
  if ('unsupported' in check)
    throw new ValidationError(`tool ${def.name}: inputSchema cannot be checked: ${check.unsupported}`);
  return tool;
}

/** One current tool of a server, with its decisions. */
export interface RegistryEntry {
  server: string;
  /** Function name (`<server>__<tool>`). */
  name: string;
  tool: Tool;
  status: ToolStatusName;
  /** Decisions on this definition, oldest first. */
  approvals: ToolApproval[];
}

/** What the registry holds now: per server, its newest discovery and its current tools. */
export interface RegistryView {
  servers: { server: string; discovery: ToolDiscovery; entries: RegistryEntry[] }[];
}

/**
 * Reads the registry (or one server's part of it): every server's newest discovery, the Tools it
 * lists and their decisions.
 * @throws PolicyDeniedError when `actor` may not list the registry
 */
export async function readRegistry(
  resources: ResourceIndex,
  actor: Actor,
  server?: string,
): Promise<RegistryView> {
  const all = await resources.list(actor, server ? serverUrn(server) : REGISTRY_URN);
  const discoveries = new Map<string, ToolDiscovery>();
  const tools = new Map<string, Tool>();
  const approvals = new Map<string, ToolApproval[]>();
  for (const resource of all) {
    if (resource.meta.type === 'tool.Discovery') {
      const discovery = resource as ToolDiscovery;
      const newest = discoveries.get(discovery.server);
      if (!newest || newest.meta.name < discovery.meta.name) discoveries.set(discovery.server, discovery);
    } else if (resource.meta.type === 'common.Tool') tools.set(resource.meta.id, resource as Tool);
    else if (resource.meta.type === 'tool.ToolApproval') {
      const approval = resource as ToolApproval;
      const list = approvals.get(approval.meta.parent as string) ?? [];
      list.push(approval);
      approvals.set(approval.meta.parent as string, list);
    }
  }
  const servers = [...discoveries.values()]
    .sort((a, b) => (a.server < b.server ? -1 : 1))
    .map((discovery) => ({
      server: discovery.server,
      discovery,
      entries: [...discovery.tools]
        .sort((a, b) => (a.name < b.name ? -1 : 1))
        .flatMap((listed) => {
          const tool = tools.get(listed.tool);
          if (!tool) return [];
          const decisions = (approvals.get(listed.tool) ?? []).sort((a, b) =>
            a.meta.name < b.meta.name ? -1 : 1,
          );
          return [
            {
              server: discovery.server,
              name: listed.name,
              tool,
              status: statusOf(tool, decisions),
              approvals: decisions,
            },
          ];
        }),
    }));
  return { servers };
}

/** Status from the newest decision, which counts only for the definition it names. */
function statusOf(tool: Tool, decisions: readonly ToolApproval[]): ToolStatusName {
  const newest = decisions.at(-1);
  if (!newest || newest.schemaHash !== tool.mcp?.schemaHash) return 'pending';
  return newest.decision;
}

/** Every current entry of a view. */
export function entriesOf(view: RegistryView): RegistryEntry[] {
  return view.servers.flatMap((s) => s.entries);
}

/** True when the assistant names this tool, or (for a discovered tool) its server. */
export function assistantMayUse(assistant: Assistant, tool: Tool): boolean {
  if (assistant.tools.includes(tool.function.name)) return true;
  return tool.mcp !== undefined && (assistant.servers ?? []).includes(tool.mcp.server);
}

/** True when the assistant names any discovered tool or server (so reading the registry can help it). */
export function usesRegistry(assistant: Assistant): boolean {
  return (assistant.servers ?? []).length > 0 || assistant.tools.some(isMcpName);
}

/**
 * The approved discovered tools an assistant may use, current definitions only.
 * @throws PolicyDeniedError when `actor` may not read the registry
 */
export async function approvedToolsFor(
  resources: ResourceIndex,
  actor: Actor,
  assistant: Assistant,
): Promise<Tool[]> {
  if (!usesRegistry(assistant)) return [];
  const view = await readRegistry(resources, actor);
  return entriesOf(view)
    .filter((entry) => entry.status === 'approved' && assistantMayUse(assistant, entry.tool))
    .map((entry) => entry.tool);
}

/**
 * The current definition of a discovered tool, when an operator approved it; undefined for any
 * other name or status.
 * @throws PolicyDeniedError when `actor` may not read the registry
 */
export async function approvedTool(
  resources: ResourceIndex,
  actor: Actor,
  name: string,
): Promise<Tool | undefined> {
  if (!isMcpName(name)) return undefined;
  const view = await readRegistry(resources, actor, serverOfName(name));
  const entry = entriesOf(view).find((e) => e.name === name);
  return entry?.status === 'approved' ? entry.tool : undefined;
}

/** What discovering one server did. */
export interface DiscoveryReport {
  server: string;
  /** The tools listed, with their status after this discovery and whether the definition is new. */
  tools: { name: string; status: ToolStatusName; changed: boolean }[];
  /** Tools the server listed that could not be used (bad name, schema, clash), with why. */
  skipped: { tool: string; reason: string }[];
  /** Set when the server could not be listed: nothing was stored for it. */
  error?: string;
}

/**
 * Discovers one server: `tools/list`, each usable tool stored as a `common.Tool` (create-only: an
 * unchanged definition keeps its URN and decisions; a changed one is a new, `pending` Tool), then
 * the discovery itself (the server's current tool set). A server that cannot be listed gets a
 * report with `error` and nothing stored, so its previous discovery stays current.
 * @param actor the operator (rule `system-tool-registry`)
 * @throws PolicyDeniedError when the actor may not write the registry
 */
export async function discoverServer(
  resources: ResourceIndex,
  actor: Actor,
  server: McpServerConfig,
  connector: McpConnector,
  now: Date,
): Promise<DiscoveryReport> {
  const report: DiscoveryReport = { server: server.name, tools: [], skipped: [] };
  let definitions: unknown[];
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), server.timeoutMs * 2);
  try {
    const session = await connector.connect(server, controller.signal);
    try {
      definitions = await session.listTools(controller.signal);
    } finally {
      await session.close().catch(() => undefined);
    }
  } catch (error) {
    if (!(error instanceof Error) || error.name === 'ConfigError') throw error;
    return { ...report, error: error.message };
  } finally {
    clearTimeout(timer);
  }
  if (!Array.isArray(definitions)) return { ...report, error: 'tools/list did not return a list' };
  const previous = (await readRegistry(resources, actor, server.name)).servers[0];
  const seen = new Map<string, Tool>();
  for (const definition of definitions) {
    let tool: Tool;
    try {
      tool = toolFromDefinition(server, definition, now);
    } catch (error) {
      const name = (definition as { name?: unknown } | null)?.name;
      report.skipped.push({ tool: typeof name === 'string' ? name : '?', reason: (error as Error).message });
      continue;
    }
    if (seen.has(tool.function.name)) {
      report.skipped.push({
        tool: tool.mcp?.tool ?? '?',
        reason: `its name ${tool.function.name} clashes with another tool's`,
      });
      continue;
    }
    seen.set(tool.function.name, (await resources.put(actor, tool)).resource);
  }
  const stored = [...seen.values()];
  const discovery: ToolDiscovery = {
    meta: withMeta(
      { type: 'tool.Discovery', name: `discovery-${now.toISOString()}`, parent: serverUrn(server.name) },
      now,
    ),
    server: server.name,
    at: now.toISOString(),
    tools: stored.map((tool) => ({
      name: tool.function.name,
      tool: tool.meta.id,
      schemaHash: tool.mcp?.schemaHash as string,
    })),
  };
  await resources.put(actor, discovery);
  const before = new Set(previous?.entries.map((e) => e.tool.meta.id));
  const after = (await readRegistry(resources, actor, server.name)).servers[0]?.entries ?? [];
  report.tools = after.map((entry) => ({
    name: entry.name,
    status: entry.status,
    changed: !before.has(entry.tool.meta.id),
  }));
  return report;
}

/**
 * Records an operator's decision on a current discovered tool: the next `tool.ToolApproval`
 * under its Tool, for its schema hash. The decision's name is its number (`approval-<n>`, n one
 * more than the decisions read) and it is created conditionally (`If-None-Match: *` on S3, an
 * exclusive create locally), so of concurrent decisions — by anyone, the same operator included —
 * exactly one takes number n. A loser whose request equals the stored decision (same decision,
 * operator, definition and reason: a retry) gets that decision back; any other loser gets
 * DecisionConflictError with the status now, never a success for what was not stored.
 * @param by the operator's identity (`cli:<user>`, `http:<sub>`)
 * @throws NotFoundError when no current tool has this name; DecisionConflictError (409) when a
 *   concurrent decision took the same number; PolicyDeniedError when the actor may not decide
 */
export async function decideTool(
  resources: ResourceIndex,
  actor: Actor,
  decision: { name: string; decision: ToolApproval['decision']; by: string; reason?: string | undefined },
  now: Date,
): Promise<{ entry: RegistryEntry; approval: ToolApproval }> {
  if (!isMcpName(decision.name))
    throw new NotFoundError(`"${decision.name}" is not a discovered tool's name (<server>__<tool>)`);
  const view = await readRegistry(resources, actor, serverOfName(decision.name));
  const entry = entriesOf(view).find((e) => e.name === decision.name);
  if (!entry) throw new NotFoundError(`no discovered tool is named "${decision.name}" (run tools discover?)`);
  const n = entry.approvals.length + 1;
  const approval: ToolApproval = {
    meta: withMeta(
      {
        type: 'tool.ToolApproval',
        name: `approval-${String(n).padStart(6, '0')}`,
        parent: entry.tool.meta.id,
      },
      now,
    ),
    decision: decision.decision,
    by: decision.by,
    at: now.toISOString(),
    schemaHash: entry.tool.mcp?.schemaHash as string,
    ...(decision.reason ? { reason: decision.reason } : {}),
  };
  const outcome = await resources.put(actor, approval);
  const stored = outcome.resource;
  const approvals = [...entry.approvals, stored];
  const status = statusOf(entry.tool, approvals);
  if (!outcome.created && !sameDecision(stored, approval))
    throw new DecisionConflictError(
      `another decision on ${decision.name} was recorded at the same time (${stored.decision} by ${stored.by}); nothing of this request was stored`,
      {
        details: {
          name: entry.name,
          status,
          decision: {
            decision: stored.decision,
            by: stored.by,
            at: stored.at,
            ...(stored.reason ? { reason: stored.reason } : {}),
          },
        },
      },
    );
  return { entry: { ...entry, status, approvals }, approval: stored };
}

/** True when two decisions say the same thing (all but the time): a retried request. */
function sameDecision(a: ToolApproval, b: ToolApproval): boolean {
  return a.decision === b.decision && a.by === b.by && a.schemaHash === b.schemaHash && a.reason === b.reason;
}
