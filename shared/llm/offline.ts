import { parseRenderedHits } from '../context/render-results.js';
import { countTokens } from '../context/tokens.js';
import {
  type CorrectivePayload,
  CREATE_PLAN,
  SUBMIT_VERDICT,
  TASK_TEXT_LIMITS,
  type TaskPayload,
} from '../domain/payloads.js';
import { type HitBridge, hitBridges } from '../search/port.js';
import { contentWords, cosine, HashingEmbedder } from '../search/similarity.js';
import { identifierParts, processTerm, termsOf } from '../search/terms.js';
import { type ExtractHit, extractiveAnswer, withoutRejected } from './extract.js';
import { graphAnswer, isStructuralQuestion, latestGraphResult, nextGraphCall } from './offline-graph.js';
import { headerOnly, readPlan } from './offline-read.js';
import type {
  ChatModel,
  ContentBlock,
  ConverseMessage,
  ConverseRequest,
  ConverseResponse,
  JsonValue,
  ToolSpec,
} from './port.js';

/**
 * The offline model: deterministic, no network, chosen when no model is configured and shown
 * as "model: offline". It is honest plumbing for running the whole system without a model, not
 * a pretend LLM (issue 2, part 6):
 * - planner (`create_plan` offered): one task per numbered/bulleted item, question, or
 *   `then`/`;` clause; several parts become one root task with subtasks; a part that refers to
 *   an earlier one ("that bucket", "it") names the referent in its purpose ({@link resolveReferences});
 * - inner loop: calls the tool whose description best matches the task, with the task's
 *   question (and referent) as its text argument, within the document a corrective task names;
 *   given tool results, answers extractively (shared/llm/extract.ts: complete sentences and the
 *   code block that carries the question's subject, from the cited chunks) and cites them;
 * - supervisor (`submit_verdict` offered): judges each subtask against its evaluation
 *   ({@link judge}): an error, an empty output, no citation, a "how do I" answer without an
 *   identifier or code, or fewer than half of the key terms fail it; a failing subtask gets one
 *   corrective subtask that searches again within the document its answer cited.
 * It reads only the Converse request, like a real model.
 */
export class OfflineChatModel implements ChatModel {
  readonly name = 'offline';
  private readonly embedder = new HashingEmbedder();

