import { readFileSync } from 'node:fs';
import * as z from 'zod';
import { startConversation } from '../../shared/domain/conversation.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { Message, ToolCallResource } from '../../shared/resources/schemas.js';
import type { LocalRuntime } from '../../shared/runtime/local.js';
import { parentOf } from '../../shared/urn.js';
import { containsTerm } from './eval-set.js';

/**
 * The structural questions of the evaluation (issue 13, test/eval/structural.json): questions
 * about the shape of the aws-cdk-lib API ("what properties does BucketProps take", "which classes
 * implement IGrantable") that the graph answers, each with the graph subject(s) a good answer is
 * about and the names it must list. Asked through the real `ask` path after the corpus and its
 * jsii assembly are ingested; scored apart from the search questions (they have no search
 * hit@k) by {@link scoreStructural}.
 */

export const StructuralQuestionSchema = z.strictObject({
  id: z.string().regex(/^g[0-9]{2}$/),
  /** Written before the fixes the others led to, and run only after them: reported apart. */
  heldOut: z.boolean().optional(),
  /** The question as a user types it. */
  text: z.string().min(1),
  /**
   * Graph subjects (compact IRIs as the graph tool prints them: `type:aws-cdk-lib.aws_s3.BucketProps`);
   * one of them must be the entity a graph result describes or a value it binds.
   */
  subjects: z.array(z.string().regex(/^type:[\w.-]+(\/\w+)?$/)).min(1),
  /** Names the answer must contain, each (case-insensitive): properties, methods, classes, values. */
  terms: z.array(z.string().min(1)).min(1),
  /** What the question asks beyond one entity's own facts (issue 21): a filter, or two hops. */
  kind: z.enum(['filter', 'two-hop']).optional(),
  /**
   * Member names a filter must leave out: the answer must not list any of them (as inline code
   * `` `name` ``/`` `name(…` `` or a list item starting with the name; case-sensitive).
   */
  absent: z
    .array(z.string().regex(/^[A-Za-z_$][\w$]*$/))
    .min(1)
    .optional(),
  /**
   * The entity of each hop, in order (compact IRIs): for each, an OK graph result must have
   * described it (as its `entity`, or as the `entity` of a step of its `path`) with sources the
   * answer cites, so every hop is backed by a citation.
   */
  hops: z
    .array(z.string().regex(/^type:[\w.-]+$/))
    .min(2)
    .optional(),
});
export type StructuralQuestion = z.infer<typeof StructuralQuestionSchema>;

export const StructuralSetSchema = z.strictObject({
  about: z.string(),
  questions: z.array(StructuralQuestionSchema).min(1),
});

/** The path of the structural set. */
export const STRUCTURAL_SET_PATH = new URL('./structural.json', import.meta.url);

/**
 * Loads and validates the structural set.
 * @throws ZodError when the file does not match {@link StructuralSetSchema}; Error for duplicate ids
 */
export function loadStructuralSet(path: URL | string = STRUCTURAL_SET_PATH): StructuralQuestion[] {
  const set = StructuralSetSchema.parse(JSON.parse(readFileSync(path, 'utf8')));
  const ids = new Set<string>();
  for (const question of set.questions) {
    if (ids.has(question.id)) throw new Error(`duplicate question id ${question.id}`);
    ids.add(question.id);
  }
  return set.questions;
}

/** What one asked question left behind, as the scorer reads it. */
export interface StructuralObservation {
  /** The `graph` tool results of the conversation (tool Messages of `graph` calls), in call order. */
  graphResults: { status: string; content: string }[];
  /** The final answer's text. */
  answer: string;
  /** The final answer's citations (URNs). */
  citations: readonly string[];
  ms: number;
}

/** The score of one structural question. */
export interface StructuralScore {
  id: string;
  heldOut: boolean;
  kind: StructuralQuestion['kind'];
  /** At least one `graph` call returned OK. */
  graph: boolean;
  /** An OK graph result describes or binds one of the expected subjects. */
  subject: boolean;
  /** The answer cites a source an OK graph result returned. */
  cited: boolean;
  /** Expected terms found in the answer (its text before `Sources:`). */
  found: string[];
  /** Expected terms missing from it. */
  missing: string[];
  /** Names of `absent` the answer lists anyway (the filter let them through). */
  unfiltered: string[];
  /** No `absent` name listed; undefined for a question without absent names. */
  filtered: boolean | undefined;
  /** Every hop's entity described with a cited source; undefined for a question without hops. */
  hops: boolean | undefined;
  /** subject, cited, every term, no absent name, and every hop cited. */
  hit: boolean;
  ms: number;
}

