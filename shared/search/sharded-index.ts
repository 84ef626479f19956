import MiniSearch, { type SearchResult } from 'minisearch';
import SearchableMap from 'minisearch/SearchableMap';
import { NotFoundError, ValidationError } from '../errors.js';
import type { Embedder } from '../llm/port.js';
import type { StorageInterface } from '../storage/port.js';
import {
  assertSearchLimit,
  DEFAULT_INDEX_KEY,
  DEFAULT_SEARCH_LIMIT,
  ENGINE_OPTIONS,
  latestGeneration,
  MiniSearchIndex,
  matchesFilter,
  type StoredFields,
  searchQuery,
  TERMS_VERSION,
  withDocumentPrior,
  withOwnerPrior,
} from './minisearch-index.js';
import { NameOwners } from './owners.js';
import type { ChunkSearch, SearchFilter, SearchHit } from './port.js';
import {
  coreKey,
  DOC_WIDTH,
  FIELD_LENGTH_ABSENT,
  FIELD_LENGTH_NULL,
  type PackCore,
  PostingShard,
  type Postings,
  parseCore,
  parseTextShard,
  postingsKey,
  textsKey,
  treeFromString,
} from './shard-pack.js';

/** The loaded core: what every query needs. */
interface Core {
  engine: MiniSearch<StoredFields>;
  owners: NameOwners;
  terms: LazyTerms;
  chunks: ChunkTable;
  generation: number;
}

/**
 * The chunk index as the `tool` function's cold start opens it (issue 25 item 5): the shard pack
 * of the newest generation (shared/search/shard-pack.ts) read piecemeal. The first search reads
 * the core (statistics, term dictionary, chunk types and sources), then only the posting shards
 * holding the terms its query expands to (exact, prefix and fuzzy matches, found in the
 * dictionary) and the text shards of the hits it returns; later searches read what earlier ones
 * have not. Ranking is minisearch's own code over the same data, so the hits are those of
 * {@link MiniSearchIndex.open} on the whole generation, score for score
 * (test/search/sharded-index.test.ts).
 *
 * Read-only. Falls back to {@link MiniSearchIndex.open} (the whole generation) when the newest
 * generation has no pack (written before packs existed) or when hybrid search needs the stored
 * vectors. A generation built with other term processing is empty, as {@link MiniSearchIndex.open}
 * treats it.
 */
export class ShardedChunkIndex implements ChunkSearch {
  private core: Promise<Core | MiniSearchIndex | undefined> | undefined;
  private readonly postings = new Map<number, Promise<void>>();
  private readonly texts = new Map<
    number,
    Promise<Record<string, { title?: string | undefined; text: string }>>
  >();
  private embedder: Embedder | undefined;
  /** Storage keys read so far, in order (what a cold search cost; for tests and measurements). */
  readonly reads: string[] = [];

  private constructor(
    private readonly storage: StorageInterface,
    private readonly key: string,
    private readonly generation: number | undefined,
  ) {}

  /**
   * Finds the newest generation under `key` (one listing) and returns an index that reads it at
   * its first search.
   */
  static async open(storage: StorageInterface, key: string = DEFAULT_INDEX_KEY): Promise<ShardedChunkIndex> {
    return new ShardedChunkIndex(storage, key, await latestGeneration(storage, key));
  }

  /** As {@link MiniSearchIndex.useEmbedder}: hybrid search (read from the whole generation). */
  useEmbedder(embedder: Embedder): void {
    this.embedder = embedder;
  }

