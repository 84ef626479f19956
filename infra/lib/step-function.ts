import { join } from 'node:path';
import { Annotations, Duration, type RemovalPolicy, Validations } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import type { ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ConfigError } from '../../shared/errors.js';
import {
  bedrockFindings,
  bedrockStatements,
  objectPatternFinding,
  secretStatements,
  storageStatements,
  tableStatements,
} from './access.js';
import { LAMBDA_POLICY_DIR, nodejsBundling, PROJECT_ROOT, policyBundle } from './bundling.js';
import { OFFLINE_MODEL, type StackConfig } from './config.js';
import { type FunctionSpec, KEY_PATTERN_REASONS } from './functions.js';
import type { ChannelSecretName } from './secrets.js';

/** Construct props of {@link StepFunction}. */
export interface StepFunctionProps {
  /** The function's name in the function table (`plan`, `assistant`, ...); also `CLD_FUNCTION`. */
  name: string;
  spec: FunctionSpec;
  config: StackConfig;
  bucket: IBucket;
  table: ITableV2;
  /** The channel secrets (infra/lib/secrets.ts); the function is granted only those its spec names. */
  secrets: Readonly<Record<ChannelSecretName, ISecret>>;
  /** Log group and queue removal policy of the stage. */
  removalPolicy: RemovalPolicy;
  /** Project root holding `package-lock.json`, `functions/` and `policies/` (default: this repo). */
  projectRoot?: string;
}

/** Id of the warning added to a function deployed without its compiled OPA policy. */
export const POLICY_BUNDLE_WARNING = 'cld:policyBundleWithoutWasm';

/**
 * One Lambda function with the project's defaults (STYLE.md "Infra": one construct holds the
 * Lambda defaults; each function supplies its entry and its policy bundle):
 * `NodejsFunction` bundled locally with esbuild (ESM, minified, source maps; infra/lib/bundling.ts),
 * ARM64, Node.js 22, X-Ray active tracing, its own log group with explicit retention, its own
 * role with only the statements its table entry declares (S3 key patterns, projections-table
 * actions and partitions, Bedrock, channel secrets), each grant set together with the variable
 * naming its resource, and an alarm on function errors. An `eventbridge` function also gets an
 * encrypted TLS-only SQS dead-letter queue for failed asynchronous invocations, bounded retries
 * and event age, and an alarm on the queue; an `http-api` function is invoked synchronously and
 * has none of these. Every wildcard resource of its role gets a cdk-nag acknowledgement with its
 * written reason (KEY_PATTERN_REASONS, bedrockFindings).
 * @throws ConfigError at synth when a wildcard key pattern has no written reason, or the spec's
 *   `environment` sets a variable the construct sets itself
 */
export class StepFunction extends Construct {
  readonly function: NodejsFunction;
  /** How the function is invoked (its table entry's `trigger`). */
  readonly trigger: FunctionSpec['trigger'];
  /** The dead-letter queue of an `eventbridge` function (undefined for `http-api`). */
  readonly deadLetterQueue: Queue | undefined;
  readonly logGroup: LogGroup;
  readonly role: Role;
  /** The alarm on the dead-letter queue (undefined for `http-api`). */
  readonly deadLetterAlarm: Alarm | undefined;
  readonly errorsAlarm: Alarm;

