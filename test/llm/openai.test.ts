/**
 * The OpenAI-compatible adapter driven over real HTTP (Node's fetch) against a local stub of
 * `POST /v1/chat/completions` on 127.0.0.1.
 *
 * Deterministic on a busy machine (issue 23): the model of most tests has a client timeout of
 * {@link TIMEOUT_MS} (a cold first request on a loaded 2-core machine took over 300 ms, was retried,
 * and found the stub's only scripted answer gone); the timeout and retry path is tested with a
 * short-timeout model against a stub that never answers ({@link ScriptedChatResponse} `hang`), so
 * no test races a delay against a timer.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ConfigError, ModelError } from '../../shared/errors.js';
import { OpenAIChatModel } from '../../shared/llm/openai.js';
import type { ConverseRequest } from '../../shared/llm/port.js';
import {
  chatError,
  completion,
  type OpenAIStub,
  type ScriptedChatResponse,
  startOpenAIStub,
} from '../helpers/openai-stub.js';

const MODEL = 'qwen2.5:7b-instruct';
/** Client timeout of most tests: far above any answer of the local stub, even at load 20. */
const TIMEOUT_MS = 30_000;
/** Client timeout of the tests of the timeout itself, whose stub never answers. */
const SHORT_TIMEOUT_MS = 300;

let stub: OpenAIStub;
let model: OpenAIChatModel;

beforeEach(async () => {
  stub = await startOpenAIStub();
  model = new OpenAIChatModel({
    baseUrl: stub.baseUrl,
    modelId: MODEL,
    maxAttempts: 3,
    timeoutMs: TIMEOUT_MS,
    backoffMs: 5,
  });
});

afterEach(async () => {
  await stub.stop();
});

const SEARCH_SPEC = {
  name: 'search',
  description: 'Full-text search.',
  inputSchema: { json: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } },
};

/** A request with every mapped feature: system, tools, a tool round trip, inference config. */
const FULL: ConverseRequest = {
  system: [{ text: 'You are a researcher.' }, { text: 'Cite URNs.' }],
  messages: [
    { role: 'user', content: [{ text: 'How do I version a bucket?' }] },
    {
      role: 'assistant',
      content: [
        { text: 'Searching.' },
        { toolUse: { toolUseId: 'call_a', name: 'search', input: { query: 'bucket versioning' } } },
      ],
    },
    {
      role: 'user',
      content: [
        {
          toolResult: {
            toolUseId: 'call_a',
            content: [{ json: { results: [{ urn: 'cld:doc.Document.0123456789abcdef' }] } }],
          },
        },
        { toolResult: { toolUseId: 'call_b', content: [{ text: 'no such chunk' }], status: 'error' } },
      ],
    },
  ],
  toolConfig: { tools: [{ toolSpec: SEARCH_SPEC }], toolChoice: { any: {} } },
  inferenceConfig: { maxTokens: 512, temperature: 0.2, topP: 0.9 },
};

describe('OpenAIChatModel request mapping', () => {
  it('sends system, messages, tool calls, tool results, tools and tool_choice in Chat Completions shapes', async () => {
    stub.enqueue(completion({ content: 'Use versioned: true.' }));
    await model.converse(FULL);
    expect(stub.requests).toHaveLength(1);
    const request = stub.requests[0];
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe('/v1/chat/completions');
    expect(request?.headers['content-type']).toBe('application/json');
    expect(request?.headers.authorization).toBeUndefined();
    expect(request?.body).toEqual({
      model: MODEL,
      stream: false,
      messages: [
        { role: 'system', content: 'You are a researcher.\n\nCite URNs.' },
        { role: 'user', content: 'How do I version a bucket?' },
        {
          role: 'assistant',
          content: 'Searching.',
          tool_calls: [
            {
              id: 'call_a',
              type: 'function',
              function: { name: 'search', arguments: '{"query":"bucket versioning"}' },
            },
          ],
        },
        {
          role: 'tool',
          tool_call_id: 'call_a',
          content: '{"results":[{"urn":"cld:doc.Document.0123456789abcdef"}]}',
        },
        { role: 'tool', tool_call_id: 'call_b', content: 'Error: no such chunk' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'search',
            description: 'Full-text search.',
            parameters: SEARCH_SPEC.inputSchema.json,
          },
        },
      ],
      tool_choice: 'required',
      max_tokens: 512,
      temperature: 0.2,
      top_p: 0.9,
    });
  });

  it.each([
    [{ auto: {} }, 'auto'],
    [{ tool: { name: 'search' } }, { type: 'function', function: { name: 'search' } }],
  ] as const)('maps toolChoice %j to tool_choice %j', async (toolChoice, expected) => {
    stub.enqueue(completion());
    await model.converse({
      messages: [{ role: 'user', content: [{ text: 'hi' }] }],
      toolConfig: { tools: [{ toolSpec: SEARCH_SPEC }], toolChoice },
    });
    expect((stub.requests[0]?.body as { tool_choice: unknown }).tool_choice).toEqual(expected);
  });

  it('sends the API key as a bearer token and a request model id over the default', async () => {
    const keyed = new OpenAIChatModel({ baseUrl: `${stub.baseUrl}/`, modelId: MODEL, apiKey: 'sk-local' });
    stub.enqueue(completion());
    await keyed.converse({ modelId: 'other-model', messages: [{ role: 'user', content: [{ text: 'hi' }] }] });
    expect(stub.requests[0]?.path).toBe('/v1/chat/completions');
    expect(stub.requests[0]?.headers.authorization).toBe('Bearer sk-local');
    expect((stub.requests[0]?.body as { model: string }).model).toBe('other-model');
    expect(keyed.name).toBe(`openai:${MODEL}`);
  });
});

