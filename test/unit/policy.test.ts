import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/errors.js';
import { globMatch } from '../../shared/policy/glob.js';
import type { Action, Actor } from '../../shared/policy/port.js';
import { RulesPolicy, request } from '../../shared/policy/rules.js';
import { childUrn } from '../../shared/urn.js';

const RULES: unknown = JSON.parse(
  readFileSync(new URL('../../policies/rules.json', import.meta.url), 'utf8'),
);
const policy = new RulesPolicy(RULES);

// Conversation C: user message M, root tasks T and T2, subtask SUB of T.
const C = childUrn(undefined, 'common.Conversation', 'c');
const M = childUrn(C, 'common.Message', 'user message');
const M_OTHER = childUrn(C, 'common.Message', 'another user message');
const T = childUrn(M, 'plan.Task', 'root task');
const T2 = childUrn(M, 'plan.Task', 'sibling task');
const SUB = childUrn(T, 'plan.Task', 'subtask');
const T_MESSAGE = childUrn(T, 'common.Message', 'tool result');
const T_CALL = childUrn(T, 'tool.Call', 'tooluse-1');
const SUB_MESSAGE = childUrn(SUB, 'common.Message', 'output');
const T2_MESSAGE = childUrn(T2, 'common.Message', 'output');
const ANSWER = childUrn(C, 'common.Message', 'final answer');
const PLAN = childUrn(M, 'plan.Plan', 'plan');
// Another conversation C2 with the same shape.
const C2 = childUrn(undefined, 'common.Conversation', 'c2');
const M2 = childUrn(C2, 'common.Message', 'user message');
const T_C2 = childUrn(M2, 'plan.Task', 'root task');
// Shared corpora and the catalog.
const DOCUMENT = childUrn(undefined, 'doc.Document', 'readme.md');
const CHUNK = childUrn(DOCUMENT, 'doc.Chunk', '0');
const ASSISTANT = childUrn(undefined, 'common.Assistant', 'researcher');
const TOOL = childUrn(undefined, 'common.Tool', 'search');

const assistantActor: Actor = { kind: 'assistant', id: ASSISTANT, conversation: C, task: T };
const toolActor: Actor = { kind: 'tool', id: 'search', conversation: C, task: T, tool: 'search' };
const planActor: Actor = { kind: 'plan', id: 'plan', conversation: C, message: M };
const userActor: Actor = { kind: 'user', id: 'U123', conversation: C };
const systemActor: Actor = { kind: 'system', id: 'cli' };
const ACTORS: Actor[] = [assistantActor, toolActor, planActor, userActor, systemActor];

/** Evaluates one request; a deny must say which resource it denied. */
function decide(actor: Actor, action: Action, resource: string): boolean {
  const decision = policy.evaluate(request(actor, action, [resource]));
  expect(decision.reason).not.toBe('');
  if (decision.allow) expect(decision.reason).toMatch(/^allowed by [a-z-]+$/);
  else expect(decision.reason).toContain(resource);
  return decision.allow;
}

