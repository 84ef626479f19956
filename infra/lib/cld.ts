import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CfnOutput, Duration, RemovalPolicy, Stack, Stage, Tags, Validations } from 'aws-cdk-lib';
import type { Dashboard } from 'aws-cdk-lib/aws-cloudwatch';
import { AttributeType, Billing, type ITableV2, TableEncryptionV2, TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { type IManagedPolicy, PermissionsBoundary } from 'aws-cdk-lib/aws-iam';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import {
  BlockPublicAccess,
  Bucket,
  BucketEncryption,
  type IBucket,
  ObjectOwnership,
} from 'aws-cdk-lib/aws-s3';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct, type IConstruct } from 'constructs';
import {
  type CatalogFiles,
  catalogObjects,
  DEFAULT_CATALOG_FILES,
  defaultCatalog,
} from '../../shared/catalog/catalog.js';
import { API_ROUTES, type ApiRoute } from '../../shared/channels/routes.js';
import { ConfigError, ValidationError } from '../../shared/errors.js';
import { type Route, routingTable } from '../../shared/events/routing.js';
import { PROJECT_ROOT } from './bundling.js';
import { CatalogSeed } from './catalog-seed.js';
import { addModelRegionRule, checkPolicyBundles } from './checks.js';
import { CONFIG_DEFAULTS, isProduction, type StackConfig, StackConfigSchema } from './config.js';
import { rulesOfRoute, toCdkEventPattern } from './event-rules.js';
import { DEAD_LETTER_CONSUMPTION, FUNCTION_TABLE, type FunctionSpec } from './functions.js';
import { ChannelsApi } from './http-api.js';
import { Monitoring, notifyAllAlarms } from './monitoring.js';
import { CHANNEL_SECRET_NAMES, CHANNEL_SECRETS, type ChannelSecretName, channelSecrets } from './secrets.js';
import { pascalCase as pascal, StepFunction } from './step-function.js';

/**
 * Props of {@link Cld}: what a platform engineer sets when embedding cld in a CDK app of their
 * own. Each setting has the same meaning as the `cld:*` context key of the standalone app
 * (infra/lib/config.ts, whose table gives ranges and defaults); all are validated at synth with
 * the same schema, and a bad value throws `ConfigError` naming the prop.
 */
