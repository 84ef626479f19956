import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FUNCTIONS,
  IDEMPOTENCY_ACTIONS,
  REPLY_DELIVERY_TIMEOUT_MS,
  REPLY_TIMEOUT_SECONDS,
} from '../../infra/lib/functions.js';
import {
  ACCESS_LOG_FIELDS,
  CORS_ALLOW_HEADERS,
  JWT_IDENTITY_SOURCE,
  NO_JWT_ISSUER_WARNING,
} from '../../infra/lib/http-api.js';
import { CHANNEL_SECRET_NAMES } from '../../infra/lib/secrets.js';
import { ChannelEnvSchema } from '../../shared/channels/config.js';
import { SLACK_CLIENT_RETRIES } from '../../shared/channels/delivery.js';
import { DELIVERY_LOCK_MS, deliveryGuard } from '../../shared/channels/idempotency.js';
import { API_ROUTES, type ApiRoute } from '../../shared/channels/routes.js';
import { dynamoDBIdempotencyLayer } from '../../shared/projections/idempotency.js';
import { EnvSchema } from '../../shared/runtime/settings.js';
import { type DynaliteHandle, startDynalite } from '../helpers/dynalite.js';
import {
  API_CONTEXT,
  isAllowed,
  logicalId,
  resolveValue,
  resourcesOfType,
  roleStatements,
  type Synthesized,
  synthesize,
  type TemplateJson,
} from './helpers.js';

/**
 * The channels on AWS (issue 4): the HTTP API generated from `API_ROUTES` (routes, integrations,
 * JWT authorizer, stage, CORS, outputs), the channel secrets, and the channel functions'
 * permissions and settings. Two synths, bundling skipped: `api` with a JWT issuer and a CORS
 * origin as a deployment gives them; `webhooks` without an issuer, with one existing secret and
 * a custom throttle.
 */

const ISSUER = API_CONTEXT['cld:jwtIssuer'];
const AUDIENCE = API_CONTEXT['cld:jwtAudience'].split(',');
const EXISTING_BOT_TOKEN = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:cld/slack-bot-token-Xy12Ab';

let api: Synthesized;
let webhooks: Synthesized;

/** Two synths on a loaded 2-core machine (about 50 s each): room for both. */
const SYNTH_TIMEOUT_MS = 360_000;

beforeAll(() => {
  api = synthesize({ context: API_CONTEXT });
  webhooks = synthesize({
    context: {
      'cld:secretArns': JSON.stringify({ slackBotToken: EXISTING_BOT_TOKEN }),
      'cld:apiThrottle': '{"rateLimit":5,"burstLimit":10}',
      'cld:webhookThrottle': '{"rateLimit":3,"burstLimit":6}',
    },
  });
}, SYNTH_TIMEOUT_MS);

/** The logical id of a function of the table (by its `CLD_FUNCTION` variable). */
function functionId(json: TemplateJson, name: string): string {
  const found = resourcesOfType(json, 'AWS::Lambda::Function').find(
    (id) =>
      (json.Resources[id]?.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)
        ?.Variables?.CLD_FUNCTION === name,
  );
  if (!found) throw new Error(`no function ${name}`);
  return found;
}

function roleOf(json: TemplateJson, name: string): string {
  const role = json.Resources[functionId(json, name)]?.Properties?.Role as { 'Fn::GetAtt': [string, string] };
  return role['Fn::GetAtt'][0];
}

function envOf(json: TemplateJson, name: string): Record<string, unknown> {
  return (
    json.Resources[functionId(json, name)]?.Properties?.Environment as { Variables: Record<string, unknown> }
  ).Variables;
}

function routesOf(json: TemplateJson): Map<string, Record<string, unknown>> {
  return new Map(
    resourcesOfType(json, 'AWS::ApiGatewayV2::Route').map((id) => {
      const props = json.Resources[id]?.Properties as Record<string, unknown>;
      return [String(props.RouteKey), props];
    }),
  );
}

function apiId(json: TemplateJson): string {
  return logicalId(json, 'AWS::ApiGatewayV2::Api', 'HttpApi');
}

const key = (route: Pick<ApiRoute, 'method' | 'path'>) => `${route.method} ${route.path}`;

