import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import SearchableMap from 'minisearch/SearchableMap';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markdownChunks } from '../../shared/search/chunking.js';
import { MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import type { IndexedItem, SearchHit } from '../../shared/search/port.js';
import {
  coreKey,
  encodePostingShard,
  PostingShard,
  type Postings,
  packPrefix,
  SHARD_PACK_VERSION,
  treeFromString,
  treeToString,
} from '../../shared/search/shard-pack.js';
import { ShardedChunkIndex } from '../../shared/search/sharded-index.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';

// A slice of the real corpus: six aws-cdk-lib module READMEs (≈ 260 KB), chunked as ingest does.
const MODULES = ['aws-s3', 'aws-lambda', 'aws-events', 'aws-iam', 'aws-sqs', 'aws-dynamodb'];
const CDK_ROOT = dirname(createRequire(import.meta.url).resolve('aws-cdk-lib/package.json'));

function corpus(): IndexedItem[] {
  const items: IndexedItem[] = [];
  for (const module of MODULES) {
    const source = `node_modules/aws-cdk-lib/${module}/README.md`;
    const content = readFileSync(join(CDK_ROOT, module, 'README.md'), 'utf8');
    for (const [i, chunk] of markdownChunks(content, 1500).entries()) {
      const heading = /^#+\s+(.+)$/m.exec(chunk.text)?.[1];
      const item: IndexedItem = {
        urn: `cld:doc.Document.${module}/doc.Chunk.${i}`,
        type: 'doc.Chunk',
        text: chunk.text,
        source,
      };
      if (heading) item.title = `${module} > ${heading}`;
      items.push(item);
    }
  }
  // One item of another type, for the type filter.
  items.push({
    urn: 'cld:c1/common.Message.note',
    type: 'common.Message',
    text: 'Grant the bucket read access.',
  });
  return items;
}

// A query that names a section's own heading ("Encryption" in the SQS README): the section prior.
const SECTION_QUERY = 'How do I turn on encryption for a queue?';

// Exact terms, prefixes, typos (fuzzy), API names (the module prior), the section prior, words
// absent from the corpus.
const QUERIES = [
  'How do I grant a Lambda function read access to an S3 bucket?',
  'custom event bus rule with a schedule',
  'dead letter queue for a function',
  'encrypt a bucket with a KMS key',
  'PolicyStatement with conditions',
  'global secondary index on a table',
  'bucket notificatoins to SQS',
  'lambda layers and function versions alias',
  'fifo queue content based deduplication',
  'notif',
  'provisioned concurrency autoscaling',
  'cross account role assume',
  'TableV2 replicas in another region',
  SECTION_QUERY,
  'zebra quantum xylophone',
];

function summary(hits: readonly SearchHit[]) {
  return hits.map((hit) => ({ ...hit }));
}

describe('ShardedChunkIndex', () => {
  let dir: string;
  let storage: FilesystemStorage;
  let whole: MiniSearchIndex;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cld-sharded-'));
    storage = new FilesystemStorage(dir);
    const built = new MiniSearchIndex();
    built.add(corpus());
    await built.save(storage);
    // The reference: the whole generation, opened as the tool function opened it before.
    whole = await MiniSearchIndex.open(storage);
  }, 120_000);

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('returns the same hits, scores, titles and texts as the whole generation', async () => {
    const sharded = await ShardedChunkIndex.open(storage);
    let compared = 0;
    for (const query of QUERIES) {
      for (const limit of [3, 8, 20]) {
        const expected = summary(await whole.search(query, { limit }));
        expect(summary(await sharded.search(query, { limit })), `${query} (top ${limit})`).toEqual(expected);
        compared += expected.length;
      }
    }
    expect(compared).toBeGreaterThan(300);
    // From the pack, not the whole generation read as a fallback.
    expect(sharded.reads.some((key) => key.includes('/postings.'))).toBe(true);
    expect(sharded.reads.some((key) => key.endsWith('chunks.1.json'))).toBe(false);
  });

  it('applies the type and prefix filters and the policy gate as the whole generation does', async () => {
    const sharded = await ShardedChunkIndex.open(storage);
    const accept = (urn: string) => !urn.endsWith('.0') && !urn.includes('.1');
    for (const query of QUERIES.slice(0, 6)) {
      for (const options of [
        { filter: { type: 'common.Message' } },
        { filter: { prefix: 'cld:doc.Document.aws-s3' } },
        { accept },
      ]) {
        expect(summary(await sharded.search(query, options))).toEqual(
          summary(await whole.search(query, options)),
        );
      }
    }
  });

  it('ranks past the head it first looks at when the policy gate refuses most of it', async () => {
    const sharded = await ShardedChunkIndex.open(storage);
    const query = QUERIES[0] as string;
    // Accept only the last few chunks of the whole ranking: far below the head (2 × limit + 8).
    const all = await whole.search(query, { limit: 1000 });
    expect(all.length).toBeGreaterThan(60);
    const tail = new Set(all.slice(-5).map((hit) => hit.urn));
    const accept = (urn: string) => tail.has(urn);

    const hits = await sharded.search(query, { limit: 3, accept });

    expect(hits.map((hit) => hit.urn)).toEqual(all.slice(-5, -2).map((hit) => hit.urn));
    expect(summary(hits)).toEqual(summary(await whole.search(query, { limit: 3, accept })));
  });

  it('reads the core and only the posting shards its query needs at a cold search', async () => {
    const sharded = await ShardedChunkIndex.open(storage);
    const postingShards = (await storage.findByPrefix(`${packPrefix('indexes/chunks', 1)}postings.`)).length;
    expect(postingShards).toBeGreaterThan(4);
    // Opening reads nothing (a cold start that only asks the graph pays one listing).
    expect(sharded.reads).toEqual([]);

    await sharded.search('dead letter queue for a function');

    expect(sharded.reads[0]).toBe(coreKey('indexes/chunks', 1));
    const postingReads = sharded.reads.filter((key) => key.includes('/postings.'));
    expect(postingReads.length).toBeGreaterThan(0);
    expect(postingReads.length).toBeLessThan(postingShards);
    expect(sharded.reads.some((key) => key.endsWith('chunks.1.json'))).toBe(false);
  });

  it('reads the whole generation when it has no pack', async () => {
    const bare = new FilesystemStorage(await mkdtemp(join(tmpdir(), 'cld-sharded-bare-')));
    await bare.put('indexes/chunks.1.json', JSON.stringify(whole));
    const sharded = await ShardedChunkIndex.open(bare);

    const hits = await sharded.search(QUERIES[0] as string);

    expect(hits.length).toBeGreaterThan(0);
    expect(summary(hits)).toEqual(summary(await whole.search(QUERIES[0] as string)));
    expect(sharded.reads).toEqual([coreKey('indexes/chunks', 1)]);
  });

  it('answers nothing from an empty store, and rejects a bad limit', async () => {
    const empty = await ShardedChunkIndex.open(
      new FilesystemStorage(await mkdtemp(join(tmpdir(), 'cld-sharded-empty-'))),
    );
    expect(await empty.search('bucket')).toEqual([]);
    await expect(empty.search('bucket', { limit: 0 })).rejects.toMatchObject({ code: 'VALIDATION' });
  });

  it('reads the whole generation when its pack is of an older layout', async () => {
    const old = new FilesystemStorage(await mkdtemp(join(tmpdir(), 'cld-sharded-old-')));
    await old.put('indexes/chunks.1.json', JSON.stringify(whole));
    // A pack as version 2 wrote it: under the prefix without a version, with a JSON core.
    const v2Core = JSON.stringify({
      ...JSON.parse((await storage.get(coreKey('indexes/chunks', 1))).toString()),
      pack: 2,
    });
    await old.put('indexes/chunks-shards/1/core.json', v2Core);
    expect(packPrefix('indexes/chunks', 1)).toBe(`indexes/chunks-shards/1/v${SHARD_PACK_VERSION}/`);
    const sharded = await ShardedChunkIndex.open(old);

    const hits = await sharded.search(QUERIES[0] as string);

    expect(summary(hits)).toEqual(summary(await whole.search(QUERIES[0] as string)));
    expect(sharded.reads).toEqual([coreKey('indexes/chunks', 1)]);
  });

  it('reads the whole generation when the pack is of the previous layout (v3: the dictionary as nested arrays)', async () => {
    const old = new FilesystemStorage(await mkdtemp(join(tmpdir(), 'cld-sharded-v3-')));
    await old.put('indexes/chunks.1.json', JSON.stringify(whole));
    const current = JSON.parse((await storage.get(coreKey('indexes/chunks', 1))).toString('utf8'));
    // The v3 core: same fields, the dictionary as `[edge, child]` arrays, under the v3 prefix.
    const nested = (node: Map<string, unknown>): unknown[] =>
      [...node].map(([edge, child]) => [edge, child === true ? 1 : nested(child as Map<string, unknown>)]);
    const v3Core = { ...current, pack: 3, tree: nested(treeFromString(current.tree)) };
    await old.put('indexes/chunks-shards/1/v3/core.json', JSON.stringify(v3Core));
    for (const key of await storage.findByPrefix(packPrefix('indexes/chunks', 1)))
      if (key !== coreKey('indexes/chunks', 1))
        await old.put(key.replace(`/v${SHARD_PACK_VERSION}/`, '/v3/'), await storage.get(key));
    const sharded = await ShardedChunkIndex.open(old);

    const hits = await sharded.search(QUERIES[0] as string);

    expect(SHARD_PACK_VERSION).toBe(5);
    expect(summary(hits)).toEqual(summary(await whole.search(QUERIES[0] as string)));
    expect(sharded.reads).toEqual([coreKey('indexes/chunks', 1)]);
  });

  it('reads the whole generation when the pack is of the previous layout (v4: no own headings)', async () => {
    const old = new FilesystemStorage(await mkdtemp(join(tmpdir(), 'cld-sharded-v4-')));
    await old.put('indexes/chunks.1.json', JSON.stringify(whole));
    const current = JSON.parse((await storage.get(coreKey('indexes/chunks', 1))).toString('utf8'));
    // The v4 core: five numbers per chunk (no heading index) and no `headings`, under the v4 prefix.
    const docs = (current.docs as number[]).filter((_, i) => i % 6 !== 5);
    const { headings: _headings, ...rest } = current;
    await old.put('indexes/chunks-shards/1/v4/core.json', JSON.stringify({ ...rest, pack: 4, docs }));
    for (const key of await storage.findByPrefix(packPrefix('indexes/chunks', 1)))
      if (key !== coreKey('indexes/chunks', 1))
        await old.put(key.replace(`/v${SHARD_PACK_VERSION}/`, '/v4/'), await storage.get(key));
    const sharded = await ShardedChunkIndex.open(old);

    const hits = await sharded.search(SECTION_QUERY);

    expect(summary(hits)).toEqual(summary(await whole.search(SECTION_QUERY)));
    expect(sharded.reads).toEqual([coreKey('indexes/chunks', 1)]);
  });

  it("refuses a core of another layout version at this version's key, and reads the whole generation", async () => {
    const stale = new FilesystemStorage(await mkdtemp(join(tmpdir(), 'cld-sharded-stale-')));
    await stale.put('indexes/chunks.1.json', JSON.stringify(whole));
    const current = JSON.parse((await storage.get(coreKey('indexes/chunks', 1))).toString('utf8'));
    await stale.put(coreKey('indexes/chunks', 1), JSON.stringify({ ...current, pack: 3 }));
    const sharded = await ShardedChunkIndex.open(stale);

    const hits = await sharded.search(QUERIES[0] as string);

    expect(summary(hits)).toEqual(summary(await whole.search(QUERIES[0] as string)));
    // The core only: no posting or text shard of the refused pack is read.
    expect(sharded.reads).toEqual([coreKey('indexes/chunks', 1)]);
  });

  it.each([
    ['a negative document count', { documentCount: -1 }],
    ['a field id that is not an integer', { fieldIds: { title: 0.5, text: 1, source: 2 } }],
    ['a dictionary that is not a string', { tree: [] }],
    ['a shard bound that is not a string', { bounds: [1] }],
    ['an average field length that is not a number', { averageFieldLength: ['1'] }],
    ['a vectors model that is not a string', { vectors: 1 }],
    ['own headings that are not strings', { headings: [1] }],
    ['a heading index past the table', { headings: [] }],
  ])('refuses a core with %s, and reads the whole generation', async (_, change) => {
    const bad = new FilesystemStorage(await mkdtemp(join(tmpdir(), 'cld-sharded-core-')));
    await bad.put('indexes/chunks.1.json', JSON.stringify(whole));
    const current = JSON.parse((await storage.get(coreKey('indexes/chunks', 1))).toString('utf8'));
    await bad.put(coreKey('indexes/chunks', 1), JSON.stringify({ ...current, ...change }));
    const sharded = await ShardedChunkIndex.open(bad);

    const hits = await sharded.search(QUERIES[0] as string);

    expect(summary(hits)).toEqual(summary(await whole.search(QUERIES[0] as string)));
    expect(sharded.reads).toEqual([coreKey('indexes/chunks', 1)]);
  });

  it('fails with a ValidationError when the term dictionary does not parse where a search reads it', async () => {
    const copy = new FilesystemStorage(await mkdtemp(join(tmpdir(), 'cld-sharded-tree-')));
    for (const key of await storage.findByPrefix('indexes/'))
      if (key !== coreKey('indexes/chunks', 1)) await copy.put(key, await storage.get(key));
    const core = JSON.parse((await storage.get(coreKey('indexes/chunks', 1))).toString('utf8'));
    // Cut short: the last top-level entry's child is longer than what is left.
    core.tree = core.tree.slice(0, -1);
    await copy.put(coreKey('indexes/chunks', 1), JSON.stringify(core));
    const sharded = await ShardedChunkIndex.open(copy);

    await expect(sharded.search('bucket')).rejects.toMatchObject({ name: 'ValidationError' });
  });

  it('fails with a ValidationError when a posting shard does not decode', async () => {
    const copy = new FilesystemStorage(await mkdtemp(join(tmpdir(), 'cld-sharded-bad-')));
    for (const key of await storage.findByPrefix('indexes/')) {
      const data = await storage.get(key);
      // Cut each posting shard in its posting words: the header still reads, a list does not.
      await copy.put(key, key.includes('/postings.') ? data.subarray(0, data.length - 8) : data);
    }
    const sharded = await ShardedChunkIndex.open(copy);

    await expect(sharded.search('bucket')).rejects.toMatchObject({ name: 'ValidationError' });
  });
});

