import { existsSync, mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assetModulesOf, esbuildOptions, PROJECT_ROOT } from '../../infra/lib/bundling.js';
import { FUNCTIONS, type FunctionName, type FunctionSpec } from '../../infra/lib/functions.js';
import { SDK_MODULE_FILE } from '../../infra/lib/sdk-module.js';
import { buildBundle, staticExternalImports } from '../../scripts/bundles.js';
import { ASSET_MODULES } from '../../shared/aws/asset-modules.js';
import { type DynaliteHandle, startDynalite } from '../helpers/dynalite.js';
import { S3RVER_CREDENTIALS, S3RVER_REGION, startS3rver } from '../helpers/s3rver.js';
import { CONVERSATION, output } from '../projections/contract.js';

/**
 * The modules a function's asset carries beside `index.mjs` (shared/aws/asset-modules.ts): no
 * bundle imports an AWS SDK client statically any more (Powertools' idempotency layer and
 * `SecretsProvider` imported theirs, and esbuild hoisted the imports to the top of `index.mjs`,
 * so six functions loaded the DynamoDB client, three the Secrets Manager one, at every cold
 * start), and the files work from a built asset: the loaders read them beside the bundle, the
 * layer's copy of Powertools works with the handler's copy in the bundle (a duplicate delivery
 * returns the stored result), and the provider reads a secret.
 */