describe('the HTTP API, generated from API_ROUTES', () => {
  it('has exactly one route per entry of API_ROUTES', () => {
    expect([...routesOf(api.json).keys()].sort()).toEqual(API_ROUTES.map(key).sort());
    expect(resourcesOfType(api.json, 'AWS::ApiGatewayV2::Api')).toHaveLength(1);
  });

  it.each(
    API_ROUTES.map((route) => [key(route), route] as const),
  )('%s: Lambda proxy integration (payload 2.0) to its function, with its authorization', (_key, route) => {
    const props = routesOf(api.json).get(key(route)) as Record<string, unknown>;
    const target = resolveValue(props.Target);
    const integrationId = target.replace(/^integrations\/<(.+)>$/, '$1');
    const integration = api.json.Resources[integrationId]?.Properties as Record<string, unknown>;
    expect(integration).toMatchObject({
      ApiId: { Ref: apiId(api.json) },
      IntegrationType: 'AWS_PROXY',
      PayloadFormatVersion: '2.0',
      IntegrationUri: { 'Fn::GetAtt': [functionId(api.json, route.function), 'Arn'] },
    });
    if (route.auth === 'jwt') {
      const authorizer = logicalId(api.json, 'AWS::ApiGatewayV2::Authorizer', 'HttpApiJwtAuthorizer');
      expect(props.AuthorizationType).toBe('JWT');
      expect(props.AuthorizerId).toEqual({ Ref: authorizer });
    } else {
      expect(props.AuthorizationType).toBe('NONE');
      expect(props.AuthorizerId).toBeUndefined();
    }
  });

  it('puts the JWT authorizer on /conversations*, /resources/* and the operator routes /tools*, and on nothing else', () => {
    const jwt = [...routesOf(api.json)]
      .filter(([, props]) => props.AuthorizationType === 'JWT')
      .map(([k]) => k);
    expect(jwt.sort()).toEqual(
      [
        'GET /conversations',
        'GET /conversations/{id}',
        'GET /resources/{urn+}',
        'POST /conversations',
        'POST /conversations/{id}/approvals/{approvalId}',
        'POST /conversations/{id}/messages',
        'GET /tools',
        'POST /tools/{name}/approve',
        'POST /tools/{name}/revoke',
      ].sort(),
    );
  });

  it('has one JWT authorizer with the issuer and audiences of the config, reading the Authorization header', () => {
    const authorizers = resourcesOfType(api.json, 'AWS::ApiGatewayV2::Authorizer');
    expect(authorizers).toHaveLength(1);
    expect(api.json.Resources[authorizers[0] as string]?.Properties).toEqual({
      ApiId: { Ref: apiId(api.json) },
      AuthorizerType: 'JWT',
      Name: 'jwt',
      IdentitySource: [JWT_IDENTITY_SOURCE],
      JwtConfiguration: { Issuer: ISSUER, Audience: AUDIENCE },
    });
  });

  it('has one integration per function', () => {
    const integrations = resourcesOfType(api.json, 'AWS::ApiGatewayV2::Integration').map(
      (id) =>
        (api.json.Resources[id]?.Properties?.IntegrationUri as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0],
    );
    const functions = [...new Set(API_ROUTES.map((route) => route.function))].map((name) =>
      functionId(api.json, name),
    );
    expect(integrations.sort()).toEqual(functions.sort());
  });

  it('lets API Gateway invoke each function only through its own routes, and no other function', () => {
    const api_ = apiId(api.json);
    const byFunction = new Map<string, string[]>();
    for (const id of resourcesOfType(api.json, 'AWS::Lambda::Permission')) {
      const props = api.json.Resources[id]?.Properties as Record<string, unknown>;
      if (props.Principal !== 'apigateway.amazonaws.com') continue;
      expect(props.Action).toBe('lambda:InvokeFunction');
      const fn = (props.FunctionName as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
      byFunction.set(fn, [...(byFunction.get(fn) ?? []), resolveValue(props.SourceArn)]);
    }
    const expected = new Map<string, string[]>();
    for (const route of API_ROUTES) {
      const fn = functionId(api.json, route.function);
      const arn = `arn:aws:execute-api:eu-west-1:111122223333:<${api_}>/*/*${route.path}`;
      expected.set(fn, [...(expected.get(fn) ?? []), arn]);
    }
    expect(new Map([...byFunction].map(([fn, arns]) => [fn, arns.sort()]))).toEqual(
      new Map([...expected].map(([fn, arns]) => [fn, arns.sort()])),
    );
  });

  it('deploys the $default stage automatically, throttled, with JSON access logs to a retained-per-stage log group', () => {
    const stages = resourcesOfType(api.json, 'AWS::ApiGatewayV2::Stage');
    expect(stages).toHaveLength(1);
    const stage = api.json.Resources[stages[0] as string]?.Properties as Record<string, unknown>;
    const logs = logicalId(api.json, 'AWS::Logs::LogGroup', 'HttpApiAccessLogs');
    expect(stage).toMatchObject({
      ApiId: { Ref: apiId(api.json) },
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: 25, ThrottlingBurstLimit: 50 },
      AccessLogSettings: { DestinationArn: { 'Fn::GetAtt': [logs, 'Arn'] } },
    });
    const format = JSON.parse(String((stage.AccessLogSettings as { Format: string }).Format));
    expect(format).toEqual(ACCESS_LOG_FIELDS);
    expect(format.requestId).toBe('$context.requestId');
    expect(api.json.Resources[logs]?.Properties?.RetentionInDays).toBe(14);
    expect(api.json.Resources[logs]?.DeletionPolicy).toBe('Delete');
  });

  it('answers CORS preflights for the configured origins only', () => {
    const props = api.json.Resources[apiId(api.json)]?.Properties as Record<string, unknown>;
    expect(props.CorsConfiguration).toEqual({
      AllowOrigins: [API_CONTEXT['cld:allowedOrigins']],
      AllowMethods: ['GET', 'POST'],
      AllowHeaders: [...CORS_ALLOW_HEADERS],
      MaxAge: 3600,
    });
    const withoutOrigins = webhooks.json.Resources[apiId(webhooks.json)]?.Properties as Record<
      string,
      unknown
    >;
    expect(withoutOrigins.CorsConfiguration).toBeUndefined();
  });

  it('outputs the API URL and one URL per webhook', () => {
    const url = `https://<${apiId(api.json)}>.execute-api.eu-west-1.amazonaws.com/`;
    const outputs = api.json.Outputs ?? {};
    expect(resolveValue(outputs.ApiUrl?.Value)).toBe(url);
    expect(resolveValue(outputs.SlackEventsWebhookUrl?.Value)).toBe(`${url}slack/events`);
    expect(resolveValue(outputs.SlackCommandsWebhookUrl?.Value)).toBe(`${url}slack/commands`);
    expect(resolveValue(outputs.SlackInteractionsWebhookUrl?.Value)).toBe(`${url}slack/interactions`);
    expect(resolveValue(outputs.TeamsMessagesWebhookUrl?.Value)).toBe(`${url}teams/messages`);
    expect(Object.keys(outputs).filter((name) => name.endsWith('WebhookUrl'))).toHaveLength(
      API_ROUTES.filter((route) => route.auth === 'none' && route.function !== 'http').length,
    );
  });

  it('acknowledges cdk-nag APIG4 (no authorizer) on the webhook and console routes only, with the reason', () => {
    const acknowledged = api.stack.node
      .findAll()
      .filter((c) =>
        c.node.metadata.some(
          (m) =>
            m.type === 'aws:cdk:acknowledged-rules' && 'Annotation::AwsSolutions-APIG4' in (m.data as object),
        ),
      )
      .map((c) => c.node.id);
    expect(acknowledged.sort()).toEqual([
      'Get',
      'GetConsoleFile',
      'GetOpenapiJson',
      'PostSlackCommands',
      'PostSlackEvents',
      'PostSlackInteractions',
      'PostTeamsMessages',
    ]);
  });

  it.each([
    ['with a JWT issuer', () => api],
    ['webhooks only', () => webhooks],
  ])('passes cdk-nag AwsSolutions %s', (_label, synth) => {
    const findings = synth().report.pluginReports.flatMap((report) =>
      report.violations.map((v) => `${v.ruleName} at ${v.violatingConstructs?.[0]?.constructPath}`),
    );
    expect(findings).toEqual([]);
  });
});

