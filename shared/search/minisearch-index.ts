import MiniSearch, { type AsPlainObject, type Options, type Query, type SearchResult } from 'minisearch';
import { NotFoundError, ValidationError } from '../errors.js';
import type { Embedder } from '../llm/port.js';
import type { StorageInterface } from '../storage/port.js';
import { isWithin } from '../urn.js';
import type { BridgeEntries } from './api-glossary.js';
import { BridgeEntriesSchema, withBridges, writeBridges } from './bridge.js';
import { ownHeading } from './headings.js';
import { folderOf, NameOwners } from './owners.js';
import type { ChunkSearch, IndexedItem, SearchFilter, SearchHit } from './port.js';
import { writeShardPack } from './shard-pack.js';
import { joinedTerms, processTerm, termsOf, tokenize } from './terms.js';

/** Default storage key stem of the chunk index: generations are `indexes/chunks.<n>.json`. */
export const DEFAULT_INDEX_KEY = 'indexes/chunks';

/** Default number of hits returned by {@link MiniSearchIndex.search}. */
export const DEFAULT_SEARCH_LIMIT = 8;

/** Boost of a match in `title` (the heading trail) relative to one in `text`. */
const TITLE_BOOST = 2;

/** Boost of a match in `source` (the document's path: module folder and file name) relative to one in `text`. */
const SOURCE_BOOST = 3;

/**
 * Boost of a match in `api` (the API reference's summaries of the names a chunk's code spells:
 * shared/search/api-glossary.ts) relative to one in `text`: a bridge from the user's words to the
 * README's identifiers, weaker than the chunk's own words.
 */
export const API_BOOST = 0.5;

/**
 * Version of the term processing (shared/search/terms.ts) an index was built with, stored in
 * its serialisation as `cldTerms`. An index built otherwise is not searchable with these terms:
 * {@link MiniSearchIndex.open} treats it as empty (ingest re-adds the stored chunks). A field
 * added to {@link ENGINE_OPTIONS} (`api`) is no new version: an index without it searches as
 * before, and is rebuilt with it at its next change ({@link MiniSearchIndex.upgradeFields}).
 */
export const TERMS_VERSION = 2;

/**
 * Weight of the document prior: a hit's score gains this share of the summed scores of the best
 * {@link PRIOR_TOP} hits of its document, so a chunk of the module the whole query is about
 * outranks an equally matching chunk of a neighbouring module.
 */
const PRIOR_WEIGHT = 0.1;
const PRIOR_TOP = 3;

/**
 * Weight of the module prior ({@link NameOwners}): a hit of the folder that owns the API names the
 * query spells gains up to this share of its score (score × (1 + w · prior), prior in [0, 1]).
 */
const OWNER_WEIGHT = 0.3;

/**
 * Weight of the section prior ({@link namesQuery}): a chunk whose own heading is made only of the
 * query's words scores × (1 + w). The eval's tuning share: 0.1 raised hit@3 90 → 92 % and the
 * term in own section 104 → 105; 0.2 and 0.3 raised hit@3 as much and lowered the answers
 * (docs/search.md, issue 21 tenth round).
 */
export const SECTION_WEIGHT = 0.1;

/** Terms of headings seen (shared/search/terms.ts), kept across queries: a corpus has a few thousand. */
const headingTerms = new Map<string, string[]>();
const HEADING_CACHE = 20_000;

/** A word of a heading, as {@link namesQuery} reads it. */
const HEADING_WORD = /[\p{L}\p{N}_$]+/gu;

/** Query term sets seen, by the first characters of their terms (the pre-check of {@link namesQuery}). */
const initialsOf = new WeakMap<ReadonlySet<string>, Set<string>>();

/**
 * False only when {@link namesQuery} is: a word of `heading` (articles and prepositions aside)
 * starts unlike every query term. A word names the query only if its own term (its lower-cased
 * stem, shared/search/terms.ts, which keeps the word's first character: `$states`, `ied` → `i`) is
 * a query term; a stopword has none and names nothing. Saves stemming most headings of a search.
 */
function mayName(heading: string, queryTerms: ReadonlySet<string>): boolean {
  let initials = initialsOf.get(queryTerms);
  if (initials === undefined) {
    initials = new Set([...queryTerms].map((term) => term.charAt(0)));
    initialsOf.set(queryTerms, initials);
  }
  for (const word of heading.match(HEADING_WORD) ?? []) {
    const lower = word.toLowerCase();
    if (!LINKING_WORDS.has(lower) && !initials.has(lower.charAt(0))) return false;
  }
  return true;
}

