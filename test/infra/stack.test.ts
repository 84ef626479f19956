import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { beforeAll, describe, expect, it } from 'vitest';
import { policyBundle } from '../../infra/lib/bundling.js';
import { CatalogSeed } from '../../infra/lib/catalog-seed.js';
import {
  catalogKeys,
  FUNCTIONS,
  type FunctionSpec,
  KEYS,
  LIST_PREFIXES,
  SWEEP_RATE_MINUTES,
} from '../../infra/lib/functions.js';
import { MAX_RULE_COMPLEXITY, patternComplexity } from '../../infra/lib/rule-complexity.js';
import { CHANNEL_SECRET_NAMES, type ChannelSecretName } from '../../infra/lib/secrets.js';
import { rulesOfRoute } from '../../infra/lib/stack.js';
import { ASYNC_EVENT_AGE_ALARM_SECONDS, POLICY_BUNDLE_WARNING } from '../../infra/lib/step-function.js';
import {
  CATALOG_FILES,
  type CatalogFiles,
  type CatalogObject,
  catalogObjects,
} from '../../shared/catalog/catalog.js';
import { ConfigError } from '../../shared/errors.js';
import type { EventPattern } from '../../shared/events/pattern.js';
import { routingTable } from '../../shared/events/routing.js';
import { IDEMPOTENCY_PK } from '../../shared/projections/idempotency.js';
import { OPEN_PARTITION } from '../../shared/projections/open-conversations.js';
import { parseResource } from '../../shared/resources/schemas.js';
import { functionUses } from '../../shared/runtime/function-uses.js';
import { keyOf } from '../../shared/urn.js';
import {
  API_CONTEXT,
  cdkJsonContext,
  isAllowed,
  logicalId,
  replaceDeep,
  resolveValue,
  resourcesOfType,
  roleStatements,
  type Statement,
  type Synthesized,
  synthesize,
  type TemplateJson,
} from './helpers.js';

/**
 * The synthesized template (dev stage, cdk.json's context plus a JWT issuer and a CORS origin as
 * a deployment would give them, bundling skipped) against the routing table, the security
 * properties of issue 3 and cdk-nag; one prod synth for retention. The HTTP API, the channel
 * secrets and the webhook functions' permissions are in test/infra/channels.test.ts.
 */

const NAMES = Object.keys(FUNCTIONS) as (keyof typeof FUNCTIONS)[];
const EVENT_NAMES = NAMES.filter((name) => FUNCTIONS[name].trigger === 'eventbridge');
const API_NAMES = NAMES.filter((name) => FUNCTIONS[name].trigger === 'http-api');
const MODEL_ID = String(cdkJsonContext()['cld:modelId']);
const BUCKET_TOKEN = '__RESOURCES_BUCKET__';
/**
 * The functions inside the system's own Lambda → S3 → Lambda (and → SQS → Lambda) chains, stated
 * here: a conversation's chain runs longer than Lambda's recursion limit (about 16 hops), and the
 * system bounds it itself (depth, turns, rounds, budgets). API Gateway's functions start chains.
 */
const RECURSIVE_CHAINS: readonly string[] = ['plan', 'assistant', 'tool', 'reply', 'deadletter'];

let dev: Synthesized;
let bucketId: string;
let tableId: string;

/** Logical ids of a function's resources by the construct naming of StepFunction. */
function ids(name: string) {
  const prefix = `${name[0]?.toUpperCase()}${name.slice(1)}Step`;
  return {
    fn: logicalId(dev.json, 'AWS::Lambda::Function', `${prefix}Function`),
    role: logicalId(dev.json, 'AWS::IAM::Role', `${prefix}Role`),
    logs: logicalId(dev.json, 'AWS::Logs::LogGroup', `${prefix}Logs`),
  };
}

/** The dead-letter queue of an `eventbridge` function. */
function dlqOf(name: string): string {
  return logicalId(
    dev.json,
    'AWS::SQS::Queue',
    `${name[0]?.toUpperCase()}${name.slice(1)}StepDeadLetterQueue`,
  );
}

function statementsOf(name: string): Statement[] {
  return roleStatements(dev.json, ids(name).role);
}

function objectArn(key: string): string {
  return `<${bucketId}.Arn>/${key}`;
}

/**
 * A synth takes about 10 s of CPU (cdk-nag's two packs included); on a 2-core machine at load 20
 * it took 57 s of wall time, so the hooks that synthesize get 3 minutes.
 */
const SYNTH_TIMEOUT_MS = 180_000;

beforeAll(() => {
  dev = synthesize({ context: API_CONTEXT });
  bucketId = logicalId(dev.json, 'AWS::S3::Bucket', 'ResourcesBucket');
  tableId = logicalId(dev.json, 'AWS::DynamoDB::GlobalTable', 'ProjectionsTable');
}, SYNTH_TIMEOUT_MS);

describe('EventBridge rules from the routing table', () => {
  const routes = routingTable(BUCKET_TOKEN);

  const parts = routes.flatMap((route) => rulesOfRoute(route).map((part) => [part.id, route, part] as const));

  it('has the rules of each route (one, or one per shape above the complexity limit) and one per scheduled function, on the default bus', () => {
    const rules = resourcesOfType(dev.json, 'AWS::Events::Rule');
    const scheduled = NAMES.filter((name) => (FUNCTIONS[name] as FunctionSpec).schedule);
    expect(scheduled).toEqual(['sweeper']);
    expect(parts.length).toBeGreaterThan(routes.length);
    expect(rules).toHaveLength(parts.length + scheduled.length);
    for (const id of rules) expect(dev.json.Resources[id]?.Properties?.EventBusName).toBeUndefined();
  });

  it.each(
    parts,
  )('rule %s has its part of the route pattern and targets its function with retries, event age and the DLQ', (id, route, part) => {
    const ruleId = logicalId(dev.json, 'AWS::Events::Rule', `${id}Rule`);
    const rule = dev.json.Resources[ruleId]?.Properties as Record<string, unknown>;
    const expected = replaceDeep(part.pattern, BUCKET_TOKEN, { Ref: bucketId });
    expect(rule.EventPattern).toEqual(expected);
    expect(rule.State).toBe('ENABLED');
    const target = ids(route.target);
    expect(rule.Targets).toEqual([
      {
        Id: 'Target0',
        Arn: { 'Fn::GetAtt': [target.fn, 'Arn'] },
        RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 3600 },
        DeadLetterConfig: { Arn: { 'Fn::GetAtt': [dlqOf(route.target), 'Arn'] } },
      },
    ]);
    dev.template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      FunctionName: { 'Fn::GetAtt': [target.fn, 'Arn'] },
      Principal: 'events.amazonaws.com',
      SourceArn: { 'Fn::GetAtt': [ruleId, 'Arn'] },
    });
  });

  it('fails synth with a clear error when a route targets a function the table lacks', () => {
    const orphan = (bucket: string) => [
      { ...(routingTable(bucket)[0] as (typeof routes)[number]), id: 'Orphan', target: 'missing' as never },
    ];
    const synth = () => synthesize({ stack: { routes: orphan } });
    expect(synth).toThrow(ConfigError);
    expect(synth).toThrow(
      /route Orphan targets "missing", but the function table has no function named "missing"/,
    );
  });

  it.each(API_NAMES)('fails synth when a route targets %s, which API Gateway invokes', (name) => {
    const wrong = (bucket: string) => [
      { ...(routingTable(bucket)[0] as (typeof routes)[number]), id: 'Wrong', target: name as never },
    ];
    expect(() => synthesize({ stack: { routes: wrong } })).toThrow(
      new RegExp(`route Wrong targets "${name}", a function with trigger "http-api"`),
    );
  });
});

