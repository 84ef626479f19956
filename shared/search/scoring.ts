import type { SearchOptions } from 'minisearch';
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
 * The query terms of `query` and their expansions in the dictionary, as `executeQuery` and
 * `executeQuerySpec` find them (tokenize, process, then per term: exact, prefix and fuzzy matches;
 * a term both a prefix and a fuzzy match counts as a prefix match; exact matches are not repeated).
 * @throws Error when the options ask for a feature this ranking does not implement (`boostDocument`, `AND`)
 */
export function planQuery(
  dictionary: SearchableMap<unknown>,
  query: string,
  options: QueryOptions,
): QueryTerm[] {
  const { tokenize, processTerm, searchOptions } = options;
  if (
    searchOptions.boostDocument !== undefined ||
    String(searchOptions.combineWith ?? 'or').toLowerCase() !== 'or'
  )
    throw new Error('the shard pack ranking implements OR queries without boostDocument only');
  const terms = tokenize(query)
    .flatMap((token) => processTerm(token))
    .filter((term): term is string => !!term);
  const { fuzzy: fuzzyWeight, prefix: prefixWeight } = searchOptions.weights;
  return terms.map((term, i) => {
    const fuzzy =
      typeof searchOptions.fuzzy === 'function'
        ? searchOptions.fuzzy(term, i, terms)
        : searchOptions.fuzzy || false;
    const prefix =
      typeof searchOptions.prefix === 'function'
        ? searchOptions.prefix(term, i, terms)
        : searchOptions.prefix === true;
    const termBoost =
      typeof searchOptions.boostTerm === 'function' ? searchOptions.boostTerm(term, i, terms) : 1;
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
      const maxDistance =
        ratio < 1 ? Math.min(searchOptions.maxFuzzy, Math.round(term.length * ratio)) : ratio;
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
    return { term, termBoost, expansions };
  });
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

/**
 * Scores a planned query ({@link planQuery}) as minisearch does, over `postingsOf(term)` (field id
 * → posting list; undefined for a term without postings).
 */
export function scoreQuery(
  plan: readonly QueryTerm[],
  postingsOf: (term: string) => ReadonlyMap<number, PostingWords> | undefined,
  data: RankingData,
  { fields, searchOptions }: QueryOptions,
): Scored {
  const boosts = [...new Set(searchOptions.fields ?? fields)].map((field) => ({
    fieldId: data.fieldIds[field] as number,
    boost: (Object.hasOwn(searchOptions.boost ?? {}, field) ? searchOptions.boost?.[field] : undefined) || 1,
  }));
  const { k, b, d } = searchOptions.bm25;
  // Written once per pair below, in the interpreter a cold search runs in: lookups inlined,
  // constants hoisted (`k + 1` and `1 - b` are the same numbers wherever they are computed).
  const k1 = k + 1;
  const oneMinusB = 1 - b;
  const { rowOfShortId, fieldLengths, fieldCount, documentCount } = data;
  const shortIds = rowOfShortId.length;
  const rows = data.rows;
  // Per query term: its sum per row, which rows it touched in first-touch order.
  const termScore = new Float64Array(rows);
  const termMark = new Int32Array(rows).fill(-1);
  const touched = new Int32Array(rows);
  // Across query terms: the combined sum, the rows in first-match order, the distinct query terms.
  const total = new Float64Array(rows);
  const seen = new Uint8Array(rows);
  const order = new Int32Array(rows);
  let count = 0;
  const distinct = [...new Set(plan.map((spec) => spec.term))];
  const words = Math.max(1, Math.ceil(distinct.length / 32));
  const matched = new Uint32Array(rows * words);
  for (let i = 0; i < plan.length; i += 1) {
    const spec = plan[i] as QueryTerm;
    let touchedCount = 0;
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
            factor *
            (idf * (d + (termFreq * k1) / (termFreq + k * (oneMinusB + (b * fieldLength) / average))));
          if (termMark[row] === i) termScore[row] = (termScore[row] as number) + weighted;
          else {
            termMark[row] = i;
            termScore[row] = weighted;
            touched[touchedCount++] = row;
          }
        }
      }
    }
    const bit = distinct.indexOf(spec.term);
    const word = bit >>> 5;
    const mask = 1 << (bit & 31);
    for (let t = 0; t < touchedCount; t += 1) {
      const row = touched[t] as number;
      if (seen[row]) total[row] = (total[row] as number) + (termScore[row] as number);
      else {
        seen[row] = 1;
        total[row] = termScore[row] as number;
        order[count++] = row;
      }
      matched[row * words + word] = (matched[row * words + word] as number) | mask;
    }
  }
  const scores = new Float64Array(count);
  for (let n = 0; n < count; n += 1) {
    const row = order[n] as number;
    let quality = 0;
    for (let w = 0; w < words; w += 1) quality += bitCount(matched[row * words + w] as number);
    scores[n] = (total[row] as number) * (quality || 1);
  }
  return { rows: order.subarray(0, count), scores, count };
}

function bitCount(value: number): number {
  let v = value - ((value >>> 1) & 0x55555555);
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}
