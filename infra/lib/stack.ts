import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  Annotations,
  Aws,
  CfnOutput,
  CfnRule,
  Duration,
  Fn,
  RemovalPolicy,
  Stack,
  type StackProps,
  Validations,
} from 'aws-cdk-lib';
import { AttributeType, Billing, TableEncryptionV2, TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import {
  BlockPublicAccess,
  Bucket,
  BucketEncryption,
  type IBucket,
  ObjectOwnership,
} from 'aws-cdk-lib/aws-s3';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { API_ROUTES, type ApiRoute } from '../../shared/channels/routes.js';
import { ConfigError } from '../../shared/errors.js';
import type { EventPattern as RoutePattern } from '../../shared/events/pattern.js';
import { keyWildcard, type Route, routingTable } from '../../shared/events/routing.js';
import { PROFILE_SOURCE_REGIONS, profileGeography } from '../../shared/llm/profiles.js';
import { checkBundles } from '../../shared/policy/manifest.js';
import { parseRulesDocument } from '../../shared/policy/rules.js';
import { PROJECT_ROOT } from './bundling.js';
import { CatalogSeed } from './catalog-seed.js';
import { isProduction, type StackConfig } from './config.js';
import { DEAD_LETTER_CONSUMPTION, FUNCTION_TABLE, type FunctionSpec } from './functions.js';
import { ChannelsApi } from './http-api.js';
import { Monitoring, notifyAllAlarms } from './monitoring.js';
import { MAX_RULE_COMPLEXITY, patternComplexity } from './rule-complexity.js';
import { CHANNEL_SECRET_NAMES, CHANNEL_SECRETS, type ChannelSecretName, channelSecrets } from './secrets.js';
import { pascalCase as pascal, StepFunction } from './step-function.js';

/** Props of {@link CldStack}. */
export interface CldStackProps extends StackProps {
  /** Resolved once in infra/bin (infra/lib/config.ts). */
  config: StackConfig;
  /** The function table (default: infra/lib/functions.ts). */
  functions?: Readonly<Record<string, FunctionSpec>>;
  /** The routing table for a bucket name (default: shared/events/routing.ts, the one source of truth). */
  routes?: (bucket: string) => Route[];
  /** The HTTP API's routes (default: shared/channels/routes.ts `API_ROUTES`, the one source of truth). */
  apiRoutes?: readonly ApiRoute[];
  /** Project root to bundle from (default: this repository). */
  projectRoot?: string;
}

/** Construct id (prefix) of the singleton function CDK adds for `AwsCustomResource`. */
const AWS_CUSTOM_RESOURCE_SINGLETON = 'AWS679f53fac002430cb0da5b7982bd2287';

/** Id of the synth error on compiled policy bundles that do not match the Rego sources. */
export const POLICY_BUNDLES_STALE = 'cld:policyBundlesStale';

/**
 * Fails synth when `<projectRoot>/policies/dist` holds compiled policy bundles that were not built
 * from the Rego sources and rules data now in policies/ (shared/policy/manifest.ts
 * `checkBundles`): an error annotation, so `cdk synth` and `cdk deploy` stop however they are run
 * (`npm run deploy` checks the same first, through `build:policies --require`), instead of
 * shipping policies other than the reviewed sources. No policies/dist at all is a warning per
 * function instead (infra/lib/step-function.ts): each then enforces policies/rules.json alone.
 * @throws ValidationError when policies/rules.json does not parse
 */
export function checkPolicyBundles(stack: Stack, projectRoot: string): void {
  const policies = join(projectRoot, 'policies');
  const dist = join(policies, 'dist');
  if (!existsSync(dist)) return;
  const rules = parseRulesDocument(JSON.parse(readFileSync(join(policies, 'rules.json'), 'utf8')));
  const check = checkBundles(policies, dist, Object.keys(rules.functions));
  if (!check.fresh) {
    Annotations.of(stack).addError(
      `${POLICY_BUNDLES_STALE}: the compiled policies in policies/dist do not match the sources (${check.problems.join('; ')}); run npm run build:policies (it needs opa on PATH) and commit policies/dist`,
    );
  }
}

/** Top-level fields of an EventBridge pattern and their names in CDK's `EventPattern`. */
const PATTERN_FIELDS: Readonly<Record<string, string>> = {
  version: 'version',
  id: 'id',
  'detail-type': 'detailType',
  source: 'source',
  account: 'account',
  time: 'time',
  region: 'region',
  resources: 'resources',
  detail: 'detail',
};

/**
 * A route's pattern as CDK's `events.EventPattern` (which renders `detailType` as `detail-type`);
 * every other level is passed through unchanged.
 * @throws ConfigError for a top-level field EventBridge events do not have
 */
export function toCdkEventPattern(pattern: RoutePattern): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(pattern)) {
    const name = PATTERN_FIELDS[field];
    if (!name) throw new ConfigError(`route pattern has an unknown top-level field "${field}"`);
    result[name] = value;
  }
  return result;
}

