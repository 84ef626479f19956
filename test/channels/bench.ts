import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { slackHeaders, startReceiver, startTestServe, teamsAuthorization, until } from './helpers.js';

/**
 * Channel latencies on this machine (`npx tsx test/channels/bench.ts [runs]`): `serve` in-process
 * with the offline model on the aws-s3 README, real HTTP from this process. Reports p50/p95/max
 * of: the HTTP API's 202, the time until `GET /conversations/{id}` shows the answer (polled every
 * 5 ms), the Slack and Teams acknowledgements, and the time until the answer reaches the local
 * receiver standing in for Slack's Web API / the Teams webhook. Numbers for the README, not a test.
 */

const runs = Number(process.argv[2] ?? 20);
const TOKEN = 'bench-token-0123456789abcdef';
const SLACK_SECRET = 'bench-slack-secret';
const TEAMS_TOKEN = randomBytes(32).toString('base64');
const QUESTIONS = [
  'How do I send S3 object events to EventBridge?',
  '1. How do I enable versioning on a bucket? 2. How do I grant read access to a bucket?',
];

function stats(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  return `p50 ${at(0.5).toFixed(0)} ms, p95 ${at(0.95).toFixed(0)} ms, max ${(sorted.at(-1) ?? 0).toFixed(0)} ms`;
}

const receiver = await startReceiver();
const started = performance.now();
const server = await startTestServe({
  CLD_API_TOKENS: JSON.stringify({ [TOKEN]: 'bench' }),
  CLD_SLACK_SIGNING_SECRET: SLACK_SECRET,
  CLD_SLACK_BOT_TOKEN: 'xoxb-bench',
  CLD_SLACK_API_URL: `${receiver.url}/api/`,
  CLD_TEAMS_SECRET: TEAMS_TOKEN,
  CLD_TEAMS_WEBHOOK_URL: `${receiver.url}/teams`,
});
console.log(
  `serve started (runtime + ingest of the aws-s3 README + gateway) in ${(performance.now() - started).toFixed(0)} ms`,
);

for (const [q, question] of QUESTIONS.entries()) {
  const accepted: number[] = [];
  const answered: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    const response = await fetch(`${server.url}/conversations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: question }),
    });
    const { id } = (await response.json()) as { id: string };
    accepted.push(performance.now() - t0);
    await until(async () => {
      const view = await fetch(`${server.url}/conversations/${id}`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      return ((await view.json()) as { status: string }).status === 'done' ? true : undefined;
    });
    answered.push(performance.now() - t0);
  }
  console.log(
    `HTTP, question ${q + 1} (${runs} runs): 202 ${stats(accepted)}; answer visible ${stats(answered)}`,
  );
}

const slackAck: number[] = [];
const slackReply: number[] = [];
for (let i = 0; i < runs; i++) {
  const ts = `1800000000.${String(i).padStart(6, '0')}`;
  const body = JSON.stringify({
    type: 'event_callback',
    team_id: 'T1',
    event_id: `EvBench${i}`,
    event: { type: 'app_mention', user: 'U1', channel: 'C1', text: `<@U0BOT> ${QUESTIONS[0]}`, ts },
  });
  const t0 = performance.now();
  await fetch(`${server.url}/slack/events`, {
    method: 'POST',
    headers: slackHeaders(SLACK_SECRET, body),
    body,
  });
  slackAck.push(performance.now() - t0);
  await receiver.waitFor((r) => r.fields.thread_ts === ts && r.fields.markdown_text !== undefined);
  slackReply.push(performance.now() - t0);
}
console.log(`Slack (${runs} runs): ack ${stats(slackAck)}; answer at chat.postMessage ${stats(slackReply)}`);

const teamsAck: number[] = [];
const teamsReply: number[] = [];
for (let i = 0; i < runs; i++) {
  const body = JSON.stringify({
    type: 'message',
    id: `bench-${i}`,
    text: `<at>cld</at> ${QUESTIONS[0]}`,
    from: { id: '29:1', aadObjectId: 'a-1' },
    conversation: { id: `19:bench-${i}@thread.tacv2` },
  });
  const before = receiver.requests.filter((r) => r.path === '/teams').length;
  const t0 = performance.now();
  await fetch(`${server.url}/teams/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: teamsAuthorization(TEAMS_TOKEN, body) },
    body,
  });
  teamsAck.push(performance.now() - t0);
  await receiver.waitFor((r) => r.path === '/teams', before + 1);
  teamsReply.push(performance.now() - t0);
}
console.log(`Teams (${runs} runs): ack ${stats(teamsAck)}; answer at the webhook ${stats(teamsReply)}`);

await server.stop();
await receiver.stop();
