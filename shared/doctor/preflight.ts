/**
 * `cld doctor`: the preflight a platform engineer runs before and after `cdk deploy` (issue 24).
 * Each check calls AWS with the real SDK v3 clients and, when something is wrong, says what and
 * how to fix it. Checks, in order (a check that needs what an earlier one failed to find is
 * skipped):
 *
 * 1. `credentials` — STS `GetCallerIdentity` with the default credential chain, and a Region.
 * 2. `bootstrap` — SSM parameter `/cdk-bootstrap/<qualifier>/version` (what `cdk deploy`
 *    itself reads): missing → not bootstrapped; below {@link MIN_BOOTSTRAP_VERSION} → outdated.
 * 3. `model-region` — a system-defined inference profile (`us.`, `eu.`, …) is callable only from
 *    the Regions of its geography ({@link PROFILE_SOURCE_REGIONS}); `global.` from any.
 * 4. `model` — Bedrock `GetInferenceProfile` / `GetFoundationModel` (is it offered here?), then
 *    a one-token Converse call, which surfaces the first-use errors: Anthropic's use-case form not
 *    submitted, AWS Marketplace permissions missing for the first (subscribing) call, model
 *    access denied.
 * 5. `concurrency` — Lambda `GetAccountSettings`: the account's concurrent-executions quota
 *    against what the stack needs ({@link RECOMMENDED_CONCURRENCY}; new accounts start at 10).
 * 6. `smoke` (after deploy, with an API URL and a token) — a question through the HTTP API,
 *    polled until it ends: proves the deployed bundles run with the AWS SDK their assets carry (infra/lib/sdk-module.ts).
 */

import {
  BedrockClient,
  GetFoundationModelCommand,
  GetInferenceProfileCommand,
} from '@aws-sdk/client-bedrock';
import { BedrockRuntimeClient, ConverseCommand } from '@aws-sdk/client-bedrock-runtime';
import { GetAccountSettingsCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { PROFILE_SOURCE_REGIONS, profileGeography } from '../llm/profiles.js';

export { PROFILE_SOURCE_REGIONS, profileGeography };

import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';

/** The outcome of one check. */
export interface CheckResult {
  /** Stable id: `credentials`, `bootstrap`, `model-region`, `model`, `concurrency`, `smoke`. */
  id: string;
  /** `fail` stops a deploy or a first question; `warn` works but will hurt; `skip` was not run. */
  status: 'ok' | 'warn' | 'fail' | 'skip';
  /** What was found, one line. */
  message: string;
  /** What to do about it (absent when ok). */
  fix?: string;
}

/** Options of {@link runPreflight}. */
export interface PreflightOptions {
  /** Region (default: the SDK's resolution: `AWS_REGION`, profile, …). */
  region?: string;
  /** The model the stack will call (`cld:modelId`), or `offline`. */
  modelId: string;
  /** CDK bootstrap qualifier (default `hnb659fds`, CDK's). */
  qualifier?: string;
  /** One endpoint for every AWS client (tests: a local stub). */
  endpoint?: string;
  /** Credentials (default: the SDK's default provider chain). */
  credentials?: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  /** After deploy: the stack's `ApiUrl` output and a bearer token for it → the smoke check runs. */
  apiUrl?: string;
  token?: string;
  /** How long the smoke question may take (ms; default 120,000). */
  smokeTimeoutMs?: number;
  /** Poll interval of the smoke question (ms; default 2,000). */
  pollMs?: number;
}

/** Oldest CDK bootstrap stack version `aws-cdk-lib` 2.x deploys with (its own floor is 6; 21+ adds the lookup role CDK uses today). */
export const MIN_BOOTSTRAP_VERSION = 21;

/**
 * Concurrent executions the stack wants available: 10 functions with asynchronous invocations
 * and API traffic; Lambda keeps 100 unreserved whenever any is reserved, so a quota below this
 * throttles conversations (alarm `Throttles`).
 */
export const RECOMMENDED_CONCURRENCY = 100;

/**
 * Runs every check (see the module docstring) and returns their results in order; never throws
 * for an AWS error (each becomes a `fail` with its fix).
 */
export async function runPreflight(options: PreflightOptions): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  const config = clientConfig(options);
  const identity = await checkCredentials(config);
  results.push(identity.result);
  const region = identity.region;
  if (identity.result.status !== 'ok' || !region) {
    for (const id of ['bootstrap', 'model-region', 'model', 'concurrency'])
      results.push({ id, status: 'skip', message: 'needs credentials and a Region' });
  } else {
    const withRegion = { ...config, region };
    results.push(
      await checkBootstrap(withRegion, options.qualifier ?? 'hnb659fds', identity.account, region),
    );
    const regionCheck = checkModelRegion(options.modelId, region);
    results.push(regionCheck);
    results.push(
      regionCheck.status === 'fail'
        ? { id: 'model', status: 'skip', message: 'the model cannot be called from this Region' }
        : await checkModel(withRegion, options.modelId, region),
    );
    results.push(await checkConcurrency(withRegion));
  }
  if (options.apiUrl) results.push(await checkSmoke(options));
  return results;
}