  constructor(scope: Construct, id: string, props: StepFunctionProps) {
    super(scope, id);
    const { name, spec, config, bucket, table } = props;
    const projectRoot = props.projectRoot ?? PROJECT_ROOT;
    this.trigger = spec.trigger;
    const asynchronous = spec.trigger === 'eventbridge';

    this.logGroup = new LogGroup(this, 'Logs', {
      retention: config.logRetentionDays as RetentionDays,
      removalPolicy: props.removalPolicy,
    });
    this.deadLetterQueue = asynchronous
      ? new Queue(this, 'DeadLetterQueue', {
          encryption: QueueEncryption.SQS_MANAGED,
          enforceSSL: true,
          retentionPeriod: Duration.days(14),
          removalPolicy: props.removalPolicy,
        })
      : undefined;

    this.role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `cld ${name} function`,
    });
    this.logGroup.grantWrite(this.role);

    const environment: Record<string, string> = {
      CLD_FUNCTION: name,
      CLD_POLICY_DIR: LAMBDA_POLICY_DIR,
      POWERTOOLS_SERVICE_NAME: 'cld',
      POWERTOOLS_LOG_LEVEL: config.logLevel,
      NODE_OPTIONS: '--enable-source-maps',
    };
    if (Object.keys(config.limits).length > 0) environment.CLD_LIMITS = JSON.stringify(config.limits);

    // Each grant comes with the env var naming what it grants.
    const storage = storageStatements(bucket, spec.storage);
    for (const statement of storage) this.role.addToPolicy(statement);
    if (storage.length > 0) environment.CLD_BUCKET = bucket.bucketName;
    const projections = tableStatements(table, spec.table, spec.tablePartitions);
    for (const statement of projections) this.role.addToPolicy(statement);
    if (projections.length > 0) environment.CLD_TABLE = table.tableName;
    const secretVariables = Object.entries(spec.secrets ?? {}) as [string, ChannelSecretName][];
    for (const statement of secretStatements(secretVariables.map(([, secret]) => props.secrets[secret])))
      this.role.addToPolicy(statement);
    for (const [variable, secret] of secretVariables) environment[variable] = props.secrets[secret].secretArn;
    if (spec.model && config.modelId !== OFFLINE_MODEL) {
      for (const statement of bedrockStatements(this, config.modelId)) this.role.addToPolicy(statement);
      environment.CLD_MODEL_ID = config.modelId;
    }

    for (const [variable, value] of Object.entries(spec.environment ?? {})) {
      if (variable in environment)
        throw new ConfigError(
          `function ${name}: environment sets ${variable}, which the construct sets itself`,
        );
      environment[variable] = value;
    }

    const policy = policyBundle(name, projectRoot);
    const reserved = config.reservedConcurrency[name];
    this.function = new NodejsFunction(this, 'Function', {
      entry: join(projectRoot, spec.entry),
      handler: 'handler',
      description: spec.description,
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      memorySize: spec.memoryMb,
      timeout: Duration.seconds(spec.timeoutSeconds),
      tracing: Tracing.ACTIVE,
      logGroup: this.logGroup,
      role: this.role,
      environment,
      ...(spec.boundedConcurrency && reserved !== undefined
        ? { reservedConcurrentExecutions: reserved }
        : {}),
      ...(this.deadLetterQueue
        ? {
            deadLetterQueue: this.deadLetterQueue,
            retryAttempts: config.retryAttempts,
            maxEventAge: Duration.seconds(config.maxEventAgeSeconds),
          }
        : {}),
      projectRoot,
      depsLockFilePath: join(projectRoot, 'package-lock.json'),
      bundling: nodejsBundling(name, policy.wasm !== undefined),
    });
    if (!policy.wasm) {
      Annotations.of(this.function).addWarningV2(
        POLICY_BUNDLE_WARNING,
        `${name} is bundled without policies/dist/${name}.wasm (run npm run build:policies): ` +
          'only policies/rules.json is in its policy bundle.',
      );
    }

    this.deadLetterAlarm = this.deadLetterQueue
      ? new Alarm(this, 'DeadLetterAlarm', {
          alarmDescription: `cld ${name}: events failed every attempt and are in the dead-letter queue`,
          metric: this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
            period: Duration.minutes(1),
            statistic: 'Maximum',
          }),
          threshold: 0,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        })
      : undefined;
    this.errorsAlarm = new Alarm(this, 'ErrorsAlarm', {
      alarmDescription: asynchronous
        ? `cld ${name}: invocations failed (they are retried, then dead-lettered)`
        : `cld ${name}: requests failed with an unhandled error (the caller got a 5xx)`,
      metric: this.function.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
      threshold: 0,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });

    Validations.of(this.function).acknowledge({
      id: 'AwsSolutions-L1',
      reason:
        'Node.js 22 is the runtime this project targets and tests (package.json engines, CI on Node 20/22); ' +
        'moving to Node.js 24 is a tested upgrade, not a synth-time default.',
    });
    this.acknowledgeWildcards(name, spec, config, bucket);
    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Only xray:PutTraceSegments and xray:PutTelemetryRecords (added by Tracing.ACTIVE) use Resource *: ' +
        'X-Ray does not support resource-level permissions for them.',
    });
  }

  /** One acknowledgement, with its written reason, per wildcard resource of this function's role. */
  private acknowledgeWildcards(name: string, spec: FunctionSpec, config: StackConfig, bucket: IBucket): void {
    const patterns = new Set([...spec.storage.read, ...spec.storage.create].filter((p) => p.includes('*')));
    for (const pattern of patterns) {
      const reason = KEY_PATTERN_REASONS[pattern];
      if (!reason) {
        throw new ConfigError(
          `function ${name}: key pattern ${pattern} has no written reason (KEY_PATTERN_REASONS in infra/lib/functions.ts)`,
        );
      }
      Validations.of(this.role).acknowledge({ id: objectPatternFinding(bucket, pattern), reason });
    }
    if (spec.model && config.modelId !== OFFLINE_MODEL) {
      for (const finding of bedrockFindings(config.modelId)) Validations.of(this.role).acknowledge(finding);
    }
  }
}
