/**
 * Slack hardening (issue 22 findings 5 and 7) over real HTTP against `serve`, with real Slack
 * signatures and a local receiver standing in for the Web API:
 * - text a user typed comes back escaped (`&`, `<`, `>`: Slack "Formatting message text",
 *   "Escaping text") in every message the bot posts, so `<!channel>` or `<https://…|label>` typed
 *   by a user never pings or links from the bot;
 * - a thread reply by another channel member is decided by `CLD_SLACK_THREAD_REPLIES`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { noticeText, outcomeText, slackApprovalBlocks } from '../../shared/channels/approvals.js';
import { slackMemberThreadName, slackThreadName } from '../../shared/channels/slack.js';
import type { ApprovalView } from '../../shared/domain/approval.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { ApprovalRequest, Message } from '../../shared/resources/schemas.js';
import { childUrn } from '../../shared/urn.js';
import { contractFetch } from '../helpers/openapi-contract.js';
import {
  type Captured,
  type Receiver,
  slackHeaders,
  startReceiver,
  startTestServe,
  type TestServe,
} from './helpers.js';

const SECRET = 'slack-signing-secret-for-tests';
const TEAM = 'T0TEAM';
const CHANNEL = 'C0CHANNEL';

let server: TestServe;
let slack: Receiver;
let tsCounter = 0;

beforeAll(async () => {
  slack = await startReceiver();
  server = await startTestServe({
    CLD_SLACK_SIGNING_SECRET: SECRET,
    CLD_SLACK_BOT_TOKEN: 'xoxb-1234-5678-test',
    CLD_SLACK_API_URL: `${slack.url}/api/`,
    CLD_SLACK_RESPONSE_URL_ORIGIN: slack.url,
  });
});

afterAll(async () => {
  await server?.stop();
  await slack?.stop();
});

function nextTs(): string {
  tsCounter++;
  return `18${String(Date.now()).slice(-8)}.${String(tsCounter).padStart(6, '0')}`;
}

function eventBody(event: Record<string, unknown>) {
  return JSON.stringify({
    token: 'legacy-verification-token',
    team_id: TEAM,
    api_app_id: 'A0APP',
    event: { channel: CHANNEL, event_ts: event.ts, ...event },
    type: 'event_callback',
    event_id: `Ev${Math.random().toString(36).slice(2, 12)}`,
    event_time: Math.floor(Date.now() / 1000),
    authorizations: [{ team_id: TEAM, user_id: 'U0BOT', is_bot: true }],
  });
}

async function send(event: Record<string, unknown>): Promise<number> {
  const body = eventBody(event);
  const response = await contractFetch(`${server.url}/slack/events`, {
    method: 'POST',
    headers: slackHeaders(SECRET, body),
    body,
  });
  await response.arrayBuffer();
  return response.status;
}

/** Every text the bot sent to Slack in a thread (posts and updates of its messages). */
function textsIn(threadTs: string): string[] {
  const posts = slack.requests.filter(
    (r) => r.path === '/api/chat.postMessage' && r.fields.thread_ts === threadTs,
  );
  const tss = new Set(posts.map((p) => p.answered?.ts));
  const updates = slack.requests.filter((r) => r.path === '/api/chat.update' && tss.has(r.fields.ts));
  return [...posts, ...updates].flatMap((r: Captured) =>
    [r.fields.text, r.fields.markdown_text, r.fields.blocks].filter((v) => v !== undefined).map(String),
  );
}

describe('Slack text escaping in what the bot posts', () => {
  it('a question with <!channel>, <https://evil|docs> and &amp; comes back escaped in the progress message and the answer', async () => {
    const ts = nextTs();
    // What Slack sends when a user types these characters: `&`, `<`, `>` arrive escaped.
    const typed =
      '1. How do I tell &lt;!channel&gt; about S3 object events in EventBridge? ' +
      '2. Do the &lt;https://evil.example/x|docs&gt; on bucket &amp;amp; access control grant read access?';

    expect(await send({ type: 'app_mention', user: 'U0ALICE', text: `<@U0BOT> ${typed}`, ts })).toBe(200);
    await slack.waitFor((r) => r.fields.thread_ts === ts && r.fields.markdown_text !== undefined, 1, 30_000);
    await server.served.runtime.bus.idle();

    const texts = textsIn(ts);
    const progress = texts.filter((t) => t.includes('tasks'));
    expect(progress.length).toBeGreaterThanOrEqual(2);
    const answer = texts.find((t) => t.startsWith('###')) ?? texts.at(-1) ?? '';
    for (const text of texts) {
      expect(text).not.toContain('<!channel>');
      expect(text).not.toContain('<https://evil');
      expect(text).not.toMatch(/&amp;(?!amp;|lt;|gt;)/);
    }
    // The titles come from the question: shown as typed, escaped (`&amp;` typed shows as `&amp;`).
    expect(progress.at(-1)).toContain('&lt;!channel&gt;');
    expect(progress.at(-1)).toContain('&lt;https://evil.example/x|docs&gt;');
    expect(progress.at(-1)).toContain('&amp;amp;');
    expect(answer).toContain('&lt;!channel&gt;');
  }, 60_000);
});