/** Logical id of the CloudFormation rule that refuses a geography profile outside its Regions. */
export const MODEL_REGION_RULE = 'ModelProfileRegion';

/**
 * A CloudFormation `Rules` assertion (checked by CloudFormation before it creates anything) that
 * the stack's Region may call the configured model: a system-defined inference profile of a
 * geography (`us.`, `eu.`, …) only from that geography's source Regions
 * (shared/llm/profiles.ts). Without it the stack deploys and every question fails at run time
 * with Bedrock's "The provided model identifier is invalid". No rule for `global.` profiles,
 * foundation models, ARNs or `offline`. `cld doctor` reports the same before deploy.
 */
export function addModelRegionRule(stack: Stack, modelId: string): CfnRule | undefined {
  const geo = profileGeography(modelId);
  const regions = geo && geo !== 'global' ? PROFILE_SOURCE_REGIONS[geo] : undefined;
  if (!regions) return undefined;
  const model = modelId.slice((geo as string).length + 1);
  return new CfnRule(stack, MODEL_REGION_RULE, {
    assertions: [
      {
        assert: Fn.conditionContains([...regions], Aws.REGION),
        assertDescription:
          `cld:modelId ${modelId} is a ${geo}. inference profile, callable only from ${regions.join(', ')}: ` +
          `deploy with -c cld:modelId=global.${model} (or this Region's geography profile)`,
      },
    ],
  });
}

/** One EventBridge rule of a route: its construct id (without the `Rule` suffix), description and pattern. */
export interface RulePart {
  id: string;
  description: string;
  pattern: RoutePattern;
  /** The pattern's complexity as EventBridge computes it (infra/lib/rule-complexity.ts). */
  complexity: number;
}

/**
 * The rules of one route: the route's own pattern as one rule (id = the route's id) while its
 * complexity is at most {@link MAX_RULE_COMPLEXITY}; above that, one rule per shape (id = the
 * route's id + the shape in PascalCase, `*` as `Any`), each with the route's pattern narrowed to
 * that shape. The shapes of a route are disjoint, so an object still reaches the function at most
 * once, exactly as the local bus delivers it by the route's pattern (DESIGN.md principle 4).
 * @throws ConfigError when one shape alone is above the limit (EventBridge could refuse the rule)
 */
export function rulesOfRoute(route: Route): RulePart[] {
  const whole = patternComplexity(route.pattern);
  if (whole <= MAX_RULE_COMPLEXITY)
    return [{ id: route.id, description: route.description, pattern: route.pattern, complexity: whole }];
  return route.shapes.map((shape) => {
    const pattern = narrowToShape(route.pattern, shape);
    const complexity = patternComplexity(pattern);
    if (complexity > MAX_RULE_COMPLEXITY) {
      throw new ConfigError(
        `route ${route.id}: the shape ${shape} alone has rule complexity ${complexity}, above ${MAX_RULE_COMPLEXITY} ` +
          '(EventBridge may refuse the rule as too complex): use fewer `*` in the shape',
      );
    }
    const suffix = shape.replaceAll('*', 'Any-').split('-').filter(Boolean).join('');
    return {
      id: `${route.id}${suffix}`,
      description: `${route.description} (${shape})`,
      pattern,
      complexity,
    };
  });
}

