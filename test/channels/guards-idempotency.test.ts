import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Served, startServe } from '../../cli/serve.js';
import { requestFingerprint } from '../../shared/channels/idempotency.js';
import { parseEnv } from '../../shared/runtime/settings.js';
import { contractFetch } from '../helpers/openapi-contract.js';

/**
 * An `Idempotency-Key` reused with another body is refused (422, IETF draft "The Idempotency-Key
 * HTTP Header Field" §2.7) when the bodies differ in a field other than the message text — the
 * assistant or tool hint — on both POST routes; the same body written differently (field order,
 * spacing) is the same request (issue 22, finding 10). Real HTTP through `serve`.
 */

const TOKEN = 'alice-token-0123456789abcdef';
const MESSAGE = 'How do I enable versioning on a bucket?';
let served: Served;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cld-guards-idempotency-'));
  served = await startServe({
    port: 0,
    dataDir: dir,
    env: { CLD_API_TOKENS: JSON.stringify({ [TOKEN]: 'alice' }) },
    core: parseEnv({ CLD_DATA_DIR: dir }),
  });
});

afterAll(async () => {
  await served?.runtime.bus.idle();
  await served?.stop();
  if (dir) await rm(dir, { recursive: true, force: true, maxRetries: 10 });
});

async function post(path: string, body: string, key: string) {
  const response = await contractFetch(`${served.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'idempotency-key': key },
    body,
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

const OTHER_FIELDS: [string, Record<string, string>][] = [
  ['an added tool hint', { message: MESSAGE, tool: 'search' }],
  ['an added assistant hint', { message: MESSAGE, assistant: 'researcher' }],
  ['another tool hint', { message: MESSAGE, tool: 'read' }],
];

describe('Idempotency-Key reused with a body that differs beyond the message', () => {
  it.each(
    OTHER_FIELDS,
  )('POST /conversations refuses %s (422) and keeps the first request', async (_, body) => {
    const key = `conv-${body.tool ?? ''}${body.assistant ?? ''}-key`;
    const first = await post('/conversations', JSON.stringify({ message: MESSAGE, tool: 'graph' }), key);
    expect(first.status).toBe(202);
    const again = await post('/conversations', JSON.stringify(body), key);
    expect(again.status).toBe(422);
    expect(again.json.code).toBe('IDEMPOTENCY_CONFLICT');
    // The first body, written with other spacing and field order, is the same request.
    const same = await post(
      '/conversations',
      `{ "tool" : "graph",  "message": ${JSON.stringify(MESSAGE)} }`,
      key,
    );
    expect(same.status).toBe(202);
    expect(same.json).toEqual(first.json);
  });

  it('POST /conversations/{id}/messages refuses a reuse with another hint (422)', async () => {
    const started = await post(
      '/conversations',
      JSON.stringify({ message: MESSAGE }),
      'conversation-for-messages',
    );
    expect(started.status).toBe(202);
    const path = `/conversations/${started.json.id as string}/messages`;
    const first = await post(path, JSON.stringify({ message: 'And for a whole bucket?' }), 'follow-up-key-1');
    expect(first.status).toBe(202);
    for (const [, extra] of OTHER_FIELDS) {
      const { message: _, ...hints } = extra;
      const again = await post(
        path,
        JSON.stringify({ message: 'And for a whole bucket?', ...hints }),
        'follow-up-key-1',
      );
      expect(again.status, JSON.stringify(hints)).toBe(422);
    }
    const same = await post(path, JSON.stringify({ message: 'And for a whole bucket?' }), 'follow-up-key-1');
    expect(same.json).toEqual(first.json);
  });
});

describe('requestFingerprint', () => {
  it('is the same for the same fields in any order, and differs for any field that differs', () => {
    const base = requestFingerprint({ message: MESSAGE, tool: 'search', assistant: 'researcher' });
    expect(requestFingerprint({ assistant: 'researcher', tool: 'search', message: MESSAGE })).toBe(base);
    expect(
      requestFingerprint({ message: MESSAGE, tool: 'search', assistant: 'researcher', x: undefined }),
    ).toBe(base);
    for (const other of [
      { message: MESSAGE, tool: 'search' },
      { message: MESSAGE, tool: 'read', assistant: 'researcher' },
      { message: MESSAGE, tool: 'search', assistant: 'editor' },
      { message: `${MESSAGE} `, tool: 'search', assistant: 'researcher' },
    ])
      expect(requestFingerprint(other), JSON.stringify(other)).not.toBe(base);
  });
});
