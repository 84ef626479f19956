import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as httpHandler } from '../../functions/http/handler.js';
import { handler as slackHandler } from '../../functions/slack/handler.js';
import { handler as teamsHandler } from '../../functions/teams/handler.js';
import { getChannels } from '../../shared/channels/context.js';
import { createHttpApi } from '../../shared/channels/http-api.js';
import { hasDotSegment } from '../../shared/channels/request-guards.js';
import { getDeps } from '../../shared/runtime/compose.js';
import { contractFetch, expectContract } from '../helpers/openapi-contract.js';
import {
  type Receiver,
  slackHeaders,
  startReceiver,
  startTestServe,
  type TestServe,
  teamsAuthorization,
  until,
} from './helpers.js';

/**
 * The channels' request guards (issue 12 item 5), over real HTTP against `serve` and on the
 * Lambda handlers themselves: bodies over the limit refused before they are read and before
 * authentication on every route; the route that matched is the route that runs; an
 * Idempotency-Key reused with another body refused; no `Host` reflected into `Location`.
 */

const ALICE = 'alice-token-0123456789abcdef';
const SLACK_SECRET = 'slack-signing-secret-for-guards';
const TEAMS_TOKEN = randomBytes(32).toString('base64');
const HTTP_LIMIT = 65_536;
const WEBHOOK_LIMIT = 1_048_576;

let server: TestServe;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  server = await startTestServe({
    CLD_API_TOKENS: JSON.stringify({ [ALICE]: 'alice' }),
    CLD_SLACK_SIGNING_SECRET: SLACK_SECRET,
    CLD_SLACK_BOT_TOKEN: 'xoxb-guards',
    CLD_SLACK_API_URL: `${receiver.url}/api/`,
    CLD_TEAMS_SECRET: TEAMS_TOKEN,
    CLD_TEAMS_WEBHOOK_URL: `${receiver.url}/teams`,
  });
});

afterAll(async () => {
  await server?.stop();
  await receiver?.stop();
});

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json: Record<string, unknown>;
}

/**
 * One request with node:http, which sends the path and `Host` exactly as given (fetch would
 * resolve dot-segments and refuse to set `Host`). `declaredLength` sends that `content-length`
 * with only `body` after it, never ending the upload.
 */
function raw(
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string | Buffer; declaredLength?: number } = {},
): Promise<RawResponse> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: {
          ...options.headers,
          ...(options.declaredLength !== undefined
            ? { 'content-length': String(options.declaredLength) }
            : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          req.destroy();
          try {
            expectContract(method, path, res.statusCode ?? 0, res.headers, text);
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              json: text ? JSON.parse(text) : {},
            });
          } catch (error) {
            reject(error);
          }
        });
      },
    );
    req.on('error', reject);
    if (options.body !== undefined) req.write(options.body);
    if (options.declaredLength === undefined) req.end();
  });
}

async function ask(message: string, key?: string, path = '/conversations'): Promise<RawResponse> {
  return raw('POST', path, {
    headers: {
      authorization: `Bearer ${ALICE}`,
      'content-type': 'application/json',
      ...(key ? { 'idempotency-key': key } : {}),
    },
    body: JSON.stringify({ message }),
  });
}

/** A signed Slack app_mention event padded to `bytes` bytes. */
function signedSlackEvent(bytes: number): { body: string; headers: Record<string, string> } {
  const head = JSON.stringify({
    type: 'event_callback',
    team_id: 'T0GUARD',
    event_id: `Ev${Date.now()}`,
    event: { type: 'app_mention', user: 'U0A', channel: 'C0G', text: '<@U0BOT> hi', ts: '1800000000.000001' },
    padding: '',
  });
  const body = `${head.slice(0, -2)}${'x'.repeat(bytes - head.length)}"}`;
  return { body, headers: slackHeaders(SLACK_SECRET, body) };
}