describe('Slack text escaping in the approval notice', () => {
  const request = {
    meta: {
      id: 'cld:common.Conversation.0123456789abcdef/common.Message.0123456789abcdef/plan.Task.0123456789abcdef/tool.Call.0123456789abcdef/tool.Approval.0123456789abcdef',
    },
    tool: 'demo__send',
    task: 'Tell <!channel> & <https://evil.example|docs>',
    input: { text: '<!here> &amp;' },
    expiresAt: '2026-01-01T00:00:00.000Z',
  } as unknown as ApprovalRequest;

  it('escapes the task in the fallback text and the blocks, the input preview, and a denial reason', () => {
    const texts = [
      noticeText(request),
      JSON.stringify(slackApprovalBlocks(request)),
      outcomeText({
        id: '0123456789abcdef',
        status: 'denied',
        decision: { by: 'slack:T0TEAM:U0ALICE', reason: 'no <!everyone> please' },
      } as unknown as ApprovalView),
    ];
    for (const text of texts) {
      expect(text).not.toMatch(/<!(channel|here|everyone)>|<https:/);
    }
    expect(texts[0]).toContain('Tell &lt;!channel&gt; &amp; &lt;https://evil.example|docs&gt;');
    expect(texts[1]).toContain('&lt;!here&gt; &amp;amp;');
    expect(texts[2]).toContain('no &lt;!everyone&gt; please');
    expect(texts[2]).toContain('<@U0ALICE>');
  });
});

/** Stored resources of a conversation's subtree. */
async function subtree(on: TestServe, conversation: string) {
  return on.served.runtime.deps.resources.list(SYSTEM_ACTOR, conversation);
}

function threadConversation(threadTs: string): string {
  return childUrn(undefined, 'common.Conversation', slackThreadName(TEAM, CHANNEL, threadTs));
}

function userMessages(all: { meta: { type: string } }[]): Message[] {
  return all.filter((r): r is Message => r.meta.type === 'common.Message' && (r as Message).role === 'user');
}

describe('thread replies by another channel member (default CLD_SLACK_THREAD_REPLIES=owner)', () => {
  it('stores nothing of another member’s reply; a mention of the bot gets them an ephemeral notice', async () => {
    const ts = nextTs();
    await send({
      type: 'app_mention',
      user: 'U0ALICE',
      text: '<@U0BOT> How do I enable versioning on a bucket?',
      ts,
    });
    await slack.waitFor((r) => r.fields.thread_ts === ts && r.fields.markdown_text !== undefined, 1, 30_000);
    await server.served.runtime.bus.idle();
    const conversation = threadConversation(ts);
    const before = await server.conversationKeys();

    const reply = {
      type: 'message',
      channel_type: 'channel',
      user: 'U0BOB',
      text: 'delete the bucket',
      ts: nextTs(),
      thread_ts: ts,
    };
    const mention = {
      type: 'app_mention',
      user: 'U0BOB',
      text: '<@U0BOT> delete the bucket',
      ts: nextTs(),
      thread_ts: ts,
    };
    expect(await send(reply)).toBe(200);
    expect(await send(mention)).toBe(200);
    await server.served.runtime.bus.idle();

    expect(await server.conversationKeys()).toEqual(before);
    expect(userMessages(await subtree(server, conversation)).map((m) => m.content)).toEqual([
      'How do I enable versioning on a bucket?',
    ]);
    const notices = slack.requests.filter(
      (r) => r.path === '/api/chat.postEphemeral' && r.fields.thread_ts === ts,
    );
    expect(notices).toHaveLength(1);
    expect(notices[0]?.fields).toMatchObject({ channel: CHANNEL, user: 'U0BOB' });
    expect(String(notices[0]?.fields.text)).toMatch(/^Only <@U0ALICE> can continue this conversation/);
  }, 60_000);

  it('the owner’s own reply in the thread still continues the conversation', async () => {
    const ts = nextTs();
    await send({
      type: 'app_mention',
      user: 'U0ALICE',
      text: '<@U0BOT> How do I enable versioning on a bucket?',
      ts,
    });
    await slack.waitFor((r) => r.fields.thread_ts === ts && r.fields.markdown_text !== undefined, 1, 30_000);

    await send({
      type: 'message',
      channel_type: 'channel',
      user: 'U0ALICE',
      text: 'How do I block public access to a bucket?',
      ts: nextTs(),
      thread_ts: ts,
    });
    await slack.waitFor((r) => r.fields.thread_ts === ts && r.fields.markdown_text !== undefined, 2, 30_000);

    expect(userMessages(await subtree(server, threadConversation(ts)))).toHaveLength(2);
  }, 60_000);
});