describe('globMatch (OPA glob.match with ["/"] delimiters)', () => {
  it.each([
    // `*`: any run of characters within one element
    ['cld:a/*', 'cld:a/b', true],
    ['cld:a/*', 'cld:a/b/c', false],
    ['cld:a/*', 'cld:a', false],
    ['plan.Task.*', 'plan.Task.0123456789abcdef', true],
    ['plan.Task.*', 'plan.Task.0123/common.Message.4567', false],
    ['cld:*/x', 'cld:a/b/x', false],
    // `**`: across delimiters, any depth
    ['cld:a/**', 'cld:a/b', true],
    ['cld:a/**', 'cld:a/b/c/d', true],
    ['cld:a/**', 'cld:a', false],
    ['cld:a/**', 'cld:ab/c', false],
    ['cld:a/**/z', 'cld:a/b/c/z', true],
    ['cld:a/**/z', 'cld:a/z', false],
    ['cld:**', 'cld:anything/at/all', true],
    // `?`: exactly one non-delimiter character
    ['a?c', 'abc', true],
    ['a?c', 'a/c', false],
    ['a?c', 'ac', false],
    ['a?c', 'abbc', false],
    // character classes
    ['x[abc]', 'xb', true],
    ['x[abc]', 'xd', false],
    ['x[!abc]', 'xd', true],
    ['x[!abc]', 'xa', false],
    ['x[a-c]', 'xb', true],
    ['x[a-c]', 'xz', false],
    // alternatives
    ['cld:common.{Assistant,Tool}.*', 'cld:common.Tool.0123456789abcdef', true],
    ['cld:common.{Assistant,Tool}.*', 'cld:common.Assistant.0123456789abcdef', true],
    ['cld:common.{Assistant,Tool}.*', 'cld:common.Message.0123456789abcdef', false],
    // dots and regular-expression characters are literal
    ['plan.Task.*', 'planXTaskY0123', false],
    ['a+b', 'aab', false],
    ['a+b', 'a+b', true],
    ['(a|b)', 'a', false],
    ['(a|b)', '(a|b)', true],
    ['a$', 'a$', true],
    // an escaped metacharacter is literal
    ['a\\*', 'a*', true],
    ['a\\*', 'ab', false],
    // the whole value must match
    ['abc', 'xabcx', false],
    ['abc', 'abc', true],
  ])('glob %s against %s is %s', (pattern, value, expected) => {
    expect(globMatch(pattern, value)).toBe(expected);
  });
});