export interface CldProps {
  /**
   * Stage name, `[a-z][a-z0-9-]{0,19}`: shown in the API's description and the alarm topic's
   * display name; `prod` keeps log groups, queues and created secrets on deletion (else they are
   * destroyed), keeps access logs 365 days and noncurrent versions 90 days (else 30 and 7), turns on
   * the table's deletion protection and defaults {@link logRetention} to a year. No physical
   * name is derived from it.
   */
  readonly stageName: string;
  /**
   * The Bedrock model every step calls: a model id (`anthropic.claude-...`), a system-defined
   * inference-profile id (`global.anthropic...`, `eu.anthropic...`), an inference-profile ARN, or
   * `offline` (no Bedrock; a smoke test of the pipeline). A geography profile adds a
   * CloudFormation rule that refuses a deploy outside that geography's Regions.
   */
  readonly modelId: string;
  /** A model per step (`plan`, `assistant`, `answer`, `judge`; shared/llm/steps.ts); default: {@link modelId} for every step. */
  readonly models?: StackConfig['models'];
  /**
   * The JWT authorizer's issuer (`iss`), an HTTPS URL such as
   * `https://cognito-idp.<region>.amazonaws.com/<pool id>`. Without it the user routes are left
   * out (a synth warning) and the API serves the Slack/Teams webhooks only.
   */
  readonly jwtIssuer?: string;
  /** The JWT authorizer's audiences (`aud`, or `client_id` of tokens without `aud`), 1–20; required with {@link jwtIssuer}. */
  readonly jwtAudience?: readonly string[];
  /**
   * An existing SNS topic every alarm of the construct notifies (ALARM and OK actions); default:
   * a topic created here (TLS-only publishing), exposed as {@link Cld.alarmTopic}.
   */
  readonly alarmTopic?: ITopic;
  /** An e-mail address subscribed to the alarm topic (AWS sends a confirmation e-mail). */
  readonly alarmEmail?: string;
  /**
   * An existing bucket to hold the resources (the event log, URN-keyed JSON objects) instead of
   * one created here. The construct turns on its EventBridge notifications (the events drive every
   * step); it should be versioned, encrypted, TLS-only and not public, as the created one is. Its
   * removal policy and access logs stay the owner's.
   */
  readonly bucket?: IBucket;
  /**
   * An existing DynamoDB table for the projections (counters, idempotency records, budgets,
   * reply routing) instead of one created here: string partition key `pk`, string sort key `sk`,
   * TTL attribute `expiration`.
   */
  readonly table?: ITableV2;
  /**
   * Removal policy of the data the construct creates (the resources bucket, its access-logs
   * bucket, the projections table). Default `RETAIN` in every stage; `DESTROY` also empties the
   * buckets on deletion (for scratch stacks only: the bucket is the event log).
   */
  readonly removalPolicy?: RemovalPolicy;
  /** Retention of every log group the construct creates (functions, API access logs, catalog seed); default one year in `prod`, else two weeks. */
  readonly logRetention?: RetentionDays;
  /**
   * Reserved concurrency by function name, opt-in, for the functions with `boundedConcurrency`
   * (`assistant`, `tool`, `slack`, `teams`), 1–1000 each; default none (reserving fails on
   * accounts whose concurrency quota is below 100 + the sum).
   */
  readonly reservedConcurrency?: Readonly<Record<string, number>>;
  /** Tags added to every taggable resource of the construct (`Tags.of(this).add`). */
  readonly tags?: Readonly<Record<string, string>>;
  /**
   * A permissions boundary set on every IAM role the construct creates, including the roles of
   * the stack-wide providers CDK adds for it (S3 bucket notifications, the catalog seed's
   * `AwsCustomResource`, auto-deletion of objects) (`iam.PermissionsBoundary.of(...).apply`).
   * Those providers are shared by every construct of the stack that uses them, so they get the
   * boundary of the last `Cld` that sets one.
   */
  readonly permissionsBoundary?: IManagedPolicy;
  /** Partial `Limits` (shared/domain/limits.ts) over the code's defaults. */
  readonly limits?: StackConfig['limits'];
  /** HTTPS origins allowed by the HTTP API's CORS (no path, no `*`), ≤ 20; default none (no browser calls from other origins). */
  readonly allowedOrigins?: readonly string[];
  /** Throttle of the API's `$default` stage; default 25 requests/s, bursts of 50. */
  readonly apiThrottle?: StackConfig['apiThrottle'];
  /** Throttle of each webhook route (`/slack/*`, `/teams/*`); default 10 requests/s, bursts of 20. */
  readonly webhookThrottle?: StackConfig['webhookThrottle'];
  /** Existing channel secrets by name (complete Secrets Manager ARNs); the others are created. */
  readonly secretArns?: StackConfig['secretArns'];
  /** Asynchronous-invocation retries of the EventBridge-driven functions and their rules' targets, 0–2; default 2. */
  readonly retryAttempts?: number;
  /** Maximum age of an asynchronous event, 60–21,600 seconds; default 3600. */
  readonly maxEventAge?: Duration;
  /** Powertools log level of the functions; default `INFO`. */
  readonly logLevel?: StackConfig['logLevel'];
  /**
   * `NODE_OPTIONS=--enable-source-maps` on every function (stack traces name TypeScript lines, at
   * ≈ 30 ms of CPU per cold start to read the bundle's source map); default false.
   */
  readonly sourceMaps?: boolean;
  /** The web console's OIDC sign-in (infra/lib/config.ts `cld:consoleAuth`); requires {@link jwtIssuer}. */
  readonly consoleAuth?: StackConfig['consoleAuth'];
  /** MCP servers the tool function calls (Streamable HTTP over `https:`, header secrets by complete ARN). */
  readonly mcpServers?: StackConfig['mcpServers'];
  /** JWT `sub` values of the operators who may approve and revoke discovered tools over the API, ≤ 50. */
  readonly operatorSubjects?: readonly string[];
  /**
   * The catalog as data: assistant and tool definition files (the shapes of
   * shared/catalog/assistants/*.json and tools/*.json: `AssistantFileSchema`, `ToolFileSchema`),
   * instead of the default catalog of shared/catalog/. The deploy stores each (create-only,
   * versioned by content) and every function runs this catalog (copied into its asset, read at
   * cold start). A tool defines the description and parameters of one of the tools the code
   * implements (`graph`, `read`, `search`); an assistant may name only tools of this catalog.
   */
  readonly catalog?: CatalogFiles;
  /**
   * Emit CloudFormation outputs (bucket, table, API and webhook URLs, secret ARNs, log groups,
   * dead-letter queues, alarm topic, dashboard); default true. Their logical ids carry the
   * construct's path, so two constructs in one stack do not collide.
   */
  readonly outputs?: boolean;
  /** The function table (default: infra/lib/functions.ts); for this repository's tests. */
  readonly functions?: Readonly<Record<string, FunctionSpec>>;
  /** The routing table for a bucket name (default: shared/events/routing.ts); for this repository's tests. */
  readonly routes?: (bucket: string) => Route[];
  /** The HTTP API's routes (default: shared/channels/routes.ts `API_ROUTES`); for this repository's tests. */
  readonly apiRoutes?: readonly ApiRoute[];
  /** Root holding `functions/`, `shared/` and `policies/` to bundle from (default: this package). */
  readonly projectRoot?: string;
}

