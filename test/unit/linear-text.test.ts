/**
 * Every text splitter a user's message goes through handles the inputs that made the old code
 * quadratic (issue 11, item 7): the planner's `splitParts` and the token counter, on 256 KB of no
 * `?`, one endless word, runs of newlines or spaces, unspaced CJK text. How long they take is
 * measured by `npm run bench:text` (test/bench/linear-text.ts, bound 1.5 s per input), not here:
 * a wall-clock bound in a test fails on a busy machine (issue 23).
 */
import { Tiktoken } from 'js-tiktoken/lite';
import { describe, expect, it } from 'vitest';
import { countTokens, loadTokenizerRanks, MAX_TOKEN_RUN } from '../../shared/context/tokens.js';
import { splitParts } from '../../shared/llm/offline.js';
import { PATHOLOGICAL_TEXTS } from './pathological-texts.js';

describe('text splitting on pathological input', () => {
  it.each(
    PATHOLOGICAL_TEXTS,
  )('splitParts splits 256 KB of %s into parts no longer than the text', (_name, text) => {
    const parts = splitParts(text);
    expect(parts.length).toBeGreaterThan(0);
    expect(parts.reduce((sum, part) => sum + part.length, 0)).toBeLessThanOrEqual(text.length);
  });

  it.each(
    PATHOLOGICAL_TEXTS,
  )('countTokens counts 256 KB of %s: between 1 and one token per UTF-8 byte', (_name, text) => {
    const tokens = countTokens(text);
    expect(tokens).toBeGreaterThan(0);
    expect(tokens).toBeLessThanOrEqual(Buffer.byteLength(text));
  });

  it('splits questions as the old /[^?]+\\?/g did', () => {
    expect(splitParts('How do I a? And b? trailing')).toEqual(['How do I a?', 'And b?']);
    expect(splitParts('?? a? ? b?')).toEqual(['a?', '?', 'b?']);
    expect(splitParts('one question only?')).toEqual(['one question only?']);
  });

  it('answers the one question of a message that opens with statements, not the statements', () => {
    const message =
      'I am building a data pipeline for images. We use TypeScript and then we need to process them. ' +
      'Cost matters too. How do I trigger a Lambda function when a file is uploaded to an S3 bucket?';
    expect(splitParts(message)).toEqual([
      'How do I trigger a Lambda function when a file is uploaded to an S3 bucket?',
    ]);
    // A question's own abbreviation is no sentence end; its own then-clauses still split.
    expect(splitParts('How do I set e.g. the timeout of a function?')).toEqual([
      'How do I set e.g. the timeout of a function?',
    ]);
    expect(splitParts('How do I deploy to the U.S. East region?')).toEqual([
      'How do I deploy to the U.S. East region?',
    ]);
    expect(splitParts('How do I use e.g. Lambda with S3?')).toEqual(['How do I use e.g. Lambda with S3?']);
  });

  it('keeps a message whole when something follows its question or its question points back', () => {
    // A requirement after the question, a `?` inside a URL: the message is no "context, question".
    expect(splitParts('We use TS. How do I create a bucket? It must be encrypted with KMS.')).toEqual([
      'We use TS. How do I create a bucket? It must be encrypted with KMS.',
    ]);
    expect(splitParts('We use this. See https://example.com/a?b=1 for the setup.')).toEqual([
      'We use this. See https://example.com/a?b=1 for the setup.',
    ]);
    // "it" is the bucket the statement names: the statement stays.
    expect(splitParts('I have a bucket named logs. How do I add a lifecycle rule to it?')).toEqual([
      'I have a bucket named logs. How do I add a lifecycle rule to it?',
    ]);
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
