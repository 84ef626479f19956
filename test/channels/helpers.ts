import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Served, startServe } from '../../cli/serve.js';
import { parseEnv } from '../../shared/runtime/settings.js';

/**
 * Test helpers for the channels: request signing written from the platforms' documentation
 * (independently of the code under test), a local HTTP receiver standing in for Slack's Web API
 * and for Teams/Slack webhooks, and `serve` started in-process on a free port.
 */

/** The documents the channel tests ask about (the aws-s3 README: 60 chunks, ingested in ~1 s). */
export const DOCS = ['node_modules/aws-cdk-lib/aws-s3'];

/**
 * Slack's signature (https://api.slack.com/authentication/verifying-requests-from-slack):
 * `v0=` + hex HMAC-SHA256(signing secret, `v0:` + timestamp + `:` + raw body).
 */
export function slackSignature(secret: string, timestamp: string | number, body: string | Buffer): string {
  const base = Buffer.concat([Buffer.from(`v0:${timestamp}:`, 'utf8'), Buffer.from(body)]);
  return `v0=${createHmac('sha256', secret).update(base).digest('hex')}`;
}

/** Headers of a Slack request signed now (or at `timestamp`). */
export function slackHeaders(
  secret: string,
  body: string,
  options: { timestamp?: number; contentType?: string; retry?: number } = {},
): Record<string, string> {
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  return {
    'content-type': options.contentType ?? 'application/json',
    'x-slack-request-timestamp': String(timestamp),
    'x-slack-signature': slackSignature(secret, timestamp, body),
    ...(options.retry !== undefined
      ? { 'x-slack-retry-num': String(options.retry), 'x-slack-retry-reason': 'http_timeout' }
      : {}),
  };
}

/**
 * Teams outgoing-webhook HMAC (https://learn.microsoft.com/microsoftteams/platform/webhooks-and-connectors/how-to/add-outgoing-webhook):
 * base64 HMAC-SHA256 of the raw body bytes, keyed with the base64-decoded security token.
 */
export function teamsAuthorization(securityToken: string, body: string | Buffer): string {
  const key = Buffer.from(securityToken, 'base64');
  return `HMAC ${createHmac('sha256', key).update(Buffer.from(body)).digest('base64')}`;
}

/** A request the receiver got. */
export interface Captured {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The body as form fields (the Web API client posts form-encoded) or JSON fields. */
  fields: Record<string, unknown>;
  /** What the receiver answered (JSON). */
  answered?: Record<string, unknown>;
}

/** A local HTTP server recording every request. */
export interface Receiver {
  url: string;
  requests: Captured[];
  /** Waits until `count` requests match `predicate` (default 10 s). */
  waitFor(predicate: (request: Captured) => boolean, count?: number, timeoutMs?: number): Promise<Captured[]>;
  /** Makes the next `n` requests fail with this status. */
  failNext(n: number, status: number): void;
  stop(): Promise<void>;
}

/**
 * Starts the receiver. It answers like Slack's Web API (`{ok: true, ts}` for `chat.postMessage`,
 * `{ok: true}` for `chat.update`) and like a webhook (200 `ok`) elsewhere.
 */
export async function startReceiver(): Promise<Receiver> {
  const requests: Captured[] = [];
  let failures: { n: number; status: number } = { n: 0, status: 500 };
  let posted = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const type = String(req.headers['content-type'] ?? '');
      const fields = type.includes('json')
        ? (JSON.parse(body || '{}') as Record<string, unknown>)
        : Object.fromEntries(new URLSearchParams(body));
      const path = (req.url ?? '/').split('?')[0] as string;
      const captured: Captured = { method: req.method ?? '', path, headers: req.headers, body, fields };
      requests.push(captured);
      if (failures.n > 0) {
        failures = { ...failures, n: failures.n - 1 };
        captured.answered = { ok: false, error: 'fatal_error' };
        res
          .writeHead(failures.status, { 'content-type': 'application/json' })
          .end(JSON.stringify(captured.answered));
        return;
      }
      if (path.endsWith('/chat.postMessage')) {
        posted++;
        const ts = `1700000000.${String(posted).padStart(6, '0')}`;
        captured.answered = { ok: true, channel: fields.channel, ts, message: { text: fields.text ?? '' } };
      } else if (path.endsWith('/chat.update')) {
        captured.answered = { ok: true, channel: fields.channel, ts: fields.ts };
      }
      res.setHeader('content-type', 'application/json');
      res.end(captured.answered ? JSON.stringify(captured.answered) : '"ok"');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    failNext: (n, status) => {
      failures = { n, status };
    },
    async waitFor(predicate, count = 1, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const matching = requests.filter(predicate);
        if (matching.length >= count) return matching;
        if (Date.now() > deadline)
          throw new Error(`receiver: ${matching.length}/${count} matching requests after ${timeoutMs} ms`);
        await sleep(20);
      }
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** `serve` in this process on a free port, with the docs ingested, and its data directory. */
export interface TestServe {
  served: Served;
  url: string;
  dataDir: string;
  /** Storage keys of every stored Conversation and its subtree (sorted). */
  conversationKeys(): Promise<string[]>;
  stop(): Promise<void>;
}

/**
 * Starts `serve` with this environment (tokens, secrets, URLs) on a fresh data directory, and
 * these core variables (e.g. `CLD_TOOL_APPROVAL`).
 */
export async function startTestServe(
  env: Record<string, string>,
  core: Record<string, string> = {},
): Promise<TestServe> {
  const dataDir = await mkdtemp(join(tmpdir(), 'cld-channels-'));
  const served = await startServe({
    port: 0,
    dataDir,
    env,
    core: parseEnv({ ...core, CLD_DATA_DIR: dataDir }),
    docs: DOCS,
  });
  return {
    served,
    url: served.url,
    dataDir,
    conversationKeys: () => served.runtime.storage.findByPrefix('cld/common.Conversation.'),
    async stop() {
      await served.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Polls `probe` until it returns a value (not undefined), or throws after `timeoutMs`. */
export async function until<T>(probe: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(25);
  }
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
