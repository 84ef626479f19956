import type { HitBridge } from '../search/port.js';
import { sourceLabel } from '../search/source-label.js';
import { identifierParts, processTerm, termsOf } from '../search/terms.js';

/**
 * Extractive answers of the offline model (issue 11): deterministic plumbing, no canned text.
 * What it emits is complete sentences and code blocks taken from the cited chunks:
 * - {@link segmentChunk} normalises a Markdown chunk before segmenting it: hard-wrapped lines of a
 *   paragraph are joined first; headings, link-reference definitions, tables, HTML, images and
 *   badges are dropped; fenced code is kept as a block;
 * - {@link extractiveAnswer} scores sentences by the question's terms (stems and identifier
 *   parts, shared/search/terms.ts), weighted by the rank of their hit, keeps only complete
 *   sentences, and adds the code block that best carries what the question is about, with the
 *   sentence that introduces it.
 */

/** A piece of a chunk: a complete sentence of prose, or a fenced code block. */
export type Segment =
  | { kind: 'sentence'; text: string; order: number }
  | { kind: 'code'; text: string; lang: string; order: number; intro?: string; antecedent?: string };

/** A search hit as the model sees it in a tool result. */
export interface ExtractHit {
  urn: string;
  text: string;
  /** The chunk's heading trail, when the tool gave one (counted for the hit's coverage, never quoted). */
  title?: string;
  /** The path of the chunk's document, when the tool gave one (`node_modules/aws-cdk-lib/aws-ssm/README.md`). */
  source?: string;
  /**
   * The rank (0-based) the hit counts with, when not its place in the list: a chunk the model
   * read (shared/llm/offline-read.ts: it continues the best passage's section, or its heading names
   * the question better or names what the passages lack) counts with the best passage's rank.
   */
  rank?: number;
  /**
   * Names of the hit's code whose API summary holds the question's words (the search tool's
   * `bridge`, shared/search/bridge.ts): a segment that spells one counts its summary's question
   * terms too, at {@link BRIDGE_WEIGHT}.
   */
  bridge?: HitBridge[];
}

/**
 * Weight of a question term that a segment holds only through the API summary of a name it spells
 * (the hit's `bridge`), relative to one it holds itself: the index's weight of the `api` field,
 * which put the hit there (shared/search/minisearch-index.ts `API_BOOST`) — the reference's words
 * describe the code, they are not the passage's own. A literal, so the model does not load the
 * index (test/llm/extract-bridge.test.ts holds the two equal). At 1 (issue 21, ninth round) it
 * answered q35 but led two fresh questions with another construct's code through a summary's
 * generic words ("construct"), so it stays at 0.5.
 */
export const BRIDGE_WEIGHT = 0.5;

/**
 * The question terms a segment holds through its hit's bridge, each with {@link BRIDGE_WEIGHT}:
 * the terms of the summary of each bridged name the segment spells (its index term, as
 * shared/search/terms.ts makes it, among the segment's), less those the segment holds itself.
 */
function bridgedTerms(
  held: ReadonlySet<string>,
  bridge: readonly HitBridge[] | undefined,
  weights: ReadonlyMap<string, number>,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const { name, summary } of bridge ?? []) {
    const term = processTerm(name);
    if (!term || !held.has(term)) continue;
    for (const t of termsOf(summary))
      if (!held.has(t) && (weights.get(t) ?? 0) > 0) out.set(t, BRIDGE_WEIGHT * (weights.get(t) as number));
  }
  return out;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)/;
