/**
 * The progress of a conversation derived from its resources (shared/domain/progress.ts): per
 * message status, what it waits for, what is re-emitted, stall detection at its boundary, and the
 * conversation's status as the most severe of its messages'.
 */
import { describe, expect, it } from 'vitest';
import { approvalIdOf, approvalRequest } from '../../shared/domain/approval.js';
import { answerMessage, NAMES } from '../../shared/domain/common.js';
import { conversationProgress, type TurnStatus, worstStatus } from '../../shared/domain/progress.js';
import { isEnded, turnMessageOf } from '../../shared/domain/turn.js';
import { InvalidUrnError } from '../../shared/errors.js';
import { toResourcePut } from '../../shared/events/envelope.js';
import { matchesPattern } from '../../shared/events/pattern.js';
import { routingTable } from '../../shared/events/routing.js';
import { withMeta } from '../../shared/resources/meta.js';
import type { AnyResource, Message, Plan, Task } from '../../shared/resources/schemas.js';
import { keyOf } from '../../shared/urn.js';
import { conversation, message, NOW, task, toolCall } from './builders.js';

const c = conversation('progress');
const m1 = message(c.meta.id, 'message-1', 'first');
const m2 = {
  ...message(c.meta.id, 'message-2', 'second'),
  meta: { ...message(c.meta.id, 'message-2').meta, createdAt: '2025-01-02T03:05:00.000Z' },
};

function plan(messageUrn: string, tasks: string[]): Plan {
  return {
    meta: withMeta({ type: 'plan.Plan', name: NAMES.plan, parent: messageUrn }, NOW),
    tasks,
    model: 'offline',
    usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
  };
}

function output(taskUrn: string, error?: { code: string; message: string }): Message {
  return {
    meta: withMeta({ type: 'common.Message', name: NAMES.output, parent: taskUrn }, NOW),
    role: 'assistant',
    content: error ? '' : 'done',
    ...(error ? { error } : {}),
  };
}

const at = (minutes: number) => ({
  now: new Date(NOW.getTime() + minutes * 60_000),
  stallAfterMs: 10 * 60_000,
});

describe('worstStatus', () => {
  it.each<[TurnStatus[], TurnStatus]>([
    [[], 'done'],
    [['done', 'done'], 'done'],
    [['done', 'failed'], 'failed'],
    [['failed', 'running'], 'running'],
    [['running', 'done'], 'running'],
    [['pending', 'done'], 'pending'],
    [['running', 'pending'], 'running'],
    [['done', 'stalled', 'running'], 'stalled'],
    [['done', 'partial'], 'partial'],
    [['partial', 'failed'], 'failed'],
    [['partial', 'pending'], 'pending'],
  ])('%j → %s', (statuses, worst) => {
    expect(worstStatus(statuses)).toBe(worst);
  });
});

