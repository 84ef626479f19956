import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { countTokens } from '../../shared/context/tokens.js';
import { ValidationError } from '../../shared/errors.js';
import type { Actor } from '../../shared/policy/port.js';
import { RulesPolicy } from '../../shared/policy/rules.js';
import { ResourceIndex } from '../../shared/resources/resource-index.js';
import type { Chunk } from '../../shared/resources/schemas.js';
import {
  CHUNK_SIZE,
  contentProblem,
  headingsOf,
  type IngestProgress,
  ingest,
} from '../../shared/search/ingest.js';
import { MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import { coreKey } from '../../shared/search/shard-pack.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import type { FindOptions, PutResult, StorageInterface } from '../../shared/storage/port.js';
import { childUrn, keyOf, keyPrefixOf } from '../../shared/urn.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const RULES = JSON.parse(await readFile(join(REPO, 'policies/rules.json'), 'utf8')) as unknown;
const SYSTEM: Actor = { kind: 'system', id: 'operator' };
const FIXED_NOW = () => new Date('2026-01-02T03:04:05.000Z');

/** Records every put (key and outcome) on the way to the filesystem adapter. */
class RecordingStorage implements StorageInterface {
  readonly puts: { key: string; created: boolean }[] = [];
  constructor(private readonly inner: StorageInterface) {}
  get(key: string): Promise<Buffer> {
    return this.inner.get(key);
  }
  getMany(keys: readonly string[]): Promise<Map<string, Buffer>> {
    return this.inner.getMany(keys);
  }
  async put(key: string, data: Buffer | string): Promise<PutResult> {
    const result = await this.inner.put(key, data);
    this.puts.push({ key, created: result.created });
    return result;
  }
  delete(key: string): Promise<void> {
    return this.inner.delete(key);
  }
  findByPrefix(prefix: string, options?: FindOptions): Promise<string[]> {
    return this.inner.findByPrefix(prefix, options);
  }
  findByExtension(extension: string): Promise<string[]> {
    return this.inner.findByExtension(extension);
  }
}

const section = (topic: string, sentences: number) =>
  Array.from({ length: sentences }, (_, i) => `${topic} detail number ${i} explains one more thing.`).join(
    ' ',
  );

const GUIDE = [
  '# Widget Guide',
  '',
  'The widget turns input into output.',
  '',
  '## Installation',
  '',
  '### Linux',
  '',
  section('Install the widget with the apt package manager.', 20),
  '',
  '```sh',
  '# not a heading: a shell comment',
  'apt install widget',
  '```',
  '',
  '## Configuration',
  '',
  section('The frobnicator setting controls the widget speed.', 20),
  '',
].join('\n');

const NOTES = 'Plain notes about the zebra migration, without any heading.\n';

async function setup() {
  const root = await mkdtemp(join(tmpdir(), 'cld-ingest-'));
  const cwd = join(root, 'work');
  await mkdir(join(cwd, 'docs', 'sub'), { recursive: true });
  await mkdir(join(cwd, 'elsewhere'), { recursive: true });
  await writeFile(join(cwd, 'docs', 'guide.md'), GUIDE);
  await writeFile(join(cwd, 'docs', 'sub', 'notes.md'), NOTES);
  await writeFile(join(cwd, 'docs', 'ignored.json'), '{"not":"ingested"}');
  await writeFile(join(cwd, 'elsewhere', 'linked.md'), '# Linked\n\nReached only through a symlink.\n');
  await symlink(join(cwd, 'elsewhere'), join(cwd, 'docs', 'link'));
  return { root, cwd, ...(await stores(root, 'data')) };
}

async function stores(root: string, name: string) {
  const storage = new RecordingStorage(new FilesystemStorage(join(root, name)));
  const resources = new ResourceIndex(storage, new RulesPolicy(RULES));
  const index = await MiniSearchIndex.open(storage);
  return { storage, resources, index };
}

const docUrn = (name: string) => childUrn(undefined, 'doc.Document', name);
const chunkUrn = (doc: string, i: number) => childUrn(doc, 'doc.Chunk', `chunk-${i}`);

describe('ingest', () => {
  let env: Awaited<ReturnType<typeof setup>>;

  beforeEach(async () => {
    env = await setup();
  });

  afterEach(async () => {
    await rm(env.root, { recursive: true, force: true });
  });

  const run = (paths: string[], overrides: Partial<Parameters<typeof ingest>[1]> = {}) =>
    ingest(paths, {
      resources: env.resources,
      index: env.index,
      actor: SYSTEM,
      cwd: env.cwd,
      now: FIXED_NOW,
      ...overrides,
    });

  it('writes a Document per file and its Chunks, with heading trails and token counts', async () => {
    const report = await run(['docs']);

    const guide = await env.resources.getAs(SYSTEM, 'doc.Document', docUrn('docs/guide.md'));
    const chunks = (await env.resources.list(SYSTEM, guide.meta.id, { type: 'doc.Chunk' })) as Chunk[];
    chunks.sort((a, b) => a.index - b.index);
    expect(guide).toMatchObject({
      meta: { name: 'docs/guide.md', purpose: 'Widget Guide', createdAt: '2026-01-02T03:04:05.000Z' },
      path: 'docs/guide.md',
      contentHash: createHash('sha256').update(GUIDE).digest('hex'),
      bytes: Buffer.byteLength(GUIDE),
      chunks: chunks.length,
    });
    expect(chunks.length).toBeGreaterThan(2);
    chunks.forEach((chunk, i) => {
      expect(chunk.meta).toMatchObject({
        name: `chunk-${i}`,
        parent: guide.meta.id,
        tokens: countTokens(chunk.text),
      });
      expect(chunk.index).toBe(i);
      expect(chunk.text.length).toBeLessThanOrEqual(CHUNK_SIZE);
    });
    expect(chunks[0]?.heading).toBe('Widget Guide');
    expect(chunks.find((chunk) => chunk.text.includes('apt install'))?.heading).toBe(
      'Widget Guide > Installation > Linux',
    );
    expect(chunks.find((chunk) => chunk.text.includes('speed. detail number 19'))?.heading).toBe(
      'Widget Guide > Configuration',
    );

    const notes = await env.resources.getAs(SYSTEM, 'doc.Document', docUrn('docs/sub/notes.md'));
    const [note] = (await env.resources.list(SYSTEM, notes.meta.id, { type: 'doc.Chunk' })) as Chunk[];
    expect(notes.meta.purpose).toBe('notes.md');
    expect(note).toMatchObject({ text: NOTES.trim(), index: 0 });
    expect(note?.heading).toBeUndefined();

    expect(report).toMatchObject({
      files: 2,
      skipped: 0,
      documents: 2,
      chunks: chunks.length + 1,
      bytes: Buffer.byteLength(GUIDE) + Buffer.byteLength(NOTES),
      index: 'indexes/chunks.1.json',
    });
    expect(report.ms).toBeGreaterThanOrEqual(0);
  });

  it('indexes every chunk and saves the index once, as the next generation', async () => {
    const report = await run(['docs']);

    expect(env.index.size).toBe(report.chunks);
    expect(env.index.has(chunkUrn(docUrn('docs/guide.md'), 0))).toBe(true);
    expect(env.storage.puts.filter((put) => put.key.startsWith('indexes/chunks.'))).toEqual([
      { key: 'indexes/chunks.1.json', created: true },
    ]);
    // Then the generation's shard pack, its core last (shared/search/shard-pack.ts).
    const pack = env.storage.puts.filter((put) => put.key.startsWith('indexes/chunks-shards/1/'));
    expect(pack.at(-1)).toEqual({ key: coreKey('indexes/chunks', 1), created: true });
    expect(pack.some((put) => put.key.includes('/postings.'))).toBe(true);
    expect((await MiniSearchIndex.open(env.storage)).size).toBe(report.chunks);
  });

  it('puts a Document only after all of its chunks', async () => {
    await run(['docs']);

    const keys = env.storage.puts.map((put) => put.key);
    for (const name of ['docs/guide.md', 'docs/sub/notes.md']) {
      const doc = docUrn(name);
      const docAt = keys.indexOf(keyOf(doc));
      const chunkAts = keys.flatMap((key, i) => (key.startsWith(keyPrefixOf(doc)) ? [i] : []));
      expect(chunkAts.length).toBeGreaterThan(0);
      expect(Math.max(...chunkAts)).toBeLessThan(docAt);
    }
  });

  it('neither follows symbolic links nor picks up other extensions', async () => {
    const report = await run(['docs']);

    expect(report.files).toBe(2);
    const documents = await env.storage.findByPrefix('cld/doc.Document.');
    expect(documents.filter((key) => key.endsWith('_Document.json'))).toHaveLength(2);
  });

  it('skips files already ingested with the same content and writes nothing on a re-run', async () => {
    await run(['docs']);
    const putsBefore = env.storage.puts.length;

    const report = await run(['docs']);

    expect(report).toMatchObject({ files: 2, skipped: 2, documents: 0, chunks: 0, bytes: 0 });
    expect(report.index).toBeUndefined();
    expect(env.storage.puts.length).toBe(putsBefore);
  });

  it('re-adds the stored chunks of skipped documents that the index lacks', async () => {
    const first = await run(['docs']);
    const fresh = new MiniSearchIndex();

    const report = await run(['docs'], { index: fresh });

    expect(report.skipped).toBe(2);
    expect(fresh.size).toBe(first.chunks);
    expect((await fresh.search('zebra migration'))[0]?.urn).toBe(chunkUrn(docUrn('docs/sub/notes.md'), 0));
  });

  it('leaves licences, notices, third-party files and bundled node_modules out of a folder and reports them', async () => {
    await mkdir(join(env.cwd, 'docs', 'node_modules', 'dep'), { recursive: true });
    await writeFile(join(env.cwd, 'docs', 'node_modules', 'dep', 'README.md'), '# Dep\n\nBundled.\n');
    await writeFile(join(env.cwd, 'docs', 'LICENSE.md'), 'Apache License\n');
    await writeFile(join(env.cwd, 'docs', 'sub', 'THIRD-PARTY-LICENSES.txt'), 'MIT\n');

    const report = await run(['docs']);

    expect(report.files).toBe(2);
    expect(report.excluded).toEqual([
      { pattern: '**/LICENSE*', files: 1 },
      { pattern: '**/node_modules/**', files: 1 },
      { pattern: '**/THIRD-PARTY*', files: 1 },
    ]);
    const kept = await run(['docs/LICENSE.md']);
    expect(kept).toMatchObject({ files: 1, documents: 1, excluded: [] });
  });

  it('keeps everything with exclude [] and only matching files with include', async () => {
    await writeFile(join(env.cwd, 'docs', 'LICENSE.md'), 'Apache License\n');
    expect((await run(['docs'], { exclude: [] })).files).toBe(3);
    const only = await run(['docs'], { include: ['sub/**'], exclude: [] });
    expect(only.files).toBe(1);
    expect(only.excluded).toEqual([{ pattern: 'not included (sub/**)', files: 2 }]);
  });

  it('embeds the chunks that lack a vector when given an embedder, once', async () => {
    const seen: string[] = [];
    const embedder = {
      name: 'test:lengths',
      embed: async (texts: readonly string[]) => {
        seen.push(...texts);
        return texts.map((text) => [text.length, 1]);
      },
    };
    const first = await run(['docs'], { embedder });
    expect(first.embedded).toBe(first.chunks);
    expect(seen.some((text) => text.startsWith('Widget Guide'))).toBe(true);
    expect(env.index.embeddingModel).toBe('test:lengths');
    const second = await run(['docs'], { embedder });
    expect(second.embedded).toBe(0);
    expect(seen).toHaveLength(first.chunks);
  });

  it('ingests an explicit file', async () => {
    const report = await run(['docs/sub/notes.md']);

    expect(report).toMatchObject({ files: 1, documents: 1, chunks: 1 });
  });

  it('rejects a path that does not exist, naming it, before writing anything', async () => {
    const failure = run(['docs', 'no-such-folder']);

    await expect(failure).rejects.toBeInstanceOf(ValidationError);
    await expect(failure).rejects.toThrow(/no-such-folder/);
    expect(env.storage.puts).toEqual([]);
    expect(await env.storage.findByExtension('.json')).toEqual([]);
  });

  it('rejects an explicit file of an unsupported type', async () => {
    await expect(run(['docs/ignored.json'])).rejects.toBeInstanceOf(ValidationError);
    expect(env.storage.puts).toEqual([]);
  });

  it('rejects a file whose content changed since it was ingested, before writing anything', async () => {
    await run(['docs']);
    const putsBefore = env.storage.puts.length;
    await writeFile(join(env.cwd, 'docs', 'guide.md'), `${GUIDE}\nA new paragraph.\n`);

    await expect(run(['docs'])).rejects.toThrow(/docs\/guide\.md/);
    expect(env.storage.puts.length).toBe(putsBefore);
  });

  describe('checks content, not extensions (issue 23)', () => {
    /** A binary renamed `.md` (this machine's `ls`), 200 KB of random bytes as `.txt`, UTF-16 text. */
    async function badFiles(): Promise<void> {
      await mkdir(join(env.cwd, 'bad'), { recursive: true });
      await writeFile(join(env.cwd, 'bad', 'ls.md'), await readFile('/bin/ls'));
      await writeFile(join(env.cwd, 'bad', 'random.txt'), randomBytes(200 * 1024));
      await writeFile(join(env.cwd, 'bad', 'utf16.md'), Buffer.from('\ufeff# Title\n\nText.\n', 'utf16le'));
    }

    it('leaves out a binary renamed .md, random bytes as .txt and UTF-16 text, each with its reason, writing nothing of them', async () => {
      await badFiles();

      const report = await run(['bad']);

      expect(report.leftOut).toEqual([
        { path: 'bad/ls.md', reason: 'binary content (isbinaryfile)' },
        { path: 'bad/random.txt', reason: 'binary content (isbinaryfile)' },
        { path: 'bad/utf16.md', reason: 'not UTF-8: invalid byte sequence at byte 0' },
      ]);
      expect(report).toMatchObject({ files: 0, documents: 0, chunks: 0, empty: ['bad'] });
      expect(env.storage.puts).toEqual([]);
    });

    it('ingests the text files beside them and names only the path that yielded nothing', async () => {
      await badFiles();

      const report = await run(['docs', 'bad/ls.md']);

      expect(report).toMatchObject({ files: 2, documents: 2, empty: ['bad/ls.md'] });
      expect(report.leftOut.map((file) => file.path)).toEqual(['bad/ls.md']);
    });

    it.each([
      [
        'a NUL byte after the first 512 bytes',
        Buffer.concat([Buffer.from('# A\n'.repeat(200)), Buffer.from([0])]),
        /^binary content: control character U\+0000 at character 800$/,
      ],
      [
        'Latin-1 after 600 bytes of ASCII',
        Buffer.concat([Buffer.from('a'.repeat(600)), Buffer.from([0xe9])]),
        /^not UTF-8: invalid byte sequence at byte 600$/,
      ],
      ['UTF-8 text with accents and CJK', Buffer.from('# Événements\n\n事件 go to the bus.\n'), undefined],
      ['form feeds and CRLF line ends', Buffer.from('# A\r\n\fpage two\r\n'), undefined],
    ])('contentProblem: %s', (_what, data, problem) => {
      const found = contentProblem(data);
      if (problem === undefined) expect(found).toBeUndefined();
      else expect(found).toMatch(problem);
    });
  });

  it('produces the same resources and index regardless of timing', async () => {
    await run(['docs']);
    const other = await stores(env.root, 'data-2');

    await run(['docs'], { resources: other.resources, index: other.index });

    expect(JSON.stringify(other.index)).toBe(JSON.stringify(env.index));
    const keys = await env.storage.findByPrefix('cld/');
    expect(await other.storage.findByPrefix('cld/')).toEqual(keys);
    for (const key of keys) {
      expect((await other.storage.get(key)).toString()).toBe((await env.storage.get(key)).toString());
    }
  });

  it('reports progress once per file', async () => {
    const progress: IngestProgress[] = [];

    await run(['docs'], { onProgress: (p) => progress.push(p) });

    expect(progress).toHaveLength(2);
    expect(progress.map((p) => p.path).sort()).toEqual(['docs/guide.md', 'docs/sub/notes.md']);
    expect(progress.map((p) => p.done)).toEqual([1, 2]);
    expect(progress.every((p) => p.total === 2 && !p.skipped && p.chunks > 0)).toBe(true);
  });
});

describe('headingsOf', () => {
  it.each([
    [
      'ATX headings with closing hashes',
      '# One #\n\ntext\n\n### Three ###\n',
      [
        [1, 'One'],
        [3, 'Three'],
      ],
    ],
    [
      'setext headings',
      'Top\n===\n\nSub\n---\n',
      [
        [1, 'Top'],
        [2, 'Sub'],
      ],
    ],
    [
      'CRLF line ends',
      '# One\r\n\r\n## Two\r\n',
      [
        [1, 'One'],
        [2, 'Two'],
      ],
    ],
    [
      'no heading inside a code fence',
      '# Real\n\n```sh\n# comment\n```\n\n~~~\n## not\n~~~\n',
      [[1, 'Real']],
    ],
    ['no heading without a space after the hashes', '#hashtag\n####### seven\n', []],
  ])('finds %s', (_, text, expected) => {
    expect(headingsOf(text).map((heading) => [heading.level, heading.title])).toEqual(expected);
  });

  it('records where each heading starts and ends', () => {
    expect(headingsOf('intro\n\nTitle\n=====\nbody')).toEqual([
      { offset: 7, end: 18, level: 1, title: 'Title' },
    ]);
  });
});

describe('ingest of the real aws-cdk-lib S3 README', () => {
  const folder = 'node_modules/aws-cdk-lib/aws-s3';
  let root: string;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'cld-ingest-s3-'));
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('finds the EventBridge notifications section of aws-s3/README.md', async () => {
    expect((await stat(join(REPO, folder, 'README.md'))).isFile()).toBe(true);
    const { resources, index } = await stores(root, 'data');

    const report = await ingest([folder], { resources, index, actor: SYSTEM, cwd: REPO });
    const [top] = await index.search('EventBridge notifications');

    expect(report.documents).toBeGreaterThanOrEqual(1);
    expect(top).toBeDefined();
    const chunk = await resources.getAs(SYSTEM, 'doc.Chunk', top?.urn ?? '');
    const document = await resources.getAs(SYSTEM, 'doc.Document', chunk.meta.parent ?? '');
    expect(document.path).toBe(`${folder}/README.md`);
    expect(chunk.heading).toMatch(/EventBridge notifications$/);
    expect(chunk.text).toContain('eventBridgeEnabled');
  });
});
