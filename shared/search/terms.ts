import { stemmer } from 'stemmer';

/**
 * Term processing of the chunk index (shared/search/minisearch-index.ts), used for documents and
 * queries alike so both sides meet:
 * - {@link tokenize}: words and identifiers; an identifier is kept whole *and* split into its
 *   parts (`eventBridgeEnabled` → `eventBridgeEnabled`, `event`, `Bridge`, `Enabled`;
 *   `BLOCK_ALL` → `BLOCK_ALL`, `BLOCK`, `ALL`; `aws-s3` → `aws-s3`, `aws`, `s3`), so
 *   "EventBridge enabled", "event bridge enabled" and `eventBridgeEnabled` share terms;
 * - {@link processTerm}: lower case, English stopwords dropped, then the Porter stemmer (the
 *   `stemmer` package), so "encryption"/"encrypt", "versioned"/"versioning" and
 *   "concurrency"/"concurrent" meet; a few stems that name the same thing meet too
 *   ("daily"/"day", "inbound"/"ingress": {@link SAME_TERM}).
 */

/** Words, identifiers and dotted/hyphenated names: runs of letters, digits, `_`, `$`, joined by `-`. */
const TOKEN = /[\p{L}\p{N}_$]+(?:-[\p{L}\p{N}_$]+)*/gu;

/**
 * Boundaries inside an identifier: lower→Upper (`eventBridge`), digit→Upper (`s3Bucket`) and
 * ACRONYM→Word (`HTTPApi`); never letter→digit, so `s3`, `ec2` and `ipv6` stay whole.
 */
const CAMEL_BOUNDARY = /(?<=[\p{Ll}\p{N}])(?=\p{Lu})|(?<=\p{Lu})(?=\p{Lu}\p{Ll})/u;

/** English function words and question words that carry no topic (lower case). */
export const STOPWORDS: ReadonlySet<string> = new Set(
  `a about above after again against all am an and any are as at be because been before being below between both
  but by can could did do does doing down during each few for from further had has have having he her here hers
  how i if in into is it its itself just me more most my no nor not of off on once only or other our ours out over
  own same she should so some such than that the their theirs them then there these they this those through to too
  under until up very was we were what when where which while who whom why will with would you your yours
  want wants need needs let lets make get set use using used way ways like example e g eg`.split(/\s+/),
);

/**
 * Tokens of a text for the index: every word or identifier, and for identifiers with inner
 * boundaries (camelCase, snake_case, kebab-case) their parts after the whole. Case is kept
 * ({@link processTerm} lowers it). Linear in the text's length.
 */
export function tokenize(text: string): string[] {
  const tokens: string[] = [];
  for (const match of text.matchAll(TOKEN)) {
    const token = match[0];
    tokens.push(token);
    const parts = identifierParts(token);
    if (parts.length > 1) tokens.push(...parts);
  }
  return tokens;
}

/**
 * Parts of an identifier: split at `-`, `_`, `$` and camel-case boundaries
 * (`eventBridgeEnabled` → `event`, `Bridge`, `Enabled`; `HTTPApi` → `HTTP`, `Api`;
 * `ARM_64` → `ARM`, `64`). A plain word is its own single part.
 */
export function identifierParts(identifier: string): string[] {
  return identifier
    .split(/[-_$]+/)
    .flatMap((piece) => piece.split(CAMEL_BOUNDARY))
    .filter((part) => part.length > 0);
}

/**
 * The index term of a token: lower case and Porter-stemmed; `null` for stopwords and single
 * characters other than digits (MiniSearch drops a term for which `processTerm` returns a falsy
 * value).
 */
export function processTerm(token: string): string | null {
  const term = token.toLowerCase();
  if (STOPWORDS.has(term)) return null;
  if (term.length === 1 && !/\p{N}/u.test(term)) return null;
  // Identifiers with digits or separators (`s3`, `arm_64`, `aws-s3`) are kept as they are.
  if (!/^\p{L}+$/u.test(term)) return term;
  const stem = stemmer(term);
  return SAME_TERM.get(stem) ?? stem;
}

/**
 * Stems that name the same thing as another stem, mapped to it: adjectives of time units that the
 * Porter stemmer leaves apart (`daily` → `daili`, `day` → `dai`: "back up every day" meets
 * `BackupPlanRule.daily()`), and the console's words for AWS's API names of traffic direction
 * ("inbound"/"outbound" rules of a security group are its `ingress`/`egress` rules:
 * `addIngressRule`).
 */
const SAME_TERM: ReadonlyMap<string, string> = new Map([
  ['daili', 'dai'],
  ['hourli', 'hour'],
  ['weekli', 'week'],
  ['monthli', 'month'],
  ['yearli', 'year'],
  ['nightli', 'night'],
  ['inbound', 'ingress'],
  ['outbound', 'egress'],
]);

/** The distinct index terms of a text, in order of first occurrence (what a query is searched for). */
export function termsOf(text: string): string[] {
  const seen = new Set<string>();
  for (const token of tokenize(text)) {
    const term = processTerm(token);
    if (term) seen.add(term);
  }
  return [...seen];
}

/** Two words side by side: a run of letters or digits, blanks, another run (no punctuation between). */
const WORD_PAIR = /(?<![\p{L}\p{N}_$.-])([\p{L}\p{N}]+)\s+(?=([\p{L}\p{N}]+)(?![\p{L}\p{N}_$.-]))/gu;

/**
 * The compounds a query's adjacent content words would make as one identifier ("security group" →
 * `securitygroup`, "bucket key" → `bucketkey`, "event bus" → `eventbus` and its stem `eventbu`),
 * lower case: API names join the words a user writes apart (`SecurityGroup`, `bucketKeyEnabled`,
 * `EventBus`), and the index keeps each identifier whole ({@link tokenize}), so a compound finds
 * the chunks that spell the API by prefix. Pairs with a stopword or a single letter are none.
 */
export function joinedTerms(query: string): string[] {
  const joined = new Set<string>();
  for (const match of query.matchAll(WORD_PAIR)) {
    const [a, b] = [match[1] as string, match[2] as string];
    if (!processTerm(a) || !processTerm(b) || a.length < 2 || b.length < 2) continue;
    const compound = `${a}${b}`.toLowerCase();
    joined.add(compound);
    const stem = processTerm(compound);
    if (stem) joined.add(stem);
  }
  return [...joined];
}
