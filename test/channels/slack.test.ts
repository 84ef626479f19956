import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { escapeSlackText, slackThreadName } from '../../shared/channels/slack.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { Message } from '../../shared/resources/schemas.js';
import { childUrn, keyOf } from '../../shared/urn.js';
import { contractFetch } from '../helpers/openapi-contract.js';
import { PARTIAL_QUESTION, partialAnswerProblems } from '../helpers/partial.js';
import {
  type Captured,
  type Receiver,
  slackHeaders,
  startReceiver,
  startTestServe,
  type TestServe,
} from './helpers.js';

const SECRET = 'slack-signing-secret-for-tests';
const BOT_TOKEN = 'xoxb-1234-5678-test';
const TEAM = 'T0TEAM';
const CHANNEL = 'C0CHANNEL';

let server: TestServe;
let slack: Receiver;
let tsCounter = 0;

beforeAll(async () => {
  slack = await startReceiver();
  server = await startTestServe({
    CLD_SLACK_SIGNING_SECRET: SECRET,
    CLD_SLACK_BOT_TOKEN: BOT_TOKEN,
    CLD_SLACK_API_URL: `${slack.url}/api/`,
    CLD_SLACK_RESPONSE_URL_ORIGIN: slack.url,
  });
});

afterAll(async () => {
  await server?.stop();
  await slack?.stop();
});

beforeEach(() => {
  slack.failNext(0, 500);
});

/** A fresh Slack message ts. */
function nextTs(): string {
  tsCounter++;
  return `17${String(Date.now()).slice(-8)}.${String(tsCounter).padStart(6, '0')}`;
}

/** An Events API `event_callback` body, as Slack sends it. */
function eventBody(event: Record<string, unknown>, eventId = `Ev${Math.random().toString(36).slice(2, 12)}`) {
  return JSON.stringify({
    token: 'legacy-verification-token',
    team_id: TEAM,
    api_app_id: 'A0APP',
    event: { channel: CHANNEL, event_ts: event.ts, ...event },
    type: 'event_callback',
    event_id: eventId,
    event_time: Math.floor(Date.now() / 1000),
    authorizations: [{ team_id: TEAM, user_id: 'U0BOT', is_bot: true }],
  });
}

function mention(text: string, ts: string, extra: Record<string, unknown> = {}) {
  return { type: 'app_mention', user: 'U0ALICE', text: `<@U0BOT> ${text}`, ts, ...extra };
}

