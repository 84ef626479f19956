/**
 * Ranked retrieval over indexed resources (the seeds' Vector service, roadmap-v1 step 07):
 * a query plus filters by resource type and URN prefix.
 */

/** An indexed item: a resource's searchable text plus what filters need. */
export interface IndexedItem {
  /** Resource URN. */
  urn: string;
  /** Resource type, `namespace.Name`. */
  type: string;
  /** Searchable text. */
  text: string;
  /** Optional title or heading trail (weighted higher than text). */
  title?: string;
  /** Optional source path of the item's document (`node_modules/aws-cdk-lib/aws-s3/README.md`), searched too. */
  source?: string;
  /**
   * Optional words that describe the item without being shown: the API reference's summaries of
   * the names its code spells (shared/search/api-glossary.ts), searched at a low weight.
   */
  api?: string;
}

/** Search filters. */
export interface SearchFilter {
  /** Only items of this resource type. */
  type?: string;
  /** Only items whose URN starts with this prefix (path-boundary aware: the prefix or under it). */
  prefix?: string;
}

/** An API name of a hit's code and the API reference's summary of it (shared/search/bridge.ts). */
export interface HitBridge {
  /** The name as the code spells it (`RetentionDays`). */
  name: string;
  /** Its summary in the API reference ("How long, in days, the log contents will be retained."). */
  summary: string;
}

/**
 * The well-formed {@link HitBridge}s of a hit's `bridge` as a tool result carries it (stored JSON,
 * read by the rendering and the offline model): `[]` when absent or not an array, malformed
 * entries left out.
 */
export function hitBridges(value: unknown): HitBridge[] {
  if (!Array.isArray(value)) return [];
  return (value as Partial<HitBridge>[]).filter(
    (b): b is HitBridge => typeof b?.name === 'string' && typeof b.summary === 'string',
  );
}

/** One hit. */
export interface SearchHit {
  urn: string;
  type: string;
  title?: string;
  text: string;
  /** Source path of the hit's document, when indexed with one. */
  source?: string;
  /**
   * Up to 2 names of the hit's code whose API summary holds query words its text lacks: why the
   * hit matched (shared/search/bridge.ts). Absent when none, or the index keeps no glossary.
   */
  bridge?: HitBridge[];
  /** Relevance score (BM25-based; higher is better; comparable within one query only). */
  score: number;
}

/** The search port. */
export interface ChunkSearch {
  /**
   * Ranked hits for `query`, best first, at most `limit`, after `filter`; `accept` (the policy
   * gate) drops hits the caller may not read before the limit is applied.
   */
  search(
    query: string,
    options?: { filter?: SearchFilter; limit?: number; accept?: (urn: string) => boolean },
  ): Promise<SearchHit[]>;
}
