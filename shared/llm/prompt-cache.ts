import type { ConverseCommandInput } from '@aws-sdk/client-bedrock-runtime';

/**
 * Bedrock prompt caching (Converse `cachePoint` blocks), per model.
 *
 * Source: Amazon Bedrock User Guide, "Prompt caching for faster model inference", table
 * "Supported models, Regions, and limits" (https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html),
 * and Anthropic's "Prompt caching" page for the Claude minimums (read 2026-11-25). A checkpoint is
 * honoured only when the whole prefix before it (tools, then system, then messages, in that order)
 * has at least the model's minimum number of tokens; below it the request succeeds uncached. At
 * most 4 checkpoints per request. Cached prefixes live 5 minutes from their last use.
 */

/** What a model supports of prompt caching. */
export interface PromptCacheSupport {
  /** Minimum tokens of the prefix before a checkpoint (e.g. 4,096 for Claude Haiku 4.5). */
  minTokens: number;
  /** Request fields that accept a `cachePoint` block. */
  fields: readonly ('system' | 'messages' | 'tools')[];
}

/** Checkpoints a request may carry (Bedrock's limit). */
export const MAX_CACHE_CHECKPOINTS = 4;

/** Seconds a cached prefix lives after its last use (the default TTL; `1h` is opt-in, not used here). */
export const CACHE_TTL_SECONDS = 300;

const CLAUDE: PromptCacheSupport['fields'] = ['system', 'messages', 'tools'];
const NOVA: PromptCacheSupport['fields'] = ['system', 'messages'];

/**
 * Base model id (no Region prefix, no ARN) → support; first match wins. Claude 3.5 Sonnet v2 is
 * left out: Bedrock grants its prompt caching to no new customers, and a `cachePoint` it does not
 * accept fails the request.
 */
const SUPPORT: readonly [RegExp, PromptCacheSupport][] = [
  [/^anthropic\.claude-haiku-4-5/, { minTokens: 4096, fields: CLAUDE }],
  [/^anthropic\.claude-opus-4-[56]/, { minTokens: 4096, fields: CLAUDE }],
  [/^anthropic\.claude-sonnet-4-6/, { minTokens: 2048, fields: CLAUDE }],
  [/^anthropic\.claude-sonnet-4-5/, { minTokens: 1024, fields: CLAUDE }],
  [/^anthropic\.claude-(sonnet|opus)-4-(1-)?20\d{6}/, { minTokens: 1024, fields: CLAUDE }],
  [/^anthropic\.claude-3-7-sonnet/, { minTokens: 1024, fields: CLAUDE }],
  [/^anthropic\.claude-3-5-haiku/, { minTokens: 2048, fields: CLAUDE }],
  [/^amazon\.nova-(micro|lite|pro|premier)-v1/, { minTokens: 1000, fields: NOVA }],
];

/**
 * The base model id of a model id, inference-profile id or ARN: `us.anthropic.claude-haiku-4-5-…`,
 * `global.anthropic…` and `arn:aws:bedrock:…:inference-profile/eu.anthropic…` all give
 * `anthropic.claude-haiku-4-5-…`. An application inference profile's ARN (an opaque id) gives
 * that id, which no table knows.
 */
export function baseModelId(modelId: string): string {
  const last = modelId.startsWith('arn:') ? (modelId.split('/').at(-1) ?? modelId) : modelId;
  return last.replace(/^(us|eu|apac|jp|au|ca|us-gov|global)\./, '');
}

/** Whether Region-prefix `modelId` is a global cross-Region inference profile (`global.`). */
export function isGlobalProfile(modelId: string): boolean {
  const last = modelId.startsWith('arn:') ? (modelId.split('/').at(-1) ?? modelId) : modelId;
  return last.startsWith('global.');
}

/** What `modelId` supports of prompt caching, or `undefined` when it does not (or is unknown). */
export function promptCacheSupport(modelId: string): PromptCacheSupport | undefined {
  const base = baseModelId(modelId);
  return SUPPORT.find(([pattern]) => pattern.test(base))?.[1];
}

const CACHE_POINT = { cachePoint: { type: 'default' as const } };

/**
 * Adds `cachePoint` blocks to a Converse input where `support` allows them (a new object; the
 * input is not changed):
 * - after the last tool spec (the prefix: tools), and after the system prompt (tools + system):
 *   the same for every turn of every task of an assistant, and for every plan;
 * - at the end of the stable part of the history, the second-to-last message (everything but the
 *   newest user message: the new tool results or the correction), so a loop's next turn reads
 *   what this one sent twice. Not after the newest message: the quick-start's tasks end after two
 *   calls, and a write there (1.25× input) would never be read.
 * Checkpoints before the model's minimum prefix are harmless: Bedrock ignores them.
 */
export function withCachePoints(
  input: ConverseCommandInput,
  support: PromptCacheSupport,
): ConverseCommandInput {
  const out: ConverseCommandInput = { ...input };
  if (support.fields.includes('tools') && input.toolConfig?.tools?.length) {
    out.toolConfig = { ...input.toolConfig, tools: [...input.toolConfig.tools, CACHE_POINT] };
  }
  if (support.fields.includes('system') && input.system?.length) {
    out.system = [...input.system, CACHE_POINT];
  }
  const messages = input.messages ?? [];
  const stable = messages.length - 2;
  if (support.fields.includes('messages') && stable >= 0) {
    out.messages = messages.map((message, i) =>
      i === stable ? { ...message, content: [...(message.content ?? []), CACHE_POINT] } : message,
    );
  }
  return out;
}
