import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as httpHandler } from '../../functions/http/handler.js';
import { httpUser, readCallerResource } from '../../shared/channels/conversations.js';
import { openApiFile } from '../../shared/channels/openapi.js';
import {
  type CldClient,
  type ConversationView,
  createCldClient,
  type TaskView,
} from '../../shared/client/index.js';
import { NotFoundError, PolicyDeniedError } from '../../shared/errors.js';
import { builtinPolicy } from '../../shared/policy/select.js';
import { ResourceIndex } from '../../shared/resources/resource-index.js';
import type { Chunk, Document } from '../../shared/resources/schemas.js';
import { childUrn, isWithin, keyOf, parentOf, urnOfKey } from '../../shared/urn.js';
import { contractChecked, expectContract } from '../helpers/openapi-contract.js';
import { PARTIAL_QUESTION, partialAnswerProblems, UNANSWERED_PART } from '../helpers/partial.js';
import { startTestServe, type TestServe, until } from './helpers.js';

const ALICE = 'alice-token-0123456789abcdef';
const BOB = 'bob-token-0123456789abcdef0';
const QUESTION =
  '1. How do I send S3 object events to EventBridge? 2. How do I grant read access to a bucket?';

let server: TestServe;

beforeAll(async () => {
  server = await startTestServe({ CLD_API_TOKENS: JSON.stringify({ [ALICE]: 'alice', [BOB]: 'bob' }) });
});

afterAll(async () => {
  await server?.stop();
});

async function call(
  method: string,
  path: string,
  options: {
    token?: string;
    body?: string;
    contentType?: string;
    key?: string;
    headers?: Record<string, string>;
  } = {},
): Promise<{ status: number; headers: Headers; json: Record<string, unknown>; text: string }> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      ...(options.key ? { 'idempotency-key': options.key } : {}),
      ...(options.body !== undefined ? { 'content-type': options.contentType ?? 'application/json' } : {}),
      ...options.headers,
    },
    ...(options.body !== undefined ? { body: options.body } : {}),
  });
  const text = await response.text();
  expectContract(method, path, response.status, response.headers, text);
  return { status: response.status, headers: response.headers, json: text ? JSON.parse(text) : {}, text };
}

/**
 * The typed client (shared/client/index.ts: openapi-fetch over the types generated from
 * openapi.json) as `token`'s caller, its responses checked against the document. Well-formed
 * calls go through it; `call` stays for what a typed client cannot send (malformed bodies, raw
 * paths, wrong media types).
 */
function cld(token?: string): CldClient {
  const client = createCldClient({ baseUrl: server.url, ...(token ? { token } : {}) });
  client.use(contractChecked);
  return client;
}

async function ask(token: string, message: string) {
  const { data, response } = await cld(token).POST('/conversations', { body: { message } });
  expect(response.status).toBe(202);
  return data as NonNullable<typeof data>;
}

/** The conversation's view once `check` accepts it (polled). */
async function viewWhen(
  token: string,
  id: string,
  check: (view: ConversationView) => boolean,
  timeoutMs?: number,
): Promise<ConversationView> {
  const client = cld(token);
  return until(async () => {
    const { data } = await client.GET('/conversations/{id}', { params: { path: { id } } });
    return data && check(data) ? data : undefined;
  }, timeoutMs);
}

async function answered(token: string, id: string, messages = 1): Promise<ConversationView> {
  return viewWhen(token, id, (view) => view.messages.length === messages && view.status === 'done');
}

function flatten(tasks: readonly TaskView[]): TaskView[] {
  return tasks.flatMap((task) => [task, ...flatten(task.subtasks)]);
}

