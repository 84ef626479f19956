/**
 * A local stand-in for the few AWS operations `cld doctor` calls, on one HTTP/1.1 port, answering
 * the real SDK v3 clients in their own wire protocols:
 * - STS `GetCallerIdentity` (awsQuery: form body `Action=GetCallerIdentity`, XML answer);
 * - SSM `GetParameter` (awsJson1_1: `X-Amz-Target: AmazonSSM.GetParameter`);
 * - Bedrock `GetInferenceProfile` / `GetFoundationModel` (restJson1: `GET /inference-profiles/{id}`,
 *   `GET /foundation-models/{id}`);
 * - Bedrock Runtime `Converse` (restJson1: `POST /model/{id}/converse`);
 * - Lambda `GetAccountSettings` (restJson1: `GET /2016-08-19/account-settings`).
 * Errors are sent as each protocol sends them (awsQuery: an `<ErrorResponse>` XML; JSON
 * protocols: `x-amzn-errortype` and a `{ "message" }` body), so the SDK raises the named
 * exception. What each operation answers is the `scenario`, changeable between calls.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** An AWS error the stub answers with. */
export interface StubError {
  status: number;
  name: string;
  message: string;
}

/** What each operation answers. */
export interface AwsScenario {
  account: string;
  /** SSM `/cdk-bootstrap/<qualifier>/version`; undefined → ParameterNotFound. */
  bootstrapVersion?: string;
  /** `GetInferenceProfile`/`GetFoundationModel` fail with this. */
  modelLookupError?: StubError;
  /** `Converse` fails with this. */
  converseError?: StubError;
  /** The account's concurrent-executions quota. */
  concurrency: number;
}

/** A running stub. */
export interface AwsStub {
  endpoint: string;
  scenario: AwsScenario;
  /** `<service>:<operation>` of every request, in order. */
  calls: string[];
  stop(): Promise<void>;
}

/** A healthy account: bootstrapped (v28), model enabled, quota 1,000. */
export const HEALTHY: AwsScenario = { account: '123456789012', bootstrapVersion: '28', concurrency: 1000 };

/** Starts the stub on 127.0.0.1 (a free port). */
export async function startAwsStub(scenario: AwsScenario = { ...HEALTHY }): Promise<AwsStub> {
  const calls: string[] = [];
  const stub = { scenario, calls } as AwsStub;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = req.url ?? '/';
      const s = stub.scenario;
      const json = (status: number, value: unknown, error?: string) => {
        res.writeHead(status, {
          'content-type': 'application/json',
          ...(error ? { 'x-amzn-errortype': `${error}:http://internal.amazon.com/coral/` } : {}),
        });
        res.end(JSON.stringify(value));
      };
      const jsonError = (e: StubError) => json(e.status, { message: e.message }, e.name);
      if (req.method === 'POST' && body.includes('Action=GetCallerIdentity')) {
        calls.push('sts:GetCallerIdentity');
        res.writeHead(200, { 'content-type': 'text/xml' });
        res.end(
          `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>` +
            `<Arn>arn:aws:iam::${s.account}:user/platform</Arn><UserId>AIDASTUB</UserId><Account>${s.account}</Account>` +
            '</GetCallerIdentityResult><ResponseMetadata><RequestId>stub</RequestId></ResponseMetadata></GetCallerIdentityResponse>',
        );
        return;
      }
      if (req.headers['x-amz-target'] === 'AmazonSSM.GetParameter') {
        calls.push('ssm:GetParameter');
        const name = (JSON.parse(body) as { Name: string }).Name;
        if (s.bootstrapVersion === undefined)
          return json(
            400,
            { __type: 'ParameterNotFound', message: `Parameter ${name} not found.` },
            'ParameterNotFound',
          );
        return json(200, {
          Parameter: { Name: name, Type: 'String', Value: s.bootstrapVersion, Version: 1 },
        });
      }
      const profile = /^\/inference-profiles\/([^/?]+)/.exec(path);
      const model = /^\/foundation-models\/([^/?]+)/.exec(path);
      if (req.method === 'GET' && (profile || model)) {
        calls.push(profile ? 'bedrock:GetInferenceProfile' : 'bedrock:GetFoundationModel');
        if (s.modelLookupError) return jsonError(s.modelLookupError);
        const id = decodeURIComponent((profile ?? model)?.[1] as string);
        return json(
          200,
          profile
            ? {
                inferenceProfileId: id,
                inferenceProfileName: id,
                inferenceProfileArn: `arn:aws:bedrock:us-east-1:${s.account}:inference-profile/${id}`,
                status: 'ACTIVE',
                type: 'SYSTEM_DEFINED',
                models: [],
              }
            : {
                modelDetails: { modelId: id, modelArn: `arn:aws:bedrock:us-east-1::foundation-model/${id}` },
              },
        );
      }
      if (req.method === 'POST' && /^\/model\/[^/]+\/converse$/.test(path)) {
        calls.push('bedrock-runtime:Converse');
        if (s.converseError) return jsonError(s.converseError);
        return json(200, {
          output: { message: { role: 'assistant', content: [{ text: 'OK' }] } },
          stopReason: 'max_tokens',
          usage: { inputTokens: 12, outputTokens: 1, totalTokens: 13 },
          metrics: { latencyMs: 5 },
        });
      }
      if (req.method === 'GET' && path.startsWith('/2016-08-19/account-settings')) {
        calls.push('lambda:GetAccountSettings');
        return json(200, {
          AccountLimit: {
            ConcurrentExecutions: s.concurrency,
            UnreservedConcurrentExecutions: s.concurrency,
            TotalCodeSize: 80530636800,
            CodeSizeUnzipped: 262144000,
            CodeSizeZipped: 52428800,
          },
          AccountUsage: { FunctionCount: 0, TotalCodeSize: 0 },
        });
      }
      calls.push(`unknown:${req.method} ${path}`);
      json(418, { message: `the AWS stub has no ${req.method} ${path}` }, 'StubUnknownOperation');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  stub.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  stub.stop = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return stub;
}
