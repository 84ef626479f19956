import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import rules from '../../policies/rules.json' with { type: 'json' };
import type { Channels } from '../../shared/channels/context.js';
import { PROGRESS_DEPTH, replyStep } from '../../shared/channels/reply.js';
import { API_ROUTES, matchRoute } from '../../shared/channels/routes.js';
import { NAMES, outputUrn } from '../../shared/domain/common.js';
import type { Deps } from '../../shared/domain/ports.js';
import { ValidationError } from '../../shared/errors.js';
import { type ResourcePutEvent, s3ObjectCreatedEvent, toResourcePut } from '../../shared/events/envelope.js';
import { matchesPattern } from '../../shared/events/pattern.js';
import { routeAccepts, routingTable } from '../../shared/events/routing.js';
import { RulesPolicy } from '../../shared/policy/rules.js';
import { LocalPersistenceLayer } from '../../shared/projections/idempotency.js';
import { withMeta } from '../../shared/resources/meta.js';
import { ResourceIndex } from '../../shared/resources/resource-index.js';
import type { Conversation, Message } from '../../shared/resources/schemas.js';
import { toApiGatewayEvent } from '../../shared/runtime/local-gateway.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import { childUrn, keyOf } from '../../shared/urn.js';

const C = childUrn(undefined, 'common.Conversation', 'routing');
const M = childUrn(C, 'common.Message', 'user message');
const T = childUrn(M, 'plan.Task', 'task-1');
const SUB = childUrn(T, 'plan.Task', 'task-1');

describe('the reply routes of the routing table', () => {
  const routes = routingTable('cld-test');
  const replyRoutes = routes.filter((route) => route.target === 'reply');
  // As EventBridge decides: the pattern alone (the step's route filter accepts the same).
  const toReply = (urn: string) => {
    const delivered = replyRoutes.some((route) =>
      matchesPattern(route.pattern, s3ObjectCreatedEvent('cld-test', keyOf(urn), 1)),
    );
    expect(replyRoutes.some((route) => routeAccepts(route, urn))).toBe(delivered);
    return delivered;
  };

  it.each<[string, string, boolean]>([
    ['the final answer under a conversation', childUrn(C, 'common.Message', NAMES.answer(M)), true],
    ['a user message (the step reads it and ignores it)', M, true],
    ['the output of a root task', outputUrn(T), true],
    ['the output of a nested task', outputUrn(SUB), true],
    [
      'the output of a task of depth 3 (below what the progress message lists)',
      outputUrn(childUrn(SUB, 'plan.Task', 'task-1')),
      false,
    ],
    ['a task', T, false],
    ['a turn of a task', childUrn(SUB, 'common.Message', NAMES.turn(1)), false],
    ['a tool result of a task', childUrn(T, 'common.Message', NAMES.result('call-1-x')), false],
    ['a tool call', childUrn(T, 'tool.Call', 'call-1'), false],
    // The user is asked on the conversation's channel (approvals.ts), at any task depth.
    [
      'an approval request under a call of a root task',
      childUrn(childUrn(T, 'tool.Call', 'call-1'), 'tool.Approval', 'approval'),
      true,
    ],
    [
      'an approval request under a call of a subtask',
      childUrn(childUrn(SUB, 'tool.Call', 'call-1'), 'tool.Approval', 'approval'),
      true,
    ],
    [
      "the user's decision on a request",
      childUrn(
        childUrn(childUrn(T, 'tool.Call', 'call-1'), 'tool.Approval', 'approval'),
        'tool.Decision',
        'decision',
      ),
      false,
    ],
    ['a verdict', childUrn(T, 'plan.Verdict', 'verdict-1'), false],
    ['the conversation', C, false],
    ['a document chunk', childUrn(childUrn(undefined, 'doc.Document', 'd'), 'doc.Chunk', '0'), false],
  ])('%s → reply: %s', (_label, urn, expected) => {
    expect(toReply(urn)).toBe(expected);
  });

  it.each([
    1, 2, 3, 4,
  ])('delivers the output of a task of depth %i iff the progress message lists it', (depth) => {
    let task = childUrn(M, 'plan.Task', 'task-1');
    for (let d = 2; d <= depth; d++) task = childUrn(task, 'plan.Task', `task-${d}`);
    expect(toReply(outputUrn(task))).toBe(depth <= PROGRESS_DEPTH);
  });

  it("gives each reply route an S3 Object Created pattern on the bucket, matching the sweeper's RESOURCE_PUT too", () => {
    expect(replyRoutes.map((r) => r.id)).toEqual([
      'ReplyOnConversationMessage',
      'ReplyOnTaskOutput',
      'ReplyOnApprovalRequest',
    ]);
    for (const route of replyRoutes) {
      expect(route.pattern).toMatchObject({
        source: ['aws.s3', 'cld'],
        'detail-type': ['Object Created', 'RESOURCE_PUT'],
        detail: { bucket: { name: ['cld-test'] } },
      });
      const key = (route.pattern.detail as { object: { key: [{ wildcard: string }] } }).object.key[0]
        .wildcard;
      expect(key).toMatch(/^cld\/\*_Conversation-Message(-[A-Za-z*]+)*\.json$/);
      expect(key.split('*').length - 1).toBeLessThanOrEqual(5);
    }
  });
});