describe('conversationProgress', () => {
  it('waits for the plan of an unplanned message and re-emits the message', () => {
    const progress = conversationProgress(c.meta.id, [c, m1], at(1));
    expect(progress.turns).toEqual([
      expect.objectContaining({
        message: m1.meta.id,
        status: 'pending',
        waitingFor: ['the plan'],
        redrive: [m1.meta.id],
      }),
    ]);
  });

  it('re-emits tasks stored before their Plan (the plan step repeat emits nothing for them)', () => {
    const t1 = task(m1.meta.id, 'task-1');
    const progress = conversationProgress(c.meta.id, [c, m1, t1], at(1));
    expect(progress.turns[0]?.redrive).toEqual([m1.meta.id, t1.meta.id]);
  });

  it('re-emits a tool call without its result, and the task when every call is answered', () => {
    const t1 = task(m1.meta.id, 'task-1');
    const t2 = task(m1.meta.id, 'task-2');
    const call = toolCall(t1.meta.id, `${t1.meta.id}/common.Message.0000000000000000`, 'call-1-x');
    const resources: AnyResource[] = [c, m1, t1, t2, call, plan(m1.meta.id, [t1.meta.id, t2.meta.id])];
    const [turn] = conversationProgress(c.meta.id, resources, at(1)).turns;
    expect(turn?.status).toBe('running');
    expect(turn?.redrive).toEqual([call.meta.id, t2.meta.id]);
    expect(turn?.waitingFor).toEqual(['the result of tool search for "task-1"', 'model turn 1 of "task-2"']);
  });

  it('re-emits the outputs of a supervised task whose subtasks are all done (its count and verdict)', () => {
    const parent: Task = { ...task(m1.meta.id, 'task-1'), subtasks: [] };
    const child = task(parent.meta.id, 'task-1', 2);
    parent.subtasks = [child.meta.id];
    const done = output(child.meta.id);
    const resources: AnyResource[] = [c, m1, parent, child, done, plan(m1.meta.id, [parent.meta.id])];
    const [turn] = conversationProgress(c.meta.id, resources, at(1)).turns;
    expect(turn?.redrive).toEqual([done.meta.id]);
    expect(turn?.waitingFor).toEqual(['the supervisor\'s verdict on "task-1"']);
  });

  it('waits for the answer when every root task has an output, re-emitting the outputs and the message', () => {
    const t1 = task(m1.meta.id, 'task-1');
    const done = output(t1.meta.id);
    const [turn] = conversationProgress(
      c.meta.id,
      [c, m1, t1, done, plan(m1.meta.id, [t1.meta.id])],
      at(1),
    ).turns;
    expect(turn?.waitingFor).toEqual(['the answer']);
    expect(turn?.redrive).toEqual([done.meta.id, m1.meta.id]);
  });

  it('is stalled only after the stall time without a new resource (boundary on both sides)', () => {
    const t1 = task(m1.meta.id, 'task-1');
    const resources = [c, m1, t1, plan(m1.meta.id, [t1.meta.id])];
    const stall = 10 * 60_000;
    const before = conversationProgress(c.meta.id, resources, {
      now: new Date(NOW.getTime() + stall),
      stallAfterMs: stall,
    });
    const after = conversationProgress(c.meta.id, resources, {
      now: new Date(NOW.getTime() + stall + 1),
      stallAfterMs: stall,
    });
    expect(before.status).toBe('running');
    expect(after.status).toBe('stalled');
    expect(after.turns[0]?.waitingFor).toEqual(['model turn 1 of "task-1"']);
  });

  it('keeps a conversation running while its first message runs, whatever its follow-up says', () => {
    const t1 = task(m1.meta.id, 'task-1');
    const answer2 = answerMessage(m2.meta.id, { content: 'second answer' }, NOW);
    const progress = conversationProgress(
      c.meta.id,
      [c, m1, t1, plan(m1.meta.id, [t1.meta.id]), m2, answer2],
      at(1),
    );
    expect(progress.turns.map((t) => t.status)).toEqual(['running', 'done']);
    expect(progress.status).toBe('running');
  });

  it('is partial, closed and never stalled when every message is answered and one left parts unanswered', () => {
    const unanswered = [{ task: m1.meta.id, title: 'part 3', reason: 'cites no source' }];
    const a1 = answerMessage(m1.meta.id, { content: 'parts 1-2', unanswered }, NOW);
    const a2 = answerMessage(m2.meta.id, { content: 'yes' }, NOW);
    const progress = conversationProgress(c.meta.id, [c, m1, m2, a1, a2], {
      now: new Date(NOW.getTime() + 24 * 3_600_000),
      stallAfterMs: 60_000,
    });
    expect(a1.unanswered).toEqual(unanswered);
    expect(progress.turns.map((t) => t.status)).toEqual(['partial', 'done']);
    expect(progress.status).toBe('partial');
    expect(progress.turns.every((t) => isEnded(t.status) && t.redrive.length === 0)).toBe(true);
  });

  it('is failed when every message is answered and one answer carries an error', () => {
    const a1 = answerMessage(m1.meta.id, { content: 'no', error: { code: 'STALLED', message: 'x' } }, NOW);
    const a2 = answerMessage(m2.meta.id, { content: 'yes' }, NOW);
    const progress = conversationProgress(c.meta.id, [c, m1, m2, a1, a2], at(60));
    expect(progress.turns.map((t) => t.status)).toEqual(['failed', 'done']);
    expect(progress.status).toBe('failed');
    expect(progress.turns.every((t) => t.redrive.length === 0)).toBe(true);
  });

  it.each([
    ['two root tasks', false],
    ['two subtasks of a supervised root task', true],
  ])('is never stalled while a person decides, whatever a sibling did (%s); stalled once the request expired', (_label, nested) => {
    const root: Task = task(m1.meta.id, 'task-1');
    const parent = nested ? root.meta.id : m1.meta.id;
    const first = task(parent, 'task-1', nested ? 2 : 1);
    const second = task(parent, 'task-2', nested ? 2 : 1);
    if (nested) root.subtasks = [first.meta.id, second.meta.id];
    const finished = output(first.meta.id);
    const call = toolCall(second.meta.id, `${second.meta.id}/common.Message.0000000000000000`, 'call-1-x');
    const hour = 60 * 60_000;
    const request = approvalRequest(call, 'task-2', 'U123', hour, NOW);
    const roots = nested ? [root.meta.id] : [first.meta.id, second.meta.id];
    const resources: AnyResource[] = [
      c,
      m1,
      ...(nested ? [root] : []),
      first,
      second,
      finished,
      call,
      request,
      plan(m1.meta.id, roots),
    ];

    // Long past the stall time (10 min), one minute before the request expires.
    const [waiting] = conversationProgress(c.meta.id, resources, at(59)).turns;
    expect(waiting?.status).toBe('running');
    expect(waiting?.waitingFor).toEqual([
      `the user's approval of tool search for "task-2" (request ${approvalIdOf(request.meta.id)}, expires ${request.expiresAt})`,
    ]);
    expect(waiting?.redrive).toEqual([finished.meta.id]); // the sibling's count, for resume

    // Expired undecided: the call is re-driven (the tool step answers it DENIED), as any stalled work.
    const [expired] = conversationProgress(c.meta.id, resources, at(61)).turns;
    expect(expired?.status).toBe('stalled');
    expect(expired?.redrive).toEqual([finished.meta.id, call.meta.id]);
  });

  it('counts the output of a failed root task as done work', () => {
    const t1 = task(m1.meta.id, 'task-1');
    const failed = output(t1.meta.id, { code: 'LIMIT_EXCEEDED', message: 'too deep' });
    const [turn] = conversationProgress(
      c.meta.id,
      [c, m1, t1, failed, plan(m1.meta.id, [t1.meta.id])],
      at(1),
    ).turns;
    expect(turn?.waitingFor).toEqual(['the answer']);
  });
});

