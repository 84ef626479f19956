import type { Query, SearchOptions } from 'minisearch';
import type SearchableMap from 'minisearch/SearchableMap';
import { FIELD_LENGTH_NULL } from './shard-pack.js';

/**
 * minisearch 7's ranking of a string query (`MiniSearch#search`: `executeQuery`,
 * `executeQuerySpec`, `termResults`, the `OR` combinator, BM25+), done over flat arrays for the
 * shard pack's reader (shared/search/sharded-index.ts) instead of minisearch's own objects.
 *
 * Why: a cold `search` of a natural-language question expands to hundreds of terms (prefix and
 * fuzzy matches: 328 for "How do I grant a Lambda function read access to an S3 bucket?" on the
 * aws-cdk-lib corpus) matching most chunks; minisearch builds, per chunk, a result object with a
 * `match` object keyed by every matched term, and merges those per query term — most of a cold
 * search's CPU time and of its garbage. Here each chunk's score is a number in a typed array.
 *
 * Same numbers: the expansions come from minisearch's own `SearchableMap` (`has`, `atPrefix`,
 * `fuzzyGet`) in its order, each term's weight and each BM25+ score is minisearch's formula
 * written the same way, and the sums add up in the same order (per query term over its
 * expansions, fields and posting lists, then across query terms), so scores are equal to the bit
 * and results come out in minisearch's order (test/search/sharded-index.test.ts compares with the
 * whole generation).
 *
 * Supported: what ENGINE_OPTIONS uses — `combineWith: 'OR'`, `prefix`, `fuzzy`, `maxFuzzy`,
 * `weights`, `boost`, `boostTerm`, `bm25`, `fields`; no `boostDocument`.
 */

/** One term a query term expands to, with minisearch's weight for it. */
export interface Expansion {
  term: string;
  weight: number;
}

/** One query term (minisearch's query spec) and the dictionary terms it expands to, in scoring order. */
export interface QueryTerm {
  term: string;
  termBoost: number;
  /** The exact term (weight 1) if the dictionary holds it, then prefix, then fuzzy matches. */
  expansions: Expansion[];
  /** The fields searched, with their boosts (the options in force where the term was found). */
  fields: readonly string[];
  boost: Readonly<Record<string, number>> | undefined;
  bm25: { k: number; b: number; d: number };
}

/**
 * A query as minisearch evaluates it: an `OR` of nodes, each a query term or another `OR` (a query
 * string is the `OR` of its terms; a query object the `OR` of its `queries`). The nesting matters:
 * minisearch adds up each node's scores before the node's parent does.
 */
export interface QueryNode {
  queries: (QueryNode | QueryTerm)[];
}

/** The search options of a minisearch instance, defaults merged (its `_options.searchOptions`). */
export type MergedSearchOptions = SearchOptions & {
  weights: { fuzzy: number; prefix: number };
  bm25: { k: number; b: number; d: number };
  maxFuzzy: number;
};

/** What {@link planQuery} and {@link scoreQuery} need of a minisearch instance's options. */
export interface QueryOptions {
  /** The indexed fields, in the order minisearch was given them. */
  fields: readonly string[];
  tokenize: (text: string) => string[];
  processTerm: (term: string) => string | string[] | null | undefined | false;
  searchOptions: MergedSearchOptions;
}

/**
 * The query terms of `query` (a string, or minisearch's query object: `queries` with options that
 * apply to them) and their expansions in the dictionary, as `executeQuery` and `executeQuerySpec`
 * find them: options passed down the tree; per string, tokenize and process, then per term its
 * exact, prefix and fuzzy matches (a term both a prefix and a fuzzy match counts as a prefix match;
 * exact matches are not repeated).
 * @throws Error when the query asks for a feature this ranking does not implement (`boostDocument`, `AND`, the wildcard)
 */
export function planQuery(
  dictionary: SearchableMap<unknown>,
  query: Query,
  options: QueryOptions,
): QueryNode {
  return planNode(dictionary, query, {}, options);
}

type PassedOptions = SearchOptions & { queries?: undefined };

