/**
 * The local gateway answers as API Gateway would when a function returns more than Lambda may
 * (6 MB, LAMBDA_MAX_RESPONSE_BYTES): a 500 to the client and the error to `onError`, where a
 * response just under the limit goes through whole. Real HTTP against startLocalGateway, with a
 * handler that returns a body of the size asked for.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  apiTokens,
  LAMBDA_MAX_RESPONSE_BYTES,
  type LocalGateway,
  ResponseTooLargeError,
  startLocalGateway,
} from '../../shared/runtime/local-gateway.js';

let gateway: LocalGateway;
let size = 0;
const errors: unknown[] = [];

beforeAll(async () => {
  gateway = await startLocalGateway({
    tokens: apiTokens({}),
    handlers: {
      http: async () => ({
        statusCode: 200,
        headers: { 'content-type': 'text/html' },
        body: 'x'.repeat(size),
      }),
    },
    onError: (error) => errors.push(error),
  });
});

afterAll(async () => {
  await gateway?.close();
});

/** Bytes of the serialized result around a body of `n` characters (status, headers, quotes). */
const OVERHEAD = JSON.stringify({
  statusCode: 200,
  headers: { 'content-type': 'text/html' },
  body: '',
}).length;

describe('the local gateway and Lambda’s response limit', () => {
  it('passes a response just under the limit through whole', async () => {
    size = LAMBDA_MAX_RESPONSE_BYTES - OVERHEAD;

    const response = await fetch(`${gateway.url}/`);

    expect(response.status).toBe(200);
    expect((await response.text()).length).toBe(size);
    expect(errors).toEqual([]);
  });

  it('answers 500 to one byte more, and tells onError which function and how large', async () => {
    size = LAMBDA_MAX_RESPONSE_BYTES - OVERHEAD + 1;

    const response = await fetch(`${gateway.url}/`);

    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ code: 'INTERNAL', message: 'internal error' });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(ResponseTooLargeError);
    expect(errors[0]).toMatchObject({ fn: 'http', bytes: LAMBDA_MAX_RESPONSE_BYTES + 1 });
  });
});
