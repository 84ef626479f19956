import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Served, startServe } from '../../cli/serve.js';
import type { ConversationView } from '../../shared/channels/conversations.js';
import type { ApprovalView } from '../../shared/domain/approval.js';
import type { Message } from '../../shared/resources/schemas.js';
import { parseEnv } from '../../shared/runtime/compose.js';
import { DOCS, until } from './helpers.js';

/**
 * Human approval of tool calls over the HTTP API, against `serve` on real HTTP: the `search` tool
 * is marked as needing approval (`CLD_TOOL_APPROVAL`), so a question waits for the user; the wait
 * survives a restart of `serve` on the same data directory; an approval completes the answer, a
 * denial reaches it as a DENIED tool result; other callers, second decisions and late decisions
 * are refused.
 */

const ALICE = 'alice-token-0123456789abcdef';
const BOB = 'bob-token-0123456789abcdef0';
const TOKENS = JSON.stringify({ [ALICE]: 'alice', [BOB]: 'bob' });
const QUESTION = 'How do I send S3 object events to EventBridge?';

let dataDir: string;
let served: Served;

async function start(dir: string, limits?: Record<string, number>): Promise<Served> {
  return startServe({
    port: 0,
    dataDir: dir,
    env: { CLD_API_TOKENS: TOKENS },
    core: parseEnv({
      CLD_DATA_DIR: dir,
      CLD_TOOL_APPROVAL: JSON.stringify({ search: 'always' }),
      ...(limits ? { CLD_LIMITS: JSON.stringify(limits) } : {}),
    }),
    docs: DOCS,
  });
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'cld-approvals-'));
  served = await start(dataDir);
});

afterAll(async () => {
  await served?.stop();
  await rm(dataDir, { recursive: true, force: true, maxRetries: 10 });
});

async function call(
  url: string,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : {} };
}

async function ask(url: string): Promise<string> {
  const posted = await call(url, 'POST', '/conversations', ALICE, { message: QUESTION });
  expect(posted.status).toBe(202);
  return posted.json.id as string;
}

async function view(url: string, id: string): Promise<ConversationView> {
  return (await call(url, 'GET', `/conversations/${id}`, ALICE)).json as unknown as ConversationView;
}

async function pendingApproval(url: string, id: string): Promise<ApprovalView> {
  return until(async () => (await view(url, id)).approvals?.find((a) => a.status === 'pending'));
}

async function answered(url: string, id: string): Promise<ConversationView> {
  return until(async () => {
    const v = await view(url, id);
    // A search call needs approval each time: approve every one the model makes.
    for (const approval of v.approvals.filter((a) => a.status === 'pending'))
      await call(url, 'POST', `/conversations/${id}/approvals/${approval.id}`, ALICE, {
        decision: 'approve',
      });
    return v.status === 'done' || v.status === 'failed' ? v : undefined;
  }, 30_000);
}