/** Words a heading may hold beside the query's own and still name it ("Encryption of a queue"). */
const LINKING_WORDS = new Set('a an the of for to in on with and or by'.split(' '));

/**
 * True when `heading` names what the query asks about: every word of it but articles and
 * prepositions ({@link LINKING_WORDS}) is a word of the query by its terms (shared/search/terms.ts),
 * and it has at least one ("VPC" for "How do I create a VPC?", "DynamoDB Streams" for "How do I
 * turn on DynamoDB Streams for a table?"; not "Importing an existing VPC", nor "Into a bucket you
 * own" for a question about a bucket: "you" and "own" are no words of it). A section named only by
 * the question's words is the one the documentation wrote about it: the plain case, not a variant.
 */
export function namesQuery(heading: string | undefined, queryTerms: ReadonlySet<string>): boolean {
  if (heading === undefined || queryTerms.size === 0) return false;
  // Most headings fail at their first word: no stemming for them (a cold search ranks thousands).
  if (!mayName(heading, queryTerms)) return false;
  let terms = headingTerms.get(heading);
  if (terms === undefined) {
    if (headingTerms.size >= HEADING_CACHE) headingTerms.clear();
    // A word with no term (a stopword such as "you") stands for itself, which no query term is.
    terms = (heading.match(HEADING_WORD) ?? [])
      .filter((word) => !LINKING_WORDS.has(word.toLowerCase()))
      .flatMap((word) => {
        const own = termsOf(word);
        return own.length > 0 ? own : [`\u0000${word}`];
      });
    headingTerms.set(heading, terms);
  }
  return terms.length > 0 && terms.every((term) => queryTerms.has(term));
}

/** Hits of each ranking (lexical, dense) that reciprocal rank fusion combines. */
const FUSION_DEPTH = 50;

/** The `k` of reciprocal rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009): score = Σ 1 / (k + rank). */
export const RRF_K = 60;

/** How many times {@link MiniSearchIndex.save} moves on to the next generation when one is taken. */
const SAVE_ATTEMPTS = 5;

/** The fields stored with every entry (returned with hits without reading the resource). */
export interface StoredFields {
  urn: string;
  type: string;
  title?: string;
  text: string;
  source?: string;
  /** The chunk's API glossary expansion (indexed, not stored: {@link IndexedItem.api}). */
  api?: string;
}

/**
 * MiniSearch options. `loadJSON` must be given the same options the index was built with, so
 * they live in one place. Documents and queries go through the same term processing
 * (shared/search/terms.ts: identifiers kept whole and split, stopwords dropped, Porter stems).
 * Prefix search only for terms of 4+ characters (so "s3" does not expand to every term starting
 * with it); fuzzy search (edit distance ≈ 15 % of the term, at most 2) only for terms of 6+
 * characters, to absorb typos without drowning short terms.
 */
export const ENGINE_OPTIONS: Options<StoredFields> = {
  idField: 'urn',
  fields: ['title', 'text', 'source', 'api'],
  // No vacuum in the background: minisearch's walks the term tree in batches with pauses, and a
  // term added meanwhile (a replaced item's `api` words) can split an edge it has yet to visit,
  // which fails the walk. {@link MiniSearchIndex.save} vacuums in one go instead.
  autoVacuum: false,
  storeFields: ['urn', 'type', 'title', 'text', 'source'],
  tokenize,
  processTerm,
  searchOptions: {
    boost: { title: TITLE_BOOST, source: SOURCE_BOOST, api: API_BOOST },
    prefix: (term) => term.length >= 4,
    fuzzy: (term) => (term.length >= 6 ? 0.15 : false),
    maxFuzzy: 2,
  },
};

/**
 * Weight of a compound of adjacent query words ({@link searchQuery}) relative to a query term: it
 * adds to the words' own matches (the eval's tuning share: 1 lowered hit@3 and answers, 0.3 raised
 * the answers and kept hit@8 within a part).
 */
const COMPOUND_WEIGHT = 0.3;

/**
 * The MiniSearch query for a user's query: its terms (shared/search/terms.ts), or with the
 * compounds its adjacent words make ({@link joinedTerms}: "security group" → `securitygroup`)
 * searched beside them by prefix, as they are (no stemming), weighted {@link COMPOUND_WEIGHT},
 * so a chunk spelling the API (`SecurityGroup`, `bucketKeyEnabled`) gains over one that only uses
 * the words apart. Used by both chunk indexes (this one and sharded-index.ts).
 */