describe('without a JWT issuer', () => {
  it('leaves the user routes out (never open) and keeps the webhooks, with a synth warning', () => {
    const routes = routesOf(webhooks.json);
    expect([...routes.keys()].sort()).toEqual(
      API_ROUTES.filter((route) => route.auth === 'none')
        .map(key)
        .sort(),
    );
    for (const props of routes.values()) expect(props.AuthorizationType).toBe('NONE');
    expect(resourcesOfType(webhooks.json, 'AWS::ApiGatewayV2::Authorizer')).toEqual([]);
    const warnings = webhooks.stack.node
      .findAll()
      .flatMap((c) => c.node.metadata)
      .filter((m) => m.type === 'aws:cdk:warning')
      .map((m) => String(m.data));
    expect(warnings.some((w) => w.includes(NO_JWT_ISSUER_WARNING) && w.includes('POST /conversations'))).toBe(
      true,
    );
  });

  it('throttles the stage as configured', () => {
    const stage = resourcesOfType(webhooks.json, 'AWS::ApiGatewayV2::Stage')[0] as string;
    expect(webhooks.json.Resources[stage]?.Properties?.DefaultRouteSettings).toEqual({
      ThrottlingRateLimit: 5,
      ThrottlingBurstLimit: 10,
    });
  });

  it.each([
    [
      'the default (10 req/s, burst 20)',
      () => api.json,
      { ThrottlingRateLimit: 10, ThrottlingBurstLimit: 20 },
    ],
    ['cld:webhookThrottle', () => webhooks.json, { ThrottlingRateLimit: 3, ThrottlingBurstLimit: 6 }],
  ])('gives each webhook route its own throttle from %s, and the console and conversation routes none', (_label, json, throttle) => {
    const template = json();
    const stage = resourcesOfType(template, 'AWS::ApiGatewayV2::Stage')[0] as string;
    const settings = template.Resources[stage]?.Properties?.RouteSettings as Record<string, unknown>;
    const webhookKeys = API_ROUTES.filter((r) => r.function !== 'http').map((r) => `${r.method} ${r.path}`);
    expect(webhookKeys).toEqual([
      'POST /slack/events',
      'POST /slack/commands',
      'POST /slack/interactions',
      'POST /teams/messages',
    ]);
    expect(Object.keys(settings).sort()).toEqual([...webhookKeys].sort());
    for (const key of webhookKeys) expect(settings[key], key).toEqual(throttle);
    // The stage waits for the routes its settings name (API Gateway refuses an unknown route key).
    const routeIds = new Map(
      resourcesOfType(template, 'AWS::ApiGatewayV2::Route').map(
        (id) => [String(template.Resources[id]?.Properties?.RouteKey), id] as const,
      ),
    );
    const dependsOn = [template.Resources[stage]?.DependsOn ?? []].flat();
    for (const key of webhookKeys) expect(dependsOn, key).toContain(routeIds.get(key));
  });
});

