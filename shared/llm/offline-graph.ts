import { describeFilter, type MemberFilter } from '../graph/structure.js';
import type { JsonValue } from './port.js';

/**
 * The offline model's use of the `graph` tool (issue 13): deterministic plumbing that turns a
 * structural question ("what properties does BucketProps take", "which classes implement
 * IGrantable", "what does Rule extend") into a graph call, and the graph's JSON result into an
 * answer that lists what the graph holds, with the sources it returned. No canned facts: every
 * name, type and default in the answer comes from the tool result. Issue 21: the phrasing also
 * maps to the tool's `follow` hops ("the base class of Queue", "the base of the base", "the
 * encryption property of BucketProps") and `where` filter ("required properties", "methods
 * taking an IGrantable", "static methods"), the same arguments a real model sends
 * ({@link structuralQuery}).
 */

/** Words that start a question and are capitalised without naming an entity. */
const NOT_ENTITIES = new Set([
  'What',
  'Which',
  'Who',
  'How',
  'Does',
  'Do',
  'Is',
  'Are',
  'Can',
  'List',
  'Show',
  'Tell',
  'Give',
  'The',
  'A',
  'An',
  'In',
  'For',
  'Of',
  'And',
  'Or',
  'I',
  'AWS',
  'CDK',
  'S3',
  'API',
  'When',
  'Where',
  'Why',
]);

/** True when the question asks about structure (properties, defaults, bases, implementations, members). */
export function isStructuralQuestion(question: string): boolean {
  return (
    entityNames(question).length > 0 &&
    /\b(propert(y|ies)|props|defaults?|extends?|inherit\w*|base (class|type|of)|parent class|superclass|implement\w*|methods?|members?|values|fields?|attributes?|takes?)\b|['’]s? base\b/i.test(
      question,
    )
  );
}

/**
 * Identifier-like names in a question (`BucketProps`, `IGrantable`, `aws_s3.Bucket`), most
 * specific first. A name directly followed by another ("the DynamoDB Table class", "the Lambda
 * Alias") qualifies the name after it, the head of the noun phrase, and comes after the names
 * that are heads.
 */
export function entityNames(question: string): string[] {
  const pattern = /`?\b(?:[a-z][a-z0-9_]*\.)?[A-Z][A-Za-z0-9]*\b`?/g;
  /** The name right after a match (sticky: read in place, so the scan stays linear). */
  const follower = /\s+`?((?:[a-z][a-z0-9_]*\.)?[A-Z][A-Za-z0-9]*)/y;
  const qualifiers = new Set<string>();
  const names: string[] = [];
  for (const match of question.matchAll(pattern)) {
    const name = match[0].replace(/`/g, '');
    if (NOT_ENTITIES.has(name)) continue;
    names.push(name);
    follower.lastIndex = (match.index ?? 0) + match[0].length;
    const next = follower.exec(question)?.[1];
    if (next && !NOT_ENTITIES.has(next)) qualifiers.add(name);
  }
  const score = (n: string) =>
    (qualifiers.has(n) ? -5 : 0) +
    (n.includes('.') ? 3 : 0) +
    (/[a-z][A-Z]|^I[A-Z]/.test(n) ? 2 : 0) +
    n.length / 100;
  return [...new Set(names)].sort((a, b) => score(b) - score(a));
}

/** Primitive type names a filter may name in lower case ("take a boolean"). */
const PRIMITIVES = new Set(['boolean', 'string', 'number', 'any', 'date', 'json']);

/** Words after "X's" that are not a property name ("Function's base class"). */
const NOT_PROPERTIES = new Set([
  'base',
  'parent',
  'super',
  'superclass',
  'own',
  'properties',
  'property',
  'props',
  'methods',
  'method',
  'members',
  'interfaces',
  'defaults',
  'default',
  'type',
  'values',
  'fields',
  'constructor',
]);

const NAME = '`?\\b((?:[a-z][a-z0-9_]*\\.)?[A-Z][A-Za-z0-9]*)`?';

/**
 * The property a question follows to its type, and the type that has it: "the encryption
 * property of (the) BucketProps", "QueueProps' deadLetterQueue", "BucketProps.encryption".
 */