async function post(path: string, body: string, headers: Record<string, string>) {
  const response = await contractFetch(`${server.url}${path}`, { method: 'POST', headers, body });
  const text = await response.text();
  return { status: response.status, text, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

function conversationOf(threadTs: string): string {
  return childUrn(undefined, 'common.Conversation', slackThreadName(TEAM, CHANNEL, threadTs));
}

/** Every chat.postMessage the receiver got in a thread. */
function postsIn(threadTs: string): Captured[] {
  return slack.requests.filter((r) => r.path === '/api/chat.postMessage' && r.fields.thread_ts === threadTs);
}

async function storedAnswers(conversation: string): Promise<Message[]> {
  const all = await server.served.runtime.deps.resources.list(SYSTEM_ACTOR, conversation, {
    childrenOnly: true,
  });
  return all.filter(
    (r): r is Message => r.meta.type === 'common.Message' && (r as Message).role === 'assistant',
  );
}

describe('Slack Events API over real HTTP against serve', () => {
  it('answers url_verification with the challenge', async () => {
    const body = JSON.stringify({
      token: 'x',
      challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
      type: 'url_verification',
    });

    const response = await post('/slack/events', body, slackHeaders(SECRET, body));

    expect(response.status).toBe(200);
    expect(response.json).toEqual({ challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' });
  });

  it('acknowledges a signed app_mention, then posts the answer in its thread with the bot token', async () => {
    const ts = nextTs();
    const body = eventBody(mention('How do I send S3 object events to EventBridge?', ts));

    const ack = await post('/slack/events', body, slackHeaders(SECRET, body));
    expect(ack.status).toBe(200);
    expect(ack.text).toBe('');

    const [reply] = await slack.waitFor(
      (r) => r.fields.thread_ts === ts && r.fields.markdown_text !== undefined,
    );
    const [answer] = await storedAnswers(conversationOf(ts));
    expect(reply?.path).toBe('/api/chat.postMessage');
    expect(reply?.headers.authorization).toBe(`Bearer ${BOT_TOKEN}`);
    expect(reply?.fields.channel).toBe(CHANNEL);
    expect(reply?.fields.markdown_text).toBe(escapeSlackText(answer?.content ?? ''));
    expect(String(reply?.fields.markdown_text)).toMatch(/EventBridge/);
    expect(answer?.citations?.length).toBeGreaterThanOrEqual(1);
    // Its sources read as document › heading (issue 21 item 4); the URNs stay on the Message.
    expect(String(reply?.fields.markdown_text)).toMatch(/\n\nSources:\n(?:- aws-s3 README › [^\n]+\n?)+$/);
    expect(String(reply?.fields.markdown_text)).not.toMatch(/cld:/);
    expect(answer?.sources?.map((s) => s.urn)).toEqual(answer?.citations);
  });

  it('stores one conversation and posts one reply for an event delivered three times (Slack retries)', async () => {
    const ts = nextTs();
    const body = eventBody(mention('How do I enable versioning on a bucket?', ts), 'Ev0RETRIED1');

    const first = await post('/slack/events', body, slackHeaders(SECRET, body));
    const retry = await post('/slack/events', body, slackHeaders(SECRET, body, { retry: 1 }));
    await slack.waitFor((r) => r.fields.thread_ts === ts);
    await server.served.runtime.bus.idle();
    const late = await post('/slack/events', body, slackHeaders(SECRET, body, { retry: 2 }));
    await server.served.runtime.bus.idle();

    expect([first.status, retry.status, late.status]).toEqual([200, 200, 200]);
    const conversation = conversationOf(ts);
    const children = await server.served.runtime.deps.resources.list(SYSTEM_ACTOR, conversation, {
      childrenOnly: true,
    });
    const roots = (await server.conversationKeys()).filter((key) => key === keyOf(conversation));
    expect(roots).toHaveLength(1);
    expect(children.filter((r) => (r as Message).role === 'user')).toHaveLength(1);
    expect(children.filter((r) => (r as Message).role === 'assistant')).toHaveLength(1);
    expect(postsIn(ts)).toHaveLength(1);
  });

  it('shows progress for a multi-task question: one message updated to the final counts before the answer', async () => {
    const ts = nextTs();
    const question =
      '1. How do I send S3 object events to EventBridge? 2. How do I grant read access to a bucket?';
    const body = eventBody(mention(question, ts));

    await post('/slack/events', body, slackHeaders(SECRET, body));
    const [answer] = await slack.waitFor(
      (r) => r.fields.thread_ts === ts && r.fields.markdown_text !== undefined,
    );
    await server.served.runtime.bus.idle();

    const progress = postsIn(ts).filter((r) => r.fields.text !== undefined);
    expect(progress).toHaveLength(1);
    expect(String(progress[0]?.fields.text)).toMatch(/of 3 tasks/);
    const posted = slack.requests.indexOf(progress[0] as Captured);
    const progressTs = progress[0]?.answered?.ts;
    const updates = slack.requests.filter((r) => r.path === '/api/chat.update' && r.fields.ts === progressTs);
    const done = updates.find((r) => /^:white_check_mark: Done: 3 of 3 tasks/.test(String(r.fields.text)));
    expect(done).toBeDefined();
    expect(String(done?.fields.text)).toMatch(/✓ How do I grant read access to a bucket\? \(researcher\)/);
    expect(posted).toBeLessThan(slack.requests.indexOf(done as Captured));
    expect(slack.requests.indexOf(done as Captured)).toBeLessThan(slack.requests.indexOf(answer as Captured));
  });

  it('posts a 3-part question whose third part the corpus cannot answer as a partial answer: parts 1–2, then the part not answered', async () => {
    const ts = nextTs();
    const body = eventBody(mention(PARTIAL_QUESTION, ts));

    const ack = await post('/slack/events', body, slackHeaders(SECRET, body));
    expect(ack.status).toBe(200);
    const [reply] = await slack.waitFor(
      (r) => r.fields.thread_ts === ts && r.fields.markdown_text !== undefined,
      1,
      60_000,
    );
    await server.served.runtime.bus.idle();

    const text = String(reply?.fields.markdown_text);
    const [answer] = await storedAnswers(conversationOf(ts));
    expect(answer?.error).toBeUndefined();
    expect(answer?.unanswered?.map((p) => p.title)).toHaveLength(1);
    expect(text.split('\n')[0]).toMatch(
      /^⚠️ \*\*Partial answer\*\*: not answered: How do I knead sourdough bread dough\?\.$/,
    );
    expect(text.endsWith(escapeSlackText(answer?.content as string))).toBe(true);
    expect(partialAnswerProblems(text)).toEqual([]);
    // The progress message's final counts mark the root task partial, not done or failed (updates
    // from concurrent task outputs may arrive in any order, so the final one is looked for).
    const progressTs = postsIn(ts).find((r) => r.fields.text !== undefined)?.answered?.ts;
    const final = slack.requests
      .filter((r) => r.path === '/api/chat.update' && r.fields.ts === progressTs)
      .map((r) => String(r.fields.text))
      .filter((text) => text.startsWith(':white_check_mark: Done'));
    expect(final.length).toBeGreaterThan(0);
    for (const text of final) expect(text).toMatch(/^◑ Answer 3 parts \(coordinator\)$/m);
  }, 90_000);

  it('continues the thread’s conversation with a later message in the thread', async () => {
    const ts = nextTs();
    const first = eventBody(mention('How do I send S3 object events to EventBridge?', ts));
    await post('/slack/events', first, slackHeaders(SECRET, first));
    await slack.waitFor((r) => r.fields.thread_ts === ts && r.fields.markdown_text !== undefined);

    const followUp = eventBody({
      type: 'message',
      channel_type: 'channel',
      user: 'U0ALICE',
      text: 'How do I block public access to a bucket?',
      ts: nextTs(),
      thread_ts: ts,
    });
    await post('/slack/events', followUp, slackHeaders(SECRET, followUp));
    await slack.waitFor((r) => r.fields.thread_ts === ts && r.fields.markdown_text !== undefined, 2);

    expect(await storedAnswers(conversationOf(ts))).toHaveLength(2);
  });

  it.each<[string, Record<string, unknown>]>([
    [
      'a bot message (our own replies)',
      {
        type: 'message',
        channel_type: 'channel',
        bot_id: 'B0BOT',
        text: 'answer',
        ts: '1700000001.000001',
        thread_ts: '1700000000.000001',
      },
    ],
    [
      'an edit',
      {
        type: 'message',
        channel_type: 'channel',
        subtype: 'message_changed',
        user: 'U0ALICE',
        text: 'x',
        ts: '1700000002.000001',
      },
    ],
    [
      'a channel message without a mention',
      {
        type: 'message',
        channel_type: 'channel',
        user: 'U0ALICE',
        text: 'hello all',
        ts: '1700000003.000001',
      },
    ],
    [
      'a thread message in a thread the bot is not in',
      {
        type: 'message',
        channel_type: 'channel',
        user: 'U0ALICE',
        text: 'hi',
        ts: '1700000004.000002',
        thread_ts: '1700000004.000001',
      },
    ],
    [
      'a mention with no text',
      { type: 'app_mention', user: 'U0ALICE', text: '<@U0BOT>', ts: '1700000005.000001' },
    ],
    [
      'another event type',
      { type: 'reaction_added', user: 'U0ALICE', reaction: 'thumbsup', ts: '1700000006.000001' },
    ],
  ])('acknowledges and ignores %s, storing nothing', async (_label, event) => {
    await server.served.runtime.bus.idle();
    const before = await server.conversationKeys();
    const body = eventBody(event);

    const response = await post('/slack/events', body, slackHeaders(SECRET, body));

    expect(response.status).toBe(200);
    expect(await server.conversationKeys()).toEqual(before);
  });

  const stale = Math.floor(Date.now() / 1000) - 600;
  it.each<[string, (body: string) => { body: string; headers: Record<string, string> }]>([
    [
      'a forged signature (another secret)',
      (body) => ({ body, headers: slackHeaders('not-the-secret', body) }),
    ],
    [
      'a replayed request (signed 10 minutes ago)',
      (body) => ({ body, headers: slackHeaders(SECRET, body, { timestamp: stale }) }),
    ],
    [
      'a body altered after signing',
      (body) => ({ body: body.replace('EventBridge', 'EventBridgf'), headers: slackHeaders(SECRET, body) }),
    ],
    [
      'no signature header',
      (body) => {
        const { 'x-slack-signature': _s, ...headers } = slackHeaders(SECRET, body);
        return { body, headers };
      },
    ],
    [
      'no timestamp header',
      (body) => {
        const { 'x-slack-request-timestamp': _t, ...headers } = slackHeaders(SECRET, body);
        return { body, headers };
      },
    ],
  ])('rejects %s with 401 and stores nothing', async (_label, make) => {
    await server.served.runtime.bus.idle();
    const before = await server.conversationKeys();
    const sent = slack.requests.length;
    const request = make(eventBody(mention('How do I send S3 object events to EventBridge?', nextTs())));

    const response = await post('/slack/events', request.body, request.headers);
    await server.served.runtime.bus.idle();

    expect(response.status).toBe(401);
    expect(response.json.code).toBe('UNAUTHORIZED');
    expect(await server.conversationKeys()).toEqual(before);
    expect(slack.requests.length).toBe(sent);
  });

  it('rejects a signed body that is not JSON with 400 and stores nothing', async () => {
    const before = await server.conversationKeys();
    const body = '{"type":"event_callback",';

    const response = await post('/slack/events', body, slackHeaders(SECRET, body));

    expect(response.status).toBe(400);
    expect(response.json).toEqual({ code: 'VALIDATION', message: 'request body is not valid JSON' });
    expect(await server.conversationKeys()).toEqual(before);
  });
});

describe('Slack slash command over real HTTP against serve', () => {
  function command(
    text: string,
    responsePath = '/commands/T0TEAM/1/abc',
    triggerId = `${Date.now()}.${++tsCounter}`,
  ) {
    return new URLSearchParams({
      token: 'legacy',
      team_id: TEAM,
      team_domain: 'example',
      channel_id: CHANNEL,
      channel_name: 'general',
      user_id: 'U0ALICE',
      user_name: 'alice',
      command: '/cld',
      text,
      api_app_id: 'A0APP',
      response_url: `${slack.url}${responsePath}`,
      trigger_id: triggerId,
    }).toString();
  }
  const form = { contentType: 'application/x-www-form-urlencoded' };

  it('acknowledges at once and posts the answer to the response_url', async () => {
    const body = command('How do I enable versioning on a bucket?', '/commands/T0TEAM/1/versioning');

    const ack = await post('/slack/commands', body, slackHeaders(SECRET, body, form));

    expect(ack.status).toBe(200);
    expect(ack.json).toEqual({
      response_type: 'ephemeral',
      text: 'Working on it: the answer will be posted here.',
    });
    const [reply] = await slack.waitFor((r) => r.path === '/commands/T0TEAM/1/versioning');
    expect(reply?.fields.response_type).toBe('in_channel');
    expect(String(reply?.fields.text).toLowerCase()).toContain('version');
  });

  it('answers an empty command with its usage and stores nothing', async () => {
    await server.served.runtime.bus.idle();
    const before = await server.conversationKeys();
    const body = command('   ');

    const ack = await post('/slack/commands', body, slackHeaders(SECRET, body, form));

    expect(ack.json).toEqual({ response_type: 'ephemeral', text: 'Usage: /cld <your question>' });
    expect(await server.conversationKeys()).toEqual(before);
  });

  it.each<[string, () => { body: string; headers: Record<string, string> }, number]>([
    [
      'a forged signature',
      () => {
        const body = command('hi');
        return { body, headers: slackHeaders('forged', body, form) };
      },
      401,
    ],
    [
      'a body altered after signing',
      () => {
        const body = command('hi');
        return { body: body.replace('U0ALICE', 'U0MALLORY'), headers: slackHeaders(SECRET, body, form) };
      },
      401,
    ],
    [
      'a response_url on another origin',
      () => {
        const body = command('hi').replace(
          encodeURIComponent(slack.url),
          encodeURIComponent('https://attacker.example'),
        );
        return { body, headers: slackHeaders(SECRET, body, form) };
      },
      400,
    ],
  ])('rejects %s and stores nothing', async (_label, make, status) => {
    await server.served.runtime.bus.idle();
    const before = await server.conversationKeys();
    const request = make();

    const response = await post('/slack/commands', request.body, request.headers);

    expect(response.status).toBe(status);
    expect(await server.conversationKeys()).toEqual(before);
  });
});
