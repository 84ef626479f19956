import { type Heading, headingsOf } from './headings.js';

/**
 * Markdown chunking that keeps what belongs together (issue 11): a chunk never crosses a heading
 * (so its heading trail is exact), and a fenced code block stays with the prose paragraph that
 * introduces it ("To enable it, set `x`:" + the example). Blocks (paragraphs, fenced code,
 * headings) are packed into chunks of at most `size` characters; a unit longer than `size` is
 * cut at line boundaries (at spaces, then anywhere, for a single longer line). Every chunk is a
 * trimmed substring of the input, in order, and the chunks cover all non-blank text. Linear in
 * the input's length.
 */

/** A block of the document: a heading, a fenced code block, or a paragraph (UTF-16 offsets). */
interface Block {
  start: number;
  end: number;
  kind: 'heading' | 'code' | 'prose';
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/**
 * Splits Markdown into chunks of at most `size` characters (see the module comment).
 * @param size maximum chunk length in characters, at least 100
 * @throws RangeError for a size under 100
 */
export function splitMarkdown(content: string, size: number): string[] {
  if (!Number.isInteger(size) || size < 100)
    throw new RangeError(`chunk size must be an integer ≥ 100, got ${size}`);
  const units = unitsOf(blocksOf(content, headingsOf(content)));
  const chunks: string[] = [];
  let current: { start: number; end: number; headingOnly: boolean } | undefined;
  const flush = () => {
    if (current) {
      const text = content.slice(current.start, current.end).trim();
      if (text) chunks.push(text);
    }
    current = undefined;
  };
  for (const unit of units) {
    const startsSection = unit.kind === 'heading';
    if (current && startsSection && !current.headingOnly) flush();
    if (current && unit.end - current.start > size) flush();
    if (!current && unit.end - unit.start > size) {
      for (const [start, end] of cutLines(content, unit.start, unit.end, size)) {
        const text = content.slice(start, end).trim();
        if (text) chunks.push(text);
      }
      continue;
    }
    if (!current) current = { start: unit.start, end: unit.end, headingOnly: unit.headingOnly };
    else
      current = { start: current.start, end: unit.end, headingOnly: current.headingOnly && unit.headingOnly };
  }
  flush();
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

/**
 * Units that are never separated: a heading with the first block after it; a prose paragraph
 * with the code blocks that directly follow it.
 */
function unitsOf(
  blocks: readonly Block[],
): { start: number; end: number; kind: Block['kind']; headingOnly: boolean }[] {
  const units: { start: number; end: number; kind: Block['kind']; headingOnly: boolean }[] = [];
  for (const block of blocks) {
    const last = units.at(-1);
    const joinsHeading = last?.headingOnly === true && block.kind !== 'heading';
    const joinsProse = last !== undefined && !last.headingOnly && block.kind === 'code';
    if (last && (joinsHeading || joinsProse)) {
      last.end = block.end;
      last.headingOnly = false;
      continue;
    }
    units.push({
      start: block.start,
      end: block.end,
      kind: block.kind,
      headingOnly: block.kind === 'heading',
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