/** The route's pattern with its object-key `wildcard`s narrowed to the one of `shape`. */
function narrowToShape(pattern: RoutePattern, shape: string): RoutePattern {
  const detail = pattern.detail as { object: Record<string, unknown> } & Record<string, unknown>;
  return {
    ...pattern,
    detail: { ...detail, object: { ...detail.object, key: [{ wildcard: keyWildcard(shape) }] } },
  } as RoutePattern;
}

/**
 * The cld stack: the event-sourced system of DESIGN.md on AWS.
 *
 * - Resources bucket: URN-keyed objects, S3 → EventBridge notifications, versioned, SSE-S3,
 *   public access blocked, TLS only, server access logs to a second bucket; retained in every
 *   stage (`cld:destroyData=true` deletes both buckets with their objects, for scratch stacks).
 * - Projections table (DynamoDB): `pk`/`sk` strings, TTL attribute `expiration`, on-demand,
 *   point-in-time recovery, AWS managed KMS key; retained (unless `cld:destroyData`), and
 *   deletion-protected in `prod`.
 * - Monitoring (infra/lib/monitoring.ts): every alarm notifies one SNS topic; an API 5xx alarm;
 *   a CloudWatch dashboard.
 * - The channel secrets (Slack signing secret and bot token, Teams security token and webhook
 *   URL): existing ones by ARN from the config, the others created (infra/lib/secrets.ts).
 * - The default catalog, stored at deploy with create-only puts ({@link CatalogSeed}): no
 *   function writes it, so a cold start writes nothing.
 * - One {@link StepFunction} per entry of the function table.
 * - Dead letters: each `eventbridge` function's queue receives its failed asynchronous
 *   invocations (on-failure destination) and the events its rules could not deliver (target
 *   DLQ). The queues of the task-tree steps (`deadLetters: 'fail-task'`) are read by the
 *   table's `sqs` function through event source mappings (shared/runtime/dead-letter-consumer.ts),
 *   which fails the affected task and sets aside, in its own queue, what it cannot handle.
 * - One EventBridge rule on the default bus per route of the routing table, with exactly the
 *   route's pattern, targeting the route's function (bounded retries, maximum event age, the
 *   function's dead-letter queue for events EventBridge cannot deliver); one scheduled rule per
 *   function with a `schedule` (the sweeper, which re-drives stalled conversations).
 * - The HTTP API of the channels, one route per entry of `API_ROUTES` ({@link ChannelsApi}).
 * - Outputs: bucket, table, API and webhook URLs, secret ARNs, each function's log group,
 *   each `eventbridge` function's dead-letter queue and the consumer's queue of unprocessed letters.
 *
 * Environment-agnostic: no account or Region here, no physical names.
 * @throws ConfigError at synth when an event route or an API route names a function the table
 *   does not have, or one of the other trigger; when the table has more than one `sqs` function,
 *   or an `eventbridge` function with `deadLetters: 'fail-task'` and no `sqs` function
 */
export class CldStack extends Stack {
  /** The deployment config the stack was built with (channels read `allowedOrigins` from it). */
  readonly config: StackConfig;
  readonly bucket: Bucket;
  readonly accessLogsBucket: Bucket;
  readonly table: TableV2;
  readonly functions: ReadonlyMap<string, StepFunction>;
  private readonly functionSpecs: ReadonlyMap<string, FunctionSpec>;
  /** The dead-letter consumer (the table's `sqs` function), when the table has one. */
  readonly deadLetterConsumer: StepFunction | undefined;
  readonly rules: ReadonlyMap<string, Rule>;
  readonly secrets: Readonly<Record<ChannelSecretName, ISecret>>;
  readonly httpApi: ChannelsApi;
  /** The catalog, stored at deploy (no function writes it). */
  readonly catalogSeed: CatalogSeed;
  /** The alarm topic (every alarm's action), the API 5xx alarm and the dashboard. */
  readonly monitoring: Monitoring;