describe('body limits over real HTTP against serve: refused before they are read and before authentication', () => {
  const routes: [string, string, number][] = [
    ['POST', '/conversations', HTTP_LIMIT],
    ['POST', '/conversations/6f1c1a44-1f34-4d7a-9f0e-3f6f3c1a2b3c/messages', HTTP_LIMIT],
    ['POST', '/slack/events', WEBHOOK_LIMIT],
    ['POST', '/slack/commands', WEBHOOK_LIMIT],
    ['POST', '/teams/messages', WEBHOOK_LIMIT],
  ];

  it.each(
    routes,
  )('%s %s: a body one byte over the limit is 413, unauthenticated', async (method, path, limit) => {
    const before = await server.conversationKeys();

    const response = await raw(method, path, {
      headers: { 'content-type': 'application/json' },
      body: Buffer.alloc(limit + 1, 0x20),
    });

    expect(response.status).toBe(413);
    expect(response.json.code).toBe('PAYLOAD_TOO_LARGE');
    expect(await server.conversationKeys()).toEqual(before);
  });

  it.each(
    routes,
  )('%s %s: a body at the limit goes on to authentication (401)', async (method, path, limit) => {
    const response = await raw(method, path, {
      headers: { 'content-type': 'application/json' },
      body: Buffer.alloc(limit, 0x20),
    });

    expect(response.status).toBe(401);
  });

  it('refuses a signed 9 MB Slack event with 413 and stores nothing', async () => {
    const before = await server.conversationKeys();
    const { body, headers } = signedSlackEvent(9 * 1024 * 1024);

    const response = await raw('POST', '/slack/events', { headers, body });
    await server.served.runtime.bus.idle();

    expect(response.status).toBe(413);
    expect(await server.conversationKeys()).toEqual(before);
  });

  it('stores a signed Slack event just under the limit (the limit is not a refusal of every event)', async () => {
    const before = await server.conversationKeys();
    const { body, headers } = signedSlackEvent(WEBHOOK_LIMIT - 1000);

    const response = await raw('POST', '/slack/events', { headers, body });

    expect(response.status).toBe(200);
    await until(async () => ((await server.conversationKeys()).length > before.length ? true : undefined));
    await server.served.runtime.bus.idle();
  });

  it('refuses a signed 9 MB Teams message with 413', async () => {
    const body = JSON.stringify({ type: 'message', text: 'x'.repeat(9 * 1024 * 1024) });

    const response = await raw('POST', '/teams/messages', {
      headers: { 'content-type': 'application/json', authorization: teamsAuthorization(TEAMS_TOKEN, body) },
      body,
    });

    expect(response.status).toBe(413);
  });

  it('answers 413 at once when content-length declares too much, without waiting for the body', async () => {
    const response = await raw('POST', '/conversations', {
      headers: { authorization: `Bearer ${ALICE}`, 'content-type': 'application/json' },
      declaredLength: 9 * 1024 * 1024,
      body: '{"message":"',
    });

    expect(response.status).toBe(413);
  });

  it('cuts off an endless chunked upload with 413 instead of buffering it', async () => {
    const chunk = new Uint8Array(64 * 1024).fill(0x20);
    let sent = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        // Bounded so a server that never cuts the body off fails the
        // assertion below instead of growing this worker until it runs out
        // of memory on a loaded machine.
        if (sent >= 64 * WEBHOOK_LIMIT) {
          controller.close();
          return;
        }
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });

    const response = await contractFetch(`${server.url}/slack/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: endless,
      duplex: 'half',
    } as RequestInit & { duplex: 'half' });

    expect(response.status).toBe(413);
    expect(sent).toBeLessThan(64 * WEBHOOK_LIMIT);
  });
});

describe('the route that matched is the route that runs', () => {
  it.each([
    '/resources/%2e%2e/conversations/{id}',
    '/resources/%2E%2E/conversations/{id}',
    '/resources/.%2e/conversations/{id}',
    '/resources/../conversations/{id}',
    '/resources/cld:x/%2e%2e/%2e%2e/conversations/{id}',
    '/conversations/./{id}',
  ])('refuses GET %s with 400 instead of the conversation view', async (template) => {
    const accepted = await ask('How do I enable versioning on a bucket?');
    const path = template.replace('{id}', String(accepted.json.id));

    const response = await raw('GET', path, { headers: { authorization: `Bearer ${ALICE}` } });

    expect(response.status).toBe(400);
    expect(response.json.code).toBe('BAD_REQUEST');
    expect(response.json).not.toHaveProperty('messages');
  });

  it('still serves the conversation view at its own path (control)', async () => {
    const accepted = await ask('How do I enable versioning on a bucket?');

    const response = await raw('GET', `/conversations/${accepted.json.id}`, {
      headers: { authorization: `Bearer ${ALICE}` },
    });

    expect(response.status).toBe(200);
    expect(response.json.id).toBe(accepted.json.id);
  });

  it.each([
    'evil.example/conversations/x#',
    'a b',
    'a:1:2',
  ])('refuses the Host header "%s" with 400', async (host) => {
    const response = await raw('GET', '/conversations/6f1c1a44-1f34-4d7a-9f0e-3f6f3c1a2b3c', {
      headers: { authorization: `Bearer ${ALICE}`, host },
    });

    expect(response.status).toBe(400);
  });

  it('hasDotSegment finds dot-segments in any encoding, and nothing else', () => {
    expect(hasDotSegment('/resources/%2e%2e/x')).toBe(true);
    expect(hasDotSegment('/resources/%2E./x')).toBe(true);
    expect(hasDotSegment('/a/./b')).toBe(true);
    expect(hasDotSegment('/a/...')).toBe(false);
    expect(hasDotSegment('/resources/cld:common.Conversation.0123456789abcdef')).toBe(false);
    expect(hasDotSegment('/a/%2e%2ex')).toBe(false);
  });
});

/** An API Gateway v2 event as AWS would deliver it after the JWT authorizer (or none). */
function apiEvent(
  routeKey: string,
  rawPath: string,
  options: { host?: string; body?: string; claims?: boolean; contentLength?: number } = {},
): APIGatewayProxyEventV2 {
  const [method] = routeKey.split(' ') as [string];
  return {
    version: '2.0',
    routeKey,
    rawPath,
    rawQueryString: '',
    headers: {
      host: options.host ?? 'api.example.com',
      'content-type': 'application/json',
      ...(options.contentLength !== undefined ? { 'content-length': String(options.contentLength) } : {}),
    },
    requestContext: {
      accountId: '123456789012',
      apiId: 'api',
      domainName: 'api.example.com',
      domainPrefix: 'api',
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '10.0.0.1', userAgent: 'test' },
      requestId: 'r1',
      routeKey,
      stage: '$default',
      time: '21/Nov/2026:10:00:00 +0000',
      timeEpoch: 1_795_000_000_000,
      ...(options.claims !== false
        ? { authorizer: { jwt: { claims: { sub: 'alice' }, scopes: null } } }
        : {}),
    } as APIGatewayProxyEventV2['requestContext'],
    ...(options.body !== undefined ? { body: options.body } : {}),
    isBase64Encoded: false,
  };
}

describe('the Lambda handlers guard themselves (API Gateway passes what it matched)', () => {
  it('refuses a dot-segment path matched as GET /resources/{urn+} instead of serving the conversation view', async () => {
    const accepted = await ask('How do I enable versioning on a bucket?');

    const result = await httpHandler(
      apiEvent('GET /resources/{urn+}', `/resources/%2e%2e/conversations/${accepted.json.id}`),
      {} as Context,
    );

    expect(result.statusCode).toBe(400);
    expect(result.body).not.toContain('"messages"');
  });

  it('refuses a Host header that would move the path the router sees', async () => {
    const accepted = await ask('How do I enable versioning on a bucket?');

    const result = await httpHandler(
      apiEvent('GET /resources/{urn+}', '/resources/cld:x', {
        host: `api.example.com/conversations/${accepted.json.id}#`,
      }),
      {} as Context,
    );

    expect(result.statusCode).toBe(400);
  });

  it.each<[string, typeof httpHandler, string, number]>([
    ['http', httpHandler, 'POST /conversations', HTTP_LIMIT],
    ['slack', slackHandler, 'POST /slack/events', WEBHOOK_LIMIT],
    ['teams', teamsHandler, 'POST /teams/messages', WEBHOOK_LIMIT],
  ])('%s: refuses an oversized body with 413 before authentication; at the limit it goes on to 401', async (_name, handler, routeKey, limit) => {
    const path = routeKey.split(' ')[1] as string;
    const over = await handler(
      apiEvent(routeKey, path, { body: ' '.repeat(limit + 1), claims: false }),
      {} as Context,
    );
    const declared = await handler(
      apiEvent(routeKey, path, { body: '{}', claims: false, contentLength: limit + 1 }),
      {} as Context,
    );
    const at = await handler(
      apiEvent(routeKey, path, { body: ' '.repeat(limit), claims: false }),
      {} as Context,
    );

    expect(over.statusCode).toBe(413);
    expect(declared.statusCode).toBe(413);
    expect(at.statusCode).toBe(401);
  });
});

