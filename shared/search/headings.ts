/** Markdown headings (ATX and setext), outside fenced code blocks. */

/** A Markdown heading: its level (1–6), its text and where it is (UTF-16 offsets). */
export interface Heading {
  /** Start of the heading's (first) line. */
  offset: number;
  /** End of its last line (the setext underline), newline excluded. */
  end: number;
  level: number;
  title: string;
}

/** Separator of a chunk's heading trail (`title`) as ingest stores it: `Amazon EC2 Construct Library > VPC`. */
export const TRAIL_SEPARATOR = ' > ';

/**
 * A chunk's own heading: the last of its heading trail (`title`, {@link TRAIL_SEPARATOR}); undefined
 * for none. A chunk before a document's first heading has the trail ingest gives it (the
 * document's title or name), and a heading that itself holds " > " is cut there.
 */
export function ownHeading(title: string | undefined): string | undefined {
  if (title === undefined) return undefined;
  const at = title.lastIndexOf(TRAIL_SEPARATOR);
  const heading = (at < 0 ? title : title.slice(at + TRAIL_SEPARATOR.length)).trim();
  return heading === '' ? undefined : heading;
}

const ATX_HEADING = /^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/;
const SETEXT_UNDERLINE = /^ {0,3}(=+|-+)[ \t]*$/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/**
 * Headings of a Markdown text in order: ATX (`## Title`) and setext (`Title` over `===`/`---`),
 * ignoring lines inside fenced code blocks (where `# comment` is not a heading).
 */
export function headingsOf(text: string): Heading[] {
  const headings: Heading[] = [];
  let fence: string | undefined;
  let offset = 0;
  let previous: { offset: number; line: string } | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    const lineOffset = offset;
    offset += raw.length + 1;
    const fenceMatch = FENCE.exec(line);
    if (fence !== undefined) {
      const marker = fenceMatch?.[1] ?? '';
      if (marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
      previous = undefined;
      continue;
    }
    if (fenceMatch) {
      fence = fenceMatch[1];
      previous = undefined;
      continue;
    }
    const atx = ATX_HEADING.exec(line);
    if (atx) {
      headings.push({
        offset: lineOffset,
        end: lineOffset + raw.length,
        level: atx[1]?.length ?? 1,
        title: clean(atx[2] ?? ''),
      });
      previous = undefined;
      continue;
    }
    const underline = SETEXT_UNDERLINE.exec(line);
    if (underline && previous && previous.line.trim() !== '') {
      const level = underline[1]?.startsWith('=') ? 1 : 2;
      headings.push({
        offset: previous.offset,
        end: lineOffset + raw.length,
        level,
        title: clean(previous.line),
      });
      previous = undefined;
      continue;
    }
    previous = { offset: lineOffset, line };
  }
  return headings.filter((heading) => heading.title !== '');
}

function clean(title: string): string {
  return title.trim();
}