const NAMES = Object.keys(FUNCTIONS) as FunctionName[];
// Under node_modules/.cache, so that the external `@aws-sdk/*` packages resolve from the
// project's node_modules as they resolve from the Lambda runtime (scripts/bundles.ts).
const cache = join(PROJECT_ROOT, 'node_modules', '.cache');
mkdirSync(cache, { recursive: true });
const work = mkdtempSync(join(cache, 'cld-asset-modules-'));

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('function bundles and their asset modules', () => {
  it.each(
    NAMES,
  )('%s: index.mjs imports no AWS SDK package statically; the asset holds its modules', async (name) => {
    const built = await buildBundle(name, FUNCTIONS[name], work);
    const inputs = Object.values(built.metafile.outputs).flatMap((output) =>
      Object.entries(output.inputs).flatMap(([input, { bytesInOutput }]) =>
        bytesInOutput > 0 ? [input] : [],
      ),
    );

    expect(
      staticExternalImports(built.metafile).filter((specifier) => /^@(aws-sdk|smithy)\//.test(specifier)),
    ).toEqual([]);
    expect(
      inputs.filter((input) =>
        /@aws-lambda-powertools\/(parameters|idempotency\/lib\/esm\/persistence\/DynamoDB)/.test(input),
      ),
    ).toEqual([]);
    for (const module of assetModulesOf(name, FUNCTIONS[name] as FunctionSpec))
      expect(existsSync(join(built.dir, ASSET_MODULES[module].file))).toBe(true);
  });
});

type Probe = typeof import('../fixtures/asset-modules-probe.js');

describe('asset modules loaded from a built asset', () => {
  let dir: string;
  let probe: Probe;
  let dynalite: DynaliteHandle;

  beforeAll(async () => {
    // The reply function's asset, with the probe bundled beside index.mjs as the function's own code is.
    const built = await buildBundle('reply', FUNCTIONS.reply, work);
    dir = built.dir;
    const options = esbuildOptions('reply', 'test/fixtures/asset-modules-probe.ts', dir);
    await build({ ...options, outfile: join(dir, 'probe.mjs') });
    probe = (await import(pathToFileURL(join(dir, 'probe.mjs')).href)) as Probe;
    dynalite = await startDynalite();
  }, 240_000);

  afterAll(async () => {
    await dynalite?.stop();
  });

  it('delivers once through the DynamoDB layer of powertools-idempotency.cjs: a duplicate gets the stored result', async () => {
    const tableName = await dynalite.createTable('asset-idempotency');
    const layer = await probe.dynamoDBIdempotencyLayer({ client: dynalite.client, tableName });
    const once = probe.createOnce(layer, 'test.asset');
    let runs = 0;
    const effect = async () => ({ ts: `1.${++runs}` });

    const first = await once('cld:common.Conversation.aa/common.Message.bb', effect);
    const again = await once('cld:common.Conversation.aa/common.Message.bb', effect);

    expect(first).toEqual({ ts: '1.1' });
    expect(again).toEqual({ ts: '1.1' });
    expect(runs).toBe(1);
  });

  it("refuses a concurrent duplicate while the first delivery runs: the layer's error reaches the bundle's guard as in-progress", async () => {
    const tableName = await dynalite.createTable('asset-in-progress');
    const layer = await probe.dynamoDBIdempotencyLayer({ client: dynalite.client, tableName });
    // waitMs 0: the duplicate does not wait for the first to finish.
    const once = probe.createOnce(layer, 'test.asset-concurrent', 0);
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let runs = 0;
    const first = once('cld:common.Conversation.aa/common.Message.cc', async () => {
      runs++;
      await held;
      return { ts: '2.1' };
    });
    // The first call's in-progress record is written before its effect runs.
    await expect.poll(() => runs, { timeout: 30_000 }).toBe(1);

    // The layer (its own Powertools copy) throws IdempotencyItemAlreadyExistsError; the bundle's
    // handler recognises it by name and throws its IdempotencyAlreadyInProgressError, which the
    // guard (shared/channels/idempotency.ts) checks with instanceof before it gives up.
    await expect(
      once('cld:common.Conversation.aa/common.Message.cc', async () => ({ ts: 'never' })),
    ).rejects.toMatchObject({ name: 'IdempotencyAlreadyInProgressError' });
    release();
    expect(await first).toEqual({ ts: '2.1' });
    expect(runs).toBe(1);
  });

  it('reads a secret with the SecretsProvider of powertools-secrets.cjs', async () => {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const { SecretId } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { SecretId: string };
        res.setHeader('content-type', 'application/x-amz-json-1.1');
        res.end(JSON.stringify({ ARN: SecretId, Name: 'cld/slack-bot-token', SecretString: 'xoxb-from-sm' }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    try {
      const SecretsProvider = await probe.loadSecretsProvider();
      const provider = new SecretsProvider({
        clientConfig: {
          region: 'eu-west-1',
          endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
        },
      });
      expect(
        await provider.get('arn:aws:secretsmanager:eu-west-1:123456789012:secret:cld/slack-bot-token-AbCdEf'),
      ).toBe('xoxb-from-sm');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("runs S3 and DynamoDB calls through the asset's aws-sdk.cjs: the SDK packages resolve to its stubs, not node_modules", async () => {
    const fromBundle = createRequire(join(dir, 'index.mjs'));
    for (const name of ['@aws-sdk/client-s3', '@aws-sdk/client-dynamodb', '@aws-sdk/lib-dynamodb']) {
      // realpath: Node resolves through symlinks (a worktree's node_modules may be one).
      expect(fromBundle.resolve(name)).toBe(
        realpathSync(join(dir, 'node_modules', ...name.split('/'), 'index.cjs')),
      );
    }
    const sdk = fromBundle(join(dir, SDK_MODULE_FILE)) as {
      packages: Record<string, Record<string, unknown>>;
    };
    expect(fromBundle('@aws-sdk/client-s3')).toBe(sdk.packages['@aws-sdk/client-s3']);
    // Tree-shaken: the aggregated client (every S3 command) is not in the file.
    expect(Object.keys(sdk.packages['@aws-sdk/client-s3'] ?? {})).not.toContain('S3');

    const s3 = await startS3rver();
    // No credentials given: the SDK's default chain, bundled, reads them from the environment as
    // in Lambda, without the providers aws-sdk.cjs leaves out (UNREACHED_CREDENTIAL_PACKAGES).
    const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
    process.env.AWS_ACCESS_KEY_ID = S3RVER_CREDENTIALS.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = S3RVER_CREDENTIALS.secretAccessKey;
    try {
      const client = probe.createS3Client({
        endpoint: s3.endpoint,
        region: S3RVER_REGION,
        forcePathStyle: true,
      });
      expect(client).toBeInstanceOf(sdk.packages['@aws-sdk/client-s3']?.S3Client as new () => unknown);
      const storage = new probe.S3Storage({ client, bucket: s3.bucket, pageSize: 1 });
      await storage.put('cld/a.json', '{"a":1}');
      await storage.put('cld/b.json', '{"b":2}');
      expect((await storage.get('cld/a.json')).toString('utf8')).toBe('{"a":1}');
      expect(await storage.findByPrefix('cld/')).toEqual(['cld/a.json', 'cld/b.json']);
      await storage.delete('cld/a.json');
      await expect(storage.get('cld/a.json')).rejects.toMatchObject({ name: 'NotFoundError' });
    } finally {
      for (const [name, value] of [
        ['AWS_ACCESS_KEY_ID', saved.id],
        ['AWS_SECRET_ACCESS_KEY', saved.secret],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      await s3.stop();
    }

    const tableName = await dynalite.createTable('asset-projections');
    const store = new probe.DynamoDBProjectionStore({
      client: probe.createDynamoDBClient(dynalite.clientConfig),
      tableName,
    });
    const key = { conversation: CONVERSATION, name: 'done#asset' };
    await store.applyOnce(key, output(1), { done: 1 });
    await store.applyOnce(key, output(1), { done: 1 });
    expect((await store.get(key))?.values).toEqual({ done: 1 });
    expect(await store.list(CONVERSATION)).toHaveLength(1);
  });

  it('loads the classes from the files beside the bundle, not from node_modules: without the file the loader fails', async () => {
    const file = join(dir, ASSET_MODULES.idempotency.file);
    const moved = `${file}.away`;
    renameSync(file, moved);
    try {
      // A fresh URL: the module map of this process already holds the file once loaded.
      const fresh = (await import(`${pathToFileURL(join(dir, 'probe.mjs')).href}?fresh`)) as Probe;
      await expect(fresh.loadDynamoDBPersistenceLayer()).rejects.toThrow(/powertools-idempotency\.cjs/);
    } finally {
      renameSync(moved, file);
    }
  });
});