  /**
   * Ranked hits for `query`, as {@link MiniSearchIndex.search}.
   * @throws ValidationError for a limit that is not a positive integer, or a pack that does not parse
   */
  async search(
    query: string,
    options: { filter?: SearchFilter; limit?: number; accept?: (urn: string) => boolean } = {},
  ): Promise<SearchHit[]> {
    const { filter = {}, limit = DEFAULT_SEARCH_LIMIT, accept } = options;
    assertSearchLimit(limit);
    if (query.trim() === '') return [];
    this.core ??= this.loadCore();
    const core = await this.core;
    if (core === undefined) return [];
    if (core instanceof MiniSearchIndex) return core.search(query, options);
    const search = () =>
      core.engine.search(searchQuery(query), {
        filter: (result) => matchesFilter(result, filter),
      }) as SearchResult[];
    // First pass over the dictionary alone: which terms the query expands to.
    core.terms.recording = new Set();
    search();
    const needed = core.terms.recording;
    core.terms.recording = undefined;
    await Promise.all(
      [...new Set([...needed].map((term) => core.terms.shardOf(term)))].map((s) =>
        this.loadPostings(core, s),
      ),
    );
    const results = withOwnerPrior(withDocumentPrior(search()), core.owners.prior(query));
    core.terms.endQuery();
    const chosen: SearchResult[] = [];
    for (const result of results) {
      if (chosen.length >= limit) break;
      if (accept && !accept(result.id as string)) continue;
      chosen.push(result);
    }
    const shards = new Set(chosen.map((result) => core.chunks.textShardOf(result.id as string)));
    const loaded = new Map(
      await Promise.all([...shards].map(async (s) => [s, await this.loadTexts(s)] as const)),
    );
    return chosen.map((result) => {
      const shortId = core.chunks.shortIdOf(result.id as string);
      const stored = loaded.get(core.chunks.textShardOf(result.id as string))?.[String(shortId)];
      const hit: SearchHit = {
        urn: result.id as string,
        type: result.type as string,
        text: stored?.text ?? '',
        score: result.score,
      };
      if (stored?.title !== undefined) hit.title = stored.title;
      if (typeof result.source === 'string') hit.source = result.source;
      return hit;
    });
  }

  private async read(key: string): Promise<unknown> {
    const data = await this.readBytes(key);
    try {
      return JSON.parse(data.toString('utf8'));
    } catch (error) {
      throw new ValidationError(`index shard ${key} is not JSON`, { cause: error });
    }
  }

  private readBytes(key: string): Promise<Buffer> {
    this.reads.push(key);
    return this.storage.get(key);
  }

  private async loadCore(): Promise<Core | MiniSearchIndex | undefined> {
    const generation = this.generation;
    if (generation === undefined) return undefined;
    let raw: unknown;
    try {
      raw = await this.read(coreKey(this.key, generation));
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      raw = undefined;
    }
    const parsed = raw === undefined ? undefined : parseCore(raw);
    if (parsed === undefined || (parsed.vectors !== undefined && this.embedder !== undefined)) {
      // No (readable) pack, or hybrid search: the whole generation, as before.
      const whole = await MiniSearchIndex.open(this.storage, this.key);
      if (this.embedder) whole.useEmbedder(this.embedder);
      return whole;
    }
    if (parsed.cldTerms !== TERMS_VERSION) return undefined;
    return coreOf(parsed, generation);
  }

  private loadPostings(core: Core, shard: number): Promise<void> {
    let pending = this.postings.get(shard);
    if (!pending) {
      pending = this.readBytes(postingsKey(this.key, core.generation, shard)).then((data) => {
        const parsed = PostingShard.parse(data);
        if (!parsed) throw new ValidationError(`posting shard ${shard} of the chunk index does not parse`);
        core.terms.supply(shard, parsed);
      });
      this.postings.set(shard, pending);
    }
    return pending;
  }

  private loadTexts(shard: number): Promise<Record<string, { title?: string | undefined; text: string }>> {
    let pending = this.texts.get(shard);
    if (!pending) {
      const generation = this.generation as number;
      pending = this.read(textsKey(this.key, generation, shard)).then((raw) => {
        const parsed = parseTextShard(raw);
        if (!parsed) throw new ValidationError(`text shard ${shard} of the chunk index does not parse`);
        return parsed;
      });
      this.texts.set(shard, pending);
    }
    return pending;
  }
}

/**
 * The part of minisearch's `SearchableMap` that its search reads (`get`, `atPrefix`, `fuzzyGet`,
 * `has`), over the term dictionary with posting lists supplied shard by shard. The dictionary is a
 * real `SearchableMap` over the same radix tree `MiniSearch.loadJS` builds (shard-pack.ts writes
 * it node by node), so expansions come out in the same order and scores add up in the same order. While {@link recording} is set, every term asked for is recorded and answered as
 * absent (a dry run that finds the shards a query needs).
 */
class LazyTerms {
  recording: Set<string> | undefined;
  private readonly loaded = new Map<string, Postings>();
  private readonly shards = new Map<number, PostingShard>();
  /** Expansions of the current query (the dry run and the search ask the same ones). */
  private readonly expansions = new Map<string, readonly (readonly [string, number])[]>();