describe('RulesPolicy with policies/rules.json', () => {
  it('rejects a malformed rules document with ValidationError', () => {
    expect(
      () => new RulesPolicy({ version: 1, rules: [{ id: 'x', actor: 'root', actions: ['get'] }] }),
    ).toThrow(ValidationError);
    expect(() => new RulesPolicy({ version: 2, rules: [] })).toThrow(ValidationError);
  });

  describe.each([
    ['assistant', assistantActor],
    ['tool', toolActor],
  ])('%s on task T of conversation C: reads', (_kind, actor) => {
    it.each([
      ['the conversation C', C, true],
      ['the user message', M, true],
      ['its own task T', T, true],
      ['a sibling task in C', T2, true],
      ['its subtask', SUB, true],
      ['a tool result under T', T_MESSAGE, true],
      ['the final answer in C', ANSWER, true],
      ['a document', DOCUMENT, true],
      ['a document chunk', CHUNK, true],
      ['an assistant in the catalog', ASSISTANT, true],
      ['a tool in the catalog', TOOL, true],
      ['another conversation', C2, false],
      ['a message of another conversation', M2, false],
      ['a task of another conversation', T_C2, false],
    ])('get %s: %s', (_label, resource, expected) => {
      expect(decide(actor, 'get', resource)).toBe(expected);
    });

    it.each([
      ['C', C, true],
      ['T', T, true],
      ['a document', DOCUMENT, true],
      ['another conversation', C2, false],
    ])('list %s: %s', (_label, resource, expected) => {
      expect(decide(actor, 'list', resource)).toBe(expected);
    });
  });

  describe('assistant on task T: writes only under T', () => {
    it.each([
      ['a Message under T', T_MESSAGE, true],
      ['a tool call under T', T_CALL, true],
      ['a subtask under T', SUB, true],
      ['an output under its subtask', SUB_MESSAGE, true],
      ['T itself', T, false],
      ['a sibling task of T', T2, false],
      ['a Message under a sibling task', T2_MESSAGE, false],
      ['the parent message', M, false],
      ['a Message under the parent message', childUrn(M, 'common.Message', 'x'), false],
      ['a Message directly under the conversation', ANSWER, false],
      ['the conversation', C, false],
      ['a Message under a task of another conversation', childUrn(T_C2, 'common.Message', 'x'), false],
      ['a document chunk', CHUNK, false],
      ['the catalog', ASSISTANT, false],
    ])('put %s: %s', (_label, resource, expected) => {
      expect(decide(assistantActor, 'put', resource)).toBe(expected);
    });
  });

  describe('tool on task T: writes only its result Message directly under T', () => {
    it.each([
      ['a Message directly under T', T_MESSAGE, true],
      ['a Message under a subtask of T', SUB_MESSAGE, false],
      ['a tool call under T', T_CALL, false],
      ['a subtask under T', SUB, false],
      ['T itself', T, false],
      ['a Message under a sibling task', T2_MESSAGE, false],
      ['a Message directly under the conversation', ANSWER, false],
      ['a Message under a task of another conversation', childUrn(T_C2, 'common.Message', 'x'), false],
    ])('put %s: %s', (_label, resource, expected) => {
      expect(decide(toolActor, 'put', resource)).toBe(expected);
    });
  });

  describe('plan for message M of conversation C', () => {
    it.each([
      ['a root task under M', T, true],
      ['a nested task under M', SUB, true],
      ['the Plan under M', PLAN, true],
      ['the final Message directly under C', ANSWER, true],
      ['a task directly under the conversation', childUrn(C, 'plan.Task', 'x'), false],
      ['a task under another message of C', childUrn(M_OTHER, 'plan.Task', 'x'), false],
      ['a Message under M', childUrn(M, 'common.Message', 'x'), false],
      ['a Message in another conversation', childUrn(C2, 'common.Message', 'x'), false],
      ['a task in another conversation', T_C2, false],
      ['the conversation', C, false],
      ['a document chunk', CHUNK, false],
      ['the catalog', TOOL, false],
    ])('put %s: %s', (_label, resource, expected) => {
      expect(decide(planActor, 'put', resource)).toBe(expected);
    });

    it.each([
      ['the conversation', C, true],
      ['its message', M, true],
      ['a task', T, true],
      ['the catalog', ASSISTANT, true],
      ['another conversation', C2, false],
      ['a document chunk', CHUNK, false],
    ])('get %s: %s', (_label, resource, expected) => {
      expect(decide(planActor, 'get', resource)).toBe(expected);
    });
  });

  describe('user of conversation C', () => {
    it.each([
      ['get', 'its conversation', C, true],
      ['get', 'a task in its conversation', T, true],
      ['get', 'a tool result in its conversation', T_MESSAGE, true],
      ['list', 'its conversation', C, true],
      ['put', 'its conversation', C, true],
      ['put', 'a Message directly under its conversation', childUrn(C, 'common.Message', 'follow-up'), true],
      ['put', 'a task in its conversation', childUrn(M, 'plan.Task', 'x'), false],
      ['put', 'a Message under a task', T_MESSAGE, false],
      ['get', 'another conversation', C2, false],
      ['get', 'a message of another conversation', M2, false],
      ['list', 'another conversation', C2, false],
      ['put', 'a Message in another conversation', childUrn(C2, 'common.Message', 'x'), false],
      // Rule user-read-corpora: a caller opens what its answers cite (get only, never list or put).
      ['get', 'a document chunk', CHUNK, true],
      ['get', 'a document', DOCUMENT, true],
      ['list', 'a document', DOCUMENT, false],
      ['put', 'a document chunk', CHUNK, false],
      ['get', 'the catalog', ASSISTANT, false],
    ] as const)('%s %s: %s', (action, _label, resource, expected) => {
      expect(decide(userActor, action, resource)).toBe(expected);
    });
  });

  describe('system (operator)', () => {
    it.each([
      ['get', 'a conversation', C, true],
      ['get', 'a task', T, true],
      ['put', 'a document chunk', CHUNK, true],
      ['put', 'a tool in the catalog', TOOL, true],
      ['put', 'a conversation', C, false],
      ['put', 'a task', T, false],
    ] as const)('%s %s: %s', (action, _label, resource, expected) => {
      expect(decide(systemActor, action, resource)).toBe(expected);
    });
  });

  describe('deny by default', () => {
    it.each(ACTORS.map((actor) => [actor.kind, actor] as const))('never lets %s delete', (_kind, actor) => {
      const decision = policy.evaluate(request(actor, 'delete', [T_MESSAGE]));

      expect(decision).toEqual({ allow: false, reason: 'no actor may delete resources' });
    });

    it.each(
      ACTORS.flatMap((actor) =>
        (['get', 'put', 'list'] as const).map((action) => [actor.kind, action, actor] as const),
      ),
    )('denies %s a %s that names no resources', (_kind, action, actor) => {
      const decision = policy.evaluate(request(actor, action, []));

      expect(decision).toEqual({ allow: false, reason: 'request names no resources' });
    });

    it.each([
      ['an empty actor id', ''],
      ['a blank actor id', '   '],
    ])('denies %s', (_label, id) => {
      const decision = policy.evaluate(request({ ...assistantActor, id }, 'get', [C]));

      expect(decision).toEqual({ allow: false, reason: 'actor is empty' });
    });

    it.each([
      ['a non-URN', 'conversations/c'],
      ['a ".." element escaping C', `${C}/../${C2.slice('cld:'.length)}`],
      ['an empty element', `${C}//common.Message.0123456789abcdef`],
      ['a trailing slash', `${T}/`],
      ['a glob in place of an element', `${C}/**`],
      ['a sibling whose URN merely starts with C (c1 vs c10)', `${C}0/common.Message.0123456789abcdef`],
    ])('denies a malformed URN (%s) for get, put and list', (_label, resource) => {
      for (const action of ['get', 'put', 'list'] as const) {
        const decision = policy.evaluate(request(assistantActor, action, [resource]));

        expect(decision.allow, action).toBe(false);
        expect(decision.reason, action).toBe(`malformed URN: ${resource}`);
      }
    });

    it('denies a non-string resource instead of throwing', () => {
      const decision = policy.evaluate(request(assistantActor, 'get', [42 as unknown as string]));

      expect(decision).toEqual({ allow: false, reason: 'malformed URN: not a string (number)' });
    });
  });

  describe('placeholders', () => {
    it.each([
      [
        'assistant without a task cannot put under T',
        { ...assistantActor, task: undefined },
        'put',
        T_MESSAGE,
      ],
      [
        'assistant without a conversation cannot read C',
        { ...assistantActor, conversation: undefined },
        'get',
        M,
      ],
      ['plan without a message cannot put tasks', { ...planActor, message: undefined }, 'put', T],
      ['user without a conversation cannot read one', { ...userActor, conversation: undefined }, 'get', C],
      ['tool with a malformed task URN cannot put', { ...toolActor, task: 'task-1' }, 'put', T_MESSAGE],
      [
        'a glob injected as the conversation matches nothing',
        { ...assistantActor, conversation: 'cld:**' },
        'get',
        C2,
      ],
      [
        'a glob injected as the task matches nothing',
        { ...assistantActor, task: `${M}/*` },
        'put',
        T_MESSAGE,
      ],
    ] as const)('%s', (_label, actor, action, resource) => {
      expect(decide(actor, action, resource)).toBe(false);
    });

    it('keeps rules without placeholders applicable when a placeholder is missing', () => {
      const actor: Actor = { ...assistantActor, conversation: undefined, task: undefined };

      expect(decide(actor, 'get', CHUNK)).toBe(true);
      expect(decide(actor, 'get', ASSISTANT)).toBe(true);
    });

    it('lets plan write the answer while its message placeholder is missing', () => {
      expect(decide({ ...planActor, message: undefined }, 'put', ANSWER)).toBe(true);
    });
  });

  describe('multi-resource requests are all-or-nothing', () => {
    it('allows when every resource is allowed, naming the rule', () => {
      const decision = policy.evaluate(request(assistantActor, 'get', [C, T, CHUNK]));

      expect(decision).toEqual({ allow: true, reason: 'allowed by assistant-read-conversation' });
    });

    it.each([
      ['first', [C2, C, T]],
      ['in the middle', [C, C2, T]],
      ['last', [C, T, C2]],
    ])('denies when the one denied resource comes %s, naming it', (_position, resources) => {
      const decision = policy.evaluate(request(assistantActor, 'get', resources));

      expect(decision.allow).toBe(false);
      expect(decision.reason).toBe(`no rule allows assistant ${ASSISTANT} to get ${C2}`);
    });

    it('denies a put of an own and a sibling resource together', () => {
      const decision = policy.evaluate(request(assistantActor, 'put', [T_MESSAGE, T2_MESSAGE]));

      expect(decision.allow).toBe(false);
      expect(decision.reason).toContain(T2_MESSAGE);
    });
  });
});