  async converse(request: ConverseRequest): Promise<ConverseResponse> {
    const tools = request.toolConfig?.tools.map((t) => t.toolSpec) ?? [];
    let content: ContentBlock[];
    if (tools.some((t) => t.name === CREATE_PLAN))
      content = [toolUse(CREATE_PLAN, 'plan', plan(lastUserText(request)))];
    else if (tools.some((t) => t.name === SUBMIT_VERDICT)) {
      content = [toolUse(SUBMIT_VERDICT, 'verdict', verdict(lastUserText(request)))];
    } else content = await this.innerLoop(request, tools);
    const stopReason = content.some((block) => 'toolUse' in block) ? 'tool_use' : 'end_turn';
    const inputTokens = countTokens(JSON.stringify(request));
    const outputTokens = countTokens(JSON.stringify(content));
    return {
      output: { message: { role: 'assistant', content } },
      stopReason,
      usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens },
      metrics: { latencyMs: 0 },
    };
  }

  private async innerLoop(request: ConverseRequest, tools: ToolSpec[]): Promise<ContentBlock[]> {
    const question = taskQuestion(request.messages);
    const results = toolResults(request.messages, (id) => !id.includes(LOOKUP));
    const turn = request.messages.filter((m) => m.role === 'assistant').length + 1;
    // Tools not tried yet that take free text (a string parameter without a pattern).
    const tried = new Set(
      request.messages.flatMap((m) =>
        m.content.flatMap((b) =>
          'toolUse' in b && !b.toolUse.toolUseId.includes(LOOKUP) ? [b.toolUse.name] : [],
        ),
      ),
    );
    const structural = tools.some((t) => t.name === 'graph') && isStructuralQuestion(question);
    if (structural) {
      const graphCalls = new Set(
        request.messages.flatMap((m) =>
          m.content.flatMap((b) =>
            'toolUse' in b && b.toolUse.name === 'graph' ? [b.toolUse.toolUseId] : [],
          ),
        ),
      );
      const next = nextGraphCall(question, request.messages, graphCalls);
      if (next) return [toolUse('graph', `${turn}`, next)];
      const answer = graphAnswer(question, latestGraphResult(request.messages, graphCalls));
      if (answer) return [{ text: answer }];
    }
    const candidates = tools.filter(
      (t) => !tried.has(t.name) && t.name !== 'graph' && firstStringParameter(t),
    );
    const referent = referentOf(question);
    const via = viaOf(question);
    const lookups = lookupResults(request.messages, (id) => !id.includes(VIA_LOOKUP));
    const viaLookups = lookupResults(request.messages, (id) => id.includes(VIA_LOOKUP));
    if (results.length === 0 && candidates.length > 0) {
      const tool = await this.bestTool(question, candidates);
      const argument = firstStringParameter(tool) as string;
      const within = taskWithin(request.messages);
      const properties = (tool.inputSchema.json as { properties?: Record<string, unknown> }).properties ?? {};
      const reformulated = taskQuery(request.messages);
      // A back-reference ("make it scale out", it = the Fargate service) is looked up first: the
      // API the earlier part's subject is answered with (`ecs.FargateService`) joins the query.
      // What that part itself referred back to is looked up beside it (the Lambda function of the
      // DynamoDB table stream: `lambda.Function`, `dynamodb.Table`).
      if (referent && !reformulated && tool.name === 'search' && lookups === undefined)
        return [
          toolUse(tool.name, `${LOOKUP}${turn}`, { [argument]: clip(referent, maxLengthOf(tool, argument)) }),
          ...(via
            ? [
                toolUse(tool.name, `${VIA_LOOKUP}${turn}`, {
                  [argument]: clip(via, maxLengthOf(tool, argument)),
                }),
              ]
            : []),
        ];
      const api = lookups ? apiOf(referent ?? '', lookups) : undefined;
      const viaApi = via && viaLookups ? apiOf(via, viaLookups) : undefined;
      const query = reformulated ?? withoutRejected(withApi(question, api, viaApi));
      return [
        toolUse(tool.name, `${turn}`, {
          [argument]: clip(query, maxLengthOf(tool, argument)),
          ...(within && !reformulated && 'prefix' in properties ? { prefix: within } : {}),
        }),
      ];
    }
    const api = lookups ? apiOf(referent ?? '', lookups) : undefined;
    const viaApi = via && viaLookups ? apiOf(via, viaLookups) : undefined;
    const asked = withApi(question, api, viaApi);
    // Header-only hits worth reading (shared/llm/offline-read.ts): read once, before answering,
    // then composed with the rank of the passage they continue.
    const searched = toolResults(request.messages, (id) => !id.includes(LOOKUP) && !id.includes(READING));
    const plan = readPlan(asked, searched);
    const reads = request.messages.some((m) =>
      m.content.some((b) => 'toolUse' in b && b.toolUse.toolUseId.includes(READING)),
    );
    if (!reads && plan.ids.length > 0 && tools.some((t) => t.name === 'read'))
      return plan.ids.map((id, i) => toolUse('read', `${READING}${turn}-${i + 1}`, { urn: id }));
    const read = new Map(
      toolResults(request.messages, (id) => id.includes(READING)).map((hit) => [hit.urn, hit.text]),
    );
    const hits = searched.map((hit) => {
      const text = headerOnly(hit) ? read.get(hit.urn) : undefined;
      return text ? { ...hit, text, rank: plan.rank } : hit;
    });
    return [{ text: extractiveAnswer(asked, hits) }];
  }

  private async bestTool(question: string, tools: ToolSpec[]): Promise<ToolSpec> {
    const [q, ...vectors] = await this.embedder.embed([
      question,
      ...tools.map((t) => `${t.name} ${t.description}`),
    ]);
    let best = tools[0] as ToolSpec;
    let bestScore = Number.NEGATIVE_INFINITY;
    tools.forEach((tool, i) => {
      const score = cosine(q as number[], vectors[i] as number[]);
      if (score > bestScore) {
        best = tool;
        bestScore = score;
      }
    });
    return best;
  }
}

function toolUse(name: string, id: string, input: unknown): ContentBlock {
  return { toolUse: { toolUseId: `offline-${name}-${id}`, name, input: input as JsonValue } };
}

/** Text of the last user message that has text (a correction round's tool result has none). */
function lastUserText(request: ConverseRequest): string {
  const last = [...request.messages]
    .reverse()
    .find((m) => m.role === 'user' && m.content.some((b) => 'text' in b));
  return (last?.content ?? []).flatMap((b) => ('text' in b ? [b.text] : [])).join('\n');
}

