/**
 * The token bill of a question (test/bench/bill.ts), as `npm run bench:tokens` and `npm run eval --
 * --tokens` report it: sums of Bedrock's usage, the billed-equivalent input, the price per call's
 * model, and the summary over questions.
 */
import { describe, expect, it } from 'vitest';
import { priceOf } from '../../shared/llm/pricing.js';
import { billOf, summarizeBills, type TokenBill } from '../bench/bill.js';
import type { BilledCall } from '../helpers/prompt-cache-stub.js';

const HAIKU = 'us.anthropic.claude-haiku-4-5-20251001-v1:0';

function call(modelId: string, usage: Partial<BilledCall['usage']>): BilledCall {
  const full = { inputTokens: 0, outputTokens: 0, totalTokens: 0, ...usage };
  return { modelId, body: {}, checkpoints: 0, prefixTokens: [], promptTokens: full.inputTokens, usage: full };
}

describe('the bill of one question', () => {
  it('sums the calls, weighs cache writes and reads, and prices each call', () => {
    const bill = billOf(
      [
        call(HAIKU, { inputTokens: 1000, outputTokens: 100, cacheWriteInputTokens: 4000 }),
        call('', { inputTokens: 200, outputTokens: 50, cacheReadInputTokens: 4000 }),
      ],
      HAIKU,
    );
    expect(bill).toMatchObject({
      calls: 2,
      inputTokens: 1200,
      cacheWriteInputTokens: 4000,
      cacheReadInputTokens: 4000,
      outputTokens: 150,
      // 1,200 + 4,000 × 1.25 + 4,000 × 0.1
      billedEquivalentInput: 6600,
    });
    const price = priceOf(HAIKU);
    if (!price) throw new Error('Haiku 4.5 has a price in shared/llm/pricing.ts');
    const expected =
      (1200 * price.input + 4000 * price.cacheWrite + 4000 * price.cacheRead + 150 * price.output) / 1e6;
    expect(bill.usd).toBeCloseTo(expected, 10);
  });

  it('has no price when a call went to a model without one', () => {
    expect(billOf([call('acme.unknown-model-v1', { inputTokens: 10 })], HAIKU).usd).toBeUndefined();
  });
});

describe('the summary over questions', () => {
  const bill = (billed: number, usd?: number): TokenBill => ({
    calls: 2,
    inputTokens: billed,
    cacheWriteInputTokens: 0,
    cacheReadInputTokens: 0,
    outputTokens: 10,
    billedEquivalentInput: billed,
    usd,
  });

  it('gives means and nearest-rank median and 90th percentile', () => {
    const bills = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((n) => bill(n * 100, n / 1000));
    expect(summarizeBills(bills)).toMatchObject({
      questions: 10,
      meanCalls: 2,
      meanInput: 550,
      medianBilledInput: 500,
      p90BilledInput: 900,
      meanBilledInput: 550,
    });
    expect(summarizeBills(bills).meanUsd).toBeCloseTo(0.0055, 10);
  });

  it('has no mean price when a bill has none, and refuses no bills', () => {
    expect(summarizeBills([bill(100, 0.001), bill(200)]).meanUsd).toBeUndefined();
    expect(() => summarizeBills([])).toThrow('no bills');
  });
});
