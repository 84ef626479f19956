import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_TARGET, PROJECT_ROOT } from '../../infra/lib/bundling.js';
import {
  sdkExportsUsed,
  sdkModuleBuildOptions,
  sdkModuleSource,
  sdkUses,
  UNREACHED_CREDENTIAL_PACKAGES,
} from '../../infra/lib/sdk-module.js';
import { type DynaliteHandle, startDynalite } from '../helpers/dynalite.js';

/**
 * What a function asset's AWS SDK module carries (infra/lib/sdk-module.ts): the SDK packages its
 * JavaScript loads at run time, and of each only the exports its code names, never a service's
 * aggregated client. test/infra/asset-modules.test.ts runs S3 and DynamoDB calls through a built one.
 */
describe('the SDK module of an asset', () => {
  it('finds the packages the minified code requires (through esbuild’s __require shim) and the property names it uses', () => {
    const minified =
      'function Un(){return K0??=Z0?uo("@aws-sdk/client-s3"):V0("@aws-sdk/client-s3")}' +
      'var c=new(Un().GetObjectCommand)({});const{NodeHttpHandler:h}=r("@smithy/node-http-handler");' +
      'const note="Amazon S3 and S3Client in prose";';
    const { packages, identifiers } = sdkUses([minified]);

    expect(packages).toEqual(['@aws-sdk/client-s3', '@smithy/node-http-handler']);
    expect(identifiers.has('GetObjectCommand')).toBe(true);
    expect(identifiers.has('NodeHttpHandler')).toBe(true);
    // Words of a string are not property names.
    expect(identifiers.has('S3Client')).toBe(false);
  });

  it('refuses an ES import of an SDK package, which the CommonJS stubs cannot serve', () => {
    expect(() => sdkUses(['import{S3Client as a}from"@aws-sdk/client-s3";'])).toThrow(/client-s3.*require/);
    expect(() => sdkUses(['await import("@aws-sdk/client-dynamodb")'])).toThrow(/client-dynamodb/);
  });

  it('keeps the exports the code names, without the aggregated client or names the package lacks', () => {
    const used = sdkExportsUsed(
      ['@aws-sdk/client-s3'],
      new Set(['S3Client', 'S3', 'GetObjectCommand', 'paginateListObjectsV2', 'NotAnExport', 'default']),
      PROJECT_ROOT,
    );

    expect(used).toEqual({ '@aws-sdk/client-s3': ['GetObjectCommand', 'S3Client', 'paginateListObjectsV2'] });
  });

  it('fails for a package the code requires but whose exports it never names', () => {
    expect(() => sdkExportsUsed(['@aws-sdk/client-s3'], new Set(['send']), PROJECT_ROOT)).toThrow(
      /requires @aws-sdk\/client-s3 but names none of its exports/,
    );
  });

  it('writes named imports, so esbuild shakes the rest of each package off, and hands them out per package', () => {
    const source = sdkModuleSource({
      '@aws-sdk/client-s3': ['GetObjectCommand', 'S3Client'],
      '@aws-sdk/client-dynamodb': ['GetItemCommand'],
    });

    expect(source).toContain(
      'import { GetObjectCommand as p0_GetObjectCommand, S3Client as p0_S3Client } from "@aws-sdk/client-s3";',
    );
    expect(source).toContain('"@aws-sdk/client-dynamodb": { GetItemCommand: p1_GetItemCommand },');
    expect(source).not.toMatch(/import \* as/);
  });
});

