import { App, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { Cld, type CldProps, configOfProps, namePrefix } from '../../infra/lib/cld.js';
import { ConfigError } from '../../shared/errors.js';

/**
 * The `Cld` construct's own props (infra/lib/cld.ts): validation that names the prop, names from
 * the construct path, and an existing bucket and table used instead of created ones. The
 * standalone stack around it is covered by stack.test.ts; the packed package by consumer.test.ts.
 */

const BASE: CldProps = { stageName: 'qa', modelId: 'offline' };

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('Cld props', () => {
  it.each([
    [{ stageName: 'Prod!' }, 'stageName:'],
    [{ modelId: 'gpt-4' }, 'modelId:'],
    [{ maxEventAge: Duration.seconds(10) }, 'maxEventAge:'],
    [{ jwtIssuer: 'https://issuer.example.com' }, 'jwtAudience:'],
    [{ reservedConcurrency: { plan: 5 } }, 'reservedConcurrency.plan:'],
  ])('refuses %j, naming the prop (%s)', (override, prop) => {
    const error = errorOf(() => configOfProps({ ...BASE, ...override } as CldProps));
    expect(error.code).toBe('CONFIG');
    expect(error.message).toContain(prop);
  });

  it('maps removal policy DESTROY to emptied buckets, RETAIN (the default) to kept ones', () => {
    expect(configOfProps(BASE).destroyData).toBe(false);
    expect(configOfProps({ ...BASE, removalPolicy: RemovalPolicy.DESTROY }).destroyData).toBe(true);
  });

  it('defaults log retention by stage: a year in prod, two weeks elsewhere', () => {
    expect(configOfProps({ ...BASE, stageName: 'prod' }).logRetentionDays).toBe(365);
    expect(configOfProps(BASE).logRetentionDays).toBe(14);
  });
});

describe('namePrefix', () => {
  it('is the stack name and the path below it, without Default', () => {
    const app = new App();
    const stack = new Stack(app, 'Platform');
    const nested = new Stack(app, 'Cld-dev');
    expect(namePrefix(new Construct(new Construct(stack, 'Team'), 'Agents'))).toBe('Platform-Team-Agents');
    expect(namePrefix(new Construct(nested, 'Default'))).toBe('Cld-dev');
  });
});

describe('Cld with an existing bucket and table', () => {
  it('creates neither, and grants and names the given ones to the functions', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'Platform');
    const bucket = Bucket.fromBucketName(stack, 'Events', 'platform-event-log');
    const table = TableV2.fromTableName(stack, 'Projections', 'platform-projections');
    const cld = new Cld(stack, 'Agents', { ...BASE, bucket, table, outputs: false });
    const template = Template.fromStack(stack);

    template.resourceCountIs('AWS::S3::Bucket', 0);
    template.resourceCountIs('AWS::DynamoDB::GlobalTable', 0);
    expect(cld.bucket).toBe(bucket);
    expect(cld.table).toBe(table);
    const plan = template.toJSON().Resources[
      stack.getLogicalId(cld.functions.get('plan')?.function.node.defaultChild as never)
    ] as { Properties: { Environment: { Variables: Record<string, unknown> } } };
    expect(plan.Properties.Environment.Variables).toMatchObject({
      CLD_BUCKET: 'platform-event-log',
      CLD_TABLE: 'platform-projections',
    });
    // The events that drive every step: EventBridge notifications turned on for the given bucket.
    template.hasResourceProperties('Custom::S3BucketNotifications', {
      BucketName: 'platform-event-log',
      NotificationConfiguration: { EventBridgeConfiguration: {} },
    });
    expect(Object.keys(template.findOutputs('*'))).toEqual([]);
  }, 180_000);
});
