/**
 * A local Bedrock Runtime `Converse` that answers through a model of ours (the offline model, a
 * scripted one) and bills as Bedrock does with prompt caching, for driving the real
 * `BedrockRuntimeClient` (over HTTP/1.1, see converse-stub.ts) and counting what a question costs.
 *
 * Semantics (Amazon Bedrock User Guide, "Prompt caching for faster model inference"):
 * - the prompt is read as one sequence of blocks in the order tools → system → messages; a
 *   `cachePoint` block ends a prefix (a checkpoint). At most 4 per request (else HTTP 400
 *   `ValidationException`), and a model without prompt caching rejects them the same way;
 * - a checkpoint whose prefix has fewer tokens than the model's minimum
 *   (shared/llm/prompt-cache.ts: 4,096 for Claude Haiku 4.5) is ignored;
 * - a hit is an identical prefix (same model, same blocks) cached less than the TTL (5 minutes,
 *   from its last use, on the stub's clock) ago, looked up at each checkpoint and up to 20 block
 *   boundaries before it (Anthropic's automatic prefix check); the longest hit is read;
 * - every honoured checkpoint past the read prefix is written;
 * - `usage` as Bedrock returns it: `inputTokens` (neither read nor written), `cacheReadInputTokens`,
 *   `cacheWriteInputTokens` (present, 0 when none, whenever the request carries a checkpoint),
 *   `outputTokens`, and `totalTokens` (all of them).
 * Tokens are cl100k counts of each block's JSON (shared/context/tokens.ts), the project's own
 * estimate; a real Claude tokenizer counts somewhat differently.
 */
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { countTokens } from '../../shared/context/tokens.js';
import type { ConverseRequest, ConverseResponse } from '../../shared/llm/port.js';
import {
  CACHE_TTL_SECONDS,
  MAX_CACHE_CHECKPOINTS,
  promptCacheSupport,
} from '../../shared/llm/prompt-cache.js';

/** Bedrock's usage of one call. */
export interface BedrockUsage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  cacheReadInputTokens?: number;
  cacheWriteInputTokens?: number;
}

/** One call the stub answered. */
export interface BilledCall {
  modelId: string;
  /** The wire body as the client sent it (cache points included). */
  body: Record<string, unknown>;
  /** Checkpoints the request carried. */
  checkpoints: number;
  /** Tokens of the prefix before each checkpoint, in order. */
  prefixTokens: number[];
  /** Tokens of the whole prompt (input + cache read + cache write). */
  promptTokens: number;
  usage: BedrockUsage;
}

/** Options of {@link startPromptCacheStub}. */
export interface PromptCacheStubOptions {
  /** Answers a request (cache points removed); its `usage` is ignored, the stub counts. */
  answer: (request: ConverseRequest) => Promise<ConverseResponse>;
  /** The stub's clock in ms (for the TTL); default `Date.now`. */
  now?: () => number;
}

/** A running stub. */
export interface PromptCacheStub {
  endpoint: string;
  /** Every answered call, in order. */
  calls: BilledCall[];
  /** Forgets every cached prefix. */
  clearCache(): void;
  stop(): Promise<void>;
}

interface Block {
  json: string;
  tokens: number;
}

interface Entry {
  tokens: number;
  lastUsed: number;
}

const LOOKBACK_BLOCKS = 20;

function isCachePoint(block: unknown): boolean {
  return typeof block === 'object' && block !== null && 'cachePoint' in block;
}

/**
 * The prompt as blocks, tools → system → messages, and the block boundaries after which a
 * checkpoint stands. A message's role is counted with its first block.
 */
function flatten(body: Record<string, unknown>): { blocks: Block[]; checkpoints: number[] } {
  const blocks: Block[] = [];
  const checkpoints: number[] = [];
  const add = (value: unknown, prefix = '') => {
    if (isCachePoint(value)) {
      checkpoints.push(blocks.length);
      return;
    }
    const json = prefix + JSON.stringify(value);
    blocks.push({ json, tokens: countTokens(json) });
  };
  const tools = (body.toolConfig as { tools?: unknown[] } | undefined)?.tools ?? [];
  for (const tool of tools) add(tool);
  for (const block of (body.system as unknown[] | undefined) ?? []) add(block);
  for (const message of (body.messages as { role: string; content: unknown[] }[] | undefined) ?? []) {
    message.content.forEach((block, i) => {
      add(block, i === 0 ? `${message.role}:` : '');
    });
  }
  return { blocks, checkpoints };
}

function withoutCachePoints(body: Record<string, unknown>): ConverseRequest {
  const toolConfig = body.toolConfig as { tools: unknown[] } | undefined;
  return {
    ...(body.system ? { system: (body.system as unknown[]).filter((b) => !isCachePoint(b)) } : {}),
    messages: ((body.messages as { role: string; content: unknown[] }[]) ?? []).map((m) => ({
      ...m,
      content: m.content.filter((b) => !isCachePoint(b)),
    })),
    ...(toolConfig
      ? { toolConfig: { ...toolConfig, tools: toolConfig.tools.filter((t) => !isCachePoint(t)) } }
      : {}),
    ...(body.inferenceConfig ? { inferenceConfig: body.inferenceConfig } : {}),
  } as ConverseRequest;
}