describe('OpenAIChatModel response mapping', () => {
  it('maps tool calls to toolUse blocks with parsed input and stop reason tool_use', async () => {
    stub.enqueue(
      completion({
        content: 'Let me search.',
        toolCalls: [
          { id: 'call_1', name: 'search', arguments: '{"query":"S3 EventBridge"}' },
          { id: 'call_2', name: 'read', arguments: '' },
        ],
        usage: { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 },
      }),
    );
    const response = await model.converse(FULL);
    expect(response.output.message).toEqual({
      role: 'assistant',
      content: [
        { text: 'Let me search.' },
        { toolUse: { toolUseId: 'call_1', name: 'search', input: { query: 'S3 EventBridge' } } },
        { toolUse: { toolUseId: 'call_2', name: 'read', input: {} } },
      ],
    });
    expect(response.stopReason).toBe('tool_use');
    expect(response.usage).toEqual({ inputTokens: 120, outputTokens: 30, totalTokens: 150 });
    expect(response.metrics?.latencyMs).toBeGreaterThanOrEqual(0);
  });

  it('says tool_use when a server reports finish_reason "stop" with tool calls (Ollama)', async () => {
    stub.enqueue(
      completion({ toolCalls: [{ name: 'search', arguments: '{"query":"x"}' }], finishReason: 'stop' }),
    );
    const response = await model.converse(FULL);
    expect(response.stopReason).toBe('tool_use');
    expect(response.output.message.content).toEqual([
      { toolUse: { toolUseId: 'call_1', name: 'search', input: { query: 'x' } } },
    ]);
  });

  it.each([
    ['stop', 'end_turn'],
    ['length', 'max_tokens'],
    ['content_filter', 'content_filtered'],
    ['something_new', 'end_turn'],
  ])('maps finish_reason %s without tool calls to %s', async (finishReason, stopReason) => {
    stub.enqueue(completion({ content: 'Done.', finishReason }));
    const response = await model.converse(FULL);
    expect(response.stopReason).toBe(stopReason);
    expect(response.output.message.content).toEqual([{ text: 'Done.' }]);
  });

  it('estimates usage when the server reports none', async () => {
    stub.enqueue(completion({ content: 'An answer of a few words.', usage: null }));
    const response = await model.converse(FULL);
    expect(response.usage.inputTokens).toBeGreaterThan(50);
    expect(response.usage.outputTokens).toBeGreaterThan(3);
    expect(response.usage.totalTokens).toBe(response.usage.inputTokens + response.usage.outputTokens);
  });
});

