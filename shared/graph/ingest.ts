import { createHash } from 'node:crypto';
import { type Dirent, readFileSync, type Stats } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, dirname, extname, join, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DataFactory, type Quad, Writer } from 'n3';
import pLimit from 'p-limit';
import { ValidationError } from '../errors.js';
import type { Actor } from '../policy/port.js';
import { withMeta } from '../resources/meta.js';
import type { ResourceIndex } from '../resources/resource-index.js';
import type { Chunk, Document, Graph } from '../resources/schemas.js';
import { keyOfGeneration, latestGeneration } from '../search/minisearch-index.js';
import type { StorageInterface } from '../storage/port.js';
import { childUrn } from '../urn.js';
import {
  DEFAULT_GRAPH_INDEX_KEY,
  emptyManifest,
  type GraphManifest,
  type GraphSource,
  type NameBucket,
  nameBucket,
  parseManifest,
} from './graph-index.js';
import { assemblyToShards, parseAssembly } from './jsii.js';
import { parseRdf, RDF_EXTENSIONS } from './rdf-files.js';
import { compactIri, PREFIXES, V } from './vocabulary.js';

/**
 * Graph ingest (issue 13): linked-data files and jsii assemblies become `doc.Graph` resources
 * (N-Quads, create-only) under a `doc.Document` for their source file, plus a new generation of
 * the graph index manifest (./graph-index.ts). Everything is parsed before anything is written,
 * so a malformed file fails the run with its name and line and leaves nothing half-written.
 */

/** Files and folders ingest reads as linked data: `.jsii` assemblies and {@link RDF_EXTENSIONS}. */
export function isGraphFile(path: string): boolean {
  return basename(path) === '.jsii' || extname(path).toLowerCase() in RDF_EXTENSIONS;
}

/** Chunks an entity is linked to (`jsii:mentionedIn`) at most. */
export const MAX_MENTIONS = 4;

/** Shards written at once. */
const WRITE_CONCURRENCY = 8;

/** What {@link ingestGraph} needs. */
export interface GraphIngestDeps {
  resources: ResourceIndex;
  /** Where the graph index manifest generations go (the index storage). */
  indexStorage: StorageInterface;
  /** The operator (kind `system`). */
  actor: Actor;
  cwd: string;
  now?: () => Date;
  indexKey?: string;
}

/** What {@link ingestGraph} did. */
export interface GraphIngestReport {
  /** Source files found. */
  files: number;
  /** Sources already in the graph index with the same content (nothing written). */
  skipped: number;
  /** Distinct triples of the sources ingested in this run. */
  triples: number;
  /** `doc.Graph` resources (shards) written in this run. */
  shards: number;
  /** N-Quads bytes written. */
  bytes: number;
  /** Links from entities to chunks (`jsii:mentionedIn`). */
  mentions: number;
  ms: number;
  /** Storage key of the manifest generation written, when one was. */
  index?: string;
}

interface ParsedSource {
  name: string;
  urn: string;
  contentHash: string;
  bytes: number;
  kind: 'jsii' | 'rdf';
  shards: Map<string, Quad[]>;
  triples: number;
  directory: { label: string; fqn: string; shard: string }[];
}

/**
 * Finds the graph files under `paths` (files or folders, walked without following links),
 * parses them all, links jsii entities to the chunks of their module's README, writes the
 * shards and the manifest.
 * @throws ValidationError for a malformed file (`name:line: …`), a file that changed since it was
 *   ingested, or a missing path; nothing is written then
 */
