import { describe, expect, it } from 'vitest';
import { splitMarkdown } from '../../shared/search/chunking.js';

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
