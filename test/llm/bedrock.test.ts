/**
 * The Bedrock adapter driven through the real `BedrockRuntimeClient` (SigV4 signing, awsRestJson1
 * serde, standard retry middleware) against a local node:http stub of `POST /model/{id}/converse`.
 */
import type { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
// @smithy/core is the SDK's own runtime (a dependency of the client); `retry` is where
// @smithy/util-retry lives since @smithy/core 3.x. Used only to make backoff ~10 ms.
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ConfigError, ModelError } from '../../shared/errors.js';
import { BedrockChatModel, createBedrockClient } from '../../shared/llm/bedrock.js';
import type { ConverseRequest, ConverseResponse } from '../../shared/llm/port.js';
import {
  type ConverseStub,
  type ScriptedResponse,
  serviceError,
  startConverseStub,
} from '../helpers/converse-stub.js';

const MODEL_ID = 'us.anthropic.claude-3-5-sonnet-20240620-v1:0';
const MAX_ATTEMPTS = 3;
const REQUEST_TIMEOUT_MS = 300;
const CREDENTIALS = { accessKeyId: 'AKIDTESTEXAMPLE', secretAccessKey: 'fake-secret-key' };

let stub: ConverseStub;
let client: BedrockRuntimeClient;
let model: BedrockChatModel;

beforeEach(async () => {
  stub = await startConverseStub();
  // A fresh client per test: the retry strategy's token bucket is per client.
  client = createBedrockClient({
    region: 'us-east-1',
    endpoint: stub.endpoint,
    credentials: CREDENTIALS,
    maxAttempts: MAX_ATTEMPTS,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    retryStrategy: new ConfiguredRetryStrategy(MAX_ATTEMPTS, () => 10),
  });
  model = new BedrockChatModel({ client, modelId: MODEL_ID, maxAttempts: MAX_ATTEMPTS });
});

afterEach(async () => {
  vi.unstubAllEnvs();
  client.destroy();
  await stub.stop();
});

const USER_TURN: ConverseRequest = { messages: [{ role: 'user', content: [{ text: 'Hello' }] }] };

function ok(body: Partial<Record<string, unknown>>): ScriptedResponse {
  return {
    status: 200,
    body: {
      output: { message: { role: 'assistant', content: [{ text: 'Hi there.' }] } },
      stopReason: 'end_turn',
      usage: { inputTokens: 10, outputTokens: 3, totalTokens: 13 },
      metrics: { latencyMs: 42 },
      ...body,
    },
  };
}

/** Runs `converse` and returns the ModelError it must throw. */
async function expectModelError(request: ConverseRequest = USER_TURN): Promise<ModelError> {
  const error = await model.converse(request).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ModelError);
  return error as ModelError;
}