describe('Idempotency-Key reused with another body', () => {
  it('refuses a new conversation with 422 and stores nothing; the same body (reformatted) is the same 202', async () => {
    const first = await ask('How do I enable versioning on a bucket?', 'guards-key-0001');
    await server.served.runtime.bus.idle();
    const keys = await server.conversationKeys();

    const other = await ask('How do I delete a bucket?', 'guards-key-0001');
    const same = await raw('POST', '/conversations', {
      headers: {
        authorization: `Bearer ${ALICE}`,
        'content-type': 'application/json',
        'idempotency-key': 'guards-key-0001',
      },
      body: '{ "message" : "How do I enable versioning on a bucket?" }',
    });
    await server.served.runtime.bus.idle();

    expect(first.status).toBe(202);
    expect(other.status).toBe(422);
    expect(other.json.code).toBe('IDEMPOTENCY_CONFLICT');
    expect(same.status).toBe(202);
    expect(same.json).toEqual(first.json);
    expect(await server.conversationKeys()).toEqual(keys);
  });

  it('refuses a follow-up message with 422 when its key came with another text', async () => {
    const started = await ask('How do I enable versioning on a bucket?');
    const path = `/conversations/${started.json.id}/messages`;
    const first = await ask('And how do I suspend it?', 'guards-key-0002', path);
    await server.served.runtime.bus.idle();
    const keys = await server.conversationKeys();

    const other = await ask('And how do I list versions?', 'guards-key-0002', path);
    const again = await ask('And how do I suspend it?', 'guards-key-0002', path);
    await server.served.runtime.bus.idle();

    expect(first.status).toBe(202);
    expect(other.status).toBe(422);
    expect(again.status).toBe(202);
    expect(again.json.message).toBe(first.json.message);
    expect(await server.conversationKeys()).toEqual(keys);
  });
});

