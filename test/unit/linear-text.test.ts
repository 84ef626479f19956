/**
 * Every text splitter a user's message goes through runs in time linear in its length (issue 11,
 * item 7): the planner's `splitParts` and the token counter, on 256 KB of the inputs that made
 * the old code quadratic (no `?`, one endless word, runs of newlines or spaces, unspaced CJK
 * text). Quadratic code takes minutes on these (the old `splitParts` 0.8 s on 16 KB, the old
 * `countTokens` 100 s on a 16,000-letter word); linear code takes milliseconds, so the bounds
 * are loose enough for a machine shared with other jobs.
 */
import { Tiktoken } from 'js-tiktoken/lite';
import { describe, expect, it } from 'vitest';
import { countTokens, loadTokenizerRanks, MAX_TOKEN_RUN } from '../../shared/context/tokens.js';
import { splitParts } from '../../shared/llm/offline.js';

const SIZE = 256 * 1024;
const PATHOLOGICAL: [string, string][] = [
  ['prose without a question mark', 'the bucket sends events to the bus '.repeat(SIZE / 35)],
  ['one endless word', 'a'.repeat(SIZE)],
  ['newlines only', '\n'.repeat(SIZE)],
  ['spaces only', ' '.repeat(SIZE)],
  ['question marks only', '?'.repeat(SIZE)],
  ['dash-newline pairs', '-\n'.repeat(SIZE / 2)],
  ['unspaced CJK text', '事件'.repeat(SIZE / 2)],
];

/** Wall time of `fn` in ms. */
function timed(fn: () => unknown): number {
  const started = performance.now();
  fn();
  return performance.now() - started;
}

describe('linear text splitting', () => {
  countTokens('warm up the encoder');

  it.each(PATHOLOGICAL)('splitParts splits 256 KB of %s within 1.5 s', (_name, text) => {
    expect(timed(() => splitParts(text))).toBeLessThan(1_500);
  });

  it.each(PATHOLOGICAL)('countTokens counts 256 KB of %s within 1.5 s', (_name, text) => {
    let tokens = 0;
    expect(timed(() => (tokens = countTokens(text)))).toBeLessThan(1_500);
    expect(tokens).toBeGreaterThan(0);
  });

  it('splits questions as the old /[^?]+\\?/g did', () => {
    expect(splitParts('How do I a? And b? trailing')).toEqual(['How do I a?', 'And b?']);
    expect(splitParts('?? a? ? b?')).toEqual(['a?', '?', 'b?']);
    expect(splitParts('one question only?')).toEqual(['one question only?']);
  });

  it('still splits bullets after blank lines', () => {
    expect(splitParts('Please:\n\n- make a bucket\n   * add a rule')).toEqual([
      'Please:',
      'make a bucket',
      'add a rule',
    ]);
  });
});

describe('countTokens', () => {
  const exact = new Tiktoken(loadTokenizerRanks());

  it('is exact for prose whose words are at most MAX_TOKEN_RUN characters', () => {
    const text = `Amazon S3 can send events to Amazon EventBridge whenever ${'x'.repeat(MAX_TOKEN_RUN)} happens.`;
    expect(countTokens(text)).toBe(exact.encode(text).length);
  });

  it('estimates a run one character longer than MAX_TOKEN_RUN at one token per 3 bytes', () => {
    expect(countTokens('x'.repeat(MAX_TOKEN_RUN + 1))).toBe(Math.ceil((MAX_TOKEN_RUN + 1) / 3));
    expect(countTokens('事'.repeat(MAX_TOKEN_RUN + 1))).toBe(MAX_TOKEN_RUN + 1);
  });

  it('counts special-token text as text instead of throwing', () => {
    expect(countTokens('ignore <|endoftext|> this')).toBeGreaterThan(3);
  });
});
