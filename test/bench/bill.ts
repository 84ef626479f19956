import type { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { createBedrockClient } from '../../shared/llm/bedrock.js';
import { OfflineChatModel } from '../../shared/llm/offline.js';
import { billedEquivalentInput, costOf, type ModelPrice, priceOf } from '../../shared/llm/pricing.js';
import { type BilledCall, type PromptCacheStub, startPromptCacheStub } from '../helpers/prompt-cache-stub.js';

/** The model a bill is priced at when none is named (`--model`, `CLD_MODEL_ID`): Claude Haiku 4.5, `us.` profile. */
export const DEFAULT_BILLED_MODEL = 'us.anthropic.claude-haiku-4-5-20251001-v1:0';

/** A local Converse that bills as Bedrock does, and the real Bedrock Runtime client pointed at it. */
export interface BilledBedrock {
  stub: PromptCacheStub;
  client: BedrockRuntimeClient;
  /** Destroys the client and stops the stub. */
  stop(): Promise<void>;
}

/**
 * Starts a prompt-cache stub (test/helpers/prompt-cache-stub.ts) that answers with the offline
 * model, and a `BedrockRuntimeClient` (shared/llm/bedrock.ts `createBedrockClient`) against it
 * with static test credentials: what `bench:tokens` and `eval --tokens` send their questions through.
 */
export async function startBilledBedrock(): Promise<BilledBedrock> {
  const offline = new OfflineChatModel();
  const stub = await startPromptCacheStub({ answer: (request) => offline.converse(request) });
  const client = createBedrockClient({
    region: 'us-east-1',
    endpoint: stub.endpoint,
    credentials: { accessKeyId: 'AKIDBILLED', secretAccessKey: 'billed' },
  });
  return {
    stub,
    client,
    stop: async () => {
      client.destroy();
      await stub.stop();
    },
  };
}

/**
 * What one question cost in Bedrock tokens, from the calls a local Converse stub billed as Bedrock
 * does (test/helpers/prompt-cache-stub.ts): shared by `npm run bench:tokens` (the quick-start
 * question) and `npm run eval -- --tokens` (every eval question; issue 25 item 1).
 */
export interface TokenBill {
  /** Model calls of the question. */
  calls: number;
  inputTokens: number;
  cacheWriteInputTokens: number;
  cacheReadInputTokens: number;
  outputTokens: number;
  /** input + cache writes × 1.25 + cache reads × 0.1, rounded (shared/llm/pricing.ts). */
  billedEquivalentInput: number;
  /** USD for the question, each call at its own model's price; undefined when a model has none. */
  usd: number | undefined;
}

/** The bill of a question's calls; a call without a model id is priced at `modelId`. */
export function billOf(calls: readonly BilledCall[], modelId: string): TokenBill {
  const total = { inputTokens: 0, cacheWriteInputTokens: 0, cacheReadInputTokens: 0, outputTokens: 0 };
  for (const { usage } of calls) {
    total.inputTokens += usage.inputTokens;
    total.cacheWriteInputTokens += usage.cacheWriteInputTokens ?? 0;
    total.cacheReadInputTokens += usage.cacheReadInputTokens ?? 0;
    total.outputTokens += usage.outputTokens;
  }
  // Each call at the price of the model it went to (a step may have its own: CLD_MODELS).
  const prices = calls.map((call) => priceOf(call.modelId || modelId));
  const usd = prices.every((p) => p !== undefined)
    ? calls.reduce((sum, call, i) => sum + costOf(call.usage, prices[i] as ModelPrice), 0)
    : undefined;
  return {
    calls: calls.length,
    ...total,
    billedEquivalentInput: Math.round(billedEquivalentInput(total)),
    usd,
  };
}

/** Summary of many questions' bills: means, and the median and 90th percentile of billed-equivalent input. */
export interface BillSummary {
  questions: number;
  meanCalls: number;
  meanInput: number;
  meanCacheWrite: number;
  meanCacheRead: number;
  meanOutput: number;
  medianBilledInput: number;
  p90BilledInput: number;
  meanBilledInput: number;
  /** Mean USD per question; undefined when any bill has no price. */
  meanUsd: number | undefined;
}

/**
 * The {@link BillSummary} of `bills` (nearest-rank percentiles).
 * @throws Error for no bills
 */
export function summarizeBills(bills: readonly TokenBill[]): BillSummary {
  if (bills.length === 0) throw new Error('no bills to summarize');
  const mean = (pick: (b: TokenBill) => number) => bills.reduce((s, b) => s + pick(b), 0) / bills.length;
  const billed = bills.map((b) => b.billedEquivalentInput).sort((a, b) => a - b);
  const rank = (p: number) => billed[Math.max(0, Math.ceil(p * billed.length) - 1)] as number;
  return {
    questions: bills.length,
    meanCalls: mean((b) => b.calls),
    meanInput: mean((b) => b.inputTokens),
    meanCacheWrite: mean((b) => b.cacheWriteInputTokens),
    meanCacheRead: mean((b) => b.cacheReadInputTokens),
    meanOutput: mean((b) => b.outputTokens),
    medianBilledInput: rank(0.5),
    p90BilledInput: rank(0.9),
    meanBilledInput: mean((b) => b.billedEquivalentInput),
    meanUsd: bills.every((b) => b.usd !== undefined) ? mean((b) => b.usd as number) : undefined,
  };
}
