import { describe, expect, it } from 'vitest';
import { type PriorInput, rankWithPriors } from '../../shared/search/minisearch-index.js';

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
});
