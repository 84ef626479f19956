import { type Heading, headingsOf } from './headings.js';

/**
 * Markdown chunking that keeps what belongs together (issue 11): a chunk never crosses a heading
 * (so its heading trail is exact), and a fenced code block stays with the prose paragraph that
 * introduces it ("To enable it, set `x`:" + the example). Blocks (paragraphs, fenced code,
 * headings) are packed into chunks of at most `size` characters; a unit longer than `size` is
 * cut between its blocks, a longer paragraph at line boundaries (at spaces, then anywhere, for
 * a single longer line), and a longer code block into fenced pieces, so no chunk starts or ends
 * inside code. Every chunk is a trimmed substring of the input — except such code pieces, which
 * add the block's fences — in order, and the chunks cover all non-blank text. Linear in the
 * input's length.
 */

/** A block of the document: a heading, a fenced code block, or a paragraph (UTF-16 offsets). */
interface Block {
  start: number;
  end: number;
  kind: 'heading' | 'code' | 'prose';
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/** A chunk of a Markdown text: its text, and the range of the input it was taken from (UTF-16 offsets). */
export interface MarkdownChunk {
  text: string;
  start: number;
  end: number;
}

/**
 * Splits Markdown into chunks of at most `size` characters (see the module comment).
 * @param size maximum chunk length in characters, at least 100
 * @throws RangeError for a size under 100
 */
export function splitMarkdown(content: string, size: number): string[] {
  return markdownChunks(content, size).map((chunk) => chunk.text);
}

/**
 * {@link splitMarkdown} with where each chunk comes from. A chunk is the trimmed text of its
 * range, except the pieces of a fenced code block longer than `size`: each is cut at line
 * boundaries (at a blank line when there is one in its second half) and wrapped in the block's
 * own opening and closing fence, so no chunk starts or ends inside code.
 * @param size maximum chunk length in characters, at least 100
 * @throws RangeError for a size under 100
 */
export function markdownChunks(content: string, size: number): MarkdownChunk[] {
  if (!Number.isInteger(size) || size < 100)
    throw new RangeError(`chunk size must be an integer ≥ 100, got ${size}`);
  const units = unitsOf(blocksOf(content, headingsOf(content)));
  const chunks: MarkdownChunk[] = [];
  const push = (start: number, end: number) => {
    const chunk = trimmed(content, start, end);
    if (chunk) chunks.push(chunk);
  };
  let current: { start: number; end: number; headingOnly: boolean } | undefined;
  const flush = () => {
    if (current) push(current.start, current.end);
    current = undefined;
  };
  for (const unit of units) {
    const startsSection = unit.kind === 'heading';
    if (current && startsSection && !current.headingOnly) flush();
    if (current && unit.end - current.start > size) flush();
    if (!current && unit.end - unit.start > size) {
      chunks.push(...cutUnit(content, unit.blocks, size));
      continue;
    }
    if (!current) current = { start: unit.start, end: unit.end, headingOnly: unit.headingOnly };
    else
      current = { start: current.start, end: unit.end, headingOnly: current.headingOnly && unit.headingOnly };
  }
  flush();
  return chunks;
}

/**
 * Chunks of a unit longer than `size`: its blocks packed in order; a prose block or heading
 * longer than `size` cut at line ends ({@link cutLines}), a code block longer than `size` cut
 * into fenced pieces ({@link cutCode}).
 */
function cutUnit(content: string, blocks: readonly Block[], size: number): MarkdownChunk[] {
  const chunks: MarkdownChunk[] = [];
  const push = (start: number, end: number) => {
    const chunk = trimmed(content, start, end);
    if (chunk) chunks.push(chunk);
  };
  let open: { start: number; end: number } | undefined;
  for (const block of blocks) {
    if (open && block.end - open.start <= size) {
      open.end = block.end;
      continue;
    }
    // The paragraph (or heading) that introduces a long code block leads its first piece.
    const lead = open && block.kind === 'code' && open.end - open.start <= size / 2 ? open : undefined;
    if (open && !lead) push(open.start, open.end);
    open = undefined;
    if (block.end - block.start <= size) open = { start: block.start, end: block.end };
    else if (block.kind === 'code') chunks.push(...cutCode(content, block, size, lead));
    else for (const [start, end] of cutLines(content, block.start, block.end, size)) push(start, end);
  }
  if (open) push(open.start, open.end);
  return chunks;
}

/** The trimmed text of [start, end) with its range, or undefined when it is blank. */
function trimmed(content: string, start: number, end: number): MarkdownChunk | undefined {
  const raw = content.slice(start, end);
  const text = raw.trim();
  if (!text) return undefined;
  const lead = raw.length - raw.trimStart().length;
  return { text, start: start + lead, end: start + lead + text.length };
}

/**
 * Pieces of a fenced code block longer than `size`, each wrapped in the block's opening fence
 * line and a closing fence, at most `size` characters: the body is cut after a blank line in the
 * second half of a piece when there is one, else after its last whole line (a single longer line
 * is cut anywhere). The first piece starts with `lead` (the text that introduces the block), when
 * given. A piece's range is that of its body lines (and of `lead`, for the first).
 */
function cutCode(
  content: string,
  block: Block,
  size: number,
  lead?: { start: number; end: number },
): MarkdownChunk[] {
  const text = content.slice(block.start, block.end);
  const firstNewline = text.indexOf('\n');
  const openLine = (firstNewline === -1 ? text : text.slice(0, firstNewline)).trim();
  const marker = FENCE.exec(openLine)?.[1] ?? '```';
  const lastNewline = text.lastIndexOf('\n');
  const lastLine = text.slice(lastNewline + 1);
  const closing = FENCE.exec(lastLine)?.[1] ?? '';
  const closed =
    lastNewline > firstNewline &&
    closing[0] === marker[0] &&
    closing.length >= marker.length &&
    lastLine.trim() === closing;
  const bodyStart = block.start + (firstNewline === -1 ? text.length : firstNewline + 1);
  const bodyEnd = closed ? block.start + lastNewline : block.end;
  const fenced = Math.max(size - openLine.length - marker.length - 2, 20);
  const intro = lead ? trimmed(content, lead.start, lead.end) : undefined;
  const chunks: MarkdownChunk[] = [];
  let from = bodyStart;
  while (from < bodyEnd) {
    const first = chunks.length === 0 && intro !== undefined;
    const room = first ? Math.max(fenced - intro.text.length - 2, 20) : fenced;
    let to = bodyEnd;
    if (bodyEnd - from > room) {
      const window = content.slice(from, from + room);
      const blank = window.lastIndexOf('\n\n');
      const line = window.lastIndexOf('\n');
      to = from + (blank >= room / 2 ? blank + 1 : line > 0 ? line + 1 : room);
    }
    const body = content.slice(from, to).replace(/\s+$/, '');
    const code = `${openLine}\n${body}\n${marker}`;
    if (first) chunks.push({ text: `${intro.text}\n\n${code}`, start: intro.start, end: to });
    else if (body.trim() !== '') chunks.push({ text: code, start: from, end: to });
    from = to;
  }
  return chunks;
}

/** Blocks of the text in order; blank lines separate paragraphs outside code fences. */
function blocksOf(content: string, headings: readonly Heading[]): Block[] {
  const headingAt = new Map(headings.map((heading) => [heading.offset, heading]));
  const blocks: Block[] = [];
  let offset = 0;
  let open: Block | undefined;
  let fence: string | undefined;
  const close = () => {
    if (open) blocks.push(open);
    open = undefined;
  };
  while (offset < content.length) {
    const newline = content.indexOf('\n', offset);
    const lineEnd = newline === -1 ? content.length : newline;
    const line = content.slice(offset, lineEnd);
    const next = newline === -1 ? content.length : newline + 1;
    if (fence !== undefined) {
      (open as Block).end = lineEnd;
      const marker = FENCE.exec(line)?.[1] ?? '';
      if (marker[0] === fence[0] && marker.length >= fence.length && line.trim() === marker) {
        fence = undefined;
        close();
      }
      offset = next;
      continue;
    }
    const heading = headingAt.get(offset);
    if (heading) {
      close();
      blocks.push({ start: offset, end: heading.end, kind: 'heading' });
      offset = Math.max(next, heading.end + 1);
      continue;
    }
    const fenceMatch = FENCE.exec(line);
    if (fenceMatch) {
      close();
      fence = fenceMatch[1];
      open = { start: offset, end: lineEnd, kind: 'code' };
    } else if (line.trim() === '') {
      close();
    } else if (open) {
      open.end = lineEnd;
    } else {
      open = { start: offset, end: lineEnd, kind: 'prose' };
    }
    offset = next;
  }
  close();
  return blocks;
}

/** Blocks that are never separated (see {@link unitsOf}). */
interface Unit {
  start: number;
  end: number;
  kind: Block['kind'];
  headingOnly: boolean;
  blocks: Block[];
}

/**
 * Units that are never separated: a heading with the first block after it; a prose paragraph
 * with the code blocks that directly follow it.
 */
function unitsOf(blocks: readonly Block[]): Unit[] {
  const units: Unit[] = [];
  for (const block of blocks) {
    const last = units.at(-1);
    const joinsHeading = last?.headingOnly === true && block.kind !== 'heading';
    const joinsProse = last !== undefined && !last.headingOnly && block.kind === 'code';
    if (last && (joinsHeading || joinsProse)) {
      last.end = block.end;
      last.headingOnly = false;
      last.blocks.push(block);
      continue;
    }
    units.push({
      start: block.start,
      end: block.end,
      kind: block.kind,
      headingOnly: block.kind === 'heading',
      blocks: [block],
    });
  }
  return units;
}

/** Cuts [start, end) into ranges of at most `size` characters at line ends, else spaces, else anywhere. */
function cutLines(content: string, start: number, end: number, size: number): [number, number][] {
  const ranges: [number, number][] = [];
  let from = start;
  while (end - from > size) {
    const window = content.slice(from, from + size);
    let cut = window.lastIndexOf('\n');
    if (cut < size / 4) cut = window.lastIndexOf(' ');
    if (cut < size / 4) cut = size;
    ranges.push([from, from + cut]);
    from += cut;
  }
  ranges.push([from, end]);
  return ranges;
}
