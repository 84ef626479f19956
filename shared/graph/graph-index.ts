import { Parser, type Quad, Store } from 'n3';
import * as z from 'zod';
import { NotFoundError, ValidationError } from '../errors.js';
import type { Actor } from '../policy/port.js';
import type { ResourceIndex } from '../resources/resource-index.js';
import type { Graph } from '../resources/schemas.js';
import { keyOfGeneration, latestGeneration } from '../search/minisearch-index.js';
import type { StorageInterface } from '../storage/port.js';
import { isUrn } from '../urn.js';
import { PREFIXES } from './vocabulary.js';

/**
 * The graph index: a small manifest, stored as immutable generations beside the chunk index
 * (`indexes/graph.<n>.json`), that says which `doc.Graph` resources (shards) exist, which shard
 * holds each named entity, and the graph's shape. The triples themselves stay in the
 * `doc.Graph` resources and are read through the policy gate, one shard at a time, only when a
 * query needs them (issue 13: the whole assembly never has to sit in one function's memory).
 */

/** Default storage key stem of the graph index: generations are `indexes/graph.<n>.json`. */
export const DEFAULT_GRAPH_INDEX_KEY = 'indexes/graph';

/** Shards kept loaded at once per container (least recently used dropped first). */
export const MAX_LOADED_SHARDS = 12;

const ShardEntrySchema = z.strictObject({
  /** Shard name, unique within its source. */
  name: z.string().min(1),
  /** The `doc.Graph` resource holding it. */
  urn: z.string().refine(isUrn),
  triples: z.number().int().nonnegative(),
  bytes: z.number().int().nonnegative(),
});

/** One line of the graph's shape: `count` triples link a `from` class to a `to` class or datatype. */
const ShapeSchema = z.strictObject({
  from: z.string(),
  predicate: z.string(),
  to: z.string(),
  count: z.number().int().nonnegative(),
});

const SourceSchema = z.strictObject({
  /** The `doc.Document` the triples came from. */
  document: z.string().refine(isUrn),
  /** Document name (path as ingested). */
  name: z.string(),
  /** `jsii` (sharded by submodule, entities in `directory`) or `rdf` (read whole). */
  kind: z.enum(['jsii', 'rdf']),
  /** Distinct triples of the source. */
  triples: z.number().int().nonnegative(),
  /** For jsii sources, the prefix of entity IRIs (`urn:cld:jsii:type:`). */
  entityPrefix: z.string().optional(),
  shards: z.array(ShardEntrySchema),
  /** Instances per class (compact IRIs). */
  classes: z.record(z.string(), z.number().int()),
  /** The shape: which predicates link which classes, most frequent first. */
  shape: z.array(ShapeSchema),
});

/** The stored manifest (one generation). */
export const GraphManifestSchema = z.strictObject({
  version: z.literal(1),
  sources: z.array(SourceSchema),
  /**
   * Where the directory of named entities is stored: `<names>/<bucket>.json`, one small object
   * per {@link nameBucket} of simple names, so resolving a name reads one bucket, not the whole
   * directory. Content-addressed (the digest of the directory), written before the manifest.
   */
  names: z.string().optional(),
});

/** One bucket of the directory: simple name → `[iri, source index, shard name]` per entity. */
export const NameBucketSchema = z.record(
  z.string(),
  z.array(z.tuple([z.string(), z.number().int(), z.string()])),
);
export type NameBucket = z.infer<typeof NameBucketSchema>;

/** The directory bucket of a simple name: its first two characters, lower-cased (`bu` for BucketProps). */
export function nameBucket(label: string): string {
  return label
    .slice(0, 2)
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '_')
    .padEnd(2, '_');
}
export type GraphManifest = z.infer<typeof GraphManifestSchema>;
export type GraphSource = z.infer<typeof SourceSchema>;

/** A loaded shard: its quads in an n3 store and the resource they came from. */
interface LoadedShard {
  urn: string;
  store: Store;
}

/**
 * Reads the graph: resolves names through the manifest's directory and loads shards on demand
 * (parsed N-Quads in an n3 `Store`, at most {@link MAX_LOADED_SHARDS} kept). Stateless between
 * actors: every shard load is a policy-gated `get` as the calling actor, and a cached shard is
 * only handed to an actor after the policy allowed that actor the same resource.
 */
export class GraphIndex {
  private readonly shards = new Map<string, LoadedShard>();
  private readonly buckets = new Map<string, Promise<NameBucket>>();

  private constructor(
    /** The manifest this index reads. */
    readonly manifest: GraphManifest,
    private readonly resources: ResourceIndex,
    private readonly storage: StorageInterface | undefined,
  ) {}

  /**
   * Opens the newest manifest generation, or an empty graph when none is stored.
   * @throws ValidationError when the newest generation is malformed
   */
  static async open(
    storage: StorageInterface,
    resources: ResourceIndex,
    key: string = DEFAULT_GRAPH_INDEX_KEY,
  ): Promise<GraphIndex> {
    const generation = await latestGeneration(storage, key);
    if (generation === undefined) return new GraphIndex(emptyManifest(), resources, storage);
    const raw = await storage.get(keyOfGeneration(key, generation));
    return new GraphIndex(parseManifest(raw.toString('utf8')), resources, storage);
  }

  /** True when nothing has been ingested into the graph. */
  get empty(): boolean {
    return this.manifest.sources.length === 0;
  }

