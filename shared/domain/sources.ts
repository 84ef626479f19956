import { PolicyDeniedError } from '../errors.js';
import type { Actor } from '../policy/port.js';
import type { ResourceIndex } from '../resources/resource-index.js';
import type { Message, SourceRef } from '../resources/schemas.js';
import { sourceLabel } from '../search/source-label.js';
import { parentOf, typeOf } from '../urn.js';
import { sourcesBlockAt } from './sources-block.js';

/**
 * Cited sources as people read them (issue 21 item 4): each citation of an output gets a label,
 * the document and heading of what it names (`aws-ssm README › Lookups`), computed once when the
 * output is written and stored on the Message as `sources` beside `citations`. The "Sources:"
 * block of a combined answer lists the labels; the URNs stay in `citations` and `sources`, for the
 * HTTP view, the console's citation links and the CLI.
 */

/** Longest label kept, in characters (SourceRefSchema's bound). */
export const MAX_LABEL = 300;

/** What a tool result said about a URN it returned: its document's path and its heading trail. */
interface Seen {
  source?: string;
  title?: string;
  /** The Document a `read` of a chunk named (its path is read from the Document). */
  document?: string;
}

/**
 * Labels the citations of an output, in their order, one per citation. The label comes from what
 * the task's tool results said about each URN (a `search` hit's `source` and `title`, a `read`
 * chunk's `heading`); a Chunk or Document they said too little about is read through the policy
 * gate (a Chunk's `heading` and its Document's `path`); a linked-data Graph shard reads as its
 * Document › `API graph` (the shard itself, often megabytes, is not read). A source with neither
 * a path nor a heading, or one the actor may not read, is labelled with its URN.
 * @param results the tool result Messages the task saw (their content is the tools' JSON)
 */
export async function labelCitations(
  resources: ResourceIndex,
  actor: Actor,
  citations: readonly string[],
  results: readonly Pick<Message, 'content'>[],
): Promise<SourceRef[]> {
  const seen = seenInResults(results);
  const unknown = citations.filter((urn) => !seen.get(urn)?.source && isDocumentPart(urn));
  if (unknown.length > 0) await readMissing(resources, actor, unknown, seen);
  return citations.map((urn) => ({ urn, label: clip(sourceLabel(seen.get(urn)) ?? urn) }));
}

/**
 * The sources of a Message, one per citation in the order of `citations`: its stored `sources`
 * where they name the citation, else the URN as its own label (a Message written before labels).
 */
export function sourcesOf(message: Pick<Message, 'citations' | 'sources'>): SourceRef[] {
  const labels = new Map((message.sources ?? []).map((s) => [s.urn, s.label]));
  return (message.citations ?? []).map((urn) => ({ urn, label: labels.get(urn) ?? urn }));
}

/**
 * The "Sources:" block of an answer's content: `Sources:` then one line `- <label>` per source
 * (a label shared by two sources is listed once); empty for no sources. `withoutSources`
 * (common.ts) strips it.
 */
export function sourcesBlock(sources: readonly SourceRef[]): string {
  if (sources.length === 0) return '';
  const labels = [...new Set(sources.map((s) => s.label))];
  return `Sources:\n${labels.map((label) => `- ${label}`).join('\n')}`;
}

function seenInResults(results: readonly Pick<Message, 'content'>[]): Map<string, Seen> {
  const seen = new Map<string, Seen>();
  const note = (item: unknown) => {
    if (typeof item !== 'object' || item === null) return;
    const { urn, source, title, heading, document } = item as Record<string, unknown>;
    if (typeof urn !== 'string') return;
    const known = seen.get(urn) ?? {};
    if (typeof source === 'string' && !known.source) known.source = source;
    const trail = typeof title === 'string' ? title : heading;
    if (typeof trail === 'string' && !known.title) known.title = trail;
    if (typeof document === 'string' && !known.document) known.document = document;
    seen.set(urn, known);
  };
  for (const result of results) {
    let value: unknown;
    try {
      value = JSON.parse(result.content);
    } catch {
      continue;
    }
    const list = (value as { results?: unknown } | null)?.results;
    if (Array.isArray(list)) list.forEach(note);
    else note(value);
  }
  return seen;
}

/** Types whose label comes from a Document: the Document, its Chunks, its linked-data Graph shards. */
const DOCUMENT_PARTS = new Set(['doc.Document', 'doc.Chunk', 'doc.Graph']);

/** The heading a Graph shard's label shows (its shard name is only inside the large resource). */
const GRAPH_HEADING = 'API graph';

function isDocumentPart(urn: string): boolean {
  return DOCUMENT_PARTS.has(typeOf(urn));
}

/** Reads the Chunks and Documents behind `urns` to fill in headings and paths; a denial leaves URN labels. */
async function readMissing(
  resources: ResourceIndex,
  actor: Actor,
  urns: readonly string[],
  seen: Map<string, Seen>,
): Promise<void> {
  const documentOf = (urn: string) =>
    typeOf(urn) === 'doc.Document' ? urn : (seen.get(urn)?.document ?? parentOf(urn));
  try {
    const chunks = urns.filter((urn) => typeOf(urn) === 'doc.Chunk' && !seen.get(urn)?.title);
    const documents = [...new Set(urns.map(documentOf))].filter(
      (urn): urn is string => urn !== undefined && typeOf(urn) === 'doc.Document',
    );
    const read = new Map(
      (await resources.getMany(actor, [...chunks, ...documents])).map((r) => [r.meta.id, r]),
    );
    for (const urn of urns) {
      const known = seen.get(urn) ?? {};
      if (typeOf(urn) === 'doc.Graph' && !known.title) known.title = GRAPH_HEADING;
      const chunk = read.get(urn);
      if (chunk && 'heading' in chunk && typeof chunk.heading === 'string' && !known.title)
        known.title = chunk.heading;
      const document = read.get(documentOf(urn) ?? '');
      if (document && 'path' in document && typeof document.path === 'string') known.source = document.path;
      seen.set(urn, known);
    }
  } catch (error) {
    if (!(error instanceof PolicyDeniedError)) throw error;
  }
}

function clip(label: string): string {
  return label.length <= MAX_LABEL ? label : `${label.slice(0, MAX_LABEL - 1)}…`;
}

/**
 * The content with its "Sources:" block written again, one line per source as `line` renders it
 * (a channel that can show the URN as well as the label, such as the CLI); the content as it is
 * when there are no sources.
 * @param line one source's line without the leading `- `
 */
export function withSourceLines(
  content: string,
  sources: readonly SourceRef[],
  line: (source: SourceRef) => string,
): string {
  if (sources.length === 0) return content;
  const at = sourcesBlockAt(content);
  const body = (at === -1 ? content : content.slice(0, at)).trimEnd();
  const lines = [...new Set(sources.map(line))].map((text) => `- ${text}`);
  return `${body}\n\nSources:\n${lines.join('\n')}`;
}
