import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPROVE_ACTION, DENY_ACTION } from '../../shared/channels/approvals.js';
import { slackThreadName } from '../../shared/channels/slack.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { AnyResource, ApprovalDecision, Message } from '../../shared/resources/schemas.js';
import { childUrn } from '../../shared/urn.js';
import { contractFetch } from '../helpers/openapi-contract.js';
import {
  type Captured,
  type Receiver,
  slackHeaders,
  startReceiver,
  startTestServe,
  type TestServe,
  teamsAuthorization,
  until,
} from './helpers.js';

/**
 * Human approval of tool calls on the chat channels, against `serve` on real HTTP with the
 * `search` tool marked as needing approval: the reply step posts a notice (Slack: Block Kit
 * buttons in the thread; Teams: a message naming the request) to a local receiver standing in for
 * Slack's Web API and the Teams webhook; a Slack interaction payload signed with the signing
 * secret (as Slack signs it) decides the request, so does a Teams reply `approve <id>`; unsigned,
 * forged, stale and other users' payloads decide nothing.
 */

const SECRET = 'slack-signing-secret-for-approvals';
const BOT_TOKEN = 'xoxb-approvals-test';
const TEAM = 'T0TEAM';
const CHANNEL = 'C0APPROVALS';
const TEAMS_TOKEN = randomBytes(32).toString('base64');
const ALICE_AAD = '6f1c1a44-1f34-4d7a-9f0e-3f6f3c1a2b3c';
const QUESTION = 'How do I send S3 object events to EventBridge?';

let server: TestServe;
let stub: Receiver;
let tsCounter = 0;

beforeAll(async () => {
  stub = await startReceiver();
  server = await startTestServe(
    {
      CLD_SLACK_SIGNING_SECRET: SECRET,
      CLD_SLACK_BOT_TOKEN: BOT_TOKEN,
      CLD_SLACK_API_URL: `${stub.url}/api/`,
      CLD_SLACK_RESPONSE_URL_ORIGIN: stub.url,
      CLD_TEAMS_SECRET: TEAMS_TOKEN,
      CLD_TEAMS_WEBHOOK_URL: `${stub.url}/workflows/incoming/abc`,
    },
    { CLD_TOOL_APPROVAL: JSON.stringify({ search: 'always' }) },
  );
});

afterAll(async () => {
  await server?.stop();
  await stub?.stop();
});

function nextTs(): string {
  tsCounter++;
  return `17${String(Date.now()).slice(-8)}.${String(tsCounter).padStart(6, '0')}`;
}

async function post(path: string, body: string, headers: Record<string, string>) {
  const response = await contractFetch(`${server.url}${path}`, { method: 'POST', headers, body });
  const text = await response.text();
  return { status: response.status, text };
}

/** Asks a question in a new Slack thread; returns the thread's ts. */
async function askOnSlack(): Promise<string> {
  const ts = nextTs();
  const body = JSON.stringify({
    team_id: TEAM,
    api_app_id: 'A0APP',
    type: 'event_callback',
    event_id: `Ev${ts.replace('.', '')}`,
    event_time: Math.floor(Date.now() / 1000),
    event: { type: 'app_mention', user: 'U0ALICE', text: `<@U0BOT> ${QUESTION}`, ts, channel: CHANNEL },
  });
  expect((await post('/slack/events', body, slackHeaders(SECRET, body))).status).toBe(200);
  return ts;
}

interface Notice {
  request: Captured;
  ts: string;
  approve: { action_id: string; value: string; block_id: string };
  deny: { action_id: string; value: string; block_id: string };
}

/** The approval notices (chat.postMessage with blocks) posted in a thread, in order. */
function noticesIn(threadTs: string): Notice[] {
  return stub.requests
    .filter((r) => r.path === '/api/chat.postMessage' && r.fields.thread_ts === threadTs && r.fields.blocks)
    .map((request) => {
      const blocks = JSON.parse(String(request.fields.blocks)) as {
        type: string;
        block_id?: string;
        elements?: { action_id: string; value: string }[];
      }[];
      const actions = blocks.find((b) => b.type === 'actions');
      const button = (id: string) => {
        const found = actions?.elements?.find((e) => e.action_id === id);
        if (!found || !actions?.block_id) throw new Error(`no ${id} button`);
        return { action_id: found.action_id, value: found.value, block_id: actions.block_id };
      };
      return {
        request,
        ts: String(request.answered?.ts),
        approve: button(APPROVE_ACTION),
        deny: button(DENY_ACTION),
      };
    });
}

