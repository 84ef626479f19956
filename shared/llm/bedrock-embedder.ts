import type { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import pLimit from 'p-limit';
import * as z from 'zod';
import { ConfigError, ModelError } from '../errors.js';
import { bedrockRuntimeSdk, toModelError } from './bedrock.js';
import type { Embedder } from './port.js';

/** Amazon Titan Text Embeddings V2, the default embedding model. */
export const DEFAULT_EMBEDDING_MODEL_ID = 'amazon.titan-embed-text-v2:0';

/** Output sizes Titan Text Embeddings V2 supports. */
export const TITAN_V2_DIMENSIONS = [256, 512, 1024] as const;

/** Longest input Titan Text Embeddings V2 takes, in characters (its limit is 50,000 characters / 8,192 tokens). */
export const MAX_EMBEDDING_INPUT_CHARS = 50_000;

/** `InvokeModel` calls in flight at once per {@link BedrockEmbedder.embed}. */
const CONCURRENCY = 4;

/** Options of {@link BedrockEmbedder}. */
export interface BedrockEmbedderOptions {
  /** A client from `createBedrockClient()` (shared/llm/bedrock.ts). */
  client: BedrockRuntimeClient;
  /** Default {@link DEFAULT_EMBEDDING_MODEL_ID}. */
  modelId?: string;
  /** 256, 512 or 1024 (default 1024). */
  dimensions?: (typeof TITAN_V2_DIMENSIONS)[number];
}

/** The `InvokeModel` response body of Titan Text Embeddings V2. */
const TitanResponseSchema = z.object({
  embedding: z.array(z.number()).min(1),
  inputTextTokenCount: z.number().int().nonnegative().optional(),
});

/**
 * {@link Embedder} over Amazon Titan Text Embeddings V2 through Bedrock Runtime `InvokeModel`
 * (https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-titan-embed-text.html):
 * one call per text, body `{ inputText, dimensions, normalize: true }`, response
 * `{ embedding, inputTextTokenCount }`. Vectors are L2-normalised by the model (`normalize`).
 * Texts longer than {@link MAX_EMBEDDING_INPUT_CHARS} are cut to it; an empty text is sent as a
 * single space (the model rejects empty input). At most 4 calls are in flight.
 * @throws ModelError from {@link embed}: the service's errors as for `Converse` (retryable for
 *   throttling and 5xx after the SDK's retries), and a malformed or wrongly sized response
 */
export class BedrockEmbedder implements Embedder {
  /** `bedrock:<modelId>:<dimensions>`. */
  readonly name: string;
  readonly dimensions: number;
  readonly #client: BedrockRuntimeClient;
  readonly #modelId: string;

  /** @throws ConfigError for an empty model id or unsupported dimensions */
  constructor(options: BedrockEmbedderOptions) {
    const modelId = options.modelId ?? DEFAULT_EMBEDDING_MODEL_ID;
    const dimensions = options.dimensions ?? 1024;
    if (modelId.trim() === '') throw new ConfigError('BedrockEmbedder needs a non-empty modelId');
    if (!(TITAN_V2_DIMENSIONS as readonly number[]).includes(dimensions)) {
      throw new ConfigError(`BedrockEmbedder dimensions must be 256, 512 or 1024, got ${dimensions}`);
    }
    this.#client = options.client;
    this.#modelId = modelId;
    this.dimensions = dimensions;
    this.name = `bedrock:${modelId}:${dimensions}`;
  }

  /** One vector of {@link dimensions} floats per text, in order. */
  async embed(texts: readonly string[]): Promise<number[][]> {
    const limit = pLimit(CONCURRENCY);
    return Promise.all(texts.map((text) => limit(() => this.#embedOne(text))));
  }

  async #embedOne(text: string): Promise<number[]> {
    const inputText = text.trim() === '' ? ' ' : text.slice(0, MAX_EMBEDDING_INPUT_CHARS);
    let body: Uint8Array;
    try {
      const output = await this.#client.send(
        new (bedrockRuntimeSdk().InvokeModelCommand)({
          modelId: this.#modelId,
          contentType: 'application/json',
          accept: 'application/json',
          body: JSON.stringify({ inputText, dimensions: this.dimensions, normalize: true }),
        }),
      );
      body = output.body;
    } catch (error) {
      throw toModelError(error, this.#modelId, undefined, 'InvokeModel');
    }
    let json: unknown;
    try {
      json = JSON.parse(new TextDecoder().decode(body));
    } catch (error) {
      throw new ModelError(`Bedrock InvokeModel (${this.#modelId}) returned a body that is not JSON`, {
        cause: error,
        details: { modelId: this.#modelId },
      });
    }
    const parsed = TitanResponseSchema.safeParse(json);
    if (!parsed.success || parsed.data.embedding.length !== this.dimensions) {
      throw new ModelError(
        `Bedrock InvokeModel (${this.#modelId}) returned no embedding of ${this.dimensions} floats`,
        {
          details: {
            modelId: this.#modelId,
            ...(parsed.success ? { length: parsed.data.embedding.length } : {}),
          },
        },
      );
    }
    return parsed.data.embedding;
  }
}
