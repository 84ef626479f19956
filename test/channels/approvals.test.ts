import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Served, startServe } from '../../cli/serve.js';
import type { ConversationView } from '../../shared/channels/conversations.js';
import type { ApprovalView } from '../../shared/domain/approval.js';
import { answerMessage } from '../../shared/domain/common.js';
import { sweeperActor } from '../../shared/domain/sweep.js';
import { StalledError, toErrorInfo } from '../../shared/errors.js';
import type { Message } from '../../shared/resources/schemas.js';
import { parseEnv } from '../../shared/runtime/settings.js';
import { rootOf } from '../../shared/urn.js';
import { contractFetch } from '../helpers/openapi-contract.js';
import { DOCS, until } from './helpers.js';

/**
 * Human approval of tool calls over the HTTP API, against `serve` on real HTTP: the `search` tool
 * is marked as needing approval (`CLD_TOOL_APPROVAL`), so a question waits for the user; the wait
 * survives a restart of `serve` on the same data directory; an approval completes the answer, a
 * denial reaches it as a DENIED tool result; other callers, second decisions and late decisions
 * are refused. A 2-part question keeps waiting for its second approval through the sweeper's
 * runs; a decision on a request whose message ended is refused (409) and runs nothing.
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
  const response = await contractFetch(`${url}${path}`, {
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

const TWO_PARTS =
  '1. How do I send S3 object events to EventBridge? 2. How do I grant read access to a bucket?';

/** Posts a decision on a request of conversation `id` as Alice. */
async function decide(url: string, id: string, approvalId: string, decision: 'approve' | 'deny') {
  return call(url, 'POST', `/conversations/${id}/approvals/${approvalId}`, ALICE, { decision });
}

describe('approvals that wait (issue 21)', () => {
  it("keeps a 2-part question waiting for its second approval through the sweeper's runs, and ends it done when approved", async () => {
    const posted = await call(served.url, 'POST', '/conversations', ALICE, { message: TWO_PARTS });
    expect(posted.status).toBe(202);
    const id = posted.json.id as string;
    const both = await until(async () => {
      const pending = (await view(served.url, id)).approvals.filter((a) => a.status === 'pending');
      return pending.length === 2 ? pending : undefined;
    });
    const [first, second] = both as [ApprovalView, ApprovalView];
    expect((await decide(served.url, id, first.id, 'approve')).status).toBe(200);
    await served.runtime.bus.idle();

    // serve's sweeper with nothing in flight: every open message is past its stall time (0), and
    // maxRedrives + 1 runs answer a stalled one STALLED. A message waiting for a person is not one.
    const { maxRedrives } = served.runtime.deps.limits;
    const { urn } = await view(served.url, id);
    for (let run = 0; run <= maxRedrives; run++) {
      const outcomes = await served.sweeper.sweepNow();
      expect(outcomes.find((o) => o.conversation === urn)?.action).toBe('waiting');
      await served.runtime.bus.idle();
    }
    const waiting = await view(served.url, id);
    expect(waiting.status).toBe('running');
    expect(waiting.answer).toBeUndefined();
    expect(waiting.approvals.find((a) => a.id === second.id)?.status).toBe('pending');
    expect(waiting.messages[0]?.waitingFor).toEqual([expect.stringContaining(`request ${second.id}`)]);

    expect((await decide(served.url, id, second.id, 'approve')).status).toBe(200);
    const done = await until(async () => {
      const v = await view(served.url, id);
      return v.answer ? v : undefined;
    }, 30_000);
    expect(done.status).toBe('done');
    expect(done.answer?.content.length).toBeGreaterThan(0);
  });

  it('refuses a decision on a request whose message ended (409 MESSAGE_ENDED, its state in the body) and runs nothing', async () => {
    const id = await ask(served.url);
    const pending = await pendingApproval(served.url, id);
    await served.runtime.bus.idle();
    // The message ends while the request is open, as the sweeper ended it STALLED before this fix.
    const message = (await view(served.url, id)).messages[0]?.urn as string;
    const stalled = new StalledError('no progress since it was stored after 3 redrive(s)');
    await served.runtime.deps.resources.put(
      sweeperActor(rootOf(message), message),
      answerMessage(
        message,
        { content: `I could not complete this request: ${stalled.message}`, error: toErrorInfo(stalled) },
        new Date(),
      ),
    );
    const tools = served.runtime.bus.stats.byTarget.tool ?? 0;

    const refused = await decide(served.url, id, pending.id, 'approve');

    expect(refused.status).toBe(409);
    expect(refused.json).toMatchObject({
      code: 'MESSAGE_ENDED',
      details: { message, status: 'failed', endedAt: expect.any(String) },
    });
    expect(refused.json.message).toContain('already ended (failed)');
    await served.runtime.bus.idle();
    expect(served.runtime.bus.stats.byTarget.tool ?? 0).toBe(tools); // no decision event, no run
    const after = await view(served.url, id);
    expect(after.status).toBe('failed');
    expect(after.approvals.find((a) => a.id === pending.id)?.decision).toBeUndefined();
    // The view no longer offers it as waiting: undecided and its message over, it is closed.
    expect(after.approvals.find((a) => a.id === pending.id)?.status).toBe('closed');
    const task = pending.call.slice(0, pending.call.lastIndexOf('/'));
    const stored = await served.runtime.deps.resources.list({ kind: 'system', id: 'operator' }, task);
    expect(stored.filter((r) => r.meta.type === 'tool.Decision' || r.meta.type === 'tool.Execution')).toEqual(
      [],
    );
    expect(stored.filter((r) => r.meta.type === 'common.Message' && (r as Message).role === 'tool')).toEqual(
      [],
    );
    // A denial is refused the same way: whatever the decision, the message is over.
    expect((await decide(served.url, id, pending.id, 'deny')).json.code).toBe('MESSAGE_ENDED');
  });

  it('keeps a decision made before the end: the same one again is a 200 (idempotent), another a 409', async () => {
    const id = await ask(served.url);
    const done = await answered(served.url, id);
    expect(done.status).toBe('done');
    const approved = done.approvals.find((a) => a.status === 'approved') as ApprovalView;
    const tools = served.runtime.bus.stats.byTarget.tool ?? 0;

    const again = await decide(served.url, id, approved.id, 'approve');
    const other = await decide(served.url, id, approved.id, 'deny');

    expect(again.status).toBe(200);
    expect((again.json.approval as ApprovalView).decision?.decidedAt).toBe(approved.decision?.decidedAt);
    expect(other.status).toBe(409);
    expect(other.json.code).toBe('APPROVAL_DECIDED');
    await served.runtime.bus.idle();
    expect(served.runtime.bus.stats.byTarget.tool ?? 0).toBe(tools);
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
