/**
 * Bedrock prompt caching and per-step models (issue 25 items 3 and 4), the real Bedrock adapter
 * and `BedrockRuntimeClient` against a local Converse that bills with `cachePoint` semantics
 * (test/helpers/prompt-cache-stub.ts).
 */
import type { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../shared/errors.js';
import { BedrockChatModel, createBedrockClient } from '../../shared/llm/bedrock.js';
import { modelConfigOf } from '../../shared/llm/config.js';
import { OpenAIChatModel } from '../../shared/llm/openai.js';
import type { ConverseMessage, ConverseRequest, ConverseResponse } from '../../shared/llm/port.js';
import { billedEquivalentInput, costOf, priceOf } from '../../shared/llm/pricing.js';
import { baseModelId, promptCacheSupport } from '../../shared/llm/prompt-cache.js';
import { stepModelsOf } from '../../shared/llm/steps.js';
import { completion, startOpenAIStub } from '../helpers/openai-stub.js';
import { type PromptCacheStub, startPromptCacheStub } from '../helpers/prompt-cache-stub.js';

const HAIKU_45 = 'us.anthropic.claude-haiku-4-5-20251001-v1:0';
const SONNET_45 = 'global.anthropic.claude-sonnet-4-5-20250929-v1:0';
const NO_CACHE = 'anthropic.claude-3-5-sonnet-20240620-v1:0';

let stub: PromptCacheStub;
let client: BedrockRuntimeClient;
let clock: number;

/** Answers with text; the stub counts the tokens. */
async function answer(): Promise<ConverseResponse> {
  return {
    output: { message: { role: 'assistant', content: [{ text: 'ok' }] } },
    stopReason: 'end_turn',
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
  };
}

beforeEach(async () => {
  clock = 1_000_000;
  stub = await startPromptCacheStub({ answer, now: () => clock });
  client = createBedrockClient({
    region: 'us-east-1',
    endpoint: stub.endpoint,
    credentials: { accessKeyId: 'AKIDTESTEXAMPLE', secretAccessKey: 'fake' },
    maxAttempts: 1,
  });
});

afterEach(async () => {
  client.destroy();
  await stub.stop();
});

function modelOf(modelId: string, promptCache?: 'auto' | 'off'): BedrockChatModel {
  return new BedrockChatModel({ client, modelId, ...(promptCache ? { promptCache } : {}) });
}

/** Distinct words, so the cl100k count grows about one token per word. */
function words(n: number, seed: string): string {
  return Array.from({ length: n }, (_, i) => `${seed}${i}`).join(' ');
}

/** An assistant's system prompt of about `systemWords` words and one tool spec. */
function assistantRequest(systemWords: number, messages: ConverseMessage[]): ConverseRequest {
  return {
    system: [{ text: `You are the assistant "researcher".\n\n${words(systemWords, 'rule')}` }],
    messages,
    toolConfig: {
      tools: [
        {
          toolSpec: {
            name: 'search',
            description: 'Full-text search over the documents.',
            inputSchema: { json: { type: 'object', properties: { query: { type: 'string' } } } },
          },
        },
      ],
    },
  };
}

const FIRST_TURN = (task: string): ConverseMessage[] => [
  { role: 'user', content: [{ text: `## Task\n${task}` }] },
];
const SECOND_TURN = (task: string): ConverseMessage[] => [
  ...FIRST_TURN(task),
  { role: 'assistant', content: [{ toolUse: { toolUseId: 't1', name: 'search', input: { query: task } } }] },
  {
    role: 'user',
    content: [{ toolResult: { toolUseId: 't1', content: [{ text: words(300, 'hit') }], status: 'success' } }],
  },
];

describe('cache points in the Converse request', () => {
  it('puts one after the tools, one after the system prompt and one after the stable history', async () => {
    await modelOf(HAIKU_45).converse(assistantRequest(10, SECOND_TURN('versioning')));

    const body = stub.calls[0]?.body as {
      toolConfig: { tools: unknown[] };
      system: unknown[];
      messages: { content: unknown[] }[];
    };
    const point = { cachePoint: { type: 'default' } };
    expect(body.toolConfig.tools).toHaveLength(2);
    expect(body.toolConfig.tools[1]).toEqual(point);
    expect(body.system.at(-1)).toEqual(point);
    // the stable part is everything but the newest user message (the tool results)
    expect(body.messages[1]?.content.at(-1)).toEqual(point);
    expect(body.messages[0]?.content).not.toContainEqual(point);
    expect(body.messages[2]?.content).not.toContainEqual(point);
  });

  it('puts none in the history of a first turn (one message: nothing stable yet)', async () => {
    await modelOf(HAIKU_45).converse(assistantRequest(10, FIRST_TURN('versioning')));

    expect(stub.calls[0]?.checkpoints).toBe(2);
  });

  it.each([
    ['a model without prompt caching', NO_CACHE, undefined],
    ['promptCache off', HAIKU_45, 'off' as const],
  ])('sends none for %s, and the usage has no cache fields', async (_, modelId, promptCache) => {
    const response = await modelOf(modelId, promptCache).converse(assistantRequest(10, SECOND_TURN('x')));

    expect(JSON.stringify(stub.calls[0]?.body)).not.toContain('cachePoint');
    expect(response.usage.cacheReadInputTokens).toBeUndefined();
    expect(response.usage.cacheWriteInputTokens).toBeUndefined();
  });

  it('knows Claude Haiku 4.5 (4,096-token minimum), Sonnet 4.5 (1,024) and Nova (no tools field) by any profile', () => {
    expect(promptCacheSupport(HAIKU_45)?.minTokens).toBe(4096);
    expect(promptCacheSupport('global.anthropic.claude-haiku-4-5-20251001-v1:0')?.minTokens).toBe(4096);
    expect(
      promptCacheSupport(
        'arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.claude-sonnet-4-5-20250929-v1:0',
      )?.minTokens,
    ).toBe(1024);
    expect(promptCacheSupport('us.amazon.nova-lite-v1:0')?.fields).toEqual(['system', 'messages']);
    expect(promptCacheSupport(NO_CACHE)).toBeUndefined();
    expect(baseModelId('apac.anthropic.claude-3-5-haiku-20241022-v1:0')).toBe(
      'anthropic.claude-3-5-haiku-20241022-v1:0',
    );
  });
});

describe('cache hits as Bedrock bills them', () => {
  it('writes the tools + system prefix on the first call of a task and reads it on the second', async () => {
    const model = modelOf(HAIKU_45);
    const first = await model.converse(assistantRequest(2000, FIRST_TURN('versioning')));
    const second = await model.converse(assistantRequest(2000, SECOND_TURN('versioning')));

    expect(first.usage.cacheReadInputTokens).toBe(0);
    expect(first.usage.cacheWriteInputTokens).toBeGreaterThanOrEqual(4096);
    expect(second.usage.cacheReadInputTokens).toBe(first.usage.cacheWriteInputTokens);
    // the stable history (the task and the tool call) is written for a third turn
    expect(second.usage.cacheWriteInputTokens).toBeGreaterThan(0);
    const prompt = stub.calls[1]?.promptTokens as number;
    expect(
      second.usage.inputTokens +
        (second.usage.cacheReadInputTokens ?? 0) +
        (second.usage.cacheWriteInputTokens ?? 0),
    ).toBe(prompt);
    expect(billedEquivalentInput(second.usage)).toBeLessThan(prompt / 2);
  });

  it('reads the same prefix across tasks of one conversation (another task, same assistant)', async () => {
    const model = modelOf(HAIKU_45);
    const taskA = await model.converse(assistantRequest(2000, FIRST_TURN('versioning')));
    const taskB = await model.converse(assistantRequest(2000, FIRST_TURN('lifecycle rules')));

    expect(taskB.usage.cacheReadInputTokens).toBe(taskA.usage.cacheWriteInputTokens);
    expect(taskB.usage.cacheWriteInputTokens).toBe(0);
  });

  it('caches a 2,000-token prefix for Sonnet 4.5 (minimum 1,024) but not for Haiku 4.5 (minimum 4,096)', async () => {
    for (const modelId of [SONNET_45, HAIKU_45]) {
      const model = modelOf(modelId);
      await model.converse(assistantRequest(800, FIRST_TURN('a')));
      await model.converse(assistantRequest(800, FIRST_TURN('b')));
    }
    const [sonnetA, sonnetB, haikuA, haikuB] = stub.calls.map((c) => c.usage);
    expect(stub.calls[0]?.prefixTokens.at(-1)).toBeGreaterThan(1024);
    expect(stub.calls[0]?.prefixTokens.at(-1)).toBeLessThan(4096);
    expect(sonnetA?.cacheWriteInputTokens).toBeGreaterThan(0);
    expect(sonnetB?.cacheReadInputTokens).toBe(sonnetA?.cacheWriteInputTokens);
    expect(haikuA?.cacheWriteInputTokens).toBe(0);
    expect(haikuB?.cacheReadInputTokens).toBe(0);
  });

  it('misses after the 5-minute TTL since the last use, and hits just before it', async () => {
    const model = modelOf(HAIKU_45);
    await model.converse(assistantRequest(2000, FIRST_TURN('a')));
    clock += 300_000; // exactly 5 minutes after the write: still cached
    const within = await model.converse(assistantRequest(2000, FIRST_TURN('b')));
    clock += 300_001; // just over 5 minutes after that read
    const after = await model.converse(assistantRequest(2000, FIRST_TURN('c')));

    expect(within.usage.cacheReadInputTokens).toBeGreaterThan(0);
    expect(after.usage.cacheReadInputTokens).toBe(0);
    expect(after.usage.cacheWriteInputTokens).toBe(within.usage.cacheReadInputTokens);
  });
});

describe('per-step models', () => {
  it('sends each step to its model; a step without one to the default; a request modelId wins', async () => {
    const model = new BedrockChatModel({
      client,
      modelId: HAIKU_45,
      stepModels: { plan: SONNET_45, judge: NO_CACHE },
    });
    const turn = FIRST_TURN('x');
    await model.converse({ step: 'plan', messages: turn });
    await model.converse({ step: 'answer', messages: turn });
    await model.converse({ step: 'judge', messages: turn });
    await model.converse({ step: 'plan', modelId: NO_CACHE, messages: turn });

    expect(stub.calls.map((c) => c.modelId)).toEqual([SONNET_45, HAIKU_45, NO_CACHE, NO_CACHE]);
  });

  it('gives the OpenAI-compatible adapter the same setting', async () => {
    const openai = await startOpenAIStub();
    try {
      const model = new OpenAIChatModel({
        baseUrl: openai.baseUrl,
        modelId: 'qwen2.5:7b-instruct',
        stepModels: { judge: 'qwen2.5:32b-instruct' },
      });
      openai.enqueue(completion({ content: 'a' }), completion({ content: 'b' }));
      await model.converse({ step: 'judge', messages: FIRST_TURN('x') });
      await model.converse({ step: 'assistant', messages: FIRST_TURN('x') });

      expect(openai.requests.map((r) => (r.body as { model: string }).model)).toEqual([
        'qwen2.5:32b-instruct',
        'qwen2.5:7b-instruct',
      ]);
    } finally {
      await openai.stop();
    }
  });

  it('reads CLD_MODELS and CLD_MODEL_ID_<STEP>, the single variable winning', () => {
    expect(
      stepModelsOf({
        CLD_MODELS: '{"plan":"a","judge":"b"}',
        CLD_MODEL_ID_JUDGE: 'c',
        CLD_MODEL_ID_ANSWER: 'd',
      }),
    ).toEqual({ plan: 'a', judge: 'c', answer: 'd' });
    expect(modelConfigOf({ CLD_MODEL_ID: HAIKU_45, CLD_MODEL_ID_PLAN: SONNET_45 })).toEqual({
      provider: 'bedrock',
      modelId: HAIKU_45,
      stepModels: { plan: SONNET_45 },
    });
    expect(modelConfigOf({ CLD_MODEL_ID: HAIKU_45 })).toEqual({ provider: 'bedrock', modelId: HAIKU_45 });
  });

  it.each([
    ['not JSON', '{plan:'],
    ['an unknown step', '{"planner":"a"}'],
    ['an empty id', '{"judge":" "}'],
  ])('rejects CLD_MODELS with %s, naming the variable', (_, value) => {
    expect(() => stepModelsOf({ CLD_MODELS: value })).toThrow(ConfigError);
    expect(() => stepModelsOf({ CLD_MODELS: value })).toThrow(/CLD_MODELS/);
  });
});

describe('price table', () => {
  it('prices Haiku 4.5 at $1/$5 per MTok globally and 10 % more in a geography, caches at 1.25× and 0.1×', () => {
    expect(priceOf('global.anthropic.claude-haiku-4-5-20251001-v1:0')).toMatchObject({
      input: 1,
      output: 5,
      cacheWrite: 1.25,
      cacheRead: 0.1,
      profile: 'global',
    });
    const us = priceOf(HAIKU_45);
    expect(us).toMatchObject({ input: 1.1, output: 5.5, profile: 'regional' });
    // the figure: 12,937 input and 1,492 output tokens ≈ $22.4 per 1,000 at us. prices
    expect(costOf({ inputTokens: 12_937, outputTokens: 1_492 }, us!) * 1000).toBeCloseTo(22.44, 2);
    expect(priceOf(NO_CACHE)).toBeUndefined();
  });
});