/** The SDK client config shared by every check. */
interface ClientConfig {
  region?: string;
  endpoint?: string;
  credentials?: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  maxAttempts: number;
  requestHandler: NodeHttpHandler;
}

function clientConfig(options: PreflightOptions): ClientConfig {
  return {
    ...(options.region ? { region: options.region } : {}),
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    ...(options.credentials ? { credentials: options.credentials } : {}),
    maxAttempts: 2,
    // HTTP/1.1 for every client (bedrock-runtime defaults to HTTP/2), with bounded waits.
    requestHandler: new NodeHttpHandler({ connectionTimeout: 5_000, requestTimeout: 20_000 }),
  };
}

/** The error's name and message, for matching and for the report. */
function describe(error: unknown): { name: string; message: string } {
  const e = error as { name?: unknown; message?: unknown };
  return { name: typeof e?.name === 'string' ? e.name : 'Error', message: String(e?.message ?? error) };
}

async function checkCredentials(
  config: ClientConfig,
): Promise<{ result: CheckResult; region?: string; account?: string }> {
  const sts = new STSClient(config);
  let region: string | undefined;
  try {
    region = await sts.config.region();
  } catch {
    region = undefined;
  }
  if (!region) {
    return {
      result: {
        id: 'credentials',
        status: 'fail',
        message: 'no AWS Region is set',
        fix: 'export AWS_REGION=<region> (or set region in your AWS profile, or pass --region)',
      },
    };
  }
  try {
    const who = await sts.send(new GetCallerIdentityCommand({}));
    return {
      result: {
        id: 'credentials',
        status: 'ok',
        message: `${who.Arn} in account ${who.Account}, Region ${region}`,
      },
      region,
      ...(who.Account ? { account: who.Account } : {}),
    };
  } catch (error) {
    const { name, message } = describe(error);
    const noCredentials = name === 'CredentialsProviderError' || /Could not load credentials/i.test(message);
    return {
      result: {
        id: 'credentials',
        status: 'fail',
        message: noCredentials
          ? 'no AWS credentials were found'
          : `STS GetCallerIdentity failed: ${name}: ${message}`,
        fix: noCredentials
          ? 'aws configure sso (then aws sso login), or export AWS_PROFILE=<profile>, or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY'
          : name === 'ExpiredToken' || name === 'ExpiredTokenException'
            ? 'your session expired: aws sso login (or refresh the credentials)'
            : 'check the credentials of this shell (aws sts get-caller-identity)',
      },
      region,
    };
  }
}

async function checkBootstrap(
  config: ClientConfig,
  qualifier: string,
  account: string | undefined,
  region: string,
): Promise<CheckResult> {
  const name = `/cdk-bootstrap/${qualifier}/version`;
  const bootstrap = `npx cdk bootstrap aws://${account ?? '<account-id>'}/${region}`;
  try {
    const out = await new SSMClient(config).send(new GetParameterCommand({ Name: name }));
    const version = Number(out.Parameter?.Value);
    if (!Number.isInteger(version)) {
      return { id: 'bootstrap', status: 'fail', message: `${name} is not a version number`, fix: bootstrap };
    }
    return version >= MIN_BOOTSTRAP_VERSION
      ? { id: 'bootstrap', status: 'ok', message: `CDK bootstrap version ${version} (${region})` }
      : {
          id: 'bootstrap',
          status: 'fail',
          message: `CDK bootstrap version ${version} is older than ${MIN_BOOTSTRAP_VERSION}`,
          fix: `${bootstrap} (upgrades the CDKToolkit stack in place)`,
        };
  } catch (error) {
    const { name: errorName, message } = describe(error);
    if (errorName === 'ParameterNotFound') {
      return {
        id: 'bootstrap',
        status: 'fail',
        message: `this account and Region are not bootstrapped for CDK (no ${name})`,
        fix: bootstrap,
      };
    }
    return {
      id: 'bootstrap',
      status: 'fail',
      message: `SSM GetParameter ${name} failed: ${errorName}: ${message}`,
      fix: 'the deploying identity needs ssm:GetParameter on the bootstrap parameter (cdk deploy reads it too)',
    };
  }
}