export function searchQuery(query: string): Query {
  const joined = joinedTerms(query);
  if (joined.length === 0) return query;
  return {
    combineWith: 'OR',
    queries: [
      query,
      {
        queries: joined,
        prefix: true,
        fuzzy: false,
        boostTerm: () => COMPOUND_WEIGHT,
        processTerm: (term: string) => term.toLowerCase(),
      },
    ],
  };
}

/**
 * Checks a search's `limit` (shared by every chunk index).
 * @throws ValidationError for a limit that is not a positive integer
 */
export function assertSearchLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 1) {
    throw new ValidationError(`search limit must be a positive integer, got ${limit}`);
  }
}

/**
 * In-memory full-text index of chunks over minisearch (BM25+ ranking; fields `title` — the
 * heading trail — boosted ×2, `source` — the document path — boosted ×3, `text`, and `api` — the
 * API reference's summaries of the names the chunk's code spells — ×0.5; terms from
 * shared/search/terms.ts; a document prior over the results, and a module prior: hits of the
 * folder that owns the API names the query spells, per the code examples' imports
 * (shared/search/owners.ts), gain up to 30 %), implementing the
 * {@link ChunkSearch} port. With vectors stored and an embedder given ({@link useEmbedder}),
 * search is hybrid: BM25 and the dense ranking fused by reciprocal rank fusion.
 *
 * Persistence: storage objects are create-only ({@link StorageInterface.put} never overwrites),
 * so the index is written as immutable *generations*: `<key>.<n>.json` with n = 1, 2, 3, ...
 * {@link MiniSearchIndex.open} loads the highest n; {@link MiniSearchIndex.save} writes n + 1.
 * Each generation is a complete minisearch serialisation, so older generations may be deleted
 * at any time (nothing here deletes them). Two processes saving at once write two generations;
 * the later one wins and the items only the other one added are missing from it until they are
 * added again (ingest re-adds the chunks of already ingested documents that the index lacks).
 */
export class MiniSearchIndex implements ChunkSearch {
  private engine: MiniSearch<StoredFields>;
  /** The loaded engine lacks a field of {@link ENGINE_OPTIONS} (stored before `api` existed). */
  private fieldsOutdated = false;
  private origin: { storage: StorageInterface; key: string; generation: number } | undefined;
  /** Embedding of each chunk by {@link vectorModel} (hybrid retrieval); empty when lexical only. */
  private readonly vectors = new Map<string, Float32Array>();
  private vectorModel: string | undefined;
  private queryEmbedder: Embedder | undefined;
  /** Which folder owns which API names, from the code of every indexed chunk (the module prior). */
  private readonly owners = new NameOwners();
  /**
   * Glossary entries by document path (`source`): the API names its code spells → their
   * summaries, stored as `cldBridge` and beside the shard pack; what a hit's `bridge` is made of
   * (shared/search/bridge.ts). A document with entries (empty ones too) had its chunks indexed
   * with its package's API glossary at hand; ingest indexes the chunks of any other document of
   * an ingested jsii package anew (shared/search/ingest.ts).
   */
  private readonly bridges = new Map<string, BridgeEntries>();

  /** An empty index, or one wrapping a loaded minisearch instance (see {@link load}, {@link open}). */
  constructor(engine?: MiniSearch<StoredFields>) {
    this.engine = engine ?? new MiniSearch<StoredFields>(ENGINE_OPTIONS);
  }

  /** Number of indexed items. */
  get size(): number {
    return this.engine.documentCount;
  }

  /**
   * Where this index was opened from or last saved to, with its generation number; undefined
   * for an index that only lives in memory.
   */
  get location(): { storage: StorageInterface; key: string; generation: number } | undefined {
    return this.origin;
  }

  /** True when an item with this URN is indexed. */
  has(urn: string): boolean {
    return this.engine.has(urn);
  }

  /**
   * Makes search hybrid: queries are embedded with `embedder` and their dense ranking over the
   * stored vectors is fused with the BM25 ranking by reciprocal rank fusion. Only vectors made by
   * the same embedder (its `name`) are used; with none, search stays lexical.
   */
  useEmbedder(embedder: Embedder): void {
    this.queryEmbedder = embedder;
  }

  /** Name of the embedder the stored vectors were made with, if any. */
  get embeddingModel(): string | undefined {
    return this.vectorModel;
  }

  /**
   * URNs of indexed items that have no vector by `model` (all of them when the stored vectors
   * are another model's), in indexing order of the given `urns`.
   */
  missingVectors(urns: Iterable<string>, model: string): string[] {
    const other = this.vectorModel !== undefined && this.vectorModel !== model;
    return [...urns].filter((urn) => this.engine.has(urn) && (other || !this.vectors.has(urn)));
  }