/** `text` cut to `max` characters, ending in `…` when cut. */
function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1).trimEnd()}…` : text;
}

/**
 * Splits a request into parts: numbered or bulleted items, questions, or then/; clauses; of a
 * message that sets the scene and ends with its one question, the question's (the statements
 * before it are no parts: "We use TypeScript. Cost matters. How do I …?" asks one thing;
 * {@link questionAfterContext}). Linear in the length of `text`: no pattern here can backtrack
 * over an unbounded run (a 1 MB message splits in milliseconds).
 */
export function splitParts(text: string): string[] {
  const clean = text.replace(/\s+/g, ' ').trim();
  const numbered = clean.split(/(?:^|\s)\d{1,2}[.)]\s+/).map((p) => p.trim());
  if (numbered.filter(Boolean).length >= 2) return numbered.filter(Boolean);
  // `[^\S\n]*`, not `\s*`: `\s*` would also take the following newlines and backtrack over them.
  const bullets = text
    .split(/\n[^\S\n]*[-*•]\s+/)
    .map((p) => p.replace(/^\s*[-*•]\s+/, '').trim())
    .filter(Boolean);
  if (bullets.length >= 2) return bullets;
  // What `/[^?]+\?/g` matched, without its quadratic retries where no `?` follows.
  const questions = clean
    .split('?')
    .slice(0, -1)
    .filter((q) => q.length > 0)
    .map((q) => `${q}?`.trim());
  if (questions.length >= 2) return questions;
  // One question after sentences that only set the scene ("We use TypeScript. Cost matters. How do
  // I …?"): the question is what to answer; the statements before it are no parts.
  const asked = questions.length === 1 ? questionAfterContext(clean) : undefined;
  if (asked !== undefined) return splitParts(asked);
  const clauses = clean
    .split(/;|\bthen\b/i)
    .map((p) => p.trim().replace(/^(and|,)\s*/i, ''))
    .filter((p) => p.length > 0);
  return clauses.length >= 2 ? clauses : [clean];
}

/**
 * Where a sentence that asks starts: after `.` or `!` and a space, a question word ("How", "What",
 * "Can", …). A capital after an abbreviation ("the U.S. East region", "e.g. Lambda") is no such start.
 */
const QUESTION_START =
  /[.!]\s+(?=(?:How|What|Which|Why|When|Where|Who|Can|Could|Should|Would|Will|Is|Are|Do|Does|Did)\b)/g;

/** Words that point back at something the message said before its question. */
const POINTS_BACK = /\b(?:it|its|them|they|their|these|those|this one)\b/i;

/**
 * The one question of a message that opens with statements and ends with it (`?` last): from the
 * start of the last sentence that asks, after `.`/`!` ({@link QUESTION_START}), to the end.
 * Undefined — the message stays whole — when it starts with its question, when anything follows
 * the `?` (a requirement after the question, a `?` inside a URL or code), or when the question
 * points back at what the statements said ("I have a bucket. How do I add a rule to it?").
 * Linear in the length of `clean`: one pass of a pattern without nested repetition.
 */
function questionAfterContext(clean: string): string | undefined {
  if (!clean.endsWith('?')) return undefined;
  let start = 0;
  for (const match of clean.matchAll(QUESTION_START)) start = match.index + match[0].length;
  if (start === 0) return undefined;
  const question = clean.slice(start);
  return POINTS_BACK.test(question) ? undefined : question;
}

/** Key terms of a question: its distinct content words, at most five, minus generic verbs. */
export function keyTerms(text: string): string[] {
  const generic = new Set(['give', 'tell', 'explain', 'show', 'want', 'need', 'get', 'make', 'way', 'about']);
  return [...new Set(contentWords(text))].filter((w) => !generic.has(w)).slice(0, 5);
}

/** Words that open a question before its main verb ("how do I", "how can we", "what is"). */
const OPENERS = new Set(
  'how what which where when why who can could should would do does did is are to i we you many much'.split(
    ' ',
  ),
);
/** Determiners: the word after one starts a noun phrase, so an infinitive `to` before one is a preposition. */
const DETERMINERS = new Set(
  'a an the its their that this these those each every my your our another some any all'.split(' '),
);
/** Pronouns that start a relative clause ("the records it fails to process"): the word after is its verb. */
const SUBJECT_PRONOUNS = new Set(['it', 'they', 'i', 'we', 'you']);
/** Words that say how much or which one, not what: never content. */
const QUANTIFIERS = new Set(['one', 'another', 'many', 'much', 'first', 'same', 'other', 'high', 'low']);
const WORD = /[\p{L}\p{N}_$]+(?:[.-][\p{L}\p{N}_$]+)*/gu;

/**
 * The content terms of a question, as the user wrote them: the identifiers, API names and the
 * nouns that carry it, never stop words (shared/search/terms.ts STOPWORDS) nor the verbs that only
 * say what to do with them — the main verb after "how do I", the verb of an infinitive (`to
 * process`, not `to an SQS queue`) and the verb of a relative clause (`the records it fails`).
 * What the question rules out ("rather than message attributes") is left out. Distinct by stem,
 * in order, at most `max`. "How do I send the records it fails to process to an SQS queue?" →
 * `records`, `SQS`, `queue`.
 */
export function contentTerms(question: string, max = 6): string[] {
  const tokens = [...withoutRejected(question).matchAll(WORD)].map((m) => m[0]);
  const lower = tokens.map((t) => t.toLowerCase());
  const skip = new Set<number>();
  let verb = 0;
  while (verb < tokens.length && OPENERS.has(lower[verb] as string)) verb += 1;
  if (verb > 0 && verb < tokens.length) skip.add(verb);
  const plain = (i: number) => /^[a-z]+$/.test(tokens[i] ?? '');
  for (let i = 0; i + 1 < tokens.length; i += 1) {
    if (lower[i] === 'to' && !DETERMINERS.has(lower[i + 1] as string) && plain(i + 1)) skip.add(i + 1);
    if (SUBJECT_PRONOUNS.has(lower[i] as string) && i > 0 && i - 1 !== verb && plain(i + 1)) skip.add(i + 1);
  }
  const seen = new Set<string>();
  const terms: string[] = [];
  tokens.forEach((token, i) => {
    if (skip.has(i) || QUANTIFIERS.has(lower[i] as string)) return;
    const stems = termsOf(token);
    if (stems.length === 0 || processTerm(token.replace(/[.-]/g, '')) === null) return;
    const stem = stems.join(' ');
    if (seen.has(stem)) return;
    seen.add(stem);
    terms.push(token);
  });
  return terms.slice(0, max);
}

/** A "how do I / how to / how can I" question: its answer should show the identifier or code. */
const HOW_TO = /^\s*(?:\d{1,2}[.)]\s*)?how\s+(?:do|can|should|would|to)\b/i;

/** The evaluation criterion the offline judge checks for how-to questions. */
export const SHOWS_CODE = 'shows the identifier or code that does it, from a cited chunk';

function leaf(part: string, referent?: Reference): TaskPayload {
  const question = referent
    ? `${part} (${referent.phrase}: the ${referent.subject}${referent.via ? `${VIA}${referent.via}` : ''})`
    : part;
  const terms = keyTerms(question);
  // A question without Latin-alphabet words (e.g. in Chinese or Russian) has no key terms.
  if (terms.length === 0)
    return {
      title: clip(part, 80),
      purpose: clip(`Answer the question: ${question}`, TASK_TEXT_LIMITS.purpose),
      instructions: 'Search the documentation with the question as written and answer with citations.',
      applicability: 'A single question answerable from the ingested documentation.',
      evaluation: 'The answer cites at least one documentation chunk.',
    };
  if (isStructuralQuestion(part)) {
    return {
      title: clip(part, 80),
      purpose: clip(`Answer the question: ${question}`, TASK_TEXT_LIMITS.purpose),
      instructions: `Query the API structure graph for ${terms.join(', ')}: describe the type, list its properties, defaults, bases or implementations, and cite the sources.`,
      applicability:
        'A structural question about an API: properties, props, defaults, types, extends, implements, methods.',
      evaluation: `The answer lists the properties, members or related types from the graph and mentions: ${terms.join(', ')}.`,
    };
  }
  // The judge checks the part's own content terms, not its filler words (issue 21 item 2).
  const content = contentTerms(part).length ? contentTerms(part) : terms;
  const criteria = HOW_TO.test(part)
    ? `The answer cites at least one documentation chunk, ${SHOWS_CODE}, and mentions: ${content.join(', ')}.`
    : `The answer cites at least one documentation chunk and mentions: ${content.join(', ')}.`;
  return {
    title: part.length > 80 ? `${part.slice(0, 77)}...` : part,
    purpose: clip(`Answer the question: ${question}`, TASK_TEXT_LIMITS.purpose),
    instructions: `Search the documentation for ${content.join(', ')}; read the most relevant chunks and answer with citations.`,
    applicability: 'A single question answerable from the ingested documentation.',
    evaluation: criteria,
  };
}

/** What a later part refers to: the words it uses ("that bucket") and the earlier part's subject. */
export interface Reference {
  phrase: string;
  subject: string;
  /**
   * What the referred-to part itself referred back to, when that is something else: "the records
   * it fails to process" (it = the Lambda function of "process that stream with a Lambda
   * function", that stream = the DynamoDB table stream) → `DynamoDB table stream`.
   */
  via?: string;
}

/** How a task's purpose joins a referent and what that referent's part referred back to. */
const VIA = ', with the ';

const SUBJECT =
  /\b(?:a|an|the)\s+((?:[\w-]+\s+){0,3}?[\w-]+?)(?=\s+(?:from|with|in|on|to|for|that|which|using|by|of|at|into|as|and|so|when)\b|\s*[?.!,;:]|\s*$)/i;
const DEMONSTRATIVE = /\b(that|this|the same|those|these)\s+([\w-]+)/i;
const PRONOUN = /\b(it|its|them|their)\b/i;

/** A part that adds something to a container names the container after `to`/`behind`/`on`. */
const CONTAINER =
  /\b(?:add|attach|put|mount|register)\b.*?\b(?:to|behind|on|into)\s+(?:a|an|the)\s+((?:[\w-]+\s+){0,3}?[\w-]+?)(?=\s+(?:from|with|in|on|to|for|that|which|using|by|of|at|into|as|and|so|when)\b|\s*[?.!,;:]|\s*$)/i;

/**
 * The subject of a question: its first noun phrase after an article ("How do I create a
 * versioned bucket?" → "versioned bucket"), at most four words — or, when the question adds or
 * attaches something to something ("add a wait state to a state machine", "put a Lambda
 * integration behind a REST API"), the thing it is added to; undefined when there is none.
 */
export function subjectOf(part: string): string | undefined {
  // A trailing participle ("a Kinesis data stream encrypted with …") qualifies, not names.
  return (CONTAINER.exec(part)?.[1] ?? SUBJECT.exec(part)?.[1])?.trim().replace(/(?<=\S)\s+\w+ed$/, '');
}

/**
 * Resolves back-references of multi-part requests: for each part, what it refers to in an
 * earlier part, or undefined. "that/this/those <noun>" refers to the latest earlier subject that
 * contains the noun; "it/its/them/their" to what the previous part was about: what that part
 * itself referred back to, when it did ("make it scale out", then "register it": both the
 * Fargate service), else its subject. A reference to an earlier part's own subject carries, as
 * `via`, what that part itself referred back to when that is something else ("process that
 * stream with a Lambda function", then "the records it fails": the Lambda function, via the
 * DynamoDB table stream); the inner loop looks both up and searches with both APIs.
 */
export function resolveReferences(parts: readonly string[]): (Reference | undefined)[] {
  const subjects = parts.map(subjectOf);
  const resolved: (Reference | undefined)[] = [];
  parts.forEach((part, i) => {
    resolved.push(i === 0 ? undefined : resolveOne(part, i));
  });
  return resolved;

  function resolveOne(part: string, i: number): Reference | undefined {
    const demonstrative = DEMONSTRATIVE.exec(part);
    if (demonstrative) {
      const noun = (demonstrative[2] as string).toLowerCase();
      for (let j = i - 1; j >= 0; j -= 1) {
        const subject = subjects[j];
        if (subject?.toLowerCase().split(/\s+/).includes(noun))
          return withVia({ phrase: demonstrative[0], subject }, j);
      }
      // A noun an earlier part mentions beside its subject ("a table with a stream", then
      // "that stream"): the subject's noun of that kind.
      for (let j = i - 1; j >= 0; j -= 1) {
        const subject = subjects[j];
        if (subject && new RegExp(`\\b${noun}\\b`, 'i').test(parts[j] as string))
          return { phrase: demonstrative[0], subject: `${subject} ${noun}` };
      }
    }
    const pronoun = PRONOUN.exec(part);
    const inherited = resolved[i - 1]?.phrase.match(PRONOUN) !== null && resolved[i - 1] !== undefined;
    const previous = inherited ? resolved[i - 1]?.subject : subjects[i - 1];
    const about = previous ?? resolved[i - 1]?.subject;
    if (pronoun && about)
      return inherited || !previous
        ? { phrase: pronoun[0], subject: about }
        : withVia({ phrase: pronoun[0], subject: about }, i - 1);
    return undefined;
  }

  /** The reference to part `j`'s own subject, with what part `j` itself referred back to (when other). */
  function withVia(reference: Reference, j: number): Reference {
    const earlier = resolved[j]?.subject;
    const other =
      earlier !== undefined &&
      !reference.subject.toLowerCase().includes(earlier.toLowerCase()) &&
      !earlier.toLowerCase().includes(reference.subject.toLowerCase());
    return other ? { ...reference, via: earlier } : reference;
  }
}

function plan(text: string): { tasks: TaskPayload[] } {
  const parts = splitParts(text);
  if (parts.length === 1) return { tasks: [leaf(parts[0] as string)] };
  const references = resolveReferences(parts);
  return {
    tasks: [
      {
        title: `Answer ${parts.length} parts`,
        purpose: clip(
          `Answer every part of the request and combine the answers: ${text.replace(/\s+/g, ' ').trim()}`,
          TASK_TEXT_LIMITS.purpose,
        ),
        instructions: `Supervise the ${parts.length} subtasks, judge each against its evaluation, and combine the passing answers into one reply.`,
        applicability: 'A multi-part request split into subtasks that must be combined.',
        evaluation: 'Every part is answered by a subtask that passes its own evaluation.',
        subtasks: parts.map((part, i) => leaf(part, references[i])),
      },
    ],
  };
}

/** A subtask as the supervisor prompt shows it (shared/domain/assistant.ts supervisorPrompt). */
export interface SubtaskView {
  /** The short id the judge's prompt gives it (`s1` …). */
  id: string;
  title?: string;
  purpose?: string;
  instructions?: string;
  evaluation?: string;
  output?: string;
  /** What the output cites: each source's label (`aws-s3 README › Bucket Notifications`) or URN. */
  sources?: string[];
  error?: { message?: string } | null;
}

/**
 * Parses the ```json block of the supervisor's message: from its opening fence to the last fence
 * of the message (outputs inside the JSON may themselves contain ``` code fences).
 */
function parseJsonBlock(text: string): { subtasks?: SubtaskView[] } {
  const start = text.indexOf('```json');
  const end = text.lastIndexOf('```');
  if (start === -1 || end <= start) return {};
  try {
    return JSON.parse(text.slice(start + '```json'.length, end)) as { subtasks?: SubtaskView[] };
  } catch {
    return {};
  }
}