/**
 * The aws-s3 feature flag under which server access logs are delivered by a bucket-policy grant
 * to `logging.s3.amazonaws.com`; without it CDK asks for the `LogDeliveryWrite` ACL, which a
 * bucket with `BUCKET_OWNER_ENFORCED` object ownership cannot have.
 */
export const SERVER_ACCESS_LOGS_USE_BUCKET_POLICY = '@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy';

/** Construct id (prefix) of the singleton function CDK adds for `AwsCustomResource`. */
const AWS_CUSTOM_RESOURCE_SINGLETON = 'AWS679f53fac002430cb0da5b7982bd2287';

/** Construct ids (prefixes) of the stack-wide providers CDK adds for what a {@link Cld} uses. */
const STACK_PROVIDERS = [
  AWS_CUSTOM_RESOURCE_SINGLETON,
  'BucketNotificationsHandler',
  'Custom::S3AutoDeleteObjectsCustomResourceProvider',
] as const;

/**
 * Every prop of {@link CldProps} (the compiler checks the list is complete): a JavaScript app's
 * misspelt prop (`alarmEmial`) is refused, not silently ignored.
 */
const PROP_NAMES: Readonly<Record<keyof CldProps, true>> = {
  stageName: true,
  modelId: true,
  models: true,
  jwtIssuer: true,
  jwtAudience: true,
  alarmTopic: true,
  alarmEmail: true,
  bucket: true,
  table: true,
  removalPolicy: true,
  logRetention: true,
  reservedConcurrency: true,
  tags: true,
  permissionsBoundary: true,
  limits: true,
  allowedOrigins: true,
  apiThrottle: true,
  webhookThrottle: true,
  secretArns: true,
  retryAttempts: true,
  maxEventAge: true,
  logLevel: true,
  sourceMaps: true,
  consoleAuth: true,
  mcpServers: true,
  operatorSubjects: true,
  catalog: true,
  outputs: true,
  functions: true,
  routes: true,
  apiRoutes: true,
  projectRoot: true,
};