  /**
   * Stores item vectors made by `model`; vectors of another model are dropped first (a corpus
   * has one embedding space).
   */
  addVectors(entries: readonly { urn: string; vector: readonly number[] }[], model: string): void {
    if (this.vectorModel !== model) {
      this.vectors.clear();
      this.vectorModel = model;
    }
    for (const { urn, vector } of entries) this.vectors.set(urn, Float32Array.from(vector));
  }

  /** What an item's embedding is made of: its title (heading trail) and text; undefined when not indexed. */
  embeddingInput(urn: string): string | undefined {
    const stored = this.engine.getStoredFields(urn);
    if (typeof stored?.text !== 'string') return undefined;
    return typeof stored.title === 'string' ? `${stored.title}\n\n${stored.text}` : stored.text;
  }

  /** The indexed text of the item with this URN, or undefined when it is not indexed. */
  textOf(urn: string): string | undefined {
    const stored = this.engine.getStoredFields(urn);
    return typeof stored?.text === 'string' ? stored.text : undefined;
  }

  /**
   * Adds items; items whose URN is already indexed (or repeated within `items`) are skipped,
   * so adding the same items twice is a no-op — unless `replace` is set, which indexes them
   * anew (an item's `api` expansion after {@link upgradeFields}).
   * @returns how many items were added or replaced
   */
  add(items: readonly IndexedItem[], { replace = false }: { replace?: boolean } = {}): number {
    this.upgradeFields();
    let added = 0;
    const seen = new Set<string>();
    for (const item of items) {
      if (seen.has(item.urn)) continue;
      seen.add(item.urn);
      const known = this.engine.has(item.urn);
      if (known && !replace) continue;
      const fields: StoredFields = { urn: item.urn, type: item.type, text: item.text };
      if (item.title !== undefined && item.title !== '') fields.title = item.title;
      if (item.source !== undefined && item.source !== '') fields.source = item.source;
      if (item.api !== undefined && item.api !== '') fields.api = item.api;
      if (known) this.engine.replace(fields);
      else {
        this.engine.add(fields);
        this.owners.add(item.text, item.source);
      }
      added += 1;
    }
    return added;
  }

  /**
   * Rebuilds an index loaded without a field of {@link ENGINE_OPTIONS} (one stored before the
   * `api` field) with every field, from its stored chunks, so that adding to it cannot corrupt
   * it; search results are the same (the stored chunks have no `api` words). Ingest then indexes
   * the chunks of the jsii package documents it is given anew, with theirs (no document
   * {@link hasBridge} after the rebuild: shared/search/ingest.ts).
   * @returns true when it rebuilt, false when the index had every field already
   */
  upgradeFields(): boolean {
    if (!this.fieldsOutdated) return false;
    this.bridges.clear();
    const old = this.engine as unknown as { _storedFields: Map<number, StoredFields> };
    const engine = new MiniSearch<StoredFields>(ENGINE_OPTIONS);
    engine.addAll([...old._storedFields.values()]);
    this.engine = engine;
    this.fieldsOutdated = false;
    return true;
  }

  /**
   * Keeps the glossary entries of the document at `source` (shared/search/bridge.ts), replacing
   * any it had — empty ones too: they record that the document was glossed with its entries at
   * hand ({@link hasBridge}); saved with the index.
   */
  setBridge(source: string, entries: BridgeEntries): void {
    this.bridges.set(source, entries);
  }

  /**
   * True when glossary entries (possibly none) are kept for the document at `source`, that is
   * when its chunks were indexed with its package's API glossary; false otherwise (a module
   * folder ingested before its package, an index stored before the `api` field), and ingest then
   * indexes them anew (shared/search/ingest.ts).
   */
  hasBridge(source: string): boolean {
    return this.bridges.has(source);
  }

  /** The glossary entries kept for the document at `source`, if any ({@link setBridge}). */
  bridgeOf(source: string): BridgeEntries | undefined {
    return this.bridges.get(source);
  }

