import { describe, expect, it } from 'vitest';
import { ownHeading } from '../../shared/search/headings.js';
import {
  namesQuery,
  type PriorInput,
  rankWithPriors,
  SECTION_WEIGHT,
} from '../../shared/search/minisearch-index.js';
import { termsOf } from '../../shared/search/terms.js';

/** Results over a few documents and folders, with tied scores (a seeded generator: the same every run). */
function results(count: number): PriorInput {
  let seed = 7;
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const scores = Array.from({ length: count }, () => Math.round(next() * 20) / 4);
  const sources = Array.from({ length: count }, (_, i) =>
    i % 7 === 0 ? undefined : `node_modules/aws-cdk-lib/aws-${['s3', 'iam', 'sqs'][i % 3]}/doc${i % 5}.md`,
  );
  return {
    count,
    score: (i) => scores[i] as number,
    source: (i) => sources[i],
    urn: (i) => `cld:doc.Document.d${i % 4}/doc.Chunk.${i}`,
  };
}

describe('rankWithPriors', () => {
  const prior = new Map([
    ['node_modules/aws-cdk-lib/aws-iam', 1],
    ['node_modules/aws-cdk-lib/aws-sqs', 0.5],
  ]);

  it.each([
    1, 3, 10, 57, 199, 200, 500,
  ])('returns the first %i of the full order, ties included, without sorting the rest', (depth) => {
    const input = results(200);
    const full = rankWithPriors(input, prior);

    const head = rankWithPriors(input, prior, depth);

    expect(full.order).toHaveLength(200);
    expect(head.order).toEqual(full.order.slice(0, depth));
    expect([...head.scores]).toEqual([...full.scores]);
  });

  it('keeps the input order of equal scores, as the stable sorts it replaces did', () => {
    const input: PriorInput = {
      count: 4,
      score: (i) => [1, 2, 1, 1][i] as number,
      source: () => 'a/x.md',
      urn: (i) => `u/${i}`,
    };

    expect(rankWithPriors(input, new Map()).order).toEqual([1, 0, 2, 3]);
    expect(rankWithPriors(input, new Map(), 2).order).toEqual([1, 0]);
  });

  it('raises a result whose own heading names the query by 1 + SECTION_WEIGHT (the section prior)', () => {
    const titles = [
      'Amazon EC2 Construct Library > VPC > Importing an existing VPC',
      'Amazon EC2 Construct Library > VPC',
      'Amazon EC2 Construct Library > VPC > Disabling the creation of the default internet gateway',
    ];
    const input: PriorInput = {
      count: 3,
      score: (i) => [10, 9.5, 10.2][i] as number,
      source: () => 'node_modules/aws-cdk-lib/aws-ec2/README.md',
      urn: (i) => `u/${i}`,
      heading: (i) => ownHeading(titles[i]),
    };
    const query = new Set(termsOf('How do I create a VPC?'));

    const plain = rankWithPriors(input, new Map());
    const ranked = rankWithPriors(input, new Map(), 3, query);

    expect(plain.order).toEqual([2, 0, 1]);
    expect(ranked.order).toEqual([1, 2, 0]);
    expect(ranked.scores[1]).toBeCloseTo((plain.scores[1] as number) * (1 + SECTION_WEIGHT), 10);
    expect(ranked.scores[0]).toBe(plain.scores[0]);
  });
});

describe('the section prior', () => {
  it("reads a chunk's own heading: the last of its trail", () => {
    expect(ownHeading('Amazon EC2 Construct Library > VPC > Importing an existing VPC')).toBe(
      'Importing an existing VPC',
    );
    expect(ownHeading('Amazon SNS Construct Library')).toBe('Amazon SNS Construct Library');
    expect(ownHeading(undefined)).toBeUndefined();
    expect(ownHeading('A >  ')).toBeUndefined();
  });

  it('names the query only when every term of the heading is one of the query', () => {
    const query = new Set(termsOf('How do I turn on DynamoDB Streams for a table?'));

    expect(namesQuery('DynamoDB Streams', query)).toBe(true);
    expect(namesQuery('Streams', query)).toBe(true);
    expect(namesQuery('Kinesis Streams', query)).toBe(false);
    expect(namesQuery('The', query)).toBe(false);
    expect(namesQuery(undefined, query)).toBe(false);
    expect(namesQuery('Streams', new Set())).toBe(false);
  });

  it('names the query with words whose terms keep a prefix or shrink to one letter', () => {
    expect(
      namesQuery('Reserved variable : $states', new Set(termsOf('use the reserved variable $states'))),
    ).toBe(true);
    expect(namesQuery('__name', new Set(termsOf('set __name')))).toBe(true);
    expect(namesQuery('ied', new Set(termsOf('ied')))).toBe(true);
    expect(namesQuery('Into a bucket you own', new Set(termsOf('let a function read that bucket')))).toBe(
      false,
    );
  });
});
