/**
 * S3Storage driven through the real `S3Client` against s3rver 3.7.1, started in a child process
 * (test/helpers/s3rver.ts; it needs `--openssl-legacy-provider` for its DES continuation tokens).
 *
 * How the 412 path is tested, and why: s3rver ignores `If-None-Match` on PUT (it overwrites; the
 * "bare s3rver" test below pins that down), so create-only semantics cannot be tested against it
 * honestly. The full contract therefore runs a second time through a node:http proxy
 * (test/helpers/conditional-put-proxy.ts) that enforces `If-None-Match: *` the way S3 does: per
 * key and atomically it HEADs the object on s3rver and, when it exists, answers HTTP 412 with
 * S3's XML error body (`<Error><Code>PreconditionFailed</Code>...`) instead of forwarding the
 * PUT. The SDK parses that real 412 response and the adapter maps it to `{ created: false }`.
 * The proxy records request headers (to assert the adapter sends `If-None-Match: *`) and can
 * answer 409 `ConditionalRequestConflict` to exercise the adapter's retry. Everything else the
 * proxy forwards unchanged, and the contract also runs directly against s3rver without the
 * create-only tests.
 *
 * Every contract test gets a fresh bucket and pages of 7 keys, so listings paginate.
 */
import { CreateBucketCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { NotFoundError, ValidationError } from '../../shared/errors.js';
import {
  CONFLICT_RETRIES,
  createS3Client,
  GET_MANY_CONCURRENCY,
  S3Storage,
} from '../../shared/storage/s3.js';
import { type ConditionalPutProxy, startConditionalPutProxy } from '../helpers/conditional-put-proxy.js';
import { S3RVER_CREDENTIALS, S3RVER_REGION, type S3rverHandle, startS3rver } from '../helpers/s3rver.js';
import { storageContract } from './contract.js';

const PAGE_SIZE = 7;
const KEY = 'cld:common.Conversation.0123456789abcdef/common.Message.0123456789abcdef.json';

let server: S3rverHandle;
let proxy: ConditionalPutProxy;
let directClient: S3Client;
let proxiedClient: S3Client;
let bucketCount = 0;

function clientFor(endpoint: string): S3Client {
  return createS3Client({
    region: S3RVER_REGION,
    endpoint,
    forcePathStyle: true,
    credentials: S3RVER_CREDENTIALS,
  });
}

/** Creates an empty bucket on s3rver (always directly) and returns its name. */
async function freshBucket(): Promise<string> {
  bucketCount += 1;
  const bucket = `contract-${bucketCount}`;
  await directClient.send(new CreateBucketCommand({ Bucket: bucket }));
  return bucket;
}

/** A storage on a fresh bucket; nothing to clean up, as s3rver's data directory goes on stop. */
async function makeS3Storage(
  client: () => S3Client,
): Promise<{ storage: S3Storage; cleanup: () => Promise<void> }> {
  const storage = new S3Storage({ client: client(), bucket: await freshBucket(), pageSize: PAGE_SIZE });
  return { storage, cleanup: async () => undefined };
}

beforeAll(async () => {
  server = await startS3rver();
  proxy = await startConditionalPutProxy(server.endpoint);
  directClient = clientFor(server.endpoint);
  proxiedClient = clientFor(proxy.endpoint);
});

afterAll(async () => {
  directClient?.destroy();
  proxiedClient?.destroy();
  await proxy?.stop();
  await server?.stop();
});

storageContract('S3Storage via a proxy enforcing If-None-Match in front of s3rver', () =>
  makeS3Storage(() => proxiedClient),
);

storageContract(
  'S3Storage directly against s3rver (ignores If-None-Match)',
  () => makeS3Storage(() => directClient),
  {
    conditionalWrites: false,
  },
);

describe('S3Storage on the wire', () => {
  let storage: S3Storage;

  beforeEach(async () => {
    proxy.reset();
    storage = new S3Storage({ client: proxiedClient, bucket: await freshBucket(), pageSize: PAGE_SIZE });
  });

  it('sends If-None-Match: * with every put and maps the 412 answer to created:false', async () => {
    await storage.put(KEY, 'first');
    const second = await storage.put(KEY, 'second');

    const puts = proxy.requests.filter((request) => request.method === 'PUT');
    expect(puts.map((request) => [request.ifNoneMatch, request.status])).toEqual([
      ['*', 200],
      ['*', 412],
    ]);
    expect(second).toEqual({ created: false });
  });

  it('retries a 409 ConditionalRequestConflict and then creates the object', async () => {
    proxy.failNextConditionalPuts(2);

    const result = await storage.put(KEY, 'after conflicts');

    expect(result).toEqual({ created: true });
    const statuses = proxy.requests
      .filter((request) => request.method === 'PUT')
      .map((request) => request.status);
    expect(statuses).toEqual([409, 409, 200]);
    expect((await storage.get(KEY)).toString()).toBe('after conflicts');
  });

  it('returns created:false when conflicts persist and HeadObject finds the key', async () => {
    await storage.put(KEY, 'existing');
    proxy.reset();
    proxy.failNextConditionalPuts(CONFLICT_RETRIES + 1);

    const result = await storage.put(KEY, 'late');

    expect(result).toEqual({ created: false });
    expect(proxy.requests.map((request) => `${request.method} ${request.status}`)).toEqual([
      ...Array.from({ length: CONFLICT_RETRIES + 1 }, () => 'PUT 409'),
      'HEAD 200',
    ]);
    expect((await storage.get(KEY)).toString()).toBe('existing');
  });

  it('throws the 409 when conflicts persist and the key does not exist', async () => {
    proxy.failNextConditionalPuts(CONFLICT_RETRIES + 1);

    await expect(storage.put(KEY, 'never')).rejects.toMatchObject({
      name: 'ConditionalRequestConflict',
      $metadata: { httpStatusCode: 409 },
    });
    await expect(storage.get(KEY)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('follows ListObjectsV2 continuation tokens page by page', async () => {
    const keys = Array.from(
      { length: 25 },
      (_, i) =>
        `cld:common.Conversation.0123456789abcdef/common.Message.${i.toString(16).padStart(16, '0')}.json`,
    );
    for (const key of keys) await storage.put(key, 'x');
    proxy.reset();

    const listed = await storage.findByPrefix('cld:common.Conversation.0123456789abcdef/');

    expect(listed).toEqual(keys);
    const lists = proxy.requests.map((request) => new URL(request.url, 'http://proxy').searchParams);
    expect(lists).toHaveLength(4);
    expect(lists.map((query) => query.get('max-keys'))).toEqual(['7', '7', '7', '7']);
    expect(lists.map((query) => query.has('continuation-token'))).toEqual([false, true, true, true]);
  });

  it(`keeps at most ${GET_MANY_CONCURRENCY} GetObject calls in flight in getMany`, async () => {
    const keys = Array.from(
      { length: 40 },
      (_, i) => `cld:common.Conversation.${i.toString(16).padStart(16, '0')}.json`,
    );
    await Promise.all(keys.map((key) => storage.put(key, key)));
    proxy.reset();
    proxy.delayGets(20);

    const found = await storage.getMany(keys);

    expect(found.size).toBe(40);
    expect(found.get(keys[39] as string)?.toString()).toBe(keys[39]);
    expect(proxy.peakConcurrentGets).toBe(GET_MANY_CONCURRENCY);
  });

  it('maps a missing key to NotFoundError but lets a missing bucket fail as NoSuchBucket', async () => {
    const noBucket = new S3Storage({ client: proxiedClient, bucket: 'no-such-bucket' });

    await expect(storage.get(KEY)).rejects.toBeInstanceOf(NotFoundError);
    await expect(noBucket.get(KEY)).rejects.toMatchObject({ name: 'NoSuchBucket' });
  });
});

describe('S3Storage prefix option', () => {
  it('stores keys under the prefix and strips it from listings', async () => {
    const bucket = await freshBucket();
    const tenantA = new S3Storage({ client: directClient, bucket, prefix: 'tenant-a/', pageSize: PAGE_SIZE });
    const tenantB = new S3Storage({ client: directClient, bucket, prefix: 'tenant-b/' });
    const whole = new S3Storage({ client: directClient, bucket });

    await tenantA.put(KEY, 'a');

    const raw = await directClient.send(new ListObjectsV2Command({ Bucket: bucket }));
    expect(raw.Contents?.map((object) => object.Key)).toEqual([`tenant-a/${KEY}`]);
    expect(await tenantA.findByPrefix('cld:')).toEqual([KEY]);
    expect(await tenantA.findByExtension('.json')).toEqual([KEY]);
    expect((await tenantA.get(KEY)).toString()).toBe('a');
    expect(await tenantB.findByExtension('.json')).toEqual([]);
    await expect(tenantB.get(KEY)).rejects.toBeInstanceOf(NotFoundError);
    expect(await whole.findByPrefix('tenant-a/')).toEqual([`tenant-a/${KEY}`]);
  });

  it('rejects a key that fits 1,024 bytes alone but not with the prefix', async () => {
    const storage = new S3Storage({ client: directClient, bucket: server.bucket, prefix: 'tenant-a/' });
    const key = `cld:${'x'.repeat(200)}/${'y'.repeat(200)}/${'z'.repeat(200)}/${'w'.repeat(200)}/${'v'.repeat(216)}`;
    expect(Buffer.byteLength(key)).toBe(1024);

    await expect(storage.put(key, 'x')).rejects.toBeInstanceOf(ValidationError);
  });
});

describe('S3Storage construction', () => {
  it.each([0, 1001, 2.5])('rejects pageSize %s', (pageSize) => {
    expect(() => new S3Storage({ client: directClient, bucket: 'b', pageSize })).toThrow(ValidationError);
  });
});

describe('createS3Client', () => {
  it('asks for checksums only when required for a custom endpoint, and keeps the SDK defaults for AWS', async () => {
    const local = createS3Client({
      region: S3RVER_REGION,
      endpoint: 'http://127.0.0.1:4568',
      forcePathStyle: true,
    });
    const aws = createS3Client({ region: 'eu-west-1' });

    expect(await local.config.requestChecksumCalculation()).toBe('WHEN_REQUIRED');
    expect(await local.config.responseChecksumValidation()).toBe('WHEN_REQUIRED');
    expect(await aws.config.requestChecksumCalculation()).toBe('WHEN_SUPPORTED');
    expect(await aws.config.responseChecksumValidation()).toBe('WHEN_SUPPORTED');
    expect(await local.config.forcePathStyle).toBe(true);
    local.destroy();
    aws.destroy();
  });
});

describe('bare s3rver (why the proxy exists)', () => {
  it('overwrites on a second If-None-Match: * put instead of answering 412', async () => {
    const storage = new S3Storage({ client: directClient, bucket: await freshBucket() });

    const first = await storage.put(KEY, 'first');
    const second = await storage.put(KEY, 'second');

    // If this starts failing, s3rver honours If-None-Match and the proxy can go.
    expect([first, second]).toEqual([{ created: true }, { created: true }]);
    expect((await storage.get(KEY)).toString()).toBe('second');
  });
});