describe('the sweeper (issue 12)', () => {
  it('runs every 5 minutes from a scheduled rule, with retries, event age and its DLQ', () => {
    const ruleId = logicalId(dev.json, 'AWS::Events::Rule', 'SweeperScheduleRule');
    const rule = dev.json.Resources[ruleId]?.Properties as Record<string, unknown>;
    expect(rule.ScheduleExpression).toBe(`rate(${SWEEP_RATE_MINUTES} minutes)`);
    expect(rule.EventPattern).toBeUndefined();
    expect(rule.Targets).toEqual([
      {
        Id: 'Target0',
        Arn: { 'Fn::GetAtt': [ids('sweeper').fn, 'Arn'] },
        RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 3600 },
        DeadLetterConfig: { Arn: { 'Fn::GetAtt': [dlqOf('sweeper'), 'Arn'] } },
      },
    ]);
  });

  it('may put events of source cld on the default bus only, with CLD_EVENT_BUS, and no other function may', () => {
    const bus = 'arn:aws:events:eu-west-1:111122223333:event-bus/default';
    for (const name of NAMES) {
      const statements = statementsOf(name);
      const expected = name === 'sweeper';
      expect(isAllowed(statements, 'events:PutEvents', bus, { 'events:source': 'cld' }), name).toBe(expected);
      const props = dev.json.Resources[ids(name).fn]?.Properties as Record<string, unknown>;
      const env = (props.Environment as { Variables: Record<string, unknown> }).Variables;
      expect(env.CLD_EVENT_BUS, name).toBe(expected ? 'default' : undefined);
    }
    const sweeper = statementsOf('sweeper');
    // Not as S3, not on another bus, nothing but PutEvents.
    expect(isAllowed(sweeper, 'events:PutEvents', bus, { 'events:source': 'aws.s3' })).toBe(false);
    expect(
      isAllowed(sweeper, 'events:PutEvents', 'arn:aws:events:eu-west-1:111122223333:event-bus/other', {
        'events:source': 'cld',
      }),
    ).toBe(false);
    expect(isAllowed(sweeper, 'events:PutRule', bus)).toBe(false);
  });

  it('lets the task-tree steps, the HTTP API and the sweeper touch the open-conversations partition, and nothing else', () => {
    const tableArn = `<${tableId}.Arn>`;
    const open = { 'dynamodb:LeadingKeys': OPEN_PARTITION };
    for (const name of NAMES) {
      // The HTTP API opens a conversation there when it stores a user Message.
      const expected = name === 'plan' || name === 'assistant' || name === 'sweeper' || name === 'http';
      expect(isAllowed(statementsOf(name), 'dynamodb:UpdateItem', tableArn, open), name).toBe(expected);
    }
    expect(isAllowed(statementsOf('sweeper'), 'dynamodb:Query', tableArn, open)).toBe(true);
    expect(isAllowed(statementsOf('sweeper'), 'dynamodb:DeleteItem', tableArn, open)).toBe(true);
    expect(isAllowed(statementsOf('plan'), 'dynamodb:DeleteItem', tableArn, open)).toBe(false);
    expect(isAllowed(statementsOf('sweeper'), 'dynamodb:Scan', tableArn, open)).toBe(false);
  });
});

describe('resources bucket', () => {
  it('is versioned, SSE-S3 encrypted, private, logged and sends events to EventBridge', () => {
    const bucket = dev.json.Resources[bucketId]?.Properties as Record<string, unknown>;
    expect(bucket.VersioningConfiguration).toEqual({ Status: 'Enabled' });
    expect(bucket.BucketEncryption).toEqual({
      ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
    });
    expect(bucket.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    const logsId = logicalId(dev.json, 'AWS::S3::Bucket', 'AccessLogsBucket');
    expect(bucket.LoggingConfiguration).toEqual({
      DestinationBucketName: { Ref: logsId },
      LogFilePrefix: 'resources/',
    });
    dev.template.hasResourceProperties('Custom::S3BucketNotifications', {
      BucketName: { Ref: bucketId },
      NotificationConfiguration: { EventBridgeConfiguration: {} },
    });
  });

  it.each(['ResourcesBucket', 'AccessLogsBucket'])('%s denies requests without TLS', (prefix) => {
    const id = logicalId(dev.json, 'AWS::S3::Bucket', prefix);
    dev.template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: id },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 's3:*',
            Principal: { AWS: '*' },
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ]),
      },
    });
  });

  it('is retained with its objects in every stage by default (destroying data is an opt-in)', () => {
    expect(dev.config.stage).toBe('dev');
    expect(dev.json.Resources[bucketId]?.DeletionPolicy).toBe('Retain');
    expect(dev.json.Resources[tableId]?.DeletionPolicy).toBe('Retain');
    const logsBucket = logicalId(dev.json, 'AWS::S3::Bucket', 'AccessLogsBucket');
    expect(dev.json.Resources[logsBucket]?.DeletionPolicy).toBe('Retain');
    expect(resourcesOfType(dev.json, 'Custom::S3AutoDeleteObjects')).toEqual([]);
  });
});

