/**
 * The Bedrock embedder driven through the real `BedrockRuntimeClient` against the local stub of
 * `POST /model/{id}/invoke` (InvokeModel), and hybrid retrieval (BM25 fused with the embeddings by
 * reciprocal rank fusion) over the chunk index with vectors stored beside it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, ModelError } from '../../shared/errors.js';
import { createBedrockClient } from '../../shared/llm/bedrock.js';
import { BedrockEmbedder, DEFAULT_EMBEDDING_MODEL_ID } from '../../shared/llm/bedrock-embedder.js';
import type { Embedder } from '../../shared/llm/port.js';
import { MiniSearchIndex, RRF_K } from '../../shared/search/minisearch-index.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import { type ConverseStub, serviceError, startConverseStub } from '../helpers/converse-stub.js';

let stub: ConverseStub;
let client: BedrockRuntimeClient;

beforeEach(async () => {
  stub = await startConverseStub();
  client = createBedrockClient({
    region: 'us-east-1',
    endpoint: stub.endpoint,
    credentials: { accessKeyId: 'AKIDTESTEXAMPLE', secretAccessKey: 'fake-secret-key' },
    maxAttempts: 2,
    retryStrategy: new ConfiguredRetryStrategy(2, () => 10),
  });
});

afterEach(async () => {
  client.destroy();
  await stub.stop();
});

const vector = (dimensions: number, hot: number) =>
  Array.from({ length: dimensions }, (_, i) => (i === hot ? 1 : 0));

describe('BedrockEmbedder', () => {
  it('calls InvokeModel once per text with the Titan V2 body and returns the embeddings in order', async () => {
    stub.enqueue(
      { body: { embedding: vector(256, 1), inputTextTokenCount: 3 } },
      { body: { embedding: vector(256, 2), inputTextTokenCount: 1 } },
    );
    const embedder = new BedrockEmbedder({ client, dimensions: 256 });

    const vectors = await embedder.embed(['first text', '']);

    expect(embedder.name).toBe(`bedrock:${DEFAULT_EMBEDDING_MODEL_ID}:256`);
    expect(vectors.map((v) => v.indexOf(1))).toEqual([1, 2]);
    expect(stub.requests.map((r) => r.path)).toEqual([
      '/model/amazon.titan-embed-text-v2%3A0/invoke',
      '/model/amazon.titan-embed-text-v2%3A0/invoke',
    ]);
    expect(stub.requests.map((r) => r.body)).toEqual([
      { inputText: 'first text', dimensions: 256, normalize: true },
      { inputText: ' ', dimensions: 256, normalize: true },
    ]);
    expect(stub.requests[0]?.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 /);
  });

  it('fails with a ModelError for an embedding of the wrong size and for a body that is not JSON', async () => {
    const embedder = new BedrockEmbedder({ client, dimensions: 256 });
    stub.enqueue({ body: { embedding: vector(255, 0) } });
    await expect(embedder.embed(['x'])).rejects.toThrow(/no embedding of 256 floats/);
    stub.enqueue({ rawBody: 'not json' });
    await expect(embedder.embed(['x'])).rejects.toBeInstanceOf(ModelError);
  });

  it('maps a rejected request to a non-retryable and throttling to a retryable ModelError', async () => {
    const embedder = new BedrockEmbedder({ client, dimensions: 256 });
    stub.enqueue(serviceError('ValidationException', 400));
    await expect(embedder.embed(['x'])).rejects.toMatchObject({
      retryable: false,
      message: expect.stringContaining('Bedrock InvokeModel (amazon.titan-embed-text-v2:0) rejected'),
    });
    stub.enqueue(serviceError('ThrottlingException', 429), serviceError('ThrottlingException', 429));
    await expect(embedder.embed(['x'])).rejects.toMatchObject({ retryable: true });
  });

  it.each([128, 2048])('rejects %s dimensions', (dimensions) => {
    expect(() => new BedrockEmbedder({ client, dimensions: dimensions as 256 })).toThrow(ConfigError);
  });
});

/** A deterministic embedder over three topics, standing in for a semantic model. */
class TopicEmbedder implements Embedder {
  readonly name = 'test:topics';
  async embed(texts: readonly string[]): Promise<number[][]> {
    return texts.map((text) => {
      const lower = text.toLowerCase();
      const v = [
        /storage|bucket|object/.test(lower) ? 1 : 0,
        /queue|message/.test(lower) ? 1 : 0,
        /key|encrypt/.test(lower) ? 1 : 0,
      ];
      const norm = Math.hypot(...v) || 1;
      return v.map((x) => x / norm);
    });
  }
}

describe('hybrid retrieval', () => {
  const items = [
    { urn: 'cld:d/doc.Chunk.bucket', type: 'doc.Chunk', text: 'A bucket stores objects.' },
    {
      urn: 'cld:d/doc.Chunk.queue',
      type: 'doc.Chunk',
      text: 'A queue holds messages for storage consumers.',
    },
    { urn: 'cld:d/doc.Chunk.key', type: 'doc.Chunk', text: 'A key encrypts data at rest.' },
  ];

  async function hybrid(): Promise<MiniSearchIndex> {
    const index = new MiniSearchIndex();
    index.add(items);
    const embedder = new TopicEmbedder();
    const vectors = await embedder.embed(items.map((item) => item.text));
    index.addVectors(
      items.map((item, i) => ({ urn: item.urn, vector: vectors[i] as number[] })),
      embedder.name,
    );
    index.useEmbedder(embedder);
    return index;
  }

  it('fuses the BM25 and the dense ranking by reciprocal rank fusion', async () => {
    const index = await hybrid();
    // BM25: only the queue chunk has the word "storage". Dense: bucket (1.0), queue (0.71), key (0).
    const hits = await index.search('storage');
    expect(hits.map((hit) => hit.urn)).toEqual([
      'cld:d/doc.Chunk.queue',
      'cld:d/doc.Chunk.bucket',
      'cld:d/doc.Chunk.key',
    ]);
    expect(hits.map((hit) => hit.score)).toEqual([
      1 / (RRF_K + 1) + 1 / (RRF_K + 2),
      1 / (RRF_K + 1),
      1 / (RRF_K + 3),
    ]);
    expect(
      await index.search('storage', { limit: 1, accept: (urn) => urn !== 'cld:d/doc.Chunk.queue' }),
    ).toMatchObject([{ urn: 'cld:d/doc.Chunk.bucket', text: 'A bucket stores objects.' }]);
  });

  it('keeps the vectors through save and open, and stays lexical for another embedder', async () => {
    const root = await mkdtemp(join(tmpdir(), 'cld-hybrid-'));
    try {
      const storage = new FilesystemStorage(root);
      await (await hybrid()).save(storage);
      const reopened = await MiniSearchIndex.open(storage);
      expect(reopened.embeddingModel).toBe('test:topics');
      expect(
        reopened.missingVectors(
          items.map((item) => item.urn),
          'test:topics',
        ),
      ).toEqual([]);
      expect(
        reopened.missingVectors(
          items.map((item) => item.urn),
          'other',
        ),
      ).toHaveLength(3);
      expect((await reopened.search('storage')).map((hit) => hit.urn)).toEqual(['cld:d/doc.Chunk.queue']);
      reopened.useEmbedder(new TopicEmbedder());
      expect((await reopened.search('storage')).map((hit) => hit.urn)).toContain('cld:d/doc.Chunk.bucket');
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
