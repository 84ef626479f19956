import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import MiniSearch from 'minisearch';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Actor } from '../../shared/policy/port.js';
import { RulesPolicy } from '../../shared/policy/rules.js';
import { ResourceIndex } from '../../shared/resources/resource-index.js';
import {
  ApiGlossaries,
  ApiGlossary,
  MAX_EXPANSION_CHARS,
  MAX_SENSES,
} from '../../shared/search/api-glossary.js';
import { ingest } from '../../shared/search/ingest.js';
import {
  ENGINE_OPTIONS,
  keyOfGeneration,
  MiniSearchIndex,
  TERMS_VERSION,
} from '../../shared/search/minisearch-index.js';
import { NameOwners } from '../../shared/search/owners.js';
import type { IndexedItem } from '../../shared/search/port.js';
import { writeShardPack } from '../../shared/search/shard-pack.js';
import { ShardedChunkIndex } from '../../shared/search/sharded-index.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const RULES = JSON.parse(await readFile(join(REPO, 'policies/rules.json'), 'utf8')) as unknown;
const SYSTEM: Actor = { kind: 'system', id: 'operator' };

const RETENTION = 'How long, in days, the log contents will be retained.';
const ENCRYPTION = 'The KMS customer managed key to encrypt the log group with.';

/** A jsii assembly (schema jsii/0.10.0) of one module, `aws_logs`, with an L1 type and a name of many senses. */
function assembly(): object {
  const grant = (owner: string, i: number) => ({
    name: 'grantThing',
    docs: { summary: `Grant number ${i} of ${owner}.` },
  });
  const types: Record<string, object> = {
    'pkg.aws_logs.LogGroup': {
      fqn: 'pkg.aws_logs.LogGroup',
      name: 'LogGroup',
      kind: 'class',
      namespace: 'aws_logs',
      docs: { summary: 'Define a CloudWatch Log Group.' },
      methods: [grant('LogGroup', 0)],
    },
    'pkg.aws_logs.LogGroupProps': {
      fqn: 'pkg.aws_logs.LogGroupProps',
      name: 'LogGroupProps',
      kind: 'interface',
      datatype: true,
      namespace: 'aws_logs',
      properties: [
        { name: 'retention', type: { fqn: 'pkg.aws_logs.RetentionDays' }, docs: { summary: RETENTION } },
        { name: 'encryptionKey', type: { primitive: 'any' }, docs: { summary: ENCRYPTION } },
      ],
    },
    'pkg.aws_logs.RetentionDays': {
      fqn: 'pkg.aws_logs.RetentionDays',
      name: 'RetentionDays',
      kind: 'enum',
      namespace: 'aws_logs',
      docs: { summary: RETENTION },
      members: [{ name: 'ONE_WEEK' }],
    },
    'pkg.aws_logs.CfnLogGroup': {
      fqn: 'pkg.aws_logs.CfnLogGroup',
      name: 'CfnLogGroup',
      kind: 'class',
      namespace: 'aws_logs',
      docs: { summary: 'A CloudFormation `AWS::Logs::LogGroup`.' },
      properties: [
        { name: 'retentionInDays', type: { primitive: 'number' }, docs: { summary: 'Days to keep events.' } },
      ],
    },
  };
  for (let i = 1; i <= MAX_SENSES; i += 1) {
    types[`pkg.aws_logs.Other${i}`] = {
      fqn: `pkg.aws_logs.Other${i}`,
      name: `Other${i}`,
      kind: 'class',
      namespace: 'aws_logs',
      methods: [grant(`Other${i}`, i)],
    };
  }
  return { schema: 'jsii/0.10.0', name: 'pkg', version: '1.0.0', types };
}

const README = [
  '# Amazon CloudWatch Logs Construct Library',
  '',
  '## Retention',
  '',
  'Set the policy of a log group:',
  '',
  '```ts',
  "new logs.LogGroup(this, 'LogGroup', {",
  '  retention: logs.RetentionDays.ONE_WEEK,',
  '});',
  '```',
  '',
  '## Encryption',
  '',
  'Here is a log group with a key of its own:',
  '',
  '```ts',
  "new logs.LogGroup(this, 'LogGroup', {",
  "  encryptionKey: new kms.Key(this, 'Key'),",
  '});',
  '```',
  '',
].join('\n');