function verdict(text: string): {
  pass: boolean;
  reason: string;
  subtasks: { id: string; pass: boolean; reason: string }[];
  corrective: CorrectivePayload[];
} {
  const subtasks = parseJsonBlock(text).subtasks ?? [];
  const judged = subtasks.map((s) => {
    const verdict = judge(s);
    const ended = !verdict.pass && addedNothing(s, verdict.missing);
    return {
      subtask: s,
      ...verdict,
      ended,
      reason: ended
        ? `${verdict.reason}; the corrective round added nothing new, so the rounds end`
        : verdict.reason,
    };
  });
  const failing = judged.filter((j) => !j.pass);
  return {
    pass: failing.length === 0 && subtasks.length > 0,
    reason:
      subtasks.length === 0
        ? 'no subtask outputs to judge'
        : failing.length === 0
          ? `all ${subtasks.length} subtasks meet their evaluation`
          : `${failing.length} of ${subtasks.length} subtasks fall short: ${failing.map((f) => f.reason).join('; ')}`,
    subtasks: judged.map((j) => ({ id: j.subtask.id, pass: j.pass, reason: j.reason })),
    corrective: failing.filter((f) => !f.ended).map(({ subtask, missing }) => corrective(subtask, missing)),
  };
}

/** What a corrective task's instructions record of the attempt it redoes ({@link corrective}). */
const ATTEMPT = /Attempt cited (.*?) and lacked (.*?)\.(?:\s|$)/;