describe('BedrockChatModel over the real SDK client', () => {
  it('is named after its default model id', () => {
    expect(model.name).toBe(`bedrock:${MODEL_ID}`);
  });

  it('sends a tool-use turn in Converse wire format and maps the toolUse answer', async () => {
    const request: ConverseRequest = {
      system: [{ text: 'You plan tasks.' }],
      messages: [
        { role: 'user', content: [{ text: 'Weather in Paris and Oslo?' }] },
        {
          role: 'assistant',
          content: [
            { text: 'Looking it up.' },
            { toolUse: { toolUseId: 'tu-1', name: 'get_weather', input: { city: 'Paris', units: ['c'] } } },
          ],
        },
        {
          role: 'user',
          content: [
            {
              toolResult: {
                toolUseId: 'tu-1',
                content: [{ text: 'sunny' }, { json: { tempC: 21.5, wind: null, tags: ['dry'] } }],
                status: 'success',
              },
            },
          ],
        },
      ],
      toolConfig: {
        tools: [
          {
            toolSpec: {
              name: 'get_weather',
              description: 'Current weather for a city.',
              inputSchema: {
                json: {
                  type: 'object',
                  properties: {
                    city: { type: 'string' },
                    units: { type: 'array', items: { type: 'string' } },
                  },
                  required: ['city'],
                },
              },
            },
          },
        ],
        toolChoice: { auto: {} },
      },
      inferenceConfig: { maxTokens: 512, temperature: 0.2, topP: 0.9 },
    };
    stub.enqueue(
      ok({
        output: {
          message: {
            role: 'assistant',
            content: [
              { text: 'Now Oslo.' },
              { toolUse: { toolUseId: 'tu-2', name: 'get_weather', input: { city: 'Oslo' } } },
            ],
          },
        },
        stopReason: 'tool_use',
        usage: { inputTokens: 120, outputTokens: 30, totalTokens: 150 },
      }),
    );

    const response = await model.converse(request);

    expect(response).toEqual<ConverseResponse>({
      output: {
        message: {
          role: 'assistant',
          content: [
            { text: 'Now Oslo.' },
            { toolUse: { toolUseId: 'tu-2', name: 'get_weather', input: { city: 'Oslo' } } },
          ],
        },
      },
      stopReason: 'tool_use',
      usage: { inputTokens: 120, outputTokens: 30, totalTokens: 150 },
      metrics: { latencyMs: 42 },
    });
    expect(stub.requests).toHaveLength(1);
    const sent = stub.requests[0]!;
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe(`/model/${encodeURIComponent(MODEL_ID)}/converse`);
    expect(sent.path).toContain('v1%3A0');
    expect(sent.modelId).toBe(MODEL_ID);
    expect(sent.headers['content-type']).toBe('application/json');
    expect(sent.body).toEqual({
      system: request.system,
      messages: request.messages,
      toolConfig: request.toolConfig,
      inferenceConfig: request.inferenceConfig,
    });
  });

  it('signs the request with SigV4 for service "bedrock" in the configured region', async () => {
    stub.enqueue(ok({}));

    await model.converse(USER_TURN);

    const authorization = String(stub.requests[0]?.headers.authorization);
    expect(authorization).toMatch(/^AWS4-HMAC-SHA256 /);
    expect(authorization).toContain(`Credential=${CREDENTIALS.accessKeyId}/`);
    expect(authorization).toMatch(/\/us-east-1\/bedrock\/aws4_request/);
    expect(stub.requests[0]?.headers['x-amz-date']).toMatch(/^\d{8}T\d{6}Z$/);
  });

  it('keeps SigV4 for explicit credentials even when AWS_BEARER_TOKEN_BEDROCK is set', async () => {
    vi.stubEnv('AWS_BEARER_TOKEN_BEDROCK', 'bedrock-api-key-from-env');
    const envClient = createBedrockClient({
      region: 'us-east-1',
      endpoint: stub.endpoint,
      credentials: CREDENTIALS,
    });
    stub.enqueue(ok({}));

    try {
      await new BedrockChatModel({ client: envClient, modelId: MODEL_ID }).converse(USER_TURN);
    } finally {
      envClient.destroy();
    }

    expect(String(stub.requests[0]?.headers.authorization)).toMatch(/^AWS4-HMAC-SHA256 /);
  });

  it('maps an end turn with text, using the request model id over the default', async () => {
    const otherModel = 'anthropic.claude-3-haiku-20240307-v1:0';
    stub.enqueue(ok({}));

    const response = await model.converse({ ...USER_TURN, modelId: otherModel });

    expect(response).toEqual<ConverseResponse>({
      output: { message: { role: 'assistant', content: [{ text: 'Hi there.' }] } },
      stopReason: 'end_turn',
      usage: { inputTokens: 10, outputTokens: 3, totalTokens: 13 },
      metrics: { latencyMs: 42 },
    });
    expect(stub.requests[0]?.modelId).toBe(otherModel);
    expect(stub.requests[0]?.body).toEqual({ messages: USER_TURN.messages });
  });

  it('returns no metrics when the service reports none', async () => {
    stub.enqueue(ok({ metrics: undefined }));

    const response = await model.converse(USER_TURN);

    expect(response).not.toHaveProperty('metrics');
  });

  it('succeeds when throttling (429 ThrottlingException) clears within the SDK retries', async () => {
    stub.enqueue(serviceError('ThrottlingException', 429), serviceError('ThrottlingException', 429), ok({}));

    const response = await model.converse(USER_TURN);

    expect(response.stopReason).toBe('end_turn');
    expect(stub.requests).toHaveLength(3);
    expect(stub.requests.map((r) => r.headers['amz-sdk-request'])).toEqual([
      'attempt=1; max=3',
      'attempt=2; max=3',
      'attempt=3; max=3',
    ]);
    expect(new Set(stub.requests.map((r) => r.headers['amz-sdk-invocation-id'])).size).toBe(1);
  });

  it('throws a retryable ModelError when throttling outlasts the attempts', async () => {
    stub.enqueue(...Array.from({ length: MAX_ATTEMPTS }, () => serviceError('ThrottlingException', 429)));

    const error = await expectModelError();

    expect(error.retryable).toBe(true);
    expect(error.code).toBe('MODEL_ERROR');
    expect(error.message).toContain('ThrottlingException');
    expect(error.message).toContain('after 3 attempts');
    expect(error.details).toMatchObject({
      modelId: MODEL_ID,
      exception: 'ThrottlingException',
      httpStatusCode: 429,
      attempts: 3,
      maxAttempts: 3,
    });
    expect((error.cause as Error).name).toBe('ThrottlingException');
    expect(stub.requests).toHaveLength(3);
  });

  it.each([
    {
      title: 'ServiceUnavailableException (503), retried by the SDK',
      responses: () =>
        Array.from({ length: MAX_ATTEMPTS }, () => serviceError('ServiceUnavailableException', 503)),
      exception: 'ServiceUnavailableException',
      requests: 3,
    },
    {
      title: 'a bare 429 without an error type, retried by the SDK',
      responses: () =>
        Array.from({ length: MAX_ATTEMPTS }, () => ({ status: 429, body: { message: 'slow down' } })),
      exception: 'Unknown',
      requests: 3,
    },
    {
      title: 'ModelTimeoutException (408), which the SDK does not retry',
      responses: () => [serviceError('ModelTimeoutException', 408)],
      exception: 'ModelTimeoutException',
      requests: 1,
    },
    {
      title: 'a client-side request timeout, retried by the SDK',
      responses: () =>
        Array.from({ length: MAX_ATTEMPTS }, () => ({ ...ok({}), delayMs: REQUEST_TIMEOUT_MS * 4 })),
      exception: 'TimeoutError',
      requests: 3,
    },
  ])('throws a retryable ModelError for $title', async ({ responses, exception, requests }) => {
    stub.enqueue(...responses());

    const error = await expectModelError();

    expect(error.retryable).toBe(true);
    expect(error.message).toContain(exception);
    expect(error.details).toMatchObject({ exception, attempts: requests });
    expect(stub.requests).toHaveLength(requests);
  });

  it.each([
    { exception: 'ValidationException', status: 400 },
    { exception: 'AccessDeniedException', status: 403 },
    { exception: 'ResourceNotFoundException', status: 404 },
  ])('throws a non-retryable ModelError naming $exception ($status) without retrying', async ({
    exception,
    status,
  }) => {
    stub.enqueue(serviceError(exception, status, 'The provided model identifier is invalid.'));

    const error = await expectModelError();

    expect(error.retryable).toBe(false);
    expect(error.malformed).toBe(false);
    expect(error.message).toContain(exception);
    expect(error.message).toContain('The provided model identifier is invalid.');
    expect(error.details).toMatchObject({ exception, httpStatusCode: status, attempts: 1 });
    expect(stub.requests).toHaveLength(1);
  });

  const assistant = (content: unknown[]) => ({ output: { message: { role: 'assistant', content } } });
  it.each([
    { title: 'missing output.message', response: ok({ output: {} }), expected: /output\.message/ },
    { title: 'an empty JSON object', response: { body: {} }, expected: /output: .*stopReason: .*usage: / },
    { title: 'an empty body', response: { rawBody: '' }, expected: /output: / },
    { title: 'a body that is not JSON', response: { rawBody: '<html>oops' }, expected: /SyntaxError/ },
    {
      title: 'a content block the port does not support',
      response: ok(assistant([{ reasoningContent: { reasoningText: { text: 'hmm' } } }])),
      expected: /content\.0: unsupported content block: .*got keys "reasoningContent"/,
    },
    {
      title: 'a content block the SDK does not know',
      response: ok(assistant([{ hologram: { frames: 3 } }])),
      expected: /unsupported content block: .*got an unknown "hologram" member/,
    },
    {
      title: 'a block with two members',
      response: ok(assistant([{ text: 'a', toolUse: { toolUseId: 't', name: 'n', input: {} } }])),
      expected: /got keys "text", "toolUse"/,
    },
    {
      title: 'a toolUse without a name',
      response: ok(assistant([{ toolUse: { toolUseId: 't', input: {} } }])),
      expected: /content\.0\.toolUse\.name: /,
    },
    {
      title: 'a toolResult with image content',
      response: ok(assistant([{ toolResult: { toolUseId: 't', content: [{ image: {} }] } }])),
      expected: /unsupported tool result content/,
    },
    { title: 'a bad stopReason', response: ok({ stopReason: 'bored' }), expected: /stopReason: / },
    {
      title: 'a stopReason the SDK knows but the port does not',
      response: ok({ stopReason: 'model_context_window_exceeded' }),
      expected: /stopReason: /,
    },
    { title: 'missing usage', response: ok({ usage: undefined }), expected: /usage: / },
    {
      title: 'token counts as strings',
      response: ok({ usage: { inputTokens: '10', outputTokens: 3, totalTokens: 13 } }),
      expected: /usage\.inputTokens: /,
    },
    {
      title: 'a user-role output message',
      response: ok({ output: { message: { role: 'user', content: [] } } }),
      expected: /output\.message\.role: /,
    },
  ])('throws a non-retryable ModelError for a 200 with $title', async ({ response, expected }) => {
    stub.enqueue(response);

    const error = await expectModelError();

    expect(error.retryable).toBe(false);
    expect(error.malformed).toBe(true);
    expect(error.message).toMatch(/returned a malformed response/);
    expect(error.message).toMatch(expected);
    expect(stub.requests).toHaveLength(1);
  });
});

describe('Bedrock adapter configuration', () => {
  it.each([
    { title: 'zero attempts', options: { maxAttempts: 0 } },
    { title: 'a fractional request timeout', options: { requestTimeoutMs: 1.5 } },
    { title: 'a negative connection timeout', options: { connectionTimeoutMs: -1 } },
    { title: 'an endpoint that is not a URL', options: { endpoint: 'localhost' } },
  ])('createBedrockClient rejects $title with a ConfigError', ({ options }) => {
    expect(() => createBedrockClient(options)).toThrow(ConfigError);
  });

  it.each([
    { title: 'an empty model id', options: { modelId: ' ' } },
    { title: 'zero attempts', options: { modelId: MODEL_ID, maxAttempts: 0 } },
  ])('BedrockChatModel rejects $title with a ConfigError', ({ options }) => {
    const bare = createBedrockClient({ region: 'us-east-1', credentials: CREDENTIALS });
    try {
      expect(() => new BedrockChatModel({ client: bare, ...options })).toThrow(ConfigError);
    } finally {
      bare.destroy();
    }
  });
});
