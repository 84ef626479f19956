import { Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { Cld, type CldProps } from './cld.js';
import type { StackConfig } from './config.js';

export { addModelRegionRule, checkPolicyBundles, MODEL_REGION_RULE, POLICY_BUNDLES_STALE } from './checks.js';
export { type RulePart, rulesOfRoute, toCdkEventPattern } from './event-rules.js';

/** Props of {@link CldStack}. */
export interface CldStackProps
  extends StackProps,
    Pick<CldProps, 'functions' | 'routes' | 'apiRoutes' | 'projectRoot'> {
  /** Resolved once in infra/bin (infra/lib/config.ts). */
  config: StackConfig;
}

/**
 * The {@link Cld} props of a deployment config (the `cld:*` context keys): `cld:destroyData`
 * becomes removal policy `DESTROY`, `cld:alarmTopicArn` an imported topic (created in `scope`).
 */
export function cldPropsOf(scope: Construct, config: StackConfig): CldProps {
  return {
    stageName: config.stage,
    modelId: config.modelId,
    models: config.models,
    limits: config.limits,
    allowedOrigins: config.allowedOrigins,
    ...(config.jwtIssuer ? { jwtIssuer: config.jwtIssuer } : {}),
    jwtAudience: config.jwtAudience,
    apiThrottle: config.apiThrottle,
    webhookThrottle: config.webhookThrottle,
    secretArns: config.secretArns,
    reservedConcurrency: config.reservedConcurrency,
    retryAttempts: config.retryAttempts,
    maxEventAge: Duration.seconds(config.maxEventAgeSeconds),
    logRetention: config.logRetentionDays as RetentionDays,
    logLevel: config.logLevel,
    sourceMaps: config.sourceMaps,
    ...(config.consoleAuth ? { consoleAuth: config.consoleAuth } : {}),
    mcpServers: config.mcpServers,
    operatorSubjects: config.operatorSubjects,
    removalPolicy: config.destroyData ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
    ...(config.alarmEmail ? { alarmEmail: config.alarmEmail } : {}),
    ...(config.alarmTopicArn
      ? { alarmTopic: Topic.fromTopicArn(scope, 'AlarmTopic', config.alarmTopicArn) }
      : {}),
  };
}

/**
 * The standalone cld stack (`npm run deploy` → `Cld-<stage>`): a thin `Stack` around one
 * {@link Cld} built from the deployment config ({@link cldPropsOf}). The construct's id is
 * `Default`, which CDK leaves out of logical ids, so every resource keeps the logical id it had
 * when the stack defined it directly: an upgrade updates the bucket and the table in place
 * instead of replacing them (a replaced bucket would be a new, empty event log).
 *
 * Environment-agnostic: no account or Region here, no physical names.
 * @throws ConfigError at synth, as {@link Cld} does
 */
export class CldStack extends Stack {
  /** The deployment config the stack was built with. */
  readonly config: StackConfig;
  /** The system. */
  readonly cld: Cld;

  constructor(scope: Construct, id: string, props: CldStackProps) {
    const { config, functions, routes, apiRoutes, projectRoot, ...stackProps } = props;
    super(scope, id, stackProps);
    this.config = config;
    this.cld = new Cld(this, 'Default', {
      ...cldPropsOf(this, config),
      ...(functions ? { functions } : {}),
      ...(routes ? { routes } : {}),
      ...(apiRoutes ? { apiRoutes } : {}),
      ...(projectRoot ? { projectRoot } : {}),
    });
  }
}
