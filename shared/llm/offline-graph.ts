import type { JsonValue } from './port.js';

/**
 * The offline model's use of the `graph` tool (issue 13): deterministic plumbing that turns a
 * structural question ("what properties does BucketProps take", "which classes implement
 * IGrantable", "what does Rule extend") into a graph call, and the graph's JSON result into an
 * answer that lists what the graph holds, with the sources it returned. No canned facts: every
 * name, type and default in the answer comes from the tool result.
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
    /\b(propert(y|ies)|props|defaults?|extends?|inherit\w*|base class|implement\w*|methods?|members?|values|fields?|attributes?|takes?)\b/i.test(
      question,
    )
  );
}

/** Identifier-like names in a question (`BucketProps`, `IGrantable`, `aws_s3.Bucket`), most specific first. */
export function entityNames(question: string): string[] {
  const names = question.match(/`?\b(?:[a-z][a-z0-9_]*\.)?[A-Z][A-Za-z0-9]*\b`?/g) ?? [];
  const cleaned = [...new Set(names.map((n) => n.replace(/`/g, '')))].filter((n) => !NOT_ENTITIES.has(n));
  const score = (n: string) =>
    (n.includes('.') ? 3 : 0) + (/[a-z][A-Z]|^I[A-Z]/.test(n) ? 2 : 0) + n.length / 100;
  return cleaned.sort((a, b) => score(b) - score(a));
}

/**
 * The graph call for a structural question: patterns when it asks what implements the entity
 * (the name comes after "implement": "which classes implement IGrantable"), else `describe`
 * (which also answers "what does Rule implement").
 */
export function graphCallFor(question: string): Record<string, JsonValue> {
  const [name] = entityNames(question);
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
  return { describe: name ?? question };
}

interface DescribeView {
  entity?: string;
  basesNotRead?: string[];
  outgoing?: [string, string][];
  incoming?: [string, string][];
  members?: Record<string, Record<string, string>>;
  bindings?: Record<string, string>[];
  total?: number;
  next?: number;
  sources?: string[];
}

/**
 * An answer from a graph result (`describe` or pattern bindings), listing every member or
 * binding returned, then its sources. Undefined when the result is not a graph result.
 */
export function graphAnswer(question: string, result: unknown): string | undefined {
  const view = result as DescribeView;
  if (typeof view !== 'object' || view === null) return undefined;
  const sources = (view.sources ?? []).filter((s) => typeof s === 'string' && s.startsWith('cld:'));
  const lines: string[] = [];
  if (view.entity && (view.outgoing || view.members)) {
    const name = view.entity.slice(view.entity.lastIndexOf('.') + 1);
    const facts = new Map<string, string[]>();
    for (const [p, o] of view.outgoing ?? []) facts.set(p, [...(facts.get(p) ?? []), o]);
    const kind = (facts.get('rdf:type')?.[0] ?? '').replace('jsii:', '').toLowerCase();
    const summary = facts.get('rdfs:comment')?.[0];
    lines.push(
      `\`${name}\`${kind ? ` is ${/^[aeiou]/.test(kind) ? 'an' : 'a'} ${kind}` : ''} (${view.entity})${summary ? `: ${unquote(summary)}` : '.'}`,
    );
    const bases = facts.get('jsii:extends') ?? [];
    if (bases.length > 0) lines.push(`It extends ${bases.map(code).join(', ')}.`);
    const implemented = facts.get('jsii:implements') ?? [];
    if (implemented.length > 0) lines.push(`It implements ${implemented.map(code).join(', ')}.`);
    const members = Object.entries(view.members ?? {});
    const asksMethods = /\bmethods?\b/i.test(question);
    const properties = members.filter(([, m]) => m['jsii:valueType'] !== undefined);
    const methods = members.filter(([, m]) => m['jsii:signature'] !== undefined);
    const enumMembers = members.filter(
      ([, m]) => m['jsii:valueType'] === undefined && m['jsii:signature'] === undefined,
    );
    if (properties.length > 0 && !asksMethods) {
      lines.push('', `${properties.length} properties:`);
      for (const [label, m] of properties) {
        const optional = m['jsii:optional'] === 'true' ? 'optional' : 'required';
        const fallback = m['jsii:default'] !== undefined ? `; default: ${m['jsii:default']}` : '';
        const text = m['rdfs:comment'] ? ` — ${m['rdfs:comment']}` : '';
        lines.push(`- \`${label}\` (${m['jsii:valueType']}, ${optional}${fallback}${from(m)})${text}`);
      }
    }
    if (properties.length > 0 && asksMethods) lines.push(`It has ${properties.length} properties.`);
    if (methods.length > 0 && asksMethods) {
      lines.push('', `${methods.length} methods:`);
      for (const [, m] of methods)
        lines.push(
          `- \`${m['jsii:signature']}\`${m.inheritedFrom ? ` (${from(m).slice(2)})` : ''}${m['rdfs:comment'] ? ` — ${m['rdfs:comment']}` : ''}`,
        );
    }
    if (enumMembers.length > 0)
      lines.push('', `Members: ${enumMembers.map(([label]) => code(label)).join(', ')}.`);
    if ((view.basesNotRead ?? []).length > 0)
      lines.push(
        '',
        `Not listed: what it inherits from ${(view.basesNotRead ?? []).map(code).join(', ')} (describe ${(view.basesNotRead ?? []).length > 1 ? 'them' : 'it'} to see).`,
      );
  } else if (Array.isArray(view.bindings)) {
    if (view.bindings.length === 0) return `The graph has no match for this question.${sourceList(sources)}`;
    const variable =
      Object.keys(view.bindings[0] ?? {}).find((k) => k === 'class') ??
      Object.keys(view.bindings[0] ?? {})[0];
    const values = view.bindings.map((b) => b[variable as string] as string);
    lines.push(
      `${view.total ?? values.length} match(es)${view.next !== undefined ? ` (first ${values.length} shown)` : ''}:`,
    );
    for (const value of values) lines.push(`- ${code(value)}`);
  } else return undefined;
  return `${lines.map((line) => line.replace(/\s*\n\s*/g, ' ')).join('\n')}${sourceList(sources)}`;
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

/** The JSON of the newest successful `graph` tool result in a conversation, if any. */
export function latestGraphResult(
  messages: readonly { content: readonly unknown[] }[],
  graphToolUseIds: ReadonlySet<string>,
): unknown {
  const result = newestGraphResult(messages, graphToolUseIds);
  if (!result || result.status === 'error') return undefined;
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

/** The newest `toolResult` of one of the graph calls, or undefined. */
function newestGraphResult(
  messages: readonly { content: readonly unknown[] }[],
  graphToolUseIds: ReadonlySet<string>,
): ToolResultView | undefined {
  for (const message of [...messages].reverse()) {
    for (const block of message.content as Record<string, unknown>[]) {
      const result = block.toolResult as ToolResultView | undefined;
      if (result && graphToolUseIds.has(result.toolUseId)) return result;
    }
  }
  return undefined;
}

/**
 * The next graph call of the inner loop, or undefined when the graph has had its say: the first
 * call for the question, then, when the graph answered that a name is ambiguous, one more call
 * naming the candidate whose module the question mentions (else the first candidate).
 */
export function nextGraphCall(
  question: string,
  messages: readonly { content: readonly unknown[] }[],
  graphToolUseIds: ReadonlySet<string>,
): Record<string, JsonValue> | undefined {
  if (graphToolUseIds.size === 0) return graphCallFor(question);
  if (graphToolUseIds.size > 1) return undefined;
  const error = latestGraphError(messages, graphToolUseIds);
  const candidates = error?.match(/type:[\w.-]+/g) ?? [];
  if (!/names \d+ entities/.test(error ?? '') || candidates.length === 0) return undefined;
  const words = new Set(question.toLowerCase().match(/[a-z0-9]+/g) ?? []);
  const mentioned = candidates.find((c) => {
    const module = /\.([a-z0-9_]+)\.[A-Z]/.exec(c)?.[1] ?? '';
    return module.split('_').some((part) => part !== 'aws' && words.has(part));
  });
  return { describe: mentioned ?? (candidates[0] as string) };
}

function latestGraphError(
  messages: readonly { content: readonly unknown[] }[],
  graphToolUseIds: ReadonlySet<string>,
): string | undefined {
  const result = newestGraphResult(messages, graphToolUseIds);
  if (!result || result.status !== 'error') return undefined;
  return result.content
    .map((part) => ('text' in part ? part.text : JSON.stringify((part as { json?: unknown }).json)))
    .join(' ');
}
