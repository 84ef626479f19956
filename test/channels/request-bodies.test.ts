/**
 * GET and HEAD requests with a body (issue 22 finding 6), and media types compared
 * case-insensitively, over real HTTP against `serve` (the local gateway builds the API Gateway v2
 * event, the functions' routers answer). `fetch` refuses a GET body, so requests go through
 * node:http.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contractFetch, expectContract } from '../helpers/openapi-contract.js';
import { startTestServe, type TestServe } from './helpers.js';

const TOKEN = 'alice-token-0123456789abcdef';
const OPERATOR = 'ops-token-0123456789abcdef0';

let server: TestServe;

beforeAll(async () => {
  server = await startTestServe({
    CLD_API_TOKENS: JSON.stringify({ [TOKEN]: 'alice', [OPERATOR]: 'ops' }),
    CLD_OPERATOR_SUBJECTS: 'ops',
  });
});

afterAll(async () => {
  await server?.stop();
});

/** One request with a body, whatever the method; resolves with status and body text. */
function send(
  method: string,
  path: string,
  options: { token?: string; body?: string; contentType?: string } = {},
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const body = options.body ?? '';
    const req = request(
      new URL(path, server.url),
      {
        method,
        headers: {
          ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
          ...(body ? { 'content-type': options.contentType ?? 'application/json' } : {}),
          'content-length': String(Buffer.byteLength(body)),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => {
          try {
            expectContract(method, path, res.statusCode ?? 0, res.headers, text);
            resolve({ status: res.statusCode ?? 0, text });
          } catch (error) {
            reject(error);
          }
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const BODIES: [string, string][] = [
  ['a JSON body', '{"hello":"world"}'],
  ['a body that is not JSON', 'not json at all'],
];

describe('GET and HEAD with a body never answer 500', () => {
  it.each(
    BODIES.flatMap(([label, body]) =>
      (
        [
          ['GET', '/', undefined],
          ['HEAD', '/', undefined],
          ['GET', '/console/', undefined],
          ['GET', '/console/app.js', undefined],
          ['GET', '/console/missing.js', undefined],
          ['GET', '/conversations', undefined],
          ['GET', '/conversations', TOKEN],
          ['HEAD', '/conversations', TOKEN],
          ['GET', '/conversations/cld%3Acommon.Conversation.0123456789abcdef', TOKEN],
          ['GET', '/resources/cld%3Acommon.Conversation.0123456789abcdef', TOKEN],
          ['GET', '/tools', OPERATOR],
          ['GET', '/tools', TOKEN],
        ] as const
      ).map(
        ([method, path, token]) =>
          [method, path, token ? 'authenticated' : 'unauthenticated', label, body, token] as [
            string,
            string,
            string,
            string,
            string,
            string | undefined,
          ],
      ),
    ),
  )('%s %s (%s) with %s: the body is ignored', async (method, path, _who, _label, body, token) => {
    const withBody = await send(method, path, { body, ...(token ? { token } : {}) });
    const without = await send(method, path, token ? { token } : {});

    expect(withBody.status).toBeLessThan(500);
    expect(withBody.status).toBe(without.status);
  });

  it('GET / with a body serves the console page, as without one', async () => {
    const page = await send('GET', '/', { body: '{"x":1}', contentType: 'text/plain' });

    expect(page.status).toBe(200);
    expect(page.text).toContain('<html');
  });
});

describe('media types are compared case-insensitively', () => {
  it.each([
    'APPLICATION/JSON; charset=UTF-8',
    'Application/Json',
    'application/json; Charset="utf-8"',
  ])('POST /conversations with Content-Type %s is accepted', async (contentType) => {
    const response = await send('POST', '/conversations', {
      token: TOKEN,
      contentType,
      body: JSON.stringify({ message: 'How do I enable versioning on a bucket?' }),
    });

    expect([response.status, response.text]).toEqual([202, expect.any(String)]);
  });

  it('a media type that is not JSON is still refused with 415 or 400, not 500', async () => {
    const response = await send('POST', '/conversations', {
      token: TOKEN,
      contentType: 'text/plain',
      body: JSON.stringify({ message: 'hello' }),
    });

    expect([400, 415]).toContain(response.status);
  });
});

describe('an Idempotency-Key reused with another body (422) stores nothing', () => {
  async function post(path: string, key: string, message: string) {
    const response = await contractFetch(`${server.url}${path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${TOKEN}`,
        'content-type': 'application/json',
        'idempotency-key': key,
      },
      body: JSON.stringify({ message }),
    });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  }

  /** Every stored key and the open-conversations journal, as bytes. */
  async function everything(): Promise<{ keys: string[]; open: string; projections: string[] }> {
    const dir = join(server.dataDir, 'projections');
    const files = (await readdir(dir)).sort();
    return {
      keys: await server.served.runtime.storage.findByPrefix('cld/'),
      open: await readFile(join(dir, 'open.jsonl'), 'utf8').catch(() => ''),
      projections: await Promise.all(files.map(async (f) => `${f}:${(await stat(join(dir, f))).size}`)),
    };
  }

  it.each([
    ['POST /conversations', async () => '/conversations'],
    [
      'POST /conversations/{id}/messages',
      async () => {
        const started = await post(
          '/conversations',
          `start-${Date.now()}`,
          'How do I enable versioning on a bucket?',
        );
        expect(started.status).toBe(202);
        return `/conversations/${started.json.id as string}/messages`;
      },
    ],
  ])('%s: no resource, no line in projections/open.jsonl, no projection file changed', async (_route, pathOf) => {
    const path = await pathOf();
    const key = `conflict-${Math.random().toString(36).slice(2)}`;
    expect((await post(path, key, 'How do I block public access to a bucket?')).status).toBe(202);
    await server.served.runtime.bus.idle();
    const before = await everything();

    const conflict = await post(path, key, 'Something else entirely');
    await server.served.runtime.bus.idle();

    expect([conflict.status, conflict.json.code]).toEqual([422, 'IDEMPOTENCY_CONFLICT']);
    expect(await everything()).toEqual(before);
  });
});
