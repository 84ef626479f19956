import { createHash } from 'node:crypto';
import * as z from 'zod';
import { NotFoundError } from '../errors.js';
import type { StorageInterface } from '../storage/port.js';
import { type BridgeEntries, codeNames } from './api-glossary.js';
import type { HitBridge, SearchHit } from './port.js';
import { termsOf } from './terms.js';

/**
 * The vocabulary bridge shown with a hit (issue 21, eighth round): which API names of the hit's
 * code the API reference describes in the query's words, and how. The chunk with
 * `retention: logs.RetentionDays.ONE_WEEK` matched "How do I set how long a log group keeps its
 * logs?" through the `api` field (shared/search/api-glossary.ts); its bridge says
 * `RetentionDays: How long, in days, the log contents will be retained.`, so the passage shown,
 * the offline composer and a real model all know which line answers.
 *
 * Data: at ingest, each document of a jsii package keeps its glossary entries (name → summaries,
 * only the names its code spells), stored with the index generation (`cldBridge` in the whole
 * generation; one small JSON per document beside the shard pack, {@link bridgeKey}, read lazily
 * by the `tool` function's sharded index for the documents its hits come from). An index without
 * them gives no bridge.
 */

/** A document's stored glossary entries (name → its summaries), as read back from storage. */
export const BridgeEntriesSchema = z.record(z.string(), z.array(z.string()).min(1));

/** Most bridged names per hit. */
export const MAX_BRIDGES = 2;

/**
 * Hits given a bridge: the first ones, as many as a search returns by default
 * (shared/search/minisearch-index.ts `DEFAULT_SEARCH_LIMIT`; a test holds the two equal). The
 * rendering shows the bridge in every header, those listed by their header alone included
 * (shared/context/render-results.ts), so a model can tell which of them to `read` (issue 21,
 * ninth round). A literal, so this module does not load the index.
 */
export const BRIDGED_HITS = 8;

/** A word that negates what follows it (`does not support \`retention\``). */
const NEGATION = /\b(?:not|never|cannot|can['’]t|doesn['’]t|don['’]t|isn['’]t|aren['’]t|won['’]t|without)\b/i;

/** Most words between a negation and a name it negates (`does not support \`a\`, \`b\`, or \`c\``). */
const NEGATION_REACH = 8;

/**
 * Where a clause ends: `;`, or `.!?` then whitespace (not the dot of "e.g." or "i.e.": "does not
 * support some, e.g. \`retention\`" negates it), "but", the comma after a conditional negation ("If
 * not set, the service defaults to \`GLOBAL\`"), and Markdown's own breaks, which need no
 * punctuation — a blank line, a line that starts a list item, the end of a heading's line, a
 * table's cell.
 */
