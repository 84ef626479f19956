import { describe, expect, it } from 'vitest';
import {
  entityNames,
  graphAnswer,
  isStructuralQuestion,
  nextGraphCall,
  structuralQuery,
} from '../../shared/llm/offline-graph.js';

const ambiguous = (id: string) => [
  { content: [{ toolUse: { toolUseId: id, name: 'graph', input: { describe: 'FunctionProps' } } }] },
  {
    content: [
      {
        toolResult: {
          toolUseId: id,
          status: 'error',
          content: [
            {
              text: 'INVALID_ARGUMENTS: "FunctionProps" names 2 entities: type:aws-cdk-lib.aws_cloudfront.FunctionProps, type:aws-cdk-lib.aws_lambda.FunctionProps; give the module',
            },
          ],
        },
      },
    ],
  },
];

/** A graph call and its result as Converse messages. */
const exchange = (id: string, input: Record<string, unknown>, status: string, text: string) => [
  { content: [{ toolUse: { toolUseId: id, name: 'graph', input } }] },
  { content: [{ toolResult: { toolUseId: id, status, content: [{ text }] } }] },
];

describe('the offline model and the graph tool', () => {
  it.each([
    ['What properties does BucketProps take, and what are their defaults?', true],
    ['Which classes implement IGrantable?', true],
    ['Which values does BucketEncryption have?', true],
    ['How do I send S3 object events to EventBridge?', false],
    ['What properties does a bucket take?', false],
    ['How do I create a Bedrock knowledge base?', false],
    ['What is the base of the base of the Lambda Alias class?', true],
  ])('tells a structural question: %s → %s', (question, structural) => {
    expect(isStructuralQuestion(question)).toBe(structural);
  });

  it('prefers identifier-like names', () => {
    expect(entityNames('What does the EventBridge Rule extend in aws_events.Rule?')[0]).toBe(
      'aws_events.Rule',
    );
  });

  it('asks first with a describe, or with patterns for "implement"', () => {
    expect(nextGraphCall('What properties does BucketProps take?', [], new Set())).toEqual({
      describe: 'BucketProps',
    });
    expect(nextGraphCall('Which classes implement IGrantable?', [], new Set())).toMatchObject({
      patterns: [['?interface', 'rdfs:label', '"IGrantable"'], expect.any(Array), expect.any(Array)],
    });
    expect(
      nextGraphCall('What does aws_events.Rule extend, and what does it implement?', [], new Set()),
    ).toEqual({
      describe: 'aws_events.Rule',
    });
  });

  it('says which base an inherited property or method comes from', () => {
    const result = {
      entity: 'type:demo.TableProps',
      outgoing: [['rdf:type', 'jsii:Struct']],
      members: {
        partitionKey: {
          'rdfs:label': 'partitionKey',
          'jsii:valueType': 'Attribute',
          'jsii:optional': 'false',
          inheritedFrom: 'type:demo.SchemaOptions',
        },
        grant: {
          'rdfs:label': 'grant',
          'jsii:signature': 'grant(grantee: IGrantable)',
          inheritedFrom: 'type:demo.TableBase',
        },
        tableName: { 'rdfs:label': 'tableName', 'jsii:valueType': 'string', 'jsii:optional': 'true' },
      },
      basesNotRead: ['type:demo.Resource'],
      sources: [],
    };

    expect(graphAnswer('What properties does TableProps take?', result)).toContain(
      'Not listed: what it inherits from `demo.Resource` (describe it to see).',
    );
    expect(graphAnswer('What properties does TableProps take?', result)).toContain(
      '- `partitionKey` (Attribute, required; from `demo.SchemaOptions`)',
    );
    expect(graphAnswer('What properties does TableProps take?', result)).toContain(
      '- `tableName` (string, optional)',
    );
    expect(graphAnswer('What methods does Table have?', result)).toContain(
      '- `grant(grantee: IGrantable)` (from `demo.TableBase`)',
    );
  });

  it('resolves an ambiguous name to the candidate whose module the question names, once', () => {
    const messages = ambiguous('g1');
    expect(
      nextGraphCall('What properties does the Lambda FunctionProps take?', messages, new Set(['g1'])),
    ).toEqual({
      describe: 'type:aws-cdk-lib.aws_lambda.FunctionProps',
    });
    const answered = [
      ...messages,
      ...exchange('g2', { describe: 'type:aws-cdk-lib.aws_lambda.FunctionProps' }, 'success', '{}'),
    ];
    expect(
      nextGraphCall('What properties does the Lambda FunctionProps take?', answered, new Set(['g1', 'g2'])),
    ).toBeUndefined();
  });

  it('asks each candidate of an ambiguous name in turn when the question names no module, keeping hops and filter', () => {
    const question = 'Which properties of FunctionProps are required?';
    const where = { optional: false, kind: 'property' };
    const first = nextGraphCall(question, ambiguous('g1'), new Set(['g1']));
    const cloudfront = { describe: 'type:aws-cdk-lib.aws_cloudfront.FunctionProps', where };
    const lambda = { describe: 'type:aws-cdk-lib.aws_lambda.FunctionProps', where };
    const afterFirst = [...ambiguous('g1'), ...exchange('g2', cloudfront, 'success', '{}')];
    const afterBoth = [...afterFirst, ...exchange('g3', lambda, 'success', '{}')];

    expect(first).toEqual(cloudfront);
    expect(nextGraphCall(question, afterFirst, new Set(['g1', 'g2']))).toEqual(lambda);
    expect(nextGraphCall(question, afterBoth, new Set(['g1', 'g2', 'g3']))).toBeUndefined();
  });

  it('tries the next name of the question when the first is not found or a hop leads nowhere from it', () => {
    const question = 'List only the optional properties of the CloudWatch AlarmProps.';
    const notFound = exchange(
      'g1',
      { describe: 'Lambda', follow: ['base'] },
      'error',
      'NOT_FOUND: type:aws-cdk-lib.aws_ses_actions.Lambda has no base in the graph',
    );

    expect(
      nextGraphCall('What is the base of the base of the Lambda Alias?', notFound, new Set(['g1'])),
    ).toEqual({
      describe: 'Alias',
      follow: ['base'],
    });
    expect(
      nextGraphCall(
        question,
        exchange('g1', { describe: 'X' }, 'error', 'INVALID_ARGUMENTS: bad'),
        new Set(['g1']),
      ),
    ).toBeUndefined();
  });

  it('answers an enum with its members and a describe with every property, from the result only', () => {
    const enumAnswer = graphAnswer('Which values does BucketEncryption have?', {
      entity: 'type:demo.BucketEncryption',
      outgoing: [['rdf:type', 'jsii:Enum']],
      members: { KMS: { 'rdfs:label': 'KMS' }, S3_MANAGED: { 'rdfs:label': 'S3_MANAGED' } },
      sources: ['cld:doc.Document.0d0c000000000001/doc.Graph.0e00000000000001'],
    });
    expect(enumAnswer).toContain('is an enum');
    expect(enumAnswer).toContain('Members: `KMS`, `S3_MANAGED`.');
    expect(enumAnswer).toContain('- cld:doc.Document.0d0c000000000001/doc.Graph.0e00000000000001');
    expect(graphAnswer('x', 'not a result')).toBeUndefined();
  });

  it('makes at most 4 graph calls for one question, leaving turns for a search and the answer', () => {
    const question = 'What methods do Alpha, Beta, Gamma, Delta and Epsilon have?';
    const missing = (names: string[]) =>
      names.flatMap((name, i) =>
        exchange(`g${i}`, { describe: name }, 'error', `NOT_FOUND: no entity named "${name}" in the graph`),
      );
    const ids = (n: number) => new Set(Array.from({ length: n }, (_, i) => `g${i}`));

    expect(nextGraphCall(question, missing(['Epsilon', 'Alpha', 'Gamma']), ids(3))).toEqual({
      describe: 'Delta',
    });
    expect(nextGraphCall(question, missing(['Epsilon', 'Alpha', 'Gamma', 'Delta']), ids(4))).toBeUndefined();
  });

  it.each([
    [
      'Which properties of FunctionProps are required?',
      'FunctionProps',
      [],
      { kind: 'property', optional: false },
    ],
    [
      'List only the optional properties of BucketProps.',
      'BucketProps',
      [],
      { kind: 'property', optional: true },
    ],
    [
      'Which methods of the S3 Bucket class take an IGrantable?',
      'Bucket',
      [],
      { kind: 'method', takes: 'IGrantable' },
    ],
    [
      'Which methods of Topic have an IGrantable parameter?',
      'Topic',
      [],
      { kind: 'method', takes: 'IGrantable' },
    ],
    [
      'Which methods of the Lambda Function class return a Metric?',
      'Function',
      [],
      { kind: 'method', returns: 'Metric' },
    ],
    [
      'Which properties of QueueProps are of type Duration?',
      'QueueProps',
      [],
      { kind: 'property', type: 'Duration' },
    ],
    [
      'Which BucketProps properties take a boolean?',
      'BucketProps',
      [],
      { kind: 'property', type: 'boolean' },
    ],
    [
      'Which properties of QueueProps are Durations?',
      'QueueProps',
      [],
      { kind: 'property', type: 'Duration' },
    ],
    [
      'What static methods does the DynamoDB Table class have?',
      'Table',
      [],
      { kind: 'method', static: true },
    ],
    [
      'Which methods does Function declare itself, not inherited?',
      'Function',
      [],
      { kind: 'method', inherited: false },
    ],
    ['Which methods does Bucket inherit?', 'Bucket', [], { kind: 'method', inherited: true }],
    ['Which interfaces does the base class of the SQS Queue implement?', 'Queue', ['base'], undefined],
    ["What interfaces does FargateService's base class implement?", 'FargateService', ['base'], undefined],
    ["What is the base class of the Lambda Function's base class?", 'Function', ['base'], undefined],
    ['What is the base of the base of the base of Alias?', 'Alias', ['base', 'base'], undefined],
    ['What does the base class of NodejsFunction extend?', 'NodejsFunction', ['base'], undefined],
    ['What does aws_events.Rule extend?', 'aws_events.Rule', [], undefined],
    [
      'What values can the encryption property of BucketProps take?',
      'BucketProps',
      ['property:encryption'],
      undefined,
    ],
    [
      "What properties does the type of QueueProps' deadLetterQueue have?",
      'QueueProps',
      ['property:deadLetterQueue'],
      undefined,
    ],
    ['Which values does BucketProps.encryption accept?', 'BucketProps', ['property:encryption'], undefined],
    [
      "Which methods of the SNS Topic's base class take an IGrantable?",
      'Topic',
      ['base'],
      { kind: 'method', takes: 'IGrantable' },
    ],
    ['What properties does BucketProps take, and what are their defaults?', 'BucketProps', [], undefined],
  ])('maps "%s" to describe %s, follow %j, where %j', (question, entity, follow, where) => {
    const query = structuralQuery(question);

    expect(isStructuralQuestion(question)).toBe(true);
    expect(query.candidates[0]).toBe(entity);
    expect(query.follow).toEqual(follow);
    expect(query.where).toEqual(where);
  });

  it('answers a two-hop result with each hop and its source, then what the last hop led to', () => {
    const graph = 'cld:doc.Document.0d0c000000000001/doc.Graph.0e00000000000001';
    const other = 'cld:doc.Document.0d0c000000000001/doc.Graph.0e00000000000002';
    const answer = graphAnswer('Which values does the logRetention property of FunctionProps accept?', {
      entity: 'type:demo.aws_logs.RetentionDays',
      outgoing: [['rdf:type', 'jsii:Enum']],
      members: { ONE_DAY: { 'rdfs:label': 'ONE_DAY' } },
      path: [
        {
          entity: 'type:demo.aws_lambda.FunctionProps',
          via: 'jsii:property',
          member: 'type:demo.aws_lambda.FunctionOptions/logRetention',
          valueType: 'RetentionDays',
          to: 'type:demo.aws_logs.RetentionDays',
          sources: [graph],
        },
      ],
      sources: [graph, other],
    });

    expect(answer).toContain(
      `1. The \`logRetention\` property of \`demo.aws_lambda.FunctionProps\` is of type \`demo.aws_logs.RetentionDays\` (written \`RetentionDays\`) (source: ${graph}).`,
    );
    expect(answer).toContain('Members: `ONE_DAY`.');
    expect(answer).toContain(`- ${other}`);
  });

  it('answers a filtered result with what the filter kept of how many, and a base hop', () => {
    const answer = graphAnswer('Which methods of the base class of Queue take an IGrantable?', {
      entity: 'type:demo.QueueBase',
      outgoing: [['rdf:type', 'jsii:Class']],
      members: {
        grantPurge: { 'jsii:signature': 'grantPurge(grantee: IGrantable): Grant' },
      },
      path: [{ entity: 'type:demo.Queue', via: 'jsii:extends', to: 'type:demo.QueueBase', sources: [] }],
      filter: { where: { kind: 'method', takes: 'IGrantable' }, matched: 1, of: 30 },
      sources: [],
    });
    const none = graphAnswer('Which properties of X are required?', {
      entity: 'type:demo.X',
      outgoing: [],
      members: {},
      filter: { where: { kind: 'property', optional: false }, matched: 0, of: 4 },
    });

    expect(answer).toContain('1. `demo.Queue` extends `demo.QueueBase`.');
    expect(answer).toContain(
      '1 method taking IGrantable (of 30 members):\n- `grantPurge(grantee: IGrantable): Grant`',
    );
    expect(none).toContain('No required properties (of 4 members).');
  });

  it('answers the candidates of an ambiguous name side by side', () => {
    const one = (module: string) => ({
      entity: `type:demo.${module}.FunctionProps`,
      outgoing: [['rdf:type', 'jsii:Struct']],
      members: { code: { 'jsii:valueType': 'Code', 'jsii:optional': 'false' } },
      sources: [
        `cld:doc.Document.0d0c000000000001/doc.Graph.${module === 'a' ? '0e00000000000001' : '0e00000000000002'}`,
      ],
    });
    const answer = graphAnswer('Which properties of FunctionProps are required?', [one('a'), one('b')]) ?? '';

    expect(answer).toMatch(/^`FunctionProps` names 2 types; each is answered:/);
    expect(answer).toContain('(type:demo.a.FunctionProps)');
    expect(answer).toContain('(type:demo.b.FunctionProps)');
    expect(answer.match(/doc\.Graph\./g)).toHaveLength(2);
  });
});