interface GraphResultView {
  entity?: unknown;
  bindings?: unknown;
  sources?: unknown;
  /** Steps of a multi-hop result, each `{ entity, sources, … }`. */
  path?: unknown;
}

/**
 * Scores one structural question: whether the graph was asked and answered about an expected
 * subject, whether the answer cites what the graph returned, and which expected names it lists.
 * Results that are not JSON objects (errors, messages) count as no result.
 */
export function scoreStructural(
  question: StructuralQuestion,
  observed: StructuralObservation,
): StructuralScore {
  const results = observed.graphResults
    .filter((result) => result.status === 'OK')
    .map((result) => parseObject(result.content))
    .filter((view): view is GraphResultView => view !== undefined);
  const subjects = new Set(question.subjects);
  const mentioned = (view: GraphResultView): boolean =>
    (typeof view.entity === 'string' && subjects.has(view.entity)) ||
    (Array.isArray(view.bindings) &&
      view.bindings.some(
        (binding) =>
          typeof binding === 'object' &&
          binding !== null &&
          Object.values(binding).some((value) => typeof value === 'string' && subjects.has(value)),
      ));
  const sources = new Set(results.flatMap(sourcesOf));
  const text = answerText(observed.answer);
  const found = question.terms.filter((term) => containsTerm(text, term));
  const missing = question.terms.filter((term) => !found.includes(term));
  const unfiltered = (question.absent ?? []).filter((name) => listsName(text, name));
  const subject = results.some(mentioned);
  const cited = observed.citations.some((urn) => sources.has(urn));
  const hops = question.hops ? hopsCited(question.hops, results, observed.citations) : undefined;
  return {
    id: question.id,
    heldOut: question.heldOut === true,
    kind: question.kind,
    graph: results.length > 0,
    subject,
    cited,
    found,
    missing,
    unfiltered,
    filtered: question.absent ? unfiltered.length === 0 : undefined,
    hops,
    hit: subject && cited && missing.length === 0 && unfiltered.length === 0 && hops !== false,
    ms: observed.ms,
  };
}

function sourcesOf(view: { sources?: unknown }): string[] {
  return Array.isArray(view.sources) ? view.sources.filter((s): s is string => typeof s === 'string') : [];
}

/**
 * True when every hop's entity is the `entity` of an OK result or of a step of a result's `path`
 * whose sources include a citation of the answer.
 */
function hopsCited(
  hops: readonly string[],
  results: readonly GraphResultView[],
  citations: readonly string[],
): boolean {
  const nodes = results.flatMap((view) => [
    view,
    ...(Array.isArray(view.path)
      ? view.path.filter((step): step is GraphResultView => typeof step === 'object' && step !== null)
      : []),
  ]);
  return hops.every((hop) =>
    nodes.some((node) => node.entity === hop && sourcesOf(node).some((urn) => citations.includes(urn))),
  );
}

/**
 * True when `text` lists `name`: a list item (`-`, `*` or `1.`) that starts with it, bare or as
 * inline code, qualified or not (`` - `name` (…) ``, `` - `name(…)` ``, `- name: …`). A mention
 * inside another item's description or default (`` default: `evaluationPeriods` ``) is not a
 * listing.
 */
export function listsName(text: string, name: string): boolean {
  const escaped = name.replace(/[$]/g, '\\$');
  return new RegExp(`^\\s*(?:[-*]|\\d+\\.)\\s+\`?(?:[\\w.-]+[./])?${escaped}(?![\\w$])`, 'm').test(text);
}

/** The answer without its `Sources:` list. */
function answerText(content: string): string {
  const index = content.search(/\n\s*Sources:\s*\n/);
  return index === -1 ? content : content.slice(0, index);
}