/**
 * The deployment config of a {@link Cld} from its props, validated with the schema the context
 * keys go through (infra/lib/config.ts).
 * @throws ConfigError naming each bad prop
 */
export function configOfProps(props: CldProps): StackConfig {
  const unknown = Object.keys(props).filter((key) => !Object.hasOwn(PROP_NAMES, key));
  if (unknown.length > 0)
    throw new ConfigError(`invalid Cld props: unknown ${unknown.map((k) => `'${k}'`).join(', ')}`, {
      details: { problems: unknown.map((k) => `${k}: not a prop of Cld`) },
    });
  const stage = props.stageName;
  const candidate = {
    ...CONFIG_DEFAULTS,
    stage,
    modelId: props.modelId,
    logRetentionDays:
      props.logRetention ?? (isProduction({ stage }) ? RetentionDays.ONE_YEAR : RetentionDays.TWO_WEEKS),
    destroyData: props.removalPolicy === RemovalPolicy.DESTROY,
    ...defined({
      models: props.models,
      limits: props.limits,
      allowedOrigins: props.allowedOrigins && [...props.allowedOrigins],
      jwtIssuer: props.jwtIssuer,
      jwtAudience: props.jwtAudience && [...props.jwtAudience],
      apiThrottle: props.apiThrottle,
      webhookThrottle: props.webhookThrottle,
      secretArns: props.secretArns,
      reservedConcurrency: props.reservedConcurrency,
      retryAttempts: props.retryAttempts,
      maxEventAgeSeconds: props.maxEventAge?.toSeconds(),
      logLevel: props.logLevel,
      sourceMaps: props.sourceMaps,
      consoleAuth: props.consoleAuth,
      mcpServers: props.mcpServers,
      operatorSubjects: props.operatorSubjects && [...props.operatorSubjects],
      alarmEmail: props.alarmEmail,
    }),
  };
  const parsed = StackConfigSchema.safeParse(candidate);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const [field, ...rest] = issue.path.map(String);
      const prop = PROP_OF_FIELD[field ?? ''] ?? field ?? 'props';
      return `${[prop, ...rest].join('.')}: ${issue.message}`;
    });
    throw new ConfigError(`invalid Cld props:\n  ${problems.join('\n  ')}`, { details: { problems } });
  }
  return parsed.data;
}

/**
 * Checks a catalog given as data: every definition valid, every tool one the code implements
 * (the default catalog's tools), every tool an assistant names in the catalog.
 * @returns the objects the deploy stores
 * @throws ConfigError naming the problem (`catalog: ...`)
 */
export function checkCatalog(files: CatalogFiles): ReturnType<typeof catalogObjects> {
  let catalog: ReturnType<typeof defaultCatalog>;
  try {
    catalog = defaultCatalog({}, files);
  } catch (error) {
    if (error instanceof ValidationError)
      throw new ConfigError(`catalog: ${error.message}`, { cause: error });
    throw error;
  }
  const implemented = new Set(defaultCatalog({}, DEFAULT_CATALOG_FILES).tools.map((t) => t.function.name));
  const tools = new Set(catalog.tools.map((t) => t.function.name));
  for (const name of tools)
    if (!implemented.has(name))
      throw new ConfigError(
        `catalog: tool "${name}" has no implementation (the code implements ${[...implemented].join(', ')})`,
      );
  for (const assistant of catalog.assistants)
    for (const name of assistant.tools)
      if (!tools.has(name))
        throw new ConfigError(
          `catalog: assistant "${assistant.meta.name}" names tool "${name}", which the catalog does not define`,
        );
  return catalogObjects(files);
}

/** Config fields whose prop has another name. */
const PROP_OF_FIELD: Readonly<Record<string, string>> = {
  stage: 'stageName',
  logRetentionDays: 'logRetention',
  maxEventAgeSeconds: 'maxEventAge',
  destroyData: 'removalPolicy',
};