describe('the term dictionary as one string (pack v4)', () => {
  // Edges with the format's own characters (`:`, base-36 digits), a non-ASCII term, a term that
  // is a prefix of others (a leaf inside a node with children) and a one-letter term.
  const terms = ['10:x', '1', 'bucket', 'buckets', 'bucketpolicy', 'é', 'éa', 'z:', 'zz', 'a'];

  function walk(node: Map<string, unknown>): unknown[] {
    return [...node].map(([edge, child]) => [
      edge,
      child === true ? true : walk(child as Map<string, unknown>),
    ]);
  }

  it('decodes to the same radix tree, node for node and in the same order', () => {
    const map = new SearchableMap<true>();
    for (const term of terms) map.set(term, true);
    const tree = (map as unknown as { _tree: Map<string, unknown> })._tree;

    const decoded = treeFromString(treeToString(tree as never));

    expect(walk(decoded)).toEqual(walk(tree));
  });

  it('answers minisearch lookups (exact, prefix, fuzzy) as the tree it was made from', () => {
    const map = new SearchableMap<true>();
    for (const term of terms) map.set(term, true);
    const tree = (map as unknown as { _tree: Map<string, never> })._tree;
    const lazy = new SearchableMap<true>(treeFromString(treeToString(tree)) as Map<string, never>);

    expect(lazy.has('buckets')).toBe(true);
    expect(lazy.has('bucketp')).toBe(false);
    expect([...lazy.atPrefix('bucket').keys()]).toEqual([...map.atPrefix('bucket').keys()]);
    expect([...lazy.fuzzyGet('bucet', 1)]).toEqual([...map.fuzzyGet('bucet', 1)]);
    expect([...lazy.keys()]).toEqual([...map.keys()]);
  });

  it('throws a ValidationError at the first read of a node that does not decode', () => {
    for (const bad of ['3:ab', 'x:a', '1:a5:0:', '1:a', ':a']) {
      const node = treeFromString(bad);
      expect(() => node.get('a'), bad).toThrow(expect.objectContaining({ name: 'ValidationError' }));
    }
  });
});

