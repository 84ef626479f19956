import type { ConverseResponse } from './port.js';

/**
 * The sum of two Converse usages (tokens); a cache count is kept where either reports one. Used
 * where one step makes a second call to correct an invalid reply (the plan, the verdict).
 */
export function addUsage(
  a: ConverseResponse['usage'],
  b: ConverseResponse['usage'],
): ConverseResponse['usage'] {
  const sum: ConverseResponse['usage'] = {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    totalTokens: a.totalTokens + b.totalTokens,
  };
  for (const key of ['cacheReadInputTokens', 'cacheWriteInputTokens'] as const) {
    if (a[key] !== undefined || b[key] !== undefined) sum[key] = (a[key] ?? 0) + (b[key] ?? 0);
  }
  return sum;
}