function planNode(
  dictionary: SearchableMap<unknown>,
  query: Query,
  passed: PassedOptions,
  engine: QueryOptions,
): QueryNode {
  if (typeof query !== 'string') {
    if (typeof query !== 'object' || query === null || !Array.isArray(query.queries))
      throw new Error('the shard pack ranking implements string and combined queries only');
    const options: PassedOptions = { ...passed, ...query, queries: undefined };
    assertSupported(options);
    return { queries: query.queries.map((subquery) => planNode(dictionary, subquery, options, engine)) };
  }
  const options = {
    tokenize: engine.tokenize,
    processTerm: engine.processTerm,
    ...engine.searchOptions,
    ...passed,
  } as MergedSearchOptions & Pick<QueryOptions, 'tokenize' | 'processTerm'>;
  assertSupported(options);
  const terms = options
    .tokenize(query)
    .flatMap((token) => options.processTerm(token))
    .filter((term): term is string => !!term);
  const { fuzzy: fuzzyWeight, prefix: prefixWeight } = options.weights;
  const fields = options.fields ?? engine.fields;
  return {
    queries: terms.map((term, i): QueryTerm => {
      const fuzzy =
        typeof options.fuzzy === 'function' ? options.fuzzy(term, i, terms) : options.fuzzy || false;
      const prefix =
        typeof options.prefix === 'function' ? options.prefix(term, i, terms) : options.prefix === true;
      const termBoost = typeof options.boostTerm === 'function' ? options.boostTerm(term, i, terms) : 1;
      const expansions: Expansion[] = [];
      if (dictionary.has(term)) expansions.push({ term, weight: 1 });
      const prefixed = new Set<string>();
      const prefixMatches: Expansion[] = [];
      if (prefix) {
        for (const match of dictionary.atPrefix(term).keys()) {
          const distance = match.length - term.length;
          if (!distance) continue;
          prefixed.add(match);
          prefixMatches.push({
            term: match,
            weight: (prefixWeight * match.length) / (match.length + 0.3 * distance),
          });
        }
      }
      const fuzzyMatches: Expansion[] = [];
      if (fuzzy) {
        const ratio = fuzzy === true ? 0.2 : fuzzy;
        const maxDistance = ratio < 1 ? Math.min(options.maxFuzzy, Math.round(term.length * ratio)) : ratio;
        if (maxDistance) {
          for (const [match, [, distance]] of dictionary.fuzzyGet(term, maxDistance)) {
            if (!distance || prefixed.has(match)) continue;
            fuzzyMatches.push({
              term: match,
              weight: (fuzzyWeight * match.length) / (match.length + distance),
            });
          }
        }
      }
      expansions.push(...prefixMatches, ...fuzzyMatches);
      return { term, termBoost, expansions, fields, boost: options.boost, bm25: options.bm25 };
    }),
  };
}

function assertSupported(options: SearchOptions): void {
  if (options.boostDocument !== undefined || String(options.combineWith ?? 'or').toLowerCase() !== 'or')
    throw new Error('the shard pack ranking implements OR queries without boostDocument only');
}

/** The query terms of a planned query, in order (every one a leaf of the tree). */
export function queryTerms(plan: QueryNode): QueryTerm[] {
  return plan.queries.flatMap((node) => ('queries' in node ? queryTerms(node) : [node]));
}

/** One field's posting list of a term: `size` pairs of (shortId, term frequency) from `words[start]` on. */
export interface PostingWords {
  readonly words: Uint32Array;
  readonly start: number;
  readonly size: number;
}

/** The index statistics and chunk data the ranking reads. */
export interface RankingData {
  documentCount: number;
  /** Field name → field id. */
  fieldIds: Readonly<Record<string, number>>;
  /** Per field id; null as minisearch's serialisation holds a field no chunk has. */
  averageFieldLength: readonly (number | null)[];
  /** Row of each shortId, -1 for none (a discarded chunk); shortIds past its end have none either. */
  rowOfShortId: Int32Array;
  /** Number of rows. */
  rows: number;
  /**
   * Per row, one entry per field id, as a pack's core holds them: the field's length,
   * {@link FIELD_LENGTH_NULL} where minisearch holds null (its arithmetic reads 0), another
   * negative number ((shard-pack.ts `FIELD_LENGTH_ABSENT`)) past the end of its array (undefined: NaN).
   */
  fieldLengths: readonly number[];
  /** Entries per row in {@link fieldLengths}. */
  fieldCount: number;
}

/** Scored chunks in minisearch's result order before sorting (first match first). */
export interface Scored {
  /** Rows, in the order minisearch's result Map holds them. */
  rows: Int32Array;
  /** Final score of each of {@link rows} (the BM25+ sum times the number of distinct query terms matched). */
  scores: Float64Array;
  count: number;
}

/** The results of one node of the query: its rows in first-match order and their sums (by row). */
interface NodeResults {
  order: Int32Array;
  count: number;
  sum: Float64Array;
  member: Uint8Array;
}

/**
 * Scores a planned query ({@link planQuery}) as minisearch does, over `postingsOf(term)` (field id
 * → posting list; undefined for a term without postings).
 */