describe('whether a turn ended (shared/domain/turn.ts)', () => {
  it('is ended for every status but pending, running and stalled, a status added later included', () => {
    expect(
      ['pending', 'running', 'stalled', 'done', 'failed'].filter((s) => isEnded(s as TurnStatus)),
    ).toEqual(['done', 'failed']);
    expect(isEnded('partial' as TurnStatus)).toBe(true);
  });

  it('finds the user Message of a URN at any depth under it, and refuses one that is not under a message', () => {
    const parent = task(m1.meta.id, 'task-1');
    const child = task(parent.meta.id, 'task-1', 2);
    const call = toolCall(child.meta.id, `${child.meta.id}/common.Message.0000000000000000`, 'call-1-x');
    expect(turnMessageOf(approvalRequest(call, 'task-1', 'U123', 60_000, NOW).meta.id)).toBe(m1.meta.id);
    expect(turnMessageOf(m1.meta.id)).toBe(m1.meta.id);
    expect(() => turnMessageOf(c.meta.id)).toThrow(InvalidUrnError);
    expect(() =>
      turnMessageOf('cld:common.Conversation.0000000000000000/plan.Task.0000000000000000'),
    ).toThrow(/not under a user Message/);
  });
});

describe("the sweeper's RESOURCE_PUT", () => {
  const event = (detail: Record<string, unknown>, source = 'cld') => ({
    version: '0',
    id: 'e1',
    'detail-type': 'RESOURCE_PUT',
    source,
    account: '111122223333',
    time: '2026-01-01T00:00:00Z',
    region: 'eu-west-1',
    resources: [],
    detail,
  });

  it('normalises to the resource it names, and every rule S3 events match matches it too', () => {
    const detail = {
      bucket: { name: 'b' },
      object: { key: keyOf(m1.meta.id) },
      urn: m1.meta.id,
      reason: 'redrive',
    };
    expect(toResourcePut(event(detail))).toMatchObject({
      source: 'cld',
      urn: m1.meta.id,
      key: keyOf(m1.meta.id),
      bucket: 'b',
    });
    const routes = routingTable('b')
      .filter((r) => matchesPattern(r.pattern, event(detail)))
      .map((r) => r.id);
    expect(routes).toEqual(['PlanOnConversationMessage', 'ReplyOnConversationMessage']);
  });

  it('is refused when its URN is not the one its key stores, or it is not from source cld', () => {
    const wrong = { bucket: { name: 'b' }, object: { key: keyOf(m1.meta.id) }, urn: m2.meta.id };
    expect(() => toResourcePut(event(wrong))).toThrow(/but its key stores/);
    const detail = { bucket: { name: 'b' }, object: { key: keyOf(m1.meta.id) }, urn: m1.meta.id };
    expect(() => toResourcePut(event(detail, 'other'))).toThrow(/not an S3 Object Created event/);
    expect(routingTable('b').some((r) => matchesPattern(r.pattern, event(detail, 'other')))).toBe(false);
  });
});
