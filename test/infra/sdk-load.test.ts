import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../infra/lib/bundling.js';
import { FUNCTIONS } from '../../infra/lib/functions.js';
import { type BuiltBundle, buildBundle } from '../../scripts/bundles.js';
import { S3RVER_CREDENTIALS, S3RVER_REGION, startS3rver } from '../helpers/s3rver.js';

/**
 * When a built bundle loads the AWS SDK (shared/aws/sdk.ts, issue 25 item 5): the `tool`
 * function's `index.mjs` loads no SDK module when it is imported, and its S3 client is loaded
 * with CommonJS `require` when the first invocation composes the function for a bucket — not by
 * the ES module loader, which costs about twice the CPU. Each bundle is imported in a plain
 * `node` child with a hook that records every resolution of an `@aws-sdk/*` or `@smithy/*`
 * module (test/infra/record-sdk-loads.mjs). Bundles go under node_modules/.cache/ so the SDK
 * resolves from the project's node_modules, as it resolves from the runtime in Lambda.
 */

const run = promisify(execFile);
const RECORDER = join(PROJECT_ROOT, 'test', 'infra', 'record-sdk-loads.mjs');
const FIXTURE = join(PROJECT_ROOT, 'test', 'fixtures', 's3-object-created.json');

/** Imports the bundle (and, with an event, calls its handler once) and returns the SDK loads seen. */
const CHILD = `
import { readFileSync } from 'node:fs';
const [bundle, eventFile] = process.argv.slice(1);
const module = await import(bundle);
const atImport = [...globalThis.__cldSdkLoads];
let outcome = 'not invoked';
if (eventFile) {
  const context = { functionName: 'tool', awsRequestId: 'sdk-load', getRemainingTimeInMillis: () => 60000 };
  try { await module.handler(JSON.parse(readFileSync(eventFile, 'utf8')), context); outcome = 'ok'; }
  catch (error) { outcome = String(error?.name ?? error); }
}
await new Promise((resolve) => setTimeout(resolve, 20));
process.stdout.write('\\nLOADS ' + JSON.stringify({ atImport, all: globalThis.__cldSdkLoads, outcome }) + '\\n');
`;

interface Loads {
  atImport: string[];
  all: string[];
  outcome: string;
}

let work: string;
let tool: BuiltBundle;

beforeAll(async () => {
  const cache = join(PROJECT_ROOT, 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  work = mkdtempSync(join(cache, 'cld-sdk-load-test-'));
  tool = await buildBundle('tool', FUNCTIONS.tool, work);
}, 300_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

async function loads(bundle: BuiltBundle, env: Record<string, string>, event?: unknown): Promise<Loads> {
  let eventFile = '';
  if (event !== undefined) {
    eventFile = join(work, `event-${Math.random().toString(16).slice(2)}.json`);
    writeFileSync(eventFile, JSON.stringify(event));
  }
  const args = ['--import', pathToFileURL(RECORDER).href, '--input-type=module', '-e', CHILD];
  const { stdout } = await run(process.execPath, [...args, pathToFileURL(bundle.file).href, eventFile], {
    cwd: bundle.dir,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? work,
      CLD_FUNCTION: bundle.name,
      CLD_POLICY_DIR: join(bundle.dir, 'policies'),
      POWERTOOLS_SERVICE_NAME: 'cld',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      ...env,
    },
    timeout: 60_000,
  });
  const line = stdout.split('\n').find((l) => l.startsWith('LOADS '));
  if (!line) throw new Error(`no LOADS line from the ${bundle.name} bundle:\n${stdout.slice(-2000)}`);
  return JSON.parse(line.slice('LOADS '.length)) as Loads;
}

describe('AWS SDK loading in the tool bundle', () => {
  it('importing index.mjs loads no AWS SDK module', async () => {
    const dataDir = mkdtempSync(join(work, 'data-'));
    const seen = await loads(tool, { CLD_DATA_DIR: dataDir });
    expect(seen.atImport).toEqual([]);
  });

  it('the first invocation on a bucket loads the S3 client with require, never with import', async () => {
    const event = JSON.parse(readFileSync(FIXTURE, 'utf8')) as unknown;
    const seen = await loads(
      tool,
      {
        CLD_BUCKET: 'cld-sdk-load-test',
        AWS_REGION: 'eu-west-1',
        AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE',
        AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
        // Nothing listens there: a request the step might send fails at once.
        AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:9',
        AWS_MAX_ATTEMPTS: '1',
      },
      event,
    );

    expect(seen.atImport).toEqual([]);
    expect(seen.all).toContain('require @aws-sdk/client-s3');
    expect(seen.all.filter((load) => load.startsWith('import '))).toEqual([]);
  });
});

describe('AWS SDK loading in the CLI bundle (dist/cld.mjs)', () => {
  // esbuild turns `require` into its `__require` shim, a function even without the createRequire
  // banner the CLI bundle lacks: `typeof require` alone took the shim for a working require, and
  // every command on AWS failed with `Dynamic require of "@aws-sdk/client-s3" is not supported`.
  it('ingests into the bucket with CLD_BUCKET set: the S3 client loads without a banner', async () => {
    const dir = join(work, 'cli');
    await run(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'scripts', 'build-cli.ts'), dir]);
    const doc = join(work, 'guide.md');
    writeFileSync(doc, '# Guide\n\n## Buckets\n\nA bucket holds objects; versioning keeps every version.\n');
    const s3 = await startS3rver();
    try {
      const { stdout } = await run(process.execPath, [join(dir, 'cld.mjs'), 'ingest', doc], {
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? work,
          CLD_BUCKET: s3.bucket,
          CLD_DATA_DIR: join(work, 'cli-data-must-not-be-used'),
          AWS_ENDPOINT_URL_S3: s3.endpoint,
          AWS_REGION: S3RVER_REGION,
          AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
          AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
          AWS_REQUEST_CHECKSUM_CALCULATION: 'WHEN_REQUIRED',
          AWS_RESPONSE_CHECKSUM_VALIDATION: 'WHEN_REQUIRED',
        },
        timeout: 120_000,
      });
      expect(stdout).toContain(`bucket: ${s3.bucket}`);
      expect(stdout).toMatch(/ingested 1 files: 1 new/);
    } finally {
      await s3.stop();
    }
  }, 180_000);
});