export function scoreQuery(
  plan: QueryNode,
  postingsOf: (term: string) => ReadonlyMap<number, PostingWords> | undefined,
  data: RankingData,
): Scored {
  const rows = data.rows;
  const leaves = queryTerms(plan);
  const distinct = [...new Set(leaves.map((leaf) => leaf.term))];
  const words = Math.max(1, Math.ceil(distinct.length / 32));
  // The distinct query terms each row matched (minisearch's `terms`, whose count multiplies the score).
  const matched = new Uint32Array(rows * words);
  const results = (): NodeResults => ({
    order: new Int32Array(rows),
    count: 0,
    sum: new Float64Array(rows),
    member: new Uint8Array(rows),
  });
  const node = (query: QueryNode | QueryTerm): NodeResults => {
    if (!('queries' in query)) {
      const own = termResults(query, postingsOf, data, results());
      const bit = distinct.indexOf(query.term);
      const word = bit >>> 5;
      const mask = 1 << (bit & 31);
      for (let t = 0; t < own.count; t += 1) {
        const at = (own.order[t] as number) * words + word;
        matched[at] = (matched[at] as number) | mask;
      }
      return own;
    }
    // minisearch's `OR` combinator, folded left: the first node's results, to which each next
    // node's add (a row already there) or append (a new one).
    const [first, ...rest] = query.queries.map(node);
    if (!first) return results();
    for (const next of rest) {
      for (let t = 0; t < next.count; t += 1) {
        const row = next.order[t] as number;
        if (first.member[row]) first.sum[row] = (first.sum[row] as number) + (next.sum[row] as number);
        else {
          first.member[row] = 1;
          first.sum[row] = next.sum[row] as number;
          first.order[first.count++] = row;
        }
      }
    }
    return first;
  };
  const all = node(plan);
  const scores = new Float64Array(all.count);
  for (let n = 0; n < all.count; n += 1) {
    const row = all.order[n] as number;
    let quality = 0;
    for (let w = 0; w < words; w += 1) quality += bitCount(matched[row * words + w] as number);
    scores[n] = (all.sum[row] as number) * (quality || 1);
  }
  return { rows: all.order.subarray(0, all.count), scores, count: all.count };
}

/** minisearch's `termResults` for every expansion of one query term, into `into`. */
function termResults(
  spec: QueryTerm,
  postingsOf: (term: string) => ReadonlyMap<number, PostingWords> | undefined,
  data: RankingData,
  into: NodeResults,
): NodeResults {
  const boosts = [...new Set(spec.fields)].map((field) => ({
    fieldId: data.fieldIds[field] as number,
    boost: (spec.boost && Object.hasOwn(spec.boost, field) ? spec.boost[field] : undefined) || 1,
  }));
  const { k, b, d } = spec.bm25;
  // Written once per pair below, in the interpreter a cold search runs in: lookups inlined,
  // constants hoisted (`k + 1` and `1 - b` are the same numbers wherever they are computed).
  const k1 = k + 1;
  const oneMinusB = 1 - b;
  const { rowOfShortId, fieldLengths, fieldCount, documentCount } = data;
  const shortIds = rowOfShortId.length;
  const { order, sum, member } = into;
  let count = into.count;
  for (const { term, weight } of spec.expansions) {
    const postings = postingsOf(term);
    if (!postings) continue;
    for (const { fieldId, boost } of boosts) {
      const list = postings.get(fieldId);
      if (!list) continue;
      let matching = list.size;
      let idf = Math.log(1 + (documentCount - matching + 0.5) / (matching + 0.5));
      const average = data.averageFieldLength[fieldId] as number;
      const factor = weight * spec.termBoost * boost * 1;
      const pairs = list.words;
      for (let at = list.start, end = list.start + 2 * list.size; at < end; at += 2) {
        const shortId = pairs[at] as number;
        const row = shortId < shortIds ? (rowOfShortId[shortId] as number) : -1;
        if (row < 0) {
          // minisearch drops a discarded chunk's posting and counts one chunk fewer from there on.
          matching -= 1;
          idf = Math.log(1 + (documentCount - matching + 0.5) / (matching + 0.5));
          continue;
        }
        const termFreq = pairs[at + 1] as number;
        let fieldLength =
          fieldId < fieldCount ? (fieldLengths[row * fieldCount + fieldId] as number) : Number.NaN;
        if (fieldLength < 0) fieldLength = fieldLength === FIELD_LENGTH_NULL ? 0 : Number.NaN;
        const weighted =
          factor * (idf * (d + (termFreq * k1) / (termFreq + k * (oneMinusB + (b * fieldLength) / average))));
        if (member[row]) sum[row] = (sum[row] as number) + weighted;
        else {
          member[row] = 1;
          sum[row] = weighted;
          order[count++] = row;
        }
      }
    }
  }
  into.count = count;
  return into;
}

function bitCount(value: number): number {
  let v = value - ((value >>> 1) & 0x55555555);
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}
