import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A small jsii assembly in the shape of aws-cdk-lib's (the published jsii spec): a module
 * `aws_s3` with a props struct, an interface hierarchy, a class hierarchy (whose root base,
 * `Resource`, is in the root module) and an enum, and a module `aws_iam` whose interface the s3
 * class satisfies through its bases.
 */
export function smallAssembly(): Record<string, unknown> {
  const t = (fqn: string, rest: Record<string, unknown>) => ({
    assembly: 'demo-lib',
    fqn,
    name: fqn.slice(fqn.lastIndexOf('.') + 1),
    ...rest,
  });
  return {
    schema: 'jsii/0.10.0',
    name: 'demo-lib',
    version: '1.2.3',
    types: {
      'demo-lib.aws_iam.IGrantable': t('demo-lib.aws_iam.IGrantable', {
        kind: 'interface',
        namespace: 'aws_iam',
        docs: { summary: 'Any object that can be granted permissions.' },
      }),
      'demo-lib.aws_s3.IBucket': t('demo-lib.aws_s3.IBucket', {
        kind: 'interface',
        namespace: 'aws_s3',
        interfaces: ['demo-lib.aws_iam.IGrantable'],
      }),
      'demo-lib.aws_s3.BucketBase': t('demo-lib.aws_s3.BucketBase', {
        kind: 'class',
        namespace: 'aws_s3',
        abstract: true,
        base: 'demo-lib.Resource',
        interfaces: ['demo-lib.aws_s3.IBucket'],
        properties: [
          { name: 'bucketArn', type: { primitive: 'string' }, docs: { summary: 'The ARN (base).' } },
        ],
        methods: [{ name: 'grantWrite', docs: { summary: 'Grants write permissions.' } }],
      }),
      'demo-lib.aws_s3.Bucket': t('demo-lib.aws_s3.Bucket', {
        kind: 'class',
        namespace: 'aws_s3',
        base: 'demo-lib.aws_s3.BucketBase',
        docs: { summary: 'An S3 bucket.' },
        properties: [
          { name: 'bucketArn', type: { primitive: 'string' }, docs: { summary: 'The ARN of this bucket.' } },
        ],
        methods: [
          {
            name: 'grantRead',
            parameters: [{ name: 'identity', type: { fqn: 'demo-lib.aws_iam.IGrantable' } }],
            returns: { type: { primitive: 'boolean' } },
            docs: { summary: 'Grants read permissions.' },
          },
        ],
      }),
      'demo-lib.aws_s3.BucketProps': t('demo-lib.aws_s3.BucketProps', {
        kind: 'interface',
        datatype: true,
        namespace: 'aws_s3',
        properties: [
          {
            name: 'versioned',
            type: { primitive: 'boolean' },
            optional: true,
            docs: { default: 'false', summary: 'Whether versioning is on.' },
          },
          {
            name: 'eventBridgeEnabled',
            type: { primitive: 'boolean' },
            optional: true,
            docs: { default: 'false', summary: 'Whether notifications go to EventBridge.' },
          },
          {
            name: 'encryption',
            type: { fqn: 'demo-lib.aws_s3.BucketEncryption' },
            optional: true,
            docs: { default: 'BucketEncryption.S3_MANAGED' },
          },
          { name: 'bucketName', type: { primitive: 'string' }, docs: { summary: 'Physical name.' } },
          {
            name: 'tags',
            type: { collection: { kind: 'map', elementtype: { primitive: 'string' } } },
            optional: true,
          },
        ],
      }),
      'demo-lib.aws_s3.BucketEncryption': t('demo-lib.aws_s3.BucketEncryption', {
        kind: 'enum',
        namespace: 'aws_s3',
        members: [{ name: 'S3_MANAGED' }, { name: 'KMS' }],
      }),
      'demo-lib.Stack': t('demo-lib.Stack', { kind: 'class', docs: { summary: 'A root stack.' } }),
      'demo-lib.Resource': t('demo-lib.Resource', {
        kind: 'class',
        abstract: true,
        docs: { summary: 'A construct that is a resource.' },
        methods: [{ name: 'applyRemovalPolicy', docs: { summary: 'Sets the removal policy.' } }],
      }),
    },
  };
}

/**
 * Writes a package folder: `.jsii` (`assembly`, by default {@link smallAssembly}) and
 * `aws-s3/README.md` naming some of its types.
 */
export async function writePackage(
  root?: string,
  assembly: Record<string, unknown> = smallAssembly(),
): Promise<string> {
  const dir = root ?? (await mkdtemp(join(tmpdir(), 'cld-graph-pkg-')));
  await mkdir(join(dir, 'aws-s3'), { recursive: true });
  await writeFile(join(dir, '.jsii'), JSON.stringify(assembly));
  await writeFile(
    join(dir, 'aws-s3', 'README.md'),
    [
      '# Amazon S3 Construct Library',
      '',
      'Define a bucket with `new s3.Bucket(this, "B", props)`; the `BucketProps` struct configures it.',
      '',
      '## Versioning',
      '',
      'Set `versioned: true` in `BucketProps` to keep every version of an object.',
      '',
    ].join('\n'),
  );
  return dir;
}
