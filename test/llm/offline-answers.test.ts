import { describe, expect, it } from 'vitest';
import {
  codeIdentifiers,
  excerpt,
  extractiveAnswer,
  isCompleteSentence,
  segmentChunk,
} from '../../shared/llm/extract.js';
import { judge, resolveReferences, SHOWS_CODE, subjectOf } from '../../shared/llm/offline.js';

const CHUNK = [
  '### EventBridge notifications',
  '',
  'Amazon S3 can send events to Amazon EventBridge whenever certain events happen in',
  "your bucket. Unlike other destinations, you don't need to select which event",
  'types you want to deliver.',
  '',
  'The following example will enable EventBridge notifications:',
  '',
  '```ts',
  "const bucket = new s3.Bucket(this, 'MyEventBridgeBucket', {",
  '  eventBridgeEnabled: true,',
  '});',
  '```',
  '',
  '[S3 Docs]: https://docs.aws.amazon.com/AmazonS3/latest/userguide/EventBridge.html',
  '| a | table |',
  'see the',
].join('\n');

describe('segmentChunk', () => {
  it('joins hard-wrapped lines before segmenting, so sentences are whole', () => {
    const sentences = segmentChunk(CHUNK)
      .filter((s) => s.kind === 'sentence')
      .map((s) => s.text);
    expect(sentences).toContain(
      'Amazon S3 can send events to Amazon EventBridge whenever certain events happen in your bucket.',
    );
    expect(sentences).toContain(
      "Unlike other destinations, you don't need to select which event types you want to deliver.",
    );
  });

  it('never emits headings, link references, table rows or fragments', () => {
    const texts = segmentChunk(CHUNK).map((s) => s.text);
    expect(texts.some((t) => t.includes('###') || t.includes('EventBridge notifications\n'))).toBe(false);
    expect(texts.some((t) => t.includes('[S3 Docs]') || t.includes('| a |'))).toBe(false);
    expect(texts).not.toContain('see the');
  });

  it('keeps fenced code as one block with the sentence that introduces it', () => {
    const code = segmentChunk(CHUNK).find((s) => s.kind === 'code');
    expect(code).toMatchObject({
      kind: 'code',
      lang: 'ts',
      intro: 'The following example will enable EventBridge notifications:',
    });
    expect(code?.text).toContain('eventBridgeEnabled: true');
  });

  it('leaves out a code block cut off by the end of the chunk', () => {
    expect(segmentChunk('Set it like this:\n\n```ts\nconst a = 1;').some((s) => s.kind === 'code')).toBe(
      false,
    );
  });

  it('does not end a sentence at a dot inside inline code', () => {
    const [sentence] = segmentChunk('The requester ends with `.AMAZONAWS.COM` in this example rule.');
    expect(sentence?.text).toBe('The requester ends with `.AMAZONAWS.COM` in this example rule.');
  });

  it.each([
    ['Amazon S3 sends events to EventBridge.', true],
    ['Set the property like this:', true],
    ['see the bucket docs.', false],
    ['Amazon S3 sends events', false],
    ['Too short.', false],
  ])('judges %j complete: %s', (sentence, complete) => {
    expect(isCompleteSentence(sentence)).toBe(complete);
  });
});

describe('extractiveAnswer', () => {
  const other = {
    urn: 'cld:doc.Document.b/doc.Chunk.2',
    text: 'Amazon EventBridge rules match events and send them to targets such as queues.',
  };
  const s3 = { urn: 'cld:doc.Document.a/doc.Chunk.1', text: CHUNK };

  it('answers with complete sentences and the code that carries the identifier, citing the chunks used', () => {
    const answer = extractiveAnswer('How do I send S3 object events to EventBridge?', [s3, other]);
    expect(answer).toContain(
      'Amazon S3 can send events to Amazon EventBridge whenever certain events happen in your bucket.',
    );
    expect(answer).toContain(
      "```ts\nconst bucket = new s3.Bucket(this, 'MyEventBridgeBucket', {\n  eventBridgeEnabled: true,\n});\n```",
    );
    expect(answer).toContain('The following example will enable EventBridge notifications:\n\n```ts');
    expect(answer).toMatch(/Sources:\n- cld:doc\.Document\.a\/doc\.Chunk\.1/);
    expect(answer).not.toContain('###');
  });

  it('says so when no hit shares a term with the question, and when there are no hits', () => {
    expect(extractiveAnswer('Wie funktioniert das?', [s3])).toBe(
      'Nothing matched: the passages found do not contain the words of this question.',
    );
    expect(extractiveAnswer('这个怎么用？', [s3])).toMatch(/^Nothing matched: this question has no words/);
    expect(extractiveAnswer('anything', [])).toBe(
      'Nothing matched: no passage of the ingested documents contains the words of this question.',
    );
  });
});