  /**
   * Ranked hits for `query`, best first, each with its `bridge` when the index keeps its
   * document's glossary entries (shared/search/bridge.ts). Filters by `filter.type` (exact resource type) and
   * `filter.prefix` (path-boundary aware: the prefix URN itself or a URN under it, so `c1` does
   * not match `c10`). `accept` (the policy gate) is asked lazily, in rank order, and hits it
   * rejects are dropped *before* `limit` is applied, so a caller gets up to `limit` readable hits.
   * An empty or whitespace-only query returns no hits.
   * @param options.limit maximum hits, default {@link DEFAULT_SEARCH_LIMIT}; must be a positive integer
   * @throws ValidationError for a limit that is not a positive integer
   */
  async search(
    query: string,
    options: { filter?: SearchFilter; limit?: number; accept?: (urn: string) => boolean } = {},
  ): Promise<SearchHit[]> {
    const { filter = {}, limit = DEFAULT_SEARCH_LIMIT, accept } = options;
    assertSearchLimit(limit);
    if (query.trim() === '') return [];
    const lexical = this.engine.search(searchQuery(query), {
      filter: (result) => matchesFilter(result, filter),
    });
    const ranked = rankWithPriors(
      {
        count: lexical.length,
        score: (i) => (lexical[i] as SearchResult).score,
        source: (i) => {
          const source = (lexical[i] as SearchResult).source;
          return typeof source === 'string' ? source : undefined;
        },
        urn: (i) => String((lexical[i] as SearchResult).id),
        heading: (i) => {
          const title = (lexical[i] as SearchResult).title;
          return ownHeading(typeof title === 'string' ? title : undefined);
        },
      },
      this.owners.prior(query),
      lexical.length,
      new Set(termsOf(query)),
    );
    const results = ranked.order.map((i) => ({
      ...(lexical[i] as SearchResult),
      score: ranked.scores[i] as number,
    }));
    const embedder = this.queryEmbedder;
    if (embedder && this.vectors.size > 0 && this.vectorModel === embedder.name) {
      return this.fused(query, results, embedder, filter, limit, accept);
    }
    const hits: SearchHit[] = [];
    for (const result of results) {
      if (hits.length >= limit) break;
      const urn = result.id as string;
      if (accept && !accept(urn)) continue;
      hits.push(toHit(result));
    }
    return this.bridges.size > 0 ? withBridges(hits, query, (source) => this.bridges.get(source)) : hits;
  }

  /**
   * Hybrid ranking: the top {@link FUSION_DEPTH} of the BM25 results and of the cosine ranking of
   * the query's embedding, fused by reciprocal rank fusion (score Σ 1/({@link RRF_K} + rank));
   * `accept` applied in fused order.
   */
  private async fused(
    query: string,
    lexical: readonly SearchResult[],
    embedder: Embedder,
    filter: SearchFilter,
    limit: number,
    accept: ((urn: string) => boolean) | undefined,
  ): Promise<SearchHit[]> {
    const [queryVector] = await embedder.embed([query]);
    const dense: { urn: string; score: number }[] = [];
    for (const [urn, vector] of this.vectors) {
      const stored = this.engine.getStoredFields(urn);
      if (!stored || !matchesStored(urn, stored, filter)) continue;
      dense.push({ urn, score: dot(queryVector ?? [], vector) });
    }
    dense.sort((a, b) => b.score - a.score);
    const scores = new Map<string, number>();
    const rankings = [
      lexical.slice(0, FUSION_DEPTH).map((result) => result.id as string),
      dense.slice(0, FUSION_DEPTH).map((entry) => entry.urn),
    ];
    for (const ranking of rankings) {
      for (const [i, urn] of ranking.entries()) scores.set(urn, (scores.get(urn) ?? 0) + 1 / (RRF_K + i + 1));
    }
    const ranked = [...scores].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    const hits: SearchHit[] = [];
    for (const [urn, score] of ranked) {
      if (hits.length >= limit) break;
      if (accept && !accept(urn)) continue;
      const stored = this.engine.getStoredFields(urn) as Partial<StoredFields>;
      const hit: SearchHit = { urn, type: String(stored.type), text: String(stored.text), score };
      if (typeof stored.title === 'string') hit.title = stored.title;
      if (typeof stored.source === 'string') hit.source = stored.source;
      hits.push(hit);
    }
    return this.bridges.size > 0 ? withBridges(hits, query, (source) => this.bridges.get(source)) : hits;
  }

  /**
   * minisearch's own serialisation (a plain object; `JSON.stringify(index)` uses it), with the
   * term processing version as `cldTerms`.
   */
  toJSON(): AsPlainObject & {
    cldTerms: number;
    cldBridge?: Record<string, BridgeEntries>;
    cldVectors?: { model: string; vectors: Record<string, string> };
  } {
    const json = {
      ...this.engine.toJSON(),
      cldTerms: TERMS_VERSION,
      ...(this.bridges.size > 0 ? { cldBridge: Object.fromEntries(this.bridges) } : {}),
    };
    if (this.vectorModel === undefined || this.vectors.size === 0) return json;
    const vectors: Record<string, string> = {};
    for (const [urn, vector] of this.vectors)
      vectors[urn] = Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64');
    return { ...json, cldVectors: { model: this.vectorModel, vectors } };
  }

