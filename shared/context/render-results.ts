import { type HitBridge, hitBridges } from '../search/port.js';
import { processTerm, termsOf } from '../search/terms.js';

/**
 * Tool results as the model needs them (issue 25 item 2): the one place that turns a stored tool
 * result (the tool's JSON, e.g. `search`'s `{ results: [{ urn, title, source, text, score }] }`)
 * into the text a model reads, used by every model adapter path (shared/context/window.ts builds
 * every inner-loop request). What is stored is not changed: the Message keeps the tool's JSON
 * with its URNs (the policies, the eval and the citations read it).
 *
 * A hit (a search result, or a `read` of a chunk: anything with a `urn` and a `text`) is rendered
 * as plain text, code unescaped:
 *
 * ```
 * [3] Amazon S3 Construct Library › Bucket Notifications › EventBridge notifications — aws-s3/README.md
 * Amazon S3 can send events to Amazon EventBridge whenever certain events happen in your bucket.
 * …
 *
 * [4] › Bucket Notifications
 * ```
 *
 * - `[3]` is the hit's **citation id**: the URN it stands for is numbered in order of first
 *   appearance over the task's turns ({@link renderTurnResults}), so the same chunk keeps its id
 *   across turns, and the answer's `[3]` is mapped back to the URN on output ({@link resolveCitations});
 * - the heading trail is given once, in the header (the chunk's own heading lines are dropped);
 *   a hit in the same document as the hit before gives only the rest of its trail after the
 *   document's title (`[4] › Bucket Notifications`), and a document path is shown by its
 *   shortest ending that no other path of the result shares ({@link shortPaths});
 * - the text is the **passage around the hit** ({@link passageOf}): the paragraphs and code blocks
 *   of the chunk that hold the most of the call's query terms and their neighbours, within
 *   {@link PASSAGE_CHARS}; what is left out is marked `…`;
 * - a hit with a `bridge` (shared/search/bridge.ts) ends its header with it, compactly
 *   (`· RetentionDays: How long, in days, the log contents will be retained.`), and its passage
 *   counts each bridged name as a query term, so the code that spells it is shown;
 * - hits after the first {@link PASSAGE_HITS} are listed by their header alone, bridge included
 *   (a model tells by it which to `read`);
 * - a single hit read whole (`read` of a chunk) keeps its whole text: that is what `read` is for;
 * - the score is left out (relative within one query only, it tells the model nothing).
 * Any other tool result (an error, a graph answer, a resource's JSON) is passed through unchanged.
 */

/** Characters of a hit's passage (a chunk is up to ≈1,600): one paragraph and its code, about. */
export const PASSAGE_CHARS = 700;

/**
 * Hits of one result shown with their passage, best first; the ones after are listed by their
 * header alone (id, heading trail, document, bridge), to be `read` by id when one looks relevant.
 */
export const PASSAGE_HITS = 4;

/** Least room (characters) worth filling with the opening lines of the block after a passage's only block. */
export const MIN_CUT_CHARS = 200;

/** Longest single block (a code block) kept whole in a passage; a longer one is cut at a line. */
export const BLOCK_CHARS = 900;

/** One hit of a tool result: what the rendering reads of it. */
export interface ResultHit {
  urn: string;
  text: string;
  /** Heading trail (`search`'s `title`, `read`'s `heading`). */
  title?: string;
  /** The document's path. */
  source?: string;
  /** Names of the hit's code whose API summary holds the query's words (`search`'s `bridge`, shared/search/bridge.ts). */
  bridge?: HitBridge[];
}

/**
 * Citation ids of one task: URN ↔ `n` of `[n]`, numbered from 1 in order of first appearance.
 * Deterministic for the same results in the same order.
 */
export class CitationIds {
  private readonly byUrn = new Map<string, number>();
  private readonly byId: string[] = [];

