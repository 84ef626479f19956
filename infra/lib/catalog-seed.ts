import { Duration, type RemovalPolicy } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { AwsCustomResource, type AwsSdkCall, PhysicalResourceId } from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';
import { type CatalogObject, catalogObjects } from '../../shared/catalog/catalog.js';
import { storageStatements } from './access.js';

/** Props of {@link CatalogSeed}. */
export interface CatalogSeedProps {
  /** The resources bucket. */
  bucket: IBucket;
  /** Retention of the seeding function's log group (the stage's, as the functions'). */
  logRetention: RetentionDays;
  /** Removal policy of that log group. */
  removalPolicy: RemovalPolicy;
  /** The objects to store (default: {@link catalogObjects}, the default catalog). */
  objects?: readonly CatalogObject[];
}

/** The S3 error name of a conditional write whose key exists (HTTP 412): the object is already stored. */
export const ALREADY_STORED = 'PreconditionFailed';

/**
 * Stores the default catalog (shared/catalog/) in the resources bucket at deploy, so that no
 * function's cold start writes (and no function may write the catalog). One CloudFormation custom
 * resource per catalog object (CDK `AwsCustomResource`, resource type `Custom::CldCatalogObject`):
 * on create and update, an S3 `PutObject` of the object's key (`keyOf(urn)`) and body (the
 * resource as `ResourceIndex.put` stores it) with `If-None-Match: *`, as every write of the
 * system is create-only: an object that exists is left as it is (S3 answers 412
 * `PreconditionFailed`, which the call ignores), so a deploy never overwrites a stored resource;
 * on delete, nothing (the bucket's removal policy decides). The custom resources share one
 * singleton function (Node.js, the SDK of the Lambda runtime: `installLatestAwsSdk: false`, so
 * nothing is downloaded at deploy) with its own log group and role: the role may write that log
 * group and `s3:PutObject` these exact keys, only with `If-None-Match` (the functions'
 * create-only condition, infra/lib/access.ts), and nothing else (no AWS managed policy).
 */
export class CatalogSeed extends Construct {
  /** The custom resources, by object key. */
  readonly objects: ReadonlyMap<string, AwsCustomResource>;
  /** The log group of the singleton function. */
  readonly logGroup: LogGroup;
  /** The role of the singleton function. */
  readonly role: Role;

  constructor(scope: Construct, id: string, props: CatalogSeedProps) {
    super(scope, id);
    const objects = props.objects ?? catalogObjects();
    this.logGroup = new LogGroup(this, 'Logs', {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    this.role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: 'cld catalog seed (create-only puts of the catalog objects at deploy)',
    });
    this.logGroup.grantWrite(this.role);
    for (const statement of storageStatements(props.bucket, {
      read: [],
      create: objects.map((o) => o.key),
      list: [],
    }))
      this.role.addToPolicy(statement);
    const created = new Map<string, AwsCustomResource>();
    objects.forEach((object, index) => {
      const put: AwsSdkCall = {
        service: 'S3',
        action: 'PutObject',
        parameters: {
          Bucket: props.bucket.bucketName,
          Key: object.key,
          Body: object.body,
          ContentType: 'application/json',
          IfNoneMatch: '*',
        },
        physicalResourceId: PhysicalResourceId.of(object.key),
        ignoreErrorCodesMatching: `^${ALREADY_STORED}$`,
      };
      const resource = new AwsCustomResource(this, `Object${index}`, {
        resourceType: 'Custom::CldCatalogObject',
        onCreate: put,
        onUpdate: put,
        role: this.role,
        installLatestAwsSdk: false,
        logGroup: this.logGroup,
        timeout: Duration.minutes(1),
      });
      // The put needs the role's policy in place: CloudFormation creates the policy first.
      resource.node.addDependency(this.role);
      created.set(object.key, resource);
    });
    this.objects = created;
  }
}
