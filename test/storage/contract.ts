import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NotFoundError, ValidationError } from '../../shared/errors.js';
import type { StorageInterface } from '../../shared/storage/port.js';

/** What a backend under test can honestly do. */
export interface StorageContractCapabilities {
  /**
   * The backend enforces create-only puts (`If-None-Match: *` on S3, an exclusive create on
   * the filesystem). False for a fake that ignores the condition (bare s3rver): the create-only
   * tests are then skipped, and the suite must also run against a backend where it is true.
   */
  conditionalWrites: boolean;
}

/** A fresh, empty storage for one test, and how to dispose of it. */
export type MakeStorage = () => Promise<{ storage: StorageInterface; cleanup: () => Promise<void> }>;

const CONVERSATION = 'cld:common.Conversation.0123456789abcdef';
const OTHER_CONVERSATION = 'cld:common.Conversation.fedcba9876543210';

/** 16 lowercase hex characters, like a URN element's hash. */
function hash(n: number): string {
  return n.toString(16).padStart(16, '0');
}

function messageKey(n: number, conversation = CONVERSATION): string {
  return `${conversation}/common.Message.${hash(n)}.json`;
}

/** A valid key of exactly `bytes` UTF-8 bytes, in segments short enough for any filesystem. */
function keyOfBytes(bytes: number): string {
  let key = 'cld:';
  while (bytes - key.length > 200) key += `${'x'.repeat(199)}/`;
  return key + 'x'.repeat(bytes - key.length);
}

/**
 * The behaviour every {@link StorageInterface} adapter must have (seed roadmap-v1 step 04).
 * `make` is called before each test and must return an empty storage.
 */