describe('the API route table', () => {
  it.each<[string, string, string | undefined, Record<string, string>]>([
    ['POST', '/conversations', 'POST /conversations', {}],
    ['GET', '/conversations/abc', 'GET /conversations/{id}', { id: 'abc' }],
    ['POST', '/conversations/abc/messages', 'POST /conversations/{id}/messages', { id: 'abc' }],
    [
      'GET',
      '/resources/cld:common.Conversation.0123456789abcdef%2Fcommon.Message.0123456789abcdef',
      'GET /resources/{urn+}',
      { urn: 'cld:common.Conversation.0123456789abcdef/common.Message.0123456789abcdef' },
    ],
    ['GET', '/resources/a/b/c', 'GET /resources/{urn+}', { urn: 'a/b/c' }],
    ['POST', '/slack/events', 'POST /slack/events', {}],
    ['POST', '/slack/interactions', 'POST /slack/interactions', {}],
    ['POST', '/teams/messages', 'POST /teams/messages', {}],
    ['GET', '/slack/events', undefined, {}],
    ['GET', '/conversations/', undefined, {}],
    ['DELETE', '/conversations/abc', undefined, {}],
  ])('%s %s → %s', (method, path, routeKey, params) => {
    const matched = matchRoute(method, path);
    expect(matched?.routeKey).toBe(routeKey);
    if (routeKey) expect(matched?.pathParameters).toEqual(params);
  });

  it('puts the JWT authorizer on the API paths and none on the signed webhooks', () => {
    expect(API_ROUTES.filter((r) => r.auth === 'none').map((r) => r.path)).toEqual([
      // The web console's static page and assets: they hold no data and sign in before any call.
      '/',
      '/console/{file}',
      // The API's OpenAPI document: generated from the code, no caller's data.
      '/openapi.json',
      '/slack/events',
      '/slack/commands',
      '/slack/interactions',
      '/teams/messages',
    ]);
    expect(
      API_ROUTES.filter((r) => r.auth === 'jwt').every((r) =>
        /^\/(conversations|resources|tools)/.test(r.path),
      ),
    ).toBe(true);
  });
});

describe('the local gateway’s API Gateway v2 events', () => {
  const req = (headers: Record<string, string | string[]>) =>
    ({ headers, method: 'post', socket: { remoteAddress: '127.0.0.1' } }) as never;

  it('passes JSON and form bodies as text and anything else as base64, with lower-cased headers', () => {
    const json = toApiGatewayEvent(req({ 'content-type': 'application/json', 'x-slack-signature': 'v0=1' }), {
      rawPath: '/slack/events',
      rawQueryString: 'a=1&a=2&b=3',
      body: Buffer.from('{"é":1}'),
      routeKey: 'POST /slack/events',
      pathParameters: {},
    });
    const binary = toApiGatewayEvent(req({ 'content-type': 'application/octet-stream' }), {
      rawPath: '/teams/messages',
      rawQueryString: '',
      body: Buffer.from([0, 255, 1]),
      routeKey: 'POST /teams/messages',
      pathParameters: {},
    });

    expect(json).toMatchObject({
      version: '2.0',
      body: '{"é":1}',
      isBase64Encoded: false,
      queryStringParameters: { a: '1,2', b: '3' },
      requestContext: { http: { method: 'POST', path: '/slack/events' }, stage: '$default' },
    });
    expect(json.headers['x-slack-signature']).toBe('v0=1');
    expect(binary.isBase64Encoded).toBe(true);
    expect(Buffer.from(binary.body as string, 'base64')).toEqual(Buffer.from([0, 255, 1]));
  });

  it('carries the authorizer’s claims only when the gateway authenticated the caller', () => {
    const base = {
      rawPath: '/conversations',
      rawQueryString: '',
      body: Buffer.alloc(0),
      routeKey: 'POST /conversations',
      pathParameters: {},
    };

    const anonymous = toApiGatewayEvent(req({}), base) as { requestContext: { authorizer?: unknown } };
    const signedIn = toApiGatewayEvent(req({}), { ...base, claims: { sub: 'alice' } }) as {
      requestContext: { authorizer?: { jwt: { claims: { sub: string } } } };
    };

    expect(anonymous.requestContext.authorizer).toBeUndefined();
    expect(signedIn.requestContext.authorizer?.jwt.claims.sub).toBe('alice');
  });
});

