import { describe, expect, it } from 'vitest';
import {
  entityNames,
  graphAnswer,
  isStructuralQuestion,
  nextGraphCall,
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

describe('the offline model and the graph tool', () => {
  it.each([
    ['What properties does BucketProps take, and what are their defaults?', true],
    ['Which classes implement IGrantable?', true],
    ['Which values does BucketEncryption have?', true],
    ['How do I send S3 object events to EventBridge?', false],
    ['What properties does a bucket take?', false],
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
    expect(nextGraphCall('What properties does FunctionProps take?', messages, new Set(['g1']))).toEqual({
      describe: 'type:aws-cdk-lib.aws_cloudfront.FunctionProps',
    });
    expect(
      nextGraphCall('What properties does FunctionProps take?', messages, new Set(['g1', 'g2'])),
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
});