export async function ingestGraph(
  paths: readonly string[],
  deps: GraphIngestDeps,
): Promise<GraphIngestReport> {
  const started = performance.now();
  const now = deps.now ?? (() => new Date());
  const key = deps.indexKey ?? DEFAULT_GRAPH_INDEX_KEY;
  const files = await findGraphFiles(paths, deps.cwd);
  const generation = await latestGeneration(deps.indexStorage, key);
  const manifest =
    generation === undefined
      ? emptyManifest()
      : parseManifest((await deps.indexStorage.get(keyOfGeneration(key, generation))).toString('utf8'));
  const report: GraphIngestReport = {
    files: files.length,
    skipped: 0,
    triples: 0,
    shards: 0,
    bytes: 0,
    mentions: 0,
    ms: 0,
  };

  const parsed: ParsedSource[] = [];
  for (const file of files) {
    const content = await readFile(file.absolute);
    const contentHash = createHash('sha256').update(content).digest('hex');
    const urn = childUrn(undefined, 'doc.Document', file.name);
    const existing = (await deps.resources.find(deps.actor, 'doc.Document', urn)) as Document | undefined;
    if (existing && existing.contentHash !== contentHash) {
      throw new ValidationError(
        `${file.name} changed since it was ingested and documents are immutable (ingest into a fresh data directory)`,
      );
    }
    if (existing && manifest.sources.some((s) => s.document === urn)) {
      report.skipped += 1;
      continue;
    }
    parsed.push(await parseSource(file, content, contentHash, urn));
  }
  for (const source of parsed) {
    if (source.kind === 'jsii')
      report.mentions += await linkMentions(
        source,
        deps,
        files.find((f) => f.name === source.name) as GraphFile,
      );
  }
  const directory: NameBucket = {};
  for (const source of parsed) {
    const entry = await writeSource(source, deps, now());
    report.triples += source.triples;
    report.shards += entry.shards.length;
    report.bytes += entry.shards.reduce((sum, s) => sum + s.bytes, 0);
    const index = manifest.sources.length;
    manifest.sources.push(entry);
    for (const { label, fqn, shard } of source.directory) {
      const list = directory[label] ?? [];
      list.push([`${PREFIXES.type}${fqn}`, index, shard]);
      directory[label] = list;
    }
  }
  if (Object.keys(directory).length > 0)
    manifest.names = await saveNames(deps.indexStorage, key, manifest, directory);
  if (parsed.length > 0) report.index = await saveManifest(deps.indexStorage, key, manifest);
  report.ms = Math.round(performance.now() - started);
  return report;
}

interface GraphFile {
  absolute: string;
  name: string;
}

