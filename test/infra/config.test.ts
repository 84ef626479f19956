import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { bedrockStatements, modelTarget } from '../../infra/lib/access.js';
import { policyCopyCommands } from '../../infra/lib/bundling.js';
import { resolveConfig } from '../../infra/lib/config.js';
import { ConfigError } from '../../shared/errors.js';
import { cdkJsonContext } from './helpers.js';

/** Config resolution from CDK context, model-id classification and the policy-bundle copy hook. */

function fromContext(context: Record<string, unknown>) {
  return resolveConfig((key) => context[key]);
}

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('resolveConfig', () => {
  it('resolves cdk.json context with the documented defaults', () => {
    const config = fromContext(cdkJsonContext());
    expect(config).toEqual({
      stage: 'dev',
      modelId: cdkJsonContext()['cld:modelId'],
      models: {},
      limits: {},
      allowedOrigins: [],
      jwtAudience: [],
      apiThrottle: { rateLimit: 25, burstLimit: 50 },
      webhookThrottle: { rateLimit: 10, burstLimit: 20 },
      secretArns: {},
      reservedConcurrency: {},
      retryAttempts: 2,
      maxEventAgeSeconds: 3600,
      logRetentionDays: 14,
      logLevel: 'INFO',
      sourceMaps: false,
      mcpServers: [],
      operatorSubjects: [],
      destroyData: false,
    });
  });

  it('takes the data-destroying opt-in and the alarm topic and e-mail from the command line', () => {
    const config = fromContext({
      ...cdkJsonContext(),
      'cld:destroyData': 'true',
      'cld:alarmEmail': 'ops@example.com',
      'cld:alarmTopicArn': 'arn:aws:sns:eu-west-1:123456789012:alarms',
    });
    expect(config.destroyData).toBe(true);
    expect(config.alarmEmail).toBe('ops@example.com');
    expect(config.alarmTopicArn).toBe('arn:aws:sns:eu-west-1:123456789012:alarms');
  });

  it.each([
    ['cld:destroyData', 'yes', /cld:destroyData is not valid JSON/],
    ['cld:destroyData', '1', /cld:destroyData: .*boolean/],
    ['cld:alarmEmail', 'ops', /cld:alarmEmail: an e-mail address/],
    ['cld:alarmTopicArn', 'arn:aws:sqs:eu-west-1:123456789012:q', /cld:alarmTopicArn: an SNS topic ARN/],
  ])('refuses %s=%s with the key named', (key, value, message) => {
    expect(() => fromContext({ ...cdkJsonContext(), [key]: value })).toThrow(message);
  });

  it('parses values given as strings on the command line (-c key=value)', () => {
    const config = fromContext({
      'cld:stage': 'prod',
      'cld:modelId': 'anthropic.claude-3-haiku-20240307-v1:0',
      'cld:limits': '{"maxDepth":3,"maxTurns":4}',
      'cld:allowedOrigins': 'https://app.example.com, https://admin.example.com:8443',
      'cld:reservedConcurrency': '{"tool":5}',
      'cld:retryAttempts': '0',
      'cld:maxEventAgeSeconds': '600',
      'cld:jwtIssuer': 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Ab12Cd34E',
      'cld:jwtAudience': '3n4b5urk1ft4fl3mg5e62d9ado, 7kq1example0client',
      'cld:apiThrottle': '{"rateLimit":2.5,"burstLimit":5}',
      'cld:webhookThrottle': '{"rateLimit":4,"burstLimit":8}',
      'cld:secretArns':
        '{"slackBotToken":"arn:aws:secretsmanager:eu-west-1:111122223333:secret:cld/bot-Ab12Cd"}',
    });
    expect(config).toMatchObject({
      jwtIssuer: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Ab12Cd34E',
      jwtAudience: ['3n4b5urk1ft4fl3mg5e62d9ado', '7kq1example0client'],
      apiThrottle: { rateLimit: 2.5, burstLimit: 5 },
      webhookThrottle: { rateLimit: 4, burstLimit: 8 },
      secretArns: { slackBotToken: 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:cld/bot-Ab12Cd' },
      stage: 'prod',
      limits: { maxDepth: 3, maxTurns: 4 },
      allowedOrigins: ['https://app.example.com', 'https://admin.example.com:8443'],
      reservedConcurrency: { tool: 5 },
      retryAttempts: 0,
      maxEventAgeSeconds: 600,
      logRetentionDays: 365,
    });
  });

  it.each([
    [{ 'cld:modelId': undefined }, 'cld:modelId', /required/],
    [{ 'cld:modelId': 'gpt4' }, 'cld:modelId', /Bedrock model id/],
    [{ 'cld:stage': 'Prod' }, 'cld:stage', /lower-case/],
    [{ 'cld:retryAttempts': 3 }, 'cld:retryAttempts', /<=2/],
    [{ 'cld:maxEventAgeSeconds': '30' }, 'cld:maxEventAgeSeconds', />=60/],
    [{ 'cld:limits': '{"maxDepth":0}' }, 'cld:limits.maxDepth', />=1/],
    [{ 'cld:limits': { maxDeep: 3 } }, 'cld:limits', /maxDeep/],
    [
      { 'cld:reservedConcurrency': { planner: 5 } },
      'cld:reservedConcurrency.planner',
      /not a function of infra\/lib\/functions.ts/,
    ],
    [{ 'cld:reservedConcurrency': { tool: 0 } }, 'cld:reservedConcurrency.tool', />=1/],
    [{ 'cld:reservedConcurrency': { tool: 1001 } }, 'cld:reservedConcurrency.tool', /<=1000/],
    [
      { 'cld:reservedConcurrency': '{"plan":5}' },
      'cld:reservedConcurrency.plan',
      /the plan function takes no reserved concurrency .*assistant, tool, slack, teams/,
    ],
    [{ 'cld:allowedOrigins': ['*'] }, 'cld:allowedOrigins.0', /origin/],
    [{ 'cld:allowedOrigins': 'http://app.example.com' }, 'cld:allowedOrigins.0', /origin/],
    [{ 'cld:logRetentionDays': 15 }, 'cld:logRetentionDays', /retention/],
    [{ 'cld:logLevel': 'VERBOSE' }, 'cld:logLevel', /INFO/],
    [{ 'cld:sourceMaps': '1' }, 'cld:sourceMaps', /boolean/],
    [{ 'cld:jwtIssuer': 'http://idp.example.com' }, 'cld:jwtIssuer', /HTTPS issuer URL/],
    [{ 'cld:jwtIssuer': 'https://idp.example.com' }, 'cld:jwtAudience', /required with cld:jwtIssuer/],
    [{ 'cld:jwtAudience': 'client-1' }, 'cld:jwtIssuer', /required with cld:jwtAudience/],
    [{ 'cld:apiThrottle': '{"rateLimit":0,"burstLimit":5}' }, 'cld:apiThrottle.rateLimit', />0/],
    [{ 'cld:apiThrottle': { rateLimit: 5 } }, 'cld:apiThrottle.burstLimit', /number/],
    [{ 'cld:webhookThrottle': '{"rateLimit":-1,"burstLimit":5}' }, 'cld:webhookThrottle.rateLimit', />0/],
    [{ 'cld:webhookThrottle': '{"rateLimit":5,"burstLimit":5,"x":1}' }, 'cld:webhookThrottle', /x/],
    [
      { 'cld:secretArns': { slackBotToken: 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:cld/bot' } },
      'cld:secretArns.slackBotToken',
      /complete secret ARN/,
    ],
    [
      {
        'cld:secretArns': { slackBotToken: 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:cld/bot-*' },
      },
      'cld:secretArns.slackBotToken',
      /complete secret ARN/,
    ],
    [
      {
        'cld:secretArns': {
          slackToken: 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:cld/bot-Ab12Cd',
        },
      },
      'cld:secretArns',
      /slackToken/,
    ],
  ])('rejects %j naming %s', (context, key, message) => {
    const error = errorOf(() => fromContext({ 'cld:modelId': 'anthropic.claude-v2', ...context }));
    const line = error.message.split('\n').find((l) => l.trim().startsWith(`${key}:`));
    expect(line, error.message).toBeDefined();
    expect(line).toMatch(message);
  });

  it('accepts reserved concurrency at both ends of its range, for every function that takes it', () => {
    const config = fromContext({
      'cld:modelId': 'offline',
      'cld:reservedConcurrency': '{"assistant":1,"tool":1000,"slack":10,"teams":10}',
    });
    expect(config.reservedConcurrency).toEqual({ assistant: 1, tool: 1000, slack: 10, teams: 10 });
  });

  it('rejects context JSON that does not parse, naming the key', () => {
    const error = errorOf(() => fromContext({ 'cld:modelId': 'offline', 'cld:limits': '{maxDepth:3' }));
    expect(error.message).toMatch(/^cld:limits is not valid JSON/);
  });
});

describe('model ids', () => {
  it.each([
    ['offline', { kind: 'offline' }],
    [
      'anthropic.claude-3-haiku-20240307-v1:0',
      { kind: 'foundation-model', modelId: 'anthropic.claude-3-haiku-20240307-v1:0' },
    ],
    [
      'us.anthropic.claude-haiku-4-5-20251001-v1:0',
      {
        kind: 'inference-profile',
        profileId: 'us.anthropic.claude-haiku-4-5-20251001-v1:0',
        modelId: 'anthropic.claude-haiku-4-5-20251001-v1:0',
      },
    ],
    [
      'global.anthropic.claude-sonnet-4-5-20250929-v1:0',
      { kind: 'inference-profile', modelId: 'anthropic.claude-sonnet-4-5-20250929-v1:0' },
    ],
    [
      'arn:aws:bedrock:eu-west-1:111122223333:application-inference-profile/abc123',
      {
        kind: 'application-inference-profile',
        arn: 'arn:aws:bedrock:eu-west-1:111122223333:application-inference-profile/abc123',
      },
    ],
  ])('classifies %s', (id, expected) => {
    expect(modelTarget(id)).toMatchObject(expected);
  });

  it('rejects an ARN of another Bedrock resource', () => {
    expect(() => modelTarget('arn:aws:bedrock:eu-west-1:111122223333:provisioned-model/x')).toThrow(
      ConfigError,
    );
  });

  function statementsFor(modelId: string) {
    const stack = new Stack(new App(), 'S');
    return bedrockStatements(stack, modelId).map((s) => stack.resolve(s.toStatementJson()));
  }

  it('grants a foundation model in the stack Region only', () => {
    expect(statementsFor('anthropic.claude-3-haiku-20240307-v1:0')).toEqual([
      {
        Sid: 'InvokeFoundationModel',
        Effect: 'Allow',
        Action: 'bedrock:InvokeModel',
        Resource: {
          'Fn::Join': [
            '',
            [
              'arn:',
              { Ref: 'AWS::Partition' },
              ':bedrock:',
              { Ref: 'AWS::Region' },
              '::foundation-model/anthropic.claude-3-haiku-20240307-v1:0',
            ],
          ],
        },
      },
    ]);
  });

  it('grants an application inference profile and only through it its models', () => {
    const arn = 'arn:aws:bedrock:eu-west-1:111122223333:application-inference-profile/abc123';
    const [profile, models] = statementsFor(arn);
    expect(profile).toMatchObject({ Action: 'bedrock:InvokeModel', Resource: arn });
    expect(models).toMatchObject({
      Action: 'bedrock:InvokeModel',
      Condition: { StringEquals: { 'bedrock:InferenceProfileArn': arn } },
    });
  });

  it('grants nothing for the offline model', () => {
    expect(statementsFor('offline')).toEqual([]);
  });
});

describe('policy bundle copy hook', () => {
  function project(): { input: string; output: string } {
    const root = mkdtempSync(join(tmpdir(), "cld hook 'x' "));
    const input = join(root, 'in put');
    mkdirSync(join(input, 'policies', 'dist'), { recursive: true });
    writeFileSync(join(input, 'policies', 'rules.json'), '{"version":1,"rules":[]}');
    writeFileSync(
      join(input, 'policies', 'dist', 'plan.wasm'),
      Buffer.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]),
    );
    const output = join(root, 'out put');
    mkdirSync(output);
    return { input, output };
  }

  it('copies rules.json and the wasm into <asset>/policies/ through bash, quoting paths', () => {
    const { input, output } = project();
    for (const command of policyCopyCommands('plan', input, output, true))
      execFileSync('bash', ['-c', command]);
    expect(readFileSync(join(output, 'policies', 'rules.json'), 'utf8')).toBe('{"version":1,"rules":[]}');
    expect(readFileSync(join(output, 'policies', 'plan.wasm'))).toEqual(
      Buffer.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]),
    );
  });

  it('copies only rules.json when the function has no compiled policy', () => {
    const { input, output } = project();
    for (const command of policyCopyCommands('tool', input, output, false))
      execFileSync('bash', ['-c', command]);
    expect(existsSync(join(output, 'policies', 'rules.json'))).toBe(true);
    expect(existsSync(join(output, 'policies', 'tool.wasm'))).toBe(false);
  });
});
