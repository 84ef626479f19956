import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideApproval } from '../../shared/domain/approval.js';
import { startConversation } from '../../shared/domain/conversation.js';
import { CREATE_PLAN } from '../../shared/domain/payloads.js';
import { PolicyDeniedError, ToolUnavailableError } from '../../shared/errors.js';
import type { ChatModel, ContentBlock, ConverseRequest, ConverseResponse } from '../../shared/llm/port.js';
import type { Actor } from '../../shared/policy/port.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { ApprovalRequest, Message, ToolApproval } from '../../shared/resources/schemas.js';
import { createLocalRuntime, type LocalRuntime } from '../../shared/runtime/local.js';
import { sdkConnector } from '../../shared/tools/mcp/client.js';
import { type McpServerConfig, parseMcpServers } from '../../shared/tools/mcp/config.js';
import { executeMcp } from '../../shared/tools/mcp/execute.js';
import { McpSessions } from '../../shared/tools/mcp/sessions.js';
import {
  decideTool,
  discoverServer,
  entriesOf,
  functionNameOf,
  REGISTRY_URN,
  readRegistry,
} from '../../shared/tools/registry.js';
import { childUrn } from '../../shared/urn.js';
import { startTestMcpServer, type TestMcpServer } from './server.js';

/**
 * Issue 14 parts 1 and 2 against a real MCP server (the SDK's server side over Streamable HTTP on
 * 127.0.0.1, test/mcp/server.ts): discovery, approval, a conversation that uses the tool through
 * the local run, a changed definition back to `pending`, and a server that times out, answers
 * garbage, fails, or is not there.
 */

const OPERATOR: Actor = { kind: 'operator', id: 'cli:test-operator' };

/** A model that calls `demo__forecast` once when it is offered, then answers with the result. */
class ForecastModel implements ChatModel {
  readonly name = 'forecast-test';
  /** The tool it calls, with its input. */
  wanted: { name: string; input: Record<string, string> } = {
    name: 'demo__forecast',
    input: { city: 'Oslo' },
  };
  /** Tool names offered in each inner-loop request. */
  readonly offered: string[][] = [];
  async converse(request: ConverseRequest): Promise<ConverseResponse> {
    const tools = request.toolConfig?.tools.map((t) => t.toolSpec.name) ?? [];
    let content: ContentBlock[];
    if (tools.includes(CREATE_PLAN)) {
      content = [
        {
          toolUse: {
            toolUseId: 'plan',
            name: CREATE_PLAN,
            input: {
              tasks: [
                {
                  title: 'Forecast for Oslo',
                  purpose: 'Tell the weather forecast for Oslo.',
                  instructions: 'Use the forecast tool.',
                  applicability: 'Weather questions.',
                  evaluation: 'The answer states the forecast.',
                },
              ],
            },
          },
        },
      ];
    } else {
      this.offered.push(tools);
      const results = request.messages.flatMap((m) =>
        m.content.flatMap((b) => ('toolResult' in b ? b.toolResult.content : [])),
      );
      if (tools.includes(this.wanted.name) && results.length === 0)
        content = [{ toolUse: { toolUseId: 'f1', name: this.wanted.name, input: this.wanted.input } }];
      else
        content = [
          {
            text: `Answer: ${results.map((r) => ('text' in r ? r.text : JSON.stringify(r))).join(' ') || 'no tool'}`,
          },
        ];
    }
    return {
      output: { message: { role: 'assistant', content } },
      stopReason: content.some((b) => 'toolUse' in b) ? 'tool_use' : 'end_turn',
      usage: { inputTokens: 10, outputTokens: 10, totalTokens: 20 },
      metrics: { latencyMs: 0 },
    };
  }
}

let mcp: TestMcpServer;
let server: McpServerConfig;
let runtime: LocalRuntime;
let model: ForecastModel;