describe('channel secrets', () => {
  it('creates each secret the config does not name, without a physical name, outputting its ARN', () => {
    const secrets = resourcesOfType(api.json, 'AWS::SecretsManager::Secret');
    expect(secrets).toHaveLength(CHANNEL_SECRET_NAMES.length);
    for (const id of secrets) {
      const secret = api.json.Resources[id];
      expect(secret?.Properties?.Name).toBeUndefined();
      expect(secret?.Properties?.GenerateSecretString).toEqual({});
      expect(secret?.DeletionPolicy).toBe('Delete');
    }
    for (const name of CHANNEL_SECRET_NAMES) {
      const output = `${name[0]?.toUpperCase()}${name.slice(1)}SecretArn`;
      const id = logicalId(
        api.json,
        'AWS::SecretsManager::Secret',
        `${name[0]?.toUpperCase()}${name.slice(1)}`,
      );
      expect(api.json.Outputs?.[output]?.Value).toEqual({ Ref: id });
    }
  });

  it('uses an existing secret by its complete ARN: no secret created, the grant and variable name that ARN', () => {
    const secrets = resourcesOfType(webhooks.json, 'AWS::SecretsManager::Secret');
    expect(secrets).toHaveLength(CHANNEL_SECRET_NAMES.length - 1);
    expect(secrets.some((id) => id.startsWith('SlackBotToken'))).toBe(false);
    const statements = roleStatements(webhooks.json, roleOf(webhooks.json, 'reply'));
    const reads = statements.filter((s) => [s.Action].flat().includes('secretsmanager:GetSecretValue'));
    // The existing bot token and the created Teams webhook secret (reply posts to both channels).
    const teamsWebhook = logicalId(webhooks.json, 'AWS::SecretsManager::Secret', 'TeamsWebhookUrl');
    expect(reads.flatMap((s) => [s.Resource].flat().map(resolveValue)).sort()).toEqual(
      [EXISTING_BOT_TOKEN, `<${teamsWebhook}>`].sort(),
    );
    expect(envOf(webhooks.json, 'reply').CLD_SLACK_BOT_TOKEN_ARN).toBe(EXISTING_BOT_TOKEN);
    expect(webhooks.json.Outputs?.SlackBotTokenSecretArn?.Value).toBe(EXISTING_BOT_TOKEN);
    for (const name of ['slack', 'teams', 'http']) {
      expect(
        isAllowed(
          roleStatements(webhooks.json, roleOf(webhooks.json, name)),
          'secretsmanager:GetSecretValue',
          EXISTING_BOT_TOKEN,
        ),
      ).toBe(false);
    }
  });

  it('acknowledges cdk-nag SMG4 (no rotation) on the created secrets only', () => {
    const acknowledged = webhooks.stack.node
      .findAll()
      .filter((c) =>
        c.node.metadata.some(
          (m) =>
            m.type === 'aws:cdk:acknowledged-rules' && 'Annotation::AwsSolutions-SMG4' in (m.data as object),
        ),
      )
      .map((c) => c.node.id)
      .sort();
    expect(acknowledged).toEqual(['SlackSigningSecret', 'TeamsSecurityToken', 'TeamsWebhookUrl']);
  });
});