export function storageContract(
  name: string,
  make: MakeStorage,
  capabilities: StorageContractCapabilities = { conditionalWrites: true },
): void {
  describe(`StorageInterface contract: ${name}`, () => {
    let storage: StorageInterface;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      ({ storage, cleanup } = await make());
    });

    afterEach(async () => {
      await cleanup();
    });

    describe('get and put', () => {
      it('round-trips the exact bytes of a put through get', async () => {
        const key = messageKey(1);
        const data = Buffer.from([0x00, 0xff, 0x7b, 0x22, 0x0a, 0xc3, 0x28, 0x80]);

        const result = await storage.put(key, data);

        expect(result).toEqual({ created: true });
        expect(await storage.get(key)).toEqual(data);
      });

      it('stores string data as UTF-8', async () => {
        const key = `${CONVERSATION}.json`;
        const text = JSON.stringify({ title: 'café ✓ 日本' });

        await storage.put(key, text);

        expect((await storage.get(key)).toString('utf8')).toBe(text);
      });

      it('stores an empty object', async () => {
        const key = messageKey(2);

        await storage.put(key, Buffer.alloc(0));

        expect(await storage.get(key)).toEqual(Buffer.alloc(0));
      });

      it('throws NotFoundError when getting a missing key', async () => {
        await expect(storage.get(messageKey(404))).rejects.toBeInstanceOf(NotFoundError);
      });

      it('accepts a key of exactly 1,024 UTF-8 bytes', async () => {
        const key = keyOfBytes(1024);
        expect(Buffer.byteLength(key)).toBe(1024);

        await storage.put(key, 'max');

        expect((await storage.get(key)).toString()).toBe('max');
      });
    });

    // Skipped only for a backend that ignores the condition (capabilities.conditionalWrites is
    // false); the caller must also run the suite where it is enforced.
    if (capabilities.conditionalWrites) describe('create-only puts', createOnlyTests);
    else describe.skip('create-only puts (skipped: this backend ignores If-None-Match)', createOnlyTests);

    function createOnlyTests(): void {
      it('returns created:false on a second put of the same key and keeps the first content', async () => {
        const key = messageKey(3);
        await storage.put(key, 'first');

        const second = await storage.put(key, 'second');

        expect(second).toEqual({ created: false });
        expect((await storage.get(key)).toString()).toBe('first');
      });

      it("lets exactly one of 10 concurrent puts of a key create it and stores that winner's content", async () => {
        const key = messageKey(4);
        const contents = Array.from({ length: 10 }, (_, i) => `writer-${i}`);

        const results = await Promise.all(contents.map((content) => storage.put(key, content)));

        const winners = results.flatMap((result, i) => (result.created ? [i] : []));
        expect(winners).toHaveLength(1);
        expect((await storage.get(key)).toString()).toBe(contents[winners[0] as number]);
      });
    }

    describe('getMany', () => {
      it('returns the found keys only, each with its content', async () => {
        await storage.put(messageKey(10), 'ten');
        await storage.put(messageKey(11), 'eleven');

        const found = await storage.getMany([messageKey(10), messageKey(12), messageKey(11)]);

        expect([...found.keys()].sort()).toEqual([messageKey(10), messageKey(11)]);
        expect(found.get(messageKey(10))?.toString()).toBe('ten');
        expect(found.get(messageKey(11))?.toString()).toBe('eleven');
        expect(found.has(messageKey(12))).toBe(false);
      });

      it('returns an empty map for no keys', async () => {
        expect((await storage.getMany([])).size).toBe(0);
      });
    });

    describe('delete', () => {
      it('removes an object so get throws NotFoundError and a new put creates it again', async () => {
        const key = messageKey(20);
        await storage.put(key, 'old');

        await storage.delete(key);

        await expect(storage.get(key)).rejects.toBeInstanceOf(NotFoundError);
        expect(await storage.findByPrefix(CONVERSATION)).toEqual([]);
        expect(await storage.put(key, 'new')).toEqual({ created: true });
        expect((await storage.get(key)).toString()).toBe('new');
      });

      it('succeeds for a missing key', async () => {
        await expect(storage.delete(messageKey(21))).resolves.toBeUndefined();
      });
    });

    describe('findByPrefix', () => {
      const task = `${CONVERSATION}/plan.Task.00000000000000aa`;
      /** A conversation (two messages, a task and its call) and another conversation, unsorted. */
      const tree = () => [
        `${task}/tool.Call.00000000000000bb.json`,
        messageKey(31),
        `${CONVERSATION}.json`,
        `${task}.json`,
        messageKey(30),
        `${OTHER_CONVERSATION}.json`,
      ];

      it('returns the subtree under a URN, sorted by UTF-8 bytes, with ":" and nested "/" in keys', async () => {
        for (const key of tree()) await storage.put(key, key);

        const withParent = await storage.findByPrefix(CONVERSATION);
        const subtree = await storage.findByPrefix(`${CONVERSATION}/`);
        const deeper = await storage.findByPrefix(`${task}/`);

        // '.' (0x2e) sorts before '/' (0x2f): a resource's own key precedes its children.
        expect(withParent).toEqual([
          `${CONVERSATION}.json`,
          messageKey(30),
          messageKey(31),
          `${task}.json`,
          `${task}/tool.Call.00000000000000bb.json`,
        ]);
        expect(subtree).toEqual(withParent.slice(1));
        expect(deeper).toEqual([`${task}/tool.Call.00000000000000bb.json`]);
        expect(await storage.get(deeper[0] as string)).toEqual(Buffer.from(deeper[0] as string));
      });

      it('matches a plain string prefix (c1 also matches c10) unless the prefix ends with "/"', async () => {
        const c1 = 'cld:common.Conversation.c1';
        const c10 = 'cld:common.Conversation.c10';
        const keys = [
          `${c10}/common.Message.${hash(1)}.json`,
          `${c1}.json`,
          `${c10}.json`,
          `${c1}/common.Message.${hash(1)}.json`,
        ];
        for (const key of keys) await storage.put(key, 'x');

        const plain = await storage.findByPrefix(c1);
        const subtree = await storage.findByPrefix(`${c1}/`);

        expect(plain).toEqual([
          `${c1}.json`,
          `${c1}/common.Message.${hash(1)}.json`,
          `${c10}.json`,
          `${c10}/common.Message.${hash(1)}.json`,
        ]);
        expect(subtree).toEqual([`${c1}/common.Message.${hash(1)}.json`]);
      });

      it('with delimiter "/" returns only the keys with no "/" after the prefix, as S3 Contents do', async () => {
        const keys = [...tree(), `${OTHER_CONVERSATION}/common.Message.${hash(1)}.json`];
        for (const key of keys) await storage.put(key, key);

        // Direct children of the conversation: its messages and the task's own key, not the call.
        expect(await storage.findByPrefix(`${CONVERSATION}/`, { delimiter: '/' })).toEqual([
          messageKey(30),
          messageKey(31),
          `${task}.json`,
        ]);
        // A prefix that does not end at a "/" (S3: a plain string prefix, then the delimiter).
        expect(await storage.findByPrefix(`${CONVERSATION}/common.Message.`, { delimiter: '/' })).toEqual([
          messageKey(30),
          messageKey(31),
        ]);
        expect(await storage.findByPrefix('cld:common.Conversation.', { delimiter: '/' })).toEqual([
          `${CONVERSATION}.json`,
          `${OTHER_CONVERSATION}.json`,
        ]);
        expect(await storage.findByPrefix(`${task}/`, { delimiter: '/' })).toEqual([
          `${task}/tool.Call.00000000000000bb.json`,
        ]);
        expect(await storage.findByPrefix(`${task}/x/`, { delimiter: '/' })).toEqual([]);
      });

      it('returns an empty list for a prefix without keys', async () => {
        await storage.put(messageKey(40), 'x');

        expect(await storage.findByPrefix(`${OTHER_CONVERSATION}/`)).toEqual([]);
        expect(await storage.findByPrefix('cld:plan.')).toEqual([]);
      });

      it('returns every key of a listing longer than one page', async () => {
        // 25 sibling keys: over three pages of the 7-key pages the S3 test configures. They are
        // siblings on purpose: s3rver lists by walking directories, so a parent key
        // (`<urn>.json`) comes after its children there and a page boundary between them drops
        // it; real S3 lists in byte order. The nested case is covered above within one page.
        const keys = Array.from({ length: 25 }, (_, i) => messageKey(100 + i));
        for (const key of [...keys].reverse()) await storage.put(key, key);

        expect(await storage.findByPrefix(`${CONVERSATION}/`)).toEqual(keys);
        expect(await storage.findByExtension('.json')).toEqual(keys);
      });
    });

    describe('findByExtension', () => {
      it('returns every key ending with the extension, at any depth, sorted', async () => {
        const keys = [
          messageKey(51),
          `${CONVERSATION}/doc.Source.${hash(1)}.md`,
          `${CONVERSATION}.json`,
          `${OTHER_CONVERSATION}/plan.Task.${hash(2)}/tool.Call.${hash(3)}.json`,
        ];
        for (const key of keys) await storage.put(key, 'x');

        const json = await storage.findByExtension('.json');
        const markdown = await storage.findByExtension('.md');

        expect(json).toEqual([
          `${CONVERSATION}.json`,
          messageKey(51),
          `${OTHER_CONVERSATION}/plan.Task.${hash(2)}/tool.Call.${hash(3)}.json`,
        ]);
        expect(markdown).toEqual([`${CONVERSATION}/doc.Source.${hash(1)}.md`]);
        expect(await storage.findByExtension('.yaml')).toEqual([]);
      });
    });

    describe('key validation', () => {
      const invalidKeys: [string, string][] = [
        ['the empty key', ''],
        ['an empty segment', 'cld:a//b.json'],
        ['a ".." segment', '../x'],
        ['a "." segment', 'cld:a/./b.json'],
        ['an absolute key', '/abs'],
        ['a trailing slash', 'cld:a/'],
        ['a backslash', 'cld:a\\b.json'],
        ['a NUL byte', 'cld:a\u0000.json'],
        ['a 1,025-byte key', keyOfBytes(1025)],
      ];

      it.each(
        invalidKeys,
      )('rejects %s in put, get, getMany and delete with ValidationError', async (_, key) => {
        await expect(storage.put(key, 'x')).rejects.toBeInstanceOf(ValidationError);
        await expect(storage.get(key)).rejects.toBeInstanceOf(ValidationError);
        await expect(storage.getMany([messageKey(60), key])).rejects.toBeInstanceOf(ValidationError);
        await expect(storage.delete(key)).rejects.toBeInstanceOf(ValidationError);
      });

      it.each([
        '../',
        'cld:a//b/',
        'cld:a/../',
      ])('rejects findByPrefix(%j) with ValidationError', async (prefix) => {
        await expect(storage.findByPrefix(prefix)).rejects.toBeInstanceOf(ValidationError);
      });

      it('writes nothing for a rejected key', async () => {
        await expect(storage.put('cld:a//b.json', 'x')).rejects.toBeInstanceOf(ValidationError);

        expect(await storage.findByPrefix('')).toEqual([]);
      });
    });
  });
}
