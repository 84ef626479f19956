import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import graphFile from '../../shared/catalog/tools/graph.json' with { type: 'json' };
import readFile_ from '../../shared/catalog/tools/read.json' with { type: 'json' };
import searchFile from '../../shared/catalog/tools/search.json' with { type: 'json' };
import { NotFoundError, PolicyDeniedError, ValidationError } from '../../shared/errors.js';
import type { Actor } from '../../shared/policy/port.js';
import { RulesPolicy } from '../../shared/policy/rules.js';
import { ResourceIndex } from '../../shared/resources/resource-index.js';
import { JsonSchemaObjectSchema, type Tool } from '../../shared/resources/schemas.js';
import { ingest } from '../../shared/search/ingest.js';
import { MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import { argumentCheck } from '../../shared/tools/execution.js';
import type { ToolContext } from '../../shared/tools/port.js';
import { readTool } from '../../shared/tools/read.js';
import { SEARCH_TEXT_LIMIT, SearchInputSchema, searchTool } from '../../shared/tools/search.js';
import { childUrn } from '../../shared/urn.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const RULES = JSON.parse(await readFile(join(REPO, 'policies/rules.json'), 'utf8')) as unknown;

const CONVERSATION = childUrn(undefined, 'common.Conversation', 'a');
const MESSAGE = childUrn(CONVERSATION, 'common.Message', 'question');
const TASK = childUrn(MESSAGE, 'plan.Task', 'look-it-up');
const OTHER_CONVERSATION = childUrn(undefined, 'common.Conversation', 'b');
const ASSISTANT = childUrn(undefined, 'common.Assistant', 'researcher');

const ACTORS: [string, Actor][] = [
  ['assistant', { kind: 'assistant', id: ASSISTANT, conversation: CONVERSATION, task: TASK }],
  ['tool', { kind: 'tool', id: 'search', conversation: CONVERSATION, task: TASK, tool: 'search' }],
];

const GUIDE = [
  '# Widget Guide',
  '',
  '## Configuration',
  '',
  Array.from({ length: 30 }, (_, i) => `The frobnicator setting ${i} controls the widget speed.`).join(' '),
  '',
].join('\n');
const NOTES = '# Notes\n\nThe zebra migration moves every frobnicator to the new barn.\n';

const docUrn = (name: string) => childUrn(undefined, 'doc.Document', name);

let root: string;
let resources: ResourceIndex;
let index: MiniSearchIndex;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'cld-tools-'));
  await mkdir(join(root, 'docs'));
  await writeFile(join(root, 'docs', 'guide.md'), GUIDE);
  await writeFile(join(root, 'docs', 'notes.md'), NOTES);
  resources = new ResourceIndex(new FilesystemStorage(join(root, 'data')), new RulesPolicy(RULES));
  index = new MiniSearchIndex();
  await ingest(['docs'], { resources, index, actor: { kind: 'system', id: 'operator' }, cwd: root });
  // Another conversation's messages match the query better than any document; no actor of
  // conversation A may read them, so they must never come back.
  index.add(
    Array.from({ length: 3 }, (_, i) => ({
      urn: childUrn(OTHER_CONVERSATION, 'common.Message', `secret-${i}`),
      type: 'common.Message',
      text: 'frobnicator frobnicator frobnicator setting: the secret speed is 42',
    })),
  );
  // A readable item longer than a whole chunk: search cuts its text at SEARCH_TEXT_LIMIT.
  index.add([
    {
      urn: childUrn(CONVERSATION, 'common.Message', 'long'),
      type: 'common.Message',
      text: `The frobnicator notes. ${'Filler words about other things. '.repeat(60)}`,
    },
  ]);
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function contextFor(actor: Actor): ToolContext {
  return { actor, resources, search: index, signal: new AbortController().signal };
}

interface Results {
  results: { urn: string; title?: string; text: string; score: number }[];
}

