import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { App, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { Cld, type CldProps, checkCatalog, configOfProps, namePrefix } from '../../infra/lib/cld.js';
import { FUNCTION_TABLE } from '../../infra/lib/functions.js';
import {
  BUNDLED_CATALOG_FILE,
  bundledCatalogFiles,
  type CatalogFiles,
  catalogObjects,
  DEFAULT_CATALOG_FILES,
} from '../../shared/catalog/catalog.js';
import { ConfigError, ValidationError } from '../../shared/errors.js';

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
    [{ alarmEmial: 'ops@example.com' }, "unknown 'alarmEmial'"],
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

/** A catalog of one assistant (the researcher, with other instructions) and the two tools it uses. */
const [researcherFile] = DEFAULT_CATALOG_FILES.assistants.filter(
  (a) => (a as { name: string }).name === 'researcher',
);
const CUSTOM: CatalogFiles = {
  assistants: [
    { ...(researcherFile as object), instructions: 'Search, read, answer in one paragraph; cite.' },
  ],
  tools: DEFAULT_CATALOG_FILES.tools.filter((t) => ['search', 'read'].includes((t as { name: string }).name)),
};

describe('the catalog as data', () => {
  it('accepts a catalog of implemented tools and the assistants that use them', () => {
    expect(checkCatalog(CUSTOM).map((o) => o.key)).toEqual(catalogObjects(CUSTOM).map((o) => o.key));
  });

  it.each([
    [
      'a tool the code does not implement',
      { ...CUSTOM, tools: [...CUSTOM.tools, { ...(CUSTOM.tools[0] as object), name: 'weather' }] },
      'tool "weather" has no implementation',
    ],
    [
      'an assistant naming a tool the catalog leaves out',
      { ...CUSTOM, tools: CUSTOM.tools.slice(0, 1) },
      'names tool',
    ],
    [
      'a malformed definition',
      { ...CUSTOM, assistants: [{ name: 'x' }] },
      'catalog: invalid catalog assistant',
    ],
  ])('refuses %s', (_what, files, message) => {
    const error = errorOf(() => checkCatalog(files as CatalogFiles));
    expect(error.message).toContain(message);
  });

  it("reads the asset's catalog file, and none when the asset has none", () => {
    const dir = mkdtempSync(join(tmpdir(), 'cld-asset-'));
    const url = pathToFileURL(`${dir}/`);
    expect(bundledCatalogFiles(url)).toBeUndefined();
    mkdirSync(join(dir, 'catalog'));
    writeFileSync(join(dir, BUNDLED_CATALOG_FILE), JSON.stringify(CUSTOM));
    expect(bundledCatalogFiles(url)).toEqual(CUSTOM);
    writeFileSync(join(dir, BUNDLED_CATALOG_FILE), '{"assistants": "x"}');
    expect(() => bundledCatalogFiles(url)).toThrow(ValidationError);
  });

  it("stores the given catalog at deploy and copies it into a function's built asset", () => {
    const outdir = mkdtempSync(join(tmpdir(), 'cld-catalog-synth-'));
    const app = new App({ outdir, context: { 'aws:cdk:enable-asset-metadata': true } });
    const stack = new Stack(app, 'Platform');
    const cld = new Cld(stack, 'Agents', {
      ...BASE,
      catalog: CUSTOM,
      // One function, bundled for real (the sweeper: no console, no MCP SDK), and no routes.
      functions: { sweeper: FUNCTION_TABLE.sweeper as NonNullable<(typeof FUNCTION_TABLE)['sweeper']> },
      routes: () => [],
      apiRoutes: [],
      outputs: false,
    });
    expect([...cld.catalogSeed.objects.keys()]).toEqual(catalogObjects(CUSTOM).map((o) => o.key));
    const assembly = app.synth();
    const template = assembly.getStackByName('Platform').template as {
      Resources: Record<string, { Type: string; Metadata?: Record<string, string> }>;
    };
    const [fn] = Object.values(template.Resources).filter(
      (r) => r.Type === 'AWS::Lambda::Function' && r.Metadata?.['aws:asset:path']?.startsWith('asset.'),
    );
    const asset = join(outdir, fn?.Metadata?.['aws:asset:path'] as string);
    expect(JSON.parse(readFileSync(join(asset, BUNDLED_CATALOG_FILE), 'utf8'))).toEqual(CUSTOM);
    expect(bundledCatalogFiles(pathToFileURL(`${asset}/`))).toEqual(CUSTOM);
  }, 300_000);
});
