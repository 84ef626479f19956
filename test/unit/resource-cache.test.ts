/**
 * Immutable resources are read once (issue 16): the ResourceIndex keeps what it read or wrote,
 * parsed and validated, in a bounded LRU; the policy is still asked on every read; "not found"
 * is never kept; cached resources are frozen. Also the LRU itself and the token-count memo.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LruCache } from '../../shared/cache/lru.js';
import { GenerationalMemo } from '../../shared/cache/memo.js';
import { countTokens, tokenCountStats } from '../../shared/context/tokens.js';
import { NotFoundError, PolicyDeniedError } from '../../shared/errors.js';
import type { Actor } from '../../shared/policy/port.js';
import { RulesPolicy } from '../../shared/policy/rules.js';
import { ResourceIndex } from '../../shared/resources/resource-index.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import { childUrn } from '../../shared/urn.js';
import { CountingStorage } from '../bench/memory-storage.js';
import { conversation, message, task } from './builders.js';

const policy = new RulesPolicy(
  JSON.parse(await readFile(new URL('../../policies/rules.json', import.meta.url), 'utf8')) as unknown,
);
const CONVERSATION = conversation('c');
const C = CONVERSATION.meta.id;
const MESSAGE = message(C, 'user message', 'What is a URN?');
const user: Actor = { kind: 'user', id: 'U123', conversation: C };
const stranger: Actor = {
  kind: 'user',
  id: 'U999',
  conversation: childUrn(undefined, 'common.Conversation', 'someone else'),
};

describe('ResourceIndex read cache', () => {
  let root: string;
  let storage: CountingStorage;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'cld-resource-cache-'));
    storage = new CountingStorage(new FilesystemStorage(root));
    await new ResourceIndex(storage, policy).put(user, CONVERSATION);
    await new ResourceIndex(storage, policy).put(user, MESSAGE);
    storage.reads = 0;
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('reads a resource from storage once, then from the cache (get, getAs, getMany, list)', async () => {
    const index = new ResourceIndex(storage, policy);

    const first = await index.get(user, MESSAGE.meta.id);
    const again = await index.getAs(user, 'common.Message', MESSAGE.meta.id);
    const listed = await index.list(user, C);
    const many = await index.getMany(user, [C, MESSAGE.meta.id]);

    expect(again).toBe(first);
    expect(listed).toEqual([first]);
    expect(many.map((r) => r.meta.id)).toEqual([C, MESSAGE.meta.id]);
    expect(storage.reads).toBe(2); // the message once, the conversation once (in getMany)
    expect(index.cacheStats.hits).toBeGreaterThanOrEqual(3);
  });

  it('keeps what it wrote: a read after its own put costs no storage read', async () => {
    const index = new ResourceIndex(storage, policy);
    const t = task(MESSAGE.meta.id, 'research');
    const plan: Actor = { kind: 'plan', id: 'plan', conversation: C, message: MESSAGE.meta.id };
    await index.put(plan, t);

    expect((await index.get(plan, t.meta.id)).meta.id).toBe(t.meta.id);
    expect(storage.reads).toBe(0);
  });

  it('asks the policy on every read, hit or miss', async () => {
    const index = new ResourceIndex(storage, policy);
    await index.get(user, MESSAGE.meta.id);

    await expect(index.get(stranger, MESSAGE.meta.id)).rejects.toBeInstanceOf(PolicyDeniedError);
    await expect(index.getMany(stranger, [MESSAGE.meta.id])).rejects.toBeInstanceOf(PolicyDeniedError);
  });

  it('does not keep "not found": a resource created later is read', async () => {
    const index = new ResourceIndex(storage, policy);
    const later = message(C, 'later');
    await expect(index.get(user, later.meta.id)).rejects.toBeInstanceOf(NotFoundError);
    await new ResourceIndex(storage, policy).put(user, later); // another writer (another container)

    expect((await index.get(user, later.meta.id)).meta.id).toBe(later.meta.id);
  });

  it('hands out frozen resources, so no caller can change what another reads', async () => {
    const index = new ResourceIndex(storage, policy);
    const read = await index.getAs(user, 'common.Message', MESSAGE.meta.id);

    expect(Object.isFrozen(read)).toBe(true);
    expect(Object.isFrozen(read.meta)).toBe(true);
    expect(() => {
      (read as { content: string }).content = 'changed';
    }).toThrow(TypeError);
  });

  it('is bounded: past maxEntries the least recently used is read again; 0 turns it off', async () => {
    const small = new ResourceIndex(storage, policy, { maxEntries: 1 });
    await small.get(user, C);
    await small.get(user, MESSAGE.meta.id); // evicts C
    await small.get(user, MESSAGE.meta.id); // hit
    await small.get(user, C); // read again
    expect(storage.reads).toBe(3);

    storage.reads = 0;
    const off = new ResourceIndex(storage, policy, { maxEntries: 0 });
    await off.get(user, C);
    await off.get(user, C);
    expect(storage.reads).toBe(2);
  });
});

describe('LruCache', () => {
  it('evicts the least recently used past the entry bound', () => {
    const lru = new LruCache<string, number>(2);
    lru.set('a', 1);
    lru.set('b', 2);
    expect(lru.get('a')).toBe(1); // a is now the most recent
    lru.set('c', 3);

    expect(lru.get('b')).toBeUndefined();
    expect(lru.get('a')).toBe(1);
    expect(lru.get('c')).toBe(3);
    expect(lru.stats.evictions).toBe(1);
  });

  it('evicts past the weight bound, and never keeps an entry heavier than the bound', () => {
    const lru = new LruCache<string, string>(100, 10);
    lru.set('a', 'x', 6);
    lru.set('b', 'y', 4);
    expect(lru.weight).toBe(10);
    lru.set('c', 'z', 1); // 11 > 10: a goes
    expect(lru.get('a')).toBeUndefined();
    expect(lru.weight).toBe(5);
    lru.set('huge', 'w', 11);
    expect(lru.get('huge')).toBeUndefined();
    expect(lru.size).toBe(2);
  });

  it('weighs an entry by its weight rounded up, at least 1, under a weight bound', () => {
    const lru = new LruCache<string, string>(100, 10);
    for (let i = 0; i < 4; i++) lru.set(`zero-${i}`, 'v'); // weight 0 counts 1
    lru.set('half', 'v', 0.5); // counts 1
    lru.set('two-and-a-bit', 'v', 2.1); // counts 3
    expect(lru.weight).toBe(8);
    lru.set('three', 'v', 3); // 11 > 10: zero-0 goes
    expect(lru.get('zero-0')).toBeUndefined();
    expect(lru.weight).toBe(10);
    expect(lru.stats.evictions).toBe(1);
  });

  it('drops a kept entry that is set again heavier than the bound, and counts hits and misses', () => {
    const lru = new LruCache<string, string>(10, 10);
    lru.set('a', 'x', 3);
    expect(lru.get('a')).toBe('x');
    lru.set('a', 'y', 11);
    expect(lru.get('a')).toBeUndefined();
    expect(lru.weight).toBe(0);
    expect(lru.stats).toEqual({ hits: 1, misses: 1, evictions: 0 });
  });

  it('keeps a hit entry past many later inserts (a hit makes it the most recent)', () => {
    const lru = new LruCache<number, number>(100);
    for (let i = 0; i < 100; i++) lru.set(i, i);
    for (let round = 0; round < 10; round++) {
      expect(lru.get(0)).toBe(0);
      for (let i = 0; i < 50; i++) lru.set(1_000 + round * 50 + i, i);
    }
    expect(lru.get(0)).toBe(0);
    expect(lru.get(1)).toBeUndefined();
    expect(lru.size).toBe(100);
    expect(lru.stats.evictions).toBe(500);
  });

  it('rejects bounds that are not whole numbers of at least 1', () => {
    expect(() => new LruCache(0)).toThrow(RangeError);
    expect(() => new LruCache(1.5)).toThrow(RangeError);
    expect(() => new LruCache(10, 0)).toThrow(RangeError);
    expect(() => new LruCache(10, 10.5)).toThrow(RangeError);
    expect(() => new LruCache(LruCache.MAX_ENTRIES + 1)).toThrow(RangeError);
    expect(new LruCache(10, Number.POSITIVE_INFINITY).maxWeight).toBe(Number.POSITIVE_INFINITY);
  });
});

describe('GenerationalMemo', () => {
  it('keeps what was used in the last generation and holds at most two generations', () => {
    const memo = new GenerationalMemo<string, number>(2);
    memo.set('a', 1);
    memo.set('b', 2);
    memo.set('c', 3); // young {c}, old {a, b}
    expect(memo.get('a')).toBe(1); // moved to the young generation: young {c, a}, old {b}
    memo.set('d', 4); // young {d}, old {c, a}: b dropped
    expect(memo.get('b')).toBeUndefined();
    expect(memo.get('a')).toBe(1); // young {d, a}, old {c}
    expect(memo.get('c')).toBe(3); // young {c}, old {d, a}
    expect(memo.size).toBe(3);
    expect(memo.stats).toEqual({ hits: 3, misses: 1, evictions: 1 });
  });

  it('rejects a bound below 1', () => {
    expect(() => new GenerationalMemo(0)).toThrow(RangeError);
  });
});

describe('countTokens memo', () => {
  it('counts a text of 64+ characters once, and gives the same count as a fresh count', () => {
    const text = `A system prompt that every turn of every task repeats, word for word. ${Date.now()}`;
    const before = { ...tokenCountStats };
    const first = countTokens(text);
    const second = countTokens(text);

    expect(second).toBe(first);
    expect(tokenCountStats.misses - before.misses).toBe(1);
    expect(tokenCountStats.hits - before.hits).toBe(1);
    expect(countTokens(`${text}!`)).toBeGreaterThanOrEqual(first); // another text is counted anew
    expect(tokenCountStats.misses - before.misses).toBe(2);
  });

  it('counts a text longer than 2,048 characters once too (memoised by its SHA-1)', () => {
    const text = `${'Long tool output, repeated on every turn. '.repeat(60)}${Date.now()}`;
    const before = { ...tokenCountStats };
    expect(countTokens(text)).toBe(countTokens(text));
    expect(tokenCountStats.misses - before.misses).toBe(1);
    expect(tokenCountStats.hits - before.hits).toBe(1);
  });

  it('does not memoise short texts', () => {
    const before = { ...tokenCountStats };
    expect(countTokens('short text')).toBe(2);
    expect(tokenCountStats.misses).toBe(before.misses);
    expect(tokenCountStats.hits).toBe(before.hits);
  });
});