  constructor(scope: Construct, id: string, props: CldStackProps) {
    super(scope, id, props);
    const { config } = props;
    this.config = config;
    const production = isProduction(config);
    const removalPolicy = production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    // The event log and its projections are kept in every stage unless the deployer opts in.
    const dataRemovalPolicy = config.destroyData ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;

    this.accessLogsBucket = new Bucket(this, 'AccessLogsBucket', {
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      lifecycleRules: [{ expiration: Duration.days(production ? 365 : 30) }],
      removalPolicy: dataRemovalPolicy,
      autoDeleteObjects: config.destroyData,
    });

    this.bucket = new Bucket(this, 'ResourcesBucket', {
      eventBridgeEnabled: true,
      versioned: true,
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: this.accessLogsBucket,
      serverAccessLogsPrefix: 'resources/',
      lifecycleRules: [
        { abortIncompleteMultipartUploadAfter: Duration.days(1) },
        // Resources are create-only, so noncurrent versions only come from deletes by operators.
        { noncurrentVersionExpiration: Duration.days(production ? 90 : 7) },
      ],
      removalPolicy: dataRemovalPolicy,
      autoDeleteObjects: config.destroyData,
    });

    this.table = new TableV2(this, 'ProjectionsTable', {
      partitionKey: { name: 'pk', type: AttributeType.STRING },
      sortKey: { name: 'sk', type: AttributeType.STRING },
      timeToLiveAttribute: 'expiration',
      billing: Billing.onDemand(),
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: TableEncryptionV2.awsManagedKey(),
      deletionProtection: production,
      removalPolicy: dataRemovalPolicy,
    });

    this.secrets = channelSecrets(this, config.secretArns, removalPolicy);
    this.catalogSeed = new CatalogSeed(this, 'CatalogSeed', {
      bucket: this.bucket,
      logRetention: config.logRetentionDays as RetentionDays,
      removalPolicy,
    });

    const table = Object.entries(props.functions ?? FUNCTION_TABLE);
    const consumers = table.filter(([, spec]) => spec.trigger === 'sqs');
    if (consumers.length > 1) {
      throw new ConfigError(
        `the function table has ${consumers.length} dead-letter consumers (trigger "sqs": ${consumers.map(([n]) => n).join(', ')}); one consumes every queue`,
      );
    }
    // The consumer first: the queues it reads redrive to its own queue.
    const functions = new Map<string, StepFunction>();
    let consumer: StepFunction | undefined;
    for (const [name, spec] of [...consumers, ...table.filter(([, spec]) => spec.trigger !== 'sqs')]) {
      const step = new StepFunction(this, `${pascal(name)}Step`, {
        name,
        spec,
        config,
        bucket: this.bucket,
        table: this.table,
        secrets: this.secrets,
        removalPolicy,
        ...(props.projectRoot ? { projectRoot: props.projectRoot } : {}),
        ...(consumer ? { deadLetterConsumer: consumer } : {}),
      });
      // The catalog version the bundle names is stored before the function runs the bundle.
      step.function.node.addDependency(this.catalogSeed);
      if (spec.trigger === 'sqs') consumer = step;
      functions.set(name, step);
    }
    this.functions = functions;
    this.functionSpecs = new Map(table);
    checkPolicyBundles(this, props.projectRoot ?? PROJECT_ROOT);
    this.deadLetterConsumer = consumer;
    const consumed = new Map(
      table
        .filter(([, spec]) => spec.deadLetters === 'fail-task')
        .map(([name]) => [name, functions.get(name)?.deadLetterQueue as Queue]),
    );
    if (consumer && consumed.size > 0) consumer.consumeDeadLetterQueues(consumed);
    this.rules = new Map([
      ...this.addRoutes(props.routes ?? routingTable, this.bucket, config),
      ...this.addSchedules(config),
    ]);
    this.httpApi = new ChannelsApi(this, 'HttpApi', {
      config,
      routes: props.apiRoutes ?? API_ROUTES,
      functions: new Map(
        [...functions].map(([name, step]) => [name, { trigger: step.trigger, function: step.function }]),
      ),
      removalPolicy,
    });
    addModelRegionRule(this, config.modelId);
    this.monitoring = new Monitoring(this, 'Monitoring', {
      config,
      functions,
      api: this.httpApi.api,
    });
    notifyAllAlarms(this, this.monitoring.alarmTopic);
    this.acknowledgeCdkManagedResources();

    new CfnOutput(this, 'ResourcesBucketName', {
      description: 'Resources bucket (URN-keyed JSON objects; the event log)',
      value: this.bucket.bucketName,
    });
    new CfnOutput(this, 'ProjectionsTableName', {
      description: 'Projections table (counters, idempotency records, budgets, reply routing)',
      value: this.table.tableName,
    });
    for (const [name, step] of functions) {
      if (step.deadLetterQueue) {
        new CfnOutput(this, `${pascal(name)}DeadLetterQueueUrl`, {
          description: `Dead-letter queue of the ${name} function (failed events, as sent)`,
          value: step.deadLetterQueue.queueUrl,
        });
      }
      if (step.unprocessedQueue) {
        new CfnOutput(this, `${pascal(name)}UnprocessedQueueUrl`, {
          description: `Dead letters the ${name} function failed on ${DEAD_LETTER_CONSUMPTION.maxReceiveCount} times (as received)`,
          value: step.unprocessedQueue.queueUrl,
        });
      }
      new CfnOutput(this, `${pascal(name)}LogGroupName`, {
        description: `Log group of the ${name} function (aws logs tail <name> --follow)`,
        value: step.logGroup.logGroupName,
      });
    }
    new CfnOutput(this, 'AlarmTopicArn', {
      description: 'SNS topic every alarm notifies (subscribe: aws sns subscribe --protocol email ...)',
      value: this.monitoring.alarmTopic.topicArn,
    });
    new CfnOutput(this, 'DashboardName', {
      description:
        'CloudWatch dashboard of the conversations (steps, errors, throttles, dead letters, tokens)',
      value: this.monitoring.dashboard.dashboardName,
    });
    new CfnOutput(this, 'ApiUrl', {
      description: 'HTTP API base URL ($default stage), e.g. POST <ApiUrl>conversations with a JWT',
      value: this.httpApi.url,
    });
    new CfnOutput(this, 'ApiAccessLogGroupName', {
      description: 'Access logs of the HTTP API (one JSON line per request)',
      value: this.httpApi.accessLogs.logGroupName,
    });
    new CfnOutput(this, 'ConsoleUrl', {
      description:
        'The web console (sign in with the JWT issuer: register this URL as a callback URL of the app client named by cld:consoleAuth)',
      value: this.httpApi.url,
    });
    for (const route of props.apiRoutes ?? API_ROUTES) {
      // Webhooks: the unauthenticated routes other than the console's static files.
      if (route.auth !== 'none' || route.function === 'http') continue;
      new CfnOutput(this, `${pascal(route.path)}WebhookUrl`, {
        description: `${route.method} ${route.path}: ${route.description}`,
        value: `${this.httpApi.url}${route.path.slice(1)}`,
      });
    }
    for (const name of CHANNEL_SECRET_NAMES) {
      new CfnOutput(this, `${pascal(name)}SecretArn`, {
        description: `${config.secretArns[name] ? 'Existing' : 'Created'} secret: ${CHANNEL_SECRETS[name].description}`,
        value: this.secrets[name].secretArn,
      });
    }
  }