/** A `block_actions` interaction body as Slack posts it (form-encoded `payload`). */
function interactionBody(
  notice: Notice,
  button: 'approve' | 'deny',
  options: { user?: string; responsePath?: string } = {},
): { body: string; responseUrl: string } {
  const action = notice[button];
  const responseUrl = `${stub.url}${options.responsePath ?? `/actions/${TEAM}/${randomUUID()}`}`;
  const payload = {
    type: 'block_actions',
    user: { id: options.user ?? 'U0ALICE', username: 'alice', name: 'alice', team_id: TEAM },
    api_app_id: 'A0APP',
    token: 'legacy-verification-token',
    container: {
      type: 'message',
      message_ts: notice.ts,
      channel_id: CHANNEL,
      is_ephemeral: false,
      thread_ts: notice.request.fields.thread_ts,
    },
    trigger_id: '1234.5678.abcdef',
    team: { id: TEAM, domain: 'example' },
    enterprise: null,
    is_enterprise_install: false,
    channel: { id: CHANNEL, name: 'approvals' },
    message: { type: 'message', ts: notice.ts, thread_ts: notice.request.fields.thread_ts, text: '' },
    state: { values: {} },
    response_url: responseUrl,
    actions: [
      {
        action_id: action.action_id,
        block_id: action.block_id,
        text: { type: 'plain_text', text: button === 'approve' ? 'Approve' : 'Deny', emoji: true },
        value: action.value,
        style: button === 'approve' ? 'primary' : 'danger',
        type: 'button',
        action_ts: `${Math.floor(Date.now() / 1000)}.000100`,
      },
    ],
  };
  return { body: `payload=${encodeURIComponent(JSON.stringify(payload))}`, responseUrl };
}

const FORM = 'application/x-www-form-urlencoded';

/** Presses a button as Slack does (signed now); returns the status and what reached response_url. */
async function press(notice: Notice, button: 'approve' | 'deny', user?: string) {
  const { body, responseUrl } = interactionBody(notice, button, user ? { user } : {});
  const response = await post('/slack/interactions', body, slackHeaders(SECRET, body, { contentType: FORM }));
  const path = new URL(responseUrl).pathname;
  const [update] = response.status === 200 ? await stub.waitFor((r) => r.path === path) : [];
  return { status: response.status, update };
}

/** Presses `button` on every notice of the thread until the answer is posted; returns the answer post. */
async function decideUntilAnswered(threadTs: string, button: 'approve' | 'deny'): Promise<Captured> {
  const pressed = new Set<string>();
  return until(async () => {
    for (const notice of noticesIn(threadTs)) {
      if (pressed.has(notice.ts)) continue;
      pressed.add(notice.ts);
      expect((await press(notice, button)).status).toBe(200);
    }
    return stub.requests.find(
      (r) => r.path === '/api/chat.postMessage' && r.fields.thread_ts === threadTs && r.fields.markdown_text,
    );
  }, 30_000);
}

async function subtree(conversation: string): Promise<AnyResource[]> {
  return server.served.runtime.deps.resources.list(SYSTEM_ACTOR, conversation, {});
}

function slackConversation(threadTs: string): string {
  return childUrn(undefined, 'common.Conversation', slackThreadName(TEAM, CHANNEL, threadTs));
}

