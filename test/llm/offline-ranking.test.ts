import { describe, expect, it } from 'vitest';
import { type ExtractHit, extractiveAnswer } from '../../shared/llm/extract.js';

/** The answer without its Sources block. */
function body(answer: string): string {
  return answer.replace(/\n\s*Sources:\s*\n[\s\S]*$/, '');
}

/** The answer's first code block: what it leads with, after the sentence that introduces it. */
function firstCode(answer: string): string {
  return /```[^\n]*\n([\s\S]*?)```/.exec(body(answer))?.[1] ?? '';
}

const fence = (code: string) => ['```ts', code, '```'].join('\n');

describe('offline answers: which passage leads (issue 21)', () => {
  it('uses a third-ranked chunk whose code holds every question term over a first hit holding a few', () => {
    const hits: ExtractHit[] = [
      {
        urn: 'cld:doc.Document.ecs/doc.Chunk.clusters',
        title: 'Clusters',
        text: [
          'To use tasks with Amazon EC2 launch-type, you have to add capacity to the cluster.',
          '',
          'The following code imports an existing ECS cluster using its ARN:',
          '',
          fence("const cluster = ecs.Cluster.fromClusterArn(this, 'Cluster', clusterArn);"),
        ].join('\n'),
      },
      {
        urn: 'cld:doc.Document.ecs/doc.Chunk.tasks',
        title: 'Task definitions',
        text: 'A task definition describes the containers of a cluster task and their images.',
      },
      {
        urn: 'cld:doc.Document.ecs/doc.Chunk.spot',
        title: 'Spot instances',
        text: [
          'To run on spot capacity, you must specify the price:',
          '',
          fence(
            [
              'declare const cluster: ecs.Cluster;',
              "cluster.addCapacity('AsgSpot', {",
              "  instanceType: new ec2.InstanceType('c5.xlarge'),",
              "  spotPrice: '0.0735',",
              '});',
            ].join('\n'),
          ),
        ].join('\n'),
      },
    ];
    const answer = extractiveAnswer('How do I add EC2 instances as capacity to an ECS cluster?', hits);
    expect(firstCode(answer)).toContain('cluster.addCapacity(');
    expect(answer).toContain('cld:doc.Document.ecs/doc.Chunk.spot');
  });

  it('does not count an introducing sentence that restates the question twice: the code spelling the rarer term wins', () => {
    const hits: ExtractHit[] = [
      {
        urn: 'cld:doc.Document.backup/doc.Chunk.rules',
        title: 'Backup plan and selection',
        text: [
          'You can index the resource types of a rule by listing the resource types:',
          '',
          fence(
            'plan.addRule(new backup.BackupPlanRule({ indexActions: [{ resourceTypes: [backup.IndexActionResourceType.S3] }] }));',
          ),
          '',
          'It is also possible to specify a vault at the plan level.',
          '',
          fence("const plan = backup.BackupPlan.daily35DayRetention(this, 'Plan', myVault);"),
        ].join('\n'),
      },
      {
        urn: 'cld:doc.Document.backup/doc.Chunk.vault',
        title: 'Backup vault',
        text: 'A backup vault holds the recovery points of the resources a plan backs up.',
      },
    ];
    const answer = extractiveAnswer('How do I back up resources every day with AWS Backup?', hits);
    expect(firstCode(answer)).toContain('BackupPlan.daily35DayRetention');
  });

  it('counts what a part refers back to less than what it asks anew', () => {
    const hits: ExtractHit[] = [
      {
        urn: 'cld:doc.Document.ssm/doc.Chunk.tokens',
        title: 'Using Tokens in parameter name',
        text: [
          'When the name holds a token, set the simple name property:',
          '',
          fence(
            "new ssm.StringParameter(this, 'Parameter', { parameterName: 'p', stringValue: 'v', simpleName: false });",
          ),
        ].join('\n'),
      },
      {
        urn: 'cld:doc.Document.ssm/doc.Chunk.grants',
        title: 'Permission grants',
        text: ['Grant a Lambda function read access:', '', fence('param.grantRead(lambdaFunction);')].join(
          '\n',
        ),
      },
    ];
    const answer = extractiveAnswer(
      'How do I let a Lambda function read it? (it: `ssm.StringParameter`)',
      hits,
    );
    expect(firstCode(answer)).toContain('param.grantRead(lambdaFunction)');
  });

  it('leads with the code that holds two question words side by side (an S3 Bucket Key) over code holding them apart', () => {
    const hits: ExtractHit[] = [
      {
        urn: 'cld:doc.Document.s3/doc.Chunk.encryption',
        title: 'Encryption',
        text: [
          'Define a KMS-encrypted bucket:',
          '',
          fence(
            [
              "const bucket = new s3.Bucket(this, 'MyEncryptedBucket', {",
              '  encryption: s3.BucketEncryption.KMS,',
              '});',
              'assert(bucket.encryptionKey instanceof kms.Key);',
            ].join('\n'),
          ),
          '',
          'Enable KMS-SSE encryption via S3 Bucket Keys:',
          '',
          fence(
            [
              "const bucket = new s3.Bucket(this, 'MyEncryptedBucket', {",
              '  encryption: s3.BucketEncryption.KMS,',
              '  bucketKeyEnabled: true,',
              '});',
            ].join('\n'),
          ),
        ].join('\n'),
      },
      {
        urn: 'cld:doc.Document.kms/doc.Chunk.keys',
        title: 'Keys',
        text: 'A KMS key encrypts the data of a bucket.',
      },
    ];
    const answer = extractiveAnswer(
      'How do I reduce the KMS requests of that bucket with an S3 Bucket Key? (that bucket: `s3.Bucket`)',
      hits,
    );
    expect(firstCode(answer)).toContain('bucketKeyEnabled: true');
  });

  it('gives a sentence that introduces code no place among the sentences the answer says', () => {
    const hits: ExtractHit[] = [
      {
        urn: 'cld:doc.Document.kms/doc.Chunk.alias',
        title: 'Import key by alias',
        text: [
          'If an existing KMS key has an alias, the alias can be imported in place of the key.',
          '',
          'You can look up an existing KMS key by its alias with `Key.fromLookup()`.',
          '',
          'To use an existing KMS key in another stack, import the key by its alias with this call:',
          '',
          fence("const other = cdk.Fn.importValue('KeyArnExport');"),
          '',
          'The preferred method is `Alias.fromAliasName()`, which returns an alias.',
        ].join('\n'),
      },
      {
        urn: 'cld:doc.Document.kms/doc.Chunk.lookup',
        title: 'Lookup key by alias',
        text: [
          'Look a key up by its alias name:',
          '',
          fence("const key = kms.Key.fromLookup(this, 'Lookup', { aliasName: 'alias/KeyAlias' });"),
        ].join('\n'),
      },
      { urn: 'cld:doc.Document.kms/doc.Chunk.policies', title: 'Key policies', text: 'Key policies.' },
    ];
    const answer = body(extractiveAnswer('How do I use an existing KMS key by its alias?', hits));
    expect(answer).toContain('The preferred method is `Alias.fromAliasName()`');
  });

  it('matches a code block by its heading too: the code under "Encryption at rest" answers how to encrypt', () => {
    const hits: ExtractHit[] = [
      {
        urn: 'cld:doc.Document.logs/doc.Chunk.groups',
        title: 'Log Groups',
        text: [
          'Create a log group:',
          '',
          fence("new logs.LogGroup(this, 'LogGroup', { retention: 7 });"),
        ].join('\n'),
      },
      {
        urn: 'cld:doc.Document.logs/doc.Chunk.rest',
        title: 'Log Groups > Encryption at rest',
        text: ['Pass your own key:', '', fence("new logs.LogGroup(this, 'LogGroup', { kmsKey: key });")].join(
          '\n',
        ),
      },
    ];
    const answer = extractiveAnswer('How do I encrypt a log group?', hits);
    expect(firstCode(answer)).toContain('kmsKey: key');
  });
});