const CLAUSE_END =
  /(?:[;!?]|(?<!\b(?:e\.g|i\.e))\.)\s|\bbut\b|\n\s*\n|\n(?=[ \t]*(?:[-*+]|\d+[.)])[ \t])|(?<=^[ \t]{0,3}#{1,6}[ \t][^\n]*)\n|\||(?<=\b(?:if|when|unless)\s+not\s+\w+(?:\s+\w+)?),/im;

/** Inline code spans of Markdown (shared/search/api-glossary.ts `CODE` less its fences). */
const INLINE_CODE = /`[^`\n]+`/g;

/**
 * A Markdown text without the inline code spans its prose negates: a span within
 * {@link NEGATION_REACH} words after a {@link NEGATION} of the same clause ({@link CLAUSE_END}), the
 * clause read without its code (each earlier span one word: \`--not-empty\` negates nothing);
 * fenced code kept whole. A name so spelled is what the section does *not* do ("the Delivery log
 * class does not support \`retention\`"): its API summary says nothing of what the section is
 * about. ("If not supplied it is 2 years, but it can be set to one of the values in the
 * \`RetentionDays\` enum" negates nothing of `RetentionDays`.) A span left out leaves an empty one,
 * so the backticks about it pair as they did (in \`\`a\`b\`\`, one left out as nothing would pair
 * the first with the third).
 */
function affirmed(text: string): string {
  return text
    .split(/(```[\s\S]*?```)/)
    .map((part, i) =>
      i % 2 === 1
        ? part
        : part.replace(INLINE_CODE, (span, at: number) => {
            const clause = part.slice(0, at).replace(INLINE_CODE, 'code').split(CLAUSE_END).pop() ?? '';
            const words = clause.trim().split(/\s+/).slice(-NEGATION_REACH).join(' ');
            return NEGATION.test(words) ? '` `' : span;
          }),
    )
    .join('');
}

/**
 * The bridge of one hit: up to {@link MAX_BRIDGES} names its code spells whose summary (one of
 * its senses in `entries`) holds a term of the query (`queryTerms`, stems of
 * shared/search/terms.ts) that the hit's own text and heading trail do not — the words the index
 * matched through the glossary. Most such terms first, then first spelled; a summary once (the
 * first name with it); each summary with its whitespace collapsed. Empty when none.
 * `summaryTerms` caches each summary's terms across calls (the hits of one search).
 */
export function bridgeOf(
  hit: Pick<SearchHit, 'text' | 'title'>,
  queryTerms: ReadonlySet<string>,
  entries: BridgeEntries,
  summaryTerms: Map<string, ReadonlySet<string>> = new Map(),
): HitBridge[] {
  if (queryTerms.size === 0) return [];
  const own = new Set(termsOf(`${hit.title ?? ''}\n${hit.text}`));
  const missing = [...queryTerms].filter((term) => !own.has(term));
  if (missing.length === 0) return [];
  const heads = missing.map((term) => term.slice(0, Math.max(3, term.length - 2)));
  const found: { name: string; summary: string; count: number; order: number }[] = [];
  for (const name of codeNames(affirmed(hit.text))) {
    const senses = Object.hasOwn(entries, name) ? entries[name] : undefined;
    if (!Array.isArray(senses)) continue;
    let best: { summary: string; count: number } | undefined;
    for (const summary of senses) {
      if (typeof summary !== 'string') continue;
      // Stemming every summary of a README's names costs ≈ 10 ms of a cold search: a summary
      // whose text holds no stem's head (a stem keeps its word's start but for its last letters:
      // `happi`, `hope` from "hoping") cannot hold the term.
      const lower = summary.toLowerCase();
      if (!heads.some((head) => lower.includes(head))) continue;
      let terms = summaryTerms.get(summary);
      if (terms === undefined) {
        terms = new Set(termsOf(summary));
        summaryTerms.set(summary, terms);
      }
      const count = missing.filter((term) => terms.has(term)).length;
      if (count > 0 && (best === undefined || count > best.count)) best = { summary, count };
    }
    if (best)
      found.push({
        name,
        summary: best.summary.replace(/\s+/g, ' ').trim(),
        count: best.count,
        order: found.length,
      });
  }
  // A summary is said once: the first name spelled with it stands for the others (`retention`, `RetentionDays`).
  const said = new Set<string>();
  return found
    .sort((a, b) => b.count - a.count || a.order - b.order)
    .filter(({ summary }) => !said.has(summary) && said.add(summary))
    .slice(0, MAX_BRIDGES)
    .map(({ name, summary }) => ({ name, summary }));
}

/**
 * Hits with their {@link bridgeOf} added where it is not empty, for the first {@link BRIDGED_HITS}
 * (`entriesOf` by a hit's document path, asked only for theirs).
 */
export async function withBridges(
  hits: SearchHit[],
  query: string,
  entriesOf: (source: string) => Promise<BridgeEntries | undefined> | BridgeEntries | undefined,
): Promise<SearchHit[]> {
  const terms = new Set(termsOf(query));
  if (terms.size === 0) return hits;
  const bridged = hits.slice(0, BRIDGED_HITS);
  // Summaries' terms, shared by the hits of one document.
  const summaryTerms = new Map<string, ReadonlySet<string>>();
  const sources = [...new Set(bridged.flatMap((hit) => (hit.source !== undefined ? [hit.source] : [])))];
  const bySource = new Map(await Promise.all(sources.map(async (s) => [s, await entriesOf(s)] as const)));
  for (const hit of bridged) {
    const entries = hit.source !== undefined ? bySource.get(hit.source) : undefined;
    if (!entries) continue;
    const bridge = bridgeOf(hit, terms, entries, summaryTerms);
    if (bridge.length > 0) hit.bridge = bridge;
  }
  return hits;
}

/**
 * Storage key of the glossary entries of the document at `source` in generation `generation` of
 * the index stored under `stem`: `<stem>-bridge/<generation>/<sha256(source), 32 hex>.json`
 * (beside the shard pack `<stem>-shards/…`, which it leaves as it is).
 */
export function bridgeKey(stem: string, generation: number, source: string): string {
  const hash = createHash('sha256').update(source).digest('hex').slice(0, 32);
  return `${stem}-bridge/${generation}/${hash}.json`;
}

/** Writes each document's entries of a generation ({@link bridgeKey}); create-only, so a key taken is left as it is. */
export async function writeBridges(
  storage: StorageInterface,
  stem: string,
  generation: number,
  bySource: ReadonlyMap<string, BridgeEntries>,
): Promise<void> {
  // A document without entries gets no file: a missing one reads as none.
  await Promise.all(
    [...bySource]
      .filter(([, entries]) => Object.keys(entries).length > 0)
      .map(([source, entries]) =>
        storage.put(bridgeKey(stem, generation, source), JSON.stringify({ source, entries })),
      ),
  );
}

/**
 * Reads the entries of one document of a generation ({@link bridgeKey}); undefined when the
 * generation has none for it (an index stored before bridges, a document of no jsii package) or
 * what is stored is not of this shape.
 */
export async function readBridge(
  storage: StorageInterface,
  stem: string,
  generation: number,
  source: string,
): Promise<BridgeEntries | undefined> {
  let data: Buffer;
  try {
    data = await storage.get(bridgeKey(stem, generation, source));
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
  let json: unknown;
  try {
    json = JSON.parse(data.toString('utf8'));
  } catch {
    return undefined;
  }
  return isBridgeFile(json) && json.source === source ? json.entries : undefined;
}

/**
 * Whether stored JSON is a document file of {@link writeBridges} (`{ source, entries: name →
 * non-empty string[] }`), checked by hand: the `tool` function's first search reads these, and
 * building the zod schema there cost ≈ 3 ms of a cold start ({@link BridgeEntriesSchema} says the
 * same shape, for the whole generation's `cldBridge`).
 */
function isBridgeFile(json: unknown): json is { source: string; entries: BridgeEntries } {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return false;
  const { source, entries } = json as { source?: unknown; entries?: unknown };
  if (typeof source !== 'string' || typeof entries !== 'object' || entries === null || Array.isArray(entries))
    return false;
  return Object.values(entries).every(
    (senses) => Array.isArray(senses) && senses.length > 0 && senses.every((s) => typeof s === 'string'),
  );
}
