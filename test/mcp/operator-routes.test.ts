import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Served, startServe } from '../../cli/serve.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import { parseEnv } from '../../shared/runtime/settings.js';
import { discoverServer } from '../../shared/tools/registry.js';
import { contractFetch } from '../helpers/openapi-contract.js';
import { startTestMcpServer, type TestMcpServer } from './server.js';

/**
 * The HTTP API's operator routes (`GET /tools`, `POST /tools/{name}/approve|revoke`) over real
 * HTTP through `serve` (API Gateway v2 events, the JWT authorizer played from bearer tokens),
 * against tools discovered on a real MCP server.
 */

const OPERATOR_TOKEN = 'ops-token-0123456789abcdef';
const USER_TOKEN = 'bob-token-0123456789abcdef0';

let mcp: TestMcpServer;
let served: Served;
let dataDir: string;

beforeAll(async () => {
  mcp = await startTestMcpServer();
  dataDir = await mkdtemp(join(tmpdir(), 'cld-operator-'));
  served = await startServe({
    port: 0,
    dataDir,
    env: {
      CLD_API_TOKENS: JSON.stringify({ [OPERATOR_TOKEN]: 'ops', [USER_TOKEN]: 'bob' }),
      CLD_OPERATOR_SUBJECTS: 'ops, someone-else',
    },
    core: parseEnv({
      CLD_DATA_DIR: dataDir,
      CLD_MCP_SERVERS: JSON.stringify([{ name: 'demo', url: mcp.url }]),
    }),
  });
  const runtime = served.runtime;
  const server = runtime.deps.mcp?.servers[0];
  if (!server || !runtime.deps.mcp) throw new Error('serve composed no MCP server');
  const report = await discoverServer(
    runtime.deps.resources,
    SYSTEM_ACTOR,
    server,
    runtime.deps.mcp.connector,
    new Date(),
  );
  expect(report.error).toBeUndefined();
});

afterAll(async () => {
  await served?.stop();
  await mcp?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

async function call(method: string, path: string, token: string, body?: unknown) {
  const response = await contractFetch(`${served.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

type ToolView = { name: string; status: string; decisions: { decision: string; by: string }[] };

async function tools(): Promise<ToolView[]> {
  const listed = await call('GET', '/tools', OPERATOR_TOKEN);
  expect(listed.status).toBe(200);
  return (listed.json.servers as { tools: ToolView[] }[]).flatMap((s) => s.tools);
}

describe('operator routes of the HTTP API', () => {
  it('refuses a caller who is not an operator (403), for reading and deciding', async () => {
    expect((await call('GET', '/tools', USER_TOKEN)).status).toBe(403);
    const denied = await call('POST', '/tools/demo__forecast/approve', USER_TOKEN, {});
    expect([denied.status, denied.json.code]).toEqual([403, 'FORBIDDEN']);
    // The role is checked before the input: a malformed name or body is a 403 too, not a 400.
    const malformed = await call('POST', '/tools/search/approve', USER_TOKEN, { reason: 7 });
    expect([malformed.status, malformed.json.code]).toEqual([403, 'FORBIDDEN']);
    expect((await tools()).find((t) => t.name === 'demo__forecast')?.status).toBe('pending');
  });

  it('lists discovered tools as pending, then records an approval with who decided', async () => {
    expect((await tools()).map((t) => [t.name, t.status])).toEqual([
      ['demo__big', 'pending'],
      ['demo__broken', 'pending'],
      ['demo__forecast', 'pending'],
      ['demo__send', 'pending'],
      ['demo__slow', 'pending'],
    ]);
    const approved = await call('POST', '/tools/demo__forecast/approve', OPERATOR_TOKEN, {
      reason: 'read-only',
    });
    expect(approved.status).toBe(200);
    expect(approved.json).toMatchObject({
      name: 'demo__forecast',
      status: 'approved',
      decision: { decision: 'approved', by: 'http:ops', reason: 'read-only' },
    });
    const forecast = (await tools()).find((t) => t.name === 'demo__forecast');
    expect(forecast?.status).toBe('approved');
    expect(forecast?.decisions.map((d) => [d.decision, d.by])).toEqual([['approved', 'http:ops']]);
  });

  it('revokes, and answers 404 for a name that is no discovered tool and 400 for a bad body or name', async () => {
    expect((await call('POST', '/tools/demo__forecast/revoke', OPERATOR_TOKEN, {})).json.status).toBe(
      'revoked',
    );
    expect((await tools()).find((t) => t.name === 'demo__forecast')?.status).toBe('revoked');
    expect((await call('POST', '/tools/demo__nothing/approve', OPERATOR_TOKEN, {})).status).toBe(404);
    expect((await call('POST', '/tools/demo__forecast/approve', OPERATOR_TOKEN, { why: 'x' })).status).toBe(
      400,
    );
    expect((await call('POST', '/tools/forecast/approve', OPERATOR_TOKEN, {})).status).toBe(400);
  });

  it('concurrent approve and revoke by the same operator over HTTP: every 200 is what GET /tools shows; a loser is 409 with the status now', async () => {
    for (let round = 0; round < 8; round += 1) {
      const before = (await tools()).find((t) => t.name === 'demo__send')?.decisions.length ?? 0;
      const answers = await Promise.all(
        (['approve', 'revoke'] as const).map((verb) =>
          call('POST', `/tools/demo__send/${verb}`, OPERATOR_TOKEN, {}),
        ),
      );
      const after = (await tools()).find((t) => t.name === 'demo__send');
      const ok = answers.filter((a) => a.status === 200);
      expect(ok.length).toBeGreaterThan(0);
      expect(after?.decisions.length).toBe(before + ok.length);
      for (const answer of ok)
        expect(answer.json.status).toBe((answer.json.decision as { decision: string }).decision);
      for (const answer of answers.filter((a) => a.status !== 200)) {
        expect([answer.status, answer.json.code]).toEqual([409, 'DECISION_CONFLICT']);
        expect(answer.json.current).toMatchObject({ status: after?.status });
      }
      // With one 200 it is the status now; with two, they were in sequence and the later one stands.
      if (ok.length === 1) expect(ok[0]?.json.status).toBe(after?.status);
    }
  });

  it('pages GET /tools with limit and cursor: every tool once, in order, nextCursor until the last page', async () => {
    const all = (await tools()).map((t) => t.name);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await call('GET', `/tools?limit=2${cursor ? `&cursor=${cursor}` : ''}`, OPERATOR_TOKEN);
      expect(page.status).toBe(200);
      const names = (page.json.servers as { tools: ToolView[] }[]).flatMap((s) => s.tools.map((t) => t.name));
      expect(names.length).toBeLessThanOrEqual(2);
      seen.push(...names);
      cursor = page.json.nextCursor as string | undefined;
      pages += 1;
    } while (cursor && pages < 10);
    expect(seen).toEqual(all);
    expect(pages).toBe(Math.ceil(all.length / 2));
  });

  it.each([
    ['limit=0'],
    ['limit=501'],
    ['limit=two'],
    ['cursor=not%20a%20cursor'],
    [`cursor=${Buffer.from('no-separator').toString('base64url')}`],
  ])('refuses GET /tools?%s with 400', async (query) => {
    const answer = await call('GET', `/tools?${query}`, OPERATOR_TOKEN);
    expect([answer.status, answer.json.code]).toEqual([400, 'VALIDATION']);
  });
});
