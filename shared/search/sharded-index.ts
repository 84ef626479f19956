import MiniSearch from 'minisearch';
import SearchableMap from 'minisearch/SearchableMap';
import { NotFoundError, ValidationError } from '../errors.js';
import type { Embedder } from '../llm/port.js';
import type { StorageInterface } from '../storage/port.js';
import type { BridgeEntries } from './api-glossary.js';
import { BRIDGED_HITS, readBridge, withBridges } from './bridge.js';
import {
  assertSearchLimit,
  DEFAULT_INDEX_KEY,
  DEFAULT_SEARCH_LIMIT,
  ENGINE_OPTIONS,
  latestGeneration,
  MiniSearchIndex,
  matchesFilter,
  rankWithPriors,
  type StoredFields,
  searchQuery,
  TERMS_VERSION,
} from './minisearch-index.js';
import { NameOwners } from './owners.js';
import type { ChunkSearch, SearchFilter, SearchHit } from './port.js';
import { planQuery, type QueryOptions, queryTerms, type RankingData, scoreQuery } from './scoring.js';
import {
  coreKey,
  DOC_WIDTH,
  type PackCore,
  PostingShard,
  type Postings,
  parseCore,
  parseTextShard,
  postingsKey,
  textsKey,
  treeFromString,
} from './shard-pack.js';
import { termsOf } from './terms.js';

/** The loaded core: what every query needs. */
interface Core {
  /** The term dictionary (minisearch's radix tree, its nodes decoded as lookups walk them). */
  dictionary: SearchableMap<true>;
  /** Index of the posting shard holding a term. */
  shardOf(term: string): number;
  /** Makes a posting shard's lists available. */
  supply(index: number, shard: PostingShard): void;
  /** A term's posting lists, from the shards supplied so far (undefined for a term they lack). */
  postingsOf(term: string): Postings | undefined;
  options: QueryOptions;
  owners: NameOwners;
  chunks: ChunkTable;
  generation: number;
}

/**
 * The chunk index as the `tool` function's cold start opens it (issue 25 item 5): the shard pack
 * of the newest generation (shared/search/shard-pack.ts) read piecemeal. The first search reads
 * the core (statistics, term dictionary, chunk types and sources), then only the posting shards
 * holding the terms its query expands to (exact, prefix and fuzzy matches, found in the
 * dictionary) and the text shards of the hits it returns; later searches read what earlier ones
 * have not. The query's expansions come from minisearch's own dictionary lookups, its BM25+
 * scores from minisearch's formula summed in minisearch's order over flat arrays
 * (shared/search/scoring.ts), and the priors from the same {@link rankWithPriors} as the whole
 * index, so the hits are those of {@link MiniSearchIndex.open} on the whole generation, score for
 * score (test/search/sharded-index.test.ts); no object is made per matching chunk, only per hit.
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
  /** Glossary entries of the hits' documents (shared/search/bridge.ts), read once per document. */
  private readonly bridges = new Map<string, Promise<BridgeEntries | undefined>>();
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
    // The terms the query expands to (exact, prefix and fuzzy matches in the dictionary), then
    // the posting shards holding them.
    const plan = planQuery(core.dictionary, searchQuery(query), core.options);
    const shards = new Set<number>();
    for (const { expansions } of queryTerms(plan))
      for (const { term } of expansions) shards.add(core.shardOf(term));
    await Promise.all([...shards].map((s) => this.loadPostings(core, s)));
    const scored = scoreQuery(plan, (term) => core.postingsOf(term), core.chunks);
    // minisearch's search from here: the filter, then (rankWithPriors) the order by score.
    const { chunks } = core;
    let rows = scored.rows;
    let scores = scored.scores;
    if (filter.type !== undefined || filter.prefix !== undefined) {
      const kept: number[] = [];
      for (let n = 0; n < scored.count; n += 1) {
        const row = scored.rows[n] as number;
        if (matchesFilter({ id: chunks.urn(row), type: chunks.type(row) }, filter)) kept.push(n);
      }
      rows = Int32Array.from(kept, (n) => scored.rows[n] as number);
      scores = Float64Array.from(kept, (n) => scored.scores[n] as number);
    }
    const input = {
      count: rows.length,
      score: (n: number) => scores[n] as number,
      source: (n: number) => chunks.source(rows[n] as number),
      urn: (n: number) => chunks.urn(rows[n] as number),
      heading: (n: number) => chunks.heading(rows[n] as number),
    };
    const prior = core.owners.prior(query);
    const terms = new Set(termsOf(query));
    // The ranking's head, enough for `limit` hits unless `accept` refuses many; then all of it.
    let depth = Math.min(rows.length, 2 * limit + 8);
    let chosen: { row: number; urn: string; score: number }[];
    for (;;) {
      const ranked = rankWithPriors(input, prior, depth, terms);
      chosen = [];
      for (const n of ranked.order) {
        if (chosen.length >= limit) break;
        const row = rows[n] as number;
        const urn = chunks.urn(row);
        if (accept && !accept(urn)) continue;
        chosen.push({ row, urn, score: ranked.scores[n] as number });
      }
      if (chosen.length >= limit || depth >= rows.length) break;
      depth = rows.length;
    }
    const textShards = new Set(chosen.map((result) => chunks.textShard(result.row)));
    // The hit documents' glossary entries (shared/search/bridge.ts) are read beside the texts.
    const sources = new Set(chosen.slice(0, BRIDGED_HITS).flatMap(({ row }) => chunks.source(row) ?? []));
    const [texts] = await Promise.all([
      Promise.all([...textShards].map(async (s) => [s, await this.loadTexts(s)] as const)),
      Promise.all([...sources].map((source) => this.bridgeEntries(core.generation, source))),
    ]);
    const loaded = new Map(texts);
    const hits = chosen.map(({ row, urn, score }) => {
      const stored = loaded.get(chunks.textShard(row))?.[String(chunks.shortId(row))];
      const hit: SearchHit = { urn, type: chunks.type(row), text: stored?.text ?? '', score };
      if (stored?.title !== undefined) hit.title = stored.title;
      const source = chunks.source(row);
      if (source !== undefined) hit.source = source;
      return hit;
    });
    return withBridges(hits, query, (source) => this.bridgeEntries(core.generation, source));
  }

  /** The glossary entries of the document at `source`, beside the pack (none for a generation without them), read once. */
  private bridgeEntries(generation: number, source: string): Promise<BridgeEntries | undefined> {
    let entries = this.bridges.get(source);
    if (!entries) {
      entries = readBridge(this.storage, this.key, generation, source);
      this.bridges.set(source, entries);
    }
    return entries;
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
        core.supply(shard, parsed);
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
 * The chunks of a pack's core, answered from its flat arrays (the {@link RankingData} the
 * ranking reads): a chunk's URN becomes a string when a query matches it.
 */
