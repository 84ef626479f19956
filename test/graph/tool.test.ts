import { basename, dirname } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import graphFile from '../../shared/catalog/tools/graph.json' with { type: 'json' };
import { toolActor } from '../../shared/domain/common.js';
import { startConversation } from '../../shared/domain/conversation.js';
import { NotFoundError, PolicyDeniedError, ValidationError } from '../../shared/errors.js';
import { GraphIndex } from '../../shared/graph/graph-index.js';
import { ingestGraph } from '../../shared/graph/ingest.js';
import { describeEntity } from '../../shared/graph/query.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { Message, Tool, ToolCallResource } from '../../shared/resources/schemas.js';
import { createLocalRuntime, type LocalRuntime } from '../../shared/runtime/local.js';
import { ingest } from '../../shared/search/ingest.js';
import type { MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import type { StorageInterface } from '../../shared/storage/port.js';
import { argumentCheck } from '../../shared/tools/execution.js';
import { createGraphTool, GraphInputSchema } from '../../shared/tools/graph.js';
import type { ToolContext } from '../../shared/tools/port.js';
import { writePackage } from './helpers.js';

const TASK =
  'cld:common.Conversation.c000000000000001/common.Message.a000000000000001/plan.Task.d000000000000001';

let runtime: LocalRuntime;
let indexStorage: StorageInterface;

beforeAll(async () => {
  const pkg = await writePackage();
  runtime = await createLocalRuntime({ dataDir: `${pkg}-data`, backoffMs: () => 5 });
  const index = runtime.deps.search as MiniSearchIndex;
  indexStorage = index.location?.storage as StorageInterface;
  const cwd = dirname(pkg);
  await ingest([basename(pkg)], { resources: runtime.deps.resources, index, actor: SYSTEM_ACTOR, cwd });
  const report = await ingestGraph([basename(pkg)], {
    resources: runtime.deps.resources,
    indexStorage,
    actor: SYSTEM_ACTOR,
    cwd,
  });
  expect(report.mentions).toBeGreaterThan(0);
});

function call(input: Record<string, unknown>, actor = toolActor(TASK, 'graph')) {
  const tool = createGraphTool(() => GraphIndex.open(indexStorage, runtime.deps.resources));
  const context: ToolContext = {
    actor,
    resources: runtime.deps.resources,
    search: runtime.deps.search,
    signal: new AbortController().signal,
  };
  return tool.execute(input, context) as Promise<Record<string, unknown>>;
}

describe('the graph tool', () => {
  it('describes a props struct with every property, its value type, optionality and default, citing graph and chunks', async () => {
    const result = (await call({ describe: 'BucketProps' })) as {
      members: Record<string, Record<string, string>>;
      sources: string[];
    };
    expect(Object.keys(result.members).sort()).toEqual([
      'bucketName',
      'encryption',
      'eventBridgeEnabled',
      'tags',
      'versioned',
    ]);
    expect(result.members.versioned).toMatchObject({
      'jsii:default': 'false',
      'jsii:optional': 'true',
      'jsii:valueType': 'boolean',
    });
    expect(result.members.bucketName?.['jsii:optional']).toBe('false');
    expect(result.sources.some((s) => /\/doc\.Graph\.[0-9a-f]{16}$/.test(s))).toBe(true);
    expect(result.sources.some((s) => /\/doc\.Chunk\.[0-9a-f]{16}$/.test(s))).toBe(true);
  });

  it('describes a class with the members it inherits along its bases, across modules, its own declaration first', async () => {
    const result = (await call({ describe: 'aws_s3.Bucket' })) as {
      members: Record<string, Record<string, string>>;
      sources: string[];
      basesNotRead?: string[];
    };

    expect(Object.keys(result.members).sort()).toEqual([
      'applyRemovalPolicy',
      'bucketArn',
      'grantRead',
      'grantWrite',
    ]);
    expect(result.members.grantRead?.inheritedFrom).toBeUndefined();
    expect(result.members.bucketArn).toMatchObject({ 'rdfs:comment': 'The ARN of this bucket.' });
    expect(result.members.bucketArn?.inheritedFrom).toBeUndefined();
    expect(result.members.grantWrite?.inheritedFrom).toBe('type:demo-lib.aws_s3.BucketBase');
    expect(result.members.applyRemovalPolicy).toMatchObject({
      inheritedFrom: 'type:demo-lib.Resource',
      'jsii:signature': 'applyRemovalPolicy()',
    });
    expect(result.basesNotRead).toBeUndefined();
    expect(result.sources.filter((s) => s.includes('/doc.Graph.'))).toHaveLength(2);
  });

  it('reads a base in a shard not loaded yet only when that shard is small enough, else names it in basesNotRead', async () => {
    const graph = await GraphIndex.open(indexStorage, runtime.deps.resources);
    const result = await describeEntity(graph, toolActor(TASK, 'graph'), 'aws_s3.Bucket', {
      inheritShardBytes: 0,
    });

    expect(Object.keys(result.members ?? {}).sort()).toEqual(['bucketArn', 'grantRead', 'grantWrite']);
    expect(result.members?.grantWrite?.inheritedFrom).toBe('type:demo-lib.aws_s3.BucketBase');
    expect(result.basesNotRead).toEqual(['type:demo-lib.Resource']);
    expect(result.sources.filter((s) => s.includes('/doc.Graph.'))).toHaveLength(1);
  });

  it('joins patterns across modules: classes that conform to an interface of another module', async () => {
    const result = await call({
      patterns: [
        ['?i', 'rdfs:label', '"IGrantable"'],
        ['?c', 'jsii:conformsTo', '?i'],
        ['?c', 'a', 'jsii:Class'],
      ],
    });
    expect((result.bindings as { c: string }[]).map((b) => b.c).sort()).toEqual([
      'type:demo-lib.aws_s3.Bucket',
      'type:demo-lib.aws_s3.BucketBase',
    ]);
    expect(result.total).toBe(2);
  });

  it('paginates: limit, offset and next', async () => {
    const patterns = [['type:demo-lib.aws_s3.BucketProps', 'jsii:property', '?p']];
    const first = await call({ patterns, limit: 2 });
    const last = await call({ patterns, limit: 2, offset: 4 });
    expect(first).toMatchObject({ total: 5, offset: 0, next: 2 });
    expect((first.bindings as unknown[]).length).toBe(2);
    expect(last.next).toBeUndefined();
    expect((last.bindings as unknown[]).length).toBe(1);
  });

  it('summarises the graph’s shape for a model: classes with counts and the predicates between them', async () => {
    const result = (await call({ summary: true })) as {
      sources: { classes: Record<string, number>; shape: string[] }[];
    };
    expect(result.sources[0]?.classes['jsii:Struct']).toBe(1);
    expect(
      result.sources[0]?.shape.some((line) => line.startsWith('jsii:Struct jsii:property jsii:Property')),
    ).toBe(true);
  });

  it.each([
    ['an unknown prefix', { patterns: [['?x', 'nope:thing', '?y']] }, /unknown prefix/],
    ['an unterminated literal', { patterns: [['?x', 'rdfs:label', '"open']] }, /bad literal/],
    ['two operations at once', { describe: 'BucketProps', summary: true }, /exactly one/],
    ['no operation', {}, /exactly one/],
    ['a pattern naming no entity', { patterns: [['?s', '?p', '?o']] }, /name no known entity/],
    ['an ambiguous describe', { describe: '?x' }, /describe needs an entity/],
  ])('refuses %s with a ValidationError (INVALID_ARGUMENTS)', async (_, input, message) => {
    const error = await call(input).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(message);
  });

  it.each([
    ['an unknown entity', { describe: 'NoSuchType' }],
    ['an unknown module', { patterns: [['?s', 'a', 'jsii:Class']], module: 'aws_nothing' }],
  ])('answers %s with a NotFoundError (NOT_FOUND)', async (_, input) => {
    await expect(call(input)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('reads shards through the policy gate as the caller: an actor that may not read documents is denied', async () => {
    const plan = {
      kind: 'plan' as const,
      id: 'function:plan',
      conversation: 'cld:common.Conversation.c000000000000001',
      message: 'cld:common.Conversation.c000000000000001/common.Message.a000000000000001',
    };
    await expect(call({ describe: 'BucketProps' }, plan)).rejects.toBeInstanceOf(PolicyDeniedError);
  });
});

describe('the documented input schema (shared/catalog/tools/graph.json) and the tool’s own', () => {
  const documented = argumentCheck({
    function: { name: graphFile.name, parameters: graphFile.parameters },
  } as unknown as Tool);

  it.each([
    [{ describe: 'Queue', follow: ['base'] }, true],
    [{ describe: 'BucketProps', follow: ['base', 'property:encryption'] }, true],
    [{ describe: 'Queue', follow: [] }, false],
    [{ describe: 'Queue', follow: ['parent'] }, false],
    [{ describe: 'Queue', follow: ['property:'] }, false],
    [{ describe: 'Queue', follow: ['base', 'base', 'base', 'base'] }, false],
    [{ describe: 'FunctionProps', where: { optional: false } }, true],
    [{ describe: 'Bucket', where: { kind: 'method', takes: 'IGrantable', static: false } }, true],
    [{ describe: 'Bucket', where: { returns: 'aws_iam.Grant', inherited: true } }, true],
    [{ describe: 'QueueProps', where: { type: 'Duration' } }, true],
    [{ describe: 'Bucket', where: {} }, false],
    [{ describe: 'Bucket', where: { kind: 'constructor' } }, false],
    [{ describe: 'Bucket', where: { takes: 'I Grantable' } }, false],
    [{ describe: 'Bucket', where: { static: 'yes' } }, false],
    [{ describe: 'Bucket', where: { named: 'grant' } }, false],
  ])('agree on %j → %s', (input, valid) => {
    if (!('schema' in documented)) throw new Error(`not checkable: ${documented.unsupported}`);

    expect(documented.schema.safeParse(input).success).toBe(valid);
    expect(GraphInputSchema.safeParse(input).success).toBe(valid);
  });
});

describe('a structural question, asked end to end on the embedded default', () => {
  it('is answered by the api-reference assistant from the graph, with every property and default, citing the graph', async () => {
    const started = await startConversation(runtime.deps.resources, {
      user: 'cli:graph',
      channel: { kind: 'cli' },
      content: 'What properties does BucketProps take, and what are their defaults?',
      conversationName: 'graph-e2e',
    });
    await runtime.bus.idle();
    const below = await runtime.deps.resources.list(SYSTEM_ACTOR, started.conversation);
    const call = below.find((r) => r.meta.type === 'tool.Call') as ToolCallResource | undefined;
    expect(call?.call.name).toBe('graph');
    const answer = below.find((r) => r.meta.id === started.answer) as Message;
    for (const property of ['versioned', 'eventBridgeEnabled', 'encryption', 'bucketName', 'tags'])
      expect(answer.content).toContain(`\`${property}\``);
    expect(answer.content).toContain('default: BucketEncryption.S3_MANAGED');
    expect(answer.citations?.some((c) => c.includes('/doc.Graph.'))).toBe(true);
  });
});