function validationError(message: string): { status: number; headers: Record<string, string>; body: string } {
  return {
    status: 400,
    headers: {
      'x-amzn-errortype': 'ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/',
    },
    body: JSON.stringify({ message }),
  };
}

/**
 * Starts the stub on 127.0.0.1, on a free port.
 * @returns the endpoint to give `createBedrockClient`, the billed calls, `clearCache()`, `stop()`
 */
export async function startPromptCacheStub(options: PromptCacheStubOptions): Promise<PromptCacheStub> {
  const now = options.now ?? Date.now;
  const cache = new Map<string, Entry>();
  const calls: BilledCall[] = [];
  const ttlMs = CACHE_TTL_SECONDS * 1000;

  const bill = (modelId: string, body: Record<string, unknown>) => {
    const { blocks, checkpoints } = flatten(body);
    const support = promptCacheSupport(modelId);
    if (checkpoints.length > 0 && !support)
      return { error: `The model ${modelId} does not support prompt caching (cachePoint).` };
    if (checkpoints.length > MAX_CACHE_CHECKPOINTS)
      return {
        error: `A request may carry at most ${MAX_CACHE_CHECKPOINTS} cachePoint blocks, got ${checkpoints.length}`,
      };
    // Prefix hash and tokens at every block boundary b (the first b blocks).
    const hashes: string[] = [createHash('sha256').update(modelId).digest('hex')];
    const tokensAt: number[] = [0];
    blocks.forEach((block, i) => {
      hashes.push(
        createHash('sha256')
          .update(hashes[i] as string)
          .update(block.json)
          .digest('hex'),
      );
      tokensAt.push((tokensAt[i] as number) + block.tokens);
    });
    const total = tokensAt.at(-1) as number;
    const t = now();
    for (const [key, entry] of cache) if (t - entry.lastUsed > ttlMs) cache.delete(key);
    const honoured = checkpoints.filter((b) => support && (tokensAt[b] as number) >= support.minTokens);
    let readAt = 0;
    for (const b of checkpoints) {
      for (let at = b; at >= Math.max(1, b - LOOKBACK_BLOCKS); at--) {
        if (at > readAt && cache.has(hashes[at] as string)) readAt = at;
      }
    }
    const read = tokensAt[readAt] as number;
    if (readAt > 0) (cache.get(hashes[readAt] as string) as Entry).lastUsed = t;
    let writtenTo = readAt;
    for (const b of honoured) {
      if (b <= readAt) continue;
      cache.set(hashes[b] as string, { tokens: tokensAt[b] as number, lastUsed: t });
      writtenTo = Math.max(writtenTo, b);
    }
    const write = (tokensAt[writtenTo] as number) - read;
    return {
      total,
      read,
      write,
      checkpoints: checkpoints.length,
      prefixTokens: checkpoints.map((b) => tokensAt[b] as number),
    };
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const label = /^\/model\/([^/]+)\/converse$/.exec(req.url ?? '')?.[1];
      const reply = (status: number, headers: Record<string, string>, body: string) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(body);
      };
      if (req.method !== 'POST' || label === undefined) {
        const e = validationError(`stub: no route for ${req.method} ${req.url}`);
        return reply(404, e.headers, e.body);
      }
      const modelId = decodeURIComponent(label);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      const billed = bill(modelId, body);
      if ('error' in billed) {
        const e = validationError(billed.error as string);
        return reply(e.status, e.headers, e.body);
      }
      options.answer(withoutCachePoints(body)).then(
        (answer) => {
          const outputTokens = countTokens(JSON.stringify(answer.output.message.content));
          const inputTokens = billed.total - billed.read - billed.write;
          const usage: BedrockUsage = {
            inputTokens,
            outputTokens,
            totalTokens: billed.total + outputTokens,
            ...(billed.checkpoints > 0
              ? { cacheReadInputTokens: billed.read, cacheWriteInputTokens: billed.write }
              : {}),
          };
          calls.push({
            modelId,
            body,
            checkpoints: billed.checkpoints,
            prefixTokens: billed.prefixTokens,
            promptTokens: billed.total,
            usage,
          });
          reply(
            200,
            {},
            JSON.stringify({
              output: answer.output,
              stopReason: answer.stopReason,
              usage,
              metrics: { latencyMs: 1 },
            }),
          );
        },
        (error: unknown) => {
          const e = validationError(`stub model failed: ${String(error)}`);
          reply(e.status, e.headers, e.body);
        },
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    calls,
    clearCache: () => cache.clear(),
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve())));
    },
  };
}