  /** True when a serialised index was built with this term processing ({@link TERMS_VERSION}). */
  static isCurrent(json: unknown): boolean {
    return (
      typeof json === 'object' && json !== null && (json as { cldTerms?: unknown }).cldTerms === TERMS_VERSION
    );
  }

  /**
   * Loads an index serialised by {@link toJSON} (as a JSON string or the parsed object).
   * @throws ValidationError when the JSON is not a minisearch index of this shape
   */
  static load(json: string | AsPlainObject): MiniSearchIndex {
    try {
      const plain = (typeof json === 'string' ? JSON.parse(json) : json) as AsPlainObject & {
        cldBridge?: unknown;
        cldVectors?: { model?: unknown; vectors?: Record<string, unknown> };
      };
      const index = new MiniSearchIndex(MiniSearch.loadJS<StoredFields>(plain, ENGINE_OPTIONS));
      index.fieldsOutdated = (ENGINE_OPTIONS.fields as string[]).some(
        (field) => !Object.hasOwn(plain.fieldIds ?? {}, field),
      );
      // Each document's glossary entries (shared/search/bridge.ts); a malformed one is left out.
      const bridge = plain.cldBridge;
      if (!index.fieldsOutdated && bridge && typeof bridge === 'object' && !Array.isArray(bridge))
        for (const [source, entries] of Object.entries(bridge as Record<string, unknown>)) {
          const parsed = BridgeEntriesSchema.safeParse(entries);
          if (parsed.success) index.bridges.set(source, parsed.data);
        }
      // The module prior is derived data: rebuilt from the stored chunk texts.
      for (const stored of Object.values(plain.storedFields ?? {}) as Partial<StoredFields>[]) {
        if (typeof stored?.text === 'string') index.owners.add(stored.text, stored.source);
      }
      const stored = plain.cldVectors;
      if (stored && typeof stored.model === 'string' && stored.vectors) {
        index.vectorModel = stored.model;
        for (const [urn, base64] of Object.entries(stored.vectors)) {
          const bytes = Buffer.from(String(base64), 'base64');
          index.vectors.set(
            urn,
            new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)),
          );
        }
      }
      return index;
    } catch (error) {
      throw new ValidationError('stored search index is not a loadable minisearch index', { cause: error });
    }
  }

  /**
   * Writes this index as the next generation `<key>.<n+1>.json` (n = highest generation in
   * storage, 0 when none), then its shard pack (`<key>-shards/<n+1>/…`, shared/search/shard-pack.ts,
   * what `ShardedChunkIndex` in sharded-index.ts opens at a cold start), and remembers it as this index's location. When another writer took
   * that generation first, tries the next one (up to 5 times).
   * @param storage defaults to the storage this index was opened from or last saved to
   * @param key key stem, defaults to the stem it was opened with, else {@link DEFAULT_INDEX_KEY}
   * @returns the key written
   * @throws ValidationError when no storage is given and the index has no location, or when every
   *   attempt found its generation taken
   */
  async save(storage?: StorageInterface, key?: string): Promise<string> {
    const target = storage ?? this.origin?.storage;
    if (!target) throw new ValidationError('index has no storage to save to: pass one to save()');
    const stem = key ?? this.origin?.key ?? DEFAULT_INDEX_KEY;
    // Replaced items leave their old postings behind until a vacuum: none are stored. One batch,
    // so no add can change the term tree while the vacuum walks it (see ENGINE_OPTIONS.autoVacuum).
    if (this.engine.dirtCount > 0) await this.engine.vacuum({ batchSize: Number.POSITIVE_INFINITY });
    const json = this.toJSON();
    const data = JSON.stringify(json);
    let generation = (await latestGeneration(target, stem)) ?? 0;
    for (let attempt = 0; attempt < SAVE_ATTEMPTS; attempt += 1) {
      generation += 1;
      const generationKey = keyOfGeneration(stem, generation);
      const { created } = await target.put(generationKey, data);
      if (created) {
        this.origin = { storage: target, key: stem, generation };
        // The cold-start form of the same generation (shared/search/shard-pack.ts).
        await writeShardPack(target, stem, generation, json, this.owners.toResolved(), json.cldVectors);
        // Each document's glossary entries, beside the pack (shared/search/bridge.ts).
        await writeBridges(target, stem, generation, this.bridges);
        return generationKey;
      }
    }
    throw new ValidationError(
      `could not save index ${stem}: ${SAVE_ATTEMPTS} generations taken concurrently`,
    );
  }

  /**
   * Opens the newest generation `<key>.<n>.json` (highest n) from storage, or an empty index
   * when there is none yet or the newest was built with other term processing
   * ({@link TERMS_VERSION}; ingesting the documents again re-adds their stored chunks). Either
   * way the index remembers `storage` and `key`, so a later `save()` without arguments writes
   * the next generation there.
   * @throws ValidationError when the newest generation is not JSON or does not load
   */
  static async open(storage: StorageInterface, key: string = DEFAULT_INDEX_KEY): Promise<MiniSearchIndex> {
    const generation = await latestGeneration(storage, key);
    if (generation === undefined) {
      const index = new MiniSearchIndex();
      index.origin = { storage, key, generation: 0 };
      return index;
    }
    let data: Buffer;
    try {
      data = await storage.get(keyOfGeneration(key, generation));
    } catch (error) {
      if (error instanceof NotFoundError) {
        throw new ValidationError(`index generation ${generation} of ${key} vanished while opening`, {
          cause: error,
        });
      }
      throw error;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(data.toString('utf8'));
    } catch (error) {
      throw new ValidationError(`index generation ${generation} of ${key} is not JSON`, { cause: error });
    }
    // Built with other term processing: start empty; ingest re-adds the stored chunks.
    const index = MiniSearchIndex.isCurrent(parsed)
      ? MiniSearchIndex.load(parsed as AsPlainObject)
      : new MiniSearchIndex();
    index.origin = { storage, key, generation };
    return index;
  }
}

