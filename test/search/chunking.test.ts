import { describe, expect, it } from 'vitest';
import { markdownChunks, splitMarkdown } from '../../shared/search/chunking.js';

const DOC = [
  '# Guide',
  '',
  'Intro paragraph about the guide.',
  '',
  '## Notifications',
  '',
  'To enable EventBridge notifications,',
  'set the property on the bucket:',
  '',
  '```ts',
  "new s3.Bucket(this, 'B', {",
  '  eventBridgeEnabled: true,',
  '});',
  '```',
  '',
  '## Other',
  '',
  'Unrelated text.',
  '',
].join('\n');

describe('splitMarkdown', () => {
  it('keeps a code block with the paragraph that introduces it and never crosses a heading', () => {
    const chunks = splitMarkdown(DOC, 200);
    const withCode = chunks.find((chunk) => chunk.includes('eventBridgeEnabled'));
    expect(withCode).toContain('set the property on the bucket:');
    expect(withCode?.startsWith('## Notifications')).toBe(true);
    expect(chunks.some((chunk) => chunk.includes('Intro paragraph') && chunk.includes('Notifications'))).toBe(
      false,
    );
    expect(chunks.find((chunk) => chunk.includes('Unrelated'))?.startsWith('## Other')).toBe(true);
  });

  it('returns substrings of the input in order that cover all its text', () => {
    const chunks = splitMarkdown(DOC, 200);
    let from = 0;
    for (const chunk of chunks) {
      const at = DOC.indexOf(chunk, from);
      expect(at).toBeGreaterThanOrEqual(from);
      from = at + chunk.length;
    }
    expect(chunks.join('\n').replace(/\s+/g, '')).toBe(DOC.replace(/\s+/g, ''));
  });

  it('cuts a unit longer than the size at line ends, each piece within the size', () => {
    const long = [
      '## Big',
      '',
      ...Array.from({ length: 40 }, (_, i) => `line ${i} of a long paragraph`),
    ].join('\n');
    const chunks = splitMarkdown(long, 200);
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) expect(chunk.length).toBeLessThanOrEqual(200);
    expect(chunks.every((chunk) => !chunk.startsWith('of a long'))).toBe(true);
  });

  it.each([99, 100.5])('rejects a size of %s', (size) => {
    expect(() => splitMarkdown(DOC, size)).toThrow(RangeError);
  });

  it('accepts the smallest size, 100', () => {
    expect(splitMarkdown(DOC, 100).length).toBeGreaterThan(0);
  });
});

describe('markdownChunks: code blocks longer than the size', () => {
  const code = Array.from({ length: 30 }, (_, i) => `  property${i}: value${i},`);
  const LONG = [
    '## Example',
    '',
    'To configure everything, pass these properties:',
    '',
    '```ts',
    "new Thing(this, 'T', {",
    ...code,
    '});',
    '```',
    '',
    'After the example.',
  ].join('\n');

  it('cuts the block into fenced pieces within the size, none starting or ending inside code', () => {
    const chunks = markdownChunks(LONG, 300);
    const pieces = chunks.filter((chunk) => chunk.text.includes('property'));
    expect(pieces.length).toBeGreaterThan(1);
    for (const piece of pieces) {
      expect(piece.text.length).toBeLessThanOrEqual(300);
      expect(piece.text.match(/^```/gm)?.length).toBe(2);
      expect(piece.text).toMatch(/```$/);
      expect(piece.text.split('```ts\n')[1]?.startsWith('```')).toBe(false);
    }
    // Every code line is in exactly one piece, in order.
    const lines = pieces
      .flatMap((piece) => piece.text.split('\n'))
      .filter((line) => line.includes('property'));
    expect(lines).toEqual(code);
  });

  it('keeps the heading and introducing paragraph with the first piece, and the text after it apart', () => {
    const chunks = markdownChunks(LONG, 300);
    expect(
      chunks[0]?.text.startsWith('## Example\n\nTo configure everything, pass these properties:\n\n```ts\n'),
    ).toBe(true);
    expect(chunks.at(-1)?.text).toBe('After the example.');
    for (const chunk of chunks) expect(LONG.slice(chunk.start, chunk.end).length).toBeGreaterThan(0);
    expect(chunks.map((chunk) => chunk.start)).toEqual(
      [...chunks.map((chunk) => chunk.start)].sort((a, b) => a - b),
    );
  });

  it('splitMarkdown returns the same texts', () => {
    expect(splitMarkdown(LONG, 300)).toEqual(markdownChunks(LONG, 300).map((chunk) => chunk.text));
  });
});