describe.each(ACTORS)('search tool as %s', (_, actor) => {
  it('returns readable hits best first with urn, title, trimmed text and score', async () => {
    const { results } = (await searchTool.execute(
      { query: 'frobnicator setting' },
      contextFor(actor),
    )) as unknown as Results;

    expect(results.length).toBeGreaterThan(0);
    expect(results[0]?.urn.startsWith(`${docUrn('docs/guide.md')}/doc.Chunk.`)).toBe(true);
    expect(results[0]?.title).toBe('Widget Guide > Configuration');
    for (const result of results) {
      expect(result.urn.startsWith(OTHER_CONVERSATION)).toBe(false);
      expect(result.text.length).toBeLessThanOrEqual(SEARCH_TEXT_LIMIT);
      expect(typeof result.score).toBe('number');
    }
    expect(results.some((result) => result.text.endsWith('…'))).toBe(true);
  });

  it('fills the limit with readable hits when better hits are denied', async () => {
    const { results } = (await searchTool.execute(
      { query: 'frobnicator setting', limit: 1 },
      contextFor(actor),
    )) as unknown as Results;

    expect(results).toHaveLength(1);
    expect(results[0]?.urn.startsWith('cld:doc.Document.')).toBe(true);
  });

  it('restricts results to a URN prefix and a type', async () => {
    const notes = docUrn('docs/notes.md');

    const byPrefix = (await searchTool.execute(
      { query: 'frobnicator', prefix: notes },
      contextFor(actor),
    )) as unknown as Results;
    const byType = (await searchTool.execute(
      { query: 'frobnicator', type: 'common.Message' },
      contextFor(actor),
    )) as unknown as Results;

    expect(byPrefix.results.map((result) => result.urn)).toEqual([childUrn(notes, 'doc.Chunk', 'chunk-0')]);
    // Of the messages only this conversation's own is readable; the other conversation's never come back.
    expect(byType.results.map((result) => result.urn)).toEqual([
      childUrn(CONVERSATION, 'common.Message', 'long'),
    ]);
  });
});

describe("search tool: a hit's bridge", () => {
  it('passes the bridge of a hit on, and gives none where the index has none', async () => {
    const bridge = [
      { name: 'RetentionDays', summary: 'How long, in days, the log contents will be retained.' },
    ];
    const urn = `${docUrn('docs/guide.md')}/doc.Chunk.0`;
    const search = {
      search: async () => [
        { urn, type: 'doc.Chunk', text: 'Retention.', score: 1.23456, bridge },
        { urn: `${urn}1`, type: 'doc.Chunk', text: 'Other.', score: 1 },
      ],
    };
    const actor = ACTORS[0]?.[1] as Actor;
    const { results } = (await searchTool.execute(
      { query: 'how long are logs kept' },
      { actor, resources, search, signal: new AbortController().signal },
    )) as unknown as { results: Record<string, unknown>[] };
    expect(results[0]).toEqual({ urn, text: 'Retention.', bridge, score: 1.235 });
    expect(results[1]).not.toHaveProperty('bridge');
  });
});

describe('search tool arguments', () => {
  it.each([
    ['an empty query', { query: '  ' }],
    ['a limit over 20', { query: 'widget', limit: 21 }],
    ['a fractional limit', { query: 'widget', limit: 2.5 }],
    ['a prefix that is not a URN', { query: 'widget', prefix: 'docs/' }],
    ['a malformed type', { query: 'widget', type: 'chunk' }],
    ['an unknown argument', { query: 'widget', page: 2 }],
  ])('rejects %s', async (_, input) => {
    await expect(searchTool.execute(input, contextFor(ACTORS[0]?.[1] as Actor))).rejects.toBeInstanceOf(
      ValidationError,
    );
  });
});

describe.each(ACTORS)('read tool as %s', (_, actor) => {
  it('returns a chunk as { urn, text, heading, document }', async () => {
    const guide = docUrn('docs/guide.md');
    const urn = childUrn(guide, 'doc.Chunk', 'chunk-0');

    const view = await readTool.execute({ urn }, contextFor(actor));

    expect(Object.keys(view as object).sort()).toEqual(['document', 'heading', 'text', 'urn']);
    expect(view).toMatchObject({ urn, document: guide, heading: 'Widget Guide > Configuration' });
    expect((view as { text: string }).text).toContain('# Widget Guide');
  });

  it('returns any other resource as its JSON', async () => {
    const view = await readTool.execute({ urn: docUrn('docs/notes.md') }, contextFor(actor));

    expect(view).toMatchObject({
      meta: { type: 'doc.Document', purpose: 'Notes' },
      path: 'docs/notes.md',
      chunks: 1,
    });
  });

  it.each([
    ['a malformed URN', 'cld:doc.Document.xyz', ValidationError],
    ['a URN with an unknown namespace', 'cld:evil.Thing.0123456789abcdef', ValidationError],
    ['a missing resource', childUrn(docUrn('docs/notes.md'), 'doc.Chunk', 'chunk-99'), NotFoundError],
    ['another conversation', childUrn(OTHER_CONVERSATION, 'common.Message', 'secret-0'), PolicyDeniedError],
  ])('propagates %s as the typed error', async (_, urn, type) => {
    await expect(readTool.execute({ urn }, contextFor(actor))).rejects.toBeInstanceOf(type);
  });
});