/** Storage key of generation `n` of the index stored under `stem`. */
export function keyOfGeneration(stem: string, generation: number): string {
  return `${stem}.${generation}.json`;
}

/** Highest generation number stored under `stem`, or undefined when there is none. */
export async function latestGeneration(storage: StorageInterface, stem: string): Promise<number | undefined> {
  const pattern = new RegExp(`^${escapeRegExp(stem)}\\.([1-9][0-9]*)\\.json$`);
  let latest: number | undefined;
  for (const key of await storage.findByPrefix(`${stem}.`)) {
    const match = pattern.exec(key);
    if (!match) continue;
    const generation = Number(match[1]);
    if (latest === undefined || generation > latest) latest = generation;
  }
  return latest;
}

/** What the filter reads of a search result (minisearch's `SearchResult` or the shard pack's). */
export interface RankedResult {
  /** The chunk's URN. */
  id: unknown;
  type?: unknown;
}

/** The results of a lexical search as {@link rankWithPriors} reads them, by index. */
export interface PriorInput {
  /** Number of results. */
  count: number;
  /** BM25 score of result `i`. */
  score(i: number): number;
  /** Document path (`source`) of result `i`; undefined when it has none. */
  source(i: number): string | undefined;
  /** URN of result `i` (its parent is the document of a result without `source`). */
  urn(i: number): string;
  /** Own heading of result `i` ({@link ownHeading}), for the section prior; none without it. */
  heading?(i: number): string | undefined;
}

/**
 * The BM25 results re-ranked with the two priors, as one sort of their indices:
 *
 * 1. the document prior ({@link PRIOR_WEIGHT}): score + w · Σ of the best {@link PRIOR_TOP}
 *    scores of the same document (its `source`, else the URN's parent), summed best first;
 * 2. the module prior: that score × (1 + {@link OWNER_WEIGHT} · the prior of the result's
 *    folder), for a folder of `ownerPrior` with a positive weight ({@link NameOwners.prior});
 * 3. the section prior: that × (1 + {@link SECTION_WEIGHT}) for a result whose own heading
 *    (`results.heading`) names the query ({@link namesQuery} with `queryTerms`).
 *
 * The order is what sorting by BM25 score, then by score after step 1, then after steps 2–3 gives
 * with stable sorts (minisearch's, then one per prior): descending final score, ties broken by
 * the score after step 1, then the BM25 score, then the input order — so `results` may come in
 * minisearch's result order, sorted or not. Only indices and numbers are allocated: a first
 * search ranks thousands of results of which it returns a handful.
 * @param depth how many of the ranked indices to return (default all): the first `depth` of the
 *   full order, found without sorting the rest
 * @param queryTerms the query's terms (shared/search/terms.ts), for the section prior (default
 *   none: no section prior)
 * @returns the indices of `results` in ranked order (the first `depth`) and each result's final
 *   score (by index)
 */
