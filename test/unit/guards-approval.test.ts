import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideApproval, decisionUrnOf } from '../../shared/domain/approval.js';
import { DEFAULT_LIMITS, LimitsSchema } from '../../shared/domain/limits.js';
import { ApprovalExpiredError, NotFoundError } from '../../shared/errors.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { ApprovalRequest, Message } from '../../shared/resources/schemas.js';
import { createLocalRuntime, type LocalRuntime } from '../../shared/runtime/local.js';
import { startWaitingForApproval } from '../helpers/approvals.js';

/**
 * The approval guarantees of {@link decideApproval} (issue 22, finding 10) on the real handlers
 * (local runtime, offline model, `search` marked `always`, a settable clock): a decision by anyone
 * but the conversation's user and a decision after the request expired store nothing, each pinned
 * on both sides of its boundary; and the TTL's default, its bounds, and its place under the
 * wall-time budget: an approval given at the last instant of the default TTL still leaves the
 * conversation the wall time to finish.
 */

const MINUTE = 60_000;
let dir: string;
let runtime: LocalRuntime;
let clock: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cld-guards-approval-'));
  clock = Date.now();
  runtime = await createLocalRuntime({
    dataDir: dir,
    toolApproval: { search: 'always' },
    now: () => new Date(clock),
  });
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true, maxRetries: 10 });
});

async function waiting(user: string, name: string) {
  const started = await startWaitingForApproval(runtime, user, name);
  const request = started.requests[0] as ApprovalRequest;
  expect(request.user).toBe(user);
  return { conversation: started.conversation, request };
}

function stored(request: ApprovalRequest) {
  return runtime.deps.resources.find(SYSTEM_ACTOR, 'tool.Decision', decisionUrnOf(request.meta.id));
}

/** The answer Messages (role assistant, directly under the conversation). */
async function answers(conversation: string): Promise<Message[]> {
  const messages = (await runtime.deps.resources.list(SYSTEM_ACTOR, conversation, {
    type: 'common.Message',
  })) as Message[];
  return messages.filter((m) => m.role === 'assistant' && m.meta.parent === conversation);
}

describe('decideApproval', () => {
  it('refuses a decision by a user other than the conversation’s, even given the conversation itself, and stores nothing', async () => {
    const { conversation, request } = await waiting('u-owner', 'guards-other-user');
    for (const user of ['u-mallory', 'u-owner2', 'U-OWNER']) {
      await expect(
        decideApproval(runtime.deps.resources, {
          user,
          channel: 'http',
          conversation,
          request: request.meta.id,
          decision: 'approve',
          now: new Date(clock),
        }),
        user,
      ).rejects.toBeInstanceOf(NotFoundError);
    }
    expect(await stored(request)).toBeUndefined();

    const own = await decideApproval(runtime.deps.resources, {
      user: 'u-owner',
      channel: 'http',
      conversation,
      request: request.meta.id,
      decision: 'deny',
      now: new Date(clock),
    });
    expect(own.created).toBe(true);
    expect((await stored(request))?.by).toBe('u-owner');
  });

  it('accepts a decision at the instant the request expires and refuses one a millisecond later (nothing stored)', async () => {
    const late = await waiting('u-late', 'guards-late');
    const expiresAt = Date.parse(late.request.expiresAt);
    await expect(
      decideApproval(runtime.deps.resources, {
        user: 'u-late',
        channel: 'http',
        conversation: late.conversation,
        request: late.request.meta.id,
        decision: 'approve',
        now: new Date(expiresAt + 1),
      }),
    ).rejects.toBeInstanceOf(ApprovalExpiredError);
    expect(await stored(late.request)).toBeUndefined();

    const onTime = await waiting('u-on-time', 'guards-on-time');
    const decided = await decideApproval(runtime.deps.resources, {
      user: 'u-on-time',
      channel: 'http',
      conversation: onTime.conversation,
      // The public id works as well as the URN.
      request: onTime.request.meta.id.slice(onTime.request.meta.id.lastIndexOf('.') + 1),
      decision: 'deny',
      now: new Date(Date.parse(onTime.request.expiresAt)),
    });
    expect(decided.created).toBe(true);
    expect(decided.view.status).toBe('denied');
  });
});

describe('the approval TTL', () => {
  it('defaults to 20 minutes, below the default wall-time budget', () => {
    expect(DEFAULT_LIMITS.approvalTtlMs).toBe(20 * MINUTE);
    expect(DEFAULT_LIMITS.approvalTtlMs).toBeLessThan(DEFAULT_LIMITS.messageWallTimeMs);
  });

  it.each([
    [999, false],
    [1_000, true],
    [30 * 24 * 60 * MINUTE, true],
    [30 * 24 * 60 * MINUTE + 1, false],
  ])('accepts approvalTtlMs %i: %s', (approvalTtlMs, ok) => {
    expect(LimitsSchema.safeParse({ approvalTtlMs }).success).toBe(ok);
  });

  it('gives a request the default TTL, and an approval at its last instant leaves the wall time to finish the answer', async () => {
    const { conversation, request } = await waiting('u-ttl', 'guards-ttl');
    expect(Date.parse(request.expiresAt) - Date.parse(request.meta.createdAt as string)).toBe(
      DEFAULT_LIMITS.approvalTtlMs,
    );
    clock = Date.parse(request.expiresAt);
    try {
      await decideApproval(runtime.deps.resources, {
        user: 'u-ttl',
        channel: 'http',
        conversation,
        request: request.meta.id,
        decision: 'approve',
        now: new Date(clock),
      });
      await runtime.bus.idle();
      // Every later call of `search` needs an approval of its own; approve each at once.
      for (let round = 0; round < 4; round++) {
        const pending = (
          (await runtime.deps.resources.list(SYSTEM_ACTOR, conversation.meta.id, {
            type: 'tool.Approval',
          })) as ApprovalRequest[]
        ).filter((r) => r.meta.id !== request.meta.id);
        for (const next of pending)
          if (!(await stored(next)))
            await decideApproval(runtime.deps.resources, {
              user: 'u-ttl',
              channel: 'http',
              conversation,
              request: next.meta.id,
              decision: 'approve',
              now: new Date(clock),
            });
        await runtime.bus.idle();
      }
      const found = await answers(conversation.meta.id);
      expect(found).toHaveLength(1);
      expect(found[0]?.error).toBeUndefined();
      expect(found[0]?.content).not.toMatch(/budget/i);
    } finally {
      clock = Date.now();
    }
  });
});