/** The entries of `record` whose value is not undefined. */
function defined(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined));
}

/**
 * A physical-name prefix unique in the account and Region: the stack's name, then the ids of
 * the construct path below the stack, `Default` left out (as CDK leaves it out of logical ids),
 * joined with `-`. A `Cld` with id `Default` in stack `Cld-dev` gets `Cld-dev`; `Agents` in
 * `Platform` gets `Platform-Agents`.
 */
export function namePrefix(scope: IConstruct): string {
  const stack = Stack.of(scope);
  const scopes = scope.node.scopes;
  const below = scopes.slice(scopes.indexOf(stack) + 1).map((s) => s.node.id);
  return [stack.stackName, ...below.filter((id) => id !== 'Default')]
    .join('-')
    .replace(/[^A-Za-z0-9_-]/g, '-');
}

/**
 * cld, the event-sourced system of DESIGN.md, as one construct to place in any stack:
 * `new Cld(this, 'Agents', { stageName: 'prod', modelId: 'global.anthropic...', ... })`.
 *
 * - Resources bucket ({@link CldProps.bucket} or created): URN-keyed objects, S3 → EventBridge
 *   notifications, versioned, SSE-S3, public access blocked, TLS only, server access logs to a
 *   second bucket; removal policy {@link CldProps.removalPolicy} (default retain).
 * - Projections table ({@link CldProps.table} or created, DynamoDB): `pk`/`sk` strings, TTL
 *   attribute `expiration`, on-demand, point-in-time recovery, AWS managed KMS key;
 *   deletion-protected in `prod`.
 * - Monitoring (infra/lib/monitoring.ts): every alarm of the construct notifies one SNS topic
 *   ({@link CldProps.alarmTopic} or created); an API 5xx alarm; a CloudWatch dashboard.
 * - The channel secrets (Slack signing secret and bot token, Teams security token and webhook
 *   URL): existing ones by ARN, the others created (infra/lib/secrets.ts).
 * - The default catalog, stored at deploy with create-only puts ({@link CatalogSeed}).
 * - One {@link StepFunction} per entry of the function table, each with its own role.
 * - Dead letters: each `eventbridge` function's queue receives its failed asynchronous
 *   invocations and the events its rules could not deliver; the task-tree steps' queues are read
 *   by the table's `sqs` function, which fails the affected task.
 * - One EventBridge rule on the default bus per route of the routing table, and one scheduled
 *   rule per function with a `schedule` (the sweeper).
 * - The HTTP API of the channels, one route per entry of `API_ROUTES` ({@link ChannelsApi}).
 *
 * No physical names but the dashboard's and the API's, both derived from the construct's path
 * ({@link namePrefix}), so two `Cld` in one stack do not collide; the stage is a prop, never
 * assumed. Logical ids follow the construct path: a `Cld` with id `Default` keeps the ids of
 * the resources it holds as if they were the stack's own (how infra/lib/stack.ts keeps the
 * standalone stack's bucket and table in place).
 * @throws ConfigError at synth for a bad prop ({@link configOfProps}); when an event route or an
 *   API route names a function the table does not have, or one of the other trigger; when the
 *   table has more than one `sqs` function, or an `eventbridge` function with
 *   `deadLetters: 'fail-task'` and no `sqs` function
 */