describe('approval of tool calls over Slack', () => {
  it('posts a notice with Approve/Deny buttons in the thread; a signed press approves and the answer comes', async () => {
    const thread = await askOnSlack();
    const [notice] = await stub.waitFor(
      (r) =>
        r.path === '/api/chat.postMessage' && r.fields.thread_ts === thread && r.fields.blocks !== undefined,
    );
    expect(notice?.headers.authorization).toBe(`Bearer ${BOT_TOKEN}`);
    expect(notice?.fields.channel).toBe(CHANNEL);
    expect(String(notice?.fields.text)).toContain('Approval needed: search');
    const [first] = noticesIn(thread);
    expect(first?.approve.value).toMatch(/\/tool\.Call\.[0-9a-f]{16}\/tool\.Approval\.[0-9a-f]{16}$/);
    expect(first?.approve.value.startsWith(slackConversation(thread))).toBe(true);
    // No answer while the call waits.
    expect(
      stub.requests.some((r) => r.fields.thread_ts === thread && r.fields.markdown_text !== undefined),
    ).toBe(false);

    const pressed = await press(first as Notice, 'approve');
    expect(pressed.status).toBe(200);
    expect(pressed.update?.fields).toMatchObject({ replace_original: true });
    expect(String(pressed.update?.fields.text)).toMatch(/Approved by <@U0ALICE>/);

    const answer = await decideUntilAnswered(thread, 'approve');
    expect(String(answer.fields.markdown_text).length).toBeGreaterThan(0);
    const decisions = (await subtree(slackConversation(thread))).filter(
      (r): r is ApprovalDecision => r.meta.type === 'tool.Decision',
    );
    expect(decisions.length).toBeGreaterThanOrEqual(1);
    for (const decision of decisions)
      expect(decision).toMatchObject({ decision: 'approve', by: `slack:${TEAM}:U0ALICE`, channel: 'slack' });
    // Each notice was posted once (the delivery guard), one per request.
    const requests = (await subtree(slackConversation(thread))).filter(
      (r) => r.meta.type === 'tool.Approval',
    );
    expect(noticesIn(thread)).toHaveLength(requests.length);
  });

  it('a denial via Slack reaches the answer as a DENIED tool result', async () => {
    const thread = await askOnSlack();
    const answer = await decideUntilAnswered(thread, 'deny');
    expect(String(answer.fields.markdown_text).length).toBeGreaterThan(0);
    const results = (await subtree(slackConversation(thread))).filter(
      (r): r is Message => r.meta.type === 'common.Message' && (r as Message).role === 'tool',
    );
    expect(results.length).toBeGreaterThanOrEqual(1);
    for (const result of results) {
      expect(result.status).toBe('DENIED');
      expect(result.error?.code).toBe('APPROVAL_DENIED');
    }
  });

  it('decides nothing for unsigned, forged, stale or tampered payloads, nor for another Slack user', async () => {
    const thread = await askOnSlack();
    const [notice] = await until(async () => {
      const found = noticesIn(thread);
      return found.length > 0 ? found : undefined;
    });
    const n = notice as Notice;
    const { body } = interactionBody(n, 'approve');
    const now = Math.floor(Date.now() / 1000);

    const unsigned = await post('/slack/interactions', body, { 'content-type': FORM });
    const forged = await post(
      '/slack/interactions',
      body,
      slackHeaders('not-the-secret', body, { contentType: FORM }),
    );
    const stale = await post(
      '/slack/interactions',
      body,
      slackHeaders(SECRET, body, { contentType: FORM, timestamp: now - 600 }),
    );
    const signedHeaders = slackHeaders(SECRET, body, { contentType: FORM });
    const tampered = await post('/slack/interactions', body.replace('U0ALICE', 'U0MALLORY'), signedHeaders);
    expect([unsigned.status, forged.status, stale.status, tampered.status]).toEqual([401, 401, 401, 401]);

    // Signed but malformed: no payload field, or a payload that is not JSON / not block_actions-shaped.
    const empty = 'foo=bar';
    expect(
      (await post('/slack/interactions', empty, slackHeaders(SECRET, empty, { contentType: FORM }))).status,
    ).toBe(400);
    const broken = `payload=${encodeURIComponent(JSON.stringify({ type: 'block_actions', actions: [] }))}`;
    expect(
      (await post('/slack/interactions', broken, slackHeaders(SECRET, broken, { contentType: FORM }))).status,
    ).toBe(400);

    // Properly signed, but pressed by someone who is not the conversation's user.
    const bob = await press(n, 'approve', 'U0BOB');
    expect(bob.status).toBe(200);
    expect(bob.update?.fields).toMatchObject({ response_type: 'ephemeral', replace_original: false });
    expect(String(bob.update?.fields.text)).toMatch(/not yours/);

    await server.served.runtime.bus.idle();
    const stored = await subtree(slackConversation(thread));
    expect(stored.filter((r) => r.meta.type === 'tool.Decision')).toEqual([]);
    expect(stored.filter((r) => r.meta.type === 'tool.Approval')).toHaveLength(1);

    // The owner's press still works, and a second press with the other button is refused (kept: approve).
    expect((await press(n, 'approve')).status).toBe(200);
    const again = await press(n, 'deny');
    expect(again.status).toBe(200);
    expect(again.update?.fields).toMatchObject({ response_type: 'ephemeral' });
    expect(String(again.update?.fields.text)).toMatch(/already decided/);
    const decisions = (await subtree(slackConversation(thread))).filter(
      (r): r is ApprovalDecision => r.meta.type === 'tool.Decision',
    );
    expect(decisions.map((d) => d.decision)).toEqual(['approve']);
  });
});