describe('Location and statusUrl do not reflect the Host header', () => {
  it('answers a relative Location and a statusUrl on serve’s own address, whatever Host says', async () => {
    const response = await raw('POST', '/conversations', {
      headers: { authorization: `Bearer ${ALICE}`, 'content-type': 'application/json', host: 'evil.example' },
      body: JSON.stringify({ message: 'How do I enable versioning on a bucket?' }),
    });

    expect(response.status).toBe(202);
    expect(response.headers.location).toBe(`/conversations/${response.json.id}`);
    expect(response.json.statusUrl).toBe(`${server.url}/conversations/${response.json.id}`);
    expect(JSON.stringify(response)).not.toContain('evil.example');
  });

  it('builds statusUrl from CLD_PUBLIC_BASE_URL when configured, else from the API’s domain', async () => {
    const channels = getChannels();
    const configured = createHttpApi({
      deps: getDeps,
      channels: () => ({
        ...channels,
        config: { ...channels.config, CLD_PUBLIC_BASE_URL: 'https://api.cld.example/' },
      }),
    });
    const event = apiEvent('POST /conversations', '/conversations', {
      host: 'evil.example',
      body: JSON.stringify({ message: 'How do I enable versioning on a bucket?' }),
    });

    const withBase = await configured.resolve(event, {} as Context);
    const withoutBase = await httpHandler(event, {} as Context);

    for (const result of [withBase, withoutBase]) {
      expect(result.statusCode).toBe(202);
      expect(result.headers?.location).toMatch(/^\/conversations\/[0-9a-f-]{36}$/);
    }
    expect(JSON.parse(withBase.body ?? '{}').statusUrl).toMatch(
      /^https:\/\/api\.cld\.example\/conversations\//,
    );
    expect(JSON.parse(withoutBase.body ?? '{}').statusUrl).toMatch(
      /^https:\/\/api\.example\.com\/conversations\//,
    );
    expect(`${withBase.body}${withoutBase.body}`).not.toContain('evil.example');
    await server.served.runtime.bus.idle();
  });
});