export class Cld extends Construct {
  /** The deployment config resolved from the props (channels read `allowedOrigins` from it). */
  readonly config: StackConfig;
  /** The resources bucket (the event log). */
  readonly bucket: IBucket;
  /** The bucket receiving the resources bucket's server access logs (undefined with {@link CldProps.bucket}). */
  readonly accessLogsBucket: Bucket | undefined;
  /** The projections table. */
  readonly table: ITableV2;
  /** The functions by name in the function table (`plan`, `assistant`, `tool`, `http`, ...). */
  readonly functions: ReadonlyMap<string, StepFunction>;
  /** The dead-letter consumer (the table's `sqs` function), when the table has one. */
  readonly deadLetterConsumer: StepFunction | undefined;
  /** The EventBridge rules by route id (and `<Function>Schedule`). */
  readonly rules: ReadonlyMap<string, Rule>;
  /** The channel secrets by name. */
  readonly secrets: Readonly<Record<ChannelSecretName, ISecret>>;
  /** The channels' HTTP API. */
  readonly httpApi: ChannelsApi;
  /** The base URL of the HTTP API's `$default` stage, ending in `/` (a token until deploy). */
  readonly apiUrl: string;
  /** The catalog, stored at deploy (no function writes it). */
  readonly catalogSeed: CatalogSeed;
  /** The alarm topic (every alarm's action), the API 5xx alarm and the dashboard. */
  readonly monitoring: Monitoring;
  /** The topic every alarm of the construct notifies. */
  readonly alarmTopic: ITopic;
  /** The CloudWatch dashboard of the conversations. */
  readonly dashboard: Dashboard;
  private readonly functionSpecs: ReadonlyMap<string, FunctionSpec>;