  /** One rule per route on the default bus; target = the function the route names. */
  private addRoutes(
    routes: (bucket: string) => Route[],
    bucket: IBucket,
    config: StackConfig,
  ): ReadonlyMap<string, Rule> {
    const rules = new Map<string, Rule>();
    for (const route of routes(bucket.bucketName)) {
      const step = this.functions.get(route.target);
      if (!step) {
        throw new ConfigError(
          `route ${route.id} targets "${route.target}", but the function table has no function named ` +
            `"${route.target}" (add it to infra/lib/functions.ts; it has: ${[...this.functions.keys()].join(', ')})`,
        );
      }
      if (!step.deadLetterQueue) {
        throw new ConfigError(
          `route ${route.id} targets "${route.target}", a function with trigger "${step.trigger}" ` +
            '(EventBridge rules need trigger "eventbridge")',
        );
      }
      for (const part of rulesOfRoute(route)) {
        const rule = new Rule(this, `${part.id}Rule`, {
          description: part.description,
          eventPattern: toCdkEventPattern(part.pattern),
        });
        rule.addTarget(
          new LambdaFunction(step.function, {
            deadLetterQueue: step.deadLetterQueue,
            retryAttempts: config.retryAttempts,
            maxEventAge: Duration.seconds(config.maxEventAgeSeconds),
          }),
        );
        rules.set(part.id, rule);
      }
    }
    return rules;
  }