beforeAll(async () => {
  mcp = await startTestMcpServer();
  process.env.CLD_TEST_MCP_TOKEN = 'Bearer test-token';
  [server] = parseMcpServers({
    CLD_MCP_SERVERS: JSON.stringify([
      {
        name: 'demo',
        url: mcp.url,
        timeoutMs: 2_000,
        maxResultChars: 1_000,
        headers: { Authorization: { env: 'CLD_TEST_MCP_TOKEN' } },
      },
    ]),
  }) as [McpServerConfig];
  const connector = sdkConnector();
  model = new ForecastModel();
  runtime = await createLocalRuntime({
    dataDir: await mkdtemp(join(tmpdir(), 'cld-mcp-')),
    model,
    backoffMs: () => 5,
    mcp: { servers: [server], connector, sessions: new McpSessions(connector) },
  });
  // Every assistant of the catalog may use the demo server's approved tools (its `servers`).
  runtime.deps.catalog = {
    ...runtime.deps.catalog,
    assistants: runtime.deps.catalog.assistants.map((a) => ({ ...a, servers: ['demo'] })),
  };
});

afterAll(async () => {
  await runtime?.deps.mcp?.sessions.closeAll();
  await mcp?.close();
});

async function ask(name: string): Promise<{ answer: Message | undefined; results: Message[] }> {
  const started = await startConversation(runtime.deps.resources, {
    user: 'cli:mcp-test',
    channel: { kind: 'cli' },
    content: 'What is the weather in Oslo?',
    conversationName: name,
  });
  await runtime.bus.idle();
  const below = await runtime.deps.resources.list(SYSTEM_ACTOR, started.conversation);
  return {
    answer: below.find((r) => r.meta.id === started.answer) as Message | undefined,
    results: below.filter(
      (r): r is Message => r.meta.type === 'common.Message' && r.meta.name.startsWith('result-'),
    ),
  };
}

/** Runs a discovered tool directly through the executor, as the tool step does for a task. */
function call(name: string, input: unknown) {
  const task = childUrn(
    childUrn(childUrn(undefined, 'common.Conversation', 'direct'), 'common.Message', 'm'),
    'plan.Task',
    't',
  );
  const assistant = runtime.deps.catalog.assistants[0]?.meta.id as string;
  return executeMcp(name, input, task, assistant, runtime.deps);
}