  constructor(scope: Construct, id: string, props: CldProps) {
    super(scope, id);
    // The access-logs bucket takes S3's log delivery by bucket policy (ACLs stay disabled),
    // whatever the enclosing app's feature flags say; the standalone app sets the same flag.
    this.node.setContext(SERVER_ACCESS_LOGS_USE_BUCKET_POLICY, true);
    const config = configOfProps(props);
    this.config = config;
    const production = isProduction(config);
    const removalPolicy = production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    const dataRemovalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const prefix = namePrefix(this);

    if (props.bucket) {
      this.bucket = props.bucket;
      this.bucket.enableEventBridgeNotification();
      this.accessLogsBucket = undefined;
    } else {
      const created = this.createBuckets(production, dataRemovalPolicy, config.destroyData);
      this.bucket = created.bucket;
      this.accessLogsBucket = created.accessLogs;
    }
    this.table =
      props.table ??
      new TableV2(this, 'ProjectionsTable', {
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
    const catalog = props.catalog ? this.writeCatalog(props.catalog) : undefined;
    this.catalogSeed = new CatalogSeed(this, 'CatalogSeed', {
      bucket: this.bucket,
      logRetention: config.logRetentionDays as RetentionDays,
      removalPolicy,
      ...(catalog ? { objects: catalog.objects } : {}),
    });

    const projectRoot = props.projectRoot ?? PROJECT_ROOT;
    const table = Object.entries(props.functions ?? FUNCTION_TABLE);
    this.functions = this.addFunctions(table, config, removalPolicy, projectRoot, catalog?.file);
    this.functionSpecs = new Map(table);
    this.deadLetterConsumer = [...this.functions.values()].find((step) => step.trigger === 'sqs');
    checkPolicyBundles(this, projectRoot);
    const consumed = new Map(
      table
        .filter(([, spec]) => spec.deadLetters === 'fail-task')
        .map(([name]) => [name, this.functions.get(name)?.deadLetterQueue as Queue]),
    );
    if (this.deadLetterConsumer && consumed.size > 0)
      this.deadLetterConsumer.consumeDeadLetterQueues(consumed);
    this.rules = new Map([
      ...this.addRoutes(props.routes ?? routingTable, this.bucket, config),
      ...this.addSchedules(config),
    ]);
    this.httpApi = new ChannelsApi(this, 'HttpApi', {
      config,
      routes: props.apiRoutes ?? API_ROUTES,
      functions: new Map(
        [...this.functions].map(([name, step]) => [name, { trigger: step.trigger, function: step.function }]),
      ),
      removalPolicy,
      apiName: `${prefix}-api`,
    });
    this.apiUrl = this.httpApi.url;
    addModelRegionRule(this, config.modelId);
    this.monitoring = new Monitoring(this, 'Monitoring', {
      config,
      functions: this.functions,
      api: this.httpApi.api,
      dashboardName: `${prefix}-conversations`,
      ...(props.alarmTopic ? { alarmTopic: props.alarmTopic } : {}),
    });
    this.alarmTopic = this.monitoring.alarmTopic;
    this.dashboard = this.monitoring.dashboard;
    notifyAllAlarms(this, this.alarmTopic);
    this.acknowledgeCdkManagedResources();
    for (const [key, value] of Object.entries(props.tags ?? {})) Tags.of(this).add(key, value);
    if (props.permissionsBoundary) this.applyPermissionsBoundary(props.permissionsBoundary);
    if (props.outputs ?? true) this.addOutputs(props.apiRoutes ?? API_ROUTES);
  }

  /** The resources bucket and its access-logs bucket (ids `ResourcesBucket`, `AccessLogsBucket`). */
  private createBuckets(
    production: boolean,
    removalPolicy: RemovalPolicy,
    autoDeleteObjects: boolean,
  ): { bucket: Bucket; accessLogs: Bucket } {
    const accessLogs = new Bucket(this, 'AccessLogsBucket', {
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      lifecycleRules: [{ expiration: Duration.days(production ? 365 : 30) }],
      removalPolicy,
      autoDeleteObjects,
    });
    const bucket = new Bucket(this, 'ResourcesBucket', {
      eventBridgeEnabled: true,
      versioned: true,
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: accessLogs,
      serverAccessLogsPrefix: 'resources/',
      lifecycleRules: [
        { abortIncompleteMultipartUploadAfter: Duration.days(1) },
        // Resources are create-only, so noncurrent versions only come from deletes by operators.
        { noncurrentVersionExpiration: Duration.days(production ? 90 : 7) },
      ],
      removalPolicy,
      autoDeleteObjects,
    });
    return { bucket, accessLogs };
  }

  /**
   * One {@link StepFunction} per entry of the table, the dead-letter consumer first (the queues
   * it reads redrive to its own queue); each waits for the catalog seed.
   */
  private addFunctions(
    table: [string, FunctionSpec][],
    config: StackConfig,
    removalPolicy: RemovalPolicy,
    projectRoot: string,
    catalogFile: string | undefined,
  ): ReadonlyMap<string, StepFunction> {
    const consumers = table.filter(([, spec]) => spec.trigger === 'sqs');
    if (consumers.length > 1) {
      throw new ConfigError(
        `the function table has ${consumers.length} dead-letter consumers (trigger "sqs": ${consumers.map(([n]) => n).join(', ')}); one consumes every queue`,
      );
    }
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
        projectRoot,
        ...(catalogFile ? { catalogFile } : {}),
        ...(consumer ? { deadLetterConsumer: consumer } : {}),
      });
      // The catalog version the bundle names is stored before the function runs the bundle.
      step.function.node.addDependency(this.catalogSeed);
      if (spec.trigger === 'sqs') consumer = step;
      functions.set(name, step);
    }
    return functions;
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
        rule.addTarget(this.targetOf(step, config));
        rules.set(part.id, rule);
      }
    }
    return rules;
  }

  /** A rule's target: the function, with bounded retries, maximum event age and its dead-letter queue. */
  private targetOf(step: StepFunction, config: StackConfig): LambdaFunction {
    return new LambdaFunction(step.function, {
      ...(step.deadLetterQueue ? { deadLetterQueue: step.deadLetterQueue } : {}),
      retryAttempts: config.retryAttempts,
      maxEventAge: Duration.seconds(config.maxEventAgeSeconds),
    });
  }

  /**
   * One scheduled rule per function with a `schedule` (the sweeper): `rate(<n> minutes)` on the
   * default bus, target the function as the routes' targets.
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
      rule.addTarget(this.targetOf(step, config));
      rules.set(id, rule);
    }
    return rules;
  }

  /**
   * Checks the catalog ({@link checkCatalog}) and writes it, as the functions' assets hold it,
   * to `<cloud assembly>/cld-catalog-<sha256>.json`, the file each asset copies.
   */
  private writeCatalog(files: CatalogFiles): { objects: ReturnType<typeof catalogObjects>; file: string } {
    const objects = checkCatalog(files);
    const body = JSON.stringify({ assistants: files.assistants, tools: files.tools });
    const outdir = Stage.of(this)?.outdir ?? mkdtempSync(join(tmpdir(), 'cld-catalog-'));
    mkdirSync(outdir, { recursive: true });
    const file = join(
      outdir,
      `cld-catalog-${createHash('sha256').update(body).digest('hex').slice(0, 16)}.json`,
    );
    writeFileSync(file, body);
    return { objects, file };
  }

  /** The stack-wide providers CDK added for this construct (they are children of the stack). */
  private stackProviders(): IConstruct[] {
    return Stack.of(this).node.children.filter((child) =>
      STACK_PROVIDERS.some((prefix) => child.node.id.startsWith(prefix)),
    );
  }

  /** The boundary on every role under this construct and on the stack-wide providers' roles. */
  private applyPermissionsBoundary(boundary: IManagedPolicy): void {
    PermissionsBoundary.of(this).apply(boundary);
    for (const provider of this.stackProviders()) PermissionsBoundary.of(provider).apply(boundary);
  }

  /** Acknowledgements, with reasons, for resources CDK itself adds to the stack. */
  private acknowledgeCdkManagedResources(): void {
    for (const child of this.stackProviders()) {
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

  /** The CloudFormation outputs (ids relative to this construct). */
  private addOutputs(apiRoutes: readonly ApiRoute[]): void {
    const config = this.config;
    new CfnOutput(this, 'ResourcesBucketName', {
      description: 'Resources bucket (URN-keyed JSON objects; the event log)',
      value: this.bucket.bucketName,
    });
    new CfnOutput(this, 'ProjectionsTableName', {
      description: 'Projections table (counters, idempotency records, budgets, reply routing)',
      value: this.table.tableName,
    });
    for (const [name, step] of this.functions) {
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
      value: this.alarmTopic.topicArn,
    });
    new CfnOutput(this, 'DashboardName', {
      description:
        'CloudWatch dashboard of the conversations (steps, errors, throttles, dead letters, tokens)',
      value: this.dashboard.dashboardName,
    });
    new CfnOutput(this, 'ApiUrl', {
      description: 'HTTP API base URL ($default stage), e.g. POST <ApiUrl>conversations with a JWT',
      value: this.apiUrl,
    });
    new CfnOutput(this, 'ApiAccessLogGroupName', {
      description: 'Access logs of the HTTP API (one JSON line per request)',
      value: this.httpApi.accessLogs.logGroupName,
    });
    new CfnOutput(this, 'ConsoleUrl', {
      description:
        'The web console (sign in with the JWT issuer: register this URL as a callback URL of the app client named by cld:consoleAuth)',
      value: this.apiUrl,
    });
    for (const route of apiRoutes) {
      // Webhooks: the unauthenticated routes other than the console's static files.
      if (route.auth !== 'none' || route.function === 'http') continue;
      new CfnOutput(this, `${pascal(route.path)}WebhookUrl`, {
        description: `${route.method} ${route.path}: ${route.description}`,
        value: `${this.apiUrl}${route.path.slice(1)}`,
      });
    }
    for (const name of CHANNEL_SECRET_NAMES) {
      new CfnOutput(this, `${pascal(name)}SecretArn`, {
        description: `${config.secretArns[name] ? 'Existing' : 'Created'} secret: ${CHANNEL_SECRETS[name].description}`,
        value: this.secrets[name].secretArn,
      });
    }
  }
}
