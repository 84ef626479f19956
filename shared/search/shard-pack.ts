import type { AsPlainObject } from 'minisearch';
import SearchableMap from 'minisearch/SearchableMap';
import * as z from 'zod';
import type { StorageInterface } from '../storage/port.js';
import type { ResolvedOwners } from './owners.js';

/**
 * The *shard pack* of a chunk index generation (issue 25 item 5): the same minisearch index as
 * `<stem>.<n>.json`, cut so that a cold `search` reads only what its query needs.
 *
 * - `<stem>-shards/<n>/core.json`: what every query needs and nothing more — BM25 statistics
 *   (document count, field lengths, average field lengths), the document ids, each chunk's type
 *   and source path (filters and the document and module priors), the term dictionary (terms
 *   only, in the serialisation's order so the reader's radix tree iterates as minisearch's own),
 *   the resolved module prior ({@link ResolvedOwners}) and where everything else lives.
 * - `<stem>-shards/<n>/postings.<i>.json`: the posting lists of a contiguous range of sorted
 *   terms (`term → fieldId → shortId → term frequency`, minisearch's own serialisation), about
 *   {@link POSTING_SHARD_BYTES} each; `bounds[i]` is the first term of shard i.
 * - `<stem>-shards/<n>/texts.<i>.json`: heading trail and text of consecutive chunks, read for
 *   the hits a query returns only.
 * - `<stem>-shards/<n>/vectors.json`: the stored embeddings, read only by hybrid search.
 *
 * The core is written last: its presence says the pack is complete. The stem is `<stem>-shards`
 * rather than `<stem>.…` so that listing the generations (`<stem>.`) does not list the pack.
 * Whole generations stay the source of truth (ingest opens and extends them); a pack is derived
 * data, and a generation without one is read whole (shared/search/sharded-index.ts).
 */

/** Version of the pack layout; a reader treats a pack of another version as absent. */
export const SHARD_PACK_VERSION = 2;

/** Target size of a posting shard's JSON, in bytes (a shard holds whole terms, so it may exceed it). */
export const POSTING_SHARD_BYTES = 48 * 1024;

/** Target size of a text shard's JSON, in bytes. */
export const TEXT_SHARD_BYTES = 64 * 1024;

/** Storage key prefix of the pack of generation `generation` of the index stored under `stem`. */
export function packPrefix(stem: string, generation: number): string {
  return `${stem}-shards/${generation}/`;
}

/** Storage key of the core of a pack. */
export function coreKey(stem: string, generation: number): string {
  return `${packPrefix(stem, generation)}core.json`;
}

/** Storage key of posting shard `shard`. */
export function postingsKey(stem: string, generation: number, shard: number): string {
  return `${packPrefix(stem, generation)}postings.${shard}.json`;
}

/** Storage key of text shard `shard`. */
export function textsKey(stem: string, generation: number, shard: number): string {
  return `${packPrefix(stem, generation)}texts.${shard}.json`;
}

/** Storage key of the vectors of a pack. */
export function vectorsKey(stem: string, generation: number): string {
  return `${packPrefix(stem, generation)}vectors.json`;
}

/** The core of a pack (see the module comment). */
export const PackCoreSchema = z.object({
  pack: z.literal(SHARD_PACK_VERSION),
  /** The term processing version of the generation (minisearch-index.ts `TERMS_VERSION`). */
  cldTerms: z.number().int().optional(),
  documentCount: z.number().int().nonnegative(),
  nextId: z.number().int().nonnegative(),
  fieldIds: z.record(z.string(), z.number().int()),
  /** Per field id; null for a field no chunk has (minisearch's NaN, as JSON writes it). */
  averageFieldLength: z.array(z.number().nullable()),
  dirtCount: z.number().int().nonnegative(),
  /** Per chunk, in the serialisation's order: [shortId, URN, type index, source index or -1, text shard]. */
  docs: z.array(
    z.tuple([z.number().int(), z.string(), z.number().int(), z.number().int(), z.number().int()]),
  ),
  /** shortId → field lengths by field id (minisearch's `fieldLength`; null for a field the chunk lacks). */
  fieldLength: z.record(z.string(), z.array(z.number().nullable())),
  types: z.array(z.string()),
  sources: z.array(z.string()),
  /**
   * The term dictionary: minisearch's radix tree (`SearchableMap`) built by inserting every term in
   * the order of minisearch's serialisation, as `MiniSearch.loadJS` builds it, written node by node
   * (`[edge, child]` pairs in the tree's own order; a leaf's child is 1), so the reader rebuilds the
   * same tree without inserting 17,000 terms one by one.
   */
  tree: z.array(z.unknown()),
  /** First term (in code unit order) of each posting shard. */
  bounds: z.array(z.string()),
  owners: z.array(z.tuple([z.array(z.string()), z.array(z.tuple([z.string(), z.number()]))])),
  textShards: z.number().int().nonnegative(),
  vectors: z.string().optional(),
});