export function rankWithPriors(
  results: PriorInput,
  ownerPrior: ReadonlyMap<string, number>,
  depth: number = results.count,
  queryTerms: ReadonlySet<string> = new Set(),
): { order: number[]; scores: Float64Array } {
  const { count } = results;
  const bm25 = new Float64Array(count);
  const documents: string[] = new Array(count);
  const sources: (string | undefined)[] = new Array(count);
  // Each document's best PRIOR_TOP scores, best first (the first ones of minisearch's sorted results).
  const top = new Map<string, number[]>();
  for (let i = 0; i < count; i += 1) {
    const score = results.score(i);
    bm25[i] = score;
    const source = results.source(i);
    sources[i] = source;
    const document = source ?? results.urn(i).replace(/\/[^/]*$/, '');
    documents[i] = document;
    const best = top.get(document);
    if (!best) top.set(document, [score]);
    else if (best.length < PRIOR_TOP || score > (best[best.length - 1] as number)) {
      let at = best.length;
      while (at > 0 && score > (best[at - 1] as number)) at -= 1;
      best.splice(at, 0, score);
      if (best.length > PRIOR_TOP) best.pop();
    }
  }
  const priors = new Map<string, number>();
  for (const [document, scores] of top)
    priors.set(
      document,
      scores.reduce((sum, score) => sum + score, 0),
    );
  const withDocument = new Float64Array(count);
  const scores = new Float64Array(count);
  const folderWeights = new Map<string, number>();
  for (let i = 0; i < count; i += 1) {
    const score = (bm25[i] as number) + PRIOR_WEIGHT * (priors.get(documents[i] as string) ?? 0);
    withDocument[i] = score;
    let weight = 0;
    const source = ownerPrior.size === 0 ? undefined : sources[i];
    if (source !== undefined) {
      weight = folderWeights.get(source) ?? -1;
      if (weight < 0) {
        const folder = folderOf(source);
        weight = folder === undefined ? 0 : (ownerPrior.get(folder) ?? 0);
        folderWeights.set(source, weight);
      }
    }
    const owned = weight > 0 ? score * (1 + OWNER_WEIGHT * weight) : score;
    scores[i] = namesQuery(results.heading?.(i), queryTerms) ? owned * (1 + SECTION_WEIGHT) : owned;
  }
  const compare = (a: number, b: number): number =>
    (scores[b] as number) - (scores[a] as number) ||
    (withDocument[b] as number) - (withDocument[a] as number) ||
    (bm25[b] as number) - (bm25[a] as number) ||
    a - b;
  if (depth >= count) {
    const order = Array.from({ length: count }, (_, i) => i);
    order.sort(compare);
    return { order, scores };
  }
  // The first `depth` only: one comparison per result with the last one kept, a binary insertion
  // for the few that rank above it (`compare` is a total order, so these are the sort's first).
  const order: number[] = [];
  for (let i = 0; i < count; i += 1) {
    if (order.length === depth && compare(i, order[depth - 1] as number) > 0) continue;
    let low = 0;
    let high = order.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (compare(order[middle] as number, i) < 0) low = middle + 1;
      else high = middle;
    }
    order.splice(low, 0, i);
    if (order.length > depth) order.pop();
  }
  return { order, scores };
}

function matchesStored(urn: string, stored: Record<string, unknown>, filter: SearchFilter): boolean {
  if (filter.type !== undefined && stored.type !== filter.type) return false;
  if (filter.prefix !== undefined && !isWithin(urn, filter.prefix)) return false;
  return true;
}

/** Dot product (the cosine of L2-normalised vectors). */
function dot(a: readonly number[], b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < b.length; i += 1) sum += (a[i] ?? 0) * (b[i] as number);
  return sum;
}

/** True when a result passes the type and path-boundary-aware prefix filters. */
export function matchesFilter(result: Pick<RankedResult, 'id' | 'type'>, filter: SearchFilter): boolean {
  if (filter.type !== undefined && result.type !== filter.type) return false;
  if (filter.prefix !== undefined && !isWithin(result.id as string, filter.prefix)) return false;
  return true;
}

function toHit(result: SearchResult): SearchHit {
  const hit: SearchHit = {
    urn: result.id as string,
    type: result.type as string,
    text: result.text as string,
    score: result.score,
  };
  if (typeof result.title === 'string') hit.title = result.title;
  if (typeof result.source === 'string') hit.source = result.source;
  return hit;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
