import { Aws, CfnElement, Stack } from 'aws-cdk-lib';
import type { ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { IConstruct } from 'constructs';
import { ConfigError } from '../../shared/errors.js';
import { isHttpServer, type McpServerConfig } from '../../shared/tools/mcp/config.js';
import { INFERENCE_PROFILE_GEOS, OFFLINE_MODEL } from './config.js';
import type { StorageAccess, TableAction } from './functions.js';

/**
 * IAM statements from the function table's access declarations (least privilege: actions and
 * resources per function, no `*` resource here).
 */

/**
 * S3 statements for one function:
 * - `s3:GetObject` on each `read` key pattern;
 * - `s3:PutObject` on each `create` pattern, only when the request carries `If-None-Match`
 *   (condition `Null: { s3:if-none-match: false }`, S3 "enforce conditional writes"): resources
 *   are written once and never overwritten (DESIGN.md principle 1), and IAM enforces it;
 * - `s3:ListBucket` on the bucket with `StringLikeIfExists` on `s3:prefix`. A `ListObjectsV2`
 *   with a prefix must match one of the patterns. `IfExists` because S3 also checks
 *   `s3:ListBucket` (without any `s3:prefix` in the request context) to answer a `GetObject` of
 *   a missing key with 404 `NoSuchKey` instead of 403: the steps rely on that 404
 *   (`ResourceIndex.find`, S3Storage.get → NotFoundError).
 * - a function that reads but lists no prefix gets `s3:ListBucket` only without `s3:prefix`
 *   (condition `Null: { s3:prefix: true }`), for that same 404: a `ListObjectsV2` with any prefix
 *   is denied. (As with `IfExists` above, one without a prefix is not: IAM cannot tell it from
 *   S3's existence check.)
 * No `s3:DeleteObject`: no step deletes.
 */
export function storageStatements(bucket: IBucket, access: StorageAccess): PolicyStatement[] {
  const statements: PolicyStatement[] = [];
  if (access.read.length > 0) {
    statements.push(
      new PolicyStatement({
        sid: 'ReadResources',
        actions: ['s3:GetObject'],
        resources: access.read.map((pattern) => bucket.arnForObjects(pattern)),
      }),
    );
  }
  if (access.create.length > 0) {
    statements.push(
      new PolicyStatement({
        sid: 'CreateResourcesOnly',
        actions: ['s3:PutObject'],
        resources: access.create.map((pattern) => bucket.arnForObjects(pattern)),
        conditions: { Null: { 's3:if-none-match': 'false' } },
      }),
    );
  }
  // S3 answers a GetObject of a missing key with 404 only when the caller may s3:ListBucket,
  // otherwise 403; NotFoundError handling depends on the 404. A GetObject's existence check
  // carries no s3:prefix, which IAM cannot tell from a ListObjectsV2 without a prefix, so
  // both statements below also allow a full listing of keys (not of contents). Closing that
  // needs an S3 access point per function or treating 403 as not-found: its own issue.
  if (access.list.length > 0) {
    statements.push(
      new PolicyStatement({
        sid: 'ListResourcePrefixes',
        actions: ['s3:ListBucket'],
        resources: [bucket.bucketArn],
        conditions: { StringLikeIfExists: { 's3:prefix': [...access.list] } },
      }),
    );
  } else if (access.read.length > 0) {
    statements.push(
      new PolicyStatement({
        sid: 'MissingKeysAreNotFound',
        actions: ['s3:ListBucket'],
        resources: [bucket.bucketArn],
        conditions: { Null: { 's3:prefix': 'true' } },
      }),
    );
  }
  return statements;
}

/**
 * The cdk-nag finding id (`AwsSolutions-IAM5[Resource::...]`) of an object-key pattern of
 * `bucket`, as cdk-nag renders the resource (`<LogicalId.Arn>/pattern`; for an imported bucket
 * `arn:<AWS::Partition>:s3:::<name>/pattern`).
 */
export function objectPatternFinding(bucket: IBucket, pattern: string): string {
  const resource = bucket.node.defaultChild;
  // An imported bucket (a Cld given `bucket`) has no resource: its ARN is built from its name.
  if (!(resource instanceof CfnElement))
    return `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::${bucket.bucketName}/${pattern}]`;
  const logicalId = Stack.of(bucket).getLogicalId(resource);
  return `AwsSolutions-IAM5[Resource::<${logicalId}.Arn>/${pattern}]`;
}

/**
 * DynamoDB statement for the projections table (item actions on the table only; no index, no
 * stream). With `partitions`, only items whose partition key matches one of them
 * (`ForAllValues:StringLike` on `dynamodb:LeadingKeys`, the IAM condition for fine-grained access
 * by partition key).
 */
export function tableStatements(
  table: ITableV2,
  actions: readonly TableAction[],
  partitions?: readonly string[],
): PolicyStatement[] {
  if (actions.length === 0) return [];
  return [
    new PolicyStatement({
      sid: 'Projections',
      actions: actions.map((action) => `dynamodb:${action}`),
      resources: [table.tableArn],
      ...(partitions
        ? { conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [...partitions] } } }
        : {}),
    }),
  ];
}