describe('approval of tool calls over HTTP', () => {
  it('waits for the user, survives a restart of serve, and completes after an approval', async () => {
    const id = await ask(served.url);
    const pending = await pendingApproval(served.url, id);
    expect(pending).toMatchObject({ tool: 'search', status: 'pending' });
    expect(pending.id).toMatch(/^[0-9a-f]{16}$/);
    expect(pending.urn.endsWith(`tool.Approval.${pending.id}`)).toBe(true);
    expect(pending.call).toBe(pending.urn.slice(0, pending.urn.lastIndexOf('/')));
    expect(Date.parse(pending.expiresAt)).toBeGreaterThan(Date.now());
    const waiting = await view(served.url, id);
    expect(waiting.status).toBe('running');
    expect(waiting.messages[0]?.waitingFor?.join(' ')).toContain(`the user's approval of tool search`);

    await served.stop();
    served = await start(dataDir);

    const after = await view(served.url, id);
    expect(after.approvals.find((a) => a.id === pending.id)?.status).toBe('pending');
    const decided = await call(served.url, 'POST', `/conversations/${id}/approvals/${pending.id}`, ALICE, {
      decision: 'approve',
    });
    expect(decided.status).toBe(200);
    expect((decided.json.approval as ApprovalView).status).toBe('approved');
    expect((decided.json.approval as ApprovalView).decision).toMatchObject({
      decision: 'approve',
      by: 'http:alice',
      channel: 'http',
    });

    const done = await answered(served.url, id);
    expect(done.status).toBe('done');
    expect(done.answer?.content.length).toBeGreaterThan(0);
    expect(done.approvals.every((a) => a.status === 'approved')).toBe(true);
  });

  it('answers a denied call DENIED with the reason, and the answer still comes', async () => {
    const id = await ask(served.url);
    const pending = await pendingApproval(served.url, id);
    const denied = await call(served.url, 'POST', `/conversations/${id}/approvals/${pending.id}`, ALICE, {
      decision: 'deny',
      reason: 'not this one',
    });
    expect(denied.status).toBe(200);
    expect((denied.json.approval as ApprovalView).status).toBe('denied');
    const done = await until(async () => {
      const v = await view(served.url, id);
      for (const approval of v.approvals.filter((a) => a.status === 'pending'))
        await call(served.url, 'POST', `/conversations/${id}/approvals/${approval.id}`, ALICE, {
          decision: 'deny',
        });
      return v.answer ? v : undefined;
    }, 30_000);
    expect(done.answer?.content.length).toBeGreaterThan(0);
    const task = pending.call.slice(0, pending.call.lastIndexOf('/'));
    const result = await until(async () => {
      const resources = await served.runtime.deps.resources.list({ kind: 'system', id: 'operator' }, task, {
        type: 'common.Message',
      });
      return (resources as Message[]).find((m) => m.role === 'tool' && m.status === 'DENIED');
    });
    expect(result.error).toEqual({
      code: 'APPROVAL_DENIED',
      message: 'the user denied this call of search: not this one',
    });
  });

  it('refuses other callers (404), a second different decision (409) and keeps the first', async () => {
    const id = await ask(served.url);
    const pending = await pendingApproval(served.url, id);
    const path = `/conversations/${id}/approvals/${pending.id}`;
    expect((await call(served.url, 'POST', path, BOB, { decision: 'approve' })).status).toBe(404);
    expect((await call(served.url, 'POST', path, ALICE, { decision: 'maybe' })).status).toBe(400);
    expect((await call(served.url, 'POST', path, ALICE, { decision: 'approve', extra: 1 })).status).toBe(400);
    expect(
      (
        await call(served.url, 'POST', `/conversations/${id}/approvals/0000000000000000`, ALICE, {
          decision: 'approve',
        })
      ).status,
    ).toBe(404);
    expect((await call(served.url, 'POST', path, ALICE, { decision: 'deny' })).status).toBe(200);
    expect((await call(served.url, 'POST', path, ALICE, { decision: 'deny' })).status).toBe(200);
    const conflict = await call(served.url, 'POST', path, ALICE, { decision: 'approve' });
    expect(conflict.status).toBe(409);
    expect(conflict.json.code).toBe('APPROVAL_DECIDED');
    const v = await view(served.url, id);
    expect(v.approvals.find((a) => a.id === pending.id)?.decision?.decision).toBe('deny');
  });
});

describe('expiry of approval requests', () => {
  let dir: string;
  let short: Served;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cld-approvals-ttl-'));
    short = await start(dir, { approvalTtlMs: 1_000 });
  });

  afterAll(async () => {
    await short?.stop();
    await rm(dir, { recursive: true, force: true, maxRetries: 10 });
  });

  it('shows an undecided request as expired, refuses a late decision (410), and answers the call DENIED', async () => {
    const id = await ask(short.url);
    const first = await until(async () => (await view(short.url, id)).approvals[0]);
    const expired = await until(async () =>
      (await view(short.url, id)).approvals.find((a) => a.id === first.id && a.status === 'expired'),
    );
    expect(expired.decision).toBeUndefined();
    const late = await call(short.url, 'POST', `/conversations/${id}/approvals/${first.id}`, ALICE, {
      decision: 'approve',
    });
    expect(late.status).toBe(410);
    expect(late.json.code).toBe('APPROVAL_EXPIRED');
    // The sweeper re-drives the call once the request expired; the tool function answers it DENIED.
    const task = first.call.slice(0, first.call.lastIndexOf('/'));
    const result = await until(async () => {
      const resources = await short.runtime.deps.resources.list({ kind: 'system', id: 'operator' }, task, {
        type: 'common.Message',
      });
      return (resources as Message[]).find((m) => m.role === 'tool' && m.status === 'DENIED');
    }, 30_000);
    expect(result.error?.code).toBe('APPROVAL_EXPIRED');
  });
});
