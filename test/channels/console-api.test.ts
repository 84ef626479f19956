/**
 * What the web console needs of the HTTP API (issue 15), over real HTTP against `serve`:
 * `GET /conversations` (own conversations only, newest first, with status), the `ETag` of
 * `GET /conversations/{id}` (an unchanged tree costs exactly one 304 per poll), and the console's
 * static routes (no caller needed, no data, security headers); gzip for clients that accept it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { type IncomingHttpHeaders, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Served, startServe } from '../../cli/serve.js';
import { acceptsGzip } from '../../shared/channels/compression.js';
import { type ConversationList, type ConversationView, createCldClient } from '../../shared/client/index.js';
import { parseEnv } from '../../shared/runtime/settings.js';
import { contractChecked, contractFetch } from '../helpers/openapi-contract.js';
import { DOCS, until } from './helpers.js';

const ALICE = 'alice-token-0123456789abcdef';
const BOB = 'bob-token-0123456789abcdef0';

let served: Served;
let dataDir: string;
const lines: string[] = [];

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'cld-console-api-'));
  served = await startServe({
    port: 0,
    dataDir,
    env: { CLD_API_TOKENS: JSON.stringify({ [ALICE]: 'alice', [BOB]: 'bob' }) },
    core: parseEnv({ CLD_DATA_DIR: dataDir }),
    docs: DOCS,
    print: (line) => lines.push(line),
  });
});

afterAll(async () => {
  await served?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

async function call(path: string, token?: string, headers: Record<string, string> = {}, body?: unknown) {
  const response = await contractFetch(`${served.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** The typed client (shared/client/index.ts), as the console calls the API, for `token`'s caller. */
const cld = (token: string) => {
  const client = createCldClient({ baseUrl: served.url, token });
  client.use(contractChecked);
  return client;
};

async function ask(token: string, message: string): Promise<string> {
  const { data, response } = await cld(token).POST('/conversations', { body: { message } });
  expect(response.status).toBe(202);
  return data?.id as string;
}

async function done(token: string, id: string, messages = 1): Promise<ConversationView> {
  return until(async () => {
    const { data: view } = await cld(token).GET('/conversations/{id}', { params: { path: { id } } });
    return view?.status === 'done' && view.messages.length === messages ? view : undefined;
  });
}

async function list(
  token: string,
  query: { limit?: number; after?: string } = {},
): Promise<ConversationList> {
  const { data, response } = await cld(token).GET('/conversations', { params: { query } });
  expect(response.status).toBe(200);
  return data as ConversationList;
}

describe('GET /conversations', () => {
  it('lists the caller’s own conversations, newest first, with status; not another user’s', async () => {
    const first = await ask(ALICE, 'How do I enable versioning on a bucket?');
    await done(ALICE, first);
    const second = await ask(ALICE, 'How do I block public access to a bucket?');
    const bobs = await ask(BOB, 'How do I encrypt a bucket with KMS?');

    const mine = await list(ALICE);
    expect(mine.conversations.map((c) => c.id)).toEqual([second, first]);
    expect(mine.conversations[1]).toMatchObject({
      id: first,
      title: 'How do I enable versioning on a bucket?',
      status: 'done',
      messages: 1,
    });
    await done(ALICE, second);
    expect((await list(ALICE)).conversations.map((c) => c.status)).toEqual(['done', 'done']);
    expect((await list(BOB)).conversations.map((c) => c.id)).toEqual([bobs]);
    // Not readable either: another caller's id names another conversation.
    expect((await call(`/conversations/${first}`, BOB)).status).toBe(404);
    const urn = (JSON.parse((await call(`/conversations/${first}`, ALICE)).text) as ConversationView).urn;
    expect((await call(`/resources/${encodeURIComponent(urn)}`, BOB)).status).toBe(404);
  });

  it('counts a follow-up as a second message of the same row, done once both are answered', async () => {
    const id = await ask(ALICE, 'How do I add a lifecycle rule?');
    await done(ALICE, id);
    const followUp = await cld(ALICE).POST('/conversations/{id}/messages', {
      params: { path: { id } },
      body: { message: 'And expire old versions?' },
    });
    expect(followUp.response.status).toBe(202);
    const row = (await list(ALICE)).conversations.find((c) => c.id === id);
    expect(row?.messages).toBe(2);
    await done(ALICE, id, 2);
    expect((await list(ALICE)).conversations.find((c) => c.id === id)?.status).toBe('done');
  });

  it('pages with limit and the next cursor', async () => {
    const all = (await list(ALICE)).conversations.map((c) => c.id);
    const first = await list(ALICE, { limit: 1 });
    const second = await list(ALICE, { limit: 1, ...(first.next ? { after: first.next } : {}) });
    expect([...first.conversations, ...second.conversations].map((c) => c.id)).toEqual(all.slice(0, 2));
  });

  it.each([
    ['a limit of 0', '?limit=0', 400],
    ['an unknown parameter', '?sort=asc', 400],
    ['a cursor it did not make', '?after=bm90LWEta2V5', 400],
  ])('refuses %s', async (_, query, status) => {
    expect((await call(`/conversations${query}`, ALICE)).status).toBe(status);
  });

  it('refuses a caller without a token', async () => {
    expect((await call('/conversations')).status).toBe(401);
  });
});