function propertyHop(question: string): { owner: string; name: string } | undefined {
  const of = new RegExp(
    `\`?\\b([a-z][A-Za-z0-9]*)\`?\\s+(?:property|prop|field|attribute)\\s+of\\s+(?:the\\s+)?(?:[A-Z][A-Za-z0-9]*\\s+)*?${NAME}`,
  ).exec(question);
  if (of) return { name: of[1] as string, owner: of[2] as string };
  for (const m of question.matchAll(new RegExp(`${NAME}(?:'s|’s|'|’)\\s+\`?([a-z][A-Za-z0-9]*)\\b`, 'g')))
    if (!NOT_PROPERTIES.has(m[2] as string)) return { owner: m[1] as string, name: m[2] as string };
  const dotted = /\b([A-Z][A-Za-z0-9]*)\.([a-z][A-Za-z0-9]*)\b/.exec(question);
  return dotted ? { owner: dotted[1] as string, name: dotted[2] as string } : undefined;
}

/** What a structural question asks, as the `graph` tool's typed arguments (shared/graph/structure.ts). */
export interface StructuralQuery {
  /** Entity names to describe, best first (later ones are tried when the first is not found). */
  candidates: string[];
  /** Hops: `base`, `property:<name>`. */
  follow: string[];
  where?: MemberFilter;
}

