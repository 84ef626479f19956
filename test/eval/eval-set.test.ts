/** The per-part scoring of `npm run eval` (issue 21 item 7): sections, the lead block, question terms. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { firstBlock, holdsQuestionTerm, loadEvalSet, sectionsOf } from './eval-set.js';

describe('sectionsOf', () => {
  it('splits a multi-part answer at its ### headings, not at # lines inside code', () => {
    const answer = [
      '### How do I create a queue?',
      'Use `sqs.Queue`:',
      '',
      '```sh',
      '### not a heading',
      '```',
      '',
      '### How do I encrypt it?',
      'Set `encryption`.',
    ].join('\n');
    expect(sectionsOf(answer, 2)).toEqual([
      'Use `sqs.Queue`:\n\n```sh\n### not a heading\n```',
      'Set `encryption`.',
    ]);
  });

  it('takes a single question’s whole answer as its section', () => {
    expect(sectionsOf(' Set `versioned: true`. ', 1)).toEqual(['Set `versioned: true`.']);
  });
});

describe('firstBlock', () => {
  it.each([
    ['a paragraph before code', 'Set it like this:\n```ts\nx\n```', 'Set it like this:'],
    [
      'a leading code block',
      '```ts\nnew sqs.Queue(this, "Q");\n```\n\nMore.',
      '```ts\nnew sqs.Queue(this, "Q");\n```',
    ],
    ['a paragraph before a blank line', 'First one.\nStill first.\n\nSecond.', 'First one.\nStill first.'],
  ])('is %s', (_, section, block) => {
    expect(firstBlock(section)).toBe(block);
  });
});

describe('holdsQuestionTerm', () => {
  it('counts the question’s content terms by stem, not its asking words', () => {
    expect(holdsQuestionTerm('Queues are encrypted with SSE-SQS.', 'How do I encrypt a queue?')).toBe(true);
    expect(holdsQuestionTerm('You can create and add things.', 'How do I create a queue?')).toBe(false);
  });
});

describe('the evaluation set', () => {
  it('holds the 22 three-part questions of issue 21, every third held out', () => {
    const added = loadEvalSet().filter((q) => q.id.startsWith('p'));
    expect(added).toHaveLength(22);
    expect(added.every((q) => q.parts.length === 3)).toBe(true);
    expect(added.filter((q) => q.heldOut).map((q) => q.id)).toEqual(
      added.filter((_, i) => (i + 1) % 3 === 0).map((q) => q.id),
    );
  });

  const answerable = (part: { modules: string[]; term: string }) =>
    part.modules
      .map((m) => readFileSync(`node_modules/aws-cdk-lib/${m}/README.md`, 'utf8'))
      .some((text) => text.includes(part.term));

  it('has a fresh validation set of the same shape whose terms its modules spell', () => {
    const fresh = loadEvalSet(new URL('./fresh.json', import.meta.url));
    expect(fresh.map((q) => q.id)).toEqual(fresh.map((_, i) => `d${String(i + 1).padStart(2, '0')}`));
    const own = new Set(loadEvalSet().flatMap((q) => q.parts.flatMap((p) => p.modules)));
    for (const part of fresh.flatMap((q) => q.parts)) {
      // Written from READMEs the main set does not use, and answerable from them.
      expect(part.modules.some((m) => !own.has(m))).toBe(true);
      expect(answerable(part)).toBe(true);
    }
  });

  it("has a plain-words validation set whose every term its module's README spells", () => {
    const plain = loadEvalSet(new URL('./plain.json', import.meta.url));
    expect(plain).toHaveLength(20);
    for (const part of plain.flatMap((q) => q.parts)) expect(answerable(part)).toBe(true);
  });
});