describe('GET /conversations/{id}: conditional polling', () => {
  it('answers an unchanged tree with one 304 per poll, and a changed one with 200 and a new ETag', async () => {
    const id = await ask(ALICE, 'How do I send S3 object events to EventBridge?');
    await done(ALICE, id);
    const full = await call(`/conversations/${id}`, ALICE);
    const etag = full.headers.get('etag') ?? '';
    // Weak: fetch accepts gzip, and the body went out gzipped (see the compression tests below).
    expect(etag).toMatch(/^W\/"[A-Za-z0-9_-]{22}"$/);
    expect(full.headers.get('cache-control')).toBe('private, no-cache');
    const before = lines.filter((l) => l.startsWith(`GET /conversations/${id} `)).length;

    const polls = [];
    for (let i = 0; i < 3; i++)
      polls.push(await call(`/conversations/${id}`, ALICE, { 'if-none-match': etag }));

    expect(polls.map((p) => [p.status, p.text, p.headers.get('etag')])).toEqual([
      [304, '', etag],
      [304, '', etag],
      [304, '', etag],
    ]);
    // Each poll was exactly one request, answered 304.
    expect(lines.filter((l) => l.startsWith(`GET /conversations/${id} `)).slice(before)).toEqual([
      expect.stringMatching(/ 304 /),
      expect.stringMatching(/ 304 /),
      expect.stringMatching(/ 304 /),
    ]);
    expect((await call(`/conversations/${id}`, ALICE, { 'if-none-match': etag.slice(2) })).status).toBe(304);
    expect((await call(`/conversations/${id}`, ALICE, { 'if-none-match': '"other"' })).status).toBe(200);

    await call(`/conversations/${id}/messages`, ALICE, {}, { message: 'And for one prefix only?' });
    const changed = await call(`/conversations/${id}`, ALICE, { 'if-none-match': etag });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
    await done(ALICE, id, 2);
  });

  it('does not answer 304 to another user holding the ETag', async () => {
    const id = await ask(ALICE, 'How do I grant read access to a bucket?');
    const etag = (await call(`/conversations/${id}`, ALICE)).headers.get('etag') ?? '';
    expect((await call(`/conversations/${id}`, BOB, { 'if-none-match': etag })).status).toBe(404);
    await done(ALICE, id);
  });

  it('carries what the console shows: calls with results, usage, times, runner-up, criteria, timeline, budget', async () => {
    const id = await ask(ALICE, 'How do I enable server access logging?');
    const view = await done(ALICE, id);
    const [turn] = view.messages;
    const leaf = turn?.tasks[0];
    expect(leaf?.evaluation).not.toBe('');
    expect(leaf?.times.queuedAt).toBeDefined();
    expect(leaf?.times.finishedAt).toBeDefined();
    const tasks = [leaf, ...(leaf?.subtasks ?? [])];
    const call1 = tasks.flatMap((t) => t?.calls ?? [])[0];
    expect(call1).toMatchObject({ name: 'search', result: { status: 'OK' } });
    expect(call1?.result?.bytes).toBeGreaterThan(0);
    expect(turn?.timeline.map((s) => s.kind)).toEqual(
      expect.arrayContaining(['plan', 'task', 'tool', 'answer']),
    );
    expect(turn?.timeline.every((s) => s.outcome === 'ok')).toBe(true);
    expect(view.budget.used.toolCalls).toBeGreaterThan(0);
    expect(view.budget.limits.toolCalls).toBeGreaterThan(0);
  });
});