describe('OpenAIChatModel malformed output', () => {
  it('fails a tool call whose arguments are not JSON with a clear, non-retryable error keeping the arguments', async () => {
    const raw = '{"query": "S3 events to EventBridge';
    stub.enqueue(completion({ toolCalls: [{ id: 'call_9', name: 'search', arguments: raw }] }));
    const error = (await model.converse(FULL).catch((e: unknown) => e)) as ModelError;
    expect(error).toBeInstanceOf(ModelError);
    expect(error.retryable).toBe(false);
    expect(error.malformed).toBe(true);
    expect(error.message).toMatch(
      /called tool "search" \(call call_9\) with malformed arguments: they are not JSON .*; the arguments began: \{"query": "S3 events to EventBridge$/,
    );
    expect(error.details).toMatchObject({ exception: 'MalformedToolCall', tool: 'search', arguments: raw });
    expect(stub.requests).toHaveLength(1);
  });

  it('fails tool-call arguments that are JSON but not an object', async () => {
    stub.enqueue(completion({ toolCalls: [{ name: 'search', arguments: '["x"]' }] }));
    await expect(model.converse(FULL)).rejects.toThrow(
      /malformed arguments: they are JSON but not an object/,
    );
  });

  it('quotes at most 200 characters of long malformed arguments but keeps them whole in details', async () => {
    const raw = `{"query": "${'a'.repeat(500)}`;
    stub.enqueue(completion({ toolCalls: [{ name: 'search', arguments: raw }] }));
    const error = (await model.converse(FULL).catch((e: unknown) => e)) as ModelError;
    expect(error.message).toContain(`began: ${raw.slice(0, 200)}…`);
    expect(error.message).not.toContain(raw.slice(0, 201));
    expect(error.details?.arguments).toBe(raw);
  });

  it.each([
    [
      'a body that is not JSON',
      { status: 200, rawBody: '<html>gateway</html>' },
      /malformed response: the body is not JSON/,
    ],
    ['no choices', { status: 200, body: { choices: [] } }, /malformed response: choices: no choices/],
    [
      'a tool call without a function name',
      {
        status: 200,
        body: {
          choices: [
            { message: { role: 'assistant', tool_calls: [{ id: 'c', function: { arguments: '{}' } }] } },
          ],
        },
      },
      /malformed response: choices\.0\.message\.tool_calls\.0\.function\.name/,
    ],
    [
      'a role other than assistant',
      { status: 200, body: { choices: [{ message: { role: 'user', content: 'x' } }] } },
      /choices\.0\.message\.role/,
    ],
  ])('rejects %s as a malformed response without retrying', async (_name, response, message) => {
    stub.enqueue(response);
    const error = (await model.converse(FULL).catch((e: unknown) => e)) as ModelError;
    expect(error).toBeInstanceOf(ModelError);
    expect(error.code).toBe('MODEL_ERROR');
    expect(error.retryable).toBe(false);
    expect(error.malformed).toBe(true);
    expect(error.message).toMatch(message);
    expect(stub.requests).toHaveLength(1);
  });
});

describe('OpenAIChatModel HTTP errors, retries and timeouts', () => {
  it.each([
    [429, 'ThrottlingException'],
    [500, 'InternalServerException'],
    [503, 'ServiceUnavailableException'],
  ])('retries HTTP %i and succeeds on the next attempt', async (status) => {
    stub.enqueue(chatError(status), completion({ content: 'Recovered.' }));
    const response = await model.converse(FULL);
    expect(response.output.message.content).toEqual([{ text: 'Recovered.' }]);
    expect(stub.requests).toHaveLength(2);
  });

  it.each([
    [429, 'ThrottlingException'],
    [502, 'InternalServerException'],
  ])('gives up on HTTP %i after maxAttempts with a retryable %s', async (status, exception) => {
    stub.enqueue(chatError(status, 'busy'), chatError(status, 'busy'), chatError(status, 'still busy'));
    const error = (await model.converse(FULL).catch((e: unknown) => e)) as ModelError;
    expect(error).toBeInstanceOf(ModelError);
    expect(error.retryable).toBe(true);
    expect(error.message).toBe(
      `OpenAI-compatible model ${MODEL} failed after 3 attempts: HTTP ${status} ${exception}: still busy`,
    );
    expect(error.details).toMatchObject({ exception, httpStatusCode: status, attempts: 3, maxAttempts: 3 });
    expect(stub.requests).toHaveLength(3);
  });

  it.each([
    [400, 'ValidationException'],
    [401, 'AccessDeniedException'],
    [404, 'ResourceNotFoundException'],
  ])('does not retry HTTP %i: a non-retryable %s with the server message', async (status, exception) => {
    stub.enqueue(chatError(status, 'model "nope" not found'));
    const error = (await model.converse(FULL).catch((e: unknown) => e)) as ModelError;
    expect(error.retryable).toBe(false);
    expect(error.malformed).toBe(false);
    expect(error.message).toBe(
      `OpenAI-compatible model ${MODEL} rejected the request: HTTP ${status} ${exception}: model "nope" not found`,
    );
    expect(stub.requests).toHaveLength(1);
  });

  it("reads Ollama's { error: string } body", async () => {
    stub.enqueue({
      status: 400,
      body: { error: 'registry.ollama.ai/library/x:latest does not support tools' },
    });
    await expect(model.converse(FULL)).rejects.toThrow(
      /ValidationException: registry\.ollama\.ai.*does not support tools/,
    );
  });

  it('honours Retry-After (seconds) on 429: waits that long before the next attempt', async () => {
    stub.enqueue({ ...chatError(429), headers: { 'retry-after': '1' } }, completion({ content: 'ok' }));
    const timers = vi.spyOn(globalThis, 'setTimeout');
    let waits: (number | undefined)[];
    try {
      await model.converse(FULL);
      waits = timers.mock.calls.map((call) => call[1]);
    } finally {
      timers.mockRestore();
    }
    // The waits scheduled: the attempts' timeouts and, between them, Retry-After's second (not
    // the 5 ms backoff the model is configured with).
    expect(waits).toContain(1_000);
    expect(stub.requests).toHaveLength(2);
  });

  it('gives up at once when Retry-After is longer than 20 s', async () => {
    stub.enqueue({ ...chatError(429), headers: { 'retry-after': '21' } });
    const error = (await model.converse(FULL).catch((e: unknown) => e)) as ModelError;
    expect(error.retryable).toBe(true);
    expect(stub.requests).toHaveLength(1);
  });

  /** A model whose client gives up after {@link SHORT_TIMEOUT_MS}. */
  function impatient(maxAttempts: number): OpenAIChatModel {
    return new OpenAIChatModel({
      baseUrl: stub.baseUrl,
      modelId: MODEL,
      maxAttempts,
      timeoutMs: SHORT_TIMEOUT_MS,
      backoffMs: 5,
    });
  }

  it('times out a server that never answers, retries, and succeeds on the next attempt', async () => {
    stub.enqueue({ hang: true });
    // Every later attempt is answered, so a retry the loaded machine adds cannot empty the script.
    stub.respond = () => completion({ content: 'in time' });
    const response = await impatient(5).converse(FULL);
    expect(response.output.message.content).toEqual([{ text: 'in time' }]);
    expect(stub.requests.length).toBeGreaterThanOrEqual(2);
  });

  it('waits for a slow answer that comes within the timeout (the other side of the boundary)', async () => {
    stub.enqueue({ ...completion({ content: 'slow but in time' }), delayMs: 2 * SHORT_TIMEOUT_MS });
    const response = await model.converse(FULL);
    expect(response.output.message.content).toEqual([{ text: 'slow but in time' }]);
    expect(stub.requests).toHaveLength(1);
  });

  it('times out a body that stalls after the headers, and fails retryable after maxAttempts', async () => {
    const stalled: ScriptedChatResponse = { ...completion(), stallBody: true, delayMs: 600_000 };
    stub.enqueue(stalled, stalled, stalled);
    const error = (await impatient(3)
      .converse(FULL)
      .catch((e: unknown) => e)) as ModelError;
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(
      /failed after 3 attempts: TimeoutError: no complete response within 300 ms/,
    );
    expect(stub.requests).toHaveLength(3);
  });

  it('fails retryable with TimeoutError when the server never answers any attempt', async () => {
    stub.enqueue({ hang: true }, { hang: true });
    const error = (await impatient(2)
      .converse(FULL)
      .catch((e: unknown) => e)) as ModelError;
    expect(error).toBeInstanceOf(ModelError);
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(
      /failed after 2 attempts: TimeoutError: no complete response within 300 ms/,
    );
    expect(stub.requests).toHaveLength(2);
  });

  it('fails retryable with NetworkError when nothing listens', async () => {
    const base = stub.baseUrl;
    await stub.stop();
    const closed = new OpenAIChatModel({ baseUrl: base, modelId: MODEL, maxAttempts: 2, backoffMs: 1 });
    const error = (await closed.converse(FULL).catch((e: unknown) => e)) as ModelError;
    expect(error).toBeInstanceOf(ModelError);
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/failed after 2 attempts: NetworkError: fetch failed \(ECONNREFUSED\)/);
    stub = await startOpenAIStub();
  });
});

describe('OpenAIChatModel options', () => {
  it.each([
    [{ baseUrl: 'ftp://x', modelId: MODEL }, /baseUrl/],
    [{ baseUrl: 'not a url', modelId: MODEL }, /baseUrl/],
    [{ baseUrl: 'http://127.0.0.1:1/v1', modelId: ' ' }, /modelId/],
    [{ baseUrl: 'http://127.0.0.1:1/v1', modelId: MODEL, maxAttempts: 0 }, /maxAttempts/],
    [{ baseUrl: 'http://127.0.0.1:1/v1', modelId: MODEL, timeoutMs: 0 }, /timeoutMs/],
  ])('rejects %j with a ConfigError', (options, message) => {
    expect(() => new OpenAIChatModel(options)).toThrow(ConfigError);
    expect(() => new OpenAIChatModel(options)).toThrow(message);
  });
});
