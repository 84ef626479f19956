import type { ContentBlock, ConverseMessage, ConverseResponse } from './port.js';

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

/**
 * The turn that asks a model to correct a reply that is not a valid call of `tool` (the plan, the
 * verdict): its reply, then the error — as the tool result of its call (`status: 'error'`, as
 * Converse requires a result after a `toolUse`), or as text naming the tool when it made no call.
 */
export function correctionTurn(
  reply: ConverseMessage,
  use: Extract<ContentBlock, { toolUse: unknown }> | undefined,
  error: Error,
  tool: string,
): ConverseMessage[] {
  return [
    reply,
    {
      role: 'user',
      content: use
        ? [
            {
              toolResult: {
                toolUseId: use.toolUse.toolUseId,
                content: [{ text: error.message }],
                status: 'error',
              },
            },
          ]
        : [{ text: `${error.message}. Call ${tool}.` }],
    },
  ];
}