describe('the console’s static routes', () => {
  it('serves the page without a token, with a CSP and no data', async () => {
    const page = await call('/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.text).not.toMatch(/https?:\/\//); // no CDN, nothing external
    const script = /src="\/console\/(main-[A-Z0-9]{8}\.js)"/.exec(page.text)?.[1];
    expect(script).toBeDefined();

    const js = await call(`/console/${script}`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect((await call('/', undefined, { 'if-none-match': page.headers.get('etag') ?? '' })).status).toBe(
      304,
    );
    expect(JSON.parse((await call('/console/config.json')).text)).toEqual({ kind: 'token' });
  });

  it.each([
    ['an unknown file', '/console/nope.js', 404],
    ['an encoded slash in the name', '/console/x%2Findex.html', 404],
    ['a file type it does not serve', '/console/secrets.txt', 404],
  ])('refuses %s', async (_, path, status) => {
    expect((await call(path)).status).toBe(status);
  });
});

/** One GET with node:http, which neither asks for nor undoes a content coding on its own. */
function rawGet(
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(`${served.url}${path}`, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('response compression (Lambda returns at most 6 MB)', () => {
  it('gzips the conversation view for a client that accepts gzip; the same JSON, weak ETag, Vary', async () => {
    const id = await ask(ALICE, 'How do I block public access to a bucket?');
    await done(ALICE, id);
    const auth = { authorization: `Bearer ${ALICE}` };

    const plain = await rawGet(`/conversations/${id}`, auth);
    const gzipped = await rawGet(`/conversations/${id}`, {
      ...auth,
      'accept-encoding': 'br;q=1, gzip;q=0.8',
    });

    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
    expect(plain.headers.vary).toMatch(/accept-encoding/i);
    expect(gzipped.status).toBe(200);
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gzipped.headers.etag).toBe(`W/${plain.headers.etag}`);
    expect(gzipped.headers.vary).toMatch(/accept-encoding/i);
    expect(gzipped.body.length).toBeLessThan(plain.body.length / 3);
    expect(JSON.parse(gunzipSync(gzipped.body).toString('utf8'))).toEqual(
      JSON.parse(plain.body.toString('utf8')),
    );
    // The weak tag it got, sent back: one 304, no body.
    const again = await rawGet(`/conversations/${id}`, {
      ...auth,
      'accept-encoding': 'gzip',
      'if-none-match': gzipped.headers.etag as string,
    });
    expect([again.status, again.body.length, again.headers.etag]).toEqual([304, 0, gzipped.headers.etag]);
  });

  it.each([
    ['no Accept-Encoding', {}],
    ['gzip refused (q=0)', { 'accept-encoding': 'gzip;q=0, deflate' }],
    ['identity only', { 'accept-encoding': 'identity' }],
  ])('sends the body as is for %s', async (_label, headers: Record<string, string>) => {
    const response = await rawGet('/', headers);

    expect(response.status).toBe(200);
    expect(response.headers['content-encoding']).toBeUndefined();
    expect(response.body.toString('utf8')).toContain('<!doctype html>');
  });

  it('acceptsGzip reads the header as RFC 9110 §12.5.3 does', () => {
    expect(acceptsGzip(undefined)).toBe(false);
    expect(acceptsGzip('')).toBe(false);
    expect(acceptsGzip('gzip')).toBe(true);
    expect(acceptsGzip('GZIP;q=0.5')).toBe(true);
    expect(acceptsGzip('x-gzip')).toBe(true);
    expect(acceptsGzip('*')).toBe(true);
    expect(acceptsGzip('gzip;q=0')).toBe(false);
    expect(acceptsGzip('gzip;q=0, *')).toBe(false); // the named coding wins over *
    expect(acceptsGzip('*;q=0, gzip')).toBe(true);
    expect(acceptsGzip('*;q=0')).toBe(false);
    expect(acceptsGzip('deflate, br')).toBe(false);
  });
});
