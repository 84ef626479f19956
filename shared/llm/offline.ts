import { countTokens } from '../context/tokens.js';
import {
  type CorrectivePayload,
  CREATE_PLAN,
  SUBMIT_VERDICT,
  TASK_TEXT_LIMITS,
  type TaskPayload,
} from '../domain/payloads.js';
import { contentWords, cosine, HashingEmbedder } from '../search/similarity.js';
import { termsOf } from '../search/terms.js';
import { type ExtractHit, extractiveAnswer } from './extract.js';
import { graphAnswer, isStructuralQuestion, latestGraphResult, nextGraphCall } from './offline-graph.js';
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
    const results = toolResults(request.messages);
    const turn = request.messages.filter((m) => m.role === 'assistant').length + 1;
    // Tools not tried yet that take free text (a string parameter without a pattern).
    const tried = new Set(
      request.messages.flatMap((m) => m.content.flatMap((b) => ('toolUse' in b ? [b.toolUse.name] : []))),
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
    if (results.length === 0 && candidates.length > 0) {
      const tool = await this.bestTool(question, candidates);
      const argument = firstStringParameter(tool) as string;
      const within = taskWithin(request.messages);
      const properties = (tool.inputSchema.json as { properties?: Record<string, unknown> }).properties ?? {};
      return [
        toolUse(tool.name, `${turn}`, {
          [argument]: clip(question, maxLengthOf(tool, argument)),
          ...(within && 'prefix' in properties ? { prefix: within } : {}),
        }),
      ];
    }
    return [{ text: extractiveAnswer(question, results) }];
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
 * Splits a request into parts: numbered or bulleted items, questions, or then/; clauses. Linear
 * in the length of `text`: no pattern here can backtrack over an unbounded run (a 1 MB message
 * splits in milliseconds).
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
  const clauses = clean
    .split(/;|\bthen\b/i)
    .map((p) => p.trim().replace(/^(and|,)\s*/i, ''))
    .filter((p) => p.length > 0);
  return clauses.length >= 2 ? clauses : [clean];
}

/** Key terms of a question: its distinct content words, at most five, minus generic verbs. */
export function keyTerms(text: string): string[] {
  const generic = new Set(['give', 'tell', 'explain', 'show', 'want', 'need', 'get', 'make', 'way', 'about']);
  return [...new Set(contentWords(text))].filter((w) => !generic.has(w)).slice(0, 5);
}

/** A "how do I / how to / how can I" question: its answer should show the identifier or code. */
const HOW_TO = /^\s*(?:\d{1,2}[.)]\s*)?how\s+(?:do|can|should|would|to)\b/i;

/** The evaluation criterion the offline judge checks for how-to questions. */
export const SHOWS_CODE = 'shows the identifier or code that does it, from a cited chunk';

function leaf(part: string, referent?: Reference): TaskPayload {
  const question = referent ? `${part} (${referent.phrase}: the ${referent.subject})` : part;
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
  const criteria = HOW_TO.test(part)
    ? `The answer cites at least one documentation chunk, ${SHOWS_CODE}, and mentions: ${terms.join(', ')}.`
    : `The answer cites at least one documentation chunk and mentions: ${terms.join(', ')}.`;
  return {
    title: part.length > 80 ? `${part.slice(0, 77)}...` : part,
    purpose: clip(`Answer the question: ${question}`, TASK_TEXT_LIMITS.purpose),
    instructions: `Search the documentation for ${terms.join(', ')}; read the most relevant chunks and answer with citations.`,
    applicability: 'A single question answerable from the ingested documentation.',
    evaluation: criteria,
  };
}

/** What a later part refers to: the words it uses ("that bucket") and the earlier part's subject. */
export interface Reference {
  phrase: string;
  subject: string;
}

const SUBJECT =
  /\b(?:a|an|the)\s+((?:[\w-]+\s+){0,3}?[\w-]+?)(?=\s+(?:from|with|in|on|to|for|that|which|using|by|of|at|into|as|and|so|when)\b|\s*[?.!,;:]|\s*$)/i;
const DEMONSTRATIVE = /\b(that|this|the same|those|these)\s+([\w-]+)/i;
const PRONOUN = /\b(it|its|them|their)\b/i;

/**
 * The subject of a question: its first noun phrase after an article ("How do I create a
 * versioned bucket?" → "versioned bucket"), at most four words; undefined when there is none.
 */
