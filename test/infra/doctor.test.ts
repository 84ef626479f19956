import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { doctorCommand } from '../../cli/doctor.js';
import { PROJECT_ROOT } from '../../infra/lib/bundling.js';
import { type CheckResult, checkModelRegion, runPreflight } from '../../shared/doctor/preflight.js';
import { startTestServe, type TestServe } from '../channels/helpers.js';
import { type AwsStub, HEALTHY, startAwsStub } from '../helpers/aws-stub.js';

/**
 * `cld doctor` with the real SDK v3 clients (STS, SSM, Bedrock, Bedrock Runtime, Lambda) against
 * a local stub of their wire protocols (test/helpers/aws-stub.ts), one scenario per failure a new
 * account meets (issue 24), and the smoke question through a real `serve`.
 */

const PROFILE = 'us.anthropic.claude-haiku-4-5-20251001-v1:0';
const CREDENTIALS = { accessKeyId: 'AKIDSTUB', secretAccessKey: 'stub-secret' };
let stub: AwsStub;

beforeAll(async () => {
  stub = await startAwsStub();
});
afterAll(async () => {
  await stub?.stop();
});
beforeEach(() => {
  stub.scenario = { ...HEALTHY };
  stub.calls.length = 0;
});

const run = (overrides: Partial<Parameters<typeof runPreflight>[0]> = {}) =>
  runPreflight({
    region: 'us-east-1',
    modelId: PROFILE,
    endpoint: stub.endpoint,
    credentials: CREDENTIALS,
    ...overrides,
  });
const byId = (results: CheckResult[], id: string) => results.find((r) => r.id === id) as CheckResult;

describe('cld doctor against stubbed AWS endpoints', () => {
  it('passes on a healthy account, calling each service once', async () => {
    const results = await run();
    expect(results.map((r) => [r.id, r.status])).toEqual([
      ['credentials', 'ok'],
      ['bootstrap', 'ok'],
      ['model-region', 'ok'],
      ['model', 'ok'],
      ['concurrency', 'ok'],
    ]);
    expect(byId(results, 'credentials').message).toContain('123456789012');
    expect(stub.calls).toEqual([
      'sts:GetCallerIdentity',
      'ssm:GetParameter',
      'bedrock:GetInferenceProfile',
      'bedrock-runtime:Converse',
      'lambda:GetAccountSettings',
    ]);
  });

  it('reports missing credentials with the fix, and skips what needs them', async () => {
    const results = await run({
      credentials: async () => {
        // What the SDK's default chain throws when no provider has credentials.
        throw Object.assign(new Error('Could not load credentials from any providers'), {
          name: 'CredentialsProviderError',
        });
      },
    });
    expect(byId(results, 'credentials')).toMatchObject({
      status: 'fail',
      message: 'no AWS credentials were found',
    });
    expect(byId(results, 'credentials').fix).toMatch(/aws configure sso|AWS_PROFILE/);
    expect(results.filter((r) => r.status === 'skip').map((r) => r.id)).toEqual([
      'bootstrap',
      'model-region',
      'model',
      'concurrency',
    ]);
    expect(stub.calls).toEqual([]);
  });

  it('reports an account that is not bootstrapped, with the bootstrap command for it', async () => {
    stub.scenario = { ...HEALTHY, bootstrapVersion: undefined };
    const bootstrap = byId(await run(), 'bootstrap');
    expect(bootstrap.status).toBe('fail');
    expect(bootstrap.message).toMatch(/not bootstrapped/);
    expect(bootstrap.fix).toBe('npx cdk bootstrap aws://123456789012/us-east-1');
  });

  it('reports an outdated bootstrap stack', async () => {
    stub.scenario = { ...HEALTHY, bootstrapVersion: '14' };
    const bootstrap = byId(await run(), 'bootstrap');
    expect(bootstrap).toMatchObject({ status: 'fail', message: 'CDK bootstrap version 14 is older than 21' });
  });

  it("reports Anthropic's first-use form, from Bedrock's own error", async () => {
    stub.scenario = {
      ...HEALTHY,
      converseError: {
        status: 404,
        name: 'ResourceNotFoundException',
        message:
          'Model use case details have not been submitted for this account. Fill out the Anthropic use case details form before using the model.',
      },
    };
    const model = byId(await run(), 'model');
    expect(model.status).toBe('fail');
    expect(model.message).toMatch(/use-case form has not been submitted/);
    expect(model.fix).toMatch(/submit the use-case details/);
  });

  it('reports missing AWS Marketplace permissions for the first, subscribing call', async () => {
    stub.scenario = {
      ...HEALTHY,
      converseError: {
        status: 403,
        name: 'AccessDeniedException',
        message:
          'Model access is denied due to IAM user or service role is not authorized to perform the required AWS Marketplace actions (aws-marketplace:ViewSubscriptions, aws-marketplace:Subscribe) to enable access to this model.',
      },
    };
    const model = byId(await run(), 'model');
    expect(model.status).toBe('fail');
    expect(model.fix).toMatch(/aws-marketplace:Subscribe/);
  });

  it('reports a model Bedrock does not offer in the Region', async () => {
    stub.scenario = {
      ...HEALTHY,
      modelLookupError: {
        status: 404,
        name: 'ResourceNotFoundException',
        message: 'Inference profile not found',
      },
    };
    const model = byId(await run(), 'model');
    expect(model).toMatchObject({ status: 'fail' });
    expect(model.message).toMatch(/is not offered in us-east-1/);
    expect(stub.calls).not.toContain('bedrock-runtime:Converse');
  });

  it('reports a us. profile called from a European Region, and proposes the global profile', async () => {
    const results = await run({ region: 'eu-west-1' });
    const region = byId(results, 'model-region');
    expect(region.status).toBe('fail');
    expect(region.fix).toBe(
      'deploy with -c cld:modelId=global.anthropic.claude-haiku-4-5-20251001-v1:0 (or eu.anthropic.claude-haiku-4-5-20251001-v1:0)',
    );
    expect(byId(results, 'model').status).toBe('skip');
    expect(stub.calls).not.toContain('bedrock-runtime:Converse');
  });

  it.each([
    ['global.anthropic.claude-haiku-4-5-20251001-v1:0', 'ap-southeast-7', 'ok'],
    ['eu.anthropic.claude-haiku-4-5-20251001-v1:0', 'eu-central-1', 'ok'],
    ['apac.anthropic.claude-haiku-4-5-20251001-v1:0', 'us-west-2', 'fail'],
    ['anthropic.claude-3-haiku-20240307-v1:0', 'eu-west-1', 'ok'],
  ])('judges %s from %s: %s', (model, region, status) => {
    expect(checkModelRegion(model, region).status).toBe(status);
  });

  it('warns of the concurrency quota of a new account (10), with the quota request', async () => {
    stub.scenario = { ...HEALTHY, concurrency: 10 };
    const concurrency = byId(await run(), 'concurrency');
    expect(concurrency.status).toBe('warn');
    expect(concurrency.message).toMatch(/quota is 10/);
    expect(concurrency.fix).toMatch(/--quota-code L-B99A9384/);
  });
});