/** {@link PackCoreSchema}. */
export type PackCore = z.infer<typeof PackCoreSchema>;

/**
 * Parses a stored core: {@link PackCoreSchema} for the small fields, and a hand-written walk over
 * the large arrays (chunks, owned names) and the field lengths (tens of thousands of entries, which zod checks in
 * hundreds of milliseconds: the time this format exists to save).
 * @returns the core, or undefined when `raw` is not a core of this version
 */
export function parseCore(raw: unknown): PackCore | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const { docs, fieldLength, tree, owners, ...small } = raw as Record<string, unknown>;
  const head = PackCoreSchema.omit({ docs: true, fieldLength: true, tree: true, owners: true }).safeParse(
    small,
  );
  if (!head.success) return undefined;
  const isInt = (value: unknown) => Number.isInteger(value);
  if (
    !Array.isArray(docs) ||
    !docs.every(
      (doc) =>
        Array.isArray(doc) &&
        doc.length === 5 &&
        isInt(doc[0]) &&
        typeof doc[1] === 'string' &&
        isInt(doc[2]) &&
        isInt(doc[3]) &&
        isInt(doc[4]),
    )
  )
    return undefined;
  if (!Array.isArray(tree)) return undefined;
  if (typeof fieldLength !== 'object' || fieldLength === null) return undefined;
  for (const lengths of Object.values(fieldLength)) {
    if (!Array.isArray(lengths) || !lengths.every((length) => length === null || typeof length === 'number'))
      return undefined;
  }
  const isStrings = (value: unknown) =>
    Array.isArray(value) && value.every((item) => typeof item === 'string');
  if (
    !Array.isArray(owners) ||
    !owners.every(
      (owned) =>
        Array.isArray(owned) &&
        owned.length === 2 &&
        isStrings(owned[0]) &&
        Array.isArray(owned[1]) &&
        owned[1].every(
          (share: unknown) =>
            Array.isArray(share) &&
            share.length === 2 &&
            typeof share[0] === 'string' &&
            typeof share[1] === 'number',
        ),
    )
  )
    return undefined;
  return {
    ...head.data,
    docs: docs as PackCore['docs'],
    fieldLength: fieldLength as PackCore['fieldLength'],
    tree,
    owners: owners as PackCore['owners'],
  };
}

/** A posting shard: term → fieldId → shortId → term frequency. */
export const PostingShardSchema = z.record(
  z.string(),
  z.record(z.string(), z.record(z.string(), z.number())),
);

/**
 * Parses a stored posting shard ({@link PostingShardSchema}, checked by hand: zod's walk over
 * thousands of nested records costs more than reading the shard).
 * @returns the shard, or undefined when `raw` is not one
 */
export function parsePostingShard(raw: unknown): z.infer<typeof PostingShardSchema> | undefined {
  const isRecord = (value: unknown): value is Record<string, unknown> =>
    typeof value === 'object' && value !== null && !Array.isArray(value);
  if (!isRecord(raw)) return undefined;
  for (const fields of Object.values(raw)) {
    if (!isRecord(fields)) return undefined;
    for (const docs of Object.values(fields)) {
      if (!isRecord(docs)) return undefined;
      for (const frequency of Object.values(docs)) if (typeof frequency !== 'number') return undefined;
    }
  }
  return raw as z.infer<typeof PostingShardSchema>;
}

/**
 * Parses a stored text shard ({@link TextShardSchema}, checked by hand like the posting shards).
 * @returns the shard, or undefined when `raw` is not one
 */
export function parseTextShard(raw: unknown): z.infer<typeof TextShardSchema> | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return undefined;
  for (const entry of Object.values(raw)) {
    if (typeof entry !== 'object' || entry === null) return undefined;
    const { title, text } = entry as { title?: unknown; text?: unknown };
    if (typeof text !== 'string' || (title !== undefined && typeof title !== 'string')) return undefined;
  }
  return raw as z.infer<typeof TextShardSchema>;
}

/** A text shard: shortId → heading trail and text. */
export const TextShardSchema = z.record(
  z.string(),
  z.object({ title: z.string().optional(), text: z.string() }),
);

/** Stored fields of a chunk as minisearch-index.ts stores them. */
interface Stored {
  urn?: unknown;
  type?: unknown;
  title?: unknown;
  text?: unknown;
  source?: unknown;
}

/**
 * Writes the pack of generation `generation` of the index stored under `stem`: text and posting
 * shards first, then vectors, then the core (create-only puts; a shard that already exists is
 * left as it is: a pack is a pure function of its generation, so an earlier writer wrote the same).
 * @param plain minisearch's serialisation of the generation (`MiniSearch#toJSON`)
 * @param owners the resolved module prior of the generation
 * @param vectors the generation's stored embeddings (`cldVectors`), if any
 * @returns the number of objects written
 */