describe('MCP tools over Streamable HTTP', () => {
  it('discovers the server’s tools as pending Tools named <server>__<tool>, with the auth header from the environment', async () => {
    const report = await discoverServer(
      runtime.deps.resources,
      SYSTEM_ACTOR,
      server,
      server && runtime.deps.mcp!.connector,
      new Date(),
    );
    expect(report.error).toBeUndefined();
    expect(report.tools.map((t) => [t.name, t.status, t.changed])).toEqual([
      ['demo__big', 'pending', true],
      ['demo__broken', 'pending', true],
      ['demo__forecast', 'pending', true],
      ['demo__send', 'pending', true],
      ['demo__slow', 'pending', true],
    ]);
    expect(mcp.lastAuthorization).toBe('Bearer test-token');
    const view = await readRegistry(runtime.deps.resources, OPERATOR);
    const forecast = entriesOf(view).find((e) => e.name === 'demo__forecast');
    expect(forecast?.tool.mcp).toMatchObject({ server: 'demo', tool: 'forecast' });
    expect(forecast?.tool.mcp?.schemaHash).toMatch(/^[0-9a-f]{64}$/);
    expect(forecast?.tool.function.parameters).toMatchObject({ type: 'object', required: ['city'] });
    expect(forecast?.tool.meta.id.startsWith(`${REGISTRY_URN}/tool.Server.`)).toBe(true);
  });

  it('rediscovering an unchanged server keeps the same Tools (no new definitions)', async () => {
    const report = await discoverServer(
      runtime.deps.resources,
      SYSTEM_ACTOR,
      server,
      runtime.deps.mcp!.connector,
      new Date(Date.now() + 1),
    );
    expect(report.tools.every((t) => !t.changed)).toBe(true);
  });

  it('a pending tool is not offered to the assistant and its call is NOT_FOUND', async () => {
    const { answer, results } = await ask('pending-tool');
    expect(results).toEqual([]);
    expect(answer?.content).toBe('Answer: no tool');
    expect(model.offered.at(-1)).not.toContain('demo__forecast');
    expect((await call('demo__forecast', { city: 'Oslo' })).status).toBe('NOT_FOUND');
  });

  it('only an operator person records an approval; discovery’s system actor and a user cannot', async () => {
    const user: Actor = {
      kind: 'user',
      id: 'http:someone',
      conversation: 'cld:common.Conversation.c000000000000001',
    };
    for (const actor of [SYSTEM_ACTOR, user])
      await expect(
        decideTool(
          runtime.deps.resources,
          actor,
          { name: 'demo__forecast', decision: 'approved', by: 'x' },
          new Date(),
        ),
      ).rejects.toBeInstanceOf(PolicyDeniedError);
    const { entry, approval } = await decideTool(
      runtime.deps.resources,
      OPERATOR,
      { name: 'demo__forecast', decision: 'approved', by: OPERATOR.id, reason: 'read-only' },
      new Date(),
    );
    expect(entry.status).toBe('approved');
    expect(approval).toMatchObject({
      decision: 'approved',
      by: 'cli:test-operator',
      schemaHash: entry.tool.mcp?.schemaHash,
    });
    expect(approval.meta.parent).toBe(entry.tool.meta.id);
    for (const name of ['demo__broken', 'demo__slow', 'demo__big'])
      await decideTool(
        runtime.deps.resources,
        OPERATOR,
        { name, decision: 'approved', by: OPERATOR.id },
        new Date(),
      );
  });

  it('a conversation uses the approved tool through the local run and answers with its result', async () => {
    const { answer, results } = await ask('approved-tool');
    expect(results.map((r) => [r.status, r.content])).toEqual([['OK', 'Forecast for Oslo: sunny, 21 °C']]);
    expect(answer?.content).toBe('Answer: Forecast for Oslo: sunny, 21 °C');
    expect(model.offered.at(-1)).toContain('demo__forecast');
  });

  it('a tool that is not read-only (MCP annotations) runs only after the user approves the call', async () => {
    await decideTool(
      runtime.deps.resources,
      OPERATOR,
      { name: 'demo__send', decision: 'approved', by: OPERATOR.id },
      new Date(),
    );
    model.wanted = { name: 'demo__send', input: { to: 'bob', text: 'hello' } };
    try {
      const started = await startConversation(runtime.deps.resources, {
        user: 'cli:mcp-test',
        channel: { kind: 'cli' },
        content: 'Tell Bob hello.',
        conversationName: 'send-needs-approval',
      });
      await runtime.bus.idle();
      const requests = (await runtime.deps.resources.list(SYSTEM_ACTOR, started.conversation)).filter(
        (r): r is ApprovalRequest => r.meta.type === 'tool.Approval',
      );
      expect(requests.map((r) => [r.tool, r.input])).toEqual([['demo__send', { to: 'bob', text: 'hello' }]]);
      expect(mcp.sent).toEqual([]);
      const conversation = await runtime.deps.resources.getAs(
        SYSTEM_ACTOR,
        'common.Conversation',
        started.conversation,
      );
      await decideApproval(runtime.deps.resources, {
        user: 'cli:mcp-test',
        channel: 'cli',
        conversation,
        request: requests[0]?.meta.id as string,
        decision: 'approve',
        now: new Date(),
      });
      await runtime.bus.idle();
      expect(mcp.sent).toEqual(['bob: hello']);
      const answer = await runtime.deps.resources.find(SYSTEM_ACTOR, 'common.Message', started.answer);
      expect(answer?.content).toBe('Answer: sent to bob');
    } finally {
      model.wanted = { name: 'demo__forecast', input: { city: 'Oslo' } };
    }
  });

  it('maps arguments, isError, size and timeouts to the built-in tools’ statuses', async () => {
    const invalid = await call('demo__forecast', { town: 'Oslo' });
    expect(invalid.status).toBe('INVALID_ARGUMENTS');
    const before = mcp.requests;
    await call('demo__forecast', { city: 42 });
    expect(mcp.requests).toBe(before); // validated before calling the server
    const broken = await call('demo__broken', {});
    expect([broken.status, broken.error?.message]).toEqual([
      'ERROR',
      'demo__broken reported an error: the weather station is offline',
    ]);
    expect((await call('demo__big', { chars: 1_000 })).status).toBe('OK');
    const big = await call('demo__big', { chars: 1_001 });
    expect([big.status, big.error?.message]).toEqual([
      'ERROR',
      'demo__big returned 1001 characters; the limit is 1000 (maxResultChars)',
    ]);
    const slow = await call('demo__slow', { ms: 3_000 });
    expect([slow.status, slow.error?.message]).toEqual([
      'TIMEOUT',
      'demo__slow did not finish within 2000 ms',
    ]);
    expect((await call('demo__forecast', { city: 'Oslo' })).status).toBe('OK'); // a new session after the timeout
  });

  it('a server answering garbage fails discovery (nothing stored) and a call with ERROR; HTTP 503 is retryable', async () => {
    const urnsBefore = await runtime.deps.resources.listUrns(OPERATOR, REGISTRY_URN);
    runtime.deps.mcp?.sessions.drop('demo');
    mcp.mode = 'garbage';
    try {
      const report = await discoverServer(
        runtime.deps.resources,
        SYSTEM_ACTOR,
        server,
        runtime.deps.mcp!.connector,
        new Date(Date.now() + 2),
      );
      expect(report.error).toMatch(/^MCP server "demo" connect failed: /);
      expect(await runtime.deps.resources.listUrns(OPERATOR, REGISTRY_URN)).toEqual(urnsBefore);
      const garbage = await call('demo__forecast', { city: 'Oslo' });
      expect([garbage.status, garbage.error?.code]).toEqual(['ERROR', 'TOOL_ERROR']);
      mcp.mode = 'error';
      await expect(call('demo__forecast', { city: 'Oslo' })).rejects.toBeInstanceOf(ToolUnavailableError);
    } finally {
      mcp.mode = 'ok';
    }
  });

  it('a server that is not there is a retryable failure (ToolUnavailableError), not a result', async () => {
    const gone = await startTestMcpServer();
    await gone.close();
    const connector = sdkConnector();
    const [down] = parseMcpServers({ CLD_MCP_SERVERS: JSON.stringify([{ name: 'demo', url: gone.url }]) });
    const deps = {
      ...runtime.deps,
      mcp: { servers: [down as McpServerConfig], connector, sessions: new McpSessions(connector) },
    };
    const task = childUrn(
      childUrn(childUrn(undefined, 'common.Conversation', 'down'), 'common.Message', 'm'),
      'plan.Task',
      't',
    );
    await expect(
      executeMcp(
        'demo__forecast',
        { city: 'Oslo' },
        task,
        deps.catalog.assistants[0]?.meta.id as string,
        deps,
      ),
    ).rejects.toBeInstanceOf(ToolUnavailableError);
    const report = await discoverServer(
      deps.resources,
      SYSTEM_ACTOR,
      down as McpServerConfig,
      connector,
      new Date(),
    );
    expect(report.error).toMatch(/unreachable/);
  });

  it('a changed description sends the tool back to pending: a new Tool, the old approval kept', async () => {
    const old = entriesOf(await readRegistry(runtime.deps.resources, OPERATOR)).find(
      (e) => e.name === 'demo__forecast',
    );
    mcp.forecastDescription = 'Weather forecast for a city. Also sends your location to a third party.';
    const report = await discoverServer(
      runtime.deps.resources,
      SYSTEM_ACTOR,
      server,
      runtime.deps.mcp!.connector,
      new Date(Date.now() + 3),
    );
    expect(report.tools.find((t) => t.name === 'demo__forecast')).toEqual({
      name: 'demo__forecast',
      status: 'pending',
      changed: true,
    });
    expect(report.tools.find((t) => t.name === 'demo__broken')).toEqual({
      name: 'demo__broken',
      status: 'approved',
      changed: false,
    });
    const now = entriesOf(await readRegistry(runtime.deps.resources, OPERATOR)).find(
      (e) => e.name === 'demo__forecast',
    );
    expect(now?.tool.meta.id).not.toBe(old?.tool.meta.id);
    expect(now?.tool.mcp?.schemaHash).not.toBe(old?.tool.mcp?.schemaHash);
    const kept = await runtime.deps.resources.list(OPERATOR, old?.tool.meta.id as string);
    expect(kept.map((r) => (r as ToolApproval).decision)).toEqual(['approved']);
    expect((await call('demo__forecast', { city: 'Oslo' })).status).toBe('NOT_FOUND');
    const { results } = await ask('changed-tool');
    expect(results).toEqual([]);
  });

  it('a revoked tool is NOT_FOUND at its next call', async () => {
    expect((await call('demo__broken', {})).status).toBe('ERROR');
    await decideTool(
      runtime.deps.resources,
      OPERATOR,
      { name: 'demo__broken', decision: 'revoked', by: OPERATOR.id },
      new Date(),
    );
    const revoked = await call('demo__broken', {});
    expect([revoked.status, revoked.error?.message]).toEqual([
      'NOT_FOUND',
      'tool "demo__broken" is revoked: an operator has not approved it',
    ]);
  });
});