describe('replyStep decisions', () => {
  let dataDir: string;
  let resources: ResourceIndex;
  const delivered: string[] = [];
  const channels = {
    secrets: {
      slackBotToken: async () => 'xoxb-t',
      slackSigningSecret: async () => 's',
      teamsSecret: async () => Buffer.alloc(1),
      // The URL the webhook secret holds now (after a rotation, say).
      teamsWebhookUrl: async () => 'https://example.org/rotated',
    },
    slack: {
      postMessage: async (_t: string, m: { channel: string }) => {
        delivered.push(`slack:${m.channel}`);
        return { ts: '1.1' };
      },
      update: async () => undefined,
      respond: async (url: string) => {
        delivered.push(`respond:${url}`);
      },
    },
    teams: {
      post: async (url: string) => {
        delivered.push(`teams:${url}`);
      },
    },
  } as unknown as Channels;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'cld-reply-unit-'));
    resources = new ResourceIndex(new FilesystemStorage(dataDir), new RulesPolicy(rules));
  });
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  async function store(name: string, channel: Conversation['channel']) {
    const conversation: Conversation = {
      meta: withMeta({ type: 'common.Conversation', name }),
      actor: 'u',
      channel,
    };
    const user: Message = {
      meta: withMeta({ type: 'common.Message', name: 'm', parent: conversation.meta.id }),
      role: 'user',
      content: 'q?',
    };
    const answer: Message = {
      meta: withMeta({
        type: 'common.Message',
        name: NAMES.answer(user.meta.id),
        parent: conversation.meta.id,
      }),
      role: 'assistant',
      content: 'the answer',
      inReplyTo: user.meta.id,
    };
    // Written as the user and plan would; the policy decides as in the system.
    const actor = { kind: 'user', id: 'u', conversation: conversation.meta.id } as const;
    await resources.put(actor, conversation);
    await resources.put(actor, user);
    await resources.put(
      { kind: 'plan', id: 'function:plan', conversation: conversation.meta.id, message: user.meta.id },
      answer,
    );
    return { conversation, user, answer };
  }
  const eventFor = (urn: string): ResourcePutEvent => toResourcePut(s3ObjectCreatedEvent('b', keyOf(urn), 1));
  // A fresh idempotency layer per call: these cases are about where a reply goes, not how often.
  const run = (urn: string) =>
    replyStep(
      eventFor(urn),
      { resources, idempotency: new LocalPersistenceLayer() } as unknown as Deps,
      channels,
    );

  it.each<[string, Conversation['channel'], string[]]>([
    ['an HTTP conversation: nothing to push, clients poll', { kind: 'http' }, []],
    ['a CLI conversation', { kind: 'cli' }, []],
    [
      'a Teams conversation: the URL its webhook secret holds at send time',
      { kind: 'teams', address: { webhookSecret: 'teamsWebhookUrl', conversation: '19:a' } },
      ['teams:https://example.org/rotated'],
    ],
    [
      'a Teams conversation stored with a URL (before the reference): the secret, not the stored URL',
      { kind: 'teams', address: { webhook: 'https://example.org/hook' } },
      ['teams:https://example.org/rotated'],
    ],
    [
      'a slash command: its response_url',
      { kind: 'slack', address: { team: 'T', channel: 'C', response_url: 'https://hooks.slack.com/x' } },
      ['respond:https://hooks.slack.com/x'],
    ],
    [
      'a Slack thread',
      { kind: 'slack', address: { team: 'T', channel: 'C9', thread_ts: '1.0' } },
      ['slack:C9'],
    ],
  ])('delivers the final answer of %s', async (label, channel, expected) => {
    const { user, answer } = await store(label, channel);
    delivered.length = 0;

    const ignoredUser = await run(user.meta.id);
    const outcome = await run(answer.meta.id);

    expect(ignoredUser.action).toBe('ignored');
    expect(outcome.action).toBe(expected.length ? 'delivered' : 'ignored');
    expect(delivered).toEqual(expected);
  });

  it('ignores task Messages that are not outputs without reading anything', async () => {
    const outcome = await run(childUrn(T, 'common.Message', 'turn-1'));
    expect(outcome).toMatchObject({ action: 'ignored', detail: 'not a task output' });
  });

  it('fails with a ValidationError when a Teams address references another secret', async () => {
    const { answer } = await store('broken teams', {
      kind: 'teams',
      address: { webhookSecret: 'slackBotToken' },
    });
    await expect(run(answer.meta.id)).rejects.toBeInstanceOf(ValidationError);
  });

  it('fails with a ValidationError when a Slack conversation has no usable address', async () => {
    const { answer } = await store('broken slack', { kind: 'slack', address: { team: 'T' } });
    await expect(run(answer.meta.id)).rejects.toBeInstanceOf(ValidationError);
  });
});