describe('the credential providers a function never reaches', () => {
  it('are left out of aws-sdk.cjs, and the chain loads them with require (NODE_PATH), not import()', () => {
    const options = sdkModuleBuildOptions(
      sdkModuleSource({ '@aws-sdk/client-s3': ['S3Client'] }),
      '/dev/null',
      { projectRoot: PROJECT_ROOT, target: NODE_TARGET },
    );
    const { outputFiles } = buildSync({ ...options, write: false });
    const code = outputFiles?.[0]?.text ?? '';

    for (const name of ['@aws-sdk/credential-provider-sso', '@aws-sdk/credential-provider-ini'])
      expect(code).toContain(`require("${name}")`);
    expect(code).not.toMatch(/\bimport\("@aws-sdk\//);
    // The environment provider, which Lambda's credentials come from, is bundled.
    expect(code).toContain('AWS_SECRET_ACCESS_KEY');
    expect(UNREACHED_CREDENTIAL_PACKAGES).not.toContain('@aws-sdk/credential-provider-env');
  });
});

describe('specifiers the stubs cannot serve', () => {
  it('refuses an SDK subpath and a bare ES import, naming them', () => {
    expect(() => sdkUses(['uo("@smithy/core/protocols")'])).toThrow(/@smithy\/core\/protocols, a subpath/);
    expect(() => sdkUses(['import"@aws-sdk/client-s3";'])).toThrow(/client-s3 as an ES module/);
  });
});

/** A class of a built `aws-sdk.cjs`, as the tests below construct it or test `instanceof` against it. */
type Ctor = new (...args: never[]) => unknown;

/**
 * Builds `<dir>/aws-sdk.cjs` of `exports` of one SDK package with the assets' options (minified,
 * no `keepNames`) and loads it: that package's part of the module's `packages`.
 */
function builtSdkPackage(dir: string, name: string, exports: readonly string[]): Record<string, Ctor> {
  const file = join(dir, 'aws-sdk.cjs');
  buildSync(
    sdkModuleBuildOptions(sdkModuleSource({ [name]: exports }), file, {
      projectRoot: PROJECT_ROOT,
      target: NODE_TARGET,
    }),
  );
  const built = createRequire(file)(file) as { packages: Record<string, Record<string, Ctor>> };
  return built.packages[name] as Record<string, Ctor>;
}

describe('names in aws-sdk.cjs, which is minified without keepNames', () => {
  let dynalite: DynaliteHandle;
  let dir: string;
  beforeAll(async () => {
    dynalite = await startDynalite('cld-sdk-names');
    dir = mkdtempSync(join(tmpdir(), 'cld-sdk-names-'));
  });
  afterAll(async () => {
    await dynalite?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("keeps the default logger's class name, which the SDK's middlewares compare, and its errors' names and instanceof", () => {
    const s3 = builtSdkPackage(mkdtempSync(join(dir, 's3-')), '@aws-sdk/client-s3', [
      'GetObjectCommand',
      'NoSuchKey',
      'S3Client',
      'S3ServiceException',
    ]);
    const S3Client = s3.S3Client as unknown as new (
      config: object,
    ) => { config: { logger: object }; destroy(): void };
    const client = new S3Client({ region: 'eu-west-1' });
    expect(client.config.logger.constructor.name).toBe('NoOpLogger');
    client.destroy();
    // A class the SDK does not name for us is minified (what the NoOpLogger line is for).
    expect((s3.GetObjectCommand as { name: string }).name).not.toBe('GetObjectCommand');

    const NoSuchKey = s3.NoSuchKey as unknown as new (options: object) => Error;
    const error = new NoSuchKey({ message: 'gone', $metadata: {} });
    expect(error.name).toBe('NoSuchKey');
    expect(error).toBeInstanceOf(NoSuchKey);
    expect(error).toBeInstanceOf(s3.S3ServiceException as Ctor);
    expect(String(error)).toBe('NoSuchKey: gone');
  });

  // Powertools' idempotency layer and our DynamoDB projection store tell a lost conditional write
  // by `instanceof ConditionalCheckFailedException`: the class of an error the client deserialized
  // from DynamoDB's reply, with every class name minified.
  it('a failed condition from DynamoDB (dynalite) is a ConditionalCheckFailedException by class and by name', async () => {
    const ddb = builtSdkPackage(mkdtempSync(join(dir, 'dynamodb-')), '@aws-sdk/client-dynamodb', [
      'ConditionalCheckFailedException',
      'DynamoDBClient',
      'DynamoDBServiceException',
      'PutItemCommand',
      'ResourceNotFoundException',
    ]);
    const Client = ddb.DynamoDBClient as unknown as new (
      config: object,
    ) => { send(command: unknown): Promise<unknown>; destroy(): void };
    const Put = ddb.PutItemCommand as unknown as new (input: object) => unknown;
    const client = new Client({ ...dynalite.clientConfig, maxAttempts: 1 });
    const rejection = (command: unknown) =>
      client.send(command).then(
        () => undefined,
        (error: unknown) => error,
      );
    try {
      const item = { pk: { S: 'a' }, sk: { S: 'b' } };
      await client.send(new Put({ TableName: dynalite.tableName, Item: item }));
      const failed = await rejection(
        new Put({
          TableName: dynalite.tableName,
          Item: item,
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      expect(failed).toBeInstanceOf(ddb.ConditionalCheckFailedException as Ctor);
      expect(failed).toBeInstanceOf(ddb.DynamoDBServiceException as Ctor);
      expect(failed).not.toBeInstanceOf(ddb.ResourceNotFoundException as Ctor);
      expect((failed as Error).name).toBe('ConditionalCheckFailedException');

      const missing = await rejection(new Put({ TableName: 'no-such-table', Item: item }));
      expect(missing).toBeInstanceOf(ddb.ResourceNotFoundException as Ctor);
      expect(missing).not.toBeInstanceOf(ddb.ConditionalCheckFailedException as Ctor);
    } finally {
      client.destroy();
    }
  });
});