describe('projections table', () => {
  it('has pk/sk strings, TTL on expiration, on-demand billing, PITR and KMS encryption', () => {
    const table = dev.json.Resources[tableId]?.Properties as Record<string, unknown>;
    expect(table.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    expect(table.AttributeDefinitions).toEqual([
      { AttributeName: 'pk', AttributeType: 'S' },
      { AttributeName: 'sk', AttributeType: 'S' },
    ]);
    expect(table.TimeToLiveSpecification).toEqual({ AttributeName: 'expiration', Enabled: true });
    expect(table.BillingMode).toBe('PAY_PER_REQUEST');
    expect(table.SSESpecification).toEqual({ SSEEnabled: true, SSEType: 'KMS' });
    const replicas = table.Replicas as { PointInTimeRecoverySpecification?: unknown }[];
    expect(replicas).toHaveLength(1);
    expect(replicas[0]?.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
  });
});

describe.each(NAMES)('function %s', (name) => {
  it('is Node.js 22 on ARM64 with X-Ray, its own log group and the env contract; source maps only when opted in', () => {
    const { fn, logs } = ids(name);
    const props = dev.json.Resources[fn]?.Properties as Record<string, unknown>;
    expect(props.Runtime).toBe('nodejs22.x');
    expect(props.Architectures).toEqual(['arm64']);
    expect(props.Handler).toBe('index.handler');
    expect(props.TracingConfig).toEqual({ Mode: 'Active' });
    expect(props.MemorySize).toBe(FUNCTIONS[name].memoryMb);
    expect(props.Timeout).toBe(FUNCTIONS[name].timeoutSeconds);
    expect(props.LoggingConfig).toEqual({ LogGroup: { Ref: logs } });
    expect(dev.json.Resources[logs]?.Properties?.RetentionInDays).toBe(14);
    const env = (props.Environment as { Variables: Record<string, unknown> }).Variables;
    expect(env).toMatchObject({
      CLD_FUNCTION: name,
      CLD_BUCKET: { Ref: bucketId },
      CLD_POLICY_DIR: '/var/task/policies',
      POWERTOOLS_SERVICE_NAME: 'cld',
      POWERTOOLS_LOG_LEVEL: 'INFO',
    });
    // Node.js would read the source map at every cold start (cld:sourceMaps opts in).
    expect(env.NODE_OPTIONS).toBeUndefined();
    expect(env.CLD_MODEL_ID).toBe(FUNCTIONS[name].model ? MODEL_ID : undefined);
    expect(env.CLD_TABLE).toEqual(FUNCTIONS[name].table.length > 0 ? { Ref: tableId } : undefined);
    expect(env.CLD_LIMITS).toBeUndefined();
    const spec: FunctionSpec = FUNCTIONS[name];
    expect(env).toMatchObject(spec.environment ?? {});
  });

  it('reserves no concurrency by default (opt-in: new accounts cannot spare it)', () => {
    const { fn } = ids(name);
    expect(dev.json.Resources[fn]?.Properties).toBeDefined();
    expect(dev.json.Resources[fn]?.Properties?.ReservedConcurrentExecutions).toBeUndefined();
  });

  it('lets its recursive chains run (RecursiveLoop Allow) only if it continues conversations, with an alarm', () => {
    const { fn } = ids(name);
    const chained = RECURSIVE_CHAINS.includes(name);
    expect(FUNCTIONS[name].allowRecursiveLoop).toBe(chained);
    expect(dev.json.Resources[fn]?.Properties?.RecursiveLoop).toBe(chained ? 'Allow' : 'Terminate');
    const alarms = resourcesOfType(dev.json, 'AWS::CloudWatch::Alarm').filter((id) => {
      const props = dev.json.Resources[id]?.Properties as Record<string, unknown>;
      return (
        props.MetricName === 'RecursiveInvocationsDropped' &&
        JSON.stringify(props.Dimensions) === JSON.stringify([{ Name: 'FunctionName', Value: { Ref: fn } }])
      );
    });
    expect(alarms).toHaveLength(chained ? 1 : 0);
    if (chained) {
      expect(dev.json.Resources[alarms[0] as string]?.Properties).toMatchObject({
        Namespace: 'AWS/Lambda',
        Statistic: 'Sum',
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
      });
    }
  });

  it('raises an alarm on every letter sent to its DLQ (if it has one) and on any function error', () => {
    const { fn } = ids(name);
    if (FUNCTIONS[name].trigger === 'eventbridge') {
      // Sent, not visible: the dead-letter function may drain the queue before a sample sees it.
      dev.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/SQS',
        MetricName: 'NumberOfMessagesSent',
        Statistic: 'Sum',
        Period: 60,
        Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [dlqOf(name), 'QueueName'] } }],
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        TreatMissingData: 'notBreaching',
      });
    }
    dev.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: fn } }],
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('warns when, and only when, it is deployed without its compiled OPA policy (policies/dist is committed)', () => {
    const warnings = dev.stack.node
      .findAll()
      .flatMap((c) => c.node.metadata)
      .filter((entry) => entry.type === 'aws:cdk:warning')
      .map((entry) => String(entry.data));
    expect(
      warnings.some((w) => w.includes(`policies/dist/${name}.wasm`) && w.includes(POLICY_BUNDLE_WARNING)),
    ).toBe(policyBundle(name).wasm === undefined);
  });
});

describe.each(EVENT_NAMES)('EventBridge target %s', (name) => {
  it('sends failed asynchronous invocations to its queue (on-failure destination) after bounded retries', () => {
    const { fn, role } = ids(name);
    const props = dev.json.Resources[fn]?.Properties as Record<string, unknown>;
    // The destination's invocation record carries the attempts and the error; a DLQ's would not.
    expect(props.DeadLetterConfig).toBeUndefined();
    dev.template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: fn },
      Qualifier: '$LATEST',
      MaximumRetryAttempts: 2,
      MaximumEventAgeInSeconds: 3600,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [dlqOf(name), 'Arn'] } } },
    });
    const statements = roleStatements(dev.json, role);
    expect(isAllowed(statements, 'sqs:SendMessage', `<${dlqOf(name)}.Arn>`)).toBe(true);
    for (const other of EVENT_NAMES.filter((n) => n !== name))
      expect(isAllowed(statements, 'sqs:SendMessage', `<${dlqOf(other)}.Arn>`), other).toBe(false);
  });

  it('has an encrypted, TLS-only dead-letter queue that EventBridge may send to from its rules only', () => {
    const dlq = dlqOf(name);
    const queue = dev.json.Resources[dlq]?.Properties as Record<string, unknown>;
    expect(queue.SqsManagedSseEnabled).toBe(true);
    expect(queue.MessageRetentionPeriod).toBe(14 * 24 * 3600);
    const policies = resourcesOfType(dev.json, 'AWS::SQS::QueuePolicy')
      .map(
        (id) =>
          dev.json.Resources[id]?.Properties as {
            Queues: unknown[];
            PolicyDocument: { Statement: Statement[] };
          },
      )
      .filter((policy) => policy.Queues.some((queueRef) => (queueRef as { Ref?: string }).Ref === dlq));
    const statements = policies.flatMap((policy) => policy.PolicyDocument.Statement);
    expect(statements).toContainEqual(
      expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
    );
    const fromEvents = statements.filter((s) => s.Effect === 'Allow');
    expect(fromEvents.length).toBeGreaterThan(0);
    for (const statement of fromEvents) {
      expect(statement).toMatchObject({
        Action: 'sqs:SendMessage',
        Principal: { Service: 'events.amazonaws.com' },
        Condition: { ArnEquals: { 'aws:SourceArn': expect.anything() } },
      });
    }
  });
});