/**
 * `secretsmanager:GetSecretValue` on exactly these secrets (what Powertools' `SecretsProvider`
 * calls; no `DescribeSecret`, no wildcard). Secrets encrypted with the AWS managed key need no
 * KMS grant; a customer managed key must allow the role in its key policy.
 */
export function secretStatements(secrets: readonly ISecret[]): PolicyStatement[] {
  if (secrets.length === 0) return [];
  return [
    new PolicyStatement({
      sid: 'ReadChannelSecrets',
      actions: ['secretsmanager:GetSecretValue'],
      resources: secrets.map((secret) => secret.secretArn),
    }),
  ];
}

/**
 * `secretsmanager:GetSecretValue` on exactly the secrets the MCP servers' headers name (complete
 * ARNs, infra/lib/config.ts `mcpServers`): the tool function reads them with Powertools
 * parameters (shared/runtime/adapters/tools.ts `mcpFor`). None → no statement.
 */
export function mcpSecretStatements(servers: readonly McpServerConfig[]): PolicyStatement[] {
  const arns = [
    ...new Set(
      servers.flatMap((server) =>
        isHttpServer(server)
          ? Object.values(server.headers).flatMap((value) =>
              typeof value === 'object' && 'secret' in value ? [value.secret] : [],
            )
          : [],
      ),
    ),
  ].sort();
  if (arns.length === 0) return [];
  return [
    new PolicyStatement({
      sid: 'ReadMcpServerSecrets',
      actions: ['secretsmanager:GetSecretValue'],
      resources: arns,
    }),
  ];
}

/**
 * What an SQS event source mapping's poller calls on the queues it reads (Lambda, "Using Lambda
 * with Amazon SQS": `sqs:ReceiveMessage`, `sqs:DeleteMessage`, `sqs:GetQueueAttributes`) on
 * exactly these queues: no `SendMessage`, no `ChangeMessageVisibility`, no `PurgeQueue` (what
 * `grantConsumeMessages` would add beyond them). SSE-SQS queues need no KMS grant.
 */
export function consumeQueueStatements(queues: readonly IQueue[]): PolicyStatement[] {
  if (queues.length === 0) return [];
  return [
    new PolicyStatement({
      sid: 'ConsumeDeadLetterQueues',
      actions: ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'],
      resources: queues.map((queue) => queue.queueArn),
    }),
  ];
}

/** The event source the sweeper's events carry (shared/events/envelope.ts `REDRIVE_SOURCE`). */
export const PUT_EVENTS_SOURCE = 'cld';

/**
 * `events:PutEvents` on the account's default event bus only (where S3 sends its events and the
 * routing table's rules are), for events of source `cld` only (condition `events:source`, which
 * PutEvents supports): the sweeper cannot put events of another source, such as `aws.s3`, nor on
 * another bus.
 */
export function putEventsStatements(scope: IConstruct): PolicyStatement[] {
  const stack = Stack.of(scope);
  return [
    new PolicyStatement({
      sid: 'PutRedriveEvents',
      actions: ['events:PutEvents'],
      resources: [`arn:${Aws.PARTITION}:events:${stack.region}:${stack.account}:event-bus/default`],
      conditions: { StringEquals: { 'events:source': PUT_EVENTS_SOURCE } },
    }),
  ];
}

/** What a configured model id refers to. */
export type ModelTarget =
  | { kind: 'offline' }
  | { kind: 'foundation-model'; modelId: string; arn?: string }
  | { kind: 'inference-profile'; profileId: string; modelId: string; arn?: string }
  | { kind: 'application-inference-profile'; arn: string };

/**
 * Classifies `cld:modelId`: `offline`, a foundation-model id (`anthropic.claude-...`), a
 * system-defined inference-profile id (`<geo>.<model id>`, geo one of
 * {@link INFERENCE_PROFILE_GEOS}), or an ARN of either or of an application inference profile.
 * @throws ConfigError for an ARN of another resource type
 */
