import { describe, expect, it } from 'vitest';
import {
  loadStructuralSet,
  type StructuralObservation,
  type StructuralQuestion,
  scoreStructural,
  structuralTable,
} from './structural.js';

/**
 * The structural evaluation's set and scorer (test/eval/structural.ts) on small fixtures: what
 * counts as the expected subject, a citation of the graph, and the names in an answer.
 */

const GRAPH = 'cld:doc.Document.0123456789abcdef/doc.Graph.aws_s3';
const CHUNK = 'cld:doc.Document.fedcba9876543210/doc.Chunk.0011223344556677';
const OTHER = 'cld:doc.Document.fedcba9876543210/doc.Chunk.8899aabbccddeeff';

const PROPS: StructuralQuestion = {
  id: 'g90',
  text: 'What properties does BucketProps take?',
  subjects: ['type:aws-cdk-lib.aws_s3.BucketProps'],
  terms: ['versioned', 'eventBridgeEnabled'],
};

const IMPLEMENTERS: StructuralQuestion = {
  id: 'g91',
  text: 'Which classes implement IGrantable?',
  subjects: ['type:aws-cdk-lib.aws_iam.IGrantable'],
  terms: ['aws_iam.Role'],
};

const DESCRIBED = JSON.stringify({
  entity: 'type:aws-cdk-lib.aws_s3.BucketProps',
  outgoing: [['rdf:type', 'jsii:Struct']],
  members: { versioned: { 'jsii:valueType': 'boolean' } },
  sources: [GRAPH, CHUNK],
});

function observed(overrides: Partial<StructuralObservation> = {}): StructuralObservation {
  return {
    graphResults: [{ status: 'OK', content: DESCRIBED }],
    answer: '38 properties:\n- `versioned` (boolean)\n- `eventBridgeEnabled` (boolean)\n\nSources:\n- x',
    citations: [GRAPH],
    ms: 12,
    ...overrides,
  };
}

describe('the structural set (test/eval/structural.json)', () => {
  it('has at least 10 questions with unique ids, each with subjects and terms', () => {
    const set = loadStructuralSet();

    expect(set.length).toBeGreaterThanOrEqual(10);
    expect(new Set(set.map((q) => q.id)).size).toBe(set.length);
  });
});

describe('scoreStructural', () => {
  it('hits when a graph result describes the subject, the answer cites its sources and lists every term', () => {
    expect(scoreStructural(PROPS, observed())).toEqual({
      id: 'g90',
      heldOut: false,
      graph: true,
      subject: true,
      cited: true,
      found: ['versioned', 'eventBridgeEnabled'],
      missing: [],
      hit: true,
      ms: 12,
    });
  });

  it('finds the subject among pattern bindings, and terms case-insensitively', () => {
    const bindings = JSON.stringify({
      bindings: [
        { interface: 'type:aws-cdk-lib.aws_iam.IGrantable', class: 'type:aws-cdk-lib.aws_iam.Role' },
      ],
      total: 1,
      sources: [CHUNK],
    });
    const score = scoreStructural(
      IMPLEMENTERS,
      observed({
        graphResults: [{ status: 'OK', content: bindings }],
        answer: '- `AWS_IAM.ROLE`',
        citations: [CHUNK],
      }),
    );

    expect(score).toMatchObject({ subject: true, cited: true, found: ['aws_iam.Role'], hit: true });
  });

  it('misses a term that is only in the Sources list, and reports it', () => {
    const score = scoreStructural(
      PROPS,
      observed({ answer: 'Properties: `versioned`.\n\nSources:\n- eventBridgeEnabled' }),
    );

    expect(score).toMatchObject({ found: ['versioned'], missing: ['eventBridgeEnabled'], hit: false });
  });

  it('does not count a citation the graph did not return', () => {
    expect(scoreStructural(PROPS, observed({ citations: [OTHER] }))).toMatchObject({
      cited: false,
      hit: false,
    });
  });

  it('does not count a result about another entity', () => {
    const other = DESCRIBED.replace('aws_s3.BucketProps', 'aws_s3.BucketPolicyProps');

    expect(
      scoreStructural(PROPS, observed({ graphResults: [{ status: 'OK', content: other }] })),
    ).toMatchObject({
      graph: true,
      subject: false,
      hit: false,
    });
  });

  it('ignores failed and non-JSON graph results, and counts no call as no graph', () => {
    const failed = [
      { status: 'NOT_FOUND', content: DESCRIBED },
      { status: 'OK', content: 'not json' },
      { status: 'OK', content: '[1, 2]' },
    ];

    expect(scoreStructural(PROPS, observed({ graphResults: failed }))).toMatchObject({
      graph: false,
      subject: false,
      cited: false,
      hit: false,
    });
    expect(scoreStructural(PROPS, observed({ graphResults: [] }))).toMatchObject({
      graph: false,
      hit: false,
    });
  });
});

describe('structuralTable', () => {
  it('prints one row per question (held-out starred) and the rates over tuning, held-out and all', () => {
    const table = structuralTable([
      scoreStructural(PROPS, observed()),
      scoreStructural(
        { ...PROPS, id: 'g91', heldOut: true },
        observed({ answer: 'Only `versioned`.', citations: [] }),
      ),
    ]);
    const lines = table.split('\n');

    expect(lines).toHaveLength(7);
    expect(lines[2]).toBe('| g90 | ✓ | ✓ | ✓ | 2/2 | ✓ | 12 |');
    expect(lines[3]).toBe('| g91* | ✓ | ✓ | · | 1/2 (missing eventBridgeEnabled) | · | 12 |');
    expect(lines[4]).toBe('| tuning (1) | 100 % | 100 % | 100 % | 100 % | 100 % | |');
    expect(lines[5]).toBe('| held out (1) | 100 % | 100 % | 0 % | 50 % | 0 % | |');
    expect(lines[6]).toBe('| all (2) | 100 % | 100 % | 50 % | 75 % | 50 % | |');
  });
});