describe('channel functions', () => {
  const known = new Set([
    ...Object.keys(ChannelEnvSchema.unwrap().shape),
    ...Object.keys(EnvSchema.shape),
    'POWERTOOLS_SERVICE_NAME',
    'NODE_OPTIONS',
  ]);

  it.each([
    'reply',
    'http',
    'slack',
    'teams',
  ])('%s: every variable the stack sets is one the code reads', (name) => {
    const env = envOf(api.json, name);
    expect(Object.keys(env).filter((variable) => !known.has(variable))).toEqual([]);
    expect(env.CLD_FUNCTION).toBe(name);
    // Parses as the function parses it at a cold start (tokens stand in for the ARNs).
    const resolved = Object.fromEntries(
      Object.entries(env).map(([variable, value]) => [variable, resolveValue(value)]),
    );
    expect(ChannelEnvSchema.safeParse(resolved).success).toBe(true);
    expect(EnvSchema.safeParse(resolved).success).toBe(true);
  });

  it.each([
    ['reply', false],
    ['http', true],
    ['slack', false],
    ['teams', false],
  ] as const)('%s: never searches, so it is denied the chunk index; reads documents: %s', (name, documents) => {
    const statements = roleStatements(api.json, roleOf(api.json, name));
    const bucket = `<${logicalId(api.json, 'AWS::S3::Bucket', 'ResourcesBucket')}.Arn>`;
    expect(isAllowed(statements, 's3:GetObject', `${bucket}/indexes/chunks.1.json`)).toBe(false);
    // The HTTP API opens what an answer cites (GET /resources/<urn>: policy rule user-read-corpora).
    for (const key of [
      'cld/doc.Document.0123456789abcdef_Document.json',
      'cld/doc.Document.0123456789abcdef/doc.Chunk.0123456789abcdef_Document-Chunk.json',
    ]) {
      expect(isAllowed(statements, 's3:GetObject', `${bucket}/${key}`), key).toBe(documents);
    }
    expect(isAllowed(statements, 's3:ListBucket', bucket, { 's3:prefix': 'indexes/chunks.' })).toBe(false);
    expect(isAllowed(statements, 's3:ListBucket', bucket, { 's3:prefix': 'cld/doc.' })).toBe(false);
    // Still reads its conversations, and a missing key is a 404 (ListBucket without a prefix).
    const message =
      'cld/common.Conversation.0123456789abcdef/common.Message.0123456789abcdef_Conversation-Message.json';
    expect(isAllowed(statements, 's3:GetObject', `${bucket}/${message}`)).toBe(true);
    expect(isAllowed(statements, 's3:ListBucket', bucket)).toBe(true);
  });

  it('gives the reply function a timeout within its delivery lock and above its worst-case delivery', () => {
    const worstCaseMs = 2 * (1 + SLACK_CLIENT_RETRIES) * REPLY_DELIVERY_TIMEOUT_MS;
    expect(REPLY_TIMEOUT_SECONDS * 1000).toBeGreaterThan(worstCaseMs);
    expect(REPLY_TIMEOUT_SECONDS * 1000).toBeLessThanOrEqual(DELIVERY_LOCK_MS);
    const props = api.json.Resources[functionId(api.json, 'reply')]?.Properties as Record<string, unknown>;
    expect(props.Timeout).toBe(REPLY_TIMEOUT_SECONDS);
    expect(envOf(api.json, 'reply').CLD_DELIVERY_TIMEOUT_MS).toBe(String(REPLY_DELIVERY_TIMEOUT_MS));
  });

  it('lets a deployment cap the unauthenticated webhook functions, not the HTTP API function; reserves nothing by default', () => {
    // Opt-in (cld:reservedConcurrency); the prod synth of test/infra/stack.test.ts reserves some.
    expect(FUNCTIONS.slack.boundedConcurrency && FUNCTIONS.teams.boundedConcurrency).toBe(true);
    expect(FUNCTIONS.http.boundedConcurrency || FUNCTIONS.reply.boundedConcurrency).toBe(false);
    for (const name of ['slack', 'teams', 'http', 'reply']) {
      expect(
        api.json.Resources[functionId(api.json, name)]?.Properties?.ReservedConcurrentExecutions,
        name,
      ).toBeUndefined();
    }
  });
});