export function modelTarget(modelId: string): ModelTarget {
  if (modelId === OFFLINE_MODEL) return { kind: 'offline' };
  if (modelId.startsWith('arn:')) {
    const resource = modelId.split(':').slice(5).join(':');
    const slash = resource.indexOf('/');
    const type = resource.slice(0, slash);
    const id = resource.slice(slash + 1);
    if (type === 'foundation-model') return { kind: 'foundation-model', modelId: id, arn: modelId };
    if (type === 'inference-profile') return { ...profileOf(id), arn: modelId };
    if (type === 'application-inference-profile')
      return { kind: 'application-inference-profile', arn: modelId };
    throw new ConfigError(`cld:modelId ARN is not a Bedrock model or inference profile: ${modelId}`);
  }
  const geo = modelId.slice(0, modelId.indexOf('.'));
  if ((INFERENCE_PROFILE_GEOS as readonly string[]).includes(geo)) return profileOf(modelId);
  return { kind: 'foundation-model', modelId };
}

/**
 * cdk-nag acknowledgements (finding id and written reason) for the wildcard resources of
 * {@link bedrockStatements}; empty when it has none.
 */
export function bedrockFindings(modelId: string): { id: string; reason: string }[] {
  const target = modelTarget(modelId);
  if (target.kind === 'inference-profile') {
    return [
      {
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/${target.modelId}]`,
        reason:
          'A cross-Region inference profile routes each request to this model in one of its destination Regions; ' +
          'the statement is usable only through the configured profile (bedrock:InferenceProfileArn condition).',
      },
    ];
  }
  if (target.kind === 'application-inference-profile') {
    return [
      {
        id: 'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/*]',
        reason:
          'An application inference profile names its models itself; the statement is usable only through ' +
          'the configured profile (bedrock:InferenceProfileArn condition).',
      },
    ];
  }
  return [];
}

function profileOf(profileId: string): Extract<ModelTarget, { kind: 'inference-profile' }> {
  return { kind: 'inference-profile', profileId, modelId: profileId.slice(profileId.indexOf('.') + 1) };
}

/**
 * `bedrock:InvokeModel` statements for the configured model (the Converse API is authorized
 * as `bedrock:InvokeModel`). A foundation model: its ARN in the stack's Region. An inference
 * profile: the profile's ARN, plus the underlying foundation model in every Region the profile
 * may route to (`arn:…:bedrock:*::foundation-model/<model>`), usable only through that profile
 * (condition `bedrock:InferenceProfileArn`), as Bedrock's cross-Region inference requires. An
 * application inference profile: its ARN and, through it only, the foundation models it wraps.
 * `offline`: no statement. `sidSuffix` keeps the statement ids unique when a role may invoke
 * several models (a model per step, `cld:models`).
 */
export function bedrockStatements(scope: IConstruct, modelId: string, sidSuffix = ''): PolicyStatement[] {
  const target = modelTarget(modelId);
  const partition = Aws.PARTITION;
  const stack = Stack.of(scope);
  switch (target.kind) {
    case 'offline':
      return [];
    case 'foundation-model':
      return [
        new PolicyStatement({
          sid: `InvokeFoundationModel${sidSuffix}`,
          actions: ['bedrock:InvokeModel'],
          resources: [
            target.arn ?? `arn:${partition}:bedrock:${stack.region}::foundation-model/${target.modelId}`,
          ],
        }),
      ];
    case 'inference-profile': {
      const profileArn =
        target.arn ??
        `arn:${partition}:bedrock:${stack.region}:${stack.account}:inference-profile/${target.profileId}`;
      return [
        new PolicyStatement({
          sid: `InvokeInferenceProfile${sidSuffix}`,
          actions: ['bedrock:InvokeModel'],
          resources: [profileArn],
        }),
        new PolicyStatement({
          sid: `InvokeProfileModelInAnyRegion${sidSuffix}`,
          effect: Effect.ALLOW,
          actions: ['bedrock:InvokeModel'],
          resources: [`arn:${partition}:bedrock:*::foundation-model/${target.modelId}`],
          conditions: { StringEquals: { 'bedrock:InferenceProfileArn': profileArn } },
        }),
      ];
    }
    case 'application-inference-profile':
      return [
        new PolicyStatement({
          sid: `InvokeApplicationInferenceProfile${sidSuffix}`,
          actions: ['bedrock:InvokeModel'],
          resources: [target.arn],
        }),
        new PolicyStatement({
          sid: `InvokeProfileModels${sidSuffix}`,
          actions: ['bedrock:InvokeModel'],
          resources: [`arn:${partition}:bedrock:*::foundation-model/*`],
          conditions: { StringEquals: { 'bedrock:InferenceProfileArn': target.arn } },
        }),
      ];
  }
}