  constructor(
    private readonly dictionary: SearchableMap<true>,
    private readonly bounds: readonly string[],
  ) {}

  /** Index of the posting shard holding `term` (the last bound ≤ term). */
  shardOf(term: string): number {
    let low = 0;
    let high = this.bounds.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if ((this.bounds[middle] as string) <= term) low = middle;
      else high = middle - 1;
    }
    return low;
  }

  /** Makes the posting lists of a shard available (decoded to minisearch's Maps when first asked for). */
  supply(index: number, shard: PostingShard): void {
    this.shards.set(index, shard);
  }

  private postingsOf(term: string): Postings | undefined {
    if (this.recording) {
      this.recording.add(term);
      return undefined;
    }
    let postings = this.loaded.get(term);
    if (postings) return postings;
    postings = this.shards.get(this.shardOf(term))?.postings(term);
    if (!postings) return undefined;
    this.loaded.set(term, postings);
    return postings;
  }

  has(term: string): boolean {
    return this.dictionary.has(term);
  }

  get(term: string): Postings | undefined {
    return this.dictionary.has(term) ? this.postingsOf(term) : undefined;
  }

  /** Forgets the expansions of the last query (they are kept for its two passes only). */
  endQuery(): void {
    this.expansions.clear();
  }

  atPrefix(prefix: string): [string, Postings | undefined][] {
    const key = `p\u0000${prefix}`;
    let terms = this.expansions.get(key);
    if (!terms) {
      terms = [...this.dictionary.atPrefix(prefix).keys()].map((term) => [term, 0] as const);
      this.expansions.set(key, terms);
    }
    return terms.map(([term]) => [term, this.postingsOf(term)]);
  }

  fuzzyGet(term: string, maxDistance: number): Map<string, [Postings | undefined, number]> {
    const key = `f\u0000${maxDistance}\u0000${term}`;
    let terms = this.expansions.get(key);
    if (!terms) {
      terms = [...this.dictionary.fuzzyGet(term, maxDistance)].map(
        ([match, [, distance]]) => [match, distance] as const,
      );
      this.expansions.set(key, terms);
    }
    const matches = new Map<string, [Postings | undefined, number]>();
    for (const [match, distance] of terms) matches.set(match, [this.postingsOf(match), distance]);
    return matches;
  }
}

/**
 * The chunks of a pack's core as minisearch's search reads them (`get` and `has` of its
 * `_documentIds`, `_storedFields` and `_fieldLength` Maps), answered from the core's flat arrays:
 * a chunk's URN, stored fields and field lengths become objects only when a query matches it.
 */
class ChunkTable {
  /** Row of each shortId in the core's arrays (-1: no such chunk). */
  private readonly rows: Int32Array;
  /** Start of each row's URN suffix in `suffixes`. */
  private readonly starts: Int32Array;
  private readonly urns: (string | undefined)[];
  private readonly stored: (Partial<StoredFields> | undefined)[];
  private readonly lengths: ((number | null)[] | undefined)[];
  /** Row of each URN made so far (every URN a search returns was made by {@link urnAt}). */
  private readonly byUrn = new Map<string, number>();
  private complete = false;
  private readonly fields: number;

  constructor(private readonly core: PackCore) {
    const chunks = core.docs.length / DOC_WIDTH;
    this.fields = Object.keys(core.fieldIds).length;
    let size = core.nextId;
    for (let row = 0; row < chunks; row += 1)
      size = Math.max(size, (core.docs[row * DOC_WIDTH] as number) + 1);
    this.rows = new Int32Array(size).fill(-1);
    for (let row = 0; row < chunks; row += 1) this.rows[core.docs[row * DOC_WIDTH] as number] = row;
    this.starts = new Int32Array(chunks + 1);
    let at = 0;
    for (let row = 0; row < chunks; row += 1) {
      this.starts[row] = at;
      const end = core.suffixes.indexOf('\n', at);
      at = (end < 0 ? core.suffixes.length : end) + 1;
    }
    this.starts[chunks] = core.suffixes.length + 1;
    this.urns = new Array(chunks);
    this.stored = new Array(chunks);
    this.lengths = new Array(chunks);
  }

  private row(shortId: number): number {
    return shortId >= 0 && shortId < this.rows.length ? (this.rows[shortId] as number) : -1;
  }