describe('HTTP API over real HTTP against serve', () => {
  it('answers a question: 202 with a status URL, then the task tree and the answer with citations', async () => {
    const accepted = await ask(ALICE, QUESTION);
    expect(accepted.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(accepted.statusUrl).toBe(`${server.url}/conversations/${accepted.id}`);
    expect(accepted.conversation).toMatch(/^cld:common\.Conversation\.[0-9a-f]{16}$/);

    const view = await answered(ALICE, accepted.id);

    expect(view.urn).toBe(accepted.conversation);
    expect(view.channel).toBe('http');
    const [turn] = view.messages;
    expect(turn?.content).toBe(QUESTION);
    expect(turn?.plan?.tasks).toBe(1);
    const tasks = flatten(turn?.tasks ?? []);
    expect(tasks).toHaveLength(3);
    expect(tasks.every((t) => t.status === 'done')).toBe(true);
    expect(turn?.tasks[0]?.assistant).toBe('coordinator');
    expect(turn?.tasks[0]?.verdicts.at(-1)?.pass).toBe(true);
    expect(turn?.tasks[0]?.subtasks.map((t) => t.assistant)).toEqual(['researcher', 'researcher']);
    expect(view.answer?.content).toMatch(/EventBridge/);
    expect(view.answer?.citations.length).toBeGreaterThanOrEqual(2);
    for (const citation of view.answer?.citations ?? [])
      expect(citation).toMatch(/^cld:doc\.Document\.[0-9a-f]{16}\/doc\.Chunk\.[0-9a-f]{16}$/);
    // Each citation has its label (issue 21 item 4): document › heading, in the citations' order;
    // the Sources block shows the labels, not the URNs.
    const sources = view.answer?.sources ?? [];
    expect(sources.map((s) => s.urn)).toEqual(view.answer?.citations);
    for (const source of sources) expect(source.label).toMatch(/^aws-s3 README › \S/);
    const block = view.answer?.content.slice(view.answer.content.indexOf('\n\nSources:\n')) ?? '';
    expect(block.split('\n').slice(3)).toEqual([...new Set(sources.map((s) => `- ${s.label}`))]);
    expect(block).not.toMatch(/cld:/);
    for (const leaf of tasks.filter((t) => t.subtasks.length === 0)) {
      expect(leaf.sources.length).toBeGreaterThanOrEqual(1);
      expect(leaf.sources.map((s) => s.urn)).toEqual(leaf.citations);
    }
  });

  it('ends a 3-part question whose third part the corpus cannot answer `partial`, parts 1–2 in the answer', async () => {
    const accepted = await ask(ALICE, PARTIAL_QUESTION);

    const view = await viewWhen(
      ALICE,
      accepted.id,
      (got) => ['done', 'partial', 'failed'].includes(got.status),
      60_000,
    );

    expect(view.status).toBe('partial');
    const [turn] = view.messages;
    expect(turn?.status).toBe('partial');
    expect(view.answer?.status).toBe('partial');
    expect(view.answer?.error).toBeUndefined();
    expect(partialAnswerProblems(view.answer?.content ?? '')).toEqual([]);
    expect(view.answer?.unanswered).toHaveLength(1);
    expect(view.answer?.unanswered?.[0]?.title).toMatch(UNANSWERED_PART);
    // The judge names what is missing; a corrective round that finds nothing new ends the rounds early.
    expect(view.answer?.unanswered?.[0]?.reason).toMatch(/^cites no source/);
    // The root task is partial; the parts that passed are done; the last try of part 3 is failed by its verdict.
    const root = turn?.tasks[0] as TaskView;
    expect(root.status).toBe('partial');
    expect(root.unanswered).toEqual(view.answer?.unanswered);
    expect(root.verdicts.length).toBeGreaterThanOrEqual(2);
    expect(root.verdicts.every((v) => !v.pass)).toBe(true);
    const planned = root.subtasks.filter((t) => t.round === 0);
    expect(planned.map((t) => t.status)).toEqual(['done', 'done', 'done']);
    expect(view.answer?.citations.length).toBeGreaterThanOrEqual(2);
    // The list of conversations says the same.
    const { data: list } = await cld(ALICE).GET('/conversations');
    expect(list?.conversations.find((c) => c.id === accepted.id)?.status).toBe('partial');
  }, 90_000);

  it('continues a conversation: a second message is planned and answered on its own', async () => {
    const accepted = await ask(ALICE, 'How do I send S3 object events to EventBridge?');
    await answered(ALICE, accepted.id);

    const next = await cld(ALICE).POST('/conversations/{id}/messages', {
      params: { path: { id: accepted.id } },
      body: { message: 'How do I enable versioning on a bucket?' },
    });
    expect(next.response.status).toBe(202);
    expect(next.data?.conversation).toBe(accepted.conversation);

    const view = await answered(ALICE, accepted.id, 2);
    expect(view.messages.map((m) => m.status)).toEqual(['done', 'done']);
    expect(view.answer?.urn).toBe(view.messages[1]?.answer?.urn);
    expect(view.answer?.content.toLowerCase()).toContain('version');
  });

  it('returns one resource of the caller’s conversation, with the slashes of the URN encoded or not', async () => {
    const accepted = await ask(ALICE, 'How do I block public access to a bucket?');
    const view = await answered(ALICE, accepted.id);
    const urn = view.answer?.urn as string;

    const encoded = await cld(ALICE).GET('/resources/{urn}', { params: { path: { urn } } });
    const raw = await call('GET', `/resources/${urn}`, { token: ALICE });

    expect(encoded.response.status).toBe(200);
    expect(encoded.data?.meta.id).toBe(urn);
    expect(encoded.data?.content).toBe(view.answer?.content);
    expect(raw.json).toEqual(encoded.data);
  });

  it('shows callers only their own conversations: another caller gets 404 and stores nothing', async () => {
    const accepted = await ask(ALICE, 'How do I encrypt a bucket with KMS?');
    const view = await answered(ALICE, accepted.id);
    const before = await server.conversationKeys();

    const bob = cld(BOB);
    const read = await bob.GET('/conversations/{id}', { params: { path: { id: accepted.id } } });
    const resource = await bob.GET('/resources/{urn}', {
      params: { path: { urn: view.answer?.urn as string } },
    });
    const root = await bob.GET('/resources/{urn}', { params: { path: { urn: accepted.conversation } } });
    const write = await bob.POST('/conversations/{id}/messages', {
      params: { path: { id: accepted.id } },
      body: { message: 'let me in' },
    });

    for (const { response, error } of [read, resource, root, write]) {
      expect(response.status).toBe(404);
      expect(error?.code).toBe('NOT_FOUND');
    }
    expect(await server.conversationKeys()).toEqual(before);
  });

  it('opens the chunks an answer cites, for any caller, while conversations stay private', async () => {
    const accepted = await ask(ALICE, 'How do I send S3 object events to EventBridge?');
    const view = await answered(ALICE, accepted.id);
    const citations = view.answer?.citations ?? [];
    expect(citations.length).toBeGreaterThanOrEqual(1);
    const [first] = citations as [string];
    const stored = JSON.parse(
      (await server.served.runtime.storage.get(keyOf(first))).toString('utf8'),
    ) as Chunk;
    const before = await server.conversationKeys();

    const encoded = await call('GET', `/resources/${encodeURIComponent(first)}`, { token: ALICE });
    const raw = await call('GET', `/resources/${first}`, { token: ALICE });
    const document = await call('GET', `/resources/${parentOf(first)}`, { token: ALICE });
    const byBob = await call('GET', `/resources/${encodeURIComponent(first)}`, { token: BOB });
    const bobsAnswer = await call('GET', `/resources/${encodeURIComponent(view.answer?.urn as string)}`, {
      token: BOB,
    });
    const bobsRoot = await call('GET', `/resources/${accepted.conversation}`, { token: BOB });

    expect(encoded.status).toBe(200);
    expect(encoded.json.meta).toMatchObject({ id: first, type: 'doc.Chunk' });
    expect(encoded.json.text).toBe(stored.text);
    expect(String(encoded.json.text).length).toBeGreaterThan(0);
    expect(raw.json).toEqual(encoded.json);
    expect(document.status).toBe(200);
    expect(document.json.meta).toMatchObject({ id: parentOf(first), type: 'doc.Document' });
    expect((document.json as unknown as Document).chunks).toBeGreaterThan(stored.index);
    // Corpora are shared: another caller opens the same citation...
    expect(byBob.status).toBe(200);
    expect(byBob.json).toEqual(encoded.json);
    // ...but still cannot read the conversation whose answer cited it.
    for (const response of [bobsAnswer, bobsRoot]) {
      expect(response.status).toBe(404);
      expect(response.json).toEqual({ code: 'NOT_FOUND', message: 'conversation not found' });
    }
    expect(await server.conversationKeys()).toEqual(before);
  });

  it('answers 404 for corpus URNs that name nothing readable: a missing document or chunk, a URN below a chunk', async () => {
    const chunk = (await server.served.runtime.storage.findByPrefix('cld/doc.Document.'))
      .map((key) => urnOfKey(key) as string)
      .find((urn) => urn.includes('/doc.Chunk.')) as string;
    expect(chunk).toBeDefined();
    const document = parentOf(chunk) as string;
    const urns = {
      missingDocument: childUrn(undefined, 'doc.Document', 'never-ingested.md'),
      missingChunk: childUrn(document, 'doc.Chunk', 'no-such-chunk'),
      belowChunk: childUrn(chunk, 'doc.Chunk', 'deeper'),
      otherChild: childUrn(document, 'common.Message', 'not-a-chunk'),
    };

    const responses = await Promise.all(
      Object.values(urns).map((urn) => call('GET', `/resources/${encodeURIComponent(urn)}`, { token: BOB })),
    );

    expect(responses.map((r) => r.status)).toEqual([404, 404, 404, 404]);
    for (const response of responses) expect(response.json.code).toBe('NOT_FOUND');
    // The first two pass the policy and are missing from storage; the last two are denied by the
    // policy (the edge reports a denial as a bare NOT_FOUND, so nothing can be probed).
    expect(responses.map((r) => r.json.message)).toEqual([
      'resource not found',
      'resource not found',
      'not found',
      'not found',
    ]);
  });

  it('reads citations through the policy gate: the http bundle grants get of a chunk, the slack bundle does not', async () => {
    const accepted = await ask(ALICE, 'How do I grant read access to a bucket?');
    const view = await answered(ALICE, accepted.id);
    const citation = view.answer?.citations[0] as string;
    const storage = server.served.runtime.storage;
    const http = new ResourceIndex(storage, builtinPolicy('http'));
    const slack = new ResourceIndex(storage, builtinPolicy('slack'));

    const chunk = await readCallerResource(http, httpUser('bob'), citation);
    const denied = await readCallerResource(slack, httpUser('bob'), citation).catch(
      (error: unknown) => error,
    );
    const foreign = await readCallerResource(http, httpUser('bob'), accepted.conversation).catch(
      (error: unknown) => error,
    );
    const own = await readCallerResource(http, httpUser('alice'), accepted.conversation);

    expect(chunk.meta).toMatchObject({ id: citation, type: 'doc.Chunk' });
    expect(denied).toBeInstanceOf(PolicyDeniedError);
    expect((denied as PolicyDeniedError).details?.reason).toBe(
      `no rule allows user http:bob to get ${citation}`,
    );
    expect(foreign).toBeInstanceOf(NotFoundError);
    expect(own.meta.id).toBe(accepted.conversation);
  });

  it('serves its OpenAPI document at GET /openapi.json without a caller: the committed bytes, cacheable, 304 when unchanged', async () => {
    const first = await call('GET', '/openapi.json');
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toMatch(/^application\/json/);
    expect(first.text).toBe(openApiFile().body);
    expect(first.headers.get('cache-control')).toMatch(/^public, max-age=\d+/);
    const etag = first.headers.get('etag') as string;
    expect(etag).toMatch(/^(W\/)?"[A-Za-z0-9_-]+"$/);

    const again = await call('GET', '/openapi.json', { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
  });

  it('stores nothing new for a POST retried with the same Idempotency-Key', async () => {
    const body = { message: 'How do I enable versioning on a bucket?' };
    const params = { header: { 'Idempotency-Key': 'retry-key-0001' } };
    const first = await cld(ALICE).POST('/conversations', { params, body });
    await answered(ALICE, first.data?.id as string);
    const keys = await server.conversationKeys();

    const again = await cld(ALICE).POST('/conversations', { params, body });
    const bobs = await cld(BOB).POST('/conversations', { params, body });
    await server.served.runtime.bus.idle();

    expect(again.response.status).toBe(202);
    expect(again.data).toEqual(first.data);
    expect(bobs.data?.conversation).not.toBe(first.data?.conversation);
    const added = (await server.conversationKeys()).filter((k) => !keys.includes(k));
    expect(added.every((k) => isWithin(urnOfKey(k) as string, bobs.data?.conversation as string))).toBe(true);
  });

  const big = JSON.stringify({ message: 'x'.repeat(70_000) });
  it.each<
    [
      string,
      string,
      string,
      { token?: string; body?: string; contentType?: string; key?: string },
      number,
      string,
    ]
  >([
    ['malformed JSON', 'POST', '/conversations', { body: '{"message": "hi"' }, 400, 'VALIDATION'],
    [
      'an unknown field',
      'POST',
      '/conversations',
      { body: '{"message":"hi","priority":1}' },
      400,
      'VALIDATION',
    ],
    ['an empty message', 'POST', '/conversations', { body: '{"message":"   "}' }, 400, 'VALIDATION'],
    [
      'a message that is not a string',
      'POST',
      '/conversations',
      { body: '{"message":42}' },
      400,
      'VALIDATION',
    ],
    ['a JSON array', 'POST', '/conversations', { body: '["hi"]' }, 400, 'VALIDATION'],
    [
      'an assistant hint not in the catalog',
      'POST',
      '/conversations',
      { body: '{"message":"hi","assistant":"oracle"}' },
      400,
      'VALIDATION',
    ],
    [
      'a tool hint not in the catalog',
      'POST',
      '/conversations',
      { body: '{"message":"hi","tool":"shell"}' },
      400,
      'VALIDATION',
    ],
    ['an oversized body (70 KB > 64 KiB)', 'POST', '/conversations', { body: big }, 413, 'PAYLOAD_TOO_LARGE'],
    [
      'a form body',
      'POST',
      '/conversations',
      { body: 'message=hi', contentType: 'application/x-www-form-urlencoded' },
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    ],
    ['an id that is not a UUID', 'GET', '/conversations/not-a-uuid', {}, 400, 'VALIDATION'],
    ['an unknown id', 'GET', '/conversations/6f1c1a44-1f34-4d7a-9f0e-3f6f3c1a2b3c', {}, 404, 'NOT_FOUND'],
    [
      'a message to an unknown id',
      'POST',
      '/conversations/6f1c1a44-1f34-4d7a-9f0e-3f6f3c1a2b3c/messages',
      { body: '{"message":"hi"}' },
      404,
      'NOT_FOUND',
    ],
    ['an invalid URN', 'GET', '/resources/cld:common.Conversation.xyz', {}, 400, 'INVALID_URN'],
    [
      'a URN with a ".." element',
      'GET',
      '/resources/cld:common.Conversation.0123456789abcdef%2F..',
      {},
      400,
      'INVALID_URN',
    ],
    [
      'a document that does not exist',
      'GET',
      '/resources/cld:doc.Document.0123456789abcdef',
      {},
      404,
      'NOT_FOUND',
    ],
    [
      'a URN neither in a conversation nor in a corpus (the catalog)',
      'GET',
      '/resources/cld:common.Assistant.0123456789abcdef',
      {},
      404,
      'NOT_FOUND',
    ],
    ['a malformed percent-encoding', 'GET', '/resources/%E0%A4%A', {}, 400, 'VALIDATION'],
    ['an unknown route', 'DELETE', '/conversations', {}, 404, 'NOT_FOUND'],
    [
      'no bearer token',
      'GET',
      '/conversations/6f1c1a44-1f34-4d7a-9f0e-3f6f3c1a2b3c',
      { token: '' },
      401,
      'UNAUTHORIZED',
    ],
    [
      'an Idempotency-Key with spaces',
      'POST',
      '/conversations',
      { body: '{"message":"hi"}', key: 'not a key' },
      400,
      'VALIDATION',
    ],
    [
      'an unknown bearer token',
      'POST',
      '/conversations',
      { token: 'not-a-known-token-123456', body: '{"message":"hi"}' },
      401,
      'UNAUTHORIZED',
    ],
  ])('rejects %s with the right 4xx and {code, message}, storing nothing', async (_label, method, path, options, status, code) => {
    const before = await server.conversationKeys();

    const response = await call(method, path, { token: ALICE, ...options });

    expect(response.status).toBe(status);
    expect(Object.keys(response.json).sort()).toEqual(['code', 'message']);
    expect(response.json.code).toBe(code);
    expect(String(response.json.message)).not.toMatch(/\n\s+at /);
    expect(await server.conversationKeys()).toEqual(before);
  });

  it('rejects, in the handler itself, an event without JWT claims (no authorizer ran)', async () => {
    const event = {
      version: '2.0',
      routeKey: 'POST /conversations',
      rawPath: '/conversations',
      rawQueryString: '',
      headers: { 'content-type': 'application/json', host: 'api.example.com' },
      requestContext: {
        accountId: '123456789012',
        apiId: 'api',
        domainName: 'api.example.com',
        domainPrefix: 'api',
        http: {
          method: 'POST',
          path: '/conversations',
          protocol: 'HTTP/1.1',
          sourceIp: '10.0.0.1',
          userAgent: 'test',
        },
        requestId: 'r1',
        routeKey: 'POST /conversations',
        stage: '$default',
        time: '21/Nov/2026:10:00:00 +0000',
        timeEpoch: 1_795_000_000_000,
      },
      body: '{"message":"hi"}',
      isBase64Encoded: false,
    } satisfies APIGatewayProxyEventV2;
    const before = await server.conversationKeys();

    const result = await httpHandler(event, {} as Context);

    expect(result.statusCode).toBe(401);
    expect(JSON.parse(result.body ?? '{}')).toEqual({
      code: 'UNAUTHORIZED',
      message: 'missing or invalid credentials',
    });
    expect(await server.conversationKeys()).toEqual(before);
  });
});