describe('multi-part references', () => {
  it.each([
    ['How do I create a versioned bucket?', 'versioned bucket'],
    ['How do I create a Lambda function from inline code?', 'Lambda function'],
    ['How do I define a REST API?', 'REST API'],
    ['How do I do it?', undefined],
  ])('finds the subject of %j', (part, subject) => {
    expect(subjectOf(part)).toBe(subject);
  });

  it('resolves "that <noun>" to the earlier subject with that noun and pronouns to the previous subject', () => {
    expect(
      resolveReferences([
        'How do I create a versioned bucket?',
        'How do I create a DynamoDB table?',
        'How do I process its stream?',
        'How do I let a function write to that bucket?',
        'How do I list regions?',
      ]),
    ).toEqual([
      undefined,
      undefined,
      { phrase: 'its', subject: 'DynamoDB table' },
      { phrase: 'that bucket', subject: 'versioned bucket' },
      undefined,
    ]);
  });
});

describe('the offline supervisor judge', () => {
  const howTo = `The answer cites at least one documentation chunk, ${SHOWS_CODE}, and mentions: bucket, eventbridge.`;
  const base = {
    id: 's1',
    sources: ['aws-s3 README › Bucket Notifications'],
  };

  it('objects to a how-to answer without an identifier or code', () => {
    const verdict = judge({
      ...base,
      evaluation: howTo,
      output:
        'Amazon S3 can send bucket events to Amazon EventBridge.\n\nSources:\n- cld:doc.Document.a/doc.Chunk.1',
    });
    expect(verdict).toMatchObject({
      pass: false,
      reason: 'shows no identifier or code for a how-to question',
    });
  });

  it.each([
    ['a code block', 'Bucket events go to EventBridge:\n\n```ts\nnew s3.Bucket(this, "B");\n```'],
    ['an inline identifier', 'Set `eventBridgeEnabled` on the bucket to send events to EventBridge.'],
    ['a camelCase identifier', 'Set eventBridgeEnabled on the bucket to send events to EventBridge.'],
  ])('passes a how-to answer with %s', (_, output) => {
    expect(judge({ ...base, evaluation: howTo, output }).pass).toBe(true);
  });

  it('passes a non-how-to answer without code, and still objects to missing citations and terms', () => {
    const plain = 'The answer cites at least one documentation chunk and mentions: bucket, eventbridge.';
    expect(judge({ ...base, evaluation: plain, output: 'Buckets send events to EventBridge.' }).pass).toBe(
      true,
    );
    expect(judge({ ...base, sources: [], evaluation: plain, output: 'Buckets send events.' })).toMatchObject({
      pass: false,
      reason: 'cites no source',
    });
    expect(judge({ ...base, evaluation: plain, output: 'Queues hold `messages`.' })).toMatchObject({
      pass: false,
      missing: ['bucket', 'eventbridge'],
    });
  });
});

describe('codeIdentifiers', () => {
  it('keeps what a user types and drops comments and string literals', () => {
    const code = [
      "const bucket = new s3.Bucket(this, 'MyEventBridgeBucket', {",
      '  // as directly consumed by EventBridge',
      '  eventBridgeEnabled: true, /* inline */',
      '  url: "https://example.com/a",',
      '});',
    ].join('\n');
    const kept = codeIdentifiers(code);
    expect(kept).toContain('eventBridgeEnabled: true');
    expect(kept).toContain('new s3.Bucket(this,');
    expect(kept).not.toContain('MyEventBridgeBucket');
    expect(kept).not.toContain('consumed');
    expect(kept).not.toContain('inline');
    expect(kept).not.toContain('example.com');
  });
});

describe('excerpt of a long code block', () => {
  const code = [
    "const rule = new events.Rule(this, 'rule', {",
    '  eventPattern: {',
    ...Array.from({ length: 30 }, (_, i) => `    field${i}: events.Match.exactString('v${i}'),`),
    "    key: events.Match.wildcard('path/*.txt'),",
    ...Array.from({ length: 20 }, (_, i) => `    other${i}: 'x',`),
    '  },',
    '});',
  ].join('\n');

  it('keeps the opening statement, the lines around the best match, and marks what it leaves out', () => {
    const lines = excerpt(code, new Set(['wildcard']), 'ts').split('\n');
    expect(lines.length).toBeLessThanOrEqual(18);
    expect(lines[0]).toBe("const rule = new events.Rule(this, 'rule', {");
    expect(lines[1]).toBe('    // …');
    expect(lines).toContain("    key: events.Match.wildcard('path/*.txt'),");
    expect(lines.at(-1)).toBe('    // …');
    // Every other line is a line of the block, in order.
    const kept = lines.filter((line) => !line.endsWith('…'));
    const all = code.split('\n');
    expect(kept.map((line) => all.indexOf(line))).toEqual(
      [...kept.map((line) => all.indexOf(line))].sort((a, b) => a - b),
    );
  });

  it("returns a short block whole, and marks elisions with the language's comment", () => {
    expect(excerpt('a = 1\nb = 2', new Set(['b']), 'py')).toBe('a = 1\nb = 2');
    const python = Array.from({ length: 30 }, (_, i) => `x${i} = ${i}`).join('\n');
    expect(excerpt(python, new Set(['x25']), 'py').split('\n')[0]).toBe('# …');
  });
});
