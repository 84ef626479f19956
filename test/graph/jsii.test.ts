import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/errors.js';
import { assemblyToShards, isL1, parseAssembly, renderTypeRef } from '../../shared/graph/jsii.js';
import { memberIri, typeIri, V } from '../../shared/graph/vocabulary.js';
import { smallAssembly } from './helpers.js';

const graphOf = () => assemblyToShards(parseAssembly(Buffer.from(JSON.stringify(smallAssembly()))));

function objects(
  quads: readonly { subject: { value: string }; predicate: { value: string }; object: { value: string } }[],
  s: string,
  p: string,
): string[] {
  return quads
    .filter((q) => q.subject.value === s && q.predicate.value === p)
    .map((q) => q.object.value)
    .sort();
}

describe('jsii assembly → triples', () => {
  it('shards by submodule, with a core shard for types without a namespace', () => {
    const graph = graphOf();
    expect([...graph.shards.keys()].sort()).toEqual(['aws_iam', 'aws_s3', 'core']);
    expect(graph.directory.find((d) => d.label === 'Stack')?.shard).toBe('core');
  });

  it('maps a props struct: every property with value type, optionality and default', () => {
    const s3 = graphOf().shards.get('aws_s3') ?? [];
    const props = typeIri('demo-lib.aws_s3.BucketProps').value;
    expect(objects(s3, props, V.type.value)).toEqual([V.Struct.value]);
    expect(objects(s3, props, V.property.value)).toHaveLength(5);
    const versioned = memberIri('demo-lib.aws_s3.BucketProps', 'versioned').value;
    expect(objects(s3, versioned, V.default.value)).toEqual(['false']);
    expect(objects(s3, versioned, V.optional.value)).toEqual(['true']);
    expect(
      objects(s3, memberIri('demo-lib.aws_s3.BucketProps', 'bucketName').value, V.optional.value),
    ).toEqual(['false']);
    expect(objects(s3, memberIri('demo-lib.aws_s3.BucketProps', 'tags').value, V.valueType.value)).toEqual([
      'Map<string, string>',
    ]);
  });

  it('infers conformsTo through base classes and interface bases, and copies the triple to the object’s shard', () => {
    const graph = graphOf();
    const bucket = typeIri('demo-lib.aws_s3.Bucket').value;
    const grantable = typeIri('demo-lib.aws_iam.IGrantable').value;
    expect(objects(graph.shards.get('aws_s3') ?? [], bucket, V.conformsTo.value)).toEqual([
      grantable,
      typeIri('demo-lib.aws_s3.IBucket').value,
    ]);
    // a query bound on IGrantable loads only aws_iam, and still finds the s3 class
    expect(objects(graph.shards.get('aws_iam') ?? [], bucket, V.conformsTo.value)).toContain(grantable);
    // with the subject's kind and name, so the query can filter without loading aws_s3
    expect(objects(graph.shards.get('aws_iam') ?? [], bucket, V.type.value)).toEqual([V.Class.value]);
    expect(objects(graph.shards.get('aws_iam') ?? [], bucket, V.label.value)).toEqual(['Bucket']);
    expect(objects(graph.shards.get('aws_iam') ?? [], bucket, V.extends.value)).toEqual([]);
    expect(objects(graph.shards.get('aws_s3') ?? [], bucket, V.extends.value)).toEqual([
      typeIri('demo-lib.aws_s3.BucketBase').value,
    ]);
  });

  it('writes method signatures and enum members', () => {
    const s3 = graphOf().shards.get('aws_s3') ?? [];
    expect(objects(s3, memberIri('demo-lib.aws_s3.Bucket', 'grantRead()').value, V.signature.value)).toEqual([
      'grantRead(identity: IGrantable): boolean',
    ]);
    expect(objects(s3, typeIri('demo-lib.aws_s3.BucketEncryption').value, V.member.value)).toHaveLength(2);
  });

  it('reads a gzipped assembly behind a jsii file redirect', () => {
    const redirect = Buffer.from(
      JSON.stringify({ schema: 'jsii/file-redirect', compression: 'gzip', filename: '.jsii.gz' }),
    );
    const assembly = parseAssembly(redirect, (file) => {
      expect(file).toBe('.jsii.gz');
      return gzipSync(JSON.stringify(smallAssembly()));
    });
    expect(assembly.name).toBe('demo-lib');
  });

  it.each([
    ['not JSON', Buffer.from('{nope')],
    ['another schema', Buffer.from(JSON.stringify({ schema: 'jsii/9', name: 'x', version: '1', types: {} }))],
    [
      'a redirect without a reader',
      Buffer.from(JSON.stringify({ schema: 'jsii/file-redirect', filename: 'x.gz' })),
    ],
  ])('refuses %s with a ValidationError', (_, content) => {
    expect(() => parseAssembly(content)).toThrow(ValidationError);
  });

  it.each([
    '../../../etc/passwd',
    '/etc/passwd',
    'C:\\assembly.gz',
    'sub/../../x.gz',
    '',
  ])('refuses a redirect to %j, outside its folder, without reading it', (filename) => {
    const redirect = Buffer.from(JSON.stringify({ schema: 'jsii/file-redirect', filename }));
    let read = false;
    expect(() =>
      parseAssembly(redirect, () => {
        read = true;
        return Buffer.from('{}');
      }),
    ).toThrow(/must name a file beside the assembly/);
    expect(read).toBe(false);
  });

  it("counts the structs nested in an L1 class as L1, core's (namespace `CfnStack`) too", () => {
    const type = (name: string, namespace?: string) =>
      ({ fqn: `x.${name}`, name, kind: 'interface', ...(namespace ? { namespace } : {}) }) as never;
    expect(isL1(type('CfnBucket', 'aws_s3'))).toBe(true);
    expect(isL1(type('LoggingConfigurationProperty', 'aws_s3.CfnBucket'))).toBe(true);
    expect(isL1(type('ParameterProperty', 'CfnStack'))).toBe(true);
    expect(isL1(type('BucketProps', 'aws_s3'))).toBe(false);
    expect(isL1(type('Stack'))).toBe(false);
  });

  it.each([
    [{ primitive: 'string' }, 'string'],
    [{ fqn: 'a.b.IBucket' }, 'IBucket'],
    [{ collection: { kind: 'array', elementtype: { fqn: 'a.Rule' } } }, 'Array<Rule>'],
    [{ union: { types: [{ primitive: 'string' }, { primitive: 'number' }] } }, 'string | number'],
  ])('renders the type %j as %s', (ref, text) => {
    expect(renderTypeRef(ref as never)).toBe(text);
  });
});