  private urnAt(row: number): string {
    let urn = this.urns[row];
    if (urn === undefined) {
      const { docs, prefixes, suffixes } = this.core;
      const suffix = suffixes.slice(this.starts[row], (this.starts[row + 1] as number) - 1);
      urn = `${prefixes[docs[row * DOC_WIDTH + 1] as number]}${suffix}`;
      this.urns[row] = urn;
      this.byUrn.set(urn, row);
    }
    return urn;
  }

  /** `_documentIds`: shortId → URN. */
  readonly documentIds = {
    has: (shortId: number) => this.row(shortId) >= 0,
    get: (shortId: number) => {
      const row = this.row(shortId);
      return row < 0 ? undefined : this.urnAt(row);
    },
  };

  /** `_storedFields`: shortId → URN, type, source (the text lives in the text shards). */
  readonly storedFields = {
    get: (shortId: number) => {
      const row = this.row(shortId);
      if (row < 0) return undefined;
      let stored = this.stored[row];
      if (!stored) {
        const { docs, types, sources } = this.core;
        stored = { urn: this.urnAt(row), type: types[docs[row * DOC_WIDTH + 2] as number] ?? '' };
        const path = sources[docs[row * DOC_WIDTH + 3] as number];
        if (path !== undefined) stored.source = path;
        this.stored[row] = stored;
      }
      return stored;
    },
  };

  /** `_fieldLength`: shortId → length of each field (null and missing entries as minisearch had them). */
  readonly fieldLength = {
    get: (shortId: number) => {
      const row = this.row(shortId);
      if (row < 0) return undefined;
      let lengths = this.lengths[row];
      if (!lengths) {
        lengths = [];
        for (let field = 0; field < this.fields; field += 1) {
          const length = this.core.fieldLengths[row * this.fields + field] as number;
          if (length === FIELD_LENGTH_ABSENT) break;
          lengths.push(length === FIELD_LENGTH_NULL ? null : length);
        }
        this.lengths[row] = lengths;
      }
      return lengths;
    },
  };

  /** `_idToShortId`: URN → shortId (every URN is made at the first miss; search does not use it). */
  readonly idToShortId = {
    has: (urn: string) => this.rowOf(urn) >= 0,
    get: (urn: string) => {
      const row = this.rowOf(urn);
      return row < 0 ? undefined : (this.core.docs[row * DOC_WIDTH] as number);
    },
  };

  private rowOf(urn: string): number {
    const row = this.byUrn.get(urn);
    if (row !== undefined) return row;
    if (this.complete) return -1;
    for (let at = 0; at < this.urns.length; at += 1) this.urnAt(at);
    this.complete = true;
    return this.byUrn.get(urn) ?? -1;
  }

  /** shortId of a URN a search returned (-1: none). */
  shortIdOf(urn: string): number {
    return this.idToShortId.get(urn) ?? -1;
  }

  /** Text shard of a URN a search returned (-1: none). */
  textShardOf(urn: string): number {
    const row = this.rowOf(urn);
    return row < 0 ? -1 : (this.core.docs[row * DOC_WIDTH + 4] as number);
  }
}

/**
 * A minisearch instance over a pack's core: the statistics set as `MiniSearch.loadJS` sets them,
 * {@link ChunkTable} as its chunk Maps and {@link LazyTerms} as its term index. minisearch 7 keeps
 * these in plain (underscore) properties; the equivalence test (test/search/sharded-index.test.ts)
 * fails if an upgrade changes them.
 */
function coreOf(core: PackCore, generation: number): Core {
  const engine = new MiniSearch<StoredFields>(ENGINE_OPTIONS);
  const tree = treeFromString(core.tree);
  const terms = new LazyTerms(new SearchableMap<true>(tree as Map<string, never>), core.bounds);
  const chunks = new ChunkTable(core);
  Object.assign(engine, {
    _documentCount: core.documentCount,
    _nextId: core.nextId,
    _idToShortId: chunks.idToShortId,
    _fieldIds: core.fieldIds,
    _avgFieldLength: core.averageFieldLength,
    _dirtCount: core.dirtCount,
    _documentIds: chunks.documentIds,
    _fieldLength: chunks.fieldLength,
    _storedFields: chunks.storedFields,
    _index: terms,
  });
  return { engine, owners: NameOwners.fromResolved(core.owners), terms, chunks, generation };
}
