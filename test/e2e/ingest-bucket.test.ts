import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import { createS3Client, S3Storage } from '../../shared/storage/s3.js';
import { cliBin } from '../helpers/run-cache.js';
import { S3RVER_CREDENTIALS, S3RVER_REGION, type S3rverHandle, startS3rver } from '../helpers/s3rver.js';

/** The `cld` bin built from this tree's source, once per run (test/helpers/run-cache.ts). */
const CLI = await cliBin();

/**
 * `CLD_BUCKET=<bucket> npm start -- ingest <docs>` puts the documents and the chunk index into the
 * deployed bucket, where the deployed assistant and tool functions read them. The real CLI runs
 * in a child process with the real S3 client against s3rver (endpoint from the SDK's standard
 * `AWS_ENDPOINT_URL_S3` variable), and the index it wrote is opened back from the bucket.
 */

const run = promisify(execFile);
const DOCS = 'node_modules/aws-cdk-lib/aws-s3/README.md';

let s3: S3rverHandle;

beforeAll(async () => {
  s3 = await startS3rver();
});

afterAll(async () => {
  await s3?.stop();
});

function cli(args: string[]) {
  return run(process.execPath, [CLI, ...args], {
    env: {
      ...process.env,
      CLD_BUCKET: s3.bucket,
      AWS_ENDPOINT_URL_S3: s3.endpoint,
      AWS_REGION: S3RVER_REGION,
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      AWS_REQUEST_CHECKSUM_CALCULATION: 'WHEN_REQUIRED',
      AWS_RESPONSE_CHECKSUM_VALIDATION: 'WHEN_REQUIRED',
      CLD_DATA_DIR: '/nonexistent/cld-must-not-be-used',
    },
    timeout: 120_000,
  });
}

describe('ingest into the deployed bucket (CLD_BUCKET)', () => {
  it('writes documents, chunks and the chunk index to S3, and a second run skips the unchanged file', async () => {
    const first = await cli(['ingest', DOCS]);
    expect(first.stdout).toContain(`bucket: ${s3.bucket}`);
    const ingested = /ingested 1 files: 1 new \((\d+) chunks/.exec(first.stdout);
    expect(ingested, first.stdout).not.toBeNull();
    const chunks = Number(ingested?.[1]);
    expect(chunks).toBeGreaterThan(5);

    const client = createS3Client({
      endpoint: s3.endpoint,
      region: S3RVER_REGION,
      forcePathStyle: true,
      credentials: S3RVER_CREDENTIALS,
    });
    const listed = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, MaxKeys: 1000 }));
    const keys = (listed.Contents ?? []).map((object) => object.Key ?? '');
    expect(
      keys.filter((key) =>
        /^cld\/doc\.Document\.[0-9a-f]{16}\/doc\.Chunk\.[0-9a-f]{16}_Document-Chunk\.json$/.test(key),
      ),
    ).toHaveLength(chunks);
    expect(keys.some((key) => key.startsWith('indexes/chunks.'))).toBe(true);

    const index = await MiniSearchIndex.open(new S3Storage({ client, bucket: s3.bucket }));
    expect(index.size).toBe(chunks);
    const hits = await index.search('bucket versioning', { limit: 3 });
    expect(hits.length).toBeGreaterThan(0);

    const second = await cli(['ingest', DOCS]);
    expect(second.stdout).toContain('0 new');
    expect(second.stdout).toContain('1 unchanged');
  });
});
