import { randomBytes, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { Conversation, Message } from '../../shared/resources/schemas.js';
import { childUrn, keyOf } from '../../shared/urn.js';
import { contractFetch } from '../helpers/openapi-contract.js';
import { PARTIAL_QUESTION, partialAnswerProblems, UNANSWERED_PART } from '../helpers/partial.js';
import {
  type Captured,
  type Receiver,
  startReceiver,
  startTestServe,
  type TestServe,
  teamsAuthorization,
} from './helpers.js';

/** The security token Teams shows when the outgoing webhook is created (base64). */
const TOKEN = randomBytes(32).toString('base64');
/** The Workflows URL's own signature (`sig=`): whoever holds the URL can post to the channel. */
const SIG = randomBytes(24).toString('base64url');

let server: TestServe;
let teams: Receiver;

beforeAll(async () => {
  teams = await startReceiver();
  server = await startTestServe({
    CLD_TEAMS_SECRET: TOKEN,
    CLD_TEAMS_WEBHOOK_URL: `${teams.url}/workflows/incoming/abc?api-version=1&sig=${SIG}`,
  });
});

afterAll(async () => {
  await server?.stop();
  await teams?.stop();
});

/** An outgoing-webhook Activity, shaped as Teams sends it. */
function activity(text: string, conversationId = `19:${randomUUID()}@thread.tacv2;messageid=1700000000000`) {
  return JSON.stringify({
    type: 'message',
    id: String(Date.now() + Math.floor(Math.random() * 1000)),
    timestamp: new Date().toISOString(),
    localTimestamp: new Date().toISOString(),
    serviceUrl: 'https://smba.trafficmanager.net/emea/',
    channelId: 'msteams',
    from: { id: '29:1abcDEF', name: 'Alice', aadObjectId: '6f1c1a44-1f34-4d7a-9f0e-3f6f3c1a2b3c' },
    conversation: {
      isGroup: true,
      id: conversationId,
      name: null,
      conversationType: 'channel',
      tenantId: 't-1',
    },
    recipient: null,
    textFormat: 'plain',
    attachmentLayout: null,
    membersAdded: [],
    membersRemoved: [],
    topicName: null,
    historyDisclosed: null,
    locale: 'en-US',
    text: `<at>cld</at> ${text}\n`,
    entities: [{ type: 'mention', mentioned: { id: '28:bot', name: 'cld' }, text: '<at>cld</at>' }],
    channelData: {
      teamsChannelId: '19:channel@thread.tacv2',
      teamsTeamId: '19:team@thread.tacv2',
      tenant: { id: 't-1' },
    },
  });
}

async function post(body: string, authorization?: string) {
  const response = await contractFetch(`${server.url}/teams/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
    body,
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

describe('Teams outgoing webhook over real HTTP against serve', () => {
  it('acknowledges a signed message at once, then posts the answer as an Adaptive Card to the webhook', async () => {
    const conversationId = `19:${randomUUID()}@thread.tacv2;messageid=1700000000001`;
    const body = activity('How do I enable versioning on a bucket?', conversationId);

    const ack = await post(body, teamsAuthorization(TOKEN, body));

    expect(ack.status).toBe(200);
    expect(ack.json).toEqual({
      type: 'message',
      text: 'Working on it: the answer will be posted to this channel.',
    });
    const [delivered] = await teams.waitFor((r) => r.path === '/workflows/incoming/abc');
    const conversation = childUrn(undefined, 'common.Conversation', `teams:${conversationId}`);
    const stored = await server.served.runtime.deps.resources.list(SYSTEM_ACTOR, conversation, {
      childrenOnly: true,
    });
    const user = stored.find((r) => (r as Message).role === 'user') as Message;
    const answer = stored.find((r) => (r as Message).role === 'assistant') as Message;
    expect(user.content).toBe('How do I enable versioning on a bucket?');
    expect(delivered?.headers['content-type']).toBe('application/json');
    const card = (
      delivered?.fields.attachments as {
        contentType: string;
        content: { type: string; body: { text: string }[] };
      }[]
    )[0];
    expect(delivered?.fields.type).toBe('message');
    expect(card?.contentType).toBe('application/vnd.microsoft.card.adaptive');
    expect(card?.content.type).toBe('AdaptiveCard');
    expect(card?.content.body[0]?.text).toBe(answer.content);
    expect(answer.content.toLowerCase()).toContain('version');
    // Its sources read as document › heading (issue 21 item 4); the URNs stay on the Message.
    expect(card?.content.body[0]?.text).toMatch(/\n\nSources:\n(?:- aws-s3 README › [^\n]+\n?)+$/);
    expect(card?.content.body[0]?.text).not.toMatch(/cld:/);
    expect(answer.sources?.map((s) => s.urn)).toEqual(answer.citations);
  });

  it('keeps the webhook URL in its secret: no stored object holds it, the conversation holds a reference', async () => {
    const conversationId = `19:${randomUUID()}@thread.tacv2;messageid=1700000000009`;
    const body = activity('How do I turn on default encryption for a bucket?', conversationId);
    await post(body, teamsAuthorization(TOKEN, body));
    const [delivered] = await teams.waitFor((r) => String(JSON.stringify(r.fields)).includes('encryption'));
    await server.served.runtime.bus.idle();
    expect(delivered?.path).toBe('/workflows/incoming/abc');

    // Every file the runtime stored: resources, projections, idempotency records, indexes.
    const files = (await readdir(server.dataDir, { recursive: true, withFileTypes: true }))
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath, entry.name));
    const conversation = childUrn(undefined, 'common.Conversation', `teams:${conversationId}`);
    expect(files).toContain(join(server.dataDir, 'resources', keyOf(conversation)));
    for (const file of files) {
      const text = (await readFile(file)).toString('utf8');
      expect(text.includes(SIG), file).toBe(false);
      expect(text.includes('/workflows/incoming/abc'), file).toBe(false);
    }
    const stored = (await server.served.runtime.deps.resources.get(
      SYSTEM_ACTOR,
      conversation,
    )) as Conversation;
    expect(stored.channel.address).toEqual({
      webhookSecret: 'teamsWebhookUrl',
      conversation: conversationId,
    });
  });

  it('stores nothing new and delivers once when Teams redelivers the same activity', async () => {
    const body = activity('How do I block public access to a bucket?');
    await post(body, teamsAuthorization(TOKEN, body));
    await teams.waitFor((r) => String(JSON.stringify(r.fields)).includes('public'));
    await server.served.runtime.bus.idle();
    const before = await server.conversationKeys();
    const delivered = teams.requests.length;

    const again = await post(body, teamsAuthorization(TOKEN, body));
    await server.served.runtime.bus.idle();

    expect(again.status).toBe(200);
    expect(await server.conversationKeys()).toEqual(before);
    expect(teams.requests.length).toBe(delivered);
  });

  it('answers a mention without a question and stores nothing', async () => {
    const before = await server.conversationKeys();
    const body = activity('   ');

    const ack = await post(body, teamsAuthorization(TOKEN, body));

    expect(ack.json).toEqual({ type: 'message', text: 'Ask me a question after the mention.' });
    expect(await server.conversationKeys()).toEqual(before);
  });

  it.each<[string, (body: string) => { body: string; authorization?: string }, number, string]>([
    ['a missing Authorization header', (body) => ({ body }), 401, 'UNAUTHORIZED'],
    [
      'an HMAC made with another token',
      (body) => ({ body, authorization: teamsAuthorization(randomBytes(32).toString('base64'), body) }),
      401,
      'UNAUTHORIZED',
    ],
    [
      'a body altered after signing',
      (body) => ({
        body: body.replace('versioning', 'versionin9'),
        authorization: teamsAuthorization(TOKEN, body),
      }),
      401,
      'UNAUTHORIZED',
    ],
    [
      'a bearer token instead of an HMAC',
      (body) => ({ body, authorization: 'Bearer eyJhbGciOi' }),
      401,
      'UNAUTHORIZED',
    ],
    [
      'a signed body that is not an Activity',
      () => ({ body: '{"hello":1}', authorization: teamsAuthorization(TOKEN, '{"hello":1}') }),
      400,
      'VALIDATION',
    ],
    [
      'a signed body that is not JSON',
      () => ({ body: 'hello', authorization: teamsAuthorization(TOKEN, 'hello') }),
      400,
      'VALIDATION',
    ],
  ])('rejects %s and stores nothing', async (_label, make, status, code) => {
    await server.served.runtime.bus.idle();
    const before = await server.conversationKeys();
    const delivered = teams.requests.length;
    const request = make(activity('How do I enable versioning on a bucket?'));

    const response = await post(request.body, request.authorization);
    await server.served.runtime.bus.idle();

    expect(response.status).toBe(status);
    expect(response.json.code).toBe(code);
    expect(await server.conversationKeys()).toEqual(before);
    expect(teams.requests.length).toBe(delivered);
  });
});

// Last, so that no earlier test's wait for a webhook delivery takes this one's.
describe('a partial answer on Teams (issue 21)', () => {
  it('posts a 3-part question whose third part the corpus cannot answer as a partial answer: parts 1–2, then the part not answered', async () => {
    const conversationId = `19:${randomUUID()}@thread.tacv2;messageid=1700000000021`;
    const body = activity(PARTIAL_QUESTION, conversationId);

    const ack = await post(body, teamsAuthorization(TOKEN, body));
    expect(ack.status).toBe(200);
    const cardText = (r: Captured) =>
      (r.fields.attachments as { content: { body: { text: string }[] } }[] | undefined)?.[0]?.content.body[0]
        ?.text ?? '';
    const [delivered] = await teams.waitFor(
      (r) => r.path === '/workflows/incoming/abc' && UNANSWERED_PART.test(cardText(r)),
      1,
      60_000,
    );

    const conversation = childUrn(undefined, 'common.Conversation', `teams:${conversationId}`);
    const stored = await server.served.runtime.deps.resources.list(SYSTEM_ACTOR, conversation, {
      childrenOnly: true,
    });
    const answer = stored.find((r) => (r as Message).role === 'assistant') as Message;
    expect(answer.error).toBeUndefined();
    expect(answer.unanswered).toHaveLength(1);
    const text = cardText(delivered as Captured);
    expect(text.split('\n')[0]).toMatch(
      /^⚠️ \*\*Partial answer\*\*: not answered: How do I knead sourdough bread dough\?\.$/,
    );
    // Adaptive Cards have no headings: each part's `### title` is a bold line.
    const sections = text.replace(/^\*\*(.+)\*\*$/gm, '### $1');
    expect(sections.endsWith(answer.content)).toBe(true);
    expect(text).toMatch(/^\*\*How do I send S3 object events to EventBridge\?\*\*$/m);
    expect(partialAnswerProblems(sections)).toEqual([]);
  }, 90_000);
});
