import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/errors.js';
import { DEFAULT_INDEX_KEY, MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import type { IndexedItem } from '../../shared/search/port.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';

// The index does not parse URNs, so short literal ids keep the boundary cases readable.
const ITEMS: IndexedItem[] = [
  {
    urn: 'cld:c1/doc.Chunk.s3',
    type: 'doc.Chunk',
    title: 'S3 > Bucket notifications',
    text: 'Send EventBridge notifications when objects are created in a bucket.',
  },
  {
    urn: 'cld:c1/doc.Chunk.lambda',
    type: 'doc.Chunk',
    title: 'Lambda > Function URLs',
    text: 'A function URL gives a Lambda function an HTTPS endpoint.',
  },
  {
    urn: 'cld:c10/doc.Chunk.vpc',
    type: 'doc.Chunk',
    title: 'EC2 > VPC',
    text: 'Choose private subnets for the resources placed in a VPC. Notifications are not involved.',
  },
  {
    urn: 'cld:c1/common.Message.note',
    type: 'common.Message',
    text: 'Remember to turn on bucket notifications for the upload bucket.',
  },
];

function index(items: IndexedItem[] = ITEMS): MiniSearchIndex {
  const result = new MiniSearchIndex();
  result.add(items);
  return result;
}

describe('MiniSearchIndex search', () => {
  it('ranks the relevant item first', async () => {
    const hits = await index().search('EventBridge notifications');

    expect(hits[0]).toMatchObject({
      urn: 'cld:c1/doc.Chunk.s3',
      type: 'doc.Chunk',
      title: 'S3 > Bucket notifications',
    });
    expect(hits[0]?.text).toContain('EventBridge');
    expect(hits.map((hit) => hit.score)).toEqual([...hits.map((hit) => hit.score)].sort((a, b) => b - a));
  });

  it('finds a term by prefix and tolerates a small typo', async () => {
    const idx = index();

    expect((await idx.search('notif')).map((hit) => hit.urn)).toContain('cld:c1/doc.Chunk.s3');
    expect((await idx.search('subnetts'))[0]?.urn).toBe('cld:c10/doc.Chunk.vpc');
  });

  it('filters by resource type', async () => {
    const hits = await index().search('notifications', { filter: { type: 'common.Message' } });

    expect(hits.map((hit) => hit.urn)).toEqual(['cld:c1/common.Message.note']);
  });

  it.each([
    ['cld:c1', ['cld:c1/common.Message.note', 'cld:c1/doc.Chunk.s3']],
    ['cld:c10', ['cld:c10/doc.Chunk.vpc']],
    ['cld:c1/doc.Chunk.s3', ['cld:c1/doc.Chunk.s3']],
    ['cld:c', []],
  ])('filters by prefix %s on path boundaries (c1 is not c10)', async (prefix, expected) => {
    const hits = await index().search('notifications', { filter: { prefix } });

    expect(hits.map((hit) => hit.urn).sort()).toEqual(expected);
  });

  it('drops hits the accept gate rejects before applying the limit', async () => {
    const items = Array.from({ length: 6 }, (_, i) => ({
      urn: `cld:c1/doc.Chunk.n${i}`,
      type: 'doc.Chunk',
      text: `notifications ${'notifications '.repeat(6 - i)}`,
    }));
    const idx = index(items);
    const ranked = (await idx.search('notifications', { limit: 6 })).map((hit) => hit.urn);
    const denied = new Set(ranked.slice(0, 2));
    const asked: string[] = [];

    const hits = await idx.search('notifications', {
      limit: 2,
      accept: (urn) => {
        asked.push(urn);
        return !denied.has(urn);
      },
    });

    expect(hits.map((hit) => hit.urn)).toEqual(ranked.slice(2, 4));
    expect(asked).toEqual(ranked.slice(0, 4));
  });

  it('returns no hits for an empty query', async () => {
    expect(await index().search('   ')).toEqual([]);
  });

  it.each([0, -1, 1.5])('rejects limit %s', async (limit) => {
    await expect(index().search('bucket', { limit })).rejects.toBeInstanceOf(ValidationError);
  });
});

describe('MiniSearchIndex add', () => {
  it('skips URNs already indexed, so adding twice is a no-op', () => {
    const idx = new MiniSearchIndex();

    expect(idx.add(ITEMS)).toBe(4);
    expect(idx.add([...ITEMS, ITEMS[0] as IndexedItem])).toBe(0);
    expect(idx.size).toBe(4);
    expect(idx.has('cld:c1/doc.Chunk.s3')).toBe(true);
    expect(idx.has('cld:c1/doc.Chunk.nope')).toBe(false);
  });
});

describe('MiniSearchIndex serialisation', () => {
  let dir: string;
  let storage: FilesystemStorage;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cld-index-'));
    storage = new FilesystemStorage(dir);
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('round-trips through toJSON and load with the same hits and scores', async () => {
    const original = index();

    const loaded = MiniSearchIndex.load(JSON.stringify(original));

    expect(loaded.size).toBe(4);
    expect(await loaded.search('bucket notifications')).toEqual(
      await original.search('bucket notifications'),
    );
    expect(MiniSearchIndex.load(original.toJSON()).size).toBe(4);
  });

  it('rejects JSON that is not a minisearch index', () => {
    expect(() => MiniSearchIndex.load('{"hello":1}')).toThrow(ValidationError);
    expect(() => MiniSearchIndex.load('not json')).toThrow(ValidationError);
  });

  it('opens an empty index when storage holds no generation', async () => {
    const idx = await MiniSearchIndex.open(storage);

    expect(idx.size).toBe(0);
    expect(idx.location?.generation).toBe(0);
  });

  it('saves generation n+1 and opens the newest one', async () => {
    const first = index(ITEMS.slice(0, 2));
    expect(await first.save(storage)).toBe(`${DEFAULT_INDEX_KEY}.1.json`);

    const reopened = await MiniSearchIndex.open(storage);
    expect(reopened.size).toBe(2);
    expect(await reopened.search('function url')).toEqual(await first.search('function url'));

    reopened.add(ITEMS.slice(2));
    expect(await reopened.save()).toBe(`${DEFAULT_INDEX_KEY}.2.json`);
    expect((await MiniSearchIndex.open(storage)).size).toBe(4);
    expect(await storage.findByPrefix(`${DEFAULT_INDEX_KEY}.`)).toEqual([
      `${DEFAULT_INDEX_KEY}.1.json`,
      `${DEFAULT_INDEX_KEY}.2.json`,
    ]);
  });

  it('picks the highest generation numerically (10 after 9), not by key order', async () => {
    await storage.put('indexes/chunks.9.json', JSON.stringify(index(ITEMS.slice(0, 1))));
    await storage.put('indexes/chunks.10.json', JSON.stringify(index(ITEMS.slice(0, 3))));
    await storage.put('indexes/chunks.x.json', 'ignored: not a generation');

    const idx = await MiniSearchIndex.open(storage);

    expect(idx.size).toBe(3);
    expect(idx.location?.generation).toBe(10);
    expect(await idx.save()).toBe('indexes/chunks.11.json');
  });

  it('moves on to the next generation when another writer took it', async () => {
    const idx = await MiniSearchIndex.open(storage);
    idx.add(ITEMS);
    await storage.put('indexes/chunks.1.json', JSON.stringify(index(ITEMS.slice(0, 1))));

    expect(await idx.save()).toBe('indexes/chunks.2.json');
  });

  it('keeps separate stems apart', async () => {
    await index(ITEMS.slice(0, 1)).save(storage, 'indexes/other');

    expect((await MiniSearchIndex.open(storage, 'indexes/chunks')).size).toBe(0);
    expect((await MiniSearchIndex.open(storage, 'indexes/other')).size).toBe(1);
  });

  it('refuses to save an in-memory index without a storage', async () => {
    await expect(index().save()).rejects.toBeInstanceOf(ValidationError);
  });
});