/** A type name a filter phrase captured (`IGrantable`, `boolean`, `Durations` → `Duration`), or undefined. */
function typeWord(word: string | undefined, plural = false): string | undefined {
  if (!word) return undefined;
  const bare = word.replace(/`/g, '');
  const singular = plural && /[a-z]s$/.test(bare) && bare.length > 4 ? bare.slice(0, -1) : bare;
  if (/^(?:[a-z][a-z0-9_]*\.)?[A-Z][A-Za-z0-9]*$/.test(singular)) return singular;
  return PRIMITIVES.has(singular.toLowerCase()) ? singular.toLowerCase() : undefined;
}

/**
 * Maps a structural question's phrasing to the graph tool's arguments: the entity, the hops
 * ("the base class of X", "X's base class", "the base of the base of X": one `base` per mention,
 * less the one asked for by "what is the base…"; "the p property of X", "X's p", `X.p`:
 * `property:p`) and the member filter ("required"/"optional" properties; methods that "take",
 * "accept" or have a parameter of a type; that "return" a type; properties "of type T" or that
 * "take a T"; "static"; "declared"/"own"/"not inherited").
 */
export function structuralQuery(question: string): StructuralQuery {
  const methods = /\bmethods?\b/i.test(question);
  const properties = /\b(propert(y|ies)|props|fields?)\b/i.test(question);
  const where: MemberFilter = {};
  const T = '`?((?:[a-z][a-z0-9_]*\\.)?[A-Za-z][A-Za-z0-9]*)`?';
  const taken = typeWord(
    new RegExp(`\\b(?:takes?|taking|accepts?|accepting)\\s+(?:an?\\s+|the\\s+)?${T}`, 'i').exec(
      question,
    )?.[1],
  );
  const parameter =
    typeWord(new RegExp(`\\bparameters?\\s+of\\s+type\\s+${T}`, 'i').exec(question)?.[1]) ??
    typeWord(new RegExp(`\\b${T}\\s+(?:as\\s+an?\\s+)?(?:parameter|argument)`, 'i').exec(question)?.[1]);
  const returned = typeWord(
    new RegExp(`\\breturn(?:s|ing)?\\s+(?:an?\\s+|the\\s+)?${T}`, 'i').exec(question)?.[1],
  );
  const ofType =
    typeWord(new RegExp(`\\bof\\s+type\\s+${T}`, 'i').exec(question)?.[1]) ??
    typeWord(new RegExp(`\\bare\\s+(?:an?\\s+)?${T}`, 'i').exec(question)?.[1], true);
  if (methods && (parameter ?? taken)) where.takes = (parameter ?? taken) as string;
  if (methods && returned) where.returns = returned;
  if (!methods && properties && (ofType ?? taken)) where.type = (ofType ?? taken) as string;
  const required = /\b(required|mandatory)\b/i.test(question);
  const optional = /\boptional\b/i.test(question);
  if (required !== optional) where.optional = optional;
  if (/\bstatic\b/i.test(question)) where.static = true;
  if (/\b(declares?|declared|own|not inherited|defined (directly )?on)\b/i.test(question))
    where.inherited = false;
  else if (/\binherit(s|ed)?\b/i.test(question) && (methods || properties || /\bmembers?\b/i.test(question)))
    where.inherited = true;
  if (Object.keys(where).length > 0) {
    if (methods && !properties) where.kind = 'method';
    else if (properties && !methods && !where.takes && !where.returns) where.kind = 'property';
  }
  const filterTypes = new Set([where.takes, where.returns, where.type].filter(Boolean));
  const follow: string[] = [];
  let owner: string | undefined;
  const property = propertyHop(question);
  if (property) {
    owner = property.owner;
    follow.push(`property:${property.name}`);
  }
  const bases = question.match(/\b(base|parent|super)(\s+class)?\b|\bsuperclass\b/gi)?.length ?? 0;
  const asksBase = /^\s*(what|which)\s+(is|are)\s+the\s+(base|parent|super)/i.test(question) ? 1 : 0;
  for (let i = 0; i < bases - asksBase; i++) follow.unshift('base');
  const names = entityNames(question).filter((n) => !filterTypes.has(n) && n !== owner);
  const query: StructuralQuery = { candidates: owner ? [owner, ...names] : names, follow };
  if (Object.keys(where).length > 0) query.where = where;
  return query;
}

/**
 * The graph call for a structural question: patterns when it asks what implements the entity
 * (the name comes after "implement": "which classes implement IGrantable"), else `describe`
 * (which also answers "what does Rule implement").
 */
export function graphCallFor(question: string): Record<string, JsonValue> {
  const [name] = structuralQuery(question).candidates;
  const implement = question.search(/\bimplement\w*\b/i);
  if (name && implement !== -1 && question.indexOf(name, implement) !== -1) {
    const label = name.slice(name.lastIndexOf('.') + 1);
    return {
      patterns: [
        ['?interface', 'rdfs:label', JSON.stringify(label)],
        ['?class', 'jsii:conformsTo', '?interface'],
        ['?class', 'a', 'jsii:Class'],
      ],
      limit: 100,
    };
  }
  return describeCall(name ?? question, structuralQuery(question));
}

/** `{ describe, follow?, where? }` for one candidate entity. */
function describeCall(entity: string, query: StructuralQuery): Record<string, JsonValue> {
  const call: Record<string, JsonValue> = { describe: entity };
  if (query.follow.length > 0) call.follow = query.follow;
  if (query.where) call.where = query.where as Record<string, JsonValue>;
  return call;
}

interface PathStepView {
  entity?: string;
  via?: string;
  member?: string;
  valueType?: string;
  to?: string;
  sources?: string[];
}

interface DescribeView {
  entity?: string;
  basesNotRead?: string[];
  outgoing?: [string, string][];
  incoming?: [string, string][];
  members?: Record<string, Record<string, string>>;
  path?: PathStepView[];
  filter?: { where?: MemberFilter; matched?: number; of?: number };
  notInGraph?: boolean;
  bindings?: Record<string, string>[];
  total?: number;
  next?: number;
  sources?: string[];
}

/**
 * An answer from graph results (`describe`, with its hops and filter, or pattern bindings),
 * listing every member or binding returned, then the sources. Several results (the candidates
 * of an ambiguous name, answered side by side) give one section each. Undefined when nothing is
 * a graph result.
 */
export function graphAnswer(question: string, result: unknown): string | undefined {
  const views = (Array.isArray(result) ? result : [result]).filter(
    (view): view is DescribeView => typeof view === 'object' && view !== null,
  );
  const sections = views.map((view) => answerSection(question, view)).filter((s) => s !== undefined);
  if (sections.length === 0) return undefined;
  const sources = [
    ...new Set(
      views.flatMap((view) =>
        (view.sources ?? []).filter((s) => typeof s === 'string' && s.startsWith('cld:')),
      ),
    ),
  ];
  const entity = views.find((view) => view.entity)?.entity ?? '';
  const name = entity.slice(entity.lastIndexOf('.') + 1);
  const intro =
    sections.length > 1 ? `\`${name}\` names ${sections.length} types; each is answered:\n\n` : '';
  return `${intro}${sections.join('\n\n')}${sourceList(sources)}`;
}

/** One result's part of the answer, without sources. */
function answerSection(question: string, view: DescribeView): string | undefined {
  const lines: string[] = [];
  if (view.entity && (view.outgoing || view.members)) {
    for (const [i, step] of (view.path ?? []).entries()) lines.push(hopLine(i, step));
    if (view.notInGraph) {
      lines.push(`${code(view.entity)} is not described in this graph (it belongs to another assembly).`);
      return lines.join('\n');
    }
    const name = view.entity.slice(view.entity.lastIndexOf('.') + 1);
    const facts = new Map<string, string[]>();
    for (const [p, o] of view.outgoing ?? []) facts.set(p, [...(facts.get(p) ?? []), o]);
    const kind = (facts.get('rdf:type')?.[0] ?? '').replace('jsii:', '').toLowerCase();
    const summary = facts.get('rdfs:comment')?.[0];
    if (lines.length > 0) lines.push('');
    lines.push(
      `\`${name}\`${kind ? ` is ${/^[aeiou]/.test(kind) ? 'an' : 'a'} ${kind}` : ''} (${view.entity})${summary ? `: ${unquote(summary)}` : '.'}`,
    );
    const bases = facts.get('jsii:extends') ?? [];
    if (bases.length > 0) lines.push(`It extends ${bases.map(code).join(', ')}.`);
    const implemented = facts.get('jsii:implements') ?? [];
    if (implemented.length > 0) lines.push(`It implements ${implemented.map(code).join(', ')}.`);
    const conforms = (facts.get('jsii:conformsTo') ?? []).filter((i) => !implemented.includes(i));
    if (conforms.length > 0 && /\b(interfaces?|implement\w*)\b/i.test(question))
      lines.push(`Through its bases it also satisfies ${conforms.map(code).join(', ')}.`);
    if (view.filter?.where) lines.push(...filteredMembers(view));
    else lines.push(...memberLines(view, /\bmethods?\b/i.test(question)));
    if ((view.basesNotRead ?? []).length > 0)
      lines.push(
        '',
        `Not listed: what it inherits from ${(view.basesNotRead ?? []).map(code).join(', ')} (describe ${(view.basesNotRead ?? []).length > 1 ? 'them' : 'it'} to see).`,
      );
  } else if (Array.isArray(view.bindings)) {
    if (view.bindings.length === 0) return 'The graph has no match for this question.';
    const variable =
      Object.keys(view.bindings[0] ?? {}).find((k) => k === 'class') ??
      Object.keys(view.bindings[0] ?? {})[0];
    const values = view.bindings.map((b) => b[variable as string] as string);
    lines.push(
      `${view.total ?? values.length} match(es)${view.next !== undefined ? ` (first ${values.length} shown)` : ''}:`,
    );
    for (const value of values) lines.push(`- ${code(value)}`);
  } else return undefined;
  return lines.map((line) => line.replace(/\s*\n\s*/g, ' ')).join('\n');
}

/** One hop of a path, with the sources that hold it: "1. `Queue` extends `QueueBase` (source: cld:…)". */
function hopLine(index: number, step: PathStepView): string {
  const graphs = (step.sources ?? []).filter((s) => s.includes('/doc.Graph.'));
  const cited = graphs.length > 0 ? ` (source: ${graphs.join(', ')})` : '';
  const what =
    step.via === 'jsii:property'
      ? `the \`${(step.member ?? '').slice((step.member ?? '').lastIndexOf('/') + 1)}\` property of ${code(step.entity ?? '')} is of type ${code(step.to ?? '')}${step.valueType ? ` (written \`${step.valueType}\`)` : ''}`
      : `${code(step.entity ?? '')} extends ${code(step.to ?? '')}`;
  return `${index + 1}. ${what.charAt(0).toUpperCase()}${what.slice(1)}${cited}.`;
}

/** Members listed as `describe` returned them: properties (or, when methods are asked, methods) and enum members. */
function memberLines(view: DescribeView, asksMethods: boolean): string[] {
  const lines: string[] = [];
  const members = Object.entries(view.members ?? {});
  const properties = members.filter(([, m]) => m['jsii:valueType'] !== undefined);
  const methods = members.filter(([, m]) => m['jsii:signature'] !== undefined);
  const enumMembers = members.filter(
    ([, m]) => m['jsii:valueType'] === undefined && m['jsii:signature'] === undefined,
  );
  if (properties.length > 0 && !asksMethods) {
    lines.push('', `${properties.length} properties:`);
    for (const entry of properties) lines.push(propertyLine(entry));
  }
  if (properties.length > 0 && asksMethods) lines.push(`It has ${properties.length} properties.`);
  if (methods.length > 0 && asksMethods) {
    lines.push('', `${methods.length} methods:`);
    for (const entry of methods) lines.push(methodLine(entry));
  }
  if (enumMembers.length > 0)
    lines.push('', `Members: ${enumMembers.map(([label]) => code(label)).join(', ')}.`);
  return lines;
}

/** The members a filter kept, under a heading that says what was kept of how many. */
function filteredMembers(view: DescribeView): string[] {
  const filter = view.filter as { where: MemberFilter; matched?: number; of?: number };
  const members = Object.entries(view.members ?? {});
  const what = describeFilter(filter.where, members.length);
  if (members.length === 0) return ['', `No ${what} (of ${filter.of ?? 0} members).`];
  const lines = ['', `${members.length} ${what} (of ${filter.of ?? members.length} members):`];
  for (const entry of members) {
    const [label, m] = entry;
    if (m['jsii:valueType'] !== undefined) lines.push(propertyLine(entry));
    else if (m['jsii:signature'] !== undefined) lines.push(methodLine(entry));
    else lines.push(`- ${code(label)}`);
  }
  return lines;
}

function propertyLine([label, m]: [string, Record<string, string>]): string {
  const optional = m['jsii:optional'] === 'true' ? 'optional' : 'required';
  const fallback = m['jsii:default'] !== undefined ? `; default: ${m['jsii:default']}` : '';
  const text = m['rdfs:comment'] ? ` — ${m['rdfs:comment']}` : '';
  return `- \`${label}\` (${m['jsii:valueType']}, ${optional}${fallback}${from(m)})${text}`;
}

function methodLine([, m]: [string, Record<string, string>]): string {
  return `- \`${m['jsii:signature']}\`${m.inheritedFrom ? ` (${from(m).slice(2)})` : ''}${m['rdfs:comment'] ? ` — ${m['rdfs:comment']}` : ''}`;
}

/** `; from \`Base\`` for an inherited member (describe's `inheritedFrom`), else nothing. */
function from(member: Record<string, string>): string {
  return member.inheritedFrom ? `; from ${code(member.inheritedFrom)}` : '';
}

function sourceList(sources: readonly string[]): string {
  return sources.length > 0 ? `\n\nSources:\n${sources.map((s) => `- ${s}`).join('\n')}` : '';
}

function code(term: string): string {
  const name = term.startsWith('type:') ? term.slice('type:'.length) : term;
  return `\`${name}\``;
}

function unquote(literal: string): string {
  try {
    return literal.startsWith('"') ? (JSON.parse(literal.replace(/@[a-z-]+$/i, '')) as string) : literal;
  } catch {
    return literal;
  }
}

/**
 * What the graph answered in a conversation: the JSON of its successful `graph` results — the
 * one result, or, when several calls answered (the candidates of an ambiguous name, asked one by
 * one), all of them in call order as an array. Undefined when none succeeded.
 */
export function latestGraphResult(
  messages: readonly { content: readonly unknown[] }[],
  graphToolUseIds: ReadonlySet<string>,
): unknown {
  const results: unknown[] = [];
  for (const message of messages) {
    for (const block of message.content as Record<string, unknown>[]) {
      const result = block.toolResult as ToolResultView | undefined;
      if (!result || !graphToolUseIds.has(result.toolUseId) || result.status === 'error') continue;
      const json = resultJson(result);
      if (json !== undefined) results.push(json);
    }
  }
  return results.length > 1 ? results : results[0];
}

function resultJson(result: ToolResultView): unknown {
  for (const part of result.content) {
    if ('json' in part && part.json !== undefined) return part.json;
    if ('text' in part && typeof part.text === 'string') {
      try {
        return JSON.parse(part.text);
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** A Converse `toolResult` block as the offline model reads it. */
interface ToolResultView {
  toolUseId: string;
  status?: string;
  content: ({ json?: unknown } | { text?: string })[];
}

/** One `graph` call of the conversation and what it returned. */
interface GraphExchange {
  input: Record<string, unknown>;
  status: string | undefined;
  /** The result's text (errors) or JSON text. */
  text: string;
}

/** The conversation's `graph` calls with their results, oldest first (calls without a result yet left out). */
function graphExchanges(
  messages: readonly { content: readonly unknown[] }[],
  graphToolUseIds: ReadonlySet<string>,
): GraphExchange[] {
  const inputs = new Map<string, Record<string, unknown>>();
  const exchanges: GraphExchange[] = [];
  for (const message of messages) {
    for (const block of message.content as Record<string, unknown>[]) {
      const use = block.toolUse as { toolUseId: string; input?: unknown } | undefined;
      if (use && graphToolUseIds.has(use.toolUseId))
        inputs.set(use.toolUseId, (use.input ?? {}) as Record<string, unknown>);
      const result = block.toolResult as ToolResultView | undefined;
      if (!result || !graphToolUseIds.has(result.toolUseId)) continue;
      const text = result.content
        .map((part) =>
          'text' in part && typeof part.text === 'string'
            ? part.text
            : JSON.stringify((part as { json?: unknown }).json),
        )
        .join(' ');
      exchanges.push({ input: inputs.get(result.toolUseId) ?? {}, status: result.status, text });
    }
  }
  return exchanges;
}

/**
 * Most `graph` calls the offline model makes for one question: within the inner loop's default
 * 6 turns (`limits.maxTurns`), room is left for a search when the graph cannot answer, and the answer.
 */
const MAX_GRAPH_CALLS = 4;

/** Most candidates of an ambiguous name answered side by side when the question names no module. */
const MAX_SIDE_BY_SIDE = 3;

/**
 * The next graph call of the inner loop, or undefined when the graph has had its say: the first
 * call for the question; when the graph answered that a name is ambiguous, the candidate whose
 * module the question mentions, else each candidate in turn (at most {@link MAX_SIDE_BY_SIDE},
 * answered side by side); when a name is not found or a hop leads nowhere from it, the next
 * candidate name of the question. Every retry keeps the question's hops and filter.
 */
export function nextGraphCall(
  question: string,
  messages: readonly { content: readonly unknown[] }[],
  graphToolUseIds: ReadonlySet<string>,
): Record<string, JsonValue> | undefined {
  if (graphToolUseIds.size === 0) return graphCallFor(question);
  if (graphToolUseIds.size >= MAX_GRAPH_CALLS) return undefined;
  const exchanges = graphExchanges(messages, graphToolUseIds);
  const last = exchanges.at(-1);
  if (!last || !('describe' in last.input)) return undefined;
  const query = structuralQuery(question);
  const tried = new Set(exchanges.map((e) => e.input.describe));
  const ambiguity = exchanges.find((e) => e.status === 'error' && /names \d+ entities/.test(e.text));
  if (ambiguity) {
    const candidates = [...new Set(ambiguity.text.match(/type:[\w.-]+/g) ?? [])];
    const words = new Set(question.toLowerCase().match(/[a-z0-9]+/g) ?? []);
    const mentioned = candidates.find((c) => {
      const module = /\.([a-z0-9_]+)\.[A-Z]/.exec(c)?.[1] ?? '';
      return module.split('_').some((part) => part !== 'aws' && words.has(part));
    });
    if (mentioned) return tried.has(mentioned) ? undefined : describeCall(mentioned, query);
    const next = candidates.slice(0, MAX_SIDE_BY_SIDE).find((c) => !tried.has(c));
    return next ? describeCall(next, query) : undefined;
  }
  if (last.status !== 'error' || !/NOT_FOUND|not found|no entity|has no /i.test(last.text)) return undefined;
  const next = query.candidates.find((name) => !tried.has(name));
  return next ? describeCall(next, query) : undefined;
}