describe('MCP configuration and names', () => {
  it.each([
    [[{ name: 'a', url: 'http://example.com/mcp' }], /https:/],
    [[{ name: 'a_b', url: 'https://example.com/mcp' }], /lowercase/],
    [
      [
        { name: 'a', url: 'https://x.example/mcp' },
        { name: 'a', url: 'https://y.example/mcp' },
      ],
      /unique/,
    ],
    [[{ name: 'a', url: 'https://x.example/mcp', headers: { Authorization: { vault: 'x' } } }], /invalid/],
  ])('rejects %j', (servers, message) => {
    expect(() => parseMcpServers({ CLD_MCP_SERVERS: JSON.stringify(servers) })).toThrow(message);
  });

  it('refuses stdio servers where only url servers run (AWS)', () => {
    const servers = JSON.stringify([{ name: 'files', command: 'npx', args: ['server'] }]);
    expect(parseMcpServers({ CLD_MCP_SERVERS: servers })).toHaveLength(1);
    expect(() => parseMcpServers({ CLD_MCP_SERVERS: servers }, { stdio: false })).toThrow(/stdio server/);
  });

  it('names tools <server>__<tool> within Bedrock’s [a-zA-Z0-9_-]{1,64}', () => {
    expect(functionNameOf('demo', 'get.weather/now')).toBe('demo__get_weather_now');
    const long = functionNameOf('demo', 'x'.repeat(100));
    expect(long).toHaveLength(64);
    expect(long).toMatch(/^demo__x+_[0-9a-f]{8}$/);
    expect(functionNameOf('demo', 'x'.repeat(58))).toHaveLength(64);
  });
});