describe('the reply function and Powertools idempotency on the projections table', () => {
  let dynamo: DynaliteHandle;
  const calls: { operation: string; input: Record<string, unknown> }[] = [];

  beforeAll(async () => {
    dynamo = await startDynalite('cld-projections-grants');
    // Record every command the persistence layer sends through the real SDK client.
    dynamo.client.middlewareStack.add(
      (next, context) => async (args) => {
        calls.push({
          operation: String(context.commandName).replace(/Command$/, ''),
          input: args.input as Record<string, unknown>,
        });
        return next(args);
      },
      { step: 'initialize', name: 'recordCalls' },
    );
  });

  afterAll(async () => {
    await dynamo?.stop();
  });

  it('is granted every call the persistence layer makes (delivery, duplicate, concurrent duplicate, failure), in its partition', async () => {
    const once = deliveryGuard(
      await dynamoDBIdempotencyLayer({ client: dynamo.client, tableName: dynamo.tableName }),
    );
    await once('cld:common.Conversation.aa/common.Message.bb', async () => ({ ts: '1.1' }));
    await once('cld:common.Conversation.aa/common.Message.bb', async () => ({ ts: 'never' }));
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const first = once('cld:common.Conversation.aa/common.Message.cc', async () => {
      await held;
      return { ts: '2.2' };
    });
    const duplicate = once('cld:common.Conversation.aa/common.Message.cc', async () => ({ ts: 'never' }));
    setTimeout(release, 150);
    expect(await Promise.all([first, duplicate])).toEqual([{ ts: '2.2' }, { ts: '2.2' }]);
    await expect(
      once('cld:common.Conversation.aa/common.Message.dd', async () => {
        throw new Error('Slack answered 500');
      }),
    ).rejects.toThrow('Slack answered 500');

    const operations = new Set(calls.map((call) => call.operation));
    // Exactly the granted actions: each is needed (GetItem by the duplicate: dynalite, like DynamoDB
    // without ReturnValuesOnConditionCheckFailure, returns no item with the failed condition).
    expect(operations).toEqual(new Set(IDEMPOTENCY_ACTIONS));
    for (const call of calls.filter((c) => c.operation === 'PutItem'))
      expect(call.input.ConditionExpression).toEqual(expect.any(String));

    const statements = roleStatements(api.json, roleOf(api.json, 'reply'));
    const tableArn = `<${logicalId(api.json, 'AWS::DynamoDB::GlobalTable', 'ProjectionsTable')}.Arn>`;
    for (const call of calls) {
      const item = (call.input.Key ?? call.input.Item) as { pk: { S: string } };
      const allowed = isAllowed(statements, `dynamodb:${call.operation}`, tableArn, {
        'dynamodb:LeadingKeys': item.pk.S,
      });
      expect(allowed, `${call.operation} pk=${item.pk.S}`).toBe(true);
    }
  });
});