/** Separator of the sources an attempt cited, in its record ({@link ATTEMPT}). */
const ATTEMPT_SOURCES = '; ';

/**
 * True when a corrective subtask's output added nothing new to the attempt it redoes: it cites
 * no source that attempt did not, and still lacks every term that attempt lacked. Another round
 * would search the same way and find the same, so the rounds end early.
 */
export function addedNothing(s: SubtaskView, missing: readonly string[]): boolean {
  const attempt = ATTEMPT.exec(s.instructions ?? '');
  if (!attempt) return false;
  const cited = new Set(
    (attempt[1] as string).split(ATTEMPT_SOURCES).filter((source) => source !== 'nothing'),
  );
  const lacked = (attempt[2] as string).split(/,\s*/).filter((t) => t && t !== 'nothing');
  const stillMissing = new Set(missing.map((t) => t.toLowerCase()));
  return (
    (s.sources ?? []).every((source) => cited.has(source)) &&
    lacked.every((t) => stillMissing.has(t.toLowerCase()))
  );
}

/**
 * The corrective subtask for a failing one: the question reformulated — the question with its
 * referent ("(it: the Fargate service)"), and the terms its answer lacked named again — searched
 * over the whole corpus, not only within the document the answer cited (which did not hold
 * them). Its instructions record what the attempt cited and lacked, so the next verdict can tell
 * whether the round added anything ({@link addedNothing}).
 */