describe('MCP tools over stdio (local use)', () => {
  it('discovers and calls a stdio server’s tool, with its environment from the configuration only', async () => {
    process.env.CLD_TEST_GREETING = 'hi ';
    process.env.GREETING = 'leaked from cld’s environment ';
    const [local] = parseMcpServers({
      CLD_MCP_SERVERS: JSON.stringify([
        {
          name: 'local',
          command: process.execPath,
          args: ['--import', 'tsx', 'test/mcp/stdio-server.ts'],
          env: { GREETING: { env: 'CLD_TEST_GREETING' } },
          timeoutMs: 30_000,
        },
      ]),
    }) as [McpServerConfig];
    const connector = sdkConnector();
    const report = await discoverServer(runtime.deps.resources, SYSTEM_ACTOR, local, connector, new Date());
    expect([report.error, report.tools.map((t) => [t.name, t.status])]).toEqual([
      undefined,
      [['local__echo', 'pending']],
    ]);
    await decideTool(
      runtime.deps.resources,
      OPERATOR,
      { name: 'local__echo', decision: 'approved', by: OPERATOR.id },
      new Date(),
    );
    const sessions = new McpSessions(connector);
    const deps = {
      ...runtime.deps,
      mcp: { servers: [local], connector, sessions },
      catalog: {
        ...runtime.deps.catalog,
        assistants: runtime.deps.catalog.assistants.map((a) => ({ ...a, servers: ['local'] })),
      },
    };
    const task = childUrn(
      childUrn(childUrn(undefined, 'common.Conversation', 'stdio'), 'common.Message', 'm'),
      'plan.Task',
      't',
    );
    try {
      const result = await executeMcp(
        'local__echo',
        { text: 'there' },
        task,
        deps.catalog.assistants[0]?.meta.id as string,
        deps,
      );
      expect([result.status, result.content]).toEqual(['OK', 'hi there']);
      // Without the configured variable the child does not see cld's GREETING.
      const bare = { ...local, name: 'bare', env: {} };
      const session = await connector.connect(bare, new AbortController().signal);
      try {
        const echoed = await session.callTool('echo', { text: 'there' }, new AbortController().signal);
        expect(echoed.content).toEqual([{ type: 'text', text: 'there' }]);
      } finally {
        await session.close();
      }
    } finally {
      delete process.env.GREETING;
      await sessions.closeAll();
    }
  }, 60_000);
});