const HEADING = /^ {0,3}#{1,6}(\s|$)/;
const SETEXT = /^ {0,3}(=+|-+)\s*$/;
const LINK_REFERENCE = /^ {0,3}\[[^\]]+\]:\s*\S+/;
const NOISE_LINE = /^\s*(\||<|!\[|\[!\[|---|\*\*\*|___)/;
const LIST_ITEM = /^\s*(?:[-*+]|\d{1,3}[.)])\s+/;
const segmenter = new Intl.Segmenter('en', { granularity: 'sentence' });

/** Longest sentence kept, in characters (longer ones are run-ons of lists or tables). */
const MAX_SENTENCE = 500;

/**
 * Splits a Markdown chunk into complete sentences and code blocks, in order (see the module
 * comment). A sentence is complete when it starts with a capital letter, a digit, a quote or
 * inline code and ends with `.`, `!`, `?` or `:`, and has at least four words. A code block
 * remembers the sentence directly before it (`intro`) when that ends with `:`, or is the last
 * sentence of the paragraph before it.
 */
export function segmentChunk(text: string): Segment[] {
  const segments: Segment[] = [];
  let order = 0;
  let paragraph: string[] = [];
  let lastSentence: string | undefined;
  let beforeLast: string | undefined;
  const flushParagraph = () => {
    if (paragraph.length === 0) return;
    const joined = paragraph.join(' ').replace(/\s+/g, ' ').trim();
    paragraph = [];
    lastSentence = undefined;
    beforeLast = undefined;
    // Inline code (`.AMAZONAWS.COM`, `s3.Bucket`) is shielded so its dots end no sentence.
    const spans: string[] = [];
    const shielded = joined.replace(/`[^`]*`/g, (span) => `\uE000${spans.push(span) - 1}\uE001`);
    for (const { segment } of segmenter.segment(shielded)) {
      const sentence = segment.trim().replace(/\uE000(\d+)\uE001/g, (_, i: string) => spans[Number(i)] ?? '');
      if (!isCompleteSentence(sentence)) continue;
      segments.push({ kind: 'sentence', text: sentence, order: order++ });
      beforeLast = lastSentence;
      lastSentence = sentence;
    }
  };
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    const line = (lines[i] as string).replace(/\r$/, '');
    const fence = FENCE.exec(line);
    if (fence) {
      flushParagraph();
      const marker = fence[1] as string;
      const body: string[] = [];
      let j = i + 1;
      for (; j < lines.length; j += 1) {
        const closing = FENCE.exec(lines[j] as string);
        if (
          closing &&
          (closing[1] as string)[0] === marker[0] &&
          (closing[1] as string).length >= marker.length
        )
          break;
        body.push((lines[j] as string).replace(/\r$/, ''));
      }
      // A fence cut off by the chunk's end is incomplete code: left out.
      if (j < lines.length && body.some((l) => l.trim() !== '')) {
        segments.push({
          kind: 'code',
          text: body.join('\n').replace(/^\n+|\s+$/g, ''),
          lang: fence[2] || '',
          order: order++,
          ...(lastSentence ? { intro: lastSentence } : {}),
          ...(lastSentence && beforeLast && dependent(lastSentence) && !dependent(beforeLast)
            ? { antecedent: beforeLast }
            : {}),
        });
      }
      lastSentence = undefined;
      beforeLast = undefined;
      i = j;
      continue;
    }
    const next = lines[i + 1];
    if (
      line.trim() === '' ||
      HEADING.test(line) ||
      LINK_REFERENCE.test(line) ||
      NOISE_LINE.test(line) ||
      (next !== undefined && SETEXT.test(next) && line.trim() !== '')
    ) {
      flushParagraph();
      if (next !== undefined && SETEXT.test(next) && line.trim() !== '') i += 1;
      continue;
    }
    if (LIST_ITEM.test(line)) flushParagraph();
    paragraph.push(line.replace(LIST_ITEM, '').replace(/^\s*>\s?/, ''));
  }
  flushParagraph();
  return segments;
}

/** True for a sentence that starts and ends like one and is long enough to stand alone. */
export function isCompleteSentence(sentence: string): boolean {
  if (sentence.length > MAX_SENTENCE) return false;
  if (!/^[\p{Lu}\p{N}`"'*_(]/u.test(sentence)) return false;
  if (!/[.!?:]["')*_`]*$/.test(sentence)) return false;
  if (/\]\(|\]\[|https?:\/\//.test(sentence) && sentence.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').length < 20)
    return false;
  return sentence.split(/\s+/).length >= 4;
}

/** Weight of a hit by its rank (0-based): 1, 0.67, 0.5, 0.4, ... */
export function rankWeight(rank: number): number {
  return 1 / (1 + rank / 2);
}

/**
 * A sentence that points at material around it ("the code snippet below", "in the above
 * example", "as described above"): said on its own it points at nothing the answer shows.
 */
const POINTER =
  /\b(?:(?:code|example|snippet|sample)s? (?:below|above)|(?:above|below|preceding|previous) (?:code|example|snippet|sample)s?|(?:shown|described|listed|covered|explained|mentioned|noted|see) (?:below|above)|the (?:following|preceding) (?:code|example|snippet|sample)s?|th(?:is|ese) (?:example|snippet|sample)s?)\b/i;

/**
 * True for a sentence that points at material around it ({@link POINTER}) and names no API in
 * inline code: out of place, it says nothing a user can act on ("In the above example, the
 * function defined in `MyTrigger`…" names one and stays).
 */
export function dangles(sentence: string): boolean {
  return POINTER.test(sentence) && !/`[^`]+`/.test(sentence);
}

/**
 * A sentence that leans on the one before it: it opens with a pronoun or determiner that points
 * back ("This method uses…", "For instance, you could use it to…"), not an expletive "It is
 * possible to…".
 */
const DEPENDENT = /^(?:This|These|That|Those|It|Its|They|Their|Such|For instance)\b/;
const EXPLETIVE = /^It(?:'s| is)(?: \w+){1,3} (?:to|that|if|when)\b/;

/** True for a sentence that leans on the one before it ({@link DEPENDENT}). */
export function dependent(sentence: string): boolean {
  return DEPENDENT.test(sentence) && !EXPLETIVE.test(sentence);
}

/** Most sentences in an answer. */
const MAX_SENTENCES = 3;
/** A second code block (of another document) is quoted when it scores at least this share of the best one. */
const SECOND_CODE_RATIO = 0.5;
/** Most lines of a code block quoted; a longer one is cut to the lines around its best match. */
const MAX_CODE_LINES = 18;

interface Scored<T> {
  item: T;
  urn: string;
  rank: number;
  score: number;
  /** How many of the question's names ({@link questionNames}) a code block lacks. */
  unnamed?: number;
}

/**
 * What a question rules out: the words after "instead of", "rather than", "without" or "not" (not
 * before a verb in -ing: {@link NEGATION}), up to the end of their clause, that the rest of the
 * question does not use ("read it at synthesis
 * time rather than with a deploy-time token" → `deploy`, `token`; "the message body rather than
 * message attributes" → `attribut`, not `messag`). Stems of shared/search/terms.ts.
 */
export function rejectedTerms(question: string): string[] {
  const rejected = new Set<string>();
  let rest = question;
  for (const match of question.matchAll(NEGATION)) {
    for (const term of termsOf(match[1] as string)) rejected.add(term);
    rest = rest.replace(match[0], ' ');
  }
  const kept = new Set(termsOf(rest));
  return [...rejected].filter((term) => !kept.has(term));
}

/**
 * A negation and the clause it rules out (to the next punctuation or conjunction). "not" and
 * "without" before a verb in -ing state what the user wants to be without ("save money by not
 * having any NAT gateways", "deploy without creating a role"), which the answer is about: that is
 * no alternative ruled out, unlike "rather than filtering on message attributes". Told by spelling:
 * three letters or more before the -ing ("without using X" still rules X out), and not the nouns
 * "string", "spring", "something", "anything", "nothing", "everything" ("a number, not string").
 */
const NEGATION =
  /\b(?:instead\s+of|rather\s+than|(?:without|not)(?!\s+(?!(?:string|spring|something|anything|nothing|everything)\b)[a-z]{3,}ing\b))\s+((?:(?!\b(?:and|but|so|then|or)\b)[^?.!,;()])+)/gi;

/** The question with what it rules out ({@link NEGATION}) taken out: what a search should look for. */
export function withoutRejected(question: string): string {
  return question
    .replace(NEGATION, ' ')
    .replace(/\s+([?.!,;])/g, '$1')
    .replace(/\s{2,}/g, ' ')
    .trim();
}

/**
 * A segment's match with the question counts to this power against its hit's rank weight: a
 * passage holding all of the question's terms outranks a higher-ranked one holding a few (the
 * chunk with the fact, ranked third, is used rather than the first hit's near miss).
 */
const MATCH_EXPONENT = 2;
/**
 * A term of what a part refers back to (`(that bucket: \`s3.Bucket\`)`), not used by the part
 * itself, counts this share of its weight: the earlier part was about it; this part asks the rest.
 */
const REFERENT_WEIGHT = 0.5;

/** A segment holding a term the question rules out counts this share of its score. */
const REJECTED_WEIGHT = 0.25;

/**
 * A code block counts this share of its score for each name of the question ({@link
 * questionNames}) it lacks that another code block holds: like a segment holding a rejected
 * term, it is about something else (`S3` asked, the EventBridge Scheduler's code shown).
 */
const UNNAMED_WEIGHT = 0.25;

/**
 * A code block that uses nothing of the module of the API a part refers back to (`(its:
 * \`kinesis.Stream\`)`: no `kinesis.…`, nor `sm.…` with `sm` imported from `aws-secretsmanager`)
 * counts this share of its score when another block of the hits uses it: asked to process a
 * Kinesis stream's records, Amazon Data Firehose's Lambda processor is about something else.
 */
const OFF_REFERENT_WEIGHT = 0.25;

/** A part that asks to make something: "How do I create / define / set up / provision …". */
const CREATES = /^How (?:do|can|should|would) (?:I|we|you) (?:create|define|set up|provision)\b/i;

/**
 * A code block that only imports what exists (`kms.Key.fromKeyArn(…)`, `ec2.Vpc.fromLookup(…)`)
 * counts this share of its score for a part that asks to create something ({@link CREATES}), when
 * another block does more: "How do I create a KMS key?" is not answered by importing one.
 */
const IMPORT_WEIGHT = 0.25;

/**
 * True for code that imports an existing resource — a `from…` factory taking the construct scope
 * first (`Key.fromKeyArn(this, …)`, not a value factory such as `Code.fromAsset(…)`) — and
 * constructs nothing (`new x.Y(`, generics included).
 */
export function importsOnly(code: string): boolean {
  const identifiers = codeIdentifiers(code);
  return (
    /\.from[A-Z][\w$]*\(\s*(?:this|scope|stack)\b/.test(identifiers) &&
    !/\bnew\s+[\w$.]*[A-Z][\w$]*\s*(?:<[^>]*>)?\s*\(/.test(identifiers)
  );
}

/**
 * Scales by `weight` the score of each code block `holds` refuses, when it accepts another (each
 * block tested once): a block lacking what another holds is about something else.
 */
function demoteUnless(
  codes: readonly Scored<Extract<Segment, { kind: 'code' }>>[],
  holds: (code: string) => boolean,
  weight: number,
): void {
  const fits = codes.map((c) => holds(c.item.text));
  if (!fits.some(Boolean)) return;
  codes.forEach((c, i) => {
    if (!fits[i]) c.score *= weight;
  });
}

/**
 * The module aliases of the APIs a referent names (`` `lambda.Function`, `dynamodb.Table` `` →
 * `lambda`, `dynamodb`).
 */
export function referentAliases(names: string): string[] {
  return [...new Set([...names.matchAll(/`([\w$]+)\.[\w$]+[^`]*`/g)].map((m) => m[1] as string))];
}

/**
 * True when `code` uses a type of one of these modules: `alias.Name` (a capitalised name) with
 * the alias itself, or with another alias the code imports the module as (`import * as sm from
 * 'aws-cdk-lib/aws-secretsmanager'` for `secretsmanager`).
 */
export function usesModule(code: string, aliases: readonly string[]): boolean {
  // The modules the block imports, by the alias it gives them: `import * as sm from '…/aws-secretsmanager'`.
  const imports = new Map<string, string>();
  for (const [, alias, path] of code.matchAll(/import \* as ([\w$]+) from ['"]([^'"]*)['"]/g))
    imports.set(alias as string, (path as string).split('/').at(-1)?.replace(/^aws-/, '') ?? '');
  // Uses in the code itself, not in its comments and strings.
  for (const [, used] of codeIdentifiers(code).matchAll(/(?<![\w$])([\w$]+)\.[A-Z][\w$]*/g)) {
    if (aliases.includes(used as string)) return true;
    const module = imports.get(used as string);
    if (module !== undefined && aliases.includes(module)) return true;
  }
  return false;
}

/**
 * A word the question writes as a name: capitalised (`EventBridge`, `SQS`) or of letters and digits
 * (`s3`, `ec2`); a number alone is none, though it continues one (`Route 53`).
 */
const NAME_WORD = /^(?:\p{Lu}|(?=.*\p{L})(?=.*\p{N}))/u;

/**
 * The names a question gives: each run of words it writes as names ({@link NAME_WORD}; its first
 * word, what it puts in parentheses and what it rules out, {@link withoutRejected}, left out) —
 * the services, products and APIs it is about (`S3`, `EventBridge`, `SSM Parameter Store`, `Route
 * 53`) — as the index terms of the run's words (shared/search/terms.ts) and, for a run of several
 * words, of their compound (`route53`). "How do I send S3 object events to EventBridge?" → `s3`;
 * `eventbridg`, `event`, `bridg`.
 */
export function questionNames(question: string): string[][] {
  const tokens =
    withoutRejected(question.replace(/\([^()]*\)/g, ' , ')).match(/[\p{L}\p{N}_$]+|[^\s\p{L}\p{N}_$]+/gu) ??
    [];
  const runs: string[][] = [];
  let run: string[] = [];
  tokens.forEach((token, i) => {
    if (i > 0 && (NAME_WORD.test(token) || (run.length > 0 && /^\p{N}+$/u.test(token)))) run.push(token);
    else if (run.length > 0) {
      runs.push(run);
      run = [];
    }
  });
  if (run.length > 0) runs.push(run);
  return runs
    .map((words) => [
      ...new Set([
        ...words.flatMap((word) => termsOf(word)),
        ...(words.length > 1 ? termsOf(words.join('')) : []),
      ]),
    ])
    .filter((terms) => terms.length > 0);
}

/**
 * Two terms the question writes side by side ("an S3 Bucket Key") that a segment also holds side
 * by side (`bucketKeyEnabled`, "S3 Bucket Keys", `dynamodb.Table`) add this share of their mean
 * weight: the passage names the same thing, not the same words apart.
 */
const ADJACENT_WEIGHT = 0.5;

/** Words and identifiers, as shared/search/terms.ts tokenizes them (dots and spaces between them are gaps). */
const WORD_TOKEN = /[\p{L}\p{N}_$]+(?:-[\p{L}\p{N}_$]+)*/gu;
/** What may stand between two terms that are still side by side: spaces, a dot, Markdown emphasis or code marks. */
const ADJACENT_GAP = /^[\s.`*_]*$/;

/**
 * The pairs of index terms (shared/search/terms.ts: stemmed, stopwords dropped) that stand side by
 * side in `text`, as `"a b"`: consecutive parts of one identifier (`bucketKeyEnabled` → `bucket
 * kei`, `kei enabl`), or consecutive words with only spaces, a dot or Markdown marks between them
 * (`s3.Bucket`, "S3 Bucket Key"). A stopword or other punctuation between two words parts them.
 */
export function adjacentPairs(text: string): Set<string> {
  const pairs = new Set<string>();
  let previous: string | undefined;
  let end = 0;
  for (const match of text.matchAll(WORD_TOKEN)) {
    if (!ADJACENT_GAP.test(text.slice(end, match.index))) previous = undefined;
    end = match.index + match[0].length;
    for (const part of identifierParts(match[0])) {
      const term = processTerm(part);
      if (term && previous && term !== previous) pairs.add(`${previous} ${term}`);
      previous = term ?? undefined;
    }
  }
  return pairs;
}

/** What a part refers back to, at the end of its question: `(that bucket: \`s3.Bucket\`)`. */
export const REFERENT = /\(([^():]+):\s*([^()]+)\)\s*$/;

/**
 * The weight of each of the question's terms (stems of shared/search/terms.ts; what the question
 * rules out, {@link rejectedTerms}, is none) in these hits: 1 + ln(hits / hits whose heading
 * trail, text as a reader sees it ({@link visibleText}) or bridge summaries hold the term), 0 for a term no hit holds; a term only the part's referent
 * (`(that bucket: \`s3.Bucket\`)`) uses counts {@link REFERENT_WEIGHT} of it — the earlier part
 * was about it, this part asks the rest.
 */
export function questionWeights(question: string, hits: readonly ExtractHit[]): Map<string, number> {
  const rejected = new Set(rejectedTerms(question));
  // A hit holds the terms of its bridge's summaries too: the index matched it by them.
  const hitTerms = hits.map(
    (hit) =>
      new Set([
        ...termsOf(`${hit.title ?? ''}\n${visibleText(hit.text)}`),
        ...(hit.bridge ?? []).flatMap(({ summary }) => termsOf(summary)),
      ]),
  );
  const referent = REFERENT.exec(question);
  const asked = new Set(termsOf(referent ? question.slice(0, referent.index) : question));
  return new Map(
    termsOf(question)
      .filter((term) => !rejected.has(term))
      .map((term) => {
        const df = hitTerms.filter((terms) => terms.has(term)).length;
        const idf = df === 0 ? 0 : 1 + Math.log(hits.length / df);
        return [term, asked.has(term) ? idf : REFERENT_WEIGHT * idf];
      }),
  );
}

/**
 * The offline answer to `question` from search hits (best first). Question terms are weighted
 * by how few hits contain them (1 + ln(hits / hits with the term)), so the subject that tells
 * neighbouring modules apart ("S3" in "send S3 events to EventBridge") counts more than the words
 * every hit shares. A hit's sentences and code count by its rank, by its coverage of the
 * question (heading trail and text, relative to the best-covering hit), times its match with
 * the question squared ({@link MATCH_EXPONENT}); a code block matches by the terms it, its
 * introducing sentence and its hit's heading trail hold (each once: the heading names what the
 * code under it does) plus those its code spells. The terms of a referent the
 * part names (`(it: \`ecs.FargateService\`)`) count {@link REFERENT_WEIGHT}. What the question
 * rules out ({@link rejectedTerms}) is no question term, and a segment holding it counts
 * {@link REJECTED_WEIGHT} of its score. Two terms the part writes side by side ("S3 Bucket Key")
 * that a segment holds side by side too (`bucketKeyEnabled`; {@link adjacentPairs}) add
 * {@link ADJACENT_WEIGHT} of their mean weight times ln(hits / hits holding the pair). A code
 * block counts {@link UNNAMED_WEIGHT} for each name the part gives ({@link questionNames}: `S3`,
 * `EventBridge`) that its heading trail, introducing sentence and identifiers lack, beyond those
 * the block lacking fewest lacks: asked about S3 events, the Scheduler's EventBridge code is about
 * something else. For a part that refers back, a block using nothing of the referent's module
 * counts {@link OFF_REFERENT_WEIGHT} when another block uses it ({@link usesModule}); for a part
 * that asks to create something, a block that only imports an existing one counts
 * {@link IMPORT_WEIGHT} ({@link importsOnly}).
 *
 * The answer leads with the fact: it opens with the best-scoring sentence or code block (a code
 * block with the sentence that introduces it), then up to two more sentences in reading order and
 * the code block of another chunk or document that scores at least half as well. A sentence that
 * holds none of the question's key terms (those rarer in the hits than the median term) is left
 * out; so is a sentence ending in `:` (it introduces a code block, and is said only before it).
 * A sentence is said once: one the prose said is not said again before the block it introduces.
 * Then the sources used, each as its document and heading (`aws-ssm README › Lookups`) and
 * URN. Returns the no-match sentence when nothing shares a term with the question.
 */
export function extractiveAnswer(question: string, hits: readonly ExtractHit[]): string {
  if (hits.length === 0)
    return 'Nothing matched: no passage of the ingested documents contains the words of this question.';
  const rejected = new Set(rejectedTerms(question));
  const hitTerms = hits.map((hit) => new Set(termsOf(`${hit.title ?? ''}\n${visibleText(hit.text)}`)));
  const referent = REFERENT.exec(question);
  const weights = questionWeights(question, hits);
  const key = keyTerms(weights);
  // Terms the part writes side by side (not its referent's: the earlier part was about that).
  // A pair counts by how few hits hold it side by side (ln(hits / hits with the pair)): one that
  // every hit spells (`kms.Key` in a KMS question) tells no passage apart.
  const hitPairs = hits.map((hit) => adjacentPairs(`${hit.title ?? ''}\n${hit.text}`));
  const pairWeights = new Map(
    [...adjacentPairs(referent ? question.slice(0, referent.index) : question)].flatMap((pair) => {
      const [a, b] = pair.split(' ') as [string, string];
      const mean = ((weights.get(a) ?? 0) + (weights.get(b) ?? 0)) / 2;
      const df = hitPairs.filter((pairs) => pairs.has(pair)).length;
      const w = df === 0 ? 0 : ADJACENT_WEIGHT * mean * Math.log(hits.length / df);
      return w > 0 ? [[pair, w] as const] : [];
    }),
  );
  // `bridge`: the hit's bridged names; a segment spelling one holds its summary's question terms too.
  const weigh = (text: string, bridge?: readonly HitBridge[]) => {
    const terms = new Set(termsOf(text));
    let sum = [...terms].reduce((total, term) => total + (weights.get(term) ?? 0), 0);
    if (bridge) for (const w of bridgedTerms(terms, bridge, weights).values()) sum += w;
    if (pairWeights.size > 0) for (const pair of adjacentPairs(text)) sum += pairWeights.get(pair) ?? 0;
    return [...terms].some((term) => rejected.has(term)) ? sum * REJECTED_WEIGHT : sum;
  };
  // The names the part gives (not its referent's: the earlier part was about that).
  const names = questionNames(referent ? question.slice(0, referent.index) : question);
  const lacks = (text: string) => {
    const held = new Set(termsOf(text));
    return names.filter((name) => !name.some((term) => held.has(term))).length;
  };
  const rankOf = (rank: number) => hits[rank]?.rank ?? rank;
  // A hit covers the question by its heading and text, and at BRIDGE_WEIGHT by its bridge's summaries.
  const coverage = hitTerms.map((terms, rank) => {
    let sum = [...terms].reduce((total, term) => total + (weights.get(term) ?? 0), 0);
    const bridged = new Set((hits[rank]?.bridge ?? []).flatMap(({ summary }) => termsOf(summary)));
    for (const term of bridged) if (!terms.has(term)) sum += BRIDGE_WEIGHT * (weights.get(term) ?? 0);
    return rankWeight(rankOf(rank)) * sum;
  });
  const most = Math.max(...coverage);
  const sentences: Scored<Extract<Segment, { kind: 'sentence' }>>[] = [];
  const codes: Scored<Extract<Segment, { kind: 'code' }>>[] = [];
  hits.forEach((hit, place) => {
    const rank = rankOf(place);
    // A hit counts by its rank and by how much of the question its heading and text cover.
    const weight = rankWeight(rank) * (most > 0 ? 0.5 + (0.5 * (coverage[place] ?? 0)) / most : 1);
    for (const segment of segmentChunk(hit.text)) {
      // A sentence counts by what a reader sees of it; code as it is.
      const seen = segment.kind === 'sentence' ? visibleText(segment.text) : segment.text;
      const matched = weigh(seen, hit.bridge);
      if (matched === 0) continue;
      if (segment.kind === 'sentence') {
        const bridgedKey =
          hit.bridge !== undefined &&
          [...bridgedTerms(new Set(termsOf(seen)), hit.bridge, weights).keys()].some((t) => key.has(t));
        if (!holdsAny(seen, key) && !bridgedKey) continue;
        const identifier = /`[^`]+`/.test(segment.text) ? 0.5 : 0;
        sentences.push({
          item: segment,
          urn: hit.urn,
          rank,
          score: weight * (matched + identifier) ** MATCH_EXPONENT,
        });
      } else {
        // Code counts by its identifiers (what a user types), not by its comments and strings:
        // the question terms it, its introducing sentence and its heading trail hold together
        // (each once: the heading names what the code under it does), plus
        // those the code itself spells (an intro that restates the question is no second match).
        const identifiers = codeIdentifiers(segment.text);
        const scope = `${hit.title ?? ''}\n${visibleText(segment.intro ?? '')}\n${identifiers}`;
        const score = weight * (weigh(scope, hit.bridge) + weigh(identifiers, hit.bridge)) ** MATCH_EXPONENT;
        codes.push({ item: segment, urn: hit.urn, rank, score, unnamed: lacks(scope) });
      }
    }
  });
  // A sentence ending in ":" introduces what follows it: said only before its own code, so it
  // takes no place among the sentences the answer says.
  // A sentence pointing at code it does not name ("The code snippet below creates…") points at
  // nothing on its own: said only before its own block.
  const chosen = pickSentences(sentences.filter((c) => !c.item.text.endsWith(':') && !dangles(c.item.text)));
  // A block lacking a name the question gives, which another block holds, is about something else.
  const fewest = Math.min(...codes.map((c) => c.unnamed ?? 0));
  for (const c of codes) c.score *= UNNAMED_WEIGHT ** ((c.unnamed ?? 0) - fewest);
  // Asked to create something, code that only imports an existing one is the alternative not asked for.
  if (CREATES.test(question)) demoteUnless(codes, (code) => !importsOnly(code), IMPORT_WEIGHT);
  // A block using nothing of the module of what the part refers back to, when another does, is
  // about something else.
  const aliases = referent ? referentAliases(referent[2] ?? '') : [];
  if (aliases.length > 0) demoteUnless(codes, (code) => usesModule(code, aliases), OFF_REFERENT_WEIGHT);
  const ranked = [...codes].sort(
    (a, b) => b.score - a.score || a.rank - b.rank || a.item.order - b.item.order,
  );
  // The best code block and, when close enough, the best one of another chunk and of another
  // document (a question often spans two sections or two modules: S3 events → EventBridge).
  const best = ranked[0];
  // A hit's document: its source path when given (a citation id such as `[3]` names no document).
  const sourceOf = new Map(hits.map((hit) => [hit.urn, hit.source]));
  const documentOf = (urn: string) => sourceOf.get(urn) ?? urn.replace(/\/[^/]*$/, '');
  const close = (c: (typeof ranked)[number]) =>
    best !== undefined && c.score >= SECOND_CODE_RATIO * best.score;
  const otherChunk = ranked.find((c) => best && c.urn !== best.urn && close(c));
  const otherDocument = ranked.find((c) => best && documentOf(c.urn) !== documentOf(best.urn) && close(c));
  const blocks = [...new Set([best, otherChunk, otherDocument])].filter(
    (c): c is (typeof ranked)[number] => c !== undefined,
  );
  if (chosen.length === 0 && blocks.length === 0)
    return /[a-z0-9]/i.test(question)
      ? 'Nothing matched: the passages found do not contain the words of this question.'
      : 'Nothing matched: this question has no words the offline model can search for (it reads Latin-alphabet words).';
  const quote = (code: (typeof ranked)[number]) =>
    `\`\`\`${code.item.lang}\n${excerpt(code.item.text, weights, code.item.lang, rejected)}\n\`\`\``;
  const prose = chosen;
  const topSentence = [...prose].sort((a, b) => b.score - a.score)[0];
  const codeLeads = best !== undefined && (topSentence === undefined || best.score > topSentence.score);
  const parts: string[] = [];
  const said = new Set<string>();
  const sayCode = (code: (typeof ranked)[number]) => {
    const intro = code.item.intro;
    if (intro && !said.has(intro) && holdsAny(visibleText(intro), key)) {
      // An intro that leans on the sentence before it ("This method uses…") is said with it.
      const antecedent = code.item.antecedent;
      parts.push(antecedent && !said.has(antecedent) ? `${antecedent} ${intro}` : intro);
      said.add(intro);
      if (antecedent) said.add(antecedent);
    }
    parts.push(quote(code));
  };
  if (codeLeads) sayCode(best);
  else if (topSentence) said.add(topSentence.item.text);
  const rest = prose.filter((c) => !said.has(c.item.text)).map((c) => c.item.text);
  const lead = codeLeads || !topSentence ? [] : [topSentence.item.text];
  if (lead.length || rest.length) parts.push([...lead, ...rest].join(' '));
  // A sentence the prose said, which introduces a block said after it, is not said again.
  for (const text of rest) said.add(text);
  for (const code of blocks) if (!(codeLeads && code === best)) sayCode(code);
  const used = [...new Set([...chosen.map((c) => c.urn), ...blocks.map((c) => c.urn)])];
  const byUrn = new Map(hits.map((hit) => [hit.urn, hit]));
  const sources = used.map((urn) => {
    const label = sourceLabel(byUrn.get(urn));
    return label ? `- ${label} (${urn})` : `- ${urn}`;
  });
  return `${parts.join('\n\n')}\n\nSources:\n${sources.join('\n')}`;
}

/**
 * The key terms of a question: those with a weight at least the median weight of the terms found
 * in the hits (the rarer half: what tells the right passage apart).
 */
function keyTerms(weights: ReadonlyMap<string, number>): Set<string> {
  const found = [...weights.values()].filter((w) => w > 0).sort((a, b) => a - b);
  if (found.length === 0) return new Set();
  const median = found[Math.floor((found.length - 1) / 2)] as number;
  return new Set([...weights].filter(([, w]) => w > 0 && w >= median).map(([term]) => term));
}

/**
 * What a reader sees of Markdown prose: a link's text without its target, bare URLs left out.
 * A sentence counts by the words it shows: "[dead letter queue](https://…/eventbridge/…/rule-dlq.html)"
 * says nothing about EventBridge rules.
 */
export function visibleText(text: string): string {
  return text
    .replace(/\[([^\]]*)\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+"[^"]*")?\)/g, '$1')
    .replace(/<?https?:\/\/[^\s>`]+>?/g, ' ');
}

function holdsAny(text: string, terms: ReadonlySet<string>): boolean {
  return termsOf(text).some((term) => terms.has(term));
}

/** How a citation reads (`aws-ssm README › Lookups`): shared/search/source-label.ts. */
export { sourceLabel } from '../search/source-label.js';

/** Code without its comments and string literals: the identifiers and keywords a user types. */
export function codeIdentifiers(code: string): string {
  return code
    .replace(/\/\*[\s\S]*?\*\//g, ' ')
    .replace(/(^|[^:])\/\/.*$/gm, '$1 ')
    .replace(/^\s*#.*$/gm, ' ')
    .replace(/'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`/g, ' ');
}

/** The best sentences, at most {@link MAX_SENTENCES}, without repeats, in their hit's reading order. */
function pickSentences(
  scored: readonly Scored<Extract<Segment, { kind: 'sentence' }>>[],
): Scored<Extract<Segment, { kind: 'sentence' }>>[] {
  const ranked = [...scored].sort(
    (a, b) => b.score - a.score || a.rank - b.rank || a.item.order - b.item.order,
  );
  const chosen: typeof ranked = [];
  for (const candidate of ranked) {
    if (chosen.length === MAX_SENTENCES) break;
    if (chosen.some((c) => c.item.text === candidate.item.text)) continue;
    chosen.push(candidate);
  }
  return chosen.sort((a, b) => a.rank - b.rank || a.item.order - b.item.order);
}

/** Lines of a long code block's opening statement kept above an excerpt, at most. */
const HEAD_LINES = 3;

/**
 * The whole code when short, else an excerpt of at most {@link MAX_CODE_LINES} lines: the block's
 * opening statement (its first lines up to one that opens a bracket, at most {@link HEAD_LINES}),
 * then the lines around the line that best matches the question — by the summed weights of the
 * question terms it holds (`terms`: a set counts each term 1, a map its weight), a line holding a
 * `rejected` term counting {@link REJECTED_WEIGHT} of it — with an elision comment wherever lines
 * are left out, so the excerpt never starts in the middle of an expression without saying so.
 * The window opens on the statement that holds the best line (`new CompositeAlarm(…`), not above it.
 */
export function excerpt(
  code: string,
  terms: ReadonlySet<string> | ReadonlyMap<string, number>,
  lang = '',
  rejected: ReadonlySet<string> = new Set(),
): string {
  const lines = code.split('\n');
  if (lines.length <= MAX_CODE_LINES) return code;
  const weightOf = (term: string) =>
    terms instanceof Map ? (terms.get(term) ?? 0) : (terms as ReadonlySet<string>).has(term) ? 1 : 0;
  let best = 0;
  let bestScore = -1;
  lines.forEach((line, i) => {
    const lineTerms = termsOf(codeIdentifiers(line) || line);
    const sum = lineTerms.reduce((total, term) => total + weightOf(term), 0);
    const score = lineTerms.some((term) => rejected.has(term)) ? sum * REJECTED_WEIGHT : sum;
    if (score > bestScore) {
      best = i;
      bestScore = score;
    }
  });
  const opener = lines.slice(0, HEAD_LINES).findIndex((line) => /[{([]\s*$/.test(line));
  const head = opener === -1 ? 0 : opener + 1;
  // Room for the window: the head and up to two elision lines are counted in the limit.
  const room = MAX_CODE_LINES - head - 2;
  // The statement holding the best line starts at the nearest line above it at its own indent
  // or less that follows a line ending a statement (or a blank line); never more than a third
  // of the room above.
  let statement = best;
  const indent = (line: string) => /^\s*/.exec(line)?.[0].length ?? 0;
  while (
    statement > head &&
    best - statement < Math.floor(room / 3) &&
    !/^\s*$|[;})\]]\s*,?\s*$/.test(lines[statement - 1] ?? '') &&
    indent(lines[statement - 1] ?? '') >= indent(lines[best] ?? '') - 2
  )
    statement -= 1;
  let start = Math.max(head, Math.min(statement, lines.length - room));
  // A window that would leave out only the line after the head takes it instead.
  if (start === head + 1) start = head;
  // Nor does it open on a blank line or on the close of something it left out.
  while (start < best && start > head && /^\s*(?:[}\])].*)?$/.test(lines[start] ?? '')) start += 1;
  const end = Math.min(lines.length, start + room);
  const elision = (next: string | undefined) =>
    `${/^\s*/.exec(next ?? '')?.[0] ?? ''}${elisionComment(lang)}`;
  const out = lines.slice(0, head);
  if (start > head) out.push(elision(lines[start]));
  out.push(...lines.slice(start, end));
  if (end < lines.length) out.push(elision(lines[end - 1]));
  return out.join('\n');
}

/** A comment saying lines were left out, in the block's language (`// …`, `# …`, or `…`). */
function elisionComment(lang: string): string {
  const language = lang.toLowerCase();
  if (
    /^(ts|tsx|typescript|js|jsx|javascript|java|go|cs|csharp|kotlin|scala|swift|rust|c|cpp|json5)$/.test(
      language,
    )
  )
    return '// …';
  if (/^(py|python|sh|bash|shell|console|yaml|yml|toml|ruby|rb|dockerfile|hcl|ini)$/.test(language))
    return '# …';
  return '…';
}