  /**
   * Entities whose simple name or fully qualified name is `name` (case-sensitive; `aws_s3.Bucket`
   * and `aws-cdk-lib.aws_s3.Bucket` work too), as `[iri, shard key]`. Reads one directory bucket.
   * @throws ValidationError when the stored bucket is malformed
   */
  async resolveName(name: string): Promise<{ iri: string; shard: string }[]> {
    const simple = name.slice(name.lastIndexOf('.') + 1);
    const entries = (await this.bucket(simple))[simple] ?? [];
    const matches = entries.filter(
      ([iri]) => name === simple || iri.endsWith(`:${name}`) || iri.endsWith(`.${name}`),
    );
    return matches.map(([iri, source, shard]) => ({ iri, shard: shardKey(source, shard) }));
  }

  /**
   * Shard keys that hold triples about `iri`: the entity's own shard for sharded sources (members
   * `…/name` go with their type), every shard of unsharded sources.
   */
  async shardsFor(iri: string): Promise<string[]> {
    const keys: string[] = [];
    for (const [index, source] of this.manifest.sources.entries()) {
      if (source.kind === 'rdf') {
        for (const shard of source.shards) keys.push(shardKey(index, shard.name));
        continue;
      }
      if (!source.entityPrefix || !iri.startsWith(source.entityPrefix)) continue;
      const fqn = iri.slice(source.entityPrefix.length).split('/')[0] as string;
      const simple = fqn.slice(fqn.lastIndexOf('.') + 1);
      for (const [entity, from, shard] of (await this.bucket(simple))[simple] ?? []) {
        if (from === index && entity === `${source.entityPrefix}${fqn}`) keys.push(shardKey(index, shard));
      }
    }
    return keys;
  }

  private bucket(label: string): Promise<NameBucket> {
    const id = nameBucket(label);
    let bucket = this.buckets.get(id);
    if (!bucket) {
      bucket = this.readBucket(id);
      this.buckets.set(id, bucket);
      bucket.catch(() => this.buckets.delete(id));
    }
    return bucket;
  }

  private async readBucket(id: string): Promise<NameBucket> {
    const prefix = this.manifest.names;
    if (!prefix || !this.storage) return {};
    let raw: Buffer;
    try {
      raw = await this.storage.get(`${prefix}/${id}.json`);
    } catch (error) {
      if (error instanceof NotFoundError) return {};
      throw error;
    }
    const parsed = NameBucketSchema.safeParse(JSON.parse(raw.toString('utf8')));
    if (!parsed.success) throw new ValidationError(`malformed graph name bucket ${prefix}/${id}.json`);
    return parsed.data;
  }

  /** Shard keys of a source's shard by name (`aws_s3`), across sources. */
  shardsNamed(name: string): string[] {
    const keys: string[] = [];
    this.manifest.sources.forEach((source, index) => {
      if (source.shards.some((s) => s.name === name)) keys.push(shardKey(index, name));
    });
    return keys;
  }

  /** Every shard key of unsharded (`rdf`) sources: small files read whole. */
  unshardedKeys(): string[] {
    return this.manifest.sources.flatMap((source, index) =>
      source.kind === 'rdf' ? source.shards.map((s) => shardKey(index, s.name)) : [],
    );
  }

  /**
   * Loads a shard as `actor` (policy-gated get of its `doc.Graph` resource) and returns its
   * store and URN.
   * @throws NotFoundError for an unknown shard key or a missing resource; PolicyDeniedError
   */
  async load(actor: Actor, key: string): Promise<LoadedShard> {
    const entry = this.entry(key);
    const cached = this.shards.get(key);
    if (cached) {
      this.resources.authorize(actor, 'get', [entry.urn]);
      this.shards.delete(key);
      this.shards.set(key, cached);
      return cached;
    }
    const graph = (await this.resources.getAs(actor, 'doc.Graph', entry.urn)) as Graph;
    const store = new Store(parseNQuads(graph.quads, entry.urn));
    const loaded = { urn: entry.urn, store };
    this.shards.set(key, loaded);
    while (this.shards.size > MAX_LOADED_SHARDS) {
      const oldest = this.shards.keys().next().value as string;
      this.shards.delete(oldest);
    }
    return loaded;
  }

  /**
   * Size in bytes of a shard's N-Quads, as the manifest records it.
   * @throws NotFoundError for an unknown shard key
   */
  shardBytes(key: string): number {
    return this.entry(key).bytes;
  }

  private entry(key: string): z.infer<typeof ShardEntrySchema> {
    const [source, name] = splitShardKey(key);
    const entry = this.manifest.sources[source]?.shards.find((s) => s.name === name);
    if (!entry) throw new NotFoundError(`no graph shard ${key}`);
    return entry;
  }
}

/** `<source index>:<shard name>`. */
export function shardKey(source: number, shard: string): string {
  return `${source}:${shard}`;
}

function splitShardKey(key: string): [number, string] {
  const colon = key.indexOf(':');
  return [Number(key.slice(0, colon)), key.slice(colon + 1)];
}

/** An empty manifest. */
export function emptyManifest(): GraphManifest {
  return { version: 1, sources: [] };
}

/** Parses a stored manifest. @throws ValidationError */
export function parseManifest(text: string): GraphManifest {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ValidationError('graph index is not JSON', { cause: error });
  }
  const parsed = GraphManifestSchema.safeParse(json);
  if (!parsed.success) throw new ValidationError(`malformed graph index: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** Parses stored N-Quads. @throws ValidationError naming the resource and line */
export function parseNQuads(text: string, urn: string): Quad[] {
  try {
    return new Parser({ format: 'N-Quads' }).parse(text);
  } catch (error) {
    throw new ValidationError(`stored graph ${urn} is not valid N-Quads: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/** The prefixes, for documentation and the tool's description. */
export const GRAPH_PREFIXES = PREFIXES;