function corrective(subtask: SubtaskView, missing: readonly string[]): CorrectivePayload {
  const question = (subtask.purpose ?? subtask.title ?? '').replace(/^Answer the question:\s*/i, '');
  const query = clip(
    [question, ...missing].join(' ').replace(/"/g, "'").replace(/\s+/g, ' ').trim(),
    SEARCH_QUERY_LIMIT,
  );
  const cited = subtask.sources?.length ? subtask.sources.join(ATTEMPT_SOURCES) : 'nothing';
  const lacked = missing.length ? missing.join(', ') : 'nothing';
  return {
    title: `Retry: ${subtask.title ?? subtask.purpose ?? subtask.id}`.slice(0, 200),
    purpose: subtask.purpose ?? 'Redo the failed subtask.',
    instructions: clip(
      `Search the whole documentation for "${query}" and answer with the identifier or code that does it, with citations. Attempt cited ${cited} and lacked ${lacked}.`,
      TASK_TEXT_LIMITS.instructions,
    ),
    applicability: 'A single question answerable from the ingested documentation.',
    evaluation: subtask.evaluation ?? 'The answer cites at least one documentation chunk.',
    corrects: subtask.id,
  };
}

/** Longest reformulated query a corrective task names (the search tool's own bound is larger). */
const SEARCH_QUERY_LIMIT = 500;

/** The query a corrective task's instructions name ("Search the whole documentation for \"…\""), if any. */
function taskQuery(messages: readonly ConverseMessage[]): string | undefined {
  const first = messages[0]?.content.flatMap((b) => ('text' in b ? [b.text] : [])).join('\n') ?? '';
  const section = first.slice(first.lastIndexOf('## Task'));
  return /Search the whole documentation for "([^"]+)"/.exec(section)?.[1];
}

