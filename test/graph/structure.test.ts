import { basename, dirname } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { toolActor } from '../../shared/domain/common.js';
import { startConversation } from '../../shared/domain/conversation.js';
import { NotFoundError, ValidationError } from '../../shared/errors.js';
import { GraphIndex } from '../../shared/graph/graph-index.js';
import { ingestGraph } from '../../shared/graph/ingest.js';
import type { DescribeResult } from '../../shared/graph/query.js';
import { matchesFilter, signatureTypes } from '../../shared/graph/structure.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { Message } from '../../shared/resources/schemas.js';
import { createLocalRuntime, type LocalRuntime } from '../../shared/runtime/local.js';
import type { MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import type { StorageInterface } from '../../shared/storage/port.js';
import { createGraphTool } from '../../shared/tools/graph.js';
import type { ToolContext } from '../../shared/tools/port.js';
import { smallAssembly, writePackage } from './helpers.js';

/**
 * Filters and two-hop questions in the graph query layer (issue 21): `describe` with `where`
 * (required or optional properties, properties of a type, methods taking or returning a type,
 * static or own members) and `follow` (the base class, the base of the base, the type of a
 * property), each hop recorded with the shard that holds it. On the small assembly of
 * ./helpers.ts plus a module `aws_s3_assets` (a subclass of Bucket, a props struct extending
 * BucketProps, a class whose base is in another assembly) and a root enum `RemovalPolicy`.
 */

const TASK =
  'cld:common.Conversation.c000000000000001/common.Message.a000000000000001/plan.Task.d000000000000001';

function assembly(): Record<string, unknown> {
  const base = smallAssembly() as { types: Record<string, Record<string, unknown>> };
  const t = (fqn: string, rest: Record<string, unknown>) => ({
    assembly: 'demo-lib',
    fqn,
    name: fqn.slice(fqn.lastIndexOf('.') + 1),
    ...rest,
  });
  const types = base.types;
  const bucket = types['demo-lib.aws_s3.Bucket'] as { methods: unknown[] };
  bucket.methods.push({
    name: 'fromBucketName',
    static: true,
    parameters: [{ name: 'name', type: { primitive: 'string' } }],
    returns: { type: { fqn: 'demo-lib.aws_s3.IBucket' } },
  });
  const bucketBase = types['demo-lib.aws_s3.BucketBase'] as { methods: unknown[] };
  bucketBase.methods.push({
    name: 'grantPut',
    parameters: [
      { name: 'identity', type: { fqn: 'demo-lib.aws_iam.IGrantable' } },
      {
        name: 'prefixes',
        type: { collection: { kind: 'map', elementtype: { primitive: 'string' } } },
        optional: true,
      },
    ],
    returns: { type: { fqn: 'demo-lib.aws_iam.Grant' } },
  });
  const props = types['demo-lib.aws_s3.BucketProps'] as { properties: unknown[] };
  props.properties.push({ name: 'removalPolicy', type: { fqn: 'demo-lib.RemovalPolicy' }, optional: true });
  Object.assign(types, {
    'demo-lib.aws_iam.Grant': t('demo-lib.aws_iam.Grant', { kind: 'class', namespace: 'aws_iam' }),
    'demo-lib.RemovalPolicy': t('demo-lib.RemovalPolicy', {
      kind: 'enum',
      members: [{ name: 'DESTROY' }, { name: 'RETAIN' }],
    }),
    'demo-lib.aws_s3_assets.AssetBucket': t('demo-lib.aws_s3_assets.AssetBucket', {
      kind: 'class',
      namespace: 'aws_s3_assets',
      base: 'demo-lib.aws_s3.Bucket',
    }),
    'demo-lib.aws_s3_assets.AssetBucketProps': t('demo-lib.aws_s3_assets.AssetBucketProps', {
      kind: 'interface',
      datatype: true,
      namespace: 'aws_s3_assets',
      interfaces: ['demo-lib.aws_s3.BucketProps'],
      properties: [{ name: 'assetHash', type: { primitive: 'string' } }],
    }),
    'demo-lib.aws_s3_assets.Widget': t('demo-lib.aws_s3_assets.Widget', {
      kind: 'class',
      namespace: 'aws_s3_assets',
      base: 'other-lib.Construct',
    }),
  });
  return base;
}

let runtime: LocalRuntime;
let indexStorage: StorageInterface;
/** The `doc.Graph` URN of each module's shard. */
const shard = new Map<string, string>();

beforeAll(async () => {
  const pkg = await writePackage(undefined, assembly());
  runtime = await createLocalRuntime({ dataDir: `${pkg}-data`, backoffMs: () => 5 });
  indexStorage = (runtime.deps.search as MiniSearchIndex).location?.storage as StorageInterface;
  await ingestGraph([basename(pkg)], {
    resources: runtime.deps.resources,
    indexStorage,
    actor: SYSTEM_ACTOR,
    cwd: dirname(pkg),
  });
  const graph = await GraphIndex.open(indexStorage, runtime.deps.resources);
  for (const entry of graph.manifest.sources[0]?.shards ?? []) shard.set(entry.name, entry.urn);
});

function call(input: Record<string, unknown>): Promise<DescribeResult> {
  const tool = createGraphTool(() => GraphIndex.open(indexStorage, runtime.deps.resources));
  const context: ToolContext = {
    actor: toolActor(TASK, 'graph'),
    resources: runtime.deps.resources,
    search: runtime.deps.search,
    signal: new AbortController().signal,
  };
  return tool.execute(input, context) as unknown as Promise<DescribeResult>;
}

const names = (result: DescribeResult) => Object.keys(result.members ?? {}).sort();

describe('describe with a member filter (where)', () => {
  it.each([
    ['required properties', 'BucketProps', { optional: false }, ['bucketName']],
    [
      'optional properties',
      'BucketProps',
      { kind: 'property', optional: true },
      ['encryption', 'eventBridgeEnabled', 'removalPolicy', 'tags', 'versioned'],
    ],
    [
      'properties of a primitive type',
      'BucketProps',
      { type: 'Boolean' },
      ['eventBridgeEnabled', 'versioned'],
    ],
    [
      'properties naming a type inside a collection',
      'BucketProps',
      { type: 'string' },
      ['bucketName', 'tags'],
    ],
    ['properties of a qualified type', 'BucketProps', { type: 'aws_s3.BucketEncryption' }, ['encryption']],
    [
      'methods taking a type, declared and inherited',
      'aws_s3.Bucket',
      { takes: 'IGrantable' },
      ['grantPut', 'grantRead'],
    ],
    ['methods returning a type', 'aws_s3.Bucket', { returns: 'Grant' }, ['grantPut']],
    ['static members', 'aws_s3.Bucket', { static: true }, ['fromBucketName']],
    [
      'members the type declares itself',
      'aws_s3.Bucket',
      { inherited: false },
      ['bucketArn', 'fromBucketName', 'grantRead'],
    ],
    [
      'inherited methods',
      'aws_s3.Bucket',
      { kind: 'method', inherited: true },
      ['applyRemovalPolicy', 'grantPut', 'grantWrite'],
    ],
    ['conditions together', 'aws_s3.Bucket', { takes: 'IGrantable', inherited: false }, ['grantRead']],
  ])('keeps only the %s', async (_, entity, where, expected) => {
    const result = await call({ describe: entity, where });

    expect(names(result)).toEqual(expected);
    expect(result.filter).toMatchObject({ where, matched: expected.length });
    expect(result.filter?.of).toBeGreaterThan(expected.length);
  });

  it('reports a filter that keeps nothing as no members, with the count it chose from', async () => {
    const result = await call({ describe: 'BucketProps', where: { takes: 'IGrantable' } });

    expect(result.members).toEqual({});
    expect(result.filter).toMatchObject({ matched: 0, of: 6 });
  });
});

describe('describe along hops (follow)', () => {
  it('describes the base class, recording the hop with the shard that holds it (the base class’s interfaces)', async () => {
    const result = await call({ describe: 'aws_s3.Bucket', follow: ['base'] });

    expect(result.entity).toBe('type:demo-lib.aws_s3.BucketBase');
    expect(result.outgoing).toContainEqual(['jsii:implements', 'type:demo-lib.aws_s3.IBucket']);
    expect(result.path).toEqual([
      {
        entity: 'type:demo-lib.aws_s3.Bucket',
        via: 'jsii:extends',
        to: 'type:demo-lib.aws_s3.BucketBase',
        sources: [shard.get('aws_s3')],
      },
    ]);
    expect(result.sources).toContain(shard.get('aws_s3'));
  });

  it('follows the base of the base across modules, each hop cited with its own shard', async () => {
    const result = await call({ describe: 'AssetBucket', follow: ['base', 'base'] });

    expect(result.entity).toBe('type:demo-lib.aws_s3.BucketBase');
    expect(result.path?.map((step) => [step.entity, step.to])).toEqual([
      ['type:demo-lib.aws_s3_assets.AssetBucket', 'type:demo-lib.aws_s3.Bucket'],
      ['type:demo-lib.aws_s3.Bucket', 'type:demo-lib.aws_s3.BucketBase'],
    ]);
    expect(result.path?.[0]?.sources[0]).toBe(shard.get('aws_s3_assets'));
    expect(result.path?.[1]?.sources).toEqual([shard.get('aws_s3')]);
    expect(result.sources).toEqual(expect.arrayContaining([shard.get('aws_s3_assets'), shard.get('aws_s3')]));
  });

  it('follows a property to the type it names, in another module (an enum and its values)', async () => {
    const result = await call({ describe: 'BucketProps', follow: ['property:removalPolicy'] });

    expect(result.entity).toBe('type:demo-lib.RemovalPolicy');
    expect(names(result)).toEqual(['DESTROY', 'RETAIN']);
    expect(result.path).toEqual([
      {
        entity: 'type:demo-lib.aws_s3.BucketProps',
        via: 'jsii:property',
        member: 'type:demo-lib.aws_s3.BucketProps/removalPolicy',
        valueType: 'RemovalPolicy',
        to: 'type:demo-lib.RemovalPolicy',
        sources: expect.arrayContaining([shard.get('aws_s3')]),
      },
    ]);
    expect(result.sources).toEqual(expect.arrayContaining([shard.get('aws_s3'), shard.get('core')]));
  });

  it('follows an inherited property, then filters the members of what it leads to', async () => {
    const enumValues = await call({ describe: 'AssetBucketProps', follow: ['property:encryption'] });
    const filtered = await call({
      describe: 'AssetBucket',
      follow: ['base'],
      where: { takes: 'IGrantable' },
    });

    expect(enumValues.entity).toBe('type:demo-lib.aws_s3.BucketEncryption');
    expect(enumValues.path?.[0]?.member).toBe('type:demo-lib.aws_s3.BucketProps/encryption');
    expect(filtered.entity).toBe('type:demo-lib.aws_s3.Bucket');
    expect(names(filtered)).toEqual(['grantPut', 'grantRead']);
  });

  it('describes a base outside the graph as not in it, keeping the path', async () => {
    const result = await call({ describe: 'Widget', follow: ['base'] });

    expect(result).toMatchObject({ entity: 'type:other-lib.Construct', notInGraph: true });
    expect(result.path?.[0]?.sources).toEqual([shard.get('aws_s3_assets')]);
  });

  it.each([
    ['a type without a base', { describe: 'BucketProps', follow: ['base'] }, NotFoundError, /has no base/],
    [
      'a property the type lacks',
      { describe: 'BucketProps', follow: ['property:nope'] },
      NotFoundError,
      /no property "nope"/,
    ],
    [
      'a property of a primitive type',
      { describe: 'BucketProps', follow: ['property:bucketName'] },
      ValidationError,
      /of type string, which names no type/,
    ],
    ['a hop that is not one', { describe: 'Bucket', follow: ['parent'] }, ValidationError, /a hop/],
    [
      'too many hops',
      { describe: 'Bucket', follow: ['base', 'base', 'base', 'base'] },
      ValidationError,
      /follow/,
    ],
    ['an empty filter', { describe: 'Bucket', where: {} }, ValidationError, /at least one condition/],
    [
      'a filter with an unknown condition',
      { describe: 'Bucket', where: { named: 'x' } },
      ValidationError,
      /named/,
    ],
    [
      'a type that is not a name',
      { describe: 'Bucket', where: { takes: 'I Grantable' } },
      ValidationError,
      /type name/,
    ],
    [
      'hops without describe',
      { patterns: [['?c', 'a', 'jsii:Class']], follow: ['base'] },
      ValidationError,
      /go with "describe"/,
    ],
  ])('refuses %s', async (_, input, type, message) => {
    const error = await call(input).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(type);
    expect((error as Error).message).toMatch(message);
  });
});

describe('member filters on describe’s facts', () => {
  it('reads parameter and return types from a signature, collections and unions included', () => {
    expect(
      signatureTypes(
        'grantWrite(identity: IGrantable, keys?: Map<string, Array<string>>, ...actions: string): Grant',
      ),
    ).toEqual({
      parameters: ['IGrantable', 'Map<string, Array<string>>', 'string'],
      returns: 'Grant',
    });
    expect(signatureTypes('addSSLPolicy()')).toEqual({ parameters: [], returns: undefined });
  });

  it('matches a type by its simple name, never by a longer name that contains it', () => {
    const method = { 'jsii:signature': 'grantRead(identity: IGrantableExtra): Grant' };

    expect(matchesFilter(method, { takes: 'IGrantable' })).toBe(false);
    expect(matchesFilter(method, { takes: 'aws_iam.IGrantableExtra' })).toBe(true);
    expect(
      matchesFilter({ 'jsii:valueType': 'Array<Duration>', 'jsii:optional': 'true' }, { type: 'Duration' }),
    ).toBe(true);
  });
});

describe('filter and two-hop questions asked end to end on the embedded default (offline model)', () => {
  async function ask(content: string, name: string): Promise<Message> {
    const started = await startConversation(runtime.deps.resources, {
      user: 'cli:graph',
      channel: { kind: 'cli' },
      content,
      conversationName: name,
    });
    await runtime.bus.idle();
    const below = await runtime.deps.resources.list(SYSTEM_ACTOR, started.conversation);
    return below.find((r) => r.meta.id === started.answer) as Message;
  }

  it('answers "the base class of X extend" with both hops, citing the shard of each', async () => {
    const answer = await ask('What does the base class of AssetBucket extend?', 'two-hop-e2e');

    expect(answer.content).toContain(
      `1. \`demo-lib.aws_s3_assets.AssetBucket\` extends \`demo-lib.aws_s3.Bucket\` (source: ${shard.get('aws_s3_assets')}`,
    );
    expect(answer.content).toContain('It extends `demo-lib.aws_s3.BucketBase`.');
    expect(answer.citations).toEqual(
      expect.arrayContaining([shard.get('aws_s3_assets'), shard.get('aws_s3')]),
    );
  });

  it('answers "the required properties" with those only', async () => {
    const answer = await ask('Which properties of BucketProps are required?', 'filter-e2e');

    expect(answer.content).toContain(
      '1 required property (of 6 members):\n- `bucketName` (string, required)',
    );
    expect(answer.content).not.toContain('`versioned`');
    expect(answer.citations).toContain(shard.get('aws_s3'));
  });
});