  /** The id of `urn`, giving it the next one when it has none yet. */
  idOf(urn: string): number {
    const known = this.byUrn.get(urn);
    if (known !== undefined) return known;
    this.byId.push(urn);
    this.byUrn.set(urn, this.byId.length);
    return this.byId.length;
  }

  /** The URN of id `n`, or undefined for an id that was never given. */
  urnOf(n: number): string | undefined {
    return this.byId[n - 1];
  }

  /** How many ids were given. */
  get size(): number {
    return this.byId.length;
  }
}

/** True when a tool result's JSON is a list of hits (`{ results: [...] }`), not one hit read whole. */
function isResultList(content: string): boolean {
  try {
    return Array.isArray((JSON.parse(content) as { results?: unknown }).results);
  } catch {
    return false;
  }
}

/** The hits of a tool result's JSON, or undefined when it is not a hit or a list of hits. */
export function hitsOf(content: string): ResultHit[] | undefined {
  if (!content.startsWith('{')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(content);
  } catch {
    return undefined;
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const results = (value as { results?: unknown }).results;
  const items = Array.isArray(results) ? results : 'results' in value ? undefined : [value];
  if (!items) return undefined;
  const hits: ResultHit[] = [];
  for (const item of items as Record<string, unknown>[]) {
    if (typeof item?.urn !== 'string' || typeof item.text !== 'string') return undefined;
    const title = typeof item.title === 'string' ? item.title : item.heading;
    // `read`'s `document` is a URN: not shown (the model cites and reads by id).
    const source = item.source;
    const bridge = hitBridges(item.bridge);
    hits.push({
      urn: item.urn,
      text: item.text,
      ...(typeof title === 'string' ? { title } : {}),
      ...(typeof source === 'string' ? { source } : {}),
      ...(bridge.length > 0 ? { bridge } : {}),
    });
  }
  return hits;
}

/**
 * The text a model reads for one stored tool result (see the module comment): hits rendered with
 * their citation ids (given from `ids`), passages around the `query`'s terms; anything else
 * unchanged. `No results.` for an empty result list.
 */
export function renderToolResult(content: string, ids: CitationIds, query?: string): string {
  const hits = hitsOf(content);
  if (!hits) return content;
  if (hits.length === 0) return 'No results.';
  if (!isResultList(content)) {
    // One hit read whole (`read` of a chunk): its whole text, as the read tool promises, without
    // its own heading lines (the header gives the trail).
    const [hit] = hits as [ResultHit];
    const text = blocksOf(hit.text)
      .map((b) => b.text)
      .join('\n\n');
    return `[${ids.idOf(hit.urn)}]${hitLabel(hit, undefined)}\n${withoutHeaders(text)}`;
  }
  const terms = new Set(query ? termsOf(query) : []);
  const shown = shortPaths(hits.flatMap((hit) => (hit.source ? [hit.source] : [])));
  const display = hits.map((hit) =>
    hit.source ? { ...hit, source: shown.get(hit.source) ?? hit.source } : hit,
  );
  return display
    .map((hit, rank) => {
      const header = `[${ids.idOf(hit.urn)}]${hitLabel(hit, display[rank - 1])}${bridgeLabel(hit.bridge)}`;
      if (rank >= PASSAGE_HITS) return header;
      // A bridged name counts as a query term: the passage shows the text or code that spells it.
      return `${header}\n${withoutHeaders(passageOf(hit.text, terms, hit.bridge))}`;
    })
    .join('\n\n');
}

/**
 * Each document path of one result as shown: its shortest ending of at least two segments
 * (`aws-events/README.md`) that no other path of the result shares, so a path is told apart
 * from the others without the prefix they all have (`node_modules/aws-cdk-lib/`; issue 25).
 */
export function shortPaths(paths: readonly string[]): Map<string, string> {
  const unique = [...new Set(paths)];
  const segments = unique.map((path) => path.split('/'));
  const shown = new Map<string, string>();
  for (const [i, path] of unique.entries()) {
    const own = segments[i] as string[];
    let keep = Math.min(2, own.length);
    const clash = (n: number) =>
      segments.some((other, j) => j !== i && other.slice(-n).join('/') === own.slice(-n).join('/'));
    while (keep < own.length && clash(keep)) keep++;
    shown.set(path, own.slice(-keep).join('/'));
  }
  return shown;
}

/** A heading trail as shown: its ` > ` separators as ` › `, whitespace collapsed. */
function trailOf(hit: ResultHit): string {
  return (hit.title ?? '')
    .replace(/\s+>\s+/g, ' › ')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * The label after a hit's `[n]` (with its leading space, or empty): `heading trail — document`;
 * for a hit in the same document as the hit before it, only the rest of its trail after the
 * document's title, opened by `›` (`[2] › Rule › Matchers`): the document and its title are
 * the previous hit's (issue 25: about 20 tokens less per such hit). {@link parseRenderedHits}
 * reads both forms back.
 */
function hitLabel(hit: ResultHit, previous: ResultHit | undefined): string {
  const trail = trailOf(hit);
  const head = trail.split(' › ')[0] ?? '';
  if (previous && hit.source && previous.source === hit.source && head) {
    const previousHead = trailOf(previous).split(' › ')[0];
    if (previousHead === head) {
      const rest = trail.slice(head.length).replace(/^ › /, '');
      return rest ? ` › ${rest}` : ' ›';
    }
  }
  const label = [trail, hit.source?.replace(/\s+/g, ' ')].filter(Boolean).join(' — ');
  return label ? ` ${label}` : '';
}

/**
 * Separator of a hit header's bridges: ` · RetentionDays: How long, in days, …` (read back by
 * {@link parseRenderedHits}); at the label's start without the space, for a hit with neither
 * trail nor document (`[5] · RetentionDays: …`).
 */
const BRIDGE = /(?:^| )· (?=[A-Za-z_$][\w$]*: )/;

/**
 * A hit's bridge as its header ends (with its leading ` · `, or empty): `· Name: summary` for
 * each, the summary on one line.
 */
function bridgeLabel(bridge: readonly HitBridge[] | undefined): string {
  return (bridge ?? [])
    .filter(({ name }) => /^[A-Za-z_$][\w$]*$/.test(name))
    .map(({ name, summary }) => ` · ${name}: ${summary.replace(/\s+/g, ' ').trim()}`)
    .join('');
}

/**
 * The query terms a block holds through the hit's bridge: for each bridged name it spells (its
 * index term, `RetentionDays` → `retentiondai`, among the block's terms), the name itself and the
 * query terms of its summary that the block lacks — what the name stands for in the query's words.
 */
function bridgedIn(
  held: ReadonlySet<string>,
  terms: ReadonlySet<string>,
  bridge: readonly HitBridge[] | undefined,
): Set<string> {
  const found = new Set<string>();
  for (const { name, summary } of bridge ?? []) {
    const term = processTerm(name);
    if (!term || !held.has(term)) continue;
    found.add(term);
    for (const t of termsOf(summary)) if (terms.has(t) && !held.has(t)) found.add(t);
  }
  return found;
}

/**
 * A passage with every line outside code fences that reads like a hit header (`[2] …`) escaped
 * (`\\[2] …`): a document's own text cannot then pose as another hit, whose id the answer would
 * be resolved to (a citation of the wrong URN).
 */
export function withoutHeaders(passage: string): string {
  let fence: string | undefined;
  return passage
    .split('\n')
    .map((line) => {
      const marker = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1];
      if (marker && (fence === undefined || marker.startsWith(fence))) {
        fence = fence === undefined ? marker : undefined;
        return line;
      }
      return fence === undefined && /^\s*\[\d{1,4}\]/.test(line) ? `\\${line.trimStart()}` : line;
    })
    .join('\n');
}

/** A prior turn as {@link renderTurnResults} reads it: its tool calls and their result Messages. */
export interface TurnResults {
  turn: { toolCalls?: { id: string; input?: unknown }[] | undefined };
  results: readonly { meta: { id: string }; content: string; toolCallId?: string | undefined }[];
}

/**
 * Renders every tool result of a task's turns, in order, with one {@link CitationIds} for the
 * task: the text of each result by its Message URN, and the ids (to map the answer's back).
 * The query of a result is its call's `query` argument, when it has one.
 */
export function renderTurnResults(turns: readonly TurnResults[]): {
  texts: Map<string, string>;
  ids: CitationIds;
} {
  const ids = new CitationIds();
  const texts = new Map<string, string>();
  for (const { turn, results } of turns) {
    for (const result of results) {
      const call = turn.toolCalls?.find((c) => c.id === result.toolCallId);
      const input = call?.input as { query?: unknown } | undefined;
      const query = typeof input?.query === 'string' ? input.query : undefined;
      texts.set(result.meta.id, renderToolResult(result.content, ids, query));
    }
  }
  return { texts, ids };
}

/**
 * `[3]`, `[3, 5]` or `[3][5]` citation markers in an answer's prose: not right after a word
 * character or a closing bracket (`items[1]`, `matrix[0][1]` index code), nor right before `(` (a
 * Markdown link `[1](https://…)`) or a `:` and a URL (a link reference `[1]: https://…`).
 */
const CITATION_MARKER = /(?<![\w\])])\[(\d{1,4}(?:\s*,\s*\d{1,4})*)\](?!\(|:\s*<?[a-z][\w+.-]*:\/\/)/g;

/** Fenced code blocks and inline code spans: left as written by {@link resolveCitations}. */
const CODE = /(^|\n) {0,3}(`{3,}|~{3,})[^\n]*\n[\s\S]*?(?:\n {0,3}\2[^\n]*(?=\n|$)|$)|`[^`\n]+`/g;

/**
 * An answer with its citation ids replaced by the URNs they stand for: `[3]` → the URN of id 3,
 * `[3, 5]` → both URNs joined by `, `. Code (fenced blocks, inline spans) is left alone, and so
 * is a marker right after a word or a bracket (an index, `items[1]`) or naming an id that was
 * never given (a footnote).
 */
export function resolveCitations(text: string, ids: CitationIds): string {
  const prose = (part: string) =>
    part.replace(CITATION_MARKER, (marker, list: string) => {
      const urns = list.split(',').map((n) => ids.urnOf(Number(n.trim())));
      if (urns.some((urn) => urn === undefined)) return marker;
      return urns.join(', ');
    });
  let out = '';
  let last = 0;
  for (const match of text.matchAll(CODE)) {
    out += prose(text.slice(last, match.index)) + match[0];
    last = match.index + match[0].length;
  }
  return out + prose(text.slice(last));
}

/** A paragraph or a fenced code block of a chunk. */
interface Block {
  text: string;
  code: boolean;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const HEADING_LINE = /^ {0,3}#{1,6}\s/;
const LINK_REFERENCE = /^ {0,3}\[[^\]]+\]:\s*\S+\s*$/;

/** Splits Markdown into paragraphs and fenced code blocks, heading lines and link references dropped. */
export function blocksOf(text: string): Block[] {
  const blocks: Block[] = [];
  let lines: string[] = [];
  let fence: string | undefined;
  const flush = (code: boolean) => {
    const joined = lines.join('\n').trim();
    if (joined) blocks.push({ text: joined, code });
    lines = [];
  };
  for (const line of text.split('\n')) {
    if (fence !== undefined) {
      lines.push(line);
      if (line.trim().startsWith(fence)) {
        flush(true);
        fence = undefined;
      }
      continue;
    }
    const opening = FENCE.exec(line);
    if (opening) {
      flush(false);
      fence = opening[1] as string;
      lines.push(line);
      continue;
    }
    if (line.trim() === '') {
      flush(false);
      continue;
    }
    if (HEADING_LINE.test(line) || LINK_REFERENCE.test(line)) continue;
    lines.push(line);
  }
  // An unclosed fence (a chunk cut inside its code) is still code.
  flush(fence !== undefined);
  return blocks;
}

/** A block longer than {@link BLOCK_CHARS}, cut at a line, the fence closed again. */
function capBlock(block: Block, limit = BLOCK_CHARS): string {
  if (block.text.length <= limit) return block.text;
  const lines = block.text.split('\n');
  const kept: string[] = [];
  let length = 0;
  for (const line of lines) {
    if (length + line.length + 1 > limit - 8) break;
    kept.push(line);
    length += line.length + 1;
  }
  if (!block.code) return `${kept.join('\n').trimEnd()} …`;
  const fence = FENCE.exec(lines[0] ?? '')?.[1] ?? '```';
  return `${kept.join('\n')}\n// …\n${fence}`;
}

/**
 * The passage of `text` around the hit: the block (paragraph or code block) holding the most of
 * `terms` (the first block when none holds any), then its neighbours — the next block first, so
 * a sentence keeps the code it introduces — while the passage stays within {@link PASSAGE_CHARS}
 * (the best block alone may be longer, up to {@link BLOCK_CHARS}); when no neighbour fits beside
 * the best block, the block after it is cut at a line to the room left (at least
 * {@link MIN_CUT_CHARS}: the opening items of a list of API calls); past the limit, the code block
 * right after it when the passage's last paragraph introduces it (ends with `:`), and, when the
 * passage has no code, the chunk's nearest code block after it (else before it). Blocks left out
 * are marked by a `…` line. A text within the limit is returned whole (headings dropped). A block
 * that spells a name of the hit's `bridge` also holds that name and the query terms of its summary
 * (shared/search/bridge.ts: why the hit matched).
 */
export function passageOf(text: string, terms: ReadonlySet<string>, bridge?: readonly HitBridge[]): string {
  const blocks = blocksOf(text);
  if (blocks.length === 0) return '';
  const whole = blocks.map((b) => b.text).join('\n\n');
  if (whole.length <= PASSAGE_CHARS) return whole;
  let best = 0;
  let bestScore = -1;
  blocks.forEach((block, i) => {
    const held = new Set(termsOf(block.text));
    const found = [...held].filter((t) => terms.has(t)).length + bridgedIn(held, terms, bridge).size;
    if (found > bestScore) {
      best = i;
      bestScore = found;
    }
  });
  let first = best;
  let last = best;
  let length = Math.min(blocks[best]?.text.length ?? 0, BLOCK_CHARS);
  for (;;) {
    const next = blocks[last + 1];
    const previous = blocks[first - 1];
    if (next && length + next.text.length + 2 <= PASSAGE_CHARS) {
      last += 1;
      length += next.text.length + 2;
    } else if (previous && length + previous.text.length + 2 <= PASSAGE_CHARS) {
      first -= 1;
      length += previous.text.length + 2;
    } else break;
  }
  // Prose that introduces code (ends with ":") keeps the code block that follows it even past the
  // limit (cut at BLOCK_CHARS); a passage without code gets the chunk's nearest code block after
  // it (else before it): the example is what answers a "how do I".
  const kept = new Set<number>();
  for (let i = first; i <= last; i += 1) kept.add(i);
  // A best block that no neighbour fits beside keeps the opening lines of the block after it,
  // cut to the room left (the list of API calls after "Images can be obtained from …").
  const cut = new Map<number, number>();
  const room = PASSAGE_CHARS - length - 2;
  if (first === last && blocks[last + 1] && room >= MIN_CUT_CHARS) {
    kept.add(last + 1);
    cut.set(last + 1, room);
  }
  const introduces = /:\s*$/.test(blocks[last]?.text ?? '');
  if (blocks[last + 1]?.code && introduces) kept.add(last + 1);
  if (![...kept].some((i) => blocks[i]?.code)) {
    const later = blocks.findIndex((b, i) => i > last && b.code);
    const earlier = blocks.findLastIndex((b, i) => i < first && b.code);
    const code = later !== -1 ? later : earlier;
    if (code !== -1) kept.add(code);
  }
  const parts: string[] = [];
  let previous = -1;
  for (const i of [...kept].sort((a, b) => a - b)) {
    if (i > previous + 1) parts.push('…');
    parts.push(capBlock(blocks[i] as Block, cut.get(i)));
    previous = i;
  }
  if (previous < blocks.length - 1) parts.push('…');
  return parts.join('\n\n');
}

const HIT_HEADER = /^\[(\d{1,4})\](?: (.*))?$/;

/**
 * The hits of a rendered tool result ({@link renderToolResult}), for a reader of the Converse
 * request (the offline model): each `urn` is the citation id as written (`[3]`), `title` and
 * `source` from the header, `text` the passage. A header line inside a code block is not taken
 * for one. Empty for text that is not a rendered result.
 */
export function parseRenderedHits(text: string): ResultHit[] {
  const hits: ResultHit[] = [];
  let current: { header: RegExpExecArray; lines: string[] } | undefined;
  let fence: string | undefined;
  const flush = () => {
    if (!current) return;
    const [, id, full = ''] = current.header;
    // The bridge ends the header: ` · Name: summary` each.
    const at = full.search(BRIDGE);
    const label = at === -1 ? full : full.slice(0, at);
    const bridge = (at === -1 ? [] : full.slice(at).split(BRIDGE).slice(1)).flatMap((part) => {
      const colon = part.indexOf(': ');
      return colon > 0 ? [{ name: part.slice(0, colon), summary: part.slice(colon + 2).trim() }] : [];
    });
    const previous = hits.at(-1);
    let title: string;
    let source: string | undefined;
    if ((label === '›' || label.startsWith('› ')) && previous) {
      // Same document as the hit before: its title, then the rest of this hit's trail.
      const head = (previous.title ?? '').split(' › ')[0] ?? '';
      const rest = label.slice(1).trim();
      title = rest ? `${head} › ${rest}` : head;
      source = previous.source;
    } else {
      const cut = label.lastIndexOf(' — ');
      title = cut === -1 ? label : label.slice(0, cut);
      source = cut === -1 ? undefined : label.slice(cut + ' — '.length);
    }
    hits.push({
      urn: `[${id}]`,
      text: current.lines.join('\n').trim(),
      ...(title ? { title } : {}),
      ...(source ? { source } : {}),
      ...(bridge.length > 0 ? { bridge } : {}),
    });
  };
  for (const line of text.split('\n')) {
    const header = fence === undefined ? HIT_HEADER.exec(line) : null;
    if (header) {
      flush();
      current = { header, lines: [] };
      continue;
    }
    const opening = FENCE.exec(line);
    if (opening && fence === undefined) fence = opening[1];
    else if (fence !== undefined && line.trim().startsWith(fence)) fence = undefined;
    current?.lines.push(line);
  }
  flush();
  return hits;
}

/**
 * Tool-call arguments with a citation id given for a URN (`{ "urn": "[3]" }`, as the `read` tool
 * allows) replaced by the URN it stands for, so what is stored and executed is the URN. Only a
 * top-level `urn` argument that is exactly one known id is replaced; anything else (another
 * tool's `"[1]"` argument included) is unchanged.
 */
export function resolveCitationArguments<T>(input: T, ids: CitationIds): T {
  if (!input || typeof input !== 'object' || Array.isArray(input)) return input;
  let changed = false;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input as Record<string, unknown>)) {
    const id =
      key === 'urn' && typeof value === 'string' ? /^\[(\d{1,4})\]$/.exec(value.trim())?.[1] : undefined;
    const urn = id === undefined ? undefined : ids.urnOf(Number(id));
    out[key] = urn ?? value;
    if (urn) changed = true;
  }
  return changed ? (out as T) : input;
}