export function subjectOf(part: string): string | undefined {
  return SUBJECT.exec(part)?.[1]?.trim();
}

/**
 * Resolves back-references of multi-part requests: for each part, what it refers to in an
 * earlier part, or undefined. "that/this/those <noun>" refers to the latest earlier subject that
 * contains the noun; "it/its/them/their" to the previous part's subject.
 */
export function resolveReferences(parts: readonly string[]): (Reference | undefined)[] {
  const subjects = parts.map(subjectOf);
  return parts.map((part, i) => {
    if (i === 0) return undefined;
    const demonstrative = DEMONSTRATIVE.exec(part);
    if (demonstrative) {
      const noun = (demonstrative[2] as string).toLowerCase();
      for (let j = i - 1; j >= 0; j -= 1) {
        const subject = subjects[j];
        if (subject?.toLowerCase().split(/\s+/).includes(noun)) return { phrase: demonstrative[0], subject };
      }
    }
    const pronoun = PRONOUN.exec(part);
    const previous = subjects[i - 1];
    if (pronoun && previous) return { phrase: pronoun[0], subject: previous };
    return undefined;
  });
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
  urn: string;
  title?: string;
  purpose?: string;
  instructions?: string;
  evaluation?: string;
  output?: string;
  citations?: string[];
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
  subtasks: { urn: string; pass: boolean; reason: string }[];
  corrective: CorrectivePayload[];
} {
  const subtasks = parseJsonBlock(text).subtasks ?? [];
  const judged = subtasks.map((s) => ({ subtask: s, ...judge(s) }));
  const failing = judged.filter((j) => !j.pass);
  return {
    pass: failing.length === 0 && subtasks.length > 0,
    reason:
      subtasks.length === 0
        ? 'no subtask outputs to judge'
        : failing.length === 0
          ? `all ${subtasks.length} subtasks meet their evaluation`
          : `${failing.length} of ${subtasks.length} subtasks fall short: ${failing.map((f) => f.reason).join('; ')}`,
    subtasks: judged.map((j) => ({ urn: j.subtask.urn, pass: j.pass, reason: j.reason })),
    corrective: failing.map(({ subtask, missing }) => corrective(subtask, missing)),
  };
}

/**
 * The corrective subtask for a failing one: the same question, searched again for the missing
 * terms — within the document its answer cited, when it cited one (the document holds the
 * example the answer lacked more often than a neighbouring one).
 */
function corrective(subtask: SubtaskView, missing: readonly string[]): CorrectivePayload {
  const document = subtask.citations?.[0]?.replace(/\/[^/]*$/, '');
  const terms = missing.length ? missing.join(', ') : 'the key terms of the question';
  return {
    title: `Retry: ${subtask.title ?? subtask.purpose ?? subtask.urn}`.slice(0, 200),
    purpose: subtask.purpose ?? 'Redo the failed subtask.',
    instructions: document
      ? `Search again within ${document} for ${terms}, and answer with the identifier or code that does it, with citations.`
      : `Search again, this time for ${terms}, and answer with citations.`,
    applicability: 'A single question answerable from the ingested documentation.',
    evaluation: subtask.evaluation ?? 'The answer cites at least one documentation chunk.',
    corrects: subtask.urn,
  };
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
  if (!s.citations?.length) return { pass: false, reason: 'cites no source', missing: [] };
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
    reason: `cites ${s.citations.length} source(s), covers ${terms.length - missing.length}/${terms.length} key terms`,
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

function toolResults(messages: readonly ConverseMessage[]): ExtractHit[] {
  const hits: ExtractHit[] = [];
  for (const message of messages) {
    for (const block of message.content) {
      if (!('toolResult' in block) || block.toolResult.status === 'error') continue;
      for (const part of block.toolResult.content) {
        let value: unknown = 'json' in part ? part.json : undefined;
        if ('text' in part) {
          try {
            value = JSON.parse(part.text);
          } catch {
            value = undefined;
          }
        }
        const results = (value as { results?: unknown })?.results;
        const items = Array.isArray(results) ? results : value ? [value] : [];
        for (const item of items as { urn?: unknown; text?: unknown; title?: unknown; heading?: unknown }[]) {
          if (typeof item?.urn !== 'string' || typeof item.text !== 'string') continue;
          const title = typeof item.title === 'string' ? item.title : item.heading;
          hits.push({ urn: item.urn, text: item.text, ...(typeof title === 'string' ? { title } : {}) });
        }
      }
    }
  }
  return hits;
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
