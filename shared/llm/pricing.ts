import { baseModelId, isGlobalProfile } from './prompt-cache.js';

/**
 * On-demand Bedrock prices of the chat models this project is run with, in USD per million tokens.
 *
 * Sources (as of {@link PRICES_AS_OF}): Amazon Bedrock pricing, https://aws.amazon.com/bedrock/pricing/
 * (Anthropic section), and Anthropic's pricing page, https://docs.anthropic.com/en/docs/about-claude/pricing
 * (prompt caching multipliers: a 5-minute cache write costs 1.25× the input price, a cache read
 * 0.1×). For Claude 4.5 models Bedrock charges the list price through a `global.` cross-Region
 * inference profile, and 10 % more in a geography (`us.`, `eu.`, `jp.`, `au.` profiles) or in-Region.
 * These figures were not re-read live from AWS for this table: they are the list prices the
 * project uses (issue 25: $1.00 / $5.00 per MTok for Haiku 4.5, which at the `us.` premium
 * reproduces the issue's $22.4 per 1,000 quick-start questions). Check the pages before quoting a bill.
 */
export const PRICES_AS_OF = '2026-11-25';

/** Price of one model, USD per million tokens. */
export interface ModelPrice {
  /** Base model id it applies to, e.g. `anthropic.claude-haiku-4-5-20251001-v1:0`. */
  model: string;
  input: number;
  output: number;
  /** A token written to the (5-minute) cache. */
  cacheWrite: number;
  /** A token read from the cache. */
  cacheRead: number;
  /** Which profile the price is for: `global` (list price) or `regional` (+10 % for Claude 4.5+). */
  profile: 'global' | 'regional';
}

/** Multipliers of the input price for cache writes (5-minute TTL) and reads: Anthropic's. */
export const CACHE_WRITE_RATIO = 1.25;
export const CACHE_READ_RATIO = 0.1;

/** Global list prices (input, output) per base model; first match wins. */
const LIST: readonly [RegExp, { input: number; output: number; regionalPremium: number }][] = [
  [/^anthropic\.claude-haiku-4-5/, { input: 1.0, output: 5.0, regionalPremium: 0.1 }],
  [/^anthropic\.claude-sonnet-4-5/, { input: 3.0, output: 15.0, regionalPremium: 0.1 }],
  [/^anthropic\.claude-3-5-haiku/, { input: 0.8, output: 4.0, regionalPremium: 0 }],
];

/**
 * The price of a model id, inference-profile id or ARN at its profile: a `global.` profile at the
 * list price, any other at the regional price. `undefined` for a model the table does not know.
 */
export function priceOf(modelId: string): ModelPrice | undefined {
  const base = baseModelId(modelId);
  const list = LIST.find(([pattern]) => pattern.test(base))?.[1];
  if (!list) return undefined;
  const global = isGlobalProfile(modelId);
  const factor = global ? 1 : 1 + list.regionalPremium;
  const input = round(list.input * factor);
  return {
    model: base,
    input,
    output: round(list.output * factor),
    cacheWrite: round(input * CACHE_WRITE_RATIO),
    cacheRead: round(input * CACHE_READ_RATIO),
    profile: global ? 'global' : 'regional',
  };
}

/** Token counts of one or more calls, as Bedrock's `usage` reports them. */
export interface BilledTokens {
  inputTokens: number;
  outputTokens: number;
  cacheReadInputTokens?: number;
  cacheWriteInputTokens?: number;
}

/**
 * Input tokens at the input price that cost the same as `usage`'s input side:
 * `input + cache writes × 1.25 + cache reads × 0.1`.
 */
export function billedEquivalentInput(usage: BilledTokens): number {
  return (
    usage.inputTokens +
    (usage.cacheWriteInputTokens ?? 0) * CACHE_WRITE_RATIO +
    (usage.cacheReadInputTokens ?? 0) * CACHE_READ_RATIO
  );
}

/** USD that `usage` costs at `price`. */
export function costOf(usage: BilledTokens, price: ModelPrice): number {
  return (
    (usage.inputTokens * price.input +
      (usage.cacheWriteInputTokens ?? 0) * price.cacheWrite +
      (usage.cacheReadInputTokens ?? 0) * price.cacheRead +
      usage.outputTokens * price.output) /
    1_000_000
  );
}

function round(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}