/** An identifier in prose or code: `inline code`, camelCase, or Class.member. */
const IDENTIFIER = /`[^`\n]+`|\b[a-z]+[A-Z][A-Za-z0-9]*\b|\b[A-Z][A-Za-z0-9]*\.[A-Za-z_][A-Za-z0-9_]*/;

/**
 * Judges one subtask output against its evaluation: fails an error, an empty output, an output
 * citing nothing, one without an identifier or code block when the evaluation asks for it
 * ({@link SHOWS_CODE}), and one that covers fewer than half of the key terms listed after
 * "mentions:" (compared as stems, shared/search/terms.ts).
 */
export function judge(s: SubtaskView): { pass: boolean; reason: string; missing: string[] } {
  if (s.error) return { pass: false, reason: `failed: ${s.error.message ?? 'error'}`, missing: [] };
  const output = s.output?.trim() ?? '';
  if (!output) return { pass: false, reason: 'empty output', missing: [] };
  if (!s.sources?.length) return { pass: false, reason: 'cites no source', missing: [] };
  const mentions = /mentions:\s*(.+?)\.?$/i.exec(s.evaluation ?? '');
  const terms = mentions
    ? (mentions[1] as string).split(/,\s*/).filter(Boolean)
    : keyTerms(s.evaluation ?? '');
  const body = output.replace(/\n\s*Sources:\s*\n[\s\S]*$/, '');
  if (s.evaluation?.includes(SHOWS_CODE) && !body.includes('```') && !IDENTIFIER.test(body)) {
    return { pass: false, reason: 'shows no identifier or code for a how-to question', missing: terms };
  }
  const words = new Set(termsOf(body));
  const missing = terms.filter((t) => !termsOf(t).some((term) => words.has(term)));
  if (terms.length > 0 && missing.length / terms.length > 0.5) {
    return { pass: false, reason: `does not mention ${missing.join(', ')}`, missing };
  }
  return {
    pass: true,
    reason: `cites ${s.sources.length} source(s), covers ${terms.length - missing.length}/${terms.length} key terms`,
    missing,
  };
}

/** The document URN a corrective task's instructions name ("Search again within <urn> ..."), if any. */
function taskWithin(messages: readonly ConverseMessage[]): string | undefined {
  const first = messages[0]?.content.flatMap((b) => ('text' in b ? [b.text] : [])).join('\n') ?? '';
  const section = first.slice(first.lastIndexOf('## Task'));
  return /\bwithin (cld:[A-Za-z0-9.:/_-]+[A-Za-z0-9])/.exec(section)?.[1];
}

/** The task's question: the Purpose line of the "## Task" section, minus "Answer the question:". */
function taskQuestion(messages: readonly ConverseMessage[]): string {
  const first = messages[0]?.content.flatMap((b) => ('text' in b ? [b.text] : [])).join('\n') ?? '';
  const section = first.slice(first.lastIndexOf('## Task'));
  const purpose = /\*\*Purpose:\*\*\s*(.+)/.exec(section)?.[1] ?? section;
  return purpose.replace(/^Answer the question:\s*/i, '').trim();
}

function toolResults(
  messages: readonly ConverseMessage[],
  accept: (toolUseId: string) => boolean = () => true,
): ExtractHit[] {
  const hits: ExtractHit[] = [];
  for (const message of messages) {
    for (const block of message.content) {
      if (!('toolResult' in block) || block.toolResult.status === 'error') continue;
      if (!accept(block.toolResult.toolUseId)) continue;
      for (const part of block.toolResult.content) {
        let value: unknown = 'json' in part ? part.json : undefined;
        if ('text' in part) {
          try {
            value = JSON.parse(part.text);
          } catch {
            // Hits as the window renders them (citation ids for URNs, passages): a real model's view.
            value = { results: parseRenderedHits(part.text) };
          }
        }
        const results = (value as { results?: unknown })?.results;
        const items = Array.isArray(results) ? results : value ? [value] : [];
        for (const item of items as {
          urn?: unknown;
          text?: unknown;
          title?: unknown;
          heading?: unknown;
          source?: unknown;
          bridge?: unknown;
        }[]) {
          if (typeof item?.urn !== 'string' || typeof item.text !== 'string') continue;
          const title = typeof item.title === 'string' ? item.title : item.heading;
          hits.push({
            urn: item.urn,
            text: item.text,
            ...(typeof title === 'string' ? { title } : {}),
            ...(typeof item.source === 'string' ? { source: item.source } : {}),
            ...bridgeOfItem(item.bridge),
          });
        }
      }
    }
  }
  return hits;
}

/** A hit item's `bridge` (shared/search/bridge.ts) as {@link ExtractHit} carries it; none when absent or malformed. */
function bridgeOfItem(value: unknown): { bridge?: HitBridge[] } {
  const bridge = hitBridges(value);
  return bridge.length > 0 ? { bridge } : {};
}

/** The `maxLength` a tool's schema gives a parameter (unbounded when it gives none). */
function maxLengthOf(tool: ToolSpec, name: string): number {
  const schema = tool.inputSchema.json as { properties?: Record<string, { maxLength?: unknown }> };
  const max = schema.properties?.[name]?.maxLength;
  return typeof max === 'number' && max > 1 ? max : Number.POSITIVE_INFINITY;
}

/** The first required string parameter that takes free text (no `pattern`, `enum` or `format`). */
function firstStringParameter(tool: ToolSpec): string | undefined {
  const schema = tool.inputSchema.json as {
    properties?: Record<string, { type?: string; pattern?: string; enum?: unknown; format?: string }>;
    required?: string[];
  };
  const required = schema.required ?? Object.keys(schema.properties ?? {});
  return required.find((name) => {
    const property = schema.properties?.[name];
    return property?.type === 'string' && !property.pattern && !property.enum && !property.format;
  });
}

