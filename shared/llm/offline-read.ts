import { processTerm, termsOf } from '../search/terms.js';
import {
  adjacentPairs,
  type ExtractHit,
  questionWeights,
  REFERENT,
  rankWeight,
  referentAliases,
} from './extract.js';

/**
 * What the offline model reads before it answers (issue 21 item 7). A search result shows its
 * first hits with a passage and lists the rest by their header alone (`[7] › Allowing
 * Connections`; shared/context/render-results.ts PASSAGE_HITS), to be `read` by id when one looks
 * relevant. A model reads such a hit when
 * - **the best passage's section continues in it**: it has the same document and the same
 *   heading trail as the passage hit that scores best for the question — the weight of the
 *   question's terms its trail and passage hold, times its rank's weight, as the composer weighs
 *   hits (shared/llm/extract.ts `rankWeight`); for a part that refers back, among the passages
 *   that name its referent — (the section's other chunk: the code after the list of properties
 *   the passage showed), or
 * - **its heading names the question better than any passage's**: its trail holds more of the
 *   question's terms (by weight, {@link questionWeights}) than the trail of every hit shown with
 *   a passage, or
 * - **its heading names what every passage leaves out**: its trail holds a question term that no
 *   passage — text, trail or bridge (the API summaries of names its code spells,
 *   shared/search/bridge.ts) — holds ("Subscriptions › Email" for "send an email to subscribers
 *   of that topic", when the passages are the topic's policy); for a part that refers back, only
 *   a hit whose document path or trail names the module of the API the referent was answered with
 *   (`sns` of `sns.ITopic`: the Lambda README's "Grant function access" is not read for a Kinesis
 *   stream, nor "DynamoDB Streams" for its records), and none when the referent names no API. A
 *   header-only hit's own bridge is shown to the
 *   model but not counted here: it names one incidental property of the section's code as often
 *   as what the section is about ("fail" from a dead-letter property's summary, for the EventBridge
 *   Lambda target).
 * At most {@link MAX_READS} hits, continuations first, never one the result shows with a passage
 * (another search of the task may list it by header); none when no rule fires.
 */

/** Most hits the offline model reads for one task. */
export const MAX_READS = 2;

/** What the offline model reads before answering, and the rank a read chunk counts with. */
export interface ReadPlan {
  /** Citation ids (`[7]`) of the header-only hits to read, at most {@link MAX_READS}. */
  ids: string[];
  /**
   * The rank (0-based) of the passage hit that scores best for the question: a chunk read counts
   * with it (the model read it as the best passage's continuation, as better named than it, or as
   * naming what it lacks).
   */
  rank: number;
}

/** True for a hit listed by its header alone (no passage shown). */
export function headerOnly(hit: ExtractHit): boolean {
  return hit.text.trim() === '';
}

/**
 * The header-only hits of one search result worth reading for `question` (see the module
 * comment), from its hits in rank order. Hits are told to be of the same section by their
 * `source` (document path) and `title` (heading trail) as the rendered result gives them.
 */
export function readPlan(question: string, hits: readonly ExtractHit[]): ReadPlan {
  const weights = questionWeights(question, hits);
  const score = (text: string) => termsOf(text).reduce((sum, term) => sum + (weights.get(term) ?? 0), 0);
  const passages = hits.flatMap((hit, rank) => (headerOnly(hit) ? [] : [{ hit, rank }]));
  // A part that refers back (`(its: \`kinesis.Stream\`)`) is about its referent: a passage that
  // does not name it (the DynamoDB Streams section, for Kinesis records) is about something else.
  const subject = termsOf(/\([^():]+:\s*`([^`]+)`/.exec(question)?.[1] ?? '');
  const about = passages.filter(({ hit }) => {
    const terms = new Set(termsOf(`${hit.title ?? ''}\n${hit.text}`));
    return subject.every((term) => terms.has(term));
  });
  let best: { hit: ExtractHit; rank: number; score: number } | undefined;
  for (const { hit, rank } of about.length > 0 ? about : passages) {
    const covered = rankWeight(rank) * score(`${hit.title ?? ''}\n${hit.text}`);
    if (!best || covered > best.score) best = { hit, rank, score: covered };
  }
  if (!best || best.score === 0) return { ids: [], rank: 0 };
  const section = best.hit;
  const continuations = hits.filter(
    (hit) =>
      headerOnly(hit) &&
      hit.source !== undefined &&
      hit.source === section.source &&
      (hit.title ?? '') === (section.title ?? ''),
  );
  const bestTrail = Math.max(...passages.map(({ hit }) => score(hit.title ?? '')));
  // Two of the question's terms side by side ("Lambda integration") that no passage's heading has.
  const shown = new Set(passages.flatMap(({ hit }) => [...adjacentPairs(hit.title ?? '')]));
  const pairs = new Set([...adjacentPairs(question)].filter((pair) => !shown.has(pair)));
  const named = hits
    .filter(
      (hit) =>
        headerOnly(hit) &&
        score(hit.title ?? '') > bestTrail &&
        [...adjacentPairs(hit.title ?? '')].some((pair) => pairs.has(pair)),
    )
    .sort((a, b) => score(b.title ?? '') - score(a.title ?? ''));
  // What every passage, its trail and its bridge leave out of the question ("email", for the
  // SNS topic's policy passages): a header-only hit whose heading names it is read.
  const held = new Set(passages.flatMap(({ hit }) => [...holds(hit), ...termsOf(hit.text)]));
  const module = referentModule(question);
  const naming = hits.filter(
    (hit) =>
      headerOnly(hit) &&
      module !== null &&
      (module === undefined || termsOf(`${hit.source ?? ''}\n${hit.title ?? ''}`).includes(module)) &&
      termsOf(hit.title ?? '').some((term) => !held.has(term) && (weights.get(term) ?? 0) > 0),
  );
  // A chunk shown with a passage (by another search of the task: ids are shared) is not read again.
  const shownUrns = new Set(passages.map(({ hit }) => hit.urn));
  const ids = [...new Set([...continuations, ...named, ...naming].map((hit) => hit.urn))]
    .filter((urn) => !shownUrns.has(urn))
    .slice(0, MAX_READS);
  return { ids, rank: best.rank };
}

/**
 * The terms a hit's header holds: its heading trail, and the names of its `bridge` with their API
 * summaries (shared/search/bridge.ts: why the index matched it).
 */
function holds(hit: ExtractHit): Set<string> {
  return new Set(
    [hit.title ?? '', ...(hit.bridge ?? []).map(({ name, summary }) => `${name} ${summary}`)].flatMap(
      (text) => termsOf(text),
    ),
  );
}

/**
 * The module a part's referent belongs to, as an index term: the namespace of the API it names
 * (`(its: \`kinesis.Stream\`)` → `kinesi`, `(that topic: \`sns.ITopic\`)` → `sn`; the first API
 * when it names several); `undefined` for a part that refers back to nothing; `null` for a referent
 * that names no namespaced API (`(that topic: the SNS topic)`: the lookup found none), whose
 * module cannot be told. The class name is not used: `Stream` or `Topic` names the DynamoDB
 * stream or an IoT topic as well.
 */
function referentModule(question: string): string | null | undefined {
  const referent = REFERENT.exec(question);
  if (!referent) return undefined;
  const namespace = referentAliases(referent[2] ?? '')[0];
  return (namespace && processTerm(namespace)) || null;
}