/** An outgoing-webhook Activity from `aad` in the Teams conversation `conversationId`. */
function activity(text: string, conversationId: string, aad = ALICE_AAD) {
  return JSON.stringify({
    type: 'message',
    id: `${Date.now()}${Math.floor(Math.random() * 1000)}`,
    timestamp: new Date().toISOString(),
    channelId: 'msteams',
    serviceUrl: 'https://smba.trafficmanager.net/emea/',
    from: { id: `29:${aad.slice(0, 8)}`, name: 'Someone', aadObjectId: aad },
    conversation: { isGroup: true, id: conversationId, conversationType: 'channel', tenantId: 't-1' },
    text: `<at>cld</at> ${text}\n`,
    entities: [{ type: 'mention', mentioned: { id: '28:bot', name: 'cld' }, text: '<at>cld</at>' }],
  });
}

async function postTeams(body: string) {
  const response = await contractFetch(`${server.url}/teams/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: teamsAuthorization(TEAMS_TOKEN, body) },
    body,
  });
  return { status: response.status, json: (await response.json()) as { type: string; text: string } };
}

function cardText(request: Captured): string {
  const attachments = request.fields.attachments as { content: { body: { text: string }[] } }[];
  return attachments[0]?.content.body[0]?.text ?? '';
}

describe('approval of tool calls over Teams', () => {
  it('posts a notice naming the request; a reply `approve <id>` decides it and the answer comes', async () => {
    const conversationId = `19:${randomUUID()}@thread.tacv2;messageid=1700000000000`;
    const webhookPosts = () => stub.requests.filter((r) => r.path === '/workflows/incoming/abc');
    const before = webhookPosts().length;
    expect((await postTeams(activity(QUESTION, conversationId))).status).toBe(200);

    const decided = new Set<string>();
    const answer = await until(async () => {
      for (const request of webhookPosts().slice(before)) {
        const id = /`approve ([0-9a-f]{16})`/.exec(cardText(request))?.[1];
        if (!id || decided.has(id)) continue;
        decided.add(id);
        // Another Teams user in the same thread cannot decide it.
        const other = await postTeams(
          activity(`approve ${id}`, conversationId, '00000000-0000-0000-0000-00000000b0b0'),
        );
        expect(other.json.text).toMatch(/No approval request/);
        const reply = await postTeams(activity(`approve ${id} looks fine`, conversationId));
        expect(reply.status).toBe(200);
        expect(reply.json.text).toBe(`Approved request ${id}: the call of search runs now.`);
      }
      return webhookPosts()
        .slice(before)
        .find((r) => !cardText(r).includes('Approval needed') && cardText(r).length > 0);
    }, 30_000);
    expect(decided.size).toBeGreaterThanOrEqual(1);
    expect(cardText(answer)).toMatch(/EventBridge/);

    const conversation = childUrn(undefined, 'common.Conversation', `teams:${conversationId}`);
    const stored = await subtree(conversation);
    const decisions = stored.filter((r): r is ApprovalDecision => r.meta.type === 'tool.Decision');
    expect(decisions).toHaveLength(decided.size);
    for (const decision of decisions)
      expect(decision).toMatchObject({
        decision: 'approve',
        by: `teams:${ALICE_AAD}`,
        channel: 'teams',
        reason: 'looks fine',
      });
    // The typed replies are decisions, not follow-up messages: one user Message only.
    const userMessages = stored.filter(
      (r) => r.meta.type === 'common.Message' && (r as Message).role === 'user',
    );
    expect(userMessages).toHaveLength(1);

    // Anything else, even starting with "approve", stays a follow-up message of the conversation.
    const followUp = await postTeams(activity('approve the plan and show the rule', conversationId));
    expect(followUp.json.text).toMatch(/^Working on it/);
    const after = (await subtree(conversation)).filter(
      (r) => r.meta.type === 'common.Message' && (r as Message).role === 'user',
    );
    expect(after).toHaveLength(2);
  });
});