describe('thread replies by another member with CLD_SLACK_THREAD_REPLIES=members', () => {
  let members: TestServe;
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = await startReceiver();
    members = await startTestServe(
      {
        CLD_SLACK_SIGNING_SECRET: SECRET,
        CLD_SLACK_BOT_TOKEN: 'xoxb-1234-5678-test',
        CLD_SLACK_API_URL: `${receiver.url}/api/`,
        CLD_SLACK_RESPONSE_URL_ORIGIN: receiver.url,
        CLD_SLACK_THREAD_REPLIES: 'members',
      },
      { CLD_TOOL_APPROVAL: JSON.stringify({ search: 'always' }) },
    );
  });

  afterAll(async () => {
    await members?.stop();
    await receiver?.stop();
  });

  async function sendTo(event: Record<string, unknown>) {
    const body = eventBody(event);
    const response = await contractFetch(`${members.url}/slack/events`, {
      method: 'POST',
      headers: slackHeaders(SECRET, body),
      body,
    });
    await response.arrayBuffer();
    return response.status;
  }

  it('records the member’s question as theirs, in their own conversation in the thread; its approvals ask them, never the owner', async () => {
    const ts = nextTs();
    await sendTo({
      type: 'app_mention',
      user: 'U0ALICE',
      text: '<@U0BOT> How do I enable versioning on a bucket?',
      ts,
    });
    const bob = {
      type: 'app_mention',
      user: 'U0BOB',
      text: '<@U0BOT> How do I block public access to a bucket?',
      ts: nextTs(),
      thread_ts: ts,
    };
    expect(await sendTo(bob)).toBe(200);
    const owner = threadConversation(ts);
    const own = childUrn(undefined, 'common.Conversation', slackMemberThreadName(TEAM, CHANNEL, ts, 'U0BOB'));
    // Both questions need an approval of `search`: wait for a notice for each conversation.
    const notices = await receiver.waitFor(
      (r) => r.path === '/api/chat.postMessage' && r.fields.thread_ts === ts && r.fields.blocks !== undefined,
      2,
      30_000,
    );
    await members.served.runtime.bus.idle();

    const ownerTree = await subtree(members, owner);
    const memberTree = await subtree(members, own);
    expect(userMessages(ownerTree).map((m) => m.content)).toEqual([
      'How do I enable versioning on a bucket?',
    ]);
    expect(userMessages(memberTree).map((m) => m.content)).toEqual([
      'How do I block public access to a bucket?',
    ]);
    const actorOf = async (urn: string) =>
      (await members.served.runtime.deps.resources.getAs(SYSTEM_ACTOR, 'common.Conversation', urn)).actor;
    expect(await actorOf(owner)).toBe(`slack:${TEAM}:U0ALICE`);
    expect(await actorOf(own)).toBe(`slack:${TEAM}:U0BOB`);
    // Every approval request of the member's question is in the member's conversation (decided by
    // them: approvals.ts accepts only the conversation's user), and its notice names it.
    const memberRequests = memberTree.filter((r) => r.meta.type === 'tool.Approval').map((r) => r.meta.id);
    expect(memberRequests.length).toBeGreaterThanOrEqual(1);
    const values = notices.map((n) => JSON.stringify(n.fields.blocks));
    for (const request of memberRequests) expect(values.some((v) => v.includes(request))).toBe(true);
    const ownerRequests = ownerTree.filter((r) => r.meta.type === 'tool.Approval');
    const ownerMessage = userMessages(ownerTree)[0]?.meta.id as string;
    for (const request of ownerRequests) expect(request.meta.id.startsWith(`${ownerMessage}/`)).toBe(true);
  }, 90_000);
});