/** The tool-use id marker of a read of a header-only hit (`offline-read-reading-2-1`). */
const READING = 'reading-';
/** The tool-use id marker of a back-reference lookup (`offline-search-lookup-1`). */
const LOOKUP = 'lookup-';
/** The tool-use id marker of the lookup of what the referred-to part referred back to (`offline-search-lookup-via-1`). */
const VIA_LOOKUP = 'lookup-via-';

/** The subject a task's question refers back to: `(it: the Fargate service)` → `Fargate service`. */
export function referentOf(question: string): string | undefined {
  return referenceText(question)?.split(VIA)[0]?.trim();
}

/**
 * What the referred-to part itself referred back to: `(it: the Lambda function, with the DynamoDB
 * table stream)` → `DynamoDB table stream` ({@link Reference} `via`), or undefined.
 */
export function viaOf(question: string): string | undefined {
  return referenceText(question)?.split(VIA)[1]?.trim();
}

function referenceText(question: string): string | undefined {
  return /\((?:[\w-]+(?:\s+[\w-]+)?): the ([^()]+?)\)\s*$/.exec(question)?.[1]?.trim();
}

/**
 * What a construct whose name ends in the subject's head noun adds to its score in {@link apiOf}
 * (less than the 1.5 of a module alias the subject names).
 */
const HEAD_WEIGHT = 1.25;

/** The hits of the back-reference lookup, or undefined when none was made. */
function lookupResults(
  messages: readonly ConverseMessage[],
  accept: (toolUseId: string) => boolean = () => true,
): ExtractHit[] | undefined {
  const ours = (id: string) => id.includes(LOOKUP) && accept(id);
  const made = messages.some((m) => m.content.some((b) => 'toolUse' in b && ours(b.toolUse.toolUseId)));
  return made ? toolResults(messages, ours) : undefined;
}

/**
 * The API a subject is answered with, from the code of the hits found for it: the construct
 * (`alias.Name` after `new`, or `alias.Name` used as a type) whose name and module alias share the
 * most distinct stems with the subject — the alias counting 1.5 — preferring a name made only of
 * the subject's words (`Fargate service` → `ecs.FargateService`, not `ecs.FargateTaskDefinition`;
 * `SNS topic` → `sns.Topic`, not `targets.SnsTopic`; `REST API` → `apigateway.RestApi`) and a
 * name that ends in the subject's head noun, its last word ({@link HEAD_WEIGHT}: `versioned
 * bucket` → `s3.Bucket`, not `mixins.BucketVersioning`; less than the alias, so `DynamoDB table
 * stream` stays `dynamodb.Table`, not `kinesis.Stream`); undefined when no construct shares a
 * stem with it.
 */
export function apiOf(subject: string, hits: readonly ExtractHit[]): string | undefined {
  const wanted = new Set(termsOf(subject));
  if (wanted.size === 0) return undefined;
  const head = termsOf(subject.split(/\s+/).at(-1) ?? '').at(-1);
  let best: { api: string; score: number; rank: number } | undefined;
  hits.forEach((hit, rank) => {
    const code = [...hit.text.matchAll(/```[^\n]*\n([\s\S]*?)```/g)].map((m) => m[1]).join('\n');
    for (const match of code.matchAll(/\b([a-z][\w]*)\.([A-Z][A-Za-z0-9]*)\b/g)) {
      const [api, alias, name] = match as unknown as [string, string, string];
      const own = [...new Set(identifierParts(name).flatMap((part) => processTerm(part) ?? []))];
      const named = own.filter((t) => wanted.has(t)).length;
      if (named === 0) continue;
      // The module alias the subject names (`sns` in "SNS topic") counts more than a name part.
      const aliased = termsOf(alias).some((t) => wanted.has(t));
      // English compounds and class names are head-final: the construct for a "versioned
      // bucket" ends in `Bucket` (`s3.Bucket`), not in what qualifies it (`BucketVersioning`).
      const last = identifierParts(name).at(-1);
      const headed = head !== undefined && last !== undefined && processTerm(last) === head;
      const score = named + (aliased ? 1.5 : 0) + named / own.length + (headed ? HEAD_WEIGHT : 0);
      if (!best || score > best.score || (score === best.score && rank < best.rank))
        best = { api, score, rank };
    }
  });
  return best?.api;
}

/**
 * The question with its referent named by its API: `(it: the FIFO topic)` → `(it: \`sns.Topic\`)`.
 * The API stands for the subject (its name carries the subject's nouns); the subject's qualifiers
 * ("FIFO") belong to the earlier part and would pull this one's search and answer towards it.
 */
function withApi(question: string, ...apis: (string | undefined)[]): string {
  const found = [...new Set(apis.filter((api): api is string => api !== undefined))];
  if (!found.length || apis[0] === undefined) return question;
  return question.replace(
    /\(([^():]+):\s*the [^()]+\)\s*$/,
    (_, phrase: string) => `(${phrase}: ${found.map((api) => `\`${api}\``).join(', ')})`,
  );
}