const retentionCode =
  "```ts\nnew logs.LogGroup(this, 'L', { retention: logs.RetentionDays.ONE_WEEK });\nlg.grantThing(x);\n```";

describe('ApiGlossary', () => {
  const glossary = ApiGlossary.fromAssembly(Buffer.from(JSON.stringify(assembly())));

  it("adds the summaries of the names a chunk's code spells, each once", () => {
    const expansion = glossary.expansion(`Keep logs a week:\n\n${retentionCode}`, 'aws_logs');
    expect(expansion).toBe(`Define a CloudWatch Log Group. ${RETENTION}`);
  });

  it('reads inline code spans too, and not prose', () => {
    expect(glossary.expansion('Pass `encryptionKey` to the LogGroup.', 'aws_logs')).toBe(ENCRYPTION);
  });

  it('leaves out L1 types, names of more than MAX_SENSES senses, common names and other modules', () => {
    const code = '```ts\nnew CfnLogGroup(this, "C", { retentionInDays: 7 }); g.grantThing(u);\n```';
    expect(glossary.expansion(code, 'aws_logs')).toBe('');
    expect(glossary.expansion(retentionCode, 'aws_logs', new Set(['LogGroup', 'retention']))).toBe(RETENTION);
    expect(glossary.expansion(retentionCode, 'aws_s3')).toBe('');
  });

  it('leaves out a summary too long for the expansion, and still adds the shorter ones after it', () => {
    const long = 'x'.repeat(MAX_EXPANSION_CHARS + 1);
    const big = assembly() as { types: Record<string, { properties?: object[] }> };
    big.types['pkg.aws_logs.LogGroupProps']?.properties?.unshift({
      name: 'huge',
      type: { primitive: 'string' },
      docs: { summary: long },
    });
    const glossary = ApiGlossary.fromAssembly(Buffer.from(JSON.stringify(big)));
    expect(glossary.expansion('```ts\nf({ huge: 1, retention: r });\n```', 'aws_logs')).toBe(RETENTION);
  });

  it('reads a jsii file redirect to the gzipped assembly', () => {
    const redirect = Buffer.from(JSON.stringify({ schema: 'jsii/file-redirect', filename: '.jsii.gz' }));
    const gz = gzipSync(Buffer.from(JSON.stringify(assembly())));
    const read = ApiGlossary.fromAssembly(redirect, (file) => {
      expect(file).toBe('.jsii.gz');
      return gz;
    });
    expect(read.expansion(retentionCode, 'aws_logs')).toContain(RETENTION);
  });

  it('refuses what is not a jsii assembly', () => {
    expect(() => ApiGlossary.fromAssembly(Buffer.from('{"schema":"other"}'))).toThrow(/not a jsii assembly/);
  });
});

/**
 * A temporary folder with `node_modules/pkg`: {@link assembly} as `.jsii` (`plain`) or behind a
 * jsii file redirect to `.jsii.gz` (`redirect`, as aws-cdk-lib ships it), and {@link README} in
 * its `aws-logs` module folder.
 */
async function jsiiPackage(
  prefix: string,
  form: 'plain' | 'redirect',
): Promise<{ root: string; pkg: string }> {
  const root = await mkdtemp(join(tmpdir(), prefix));
  const pkg = join(root, 'node_modules', 'pkg');
  await mkdir(join(pkg, 'aws-logs'), { recursive: true });
  const content = Buffer.from(JSON.stringify(assembly()));
  if (form === 'plain') await writeFile(join(pkg, '.jsii'), content);
  else {
    await writeFile(
      join(pkg, '.jsii'),
      JSON.stringify({ schema: 'jsii/file-redirect', filename: '.jsii.gz' }),
    );
    await writeFile(join(pkg, '.jsii.gz'), gzipSync(content));
  }
  await writeFile(join(pkg, 'aws-logs', 'README.md'), README);
  return { root, pkg };
}