  /**
   * One scheduled rule per function with a `schedule` (the sweeper): `rate(<n> minutes)` on the
   * default bus, target the function with the same retries, maximum event age and dead-letter
   * queue as the routes' targets.
   */
  private addSchedules(config: StackConfig): ReadonlyMap<string, Rule> {
    const rules = new Map<string, Rule>();
    for (const [name, step] of this.functions) {
      const spec = this.functionSpecs.get(name);
      if (!spec?.schedule) continue;
      if (!step.deadLetterQueue)
        throw new ConfigError(
          `function ${name} has a schedule but trigger "${step.trigger}" (needs "eventbridge")`,
        );
      const id = `${pascal(name)}Schedule`;
      const rule = new Rule(this, `${id}Rule`, {
        description: `Runs the ${name} function every ${spec.schedule.rateMinutes} minutes`,
        schedule: Schedule.rate(Duration.minutes(spec.schedule.rateMinutes)),
      });
      rule.addTarget(
        new LambdaFunction(step.function, {
          deadLetterQueue: step.deadLetterQueue,
          retryAttempts: config.retryAttempts,
          maxEventAge: Duration.seconds(config.maxEventAgeSeconds),
        }),
      );
      rules.set(id, rule);
    }
    return rules;
  }

  /** Acknowledgements, with reasons, for resources CDK itself adds to the stack. */
  private acknowledgeCdkManagedResources(): void {
    for (const child of this.node.children) {
      // The singleton function of CDK's AwsCustomResource (the catalog seed's puts at deploy).
      if (child.node.id.startsWith(AWS_CUSTOM_RESOURCE_SINGLETON)) {
        const reason =
          "CDK's own AwsCustomResource provider, invoked synchronously by CloudFormation at deploy (the catalog " +
          "seed's puts); CDK owns its settings, and CloudFormation reports a failure itself.";
        for (const id of [
          'Serverless-LambdaDLQ',
          'Serverless-LambdaTracing',
          'Serverless-LambdaDefaultMemorySize',
        ])
          Validations.of(child).acknowledge({ id, reason });
      }
      if (!child.node.id.startsWith('BucketNotificationsHandler')) continue;
      Validations.of(child).acknowledge({
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
        reason:
          "CDK's own BucketNotificationsHandler (turns on the resources bucket's EventBridge notifications at " +
          'deploy time) uses the AWS managed basic execution role for its logs; CDK owns that role.',
      });
    }
  }
}