describe.each(API_NAMES)('HTTP API integration %s', (name) => {
  it('is invoked synchronously by API Gateway: no dead-letter queue, no asynchronous-invocation settings', () => {
    const { fn } = ids(name);
    const prefix = `${name[0]?.toUpperCase()}${name.slice(1)}Step`;
    expect(dev.json.Resources[fn]?.Properties?.DeadLetterConfig).toBeUndefined();
    expect(resourcesOfType(dev.json, 'AWS::SQS::Queue').filter((id) => id.startsWith(prefix))).toEqual([]);
    const invokeConfigs = resourcesOfType(dev.json, 'AWS::Lambda::EventInvokeConfig').filter(
      (id) => (dev.json.Resources[id]?.Properties?.FunctionName as { Ref?: string }).Ref === fn,
    );
    expect(invokeConfigs).toEqual([]);
  });
});

describe('least privilege', () => {
  const conversationKey =
    'cld/common.Conversation.0123456789abcdef/common.Message.0123456789abcdef_Conversation-Message.json';
  const create = { 's3:if-none-match': '*' };

  /**
   * What each function may do with conversation resources, documents and the chunk index, stated
   * here (not derived from the table). `search`: opens the chunk index (`indexes/*`) — only the
   * tool step runs the `search` and `read` tools; the assistant cites the chunk URNs tool results
   * returned without reading them. `documents`: reads documents and chunks (`cld/doc.*`) — the
   * tool step (the `read` tool) and the HTTP API (`GET /resources/<urn>` of a citation).
   */
  const CONVERSATIONS: Record<
    (typeof NAMES)[number],
    { create: boolean; list: boolean; search: boolean; documents: boolean }
  > = {
    plan: { create: true, list: true, search: false, documents: false },
    assistant: { create: true, list: true, search: false, documents: false },
    tool: { create: true, list: true, search: true, documents: true },
    // Delivers replies: reads the answer and the task subtree, writes no resource.
    reply: { create: false, list: true, search: false, documents: false },
    // Starts conversations, lists one for the status view; GET /resources opens a cited Document
    // or Chunk (in AWS a missing grant was a 500 for every citation).
    http: { create: true, list: true, search: false, documents: true },
    // Fails a task (its output), a request (Plan, answer); reads the Plan and root outputs.
    deadletter: { create: true, list: true, search: false, documents: false },
    // Store the Conversation and user Message (or a decision); Slack never lists a conversation
    // (a button names its request by URN), Teams lists one to find the request a reply
    // `approve <id>` names by its public id.
    slack: { create: true, list: false, search: false, documents: false },
    teams: { create: true, list: true, search: false, documents: false },
    // Reads a stalled conversation, writes the answer of a message it gives up on.
    sweeper: { create: true, list: true, search: false, documents: false },
  };

  it('states the expectations of every function of the table', () => {
    expect(Object.keys(CONVERSATIONS).sort()).toEqual([...NAMES].sort());
  });

  it.each(
    NAMES,
  )('%s creates conversation resources only if it must, and then only with If-None-Match', (name) => {
    const statements = statementsOf(name);
    expect(isAllowed(statements, 's3:PutObject', objectArn(conversationKey), create)).toBe(
      CONVERSATIONS[name].create,
    );
    const creates: readonly string[] = FUNCTIONS[name].storage.create;
    expect(creates.includes(KEYS.conversations)).toBe(CONVERSATIONS[name].create);
    expect(isAllowed(statements, 's3:PutObject', objectArn(conversationKey))).toBe(false);
  });

  it.each(NAMES)('%s cannot write outside conversations, not even the catalog (seeded at deploy)', (name) => {
    const statements = statementsOf(name);
    for (const key of [
      'cld/doc.Document.0123456789abcdef_Document.json',
      'indexes/chunks.2.json',
      'cld/common.Assistant.ffffffffffffffff_Assistant.json',
      'cld/common.Tool.ffffffffffffffff_Tool.json',
      'other/cld/common.Conversation.0123456789abcdef_Conversation.json',
      ...catalogKeys(),
    ]) {
      expect(isAllowed(statements, 's3:PutObject', objectArn(key), create), key).toBe(false);
    }
    expect(catalogKeys().length).toBeGreaterThan(1);
  });

  it.each(
    NAMES,
  )('%s reads conversations and the catalog; the index only if it runs the tools, documents if it serves them', (name) => {
    const statements = statementsOf(name);
    for (const key of [conversationKey, 'cld/common.Assistant.0123456789abcdef_Assistant.json']) {
      expect(isAllowed(statements, 's3:GetObject', objectArn(key)), key).toBe(true);
    }
    expect(isAllowed(statements, 's3:GetObject', objectArn('private/notes.json'))).toBe(false);
    expect(isAllowed(statements, 's3:GetObject', objectArn('indexes/chunks.1.json'))).toBe(
      CONVERSATIONS[name].search,
    );
    const chunk = 'cld/doc.Document.0123456789abcdef/doc.Chunk.0123456789abcdef_Document-Chunk.json';
    for (const key of ['cld/doc.Document.0123456789abcdef_Document.json', chunk]) {
      expect(isAllowed(statements, 's3:GetObject', objectArn(key)), key).toBe(CONVERSATIONS[name].documents);
    }
  });

  it('grants the index and documents to exactly the functions that compose the tools (FUNCTION_USES)', () => {
    for (const name of NAMES) {
      expect(functionUses(name).tools, name).toBe(CONVERSATIONS[name].search);
    }
  });

  it.each(
    NAMES,
  )('%s lists the index prefix only if it runs the tools, conversation prefixes only if it reads subtrees', (name) => {
    const statements = statementsOf(name);
    const bucketArn = `<${bucketId}.Arn>`;
    expect(
      isAllowed(statements, 's3:ListBucket', bucketArn, { 's3:prefix': 'cld/common.Conversation.0a/' }),
    ).toBe(CONVERSATIONS[name].list);
    const lists: readonly string[] = FUNCTIONS[name].storage.list;
    expect(lists.includes(LIST_PREFIXES.conversations)).toBe(CONVERSATIONS[name].list);
    expect(isAllowed(statements, 's3:ListBucket', bucketArn, { 's3:prefix': 'indexes/chunks.' })).toBe(
      CONVERSATIONS[name].search,
    );
    expect(isAllowed(statements, 's3:ListBucket', bucketArn, { 's3:prefix': 'cld/doc.' })).toBe(false);
    expect(isAllowed(statements, 's3:ListBucket', bucketArn, { 's3:prefix': 'private/' })).toBe(false);
  });

  it.each(
    NAMES,
  )('%s may check a missing key (ListBucket without a prefix), so S3 answers 404, not 403', (name) => {
    expect(isAllowed(statementsOf(name), 's3:ListBucket', `<${bucketId}.Arn>`)).toBe(true);
  });

  it.each(NAMES)('%s has no delete, no wildcard action and no * resource except X-Ray', (name) => {
    const statements = statementsOf(name);
    expect(isAllowed(statements, 's3:DeleteObject', objectArn(conversationKey))).toBe(false);
    for (const statement of statements) {
      const actions = [statement.Action].flat();
      for (const action of actions) expect(action).not.toMatch(/\*/);
      const resources = [statement.Resource].flat().map(resolveValue);
      if (resources.includes('*')) expect(actions.every((a) => a.startsWith('xray:'))).toBe(true);
      expect(statement.Effect).toBe('Allow');
    }
  });

  /** Table actions and the partitions (`pk`) they are limited to, stated per function. */
  const TABLE: Record<(typeof NAMES)[number], { actions: string[]; pk?: string }> = {
    plan: { actions: ['GetItem', 'PutItem', 'UpdateItem'], pk: 'cld:common.Conversation.0123456789abcdef' },
    assistant: {
      actions: ['GetItem', 'PutItem', 'UpdateItem'],
      pk: 'cld:common.Conversation.0123456789abcdef',
    },
    tool: { actions: [] },
    // Powertools idempotency (deps.idempotency) in the `idempotency` partition only.
    reply: { actions: ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'], pk: IDEMPOTENCY_PK },
    // The conversations-per-user projection (record, list) in the callers' partitions.
    http: { actions: ['Query', 'UpdateItem'], pk: 'user#http:alice' },
    slack: { actions: [] },
    teams: { actions: [] },
    // Counts a dead-lettered output for its parent (applyOnce: member item + counter) and reads the counter.
    deadletter: {
      actions: ['GetItem', 'PutItem', 'UpdateItem'],
      pk: 'cld:common.Conversation.0123456789abcdef',
    },
    // The open-conversations partition and the repair of a conversation's projections.
    sweeper: {
      actions: ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem', 'Query'],
      pk: 'cld:common.Conversation.0123456789abcdef',
    },
  };

  it.each(NAMES)('%s gets exactly its table actions, on the table and its partitions only', (name) => {
    const statements = statementsOf(name);
    const tableArn = `<${tableId}.Arn>`;
    const expected = TABLE[name];
    expect([...FUNCTIONS[name].table].sort()).toEqual([...expected.actions].sort());
    const keys: Record<string, string> = expected.pk ? { 'dynamodb:LeadingKeys': expected.pk } : {};
    for (const action of [
      'GetItem',
      'PutItem',
      'UpdateItem',
      'DeleteItem',
      'Query',
      'Scan',
      'BatchWriteItem',
    ]) {
      const allowed = isAllowed(statements, `dynamodb:${action}`, tableArn, keys);
      expect(allowed, action).toBe(expected.actions.includes(action));
    }
    expect(isAllowed(statements, 'dynamodb:GetItem', `${tableArn}/index/any`, keys)).toBe(false);
    // Another partition: a conversation's counters for reply, the idempotency records for plan/assistant.
    const otherPk =
      expected.pk === IDEMPOTENCY_PK ? 'cld:common.Conversation.0123456789abcdef' : IDEMPOTENCY_PK;
    for (const action of expected.actions)
      expect(isAllowed(statements, `dynamodb:${action}`, tableArn, { 'dynamodb:LeadingKeys': otherPk })).toBe(
        false,
      );
  });

  it('lets the model-calling steps invoke the configured inference profile and its model through it only', () => {
    const profileArn = `arn:aws:bedrock:eu-west-1:111122223333:inference-profile/${MODEL_ID}`;
    const model = MODEL_ID.slice(MODEL_ID.indexOf('.') + 1);
    for (const name of NAMES) {
      const statements = statementsOf(name);
      const expected = name === 'plan' || name === 'assistant';
      expect(FUNCTIONS[name].model, name).toBe(expected);
      expect(isAllowed(statements, 'bedrock:InvokeModel', profileArn), name).toBe(expected);
      const modelInOtherRegion = `arn:aws:bedrock:us-west-2::foundation-model/${model}`;
      expect(
        isAllowed(statements, 'bedrock:InvokeModel', modelInOtherRegion, {
          'bedrock:InferenceProfileArn': profileArn,
        }),
      ).toBe(expected);
      expect(isAllowed(statements, 'bedrock:InvokeModel', modelInOtherRegion)).toBe(false);
      const otherModel =
        'arn:aws:bedrock:eu-west-1::foundation-model/anthropic.claude-opus-4-1-20250805-v1:0';
      expect(
        isAllowed(statements, 'bedrock:InvokeModel', otherModel, {
          'bedrock:InferenceProfileArn': profileArn,
        }),
      ).toBe(false);
    }
  });

  /** The channel secrets each function reads, stated here (issue 4's least privilege). */
  const SECRETS: Record<(typeof NAMES)[number], ChannelSecretName[]> = {
    plan: [],
    assistant: [],
    tool: [],
    reply: ['slackBotToken', 'teamsWebhookUrl'],
    http: [],
    slack: ['slackSigningSecret'],
    teams: ['teamsSecurityToken'],
    deadletter: [],
    sweeper: [],
  };

  it.each(
    NAMES,
  )('%s may read exactly its channel secrets, with GetSecretValue only, named by env', (name) => {
    const statements = statementsOf(name);
    const secretArn = (secret: ChannelSecretName) =>
      `<${logicalId(dev.json, 'AWS::SecretsManager::Secret', `${secret[0]?.toUpperCase()}${secret.slice(1)}`)}>`;
    for (const secret of CHANNEL_SECRET_NAMES) {
      const arn = secretArn(secret);
      expect(isAllowed(statements, 'secretsmanager:GetSecretValue', arn), secret).toBe(
        SECRETS[name].includes(secret),
      );
      expect(isAllowed(statements, 'secretsmanager:DescribeSecret', arn), secret).toBe(false);
    }
    const actions = statements
      .flatMap((st) => [st.Action].flat())
      .filter((a) => a.startsWith('secretsmanager:'));
    expect(new Set(actions)).toEqual(new Set(SECRETS[name].length ? ['secretsmanager:GetSecretValue'] : []));
    const env = (
      dev.json.Resources[ids(name).fn]?.Properties?.Environment as { Variables: Record<string, unknown> }
    ).Variables;
    const named = Object.entries(env)
      .filter(([variable]) => variable.endsWith('_ARN'))
      .map(([, value]) => resolveValue(value))
      .sort();
    expect(named).toEqual(SECRETS[name].map(secretArn).sort());
  });
});

describe('catalog seed (at deploy; no function writes the catalog)', () => {
  const objects = catalogObjects();

  function putsOf(id: string) {
    const props = dev.json.Resources[id]?.Properties as Record<string, unknown>;
    return {
      create: JSON.parse(resolveValue(props.Create)) as Record<string, unknown>,
      update: JSON.parse(resolveValue(props.Update)) as Record<string, unknown>,
      delete: props.Delete,
      token: props.ServiceToken,
    };
  }

  it('puts every catalog object create-only (If-None-Match), leaving one that exists as it is', () => {
    const ids = resourcesOfType(dev.json, 'Custom::CldCatalogObject');
    expect(ids).toHaveLength(objects.length);
    const byKey = new Map(
      ids.map((id) => {
        const puts = putsOf(id);
        return [(puts.create.parameters as { Key: string }).Key, puts] as const;
      }),
    );
    expect([...byKey.keys()].sort()).toEqual(catalogKeys());
    for (const object of objects) {
      const puts = byKey.get(object.key);
      const put = {
        service: 'S3',
        action: 'PutObject',
        parameters: {
          Bucket: `<${bucketId}>`,
          Key: object.key,
          Body: object.body,
          ContentType: 'application/json',
          IfNoneMatch: '*',
        },
        physicalResourceId: { id: object.key },
        ignoreErrorCodesMatching: '^PreconditionFailed$',
      };
      expect(puts?.create, object.key).toEqual(put);
      expect(puts?.update, object.key).toEqual(put);
      // Nothing on delete: the bucket's removal policy decides.
      expect(puts?.delete).toBeUndefined();
    }
  });

  it('stores each resource as ResourceIndex.put would (its schema-valid JSON, under keyOf(urn))', () => {
    for (const object of objects) {
      expect(object.key).toBe(keyOf(object.urn));
      const stored = parseResource(JSON.parse(object.body));
      expect(stored.meta.id).toBe(object.urn);
      expect(JSON.stringify(stored)).toBe(object.body);
    }
  });

  it("runs with a role that may only create the catalog's exact keys and write its own logs", () => {
    const functionId = logicalId(dev.json, 'AWS::Lambda::Function', 'AWS679f53fac002430cb0da5b7982bd2287');
    const props = dev.json.Resources[functionId]?.Properties as Record<string, unknown>;
    const role = (props.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    expect(role.startsWith('CatalogSeedRole')).toBe(true);
    expect(dev.json.Resources[role]?.Properties?.ManagedPolicyArns).toBeUndefined();
    const statements = roleStatements(dev.json, role);
    const create = { 's3:if-none-match': '*' };
    for (const key of catalogKeys()) {
      expect(isAllowed(statements, 's3:PutObject', objectArn(key), create), key).toBe(true);
      expect(isAllowed(statements, 's3:PutObject', objectArn(key)), key).toBe(false);
      expect(isAllowed(statements, 's3:GetObject', objectArn(key)), key).toBe(false);
    }
    for (const key of [
      'cld/common.Assistant.ffffffffffffffff_Assistant.json',
      'cld/common.Conversation.0123456789abcdef_Conversation.json',
    ]) {
      expect(isAllowed(statements, 's3:PutObject', objectArn(key), create), key).toBe(false);
    }
    const actions = statements.flatMap((statement) => [statement.Action].flat()).sort();
    expect(actions).toEqual(['logs:CreateLogStream', 'logs:PutLogEvents', 's3:PutObject']);
    // The SDK of the Lambda runtime: nothing is installed from npm at deploy.
    const seed = resourcesOfType(dev.json, 'Custom::CldCatalogObject')[0] as string;
    expect(dev.json.Resources[seed]?.Properties?.InstallLatestAwsSdk).toBe(false);
    // The puts wait for the role's policy.
    expect(dev.json.Resources[seed]?.DependsOn).toEqual(
      expect.arrayContaining([expect.stringMatching(/^CatalogSeedRoleDefaultPolicy/)]),
    );
  });
});

describe('catalog seed after an edit (versioned by content)', () => {
  /** The seed alone, in a stack of its own with a bucket (no bundling: a quick synth). */
  function seedTemplate(files: CatalogFiles): TemplateJson {
    const app = new App();
    const stack = new Stack(app, 'Seed');
    new CatalogSeed(stack, 'CatalogSeed', {
      bucket: new Bucket(stack, 'Bucket'),
      logRetention: RetentionDays.ONE_WEEK,
      removalPolicy: RemovalPolicy.DESTROY,
      objects: catalogObjects(files),
    });
    return app.synth().getStackArtifact(stack.artifactId).template as TemplateJson;
  }

  function createsOf(json: TemplateJson): Map<string, Record<string, unknown>> {
    return new Map(
      resourcesOfType(json, 'Custom::CldCatalogObject').map((id) => {
        const props = json.Resources[id]?.Properties as Record<string, unknown>;
        return [id, JSON.parse(resolveValue(props.Create)) as Record<string, unknown>] as const;
      }),
    );
  }

  it("updates the edited definition's custom resource to put a new key, create-only, and changes no other", () => {
    const edited: CatalogFiles = {
      ...CATALOG_FILES,
      tools: CATALOG_FILES.tools.map((file) =>
        (file as { name: string }).name === 'search'
          ? { ...(file as object), description: 'Edited: search the ingested corpus.' }
          : file,
      ),
    };
    const before = createsOf(seedTemplate(CATALOG_FILES));
    const after = createsOf(seedTemplate(edited));
    const changedObject = catalogObjects(edited).find((o) => o.name === 'search') as CatalogObject;
    const previousKey = catalogObjects().find((o) => o.name === 'search')?.key;

    // Same logical ids (type and name): CloudFormation updates the resource, it does not replace the catalog.
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
    const changed = [...after].filter(
      ([id, create]) => JSON.stringify(create) !== JSON.stringify(before.get(id)),
    );
    expect(changed.map(([id]) => id)).toEqual([expect.stringMatching(/^CatalogSeedToolsearch/)]);
    const [, put] = changed[0] as [string, Record<string, unknown>];
    const parameters = put.parameters as Record<string, string>;
    expect(parameters.Key).toBe(changedObject.key);
    expect(parameters.Key).not.toBe(previousKey);
    expect(JSON.parse(parameters.Body as string).function.description).toBe(
      'Edited: search the ingested corpus.',
    );
    expect(parameters.IfNoneMatch).toBe('*');
    // A new physical id: CloudFormation's delete of the old one does nothing, so the old version stays.
    expect(put.physicalResourceId).toEqual({ id: changedObject.key });
  });

  it('updates every function after the catalog its bundle names is stored', () => {
    const seeds = resourcesOfType(dev.json, 'Custom::CldCatalogObject');
    for (const name of NAMES) {
      const dependsOn = [dev.json.Resources[ids(name).fn]?.DependsOn ?? []].flat();
      expect(dependsOn, name).toEqual(expect.arrayContaining(seeds));
    }
  });
});

describe('stack', () => {
  it('is environment-agnostic and sets no physical names', () => {
    expect(dev.stack.environment).toBe('aws://unknown-account/unknown-region');
    const named = [
      'BucketName',
      'TableName',
      'FunctionName',
      'QueueName',
      'RoleName',
      'LogGroupName',
      'AlarmName',
    ];
    for (const [id, resource] of Object.entries(dev.json.Resources)) {
      if (resource.Type.startsWith('Custom::') || resource.Type === 'AWS::Lambda::EventInvokeConfig')
        continue;
      // These name the function they belong to, not themselves.
      if (resource.Type === 'AWS::Lambda::Permission' || resource.Type === 'AWS::Lambda::EventSourceMapping')
        continue;
      for (const property of named)
        expect(resource.Properties?.[property], `${id}.${property}`).toBeUndefined();
    }
  });

  it('outputs the bucket and table names, each log group, each dead-letter queue and the unprocessed letters', () => {
    expect(dev.json.Outputs?.ResourcesBucketName?.Value).toEqual({ Ref: bucketId });
    expect(dev.json.Outputs?.ProjectionsTableName?.Value).toEqual({ Ref: tableId });
    for (const name of NAMES) {
      const prefix = `${name[0]?.toUpperCase()}${name.slice(1)}`;
      expect(dev.json.Outputs?.[`${prefix}DeadLetterQueueUrl`]?.Value).toEqual(
        FUNCTIONS[name].trigger === 'eventbridge' ? { Ref: dlqOf(name) } : undefined,
      );
      expect(dev.json.Outputs?.[`${prefix}UnprocessedQueueUrl`]?.Value).toEqual(
        FUNCTIONS[name].trigger === 'sqs'
          ? { Ref: logicalId(dev.json, 'AWS::SQS::Queue', `${prefix}StepUnprocessedQueue`) }
          : undefined,
      );
      expect(dev.json.Outputs?.[`${prefix}LogGroupName`]?.Value).toEqual({ Ref: ids(name).logs });
    }
  });

  it('passes cdk-nag AwsSolutions and Serverless with no unacknowledged error or warning', () => {
    const nag = dev.report.pluginReports.filter((report) =>
      ['AwsSolutions', 'Serverless'].includes(report.pluginName),
    );
    const findings = nag.flatMap((report) =>
      report.violations.map(
        (v) => `${v.severity} ${v.ruleName} at ${v.violatingConstructs?.[0]?.constructPath}`,
      ),
    );
    expect(findings).toEqual([]);
  });

  it('records a written reason for every acknowledged cdk-nag finding', () => {
    const acknowledged = dev.stack.node
      .findAll()
      .flatMap((c) => c.node.metadata)
      .filter((entry) => entry.type === 'aws:cdk:acknowledged-rules')
      .flatMap((entry) => Object.entries(entry.data as Record<string, string>));
    expect(acknowledged.length).toBeGreaterThan(0);
    for (const [id, reason] of acknowledged) expect(reason.length, id).toBeGreaterThan(40);
  });
});

describe('prod stage with a custom config', () => {
  let prod: Synthesized;
  beforeAll(() => {
    prod = synthesize({
      context: {
        'cld:stage': 'prod',
        'cld:modelId': 'offline',
        'cld:limits': '{"maxDepth":3}',
        'cld:reservedConcurrency': '{"assistant":4,"tool":6,"slack":3}',
        'cld:retryAttempts': '1',
        'cld:maxEventAgeSeconds': '600',
        'cld:sourceMaps': 'true',
      },
    });
  }, SYNTH_TIMEOUT_MS);

  it('enables source maps on every function (cld:sourceMaps)', () => {
    const functions = Object.values(prod.json.Resources).filter(
      (resource) =>
        resource.Type === 'AWS::Lambda::Function' &&
        (resource.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables
          ?.CLD_FUNCTION !== undefined,
    );
    expect(functions.length).toBe(NAMES.length);
    for (const fn of functions)
      expect(
        (fn.Properties?.Environment as { Variables: Record<string, unknown> }).Variables.NODE_OPTIONS,
      ).toBe('--enable-source-maps');
  });

  function fnId(name: string): string {
    return logicalId(
      prod.json,
      'AWS::Lambda::Function',
      `${name[0]?.toUpperCase()}${name.slice(1)}StepFunction`,
    );
  }

  it('retains the bucket, the table and the logs, protects the table and auto-deletes nothing', () => {
    expect(prod.stack.stackName).toBe('Cld-prod');
    const bucket = logicalId(prod.json, 'AWS::S3::Bucket', 'ResourcesBucket');
    const table = logicalId(prod.json, 'AWS::DynamoDB::GlobalTable', 'ProjectionsTable');
    expect(prod.json.Resources[bucket]?.DeletionPolicy).toBe('Retain');
    expect(prod.json.Resources[table]?.DeletionPolicy).toBe('Retain');
    const replicas = prod.json.Resources[table]?.Properties?.Replicas as {
      DeletionProtectionEnabled?: boolean;
    }[];
    expect(replicas[0]?.DeletionProtectionEnabled).toBe(true);
    for (const id of resourcesOfType(prod.json, 'AWS::Logs::LogGroup')) {
      expect(prod.json.Resources[id]?.DeletionPolicy).toBe('Retain');
      expect(prod.json.Resources[id]?.Properties?.RetentionInDays).toBe(365);
    }
    expect(resourcesOfType(prod.json, 'Custom::S3AutoDeleteObjects')).toEqual([]);
    const nag = prod.report.pluginReports.flatMap((report) => report.violations.map((v) => v.ruleName));
    expect(nag).toEqual([]);
  });

  it('passes limits, reserved concurrency, retries and event age through to every function', () => {
    for (const name of NAMES) {
      const props = prod.json.Resources[fnId(name)]?.Properties as Record<string, unknown>;
      const env = (props.Environment as { Variables: Record<string, unknown> }).Variables;
      expect(env.CLD_LIMITS).toBe('{"maxDepth":3}');
      // Only the functions the context names: teams gets none here.
      expect(props.ReservedConcurrentExecutions).toBe(
        ({ assistant: 4, tool: 6, slack: 3 } as Record<string, number>)[name],
      );
    }
    for (const name of EVENT_NAMES) {
      prod.template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
        FunctionName: { Ref: fnId(name) },
        MaximumRetryAttempts: 1,
        MaximumEventAgeInSeconds: 600,
      });
    }
    for (const id of resourcesOfType(prod.json, 'AWS::Events::Rule')) {
      const targets = prod.json.Resources[id]?.Properties?.Targets as { RetryPolicy: unknown }[];
      expect(targets[0]?.RetryPolicy).toEqual({ MaximumRetryAttempts: 1, MaximumEventAgeInSeconds: 600 });
    }
  });

  it('deploys the offline model with no Bedrock permission and no CLD_MODEL_ID', () => {
    for (const name of NAMES) {
      const props = prod.json.Resources[fnId(name)]?.Properties as Record<string, unknown>;
      expect(
        (props.Environment as { Variables: Record<string, unknown> }).Variables.CLD_MODEL_ID,
      ).toBeUndefined();
      const role = (props.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
      const actions = roleStatements(prod.json, role).flatMap((s) => [s.Action].flat());
      expect(actions.filter((a) => a.startsWith('bedrock:'))).toEqual([]);
    }
  });
});

describe('alarms and the dashboard (issue 24)', () => {
  const alarms = () => resourcesOfType(dev.json, 'AWS::CloudWatch::Alarm');
  const topicId = () => logicalId(dev.json, 'AWS::SNS::Topic', 'MonitoringAlarmTopic');

  it('sends every alarm, on ALARM and on OK, to the alarm topic, which only takes TLS publishers', () => {
    expect(alarms().length).toBeGreaterThan(20);
    for (const id of alarms()) {
      const props = dev.json.Resources[id]?.Properties as Record<string, unknown>;
      expect(props.AlarmActions, id).toEqual([{ Ref: topicId() }]);
      expect(props.OKActions, id).toEqual([{ Ref: topicId() }]);
    }
    dev.template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: Match.objectLike({
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      }),
    });
    expect(resourcesOfType(dev.json, 'AWS::SNS::Subscription')).toEqual([]);
    expect(dev.json.Outputs?.AlarmTopicArn?.Value).toEqual({ Ref: topicId() });
  });

  it.each(NAMES)('alarms on Throttles of %s', (name) => {
    dev.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'Throttles',
      Namespace: 'AWS/Lambda',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: ids(name).fn } }],
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it.each(
    EVENT_NAMES.flatMap((name) =>
      [
        ['AsyncEventAge', ASYNC_EVENT_AGE_ALARM_SECONDS * 1000, 'Maximum'],
        ['AsyncEventsDropped', 0, 'Sum'],
        ['DestinationDeliveryFailures', 0, 'Sum'],
      ].map(([metric, threshold, statistic]) => [name, metric, threshold, statistic] as const),
    ),
  )('alarms on the asynchronous invocations of %s: %s above %s (%s)', (name, metric, threshold, statistic) => {
    dev.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: metric,
      Namespace: 'AWS/Lambda',
      Statistic: statistic,
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: ids(name).fn } }],
      Threshold: threshold,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it("alarms on the HTTP API's 5xx responses", () => {
    const [api] = resourcesOfType(dev.json, 'AWS::ApiGatewayV2::Api');
    expect(api).toBeDefined();
    dev.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: '5xx',
      Namespace: 'AWS/ApiGateway',
      Dimensions: [{ Name: 'ApiId', Value: { Ref: api } }],
      Threshold: 0,
    });
  });

  it('has a dashboard of steps, errors, throttles, event age, dead letters, the API and model tokens', () => {
    const [id] = resourcesOfType(dev.json, 'AWS::CloudWatch::Dashboard');
    expect(id).toBeDefined();
    const body = JSON.stringify(dev.json.Resources[id as string]?.Properties?.DashboardBody);
    for (const text of [
      'Steps per minute',
      'Step duration p95',
      'Throttles',
      'AsyncEventAge',
      'ApproximateNumberOfMessagesVisible',
      '5xx',
      'InputTokenCount',
      'OutputTokenCount',
      'InvocationThrottles',
    ])
      expect(body, text).toContain(text);
    expect(dev.json.Outputs?.DashboardName).toBeDefined();
  });

  it('keeps every synthesized rule within the event-pattern complexity EventBridge accepts with margin', () => {
    const rules = resourcesOfType(dev.json, 'AWS::Events::Rule')
      .map((id) => [id, dev.json.Resources[id]?.Properties?.EventPattern] as const)
      .filter(([, pattern]) => pattern !== undefined);
    expect(rules.length).toBeGreaterThan(0);
    for (const [id, pattern] of rules) {
      expect(patternComplexity(pattern as EventPattern), id).toBeLessThanOrEqual(MAX_RULE_COMPLEXITY);
    }
  });
});

