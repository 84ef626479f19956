import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Annotations, Duration, type RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, type Metric, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import type { ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, RecursiveLoop, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import { type BundlingOptions, NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import { type IQueue, Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { BUNDLED_CATALOG_FILE } from '../../shared/catalog/catalog.js';
import { ConfigError } from '../../shared/errors.js';
import { DEAD_LETTER_QUEUES_VARIABLE } from '../../shared/events/dead-letter-record.js';
import {
  bedrockFindings,
  bedrockStatements,
  consumeQueueStatements,
  mcpSecretStatements,
  objectPatternFinding,
  putEventsStatements,
  secretStatements,
  storageStatements,
  tableStatements,
} from './access.js';
import {
  LAMBDA_CONSOLE_DIR,
  LAMBDA_POLICY_DIR,
  nodejsBundling,
  PROJECT_ROOT,
  policyBundle,
} from './bundling.js';
import { consoleAuthOf, OFFLINE_MODEL, type StackConfig, stepModelIds } from './config.js';
import { DEAD_LETTER_CONSUMPTION, type FunctionSpec, KEY_PATTERN_REASONS } from './functions.js';
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
  /**
   * The dead-letter consumer (the table's `sqs` function), for an `eventbridge` function whose
   * dead letters it consumes (`deadLetters: 'fail-task'`): its queue then redrives to the
   * consumer's {@link StepFunction.unprocessedQueue} after `maxReceiveCount` receives, with a
   * visibility timeout of 6 × the consumer's timeout. Required for such a function.
   */
  deadLetterConsumer?: StepFunction;
  /**
   * A catalog file (`{ assistants, tools }` of definition files) copied into the asset as
   * `catalog/files.json` (shared/catalog/catalog.ts `BUNDLED_CATALOG_FILE`), which the bundle
   * runs instead of the default catalog; absent: the default.
   */
  catalogFile?: string;
}

/** Quotes a value for `bash -c` (the shell aws-lambda-nodejs runs command hooks with). */
function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Shell commands that copy `file` into the asset as its catalog (`<outputDir>/catalog/files.json`). */
export function catalogCopyCommands(file: string, outputDir: string): string[] {
  const target = `${outputDir}/${BUNDLED_CATALOG_FILE}`;
  return [
    `mkdir -p ${shellQuote(target.slice(0, target.lastIndexOf('/')))}`,
    `cp ${shellQuote(file)} ${shellQuote(target)}`,
  ];
}

/** The bundling options with {@link catalogCopyCommands} after the others, when there is a catalog file. */
function withCatalog(bundling: BundlingOptions, file: string | undefined): BundlingOptions {
  const hooks = bundling.commandHooks;
  if (!file || !hooks) return bundling;
  return {
    ...bundling,
    commandHooks: {
      ...hooks,
      afterBundling: (inputDir, outputDir) => [
        ...hooks.afterBundling(inputDir, outputDir),
        ...catalogCopyCommands(file, outputDir),
      ],
    },
  };
}

/** The age of the oldest event in Lambda's asynchronous queue above which the alarm fires (seconds). */
export const ASYNC_EVENT_AGE_ALARM_SECONDS = 300;

/** Why a function of each trigger has no Lambda `DeadLetterConfig` (cdk-nag `Serverless-LambdaDLQ`). */
const NO_DEAD_LETTER_CONFIG_REASONS: Readonly<Record<FunctionSpec['trigger'], string>> = {
  eventbridge:
    "Failed asynchronous invocations go to the function's on-failure destination, an SQS dead-letter queue with " +
    'an alarm: AWS recommends destinations over DeadLetterConfig (they carry the invocation record), and ' +
    'cdk-nag recognises only DeadLetterConfig.',
  'http-api':
    'Invoked synchronously by API Gateway: the caller gets the error, and a dead-letter queue applies only to ' +
    'asynchronous invocations.',
  sqs:
    'Invoked by SQS event source mappings: a failed record returns to its queue and is redriven to this ' +
    "function's own queue; a dead-letter queue applies only to asynchronous invocations.",
};

/** Retention of every queue of a function (SQS's maximum, 14 days). */
const QUEUE_RETENTION = Duration.days(14);

/**
 * The `depsLockFilePath` a function's `NodejsFunction` is given: `package-lock.json` of the
 * project root, or, in the installed package (npm never packs a `package-lock.json`), its
 * `package.json`. NodejsFunction reads the file only to pick a package manager for `nodeModules`
 * (which no function uses; each bundle is self-contained) and requires it under `projectRoot`.
 */
export function depsLockFileOf(projectRoot: string): string {
  const lock = join(projectRoot, 'package-lock.json');
  return existsSync(lock) ? lock : join(projectRoot, 'package.json');
}

/** Id of the warning added to a function deployed without its compiled OPA policy. */
export const POLICY_BUNDLE_WARNING = 'cld:policyBundleWithoutWasm';

/**
 * One Lambda function with the project's defaults (STYLE.md "Infra": one construct holds the
 * Lambda defaults; each function supplies its entry and its policy bundle):
 * `NodejsFunction` bundled locally with esbuild (ESM, minified, source maps shipped, enabled with `cld:sourceMaps`; infra/lib/bundling.ts),
 * ARM64, Node.js 22, X-Ray active tracing, its own log group with explicit retention, its own
 * role with only the statements its table entry declares (S3 key patterns, projections-table
 * actions and partitions, Bedrock, channel secrets), each grant set together with the variable
 * naming its resource, and an alarm on function errors; reserved concurrency only when the config
 * gives some (opt-in); `RecursiveLoop: Allow`, with an alarm on `RecursiveInvocationsDropped`, for a
 * function of the system's own chains (`allowRecursiveLoop`), `Terminate` (Lambda's default) for the
 * others. An `eventbridge` function also gets an
 * encrypted TLS-only SQS dead-letter queue — its asynchronous invocations' on-failure destination
 * (Lambda's invocation record: condition, attempts, error) after bounded retries and event age,
 * and its rules' target DLQ — with an alarm on every letter sent to it; when the dead-letter
 * consumer reads it, it redrives to the consumer's own queue. An `sqs` function (the consumer)
 * gets that own queue for records it failed on `maxReceiveCount` times, with an alarm on any
 * message in it, and reads the queues given to {@link StepFunction.consumeDeadLetterQueues}. An
 * `http-api` function is invoked synchronously and has none of these. Every wildcard resource of
 * its role gets a cdk-nag acknowledgement with its written reason (KEY_PATTERN_REASONS,
 * bedrockFindings).
 * @throws ConfigError at synth when a wildcard key pattern has no written reason, the spec's
 *   `environment` sets a variable the construct sets itself, an `eventbridge` spec has no
 *   `deadLetters`, or it is `fail-task` without a `deadLetterConsumer`
 */
export class StepFunction extends Construct {
  readonly function: NodejsFunction;
  /** How the function is invoked (its table entry's `trigger`). */
  readonly trigger: FunctionSpec['trigger'];
  /** The dead-letter queue of an `eventbridge` function (undefined for the other triggers). */
  readonly deadLetterQueue: Queue | undefined;
  readonly logGroup: LogGroup;
  readonly role: Role;
  /** The alarm on letters sent to the dead-letter queue (undefined for the other triggers). */
  readonly deadLetterAlarm: Alarm | undefined;
  /** An `sqs` function's own queue: records it failed on `maxReceiveCount` times (undefined otherwise). */
  readonly unprocessedQueue: Queue | undefined;
  /** The alarm on any message in {@link unprocessedQueue}. */
  readonly unprocessedAlarm: Alarm | undefined;
  /**
   * On a retained dead-letter queue (`deadLetters: 'retain'`): in ALARM as long as letters wait
   * there, where the per-minute "sent" alarm returns to OK after one period.
   */
  readonly waitingLettersAlarm: Alarm | undefined;
  readonly errorsAlarm: Alarm;
  /**
   * On a function with `allowRecursiveLoop`: in ALARM when Lambda stopped an invocation of it as
   * part of a recursive loop (`RecursiveInvocationsDropped`; with `RecursiveLoop: Allow` Lambda
   * should stop none, so any is a conversation cut short). Undefined for the others.
   */
  readonly recursiveLoopAlarm: Alarm | undefined;
  /** In ALARM when Lambda throttled an invocation (`Throttles` > 0 in 5 minutes). */
  readonly throttlesAlarm: Alarm;
  /**
   * An `eventbridge` function's asynchronous-invocation alarms (empty for the others):
   * `AsyncEventAge` maximum over {@link ASYNC_EVENT_AGE_ALARM_SECONDS}, `AsyncEventsDropped` > 0,
   * `DestinationDeliveryFailures` > 0 (Lambda's metrics for asynchronous invocations:
   * https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html#async-invocation-metrics).
   */
  readonly asyncAlarms: readonly Alarm[];
  private readonly name: string;
  private readonly spec: FunctionSpec;

  constructor(scope: Construct, id: string, props: StepFunctionProps) {
    super(scope, id);
    const { name, spec, config, bucket, table } = props;
    const projectRoot = props.projectRoot ?? PROJECT_ROOT;
    this.name = name;
    this.spec = spec;
    this.trigger = spec.trigger;
    const asynchronous = spec.trigger === 'eventbridge';
    const consumer = props.deadLetterConsumer;
    if (asynchronous && !spec.deadLetters) {
      throw new ConfigError(
        `function ${name}: an eventbridge function must say what becomes of its dead letters (deadLetters)`,
      );
    }
    if (spec.deadLetters === 'fail-task' && !consumer?.unprocessedQueue) {
      throw new ConfigError(
        `function ${name}: deadLetters is fail-task, but the function table has no dead-letter consumer (trigger "sqs")`,
      );
    }

    this.logGroup = new LogGroup(this, 'Logs', {
      retention: config.logRetentionDays as RetentionDays,
      removalPolicy: props.removalPolicy,
    });
    const consumed = spec.deadLetters === 'fail-task' ? consumer : undefined;
    this.deadLetterQueue = asynchronous
      ? new Queue(this, 'DeadLetterQueue', {
          encryption: QueueEncryption.SQS_MANAGED,
          enforceSSL: true,
          retentionPeriod: QUEUE_RETENTION,
          removalPolicy: props.removalPolicy,
          ...(consumed?.unprocessedQueue
            ? {
                visibilityTimeout: Duration.seconds(
                  consumed.spec.timeoutSeconds * DEAD_LETTER_CONSUMPTION.visibilityTimeoutFactor,
                ),
                deadLetterQueue: {
                  queue: consumed.unprocessedQueue,
                  maxReceiveCount: DEAD_LETTER_CONSUMPTION.maxReceiveCount,
                },
              }
            : {}),
        })
      : undefined;
    this.unprocessedQueue =
      spec.trigger === 'sqs'
        ? new Queue(this, 'UnprocessedQueue', {
            encryption: QueueEncryption.SQS_MANAGED,
            enforceSSL: true,
            retentionPeriod: QUEUE_RETENTION,
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
      // Opt-in (cld:sourceMaps): Node.js reads the source map at every cold start.
      ...(config.sourceMaps ? { NODE_OPTIONS: '--enable-source-maps' } : {}),
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
    if (spec.mcpServers && config.mcpServers.length > 0) {
      for (const statement of mcpSecretStatements(config.mcpServers)) this.role.addToPolicy(statement);
      environment.CLD_MCP_SERVERS = JSON.stringify(config.mcpServers);
    }
    if (spec.operators && config.operatorSubjects.length > 0)
      environment.CLD_OPERATOR_SUBJECTS = config.operatorSubjects.join(',');
    if (spec.putEvents) {
      for (const statement of putEventsStatements(this)) this.role.addToPolicy(statement);
      environment.CLD_EVENT_BUS = 'default';
    }
    if (spec.model && config.modelId !== OFFLINE_MODEL) {
      for (const statement of bedrockStatements(this, config.modelId)) this.role.addToPolicy(statement);
      environment.CLD_MODEL_ID = config.modelId;
      // A model per step (cld:models): each may be invoked, and the runtime routes each step to its own.
      stepModelIds(config).forEach((id, i) => {
        for (const statement of bedrockStatements(this, id, `Step${i + 1}`)) this.role.addToPolicy(statement);
      });
      if (Object.keys(config.models).length > 0) environment.CLD_MODELS = JSON.stringify(config.models);
    }

    if (spec.console) {
      environment.CLD_CONSOLE_DIR = LAMBDA_CONSOLE_DIR;
      const auth = consoleAuthOf(config);
      if (auth) environment.CLD_CONSOLE_AUTH = JSON.stringify(auth);
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
      recursiveLoop: spec.allowRecursiveLoop ? RecursiveLoop.ALLOW : RecursiveLoop.TERMINATE,
      ...(this.deadLetterQueue
        ? {
            onFailure: new SqsDestination(this.deadLetterQueue),
            retryAttempts: config.retryAttempts,
            maxEventAge: Duration.seconds(config.maxEventAgeSeconds),
          }
        : {}),
      projectRoot,
      depsLockFilePath: depsLockFileOf(projectRoot),
      bundling: withCatalog(
        nodejsBundling(name, policy.wasm !== undefined, spec.console === true, spec),
        props.catalogFile,
      ),
    });
    if (!policy.wasm) {
      Annotations.of(this.function).addWarningV2(
        POLICY_BUNDLE_WARNING,
        `${name} is bundled without policies/dist/${name}.wasm (run npm run build:policies): ` +
          'only policies/rules.json is in its policy bundle.',
      );
    }

    // NumberOfMessagesSent counts the SendMessage calls of Lambda's destination and of EventBridge,
    // so the alarm fires for every letter even when the consumer drains the queue within seconds
    // (a visible-messages alarm sampled per minute could miss it).
    this.deadLetterAlarm = this.deadLetterQueue
      ? new Alarm(this, 'DeadLetterAlarm', {
          alarmDescription:
            spec.deadLetters === 'fail-task'
              ? `cld ${name}: events failed every attempt; the dead-letter function fails their tasks`
              : `cld ${name}: events failed every attempt and wait in the dead-letter queue for the operator`,
          metric: this.deadLetterQueue.metricNumberOfMessagesSent({
            period: Duration.minutes(1),
            statistic: 'Sum',
          }),
          threshold: 0,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        })
      : undefined;
    this.waitingLettersAlarm =
      this.deadLetterQueue && spec.deadLetters === 'retain'
        ? new Alarm(this, 'WaitingLettersAlarm', {
            alarmDescription: `cld ${name}: dead letters wait in the queue for the operator (redrive or delete them)`,
            metric: this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
              period: Duration.minutes(5),
              statistic: 'Maximum',
            }),
            threshold: 0,
            comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluationPeriods: 1,
            treatMissingData: TreatMissingData.NOT_BREACHING,
          })
        : undefined;
    // Messages moved here by SQS redrive are not counted by NumberOfMessagesSent, and nothing
    // consumes this queue: any visible message is a letter no task was failed for.
    this.unprocessedAlarm = this.unprocessedQueue
      ? new Alarm(this, 'UnprocessedAlarm', {
          alarmDescription: `cld ${name}: dead letters it failed on ${DEAD_LETTER_CONSUMPTION.maxReceiveCount} times wait in its own queue (their tasks stay pending)`,
          metric: this.unprocessedQueue.metricApproximateNumberOfMessagesVisible({
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
        : spec.trigger === 'sqs'
          ? `cld ${name}: batches failed as a whole (their records are redelivered, then set aside)`
          : `cld ${name}: requests failed with an unhandled error (the caller got a 5xx)`,
      metric: this.function.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
      threshold: 0,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });

    const alarm = (id: string, description: string, metric: Metric, threshold = 0): Alarm =>
      new Alarm(this, id, {
        alarmDescription: `cld ${name}: ${description}`,
        metric,
        threshold,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
    this.throttlesAlarm = alarm(
      'ThrottlesAlarm',
      'invocations were throttled (account or reserved concurrency exhausted; new accounts have a quota of 10)',
      this.function.metricThrottles({ period: Duration.minutes(5), statistic: 'Sum' }),
    );
    // Lambda's asynchronous-invocation metrics (AWS/Lambda, per function): the event queue's age,
    // events dropped after retries or age, and failures to deliver to the on-failure destination.
    this.asyncAlarms = asynchronous
      ? [
          alarm(
            'AsyncEventAgeAlarm',
            `events waited over ${ASYNC_EVENT_AGE_ALARM_SECONDS} s in Lambda's asynchronous queue (throttling or errors delay the conversations)`,
            this.function.metric('AsyncEventAge', { period: Duration.minutes(5), statistic: 'Maximum' }),
            ASYNC_EVENT_AGE_ALARM_SECONDS * 1000,
          ),
          alarm(
            'AsyncEventsDroppedAlarm',
            'events were dropped without running the function (retries or maximum event age exhausted)',
            this.function.metric('AsyncEventsDropped', { period: Duration.minutes(5), statistic: 'Sum' }),
          ),
          alarm(
            'DestinationDeliveryFailuresAlarm',
            'failed invocations could not be sent to the dead-letter queue (on-failure destination); they are lost',
            this.function.metric('DestinationDeliveryFailures', {
              period: Duration.minutes(5),
              statistic: 'Sum',
            }),
          ),
        ]
      : [];

    this.recursiveLoopAlarm = spec.allowRecursiveLoop
      ? new Alarm(this, 'RecursiveLoopAlarm', {
          alarmDescription: `cld ${name}: Lambda stopped invocations as a recursive loop (RecursiveInvocationsDropped); conversations were cut short`,
          metric: this.function.metric('RecursiveInvocationsDropped', {
            period: Duration.minutes(5),
            statistic: 'Sum',
          }),
          threshold: 0,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        })
      : undefined;

    Validations.of(this.function).acknowledge({
      id: 'AwsSolutions-L1',
      reason:
        'Node.js 22 is the runtime this project targets and tests (package.json engines, CI on Node 20/22); ' +
        'moving to Node.js 24 is a tested upgrade, not a synth-time default.',
    });
    Validations.of(this.function).acknowledge({
      id: 'Serverless-LambdaLatestVersion',
      reason:
        'Node.js 22 is the runtime this project targets and tests (package.json engines, CI on Node 20/22); ' +
        'moving to Node.js 24 is a tested upgrade, not a synth-time default.',
    });
    Validations.of(this.function).acknowledge({
      id: 'Serverless-LambdaDLQ',
      reason: NO_DEAD_LETTER_CONFIG_REASONS[spec.trigger],
    });
    if (spec.trigger === 'sqs') {
      Validations.of(this.function).acknowledge({
        id: 'Serverless-LambdaEventSourceMappingDestination',
        reason:
          'SQS event source mappings take no on-failure destination (Lambda supports one for stream and Kafka ' +
          "sources only): a failed record returns to its queue, and that queue's redrive policy moves it to this " +
          "function's own queue after maxReceiveCount receives, with an alarm.",
      });
    }
    for (const queue of [
      this.unprocessedQueue,
      spec.deadLetters === 'retain' ? this.deadLetterQueue : undefined,
    ]) {
      if (!queue) continue;
      Validations.of(queue).acknowledge({
        id: 'Serverless-SQSRedrivePolicy',
        reason:
          'This queue is itself the last stop for failed events: nothing consumes it automatically, its letters ' +
          'wait (with an alarm) for the operator to inspect and redrive, so a redrive policy would have nowhere to go.',
      });
    }
    this.acknowledgeWildcards(name, spec, config, bucket);
    if (this.deadLetterQueue && spec.deadLetters === 'retain') {
      Validations.of(this.deadLetterQueue).acknowledge({
        id: 'AwsSolutions-SQS3',
        reason:
          'This queue is itself a dead-letter queue: the on-failure destination of the function and the DLQ of ' +
          'its EventBridge targets (cdk-nag recognises only Lambda DeadLetterConfig and SQS redrive). Nothing ' +
          'consumes it; its letters wait for the operator, so it needs no dead-letter queue of its own.',
      });
    }
    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Only xray:PutTraceSegments and xray:PutTelemetryRecords (added by Tracing.ACTIVE) use Resource *: ' +
        'X-Ray does not support resource-level permissions for them.',
    });
  }

  /**
   * Makes this `sqs` function the consumer of the given dead-letter queues: one event source
   * mapping per queue (`ReportBatchItemFailures`, batch size and maximum concurrency of
   * {@link DEAD_LETTER_CONSUMPTION}), `sqs:ReceiveMessage`, `sqs:DeleteMessage` and
   * `sqs:GetQueueAttributes` (what the mapping's poller calls) on exactly those queues, and —
   * together with the grant — `CLD_DEAD_LETTER_QUEUES`, the JSON map `{ <step>: <queue ARN> }`
   * by which the handler tells which step a record is for. The mappings reference the function,
   * which CloudFormation creates after its role's policy, so the permissions exist before the
   * mappings are validated.
   * @param queues queue by the name of the step it collects letters of
   * @throws ConfigError when this function is not an `sqs` function, `queues` is empty, or its
   *   `environment` sets `CLD_DEAD_LETTER_QUEUES` itself
   */
  consumeDeadLetterQueues(queues: ReadonlyMap<string, IQueue>): void {
    if (this.trigger !== 'sqs')
      throw new ConfigError(`function ${this.name}: only an sqs function consumes dead-letter queues`);
    if (queues.size === 0) throw new ConfigError(`function ${this.name}: no dead-letter queue to consume`);
    if (this.spec.environment && DEAD_LETTER_QUEUES_VARIABLE in this.spec.environment)
      throw new ConfigError(
        `function ${this.name}: environment sets ${DEAD_LETTER_QUEUES_VARIABLE}, which the construct sets itself`,
      );
    for (const statement of consumeQueueStatements([...queues.values()])) this.role.addToPolicy(statement);
    for (const [step, queue] of queues) {
      this.function.addEventSourceMapping(`${pascalCase(step)}DeadLetters`, {
        eventSourceArn: queue.queueArn,
        batchSize: DEAD_LETTER_CONSUMPTION.batchSize,
        maxConcurrency: DEAD_LETTER_CONSUMPTION.maxConcurrency,
        reportBatchItemFailures: true,
      });
    }
    const map = Object.fromEntries([...queues].map(([step, queue]) => [step, queue.queueArn]));
    this.function.addEnvironment(DEAD_LETTER_QUEUES_VARIABLE, Stack.of(this).toJsonString(map));
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
      for (const id of [config.modelId, ...stepModelIds(config)])
        for (const finding of bedrockFindings(id)) Validations.of(this.role).acknowledge(finding);
    }
  }
}

/** `reply-queue` → `ReplyQueue`: a name as a construct-id part. */
export function pascalCase(name: string): string {
  return name
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((part) => part[0]?.toUpperCase() + part.slice(1))
    .join('');
}