export async function writeShardPack(
  storage: StorageInterface,
  stem: string,
  generation: number,
  plain: AsPlainObject & { cldTerms?: number },
  owners: ResolvedOwners,
  vectors?: { model: string; vectors: Record<string, string> },
): Promise<number> {
  const types: string[] = [];
  const sources: string[] = [];
  const intern = (table: string[], seen: Map<string, number>, value: string) => {
    let at = seen.get(value);
    if (at === undefined) {
      at = table.length;
      table.push(value);
      seen.set(value, at);
    }
    return at;
  };
  const typeAt = new Map<string, number>();
  const sourceAt = new Map<string, number>();
  const docs: PackCore['docs'] = [];
  const textShards: Record<string, { title?: string; text: string }>[] = [];
  let current: Record<string, { title?: string; text: string }> = {};
  let currentBytes = 0;
  const storedFields = plain.storedFields as Record<string, Stored>;
  for (const [shortId, urn] of Object.entries(plain.documentIds)) {
    const stored = storedFields[shortId] ?? {};
    const entry: { title?: string; text: string } = {
      text: typeof stored.text === 'string' ? stored.text : '',
    };
    if (typeof stored.title === 'string') entry.title = stored.title;
    const bytes = entry.text.length + (entry.title?.length ?? 0) + 32;
    if (currentBytes > 0 && currentBytes + bytes > TEXT_SHARD_BYTES) {
      textShards.push(current);
      current = {};
      currentBytes = 0;
    }
    current[shortId] = entry;
    currentBytes += bytes;
    docs.push([
      Number(shortId),
      String(urn),
      intern(types, typeAt, typeof stored.type === 'string' ? stored.type : ''),
      typeof stored.source === 'string' ? intern(sources, sourceAt, stored.source) : -1,
      textShards.length,
    ]);
  }
  if (currentBytes > 0) textShards.push(current);

  const dictionary = new SearchableMap<true>();
  for (const [term] of plain.index) dictionary.set(term, true);
  const tree = treeToJSON((dictionary as unknown as { _tree: RadixNode })._tree);
  const sorted = [...plain.index].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const postingShards: Record<string, unknown>[] = [];
  const bounds: string[] = [];
  let shard: Record<string, unknown> = {};
  let shardBytes = 0;
  for (const [term, data] of sorted) {
    const bytes = JSON.stringify(data).length + term.length + 4;
    if (shardBytes > 0 && shardBytes + bytes > POSTING_SHARD_BYTES) {
      postingShards.push(shard);
      shard = {};
      shardBytes = 0;
    }
    if (shardBytes === 0) bounds.push(term);
    shard[term] = data;
    shardBytes += bytes;
  }
  if (shardBytes > 0) postingShards.push(shard);

  const puts: [string, string][] = [
    ...textShards.map((texts, i): [string, string] => [textsKey(stem, generation, i), JSON.stringify(texts)]),
    ...postingShards.map((postings, i): [string, string] => [
      postingsKey(stem, generation, i),
      JSON.stringify(postings),
    ]),
  ];
  if (vectors) puts.push([vectorsKey(stem, generation), JSON.stringify(vectors)]);
  await Promise.all(puts.map(([key, data]) => storage.put(key, data)));
  const core: PackCore = {
    pack: SHARD_PACK_VERSION,
    documentCount: plain.documentCount,
    nextId: plain.nextId,
    fieldIds: plain.fieldIds,
    averageFieldLength: plain.averageFieldLength,
    dirtCount: plain.dirtCount ?? 0,
    docs,
    fieldLength: plain.fieldLength,
    types,
    sources,
    tree,
    bounds,
    owners,
    textShards: textShards.length,
  };
  if (plain.cldTerms !== undefined) core.cldTerms = plain.cldTerms;
  if (vectors) core.vectors = vectors.model;
  await storage.put(coreKey(stem, generation), JSON.stringify(core));
  return puts.length + 1;
}

/** A node of minisearch's radix tree: edge label → child node, or `''` → the value at a leaf. */
type RadixNode = Map<string, RadixNode | true>;

function treeToJSON(node: RadixNode): unknown[] {
  return [...node].map(([edge, child]) => [edge, child === true ? 1 : treeToJSON(child)]);
}

/**
 * The radix tree of a pack's `tree` (see {@link PackCoreSchema}), for `new SearchableMap(tree)`.
 * @returns undefined when the JSON is not such a tree
 */
export function treeFromJSON(json: readonly unknown[]): RadixNode | undefined {
  const node: RadixNode = new Map();
  for (const entry of json) {
    if (!Array.isArray(entry) || entry.length !== 2 || typeof entry[0] !== 'string') return undefined;
    const [edge, child] = entry as [string, unknown];
    if (edge === '') {
      if (child !== 1) return undefined;
      node.set(edge, true);
      continue;
    }
    if (!Array.isArray(child)) return undefined;
    const sub = treeFromJSON(child);
    if (!sub) return undefined;
    node.set(edge, sub);
  }
  return node;
}