describe('PostingShard', () => {
  /** A decoded term's postings as plain Maps (the form minisearch's own index holds). */
  const plain = (postings: Postings | undefined) =>
    postings && new Map([...postings].map(([field, list]) => [field, new Map(list)]));

  const entries = [
    ['alpha', { '0': { '3': 1, '12': 4 }, '2': { '3': 2 } }],
    ['beta', { '1': { '7': 9 } }],
    ['gamma', {}],
  ] as const;

  it('decodes each posting list as minisearch holds it, in the serialisation order', () => {
    const shard = PostingShard.parse(encodePostingShard(entries));

    expect(shard?.size).toBe(3);
    expect(plain(shard?.postings('alpha'))).toEqual(
      new Map([
        [
          0,
          new Map([
            [3, 1],
            [12, 4],
          ]),
        ],
        [2, new Map([[3, 2]])],
      ]),
    );
    expect([...(shard?.postings('alpha')?.get(0) ?? [])].map(([shortId]) => shortId)).toEqual([3, 12]);
    expect(plain(shard?.postings('beta'))).toEqual(new Map([[1, new Map([[7, 9]])]]));
    expect(plain(shard?.postings('gamma'))).toEqual(new Map());
    expect(shard?.postings('delta')).toBeUndefined();
  });

  it('decodes from a Buffer at an unaligned offset', () => {
    const encoded = encodePostingShard(entries);
    const padded = Buffer.concat([Buffer.from([7]), encoded]).subarray(1);

    expect(plain(PostingShard.parse(padded)?.postings('beta'))).toEqual(new Map([[1, new Map([[7, 9]])]]));
  });

  it('refuses a shard whose header or offsets do not hold', () => {
    const encoded = encodePostingShard(entries);
    expect(PostingShard.parse(Buffer.from('{"alpha":{}}'))).toBeUndefined();
    expect(PostingShard.parse(encoded.subarray(0, encoded.length - 4))).toBeUndefined();
    expect(PostingShard.parse(Buffer.alloc(2))).toBeUndefined();
    // Terms out of order: the lookup's binary search would miss them.
    expect(
      PostingShard.parse(
        encodePostingShard([
          ['beta', { '1': { '7': 9 } }],
          ['alpha', { '0': { '3': 1 } }],
        ]),
      ),
    ).toBeUndefined();
  });

  it('reads a list in place: its size and pairs from its start in the shared words', () => {
    const list = PostingShard.parse(encodePostingShard(entries))?.postings('alpha')?.get(0);

    expect(list?.size).toBe(2);
    expect([list?.words[list.start], list?.words[(list?.start ?? 0) + 1]]).toEqual([3, 1]);
    expect([...(list ?? [])]).toEqual([
      [3, 1],
      [12, 4],
    ]);
    // An empty list holds nothing, whatever words follow it in the shard.
    const empty = PostingShard.parse(
      encodePostingShard([
        ['a', { '0': {} }],
        ['b', { '0': { '0': 7 } }],
      ]),
    );
    expect(empty?.postings('a')?.get(0)?.size).toBe(0);
    expect([...(empty?.postings('a')?.get(0) ?? [])]).toEqual([]);
  });

  it('refuses to encode a frequency that is not an unsigned 32-bit integer', () => {
    expect(() => encodePostingShard([['x', { '0': { '1': 1.5 } }]])).toThrow(/does not fit/);
  });
});