describe('cld doctor as a command', () => {
  it('exits 1 with the fix when this shell has no credentials (the default provider chain)', () => {
    const home = mkdtempSync(join(tmpdir(), 'cld-doctor-'));
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'cli/doctor.ts', '--model', 'offline'], {
      cwd: PROJECT_ROOT,
      encoding: 'utf8',
      timeout: 120_000,
      env: {
        PATH: process.env.PATH,
        HOME: home,
        AWS_REGION: 'us-east-1',
        AWS_EC2_METADATA_DISABLED: 'true',
        AWS_CONFIG_FILE: join(home, 'config'),
        AWS_SHARED_CREDENTIALS_FILE: join(home, 'credentials'),
      },
    });
    expect(result.stdout).toMatch(/FAIL\s+credentials\s+no AWS credentials were found/);
    expect(result.stdout).toMatch(/fix: aws configure sso/);
    expect(result.status).toBe(1);
  }, 150_000);

  it('refuses bad usage with exit 2', async () => {
    const lines: string[] = [];
    expect(await doctorCommand(['--bogus'], (l) => lines.push(l))).toBe(2);
    expect(await doctorCommand(['--api-url', 'ftp://x'], (l) => lines.push(l))).toBe(2);
    expect(lines.join('\n')).toMatch(/usage: cld doctor/);
  });
});

describe('the smoke question (after deploy)', () => {
  let serve: TestServe;
  const TOKEN = 'doctor-token-0123456789abcdef';
  beforeAll(async () => {
    serve = await startTestServe({ CLD_API_TOKENS: JSON.stringify({ [TOKEN]: 'platform' }) });
  });
  afterAll(async () => {
    await serve?.stop();
  });

  it('asks a question through the HTTP API and passes when it is answered', async () => {
    const results = await run({ modelId: 'offline', apiUrl: serve.url, token: TOKEN, pollMs: 100 });
    expect(byId(results, 'smoke')).toMatchObject({ status: 'ok' });
    expect(byId(results, 'smoke').message).toMatch(/ended (done|partial)/);
  });

  it('fails with the fix when the token is refused', async () => {
    const results = await run({
      modelId: 'offline',
      apiUrl: serve.url,
      token: 'wrong-token-0123456789abc',
      pollMs: 100,
    });
    expect(byId(results, 'smoke')).toMatchObject({
      status: 'fail',
      message: 'the HTTP API refused the token (401)',
    });
  });
});
