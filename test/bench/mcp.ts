import { mkdtemp } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { assistantActor, NAMES, planActor } from '../../shared/domain/common.js';
import { startConversation } from '../../shared/domain/conversation.js';
import type { Deps } from '../../shared/domain/ports.js';
import { toolStep } from '../../shared/domain/tool.js';
import { OfflineChatModel } from '../../shared/llm/offline.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import { withMeta } from '../../shared/resources/meta.js';
import type { Message, Task, ToolCallResource } from '../../shared/resources/schemas.js';
import { assembleDeps } from '../../shared/runtime/assemble.js';
import { parseLimits } from '../../shared/runtime/settings.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import { sdkConnector } from '../../shared/tools/mcp/client.js';
import { parseMcpServers } from '../../shared/tools/mcp/config.js';
import { McpSessions } from '../../shared/tools/mcp/sessions.js';
import { decideTool, discoverServer } from '../../shared/tools/registry.js';
import { keyOf } from '../../shared/urn.js';
import { startTestMcpServer } from '../mcp/server.js';

/**
 * `npx tsx test/bench/mcp.ts [calls]`: the overhead of a discovered MCP tool's call over a
 * built-in tool's, through the tool step (shared/domain/tool.ts `toolStep`: read the call, check
 * no result exists, execute, store the result Message), on the embedded default's filesystem
 * storage with the policy gate. The built-in tool is `read` of a stored resource (no I/O after the
 * first: the resource cache); the MCP tool is `demo__forecast` of the test server
 * (test/mcp/server.ts: the SDK's server over Streamable HTTP on 127.0.0.1, returning a fixed text).
 * Also times the pieces of the MCP path: the registry read (list the server's subtree, decisions
 * from the cache) and one `tools/call` on the open session; and the first call, which connects.
 * Prints median and p95 per call with the load average.
 */
async function main(): Promise<void> {
  const calls = Number(process.argv[2] ?? 300);
  const mcp = await startTestMcpServer();
  const [server] = parseMcpServers({ CLD_MCP_SERVERS: JSON.stringify([{ name: 'demo', url: mcp.url }]) });
  if (!server) throw new Error('no server');
  const connector = sdkConnector();
  const dir = await mkdtemp(join(tmpdir(), 'cld-bench-mcp-'));
  const deps = await assembleDeps({
    storage: new FilesystemStorage(join(dir, 'resources')),
    indexStorage: new FilesystemStorage(dir),
    model: new OfflineChatModel(),
    limits: parseLimits(undefined),
    logger: new Logger({ serviceName: 'cld', logLevel: 'SILENT' }),
    mcp: { servers: [server], connector, sessions: new McpSessions(connector) },
  });
  const researcher = deps.catalog.assistants.find((a) => a.meta.name === 'researcher');
  if (!researcher) throw new Error('no researcher');
  deps.catalog = {
    ...deps.catalog,
    assistants: deps.catalog.assistants.map((a) => (a === researcher ? { ...a, servers: ['demo'] } : a)),
  };
  await discoverServer(deps.resources, SYSTEM_ACTOR, server, connector, new Date());
  await decideTool(
    deps.resources,
    { kind: 'operator', id: 'cli:bench' },
    { name: 'demo__forecast', decision: 'approved', by: 'cli:bench' },
    new Date(),
  );
  const task = await makeTask(deps, researcher.meta.id);

  const timings = { builtin: [] as number[], mcp: [] as number[] };
  let first = 0;
  for (let i = 0; i < calls; i++) {
    for (const kind of i % 2 ? (['builtin', 'mcp'] as const) : (['mcp', 'builtin'] as const)) {
      const call =
        kind === 'builtin'
          ? { id: `b${i}`, name: 'read', input: { urn: task.meta.id } }
          : { id: `m${i}`, name: 'demo__forecast', input: { city: 'Oslo' } };
      const event = await putCall(deps, task, i, call);
      const t0 = performance.now();
      const outcome = await toolStep(event, deps);
      const ms = performance.now() - t0;
      if (!outcome.detail?.endsWith(': OK')) throw new Error(`${call.name}: ${outcome.detail}`);
      if (kind === 'mcp' && i === 0) first = ms;
      else timings[kind].push(ms);
    }
  }
  const pieces = { registry: [] as number[], call: [] as number[] };
  const { readRegistry } = await import('../../shared/tools/registry.js');
  const session = await deps.mcp?.sessions.session(server, new AbortController().signal);
  for (let i = 0; i < calls; i++) {
    let t0 = performance.now();
    await readRegistry(deps.resources, assistantActor(task.meta.id), 'demo');
    pieces.registry.push(performance.now() - t0);
    t0 = performance.now();
    await session?.callTool('forecast', { city: 'Oslo' }, new AbortController().signal);
    pieces.call.push(performance.now() - t0);
  }
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  const row = (name: string, values: number[]) =>
    `| ${name} | ${quantile(values, 0.5).toFixed(2)} | ${quantile(values, 0.95).toFixed(2)} |`;
  console.log(`MCP tool overhead, ${calls} calls each, node ${process.version}, load average ${load}\n`);
  console.log('| per call | median ms | p95 ms |\n|---|---:|---:|');
  console.log(row('tool step, built-in `read`', timings.builtin));
  console.log(row('tool step, MCP `demo__forecast` (open session)', timings.mcp));
  console.log(
    `| overhead of the MCP tool | ${(quantile(timings.mcp, 0.5) - quantile(timings.builtin, 0.5)).toFixed(2)} | |`,
  );
  console.log(row('  of which: registry read (one server)', pieces.registry));
  console.log(row('  of which: tools/call round trip (SDK client → server)', pieces.call));
  console.log(`| first MCP call (connect + initialize + call) | ${first.toFixed(2)} | |`);
  await deps.mcp?.sessions.closeAll();
  await mcp.close();
}

/** A conversation, its user Message and one leaf Task assigned to `assistant`, stored (no bus). */
async function makeTask(deps: Deps, assistant: string): Promise<Task> {
  const started = await startConversation(deps.resources, {
    user: 'cli:bench',
    channel: { kind: 'cli' },
    content: 'bench',
    conversationName: 'bench-mcp',
  });
  const task: Task = {
    meta: withMeta(
      { type: 'plan.Task', name: NAMES.task(1), parent: started.message, purpose: 'bench' },
      new Date(),
    ),
    title: 'bench',
    subtasks: [],
    assistant,
    election: { assistant, name: 'researcher', score: 1 },
    status: 'pending',
    depth: 1,
    round: 0,
  };
  await deps.resources.put(planActor(started.message), task);
  return task;
}

/** Stores a tool.Call under the task (as its assistant) and returns the event the tool step gets. */
async function putCall(
  deps: Deps,
  task: Task,
  k: number,
  call: { id: string; name: string; input: unknown },
) {
  const turn: Message = {
    meta: withMeta({ type: 'common.Message', name: NAMES.turn(k + 1), parent: task.meta.id }, new Date()),
    role: 'assistant',
    content: '',
  };
  const resource: ToolCallResource = {
    meta: withMeta({ type: 'tool.Call', name: NAMES.call(k + 1, call.id), parent: task.meta.id }, new Date()),
    call,
    turn: turn.meta.id,
  };
  await deps.resources.put(assistantActor(task.meta.id, task.assistant), resource);
  return {
    id: call.id,
    detailType: 'RESOURCE_PUT' as const,
    source: 'aws.s3',
    time: new Date().toISOString(),
    bucket: 'bench',
    key: keyOf(resource.meta.id),
    urn: resource.meta.id,
    type: 'tool.Call',
  };
}

function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