function parseObject(content: string): GraphResultView | undefined {
  try {
    const value = JSON.parse(content) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as GraphResultView)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Asks one structural question through the real `ask` path (a conversation on the local
 * runtime, run until the bus is idle) and reads back what the scorer needs.
 */
export async function askStructural(
  runtime: LocalRuntime,
  question: StructuralQuestion,
  conversationName: string,
): Promise<StructuralObservation> {
  const { resources } = runtime.deps;
  const started = performance.now();
  const conversation = await startConversation(resources, {
    user: 'cli:eval',
    channel: { kind: 'cli' },
    content: question.text,
    conversationName,
  });
  await runtime.bus.idle();
  const ms = Math.round(performance.now() - started);
  const below = await resources.list(SYSTEM_ACTOR, conversation.conversation);
  const calls = below
    .filter((r): r is ToolCallResource => r.meta.type === 'tool.Call')
    .filter((call) => call.call.name === 'graph')
    .sort((a, b) => a.meta.name.localeCompare(b.meta.name));
  const results = calls.flatMap((call) => {
    const result = below.find(
      (r): r is Message =>
        r.meta.type === 'common.Message' &&
        parentOf(r.meta.id) === parentOf(call.meta.id) &&
        r.meta.name === `result-${call.meta.name}`,
    );
    return result ? [{ status: result.status ?? 'OK', content: result.content }] : [];
  });
  const answer = below.find((r): r is Message => r.meta.id === conversation.answer);
  return { graphResults: results, answer: answer?.content ?? '', citations: answer?.citations ?? [], ms };
}

const pct = (n: number, of: number) => (of === 0 ? '–' : `${Math.round((100 * n) / of)} %`);
const mark = (ok: boolean) => (ok ? '✓' : '·');

/**
 * One row per question (held-out ids starred), then the rates over the tuning and held-out
 * questions, the filter and two-hop questions (issue 21, with their own tuning/held-out split)
 * and the whole set (Markdown). "each hop cited" and "filtered" count only the questions that
 * have hops or absent names ("–" in a row where they do not apply).
 */
export function structuralTable(scores: readonly StructuralScore[]): string {
  const rows = scores.map(
    (s) =>
      `| ${s.id}${s.heldOut ? '*' : ''} | ${mark(s.graph)} | ${mark(s.subject)} | ${mark(s.cited)} | ${s.hops === undefined ? '–' : mark(s.hops)} | ${s.found.length}/${s.found.length + s.missing.length}${s.missing.length > 0 ? ` (missing ${s.missing.join(', ')})` : ''} | ${s.filtered === undefined ? '–' : s.filtered ? '✓' : `· (lists ${s.unfiltered.join(', ')})`} | ${mark(s.hit)} | ${s.ms} |`,
  );
  const asked = scores.filter((s) => s.kind !== undefined);
  const groups: [string, StructuralScore[]][] = [
    ['tuning', scores.filter((s) => !s.heldOut)],
    ['held out', scores.filter((s) => s.heldOut)],
    ['filters', scores.filter((s) => s.kind === 'filter')],
    ['two hops', scores.filter((s) => s.kind === 'two-hop')],
    ['filters & two hops, tuning', asked.filter((s) => !s.heldOut)],
    ['filters & two hops, held out', asked.filter((s) => s.heldOut)],
    ['all', [...scores]],
  ];
  return [
    '| question | graph called | subject | cited | each hop cited | terms in answer | filtered | hit | ms |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
    ...groups.filter(([, group]) => group.length > 0).map(([name, group]) => totalsRow(name, group)),
  ].join('\n');
}

function totalsRow(name: string, scores: readonly StructuralScore[]): string {
  const n = scores.length;
  const rate = (f: (s: StructuralScore) => boolean, among: readonly StructuralScore[] = scores) =>
    pct(among.filter(f).length, among.length);
  const found = scores.reduce((sum, s) => sum + s.found.length, 0);
  const expected = scores.reduce((sum, s) => sum + s.found.length + s.missing.length, 0);
  const withHops = scores.filter((s) => s.hops !== undefined);
  const withAbsent = scores.filter((s) => s.filtered !== undefined);
  return `| ${name} (${n}) | ${rate((s) => s.graph)} | ${rate((s) => s.subject)} | ${rate((s) => s.cited)} | ${rate((s) => s.hops === true, withHops)} | ${pct(found, expected)} | ${rate((s) => s.filtered === true, withAbsent)} | ${rate((s) => s.hit)} | |`;
}
