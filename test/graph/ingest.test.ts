import { copyFile, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { Parser } from 'n3';
import { beforeEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/errors.js';
import { DEFAULT_GRAPH_INDEX_KEY, GraphIndex } from '../../shared/graph/graph-index.js';
import { ingestGraph } from '../../shared/graph/ingest.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import { builtinPolicy } from '../../shared/policy/select.js';
import { ResourceIndex } from '../../shared/resources/resource-index.js';
import type { Graph } from '../../shared/resources/schemas.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import { childUrn } from '../../shared/urn.js';

const FIXTURES = join(import.meta.dirname, 'fixtures');
const require = createRequire(import.meta.url);
/** A Turtle-family vocabulary shipped on npm (one of @zazuko/vocabularies' datasets). */
const FOAF = require.resolve('@vocabulary/foaf/foaf.nq');

let cwd: string;
let storage: FilesystemStorage;
let resources: ResourceIndex;

beforeEach(async () => {
  cwd = await mkdtemp(join(tmpdir(), 'cld-graph-ingest-'));
  storage = new FilesystemStorage(join(cwd, '.data'));
  resources = new ResourceIndex(storage, builtinPolicy());
});

async function stage(...files: string[]): Promise<string[]> {
  await mkdir(join(cwd, 'in'), { recursive: true });
  const names: string[] = [];
  for (const file of files) {
    await copyFile(file, join(cwd, 'in', basename(file)));
    names.push(`in/${basename(file)}`);
  }
  return names;
}

const deps = () => ({ resources, indexStorage: storage, actor: SYSTEM_ACTOR, cwd });

describe('graph ingest of linked-data files', () => {
  it('stores a Turtle vocabulary and a shipped N-Quads vocabulary as doc.Graph resources under their Documents', async () => {
    const [ttl, nq] = await stage(join(FIXTURES, 'vocabulary.ttl'), FOAF);
    const report = await ingestGraph([ttl as string, nq as string], deps());
    const foafTriples = new Parser({ format: 'N-Quads' }).parse(await readFile(FOAF, 'utf8')).length;
    expect(report.files).toBe(2);
    expect(report.triples).toBe(foafTriples + 9);
    const graph = (await resources.get(
      SYSTEM_ACTOR,
      childUrn(childUrn(undefined, 'doc.Document', ttl as string), 'doc.Graph', 'graph-all'),
    )) as Graph;
    expect(graph.triples).toBe(9);
    expect(new Parser({ format: 'N-Quads' }).parse(graph.quads)).toHaveLength(9);
    expect(report.index).toBe(`${DEFAULT_GRAPH_INDEX_KEY}.1.json`);
  });

  it('reads an HTML page’s JSON-LD, RDFa and microdata', async () => {
    const [page] = await stage(join(FIXTURES, 'page.html'));
    await ingestGraph([page as string], deps());
    const index = await GraphIndex.open(storage, resources);
    const source = index.manifest.sources[0];
    expect(source?.kind).toBe('rdf');
    const loaded = await index.load(SYSTEM_ACTOR, `0:all`);
    const names = loaded.store
      .getQuads(null, 'http://schema.org/name', null, null)
      .map((q) => q.object.value);
    expect(names.sort()).toEqual(['Ada Baker', 'Example Bakery', 'Sourdough bread']);
  });

  it('refuses malformed Turtle naming the file and line, and writes nothing, not even the valid files of the run', async () => {
    const [good, broken] = await stage(join(FIXTURES, 'vocabulary.ttl'), join(FIXTURES, 'broken.ttl'));
    const error = await ingestGraph([good as string, broken as string], deps()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(/^in\/broken\.ttl:\d+: not valid turtle/);
    expect(await storage.findByPrefix('')).toEqual([]);
  });

  it('refuses a JSON-LD document that needs a remote context (ingest is offline)', async () => {
    const [doc] = await stage(join(FIXTURES, 'remote-context.jsonld'));
    await expect(ingestGraph([doc as string], deps())).rejects.toThrow(
      /remote JSON-LD context .* not fetched/,
    );
  });

  it('skips a source already in the graph and refuses one whose content changed', async () => {
    const [ttl] = await stage(join(FIXTURES, 'vocabulary.ttl'));
    await ingestGraph([ttl as string], deps());
    const again = await ingestGraph([ttl as string], deps());
    expect(again).toMatchObject({ skipped: 1, triples: 0, shards: 0 });
    expect(again.index).toBeUndefined();
    await writeFile(
      join(cwd, ttl as string),
      `${await readFile(join(cwd, ttl as string), 'utf8')}\n# changed\n`,
    );
    await expect(ingestGraph([ttl as string], deps())).rejects.toThrow(/changed since it was ingested/);
  });

  it('walks folders for linked data but not bundled node_modules', async () => {
    await mkdir(join(cwd, 'pkg', 'node_modules', 'dep'), { recursive: true });
    await copyFile(join(FIXTURES, 'vocabulary.ttl'), join(cwd, 'pkg', 'a.ttl'));
    await copyFile(join(FIXTURES, 'broken.ttl'), join(cwd, 'pkg', 'node_modules', 'dep', 'b.ttl'));
    const report = await ingestGraph(['pkg'], deps());
    expect(report.files).toBe(1);
    expect(dirname(report.index ?? '')).toBe(dirname(DEFAULT_GRAPH_INDEX_KEY));
  });
});
