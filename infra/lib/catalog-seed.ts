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

/**
 * The construct id of a catalog definition's custom resource: its type and name, not its
 * version, so an edit is an update of the same resource (a new key stored), not a new resource.
 */
export function catalogObjectId(object: Pick<CatalogObject, 'type' | 'name'>): string {
  return `${object.type.slice(object.type.indexOf('.') + 1)}-${object.name}`;
}

/** The S3 error name of a conditional write whose key exists (HTTP 412): the object is already stored. */
export const ALREADY_STORED = 'PreconditionFailed';

/**
 * Stores the default catalog (shared/catalog/) in the resources bucket at deploy, so that no
 * function's cold start writes (and no function may write the catalog). One CloudFormation custom
 * resource per catalog definition (CDK `AwsCustomResource`, resource type
 * `Custom::CldCatalogObject`, logical id from its type and name: {@link catalogObjectId}): on
 * create and update, an S3 `PutObject` of the object's key (`keyOf(urn)`) and body (the resource
 * as `ResourceIndex.put` stores it) with `If-None-Match: *`, as every write of the system is
 * create-only. The URN is versioned by content (`meta.version`, shared/catalog/catalog.ts
 * `contentVersion`), so an edited definition changes the resource's properties (key, body and
 * physical id): CloudFormation updates it, the put creates the new version's key, and the old
 * version's object stays (CloudFormation's delete of the old physical id does nothing) for the
 * Tasks that link to it. A put of a key that exists (a redeploy of the same content, a rollback)
 * is left as it is (S3 answers 412 `PreconditionFailed`, which the call ignores, and the content
 * at a versioned key is that version's by construction); on delete, nothing (the bucket's
 * removal policy decides). The stack makes every function depend on this construct, so a
 * function whose bundled catalog names a new version is updated after that version is stored. The custom resources share one
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
    for (const object of objects) {
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
      const resource = new AwsCustomResource(this, catalogObjectId(object), {
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
    }
    this.objects = created;
  }
}