describe('ApiGlossaries and ingest', () => {
  let root: string;
  let pkg: string;

  beforeEach(async () => {
    ({ root, pkg } = await jsiiPackage('cld-glossary-', 'redirect'));
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("expands a document of a package whose folder is ingested, by the module of the document's folder", () => {
    const expand = new ApiGlossaries([pkg]).forDocument(join(pkg, 'aws-logs', 'README.md'), [README]);
    expect(expand?.(retentionCode)).toContain(RETENTION);
  });

  it('reads no assembly when only a module folder or another folder is ingested', () => {
    const readme = join(pkg, 'aws-logs', 'README.md');
    expect(new ApiGlossaries([join(pkg, 'aws-logs')]).forDocument(readme, [README])).toBeUndefined();
    expect(new ApiGlossaries([join(root, 'elsewhere')]).forDocument(readme, [README])).toBeUndefined();
    expect(new ApiGlossaries([root]).forDocument(join(root, 'notes.md'), [])).toBeUndefined();
  });

  it('goes on without the glossary of a package whose assembly is broken, saying why', async () => {
    await writeFile(join(pkg, '.jsii'), 'not json');
    const glossaries = new ApiGlossaries([pkg]);
    expect(glossaries.forDocument(join(pkg, 'aws-logs', 'README.md'), [README])).toBeUndefined();
    expect(glossaries.problems).toEqual([
      { root: pkg, reason: expect.stringMatching(/not a jsii assembly/) },
    ]);
  });

  it("reports a package whose assembly's redirect target is missing, and ingests its documents without the glossary", async () => {
    await rm(join(pkg, '.jsii.gz'));
    const index = new MiniSearchIndex();
    const report = await ingest([join('node_modules', 'pkg')], {
      resources: new ResourceIndex(new FilesystemStorage(join(root, 'data')), new RulesPolicy(RULES)),
      index,
      actor: SYSTEM,
      cwd: root,
    });
    expect(report.documents).toBe(1);
    expect(report.glossaryProblems).toEqual([
      { path: 'node_modules/pkg', reason: expect.stringMatching(/ENOENT.*\.jsii\.gz/) },
    ]);
    expect((await index.search('log group')).length).toBeGreaterThan(0);
  });

  it("finds the chunk whose code the user's words only describe, and shows its own text", async () => {
    const search = async (path: string) => {
      const storage = new FilesystemStorage(join(root, `data-${path.length}`));
      const index = new MiniSearchIndex();
      await ingest([path], {
        resources: new ResourceIndex(storage, new RulesPolicy(RULES)),
        index,
        actor: SYSTEM,
        cwd: root,
      });
      return index.search('How long are the contents kept?');
    };
    // The question shares no word with either chunk's own text: only the glossary bridges it.
    expect(await search(join('node_modules', 'pkg', 'aws-logs'))).toEqual([]);
    const hits = await search(join('node_modules', 'pkg'));
    expect(hits[0]?.title).toContain('Retention');
    expect(hits[0]?.text).not.toContain('retained');
    expect(hits.some((hit) => hit.title?.includes('Encryption'))).toBe(false);
  });

  it('replaces items whose new api words split index terms while old postings await a vacuum, and saves', async () => {
    // minisearch's automatic vacuum walks the term tree in batches of 1,000 terms with a pause
    // between them; a replace that adds a term splitting an edge the walk has yet to visit
    // (`zebrafish` → `zebra` + `fish`) made the walk, and so `save`, fail. This shape forces it.
    const storage = new FilesystemStorage(join(root, 'data'));
    const index = await MiniSearchIndex.open(storage);
    const word = (i: number) =>
      `a${[...i.toString(4).padStart(6, '0')].map((d) => 'bcde'[Number(d)]).join('')}`;
    const items = [
      { urn: 'cld:doc.Document.z/doc.Chunk.0', type: 'doc.Chunk', text: 'zebrafish' },
      ...Array.from({ length: 1_500 }, (_, i) => ({
        urn: `cld:doc.Document.z/doc.Chunk.${i + 1}`,
        type: 'doc.Chunk',
        text: word(i),
      })),
    ];
    index.add(items);
    expect(
      index.add([...items.slice(1, 401), { ...(items[0] as IndexedItem), api: 'zebra' }], { replace: true }),
    ).toBe(401);
    await index.save();
    const reopened = await MiniSearchIndex.open(storage);
    expect(reopened.size).toBe(1_501);
    expect((await reopened.search('zebra')).map((hit) => hit.urn)).toEqual([
      'cld:doc.Document.z/doc.Chunk.0',
    ]);
    expect((await reopened.search(word(7))).map((hit) => hit.urn)).toContain(
      'cld:doc.Document.z/doc.Chunk.8',
    );
  });

  it('indexes a module ingested before its package anew with the glossary when the package is ingested, once', async () => {
    await writeFile(join(root, 'notes.md'), '# Notes\n\nThe frobnicator keeps the widget fast.\n');
    const storage = new FilesystemStorage(join(root, 'data'));
    const resources = new ResourceIndex(storage, new RulesPolicy(RULES));
    const run = async (paths: string[]) => {
      const index = await MiniSearchIndex.open(storage);
      return { index, report: await ingest(paths, { resources, index, actor: SYSTEM, cwd: root }) };
    };
    const question = 'How long are the contents kept?';
    // The quick start's way: the module folder (no glossary), and another document.
    const first = await run([join('node_modules', 'pkg', 'aws-logs'), 'notes.md']);
    expect(await first.index.search(question)).toEqual([]);
    // Then the package: the module's README was ingested already, its chunks get the glossary now.
    const second = await run([join('node_modules', 'pkg')]);
    expect(second.report.index).toBe(keyOfGeneration('indexes/chunks', 2));
    expect((await second.index.search(question))[0]?.title).toContain('Retention');
    // Saved so: a later run of the same paths finds nothing to do, and keeps it.
    const third = await run([join('node_modules', 'pkg'), 'notes.md']);
    expect(third.report.index).toBeUndefined();
    expect((await third.index.search(question))[0]?.title).toContain('Retention');
    expect((await third.index.search('frobnicator'))[0]?.source).toBe('notes.md');
    expect(third.index.size).toBe(first.index.size);
  });

  it('keeps searching an index stored before the api field, and rebuilds it with the field at the next ingest', async () => {
    await writeFile(join(root, 'notes.md'), '# Notes\n\nThe frobnicator keeps the widget fast.\n');
    const storage = new FilesystemStorage(join(root, 'data'));
    const resources = new ResourceIndex(storage, new RulesPolicy(RULES));
    const run = async (paths: string[]) =>
      ingest(paths, { resources, index: await MiniSearchIndex.open(storage), actor: SYSTEM, cwd: root });
    await run(['notes.md', join('node_modules', 'pkg')]);
    // Generation 2 as cld wrote it before the `api` field: the same chunks and terms, three fields.
    const current = JSON.parse((await storage.get(keyOfGeneration('indexes/chunks', 1))).toString('utf8'));
    const old = new MiniSearch({ ...ENGINE_OPTIONS, fields: ['title', 'text', 'source'] });
    old.addAll(Object.values(current.storedFields as Record<string, object>) as never[]);
    const oldJson = { ...old.toJSON(), cldTerms: TERMS_VERSION };
    await storage.put(keyOfGeneration('indexes/chunks', 2), JSON.stringify(oldJson));
    await writeShardPack(storage, 'indexes/chunks', 2, oldJson, new NameOwners().toResolved());
    // A function's cold search reads the old generation's shard pack: the missing field is skipped.
    const cold = await ShardedChunkIndex.open(storage);
    expect((await cold.search('frobnicator')).map((hit) => hit.source)).toEqual(['notes.md']);
    expect((await cold.search('log group retention')).length).toBeGreaterThan(0);

    const before = await MiniSearchIndex.open(storage);
    expect(before.location?.generation).toBe(2);
    expect((await before.search('frobnicator')).length).toBe(1);
    expect(await before.search('How long are the contents kept?')).toEqual([]);

    const report = await run([join('node_modules', 'pkg')]);
    expect(report.index).toBe(keyOfGeneration('indexes/chunks', 3));
    const after = await MiniSearchIndex.open(storage);
    expect((await after.search('How long are the contents kept?'))[0]?.title).toContain('Retention');
    // The document not given this time keeps its chunks.
    expect((await after.search('frobnicator'))[0]?.source).toBe('notes.md');
    expect(after.size).toBe(before.size);
  });
});

describe('the bridge of a hit (shared/search/bridge.ts)', () => {
  let root: string;

  beforeEach(async () => {
    ({ root } = await jsiiPackage('cld-bridge-', 'plain'));
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const question = 'How long are the contents kept?';
  const bridged = [{ name: 'retention', summary: RETENTION }];

  /** Ingests the package folder into `storage`'s index (opened, then saved by ingest) and returns it. */
  const ingestPackage = async (storage: FilesystemStorage) => {
    const index = await MiniSearchIndex.open(storage);
    await ingest([join('node_modules', 'pkg')], {
      resources: new ResourceIndex(storage, new RulesPolicy(RULES)),
      index,
      actor: SYSTEM,
      cwd: root,
    });
    return index;
  };

  it('tells which name of the hit matched the query through its summary, in the whole index and in the shard pack', async () => {
    const storage = new FilesystemStorage(join(root, 'data'));
    const index = await ingestPackage(storage);
    const [hit] = await index.search(question);
    expect(hit?.title).toContain('Retention');
    // `retention` and `RetentionDays` share the summary: said once, by the first name spelled.
    expect(hit?.bridge).toEqual(bridged);
    // A query its own text answers needs no bridge.
    expect((await index.search('log group policy'))[0]?.bridge).toBeUndefined();
    // Saved, reopened whole, and read by a function's cold start from beside the shard pack.
    expect((await (await MiniSearchIndex.open(storage)).search(question))[0]?.bridge).toEqual(bridged);
    const cold = await ShardedChunkIndex.open(storage);
    expect((await cold.search(question))[0]?.bridge).toEqual(bridged);
  });

  it('gives a document glossed before the index kept entries its entries at the next ingest of its package, once', async () => {
    const storage = new FilesystemStorage(join(root, 'data'));
    const resources = new ResourceIndex(storage, new RulesPolicy(RULES));
    const run = async () => {
      const index = await MiniSearchIndex.open(storage);
      return {
        index,
        report: await ingest([join('node_modules', 'pkg')], { resources, index, actor: SYSTEM, cwd: root }),
      };
    };
    await run();
    // Generation 2: generation 1 without its documents' entries (no `cldBridge`), as an index of before them.
    const json = JSON.parse((await storage.get(keyOfGeneration('indexes/chunks', 1))).toString('utf8'));
    delete json.cldBridge;
    await storage.put(keyOfGeneration('indexes/chunks', 2), JSON.stringify(json));
    const second = await run();
    expect(second.report.index).toBe(keyOfGeneration('indexes/chunks', 3));
    expect((await second.index.search(question))[0]?.bridge).toEqual(bridged);
    const third = await run();
    expect(third.report.index).toBeUndefined();
    expect((await third.index.search(question))[0]?.bridge).toEqual(bridged);
  });

  it('gives no bridge, and the same hits, for an index stored without the entries', async () => {
    const storage = new FilesystemStorage(join(root, 'data'));
    await ingestPackage(storage);
    // Generation 2: generation 1 as it was written before bridges (no `cldBridge`, nothing beside the pack).
    const json = JSON.parse((await storage.get(keyOfGeneration('indexes/chunks', 1))).toString('utf8'));
    delete json.cldBridge;
    await storage.put(keyOfGeneration('indexes/chunks', 2), JSON.stringify(json));
    await writeShardPack(storage, 'indexes/chunks', 2, json, new NameOwners().toResolved());
    const whole = await (await MiniSearchIndex.open(storage)).search(question);
    const cold = await (await ShardedChunkIndex.open(storage)).search(question);
    for (const hits of [whole, cold]) {
      expect(hits[0]?.title).toContain('Retention');
      expect(hits.some((hit) => hit.bridge !== undefined)).toBe(false);
    }
  });
});