async function findGraphFiles(paths: readonly string[], cwd: string): Promise<GraphFile[]> {
  const found = new Set<string>();
  for (const path of paths) {
    const absolute = resolve(cwd, path);
    let stats: Stats;
    try {
      stats = await stat(absolute);
    } catch {
      throw new ValidationError(`ingest path does not exist: ${path}`);
    }
    if (stats.isDirectory()) for (const file of await walk(absolute)) found.add(file);
    else if (stats.isFile() && isGraphFile(absolute)) found.add(absolute);
  }
  return [...found]
    .map((absolute) => ({ absolute, name: relative(cwd, absolute).split(sep).join('/') }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Graph files under a folder; bundled dependencies (`node_modules` inside it) are not walked. */
async function walk(folder: string): Promise<string[]> {
  const entries: Dirent[] = await readdir(folder, { withFileTypes: true });
  const files: string[] = [];
  for (const entry of entries) {
    const path = join(folder, entry.name);
    if (entry.isDirectory() && entry.name !== 'node_modules') files.push(...(await walk(path)));
    else if (entry.isFile() && isGraphFile(path)) files.push(path);
  }
  return files;
}

async function parseSource(
  file: GraphFile,
  content: Buffer,
  contentHash: string,
  urn: string,
): Promise<ParsedSource> {
  if (basename(file.absolute) === '.jsii') {
    let redirected: Buffer | undefined;
    const assembly = parseAssembly(content, (target) => {
      redirected = readFileSyncSafe(join(dirname(file.absolute), target), file.name);
      return redirected;
    });
    const graph = assemblyToShards(assembly);
    return {
      name: file.name,
      urn,
      contentHash,
      bytes: content.length + (redirected?.length ?? 0),
      kind: 'jsii',
      shards: graph.shards,
      triples: graph.triples,
      directory: graph.directory,
    };
  }
  const format = RDF_EXTENSIONS[extname(file.absolute).toLowerCase()];
  if (!format) throw new ValidationError(`${file.name}: not a linked-data file`);
  const quads = await parseRdf(
    content.toString('utf8'),
    format,
    file.name,
    pathToFileURL(file.absolute).href,
  );
  return {
    name: file.name,
    urn,
    contentHash,
    bytes: content.length,
    kind: 'rdf',
    shards: new Map([['all', quads]]),
    triples: quads.length,
    directory: [],
  };
}

/** Reads a jsii redirect target (synchronously: parseAssembly's callback is synchronous). */
function readFileSyncSafe(path: string, name: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new ValidationError(`${name}: its redirect target ${basename(path)} cannot be read`, {
      cause: error,
    });
  }
}

/**
 * Links each type of a jsii source to the chunks of its module's README that name it (and each
 * property of a type so linked to the chunks that name both): `jsii:mentionedIn` triples in the
 * type's shard. The README of submodule `aws_s3` is `<package>/aws-s3/README.md`; its Document
 * exists when the docs were ingested from the same working directory.
 */
async function linkMentions(source: ParsedSource, deps: GraphIngestDeps, file: GraphFile): Promise<number> {
  const packageDir = dirname(file.name);
  const shardByIri = new Map(source.directory.map((d) => [`${PREFIXES.type}${d.fqn}`, d.shard]));
  let links = 0;
  for (const [shard, quads] of source.shards) {
    const readme = `${packageDir}/${shard === 'core' ? 'core' : shard.replace(/_/g, '-')}/README.md`;
    const documentUrn = childUrn(undefined, 'doc.Document', readme);
    const document = await deps.resources.find(deps.actor, 'doc.Document', documentUrn);
    if (!document) continue;
    const chunks = (await deps.resources.list(deps.actor, documentUrn, {
      type: 'doc.Chunk',
      childrenOnly: true,
    })) as Chunk[];
    chunks.sort((a, b) => a.index - b.index);
    const words = chunks.map((chunk) => new Set(chunk.text.match(/[A-Za-z_$][\w$]*/g) ?? []));
    const labels = new Map<string, string>();
    const members = new Map<string, { iri: string; label: string }[]>();
    for (const q of quads) {
      if (!q.predicate.equals(V.label)) continue;
      const iri = q.subject.value;
      const slash = iri.indexOf('/', PREFIXES.type.length);
      if (slash === -1) labels.set(iri, q.object.value);
      else {
        const owner = iri.slice(0, slash);
        const list = members.get(owner) ?? [];
        list.push({ iri, label: q.object.value });
        members.set(owner, list);
      }
    }
    for (const [iri, label] of labels) {
      if (!iri.startsWith(PREFIXES.type) || shardByIri.get(iri) !== shard) continue;
      const hits = chunks.flatMap((chunk, i) => ((words[i] as Set<string>).has(label) ? [{ chunk, i }] : []));
      for (const { chunk } of hits.slice(0, MAX_MENTIONS)) {
        quads.push(
          DataFactory.quad(DataFactory.namedNode(iri), V.mentionedIn, DataFactory.namedNode(chunk.meta.id)),
        );
        links++;
      }
      for (const member of members.get(iri) ?? []) {
        const both = hits
          .filter(({ i }) => (words[i] as Set<string>).has(member.label))
          .slice(0, MAX_MENTIONS);
        for (const { chunk } of both) {
          quads.push(
            DataFactory.quad(
              DataFactory.namedNode(member.iri),
              V.mentionedIn,
              DataFactory.namedNode(chunk.meta.id),
            ),
          );
          links++;
        }
      }
    }
  }
  source.triples += links;
  return links;
}

/** Writes the Document (when absent) and one `doc.Graph` per shard; returns the manifest entry. */
async function writeSource(source: ParsedSource, deps: GraphIngestDeps, now: Date): Promise<GraphSource> {
  const limit = pLimit(WRITE_CONCURRENCY);
  const shards = await Promise.all(
    [...source.shards].map(([shard, quads]) =>
      limit(async () => {
        const text = new Writer({ format: 'N-Quads' }).quadsToString(quads);
        const graph: Graph = {
          meta: withMeta(
            {
              type: 'doc.Graph',
              name: `graph-${shard}`,
              parent: source.urn,
              purpose: `Linked data of ${source.name}${source.kind === 'jsii' ? `, submodule ${shard}` : ''}.`,
            },
            now,
          ),
          format: 'application/n-quads',
          shard,
          triples: quads.length,
          quads: text,
        };
        await deps.resources.put(deps.actor, graph);
        return { name: shard, urn: graph.meta.id, triples: quads.length, bytes: Buffer.byteLength(text) };
      }),
    ),
  );
  const document: Document = {
    meta: withMeta(
      { type: 'doc.Document', name: source.name, purpose: `Linked data from ${source.name}.` },
      now,
    ),
    path: source.name,
    contentHash: source.contentHash,
    bytes: source.bytes,
    chunks: 0,
  };
  await deps.resources.put(deps.actor, document);
  const { classes, shape } = shapeOf(source.shards);
  return {
    document: source.urn,
    name: source.name,
    kind: source.kind,
    triples: source.triples,
    ...(source.kind === 'jsii' ? { entityPrefix: PREFIXES.type } : {}),
    shards: shards.sort((a, b) => (a.name < b.name ? -1 : 1)),
    classes,
    shape,
  };
}

/** Lines of the shape kept per source. */
const SHAPE_LINES = 40;

/** Instances per class and the most frequent (class, predicate, class-or-datatype) lines. */
function shapeOf(shards: ReadonlyMap<string, Quad[]>): Pick<GraphSource, 'classes' | 'shape'> {
  const classOf = new Map<string, string>();
  const classes: Record<string, number> = {};
  const seen = new Set<string>();
  for (const quads of shards.values()) {
    for (const q of quads) {
      if (!q.predicate.equals(V.type) || seen.has(q.subject.value)) continue;
      seen.add(q.subject.value);
      const cls = compactIri(q.object.value);
      classOf.set(q.subject.value, cls);
      classes[cls] = (classes[cls] ?? 0) + 1;
    }
  }
  const counts = new Map<string, number>();
  const counted = new Set<Quad>();
  for (const quads of shards.values()) {
    for (const q of quads) {
      if (q.predicate.equals(V.type) || counted.has(q)) continue;
      counted.add(q);
      const from = classOf.get(q.subject.value) ?? 'rdfs:Resource';
      const to =
        q.object.termType === 'Literal'
          ? compactIri(q.object.datatype.value)
          : (classOf.get(q.object.value) ??
            (q.object.value.startsWith('cld:') ? 'cld:resource' : 'rdfs:Resource'));
      const line = `${from}\u0000${compactIri(q.predicate.value)}\u0000${to}`;
      counts.set(line, (counts.get(line) ?? 0) + 1);
    }
  }
  const shape = [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, SHAPE_LINES)
    .map(([line, count]) => {
      const [from, predicate, to] = line.split('\u0000') as [string, string, string];
      return { from, predicate, to, count };
    });
  return { classes, shape };
}

/**
 * Writes the directory of named entities (the earlier generation's merged with the new one) as
 * content-addressed buckets `<key>-names/<digest>/<bucket>.json`; returns the prefix.
 */
async function saveNames(
  storage: StorageInterface,
  key: string,
  manifest: GraphManifest,
  added: NameBucket,
): Promise<string> {
  const merged: NameBucket = {};
  if (manifest.names) {
    const previous = await storage.findByPrefix(`${manifest.names}/`);
    for (const file of previous) {
      const bucket = JSON.parse((await storage.get(file)).toString('utf8')) as NameBucket;
      for (const [label, entries] of Object.entries(bucket))
        merged[label] = [...(merged[label] ?? []), ...entries];
    }
  }
  for (const [label, entries] of Object.entries(added))
    merged[label] = [...(merged[label] ?? []), ...entries];
  const buckets = new Map<string, NameBucket>();
  for (const label of Object.keys(merged).sort()) {
    const id = nameBucket(label);
    const bucket = buckets.get(id) ?? {};
    bucket[label] = merged[label] as NameBucket[string];
    buckets.set(id, bucket);
  }
  const digest = createHash('sha256')
    .update(JSON.stringify([...buckets]))
    .digest('hex')
    .slice(0, 16);
  const prefix = `${key}-names/${digest}`;
  const limit = pLimit(WRITE_CONCURRENCY);
  await Promise.all(
    [...buckets].map(([id, bucket]) =>
      limit(() => storage.put(`${prefix}/${id}.json`, JSON.stringify(bucket))),
    ),
  );
  return prefix;
}

async function saveManifest(
  storage: StorageInterface,
  key: string,
  manifest: GraphManifest,
): Promise<string> {
  const data = JSON.stringify(manifest);
  for (let attempt = 0; attempt < 5; attempt++) {
    const generation = ((await latestGeneration(storage, key)) ?? 0) + 1;
    const target = keyOfGeneration(key, generation);
    if ((await storage.put(target, data)).created) return target;
  }
  throw new ValidationError(`could not save graph index ${key}: generations taken concurrently`);
}