class ChunkTable implements RankingData {
  readonly rows: number;
  readonly documentCount: number;
  readonly fieldIds: Readonly<Record<string, number>>;
  readonly averageFieldLength: readonly (number | null)[];
  /** Row of each shortId in the core's arrays (-1: no such chunk). */
  readonly rowOfShortId: Int32Array;
  readonly fieldLengths: readonly number[];
  readonly fieldCount: number;
  /** Start of each row's URN suffix in `suffixes`. */
  private readonly starts: Int32Array;
  private readonly urns: (string | undefined)[];

  constructor(private readonly core: PackCore) {
    const chunks = core.docs.length / DOC_WIDTH;
    this.rows = chunks;
    this.documentCount = core.documentCount;
    this.fieldIds = core.fieldIds;
    this.averageFieldLength = core.averageFieldLength;
    this.fieldLengths = core.fieldLengths;
    this.fieldCount = Object.keys(core.fieldIds).length;
    let size = core.nextId;
    for (let row = 0; row < chunks; row += 1)
      size = Math.max(size, (core.docs[row * DOC_WIDTH] as number) + 1);
    this.rowOfShortId = new Int32Array(size).fill(-1);
    for (let row = 0; row < chunks; row += 1) this.rowOfShortId[core.docs[row * DOC_WIDTH] as number] = row;
    this.starts = new Int32Array(chunks + 1);
    let at = 0;
    for (let row = 0; row < chunks; row += 1) {
      this.starts[row] = at;
      const end = core.suffixes.indexOf('\n', at);
      at = (end < 0 ? core.suffixes.length : end) + 1;
    }
    this.starts[chunks] = core.suffixes.length + 1;
    this.urns = new Array(chunks);
  }

  urn(row: number): string {
    let urn = this.urns[row];
    if (urn === undefined) {
      const { docs, prefixes, suffixes } = this.core;
      const suffix = suffixes.slice(this.starts[row], (this.starts[row + 1] as number) - 1);
      urn = `${prefixes[docs[row * DOC_WIDTH + 1] as number]}${suffix}`;
      this.urns[row] = urn;
    }
    return urn;
  }

  shortId(row: number): number {
    return this.core.docs[row * DOC_WIDTH] as number;
  }

  type(row: number): string {
    return this.core.types[this.core.docs[row * DOC_WIDTH + 2] as number] ?? '';
  }

  /** The chunk's document path; undefined for a chunk without one. */
  source(row: number): string | undefined {
    return this.core.sources[this.core.docs[row * DOC_WIDTH + 3] as number];
  }

  textShard(row: number): number {
    return this.core.docs[row * DOC_WIDTH + 4] as number;
  }

  /** The chunk's own heading (the section prior); undefined for a chunk without one. */
  heading(row: number): string | undefined {
    return this.core.headings[this.core.docs[row * DOC_WIDTH + 5] as number];
  }
}

/**
 * The search options of the index's minisearch instance, defaults merged, as its own search reads
 * them (minisearch 7 keeps them in `_options`; the equivalence test fails if an upgrade changes that).
 */
function engineQueryOptions(): QueryOptions {
  const engine = new MiniSearch<StoredFields>(ENGINE_OPTIONS) as unknown as { _options: QueryOptions };
  const { fields, tokenize, processTerm, searchOptions } = engine._options;
  return { fields, tokenize, processTerm, searchOptions };
}

/** A pack's core ready to rank queries: the dictionary, the chunks, the posting shards read so far. */
function coreOf(core: PackCore, generation: number): Core {
  const dictionary = new SearchableMap<true>(treeFromString(core.tree) as Map<string, never>);
  const shards = new Map<number, PostingShard>();
  const shardOf = (term: string): number => {
    // The last bound ≤ term.
    const bounds = core.bounds;
    let low = 0;
    let high = bounds.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if ((bounds[middle] as string) <= term) low = middle;
      else high = middle - 1;
    }
    return low;
  };
  return {
    dictionary,
    shardOf,
    supply: (index, shard) => shards.set(index, shard),
    postingsOf: (term) => shards.get(shardOf(term))?.postings(term),
    options: engineQueryOptions(),
    owners: NameOwners.fromResolved(core.owners),
    chunks: new ChunkTable(core),
    generation,
  };
}