/**
 * Whether `modelId` can be called from `region`: a system-defined inference profile only from
 * its geography's source Regions ({@link PROFILE_SOURCE_REGIONS}); anything else is left to the
 * `model` check.
 */
export function checkModelRegion(modelId: string, region: string): CheckResult {
  const geo = profileGeography(modelId);
  if (modelId === 'offline')
    return { id: 'model-region', status: 'ok', message: 'the offline model needs no Region' };
  if (!geo || geo === 'global') {
    return { id: 'model-region', status: 'ok', message: `${modelId} is not bound to a geography` };
  }
  const regions = PROFILE_SOURCE_REGIONS[geo] ?? [];
  if (regions.includes(region)) {
    return {
      id: 'model-region',
      status: 'ok',
      message: `the ${geo}. inference profile is callable from ${region}`,
    };
  }
  const rest = modelId.slice(geo.length + 1);
  const local = Object.entries(PROFILE_SOURCE_REGIONS).find(
    ([g, list]) => g !== 'us-gov' && list.includes(region),
  )?.[0];
  return {
    id: 'model-region',
    status: 'fail',
    message: `the ${geo}. inference profile ${modelId} cannot be called from ${region} (only from ${regions.join(', ')})`,
    fix: `deploy with -c cld:modelId=global.${rest}${local ? ` (or ${local}.${rest})` : ''}`,
  };
}

async function checkModel(config: ClientConfig, modelId: string, region: string): Promise<CheckResult> {
  if (modelId === 'offline')
    return { id: 'model', status: 'ok', message: 'the offline model calls no Bedrock' };
  const bedrock = new BedrockClient(config);
  const profile = profileGeography(modelId) !== undefined || modelId.includes(':inference-profile/');
  try {
    if (profile) await bedrock.send(new GetInferenceProfileCommand({ inferenceProfileIdentifier: modelId }));
    else if (!modelId.startsWith('arn:') || modelId.includes(':foundation-model/'))
      await bedrock.send(new GetFoundationModelCommand({ modelIdentifier: modelId }));
  } catch (error) {
    const { name, message } = describe(error);
    return {
      id: 'model',
      status: 'fail',
      message: `${modelId} is not offered in ${region}: ${name}: ${message}`,
      fix: 'pick a model or inference profile Bedrock offers in this Region (aws bedrock list-inference-profiles), e.g. a global. profile',
    };
  }
  try {
    const runtime = new BedrockRuntimeClient(config);
    await runtime.send(
      new ConverseCommand({
        modelId,
        messages: [{ role: 'user', content: [{ text: 'Reply with OK.' }] }],
        inferenceConfig: { maxTokens: 1 },
      }),
    );
    return {
      id: 'model',
      status: 'ok',
      message: `${modelId} answered a one-token Converse call in ${region}`,
    };
  } catch (error) {
    return { id: 'model', ...modelFailure(error) };
  }
}

/** The first-use errors of Bedrock, each with its fix. */
function modelFailure(error: unknown): Omit<CheckResult, 'id'> {
  const { name, message } = describe(error);
  const said = `${name}: ${message}`;
  if (/use case details|use case form/i.test(message)) {
    return {
      status: 'fail',
      message: `Anthropic's one-time use-case form has not been submitted for this account (${said})`,
      fix: 'Bedrock console → Model catalog → the Anthropic model → submit the use-case details (once per account, or once in the management account of an organization)',
    };
  }
  if (/aws-marketplace/i.test(message)) {
    return {
      status: 'fail',
      message: `the first call of this model subscribes the account in AWS Marketplace, and this identity may not (${said})`,
      fix: 'run doctor once as an identity with aws-marketplace:Subscribe, aws-marketplace:ViewSubscriptions and aws-marketplace:Unsubscribe (e.g. an administrator); after that the functions need only bedrock:InvokeModel',
    };
  }
  if (name === 'AccessDeniedException') {
    return {
      status: 'fail',
      message: `model access is denied (${said})`,
      fix: 'check the identity may call bedrock:InvokeModel on the model and any SCP on Bedrock; in Regions that still list it, enable the model under Bedrock → Model access',
    };
  }
  if (name === 'ValidationException' && /on-demand throughput/i.test(message)) {
    return {
      status: 'fail',
      message: `this model needs an inference profile here (${said})`,
      fix: 'deploy with -c cld:modelId=global.<model id> (or the geography profile of this Region)',
    };
  }
  if (name === 'ThrottlingException' || name === 'ServiceQuotaExceededException') {
    return {
      status: 'warn',
      message: `the model is reachable but throttled (${said})`,
      fix: 'request a higher tokens-per-minute quota for the model in Service Quotas (Amazon Bedrock)',
    };
  }
  return {
    status: 'fail',
    message: `Converse failed: ${said}`,
    fix: 'see the message; aws bedrock-runtime converse reproduces it',
  };
}