describe('catalog tool files', () => {
  const ajv = new Ajv({ strict: false });

  it.each([
    ['search', searchFile],
    ['read', readFile_],
  ])('%s.json names its implementation, fills every description field and has an object schema', (name, file) => {
    const implementation = name === 'search' ? searchTool : readTool;

    expect(file.name).toBe(implementation.name);
    for (const field of ['purpose', 'instructions', 'applicability', 'evaluation', 'description'] as const) {
      expect(file[field].length).toBeGreaterThan(20);
    }
    expect(JsonSchemaObjectSchema.safeParse(file.parameters).success).toBe(true);
    expect(() => ajv.compile(file.parameters)).not.toThrow();
    expect(file.timeoutMs).toBeGreaterThan(0);
  });

  it.each([
    [{ query: 'bucket' }, true],
    [{ query: 'bucket', type: 'doc.Chunk', prefix: docUrn('docs/notes.md'), limit: 20 }, true],
    [{ query: 'bucket', limit: 21 }, false],
    [{ query: 'bucket', limit: 0 }, false],
    [{ limit: 3 }, false],
    [{ query: 'bucket', extra: true }, false],
  ])('search.json and the search tool agree on %j', (input, valid) => {
    const validate = ajv.compile(searchFile.parameters);

    expect(validate(input)).toBe(valid);
    expect(SearchInputSchema.safeParse(input).success).toBe(valid);
  });
});

describe("the tool step's argument check (the Tool's JSON schema through zod's fromJSONSchema)", () => {
  const ajv = new Ajv({ strict: false });
  const asTool = (file: { name: string; parameters: unknown }) =>
    ({ function: { name: file.name, parameters: file.parameters } }) as unknown as Tool;
  /** Inputs around every keyword the catalog schemas use; ajv (a JSON Schema validator) is the oracle. */
  const INPUTS: unknown[] = [
    {},
    null,
    [],
    'bucket',
    { extra: 1 },
    { query: 'bucket' },
    { query: '' },
    { query: 'x'.repeat(1001) },
    { query: 'bucket', limit: 20 },
    { query: 'bucket', limit: 21 },
    { query: 'bucket', limit: 2.5 },
    { query: 'bucket', type: 'doc.Chunk' },
    { query: 'bucket', type: 'chunk' },
    { query: 'bucket', prefix: 'cld:doc.Document.abc' },
    { urn: 'cld:doc.Document.abc' },
    { urn: 'doc.Document.abc' },
    { urn: 5 },
    { describe: 'BucketProps' },
    { describe: '' },
    { describe: 'BucketProps', limit: '3' },
    { patterns: [['?c', 'a', 'jsii:Class']] },
    { patterns: [['?c', 'a']] },
    { patterns: [['?c', 'a', 'jsii:Class', 'x']] },
    { patterns: [] },
    { patterns: Array.from({ length: 5 }, () => ['?c', 'a', 'jsii:Class']) },
    { patterns: [['?c', 'a', '']] },
    { summary: true },
    { summary: false },
    { summary: true, module: 'aws_s3' },
    { summary: true, module: 'AWS S3' },
    { describe: 'Bucket', offset: -1 },
    { describe: 'Bucket', offset: 100_000 },
    { describe: 'Bucket', limit: 0 },
  ];

  it.each([
    ['search', searchFile],
    ['read', readFile_],
    ['graph', graphFile],
  ])('%s.json converts and agrees with a JSON Schema validator on every input', (_, file) => {
    const check = argumentCheck(asTool(file));
    if (!('schema' in check)) throw new Error(`not checkable: ${check.unsupported}`);
    const validate = ajv.compile(file.parameters);

    const verdicts = INPUTS.map((input) => [input, check.schema.safeParse(input).success]);

    expect(verdicts).toEqual(INPUTS.map((input) => [input, validate(input)]));
    expect(verdicts.some(([, valid]) => valid)).toBe(true);
    expect(verdicts.some(([, valid]) => !valid)).toBe(true);
  });

  it('compiles a Tool once (same check for the same resource)', () => {
    const tool = asTool(searchFile);

    expect(argumentCheck(tool)).toBe(argumentCheck(tool));
  });

  it('reports a schema zod cannot express instead of passing every input', () => {
    const check = argumentCheck(
      asTool({
        name: 'conditional',
        parameters: {
          type: 'object',
          properties: { a: { type: 'string' } },
          not: { required: ['a'] },
        },
      }),
    );

    expect(check).toEqual({ unsupported: expect.stringContaining('not is not supported') });
  });
});