describe('a scratch stack with an existing alarm topic (cld:destroyData, cld:alarmTopicArn, cld:alarmEmail)', () => {
  let scratch: Synthesized;
  const topicArn = 'arn:aws:sns:eu-west-1:123456789012:platform-alarms';
  beforeAll(() => {
    scratch = synthesize({
      context: {
        'cld:stage': 'scratch',
        'cld:destroyData': 'true',
        'cld:alarmTopicArn': topicArn,
        'cld:alarmEmail': 'ops@example.com',
      },
    });
  }, SYNTH_TIMEOUT_MS);

  it('deletes the buckets (with their objects) and the table with the stack', () => {
    const bucket = logicalId(scratch.json, 'AWS::S3::Bucket', 'ResourcesBucket');
    const table = logicalId(scratch.json, 'AWS::DynamoDB::GlobalTable', 'ProjectionsTable');
    expect(scratch.json.Resources[bucket]?.DeletionPolicy).toBe('Delete');
    expect(scratch.json.Resources[table]?.DeletionPolicy).toBe('Delete');
    scratch.template.hasResourceProperties('Custom::S3AutoDeleteObjects', { BucketName: { Ref: bucket } });
  });

  it('sends every alarm to the existing topic, subscribes the e-mail there and creates no topic', () => {
    expect(resourcesOfType(scratch.json, 'AWS::SNS::Topic')).toEqual([]);
    for (const id of resourcesOfType(scratch.json, 'AWS::CloudWatch::Alarm'))
      expect(scratch.json.Resources[id]?.Properties?.AlarmActions, id).toEqual([topicArn]);
    scratch.template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'ops@example.com',
      TopicArn: topicArn,
    });
  });
});