async function checkConcurrency(config: ClientConfig): Promise<CheckResult> {
  try {
    const settings = await new LambdaClient(config).send(new GetAccountSettingsCommand({}));
    const quota = settings.AccountLimit?.ConcurrentExecutions ?? 0;
    if (quota >= RECOMMENDED_CONCURRENCY) {
      return { id: 'concurrency', status: 'ok', message: `Lambda concurrency quota ${quota}` };
    }
    return {
      id: 'concurrency',
      status: 'warn',
      message: `Lambda concurrency quota is ${quota} (new accounts start at 10): a few conversations at once will be throttled, and cld:reservedConcurrency cannot be set`,
      fix: 'aws service-quotas request-service-quota-increase --service-code lambda --quota-code L-B99A9384 --desired-value 1000',
    };
  } catch (error) {
    const { name, message } = describe(error);
    return {
      id: 'concurrency',
      status: 'warn',
      message: `Lambda GetAccountSettings failed: ${name}: ${message}`,
      fix: 'the identity needs lambda:GetAccountSettings to check the concurrency quota',
    };
  }
}

/** The smoke question's statuses that end it (shared/channels/conversations.ts view). */
const ENDED = new Set(['done', 'failed', 'partial', 'stalled']);

async function checkSmoke(options: PreflightOptions): Promise<CheckResult> {
  const base = (options.apiUrl as string).replace(/\/?$/, '/');
  const headers = {
    'content-type': 'application/json',
    ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
  };
  const deadline = Date.now() + (options.smokeTimeoutMs ?? 120_000);
  try {
    const started = await fetch(new URL('conversations', base), {
      method: 'POST',
      headers,
      body: JSON.stringify({ message: 'cld doctor: smoke test. What is an S3 bucket?' }),
    });
    if (started.status === 401 || started.status === 403) {
      return {
        id: 'smoke',
        status: 'fail',
        message: `the HTTP API refused the token (${started.status})`,
        fix: 'pass --token <JWT> of the configured issuer and audience',
      };
    }
    if (started.status !== 202) {
      return {
        id: 'smoke',
        status: 'fail',
        message: `POST /conversations answered ${started.status}: ${(await started.text()).slice(0, 200)}`,
        fix: 'see the http function log group (output HttpLogGroupName)',
      };
    }
    const { statusUrl } = (await started.json()) as { statusUrl?: string };
    if (!statusUrl) return { id: 'smoke', status: 'fail', message: 'POST /conversations gave no statusUrl' };
    for (;;) {
      const view = await fetch(statusUrl, { headers });
      const body = (await view.json()) as { status?: string };
      if (body.status && ENDED.has(body.status)) {
        return body.status === 'done' || body.status === 'partial'
          ? { id: 'smoke', status: 'ok', message: `a question through ${base} ended ${body.status}` }
          : {
              id: 'smoke',
              status: 'fail',
              message: `the smoke question ended ${body.status}`,
              fix: 'see the dashboard and the functions’ log groups (plan, assistant, tool); the dead-letter queues hold failed events',
            };
      }
      if (Date.now() > deadline) {
        return {
          id: 'smoke',
          status: 'fail',
          message: `the smoke question was still ${body.status ?? 'unknown'} after ${(options.smokeTimeoutMs ?? 120_000) / 1000} s`,
          fix: 'check the Throttles and dead-letter alarms, and the functions’ log groups',
        };
      }
      await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 2_000));
    }
  } catch (error) {
    const { name, message } = describe(error);
    return {
      id: 'smoke',
      status: 'fail',
      message: `${base} could not be reached: ${name}: ${message}`,
      fix: 'pass --api-url <ApiUrl output>',
    };
  }
}
