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

  it('has at least 12 filter and two-hop questions, held out by the fixed rule (number a multiple of 3)', () => {
    const asked = loadStructuralSet().filter((q) => q.kind !== undefined);

    expect(asked.length).toBeGreaterThanOrEqual(12);
    expect(asked.filter((q) => q.kind === 'filter').every((q) => q.absent !== undefined)).toBe(true);
    expect(asked.filter((q) => q.kind === 'two-hop').every((q) => q.hops !== undefined)).toBe(true);
    for (const q of asked) expect(q.heldOut === true).toBe(Number(q.id.slice(1)) % 3 === 0);
  });
});

describe('scoreStructural', () => {
  it('hits when a graph result describes the subject, the answer cites its sources and lists every term', () => {
    expect(scoreStructural(PROPS, observed())).toEqual({
      id: 'g90',
      heldOut: false,
      kind: undefined,
      graph: true,
      subject: true,
      cited: true,
      found: ['versioned', 'eventBridgeEnabled'],
      missing: [],
      unfiltered: [],
      filtered: undefined,
      hops: undefined,
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

  it('misses a filter question whose answer still lists a name the filter leaves out', () => {
    const required: StructuralQuestion = { ...PROPS, kind: 'filter', absent: ['memorySize', 'grantRead'] };
    const listed = (answer: string) =>
      scoreStructural(required, observed({ answer: `${answer}\n- \`versioned\`\n- \`eventBridgeEnabled\`` }));

    expect(listed('- `memorySize` (number, optional)')).toMatchObject({
      unfiltered: ['memorySize'],
      filtered: false,
      hit: false,
    });
    expect(listed('- `grantRead(identity: IGrantable): Grant`')).toMatchObject({ unfiltered: ['grantRead'] });
    expect(listed('- memorySize: number')).toMatchObject({ unfiltered: ['memorySize'] });
    expect(listed('It has 12 properties; memorySizes differ.')).toMatchObject({ filtered: true, hit: true });
    expect(listed('- `timeout` (number, optional; default: `memorySize` / 2)')).toMatchObject({
      filtered: true,
    });
  });

  it('hits a two-hop question only when every hop is described with a source the answer cites', () => {
    const twoHop: StructuralQuestion = {
      id: 'g92',
      kind: 'two-hop',
      text: "Which interfaces does Queue's base class implement?",
      subjects: ['type:aws-cdk-lib.aws_sqs.QueueBase'],
      hops: ['type:aws-cdk-lib.aws_sqs.Queue', 'type:aws-cdk-lib.aws_sqs.QueueBase'],
      terms: ['IQueue'],
    };
    const result = (path: unknown[]) =>
      JSON.stringify({ entity: 'type:aws-cdk-lib.aws_sqs.QueueBase', path, sources: [GRAPH] });
    const ask = (content: string, citations: string[]) =>
      scoreStructural(
        twoHop,
        observed({ graphResults: [{ status: 'OK', content }], answer: '`IQueue`', citations }),
      );
    const queueStep = { entity: 'type:aws-cdk-lib.aws_sqs.Queue', sources: [OTHER] };

    expect(ask(result([queueStep]), [GRAPH, OTHER])).toMatchObject({ hops: true, hit: true });
    expect(ask(result([queueStep]), [GRAPH])).toMatchObject({ hops: false, hit: false });
    expect(ask(result([]), [GRAPH])).toMatchObject({ subject: true, hops: false, hit: false });
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
    expect(lines[2]).toBe('| g90 | ✓ | ✓ | ✓ | – | 2/2 | – | ✓ | 12 |');
    expect(lines[3]).toBe('| g91* | ✓ | ✓ | · | – | 1/2 (missing eventBridgeEnabled) | – | · | 12 |');
    expect(lines[4]).toBe('| tuning (1) | 100 % | 100 % | 100 % | – | 100 % | – | 100 % | |');
    expect(lines[5]).toBe('| held out (1) | 100 % | 100 % | 0 % | – | 50 % | – | 0 % | |');
    expect(lines[6]).toBe('| all (2) | 100 % | 100 % | 50 % | – | 75 % | – | 50 % | |');
  });

  it('adds rows for the filter and two-hop questions, split into tuning and held out', () => {
    const filter = scoreStructural(
      { ...PROPS, id: 'g93', kind: 'filter', absent: ['autoDeleteObjects'] },
      observed({ answer: '- `versioned`\n- `eventBridgeEnabled`\n- `autoDeleteObjects`' }),
    );
    const twoHop = scoreStructural(
      {
        ...PROPS,
        id: 'g96',
        heldOut: true,
        kind: 'two-hop',
        hops: [PROPS.subjects[0] as string, PROPS.subjects[0] as string],
      },
      observed(),
    );
    const lines = structuralTable([filter, twoHop]).split('\n');

    expect(lines[2]).toBe('| g93 | ✓ | ✓ | ✓ | – | 2/2 | · (lists autoDeleteObjects) | · | 12 |');
    expect(lines[3]).toBe('| g96* | ✓ | ✓ | ✓ | ✓ | 2/2 | – | ✓ | 12 |');
    expect(lines.slice(4).map((line) => line.split(' | ')[0])).toEqual([
      '| tuning (1)',
      '| held out (1)',
      '| filters (1)',
      '| two hops (1)',
      '| filters & two hops, tuning (1)',
      '| filters & two hops, held out (1)',
      '| all (2)',
    ]);
    expect(lines[10]).toBe('| all (2) | 100 % | 100 % | 100 % | 100 % | 100 % | 0 % | 50 % | |');
  });
});
