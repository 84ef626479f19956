import { App, type AppProps, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { resolveConfig, type StackConfig } from './config.js';
import { CldStack, type CldStackProps } from './stack.js';

/**
 * Feature flags the app sets as context defaults (cdk.json or `-c` may override them), so the
 * CLI and the tests synthesize the same template:
 * - `@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy`: S3 server access logs are delivered by a
 *   bucket-policy grant to `logging.s3.amazonaws.com` (ACLs stay disabled on the logs bucket).
 */
export const FEATURE_FLAGS = {
  '@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy': true,
} as const;

/** Options of {@link createCldApp}. */
export interface CldAppOptions {
  /** CDK App props (tests pass `outdir` and `context`, e.g. `aws:cdk:bundling-stacks: []` to skip bundling). */
  app?: AppProps;
  /** Config; default: resolved from the app's context (infra/lib/config.ts). */
  config?: StackConfig;
  /** Stack props other than the config (tests inject tables). */
  stack?: Omit<CldStackProps, 'config'>;
}

/** The app with its stack and cdk-nag applied. */
export interface CldApp {
  app: App;
  stack: CldStack;
  config: StackConfig;
}

/**
 * Builds the CDK app as `cdk synth` runs it: the config resolved once from context, one
 * `CldStack` named `Cld-<stage>`, environment-agnostic (no `env`: account and Region are
 * CloudFormation's `AWS::AccountId`/`AWS::Region` of the account deployed to), and cdk-nag's
 * `AwsSolutionsChecks` and `ServerlessChecks` as policy-validation plugins (findings in the cloud assembly's
 * `policy-validation-report.json`; any unacknowledged error fails synth).
 * @throws ConfigError for a bad context value, or a route without a function
 */
export function createCldApp(options: CldAppOptions = {}): CldApp {
  const app = new App({ ...options.app, context: { ...FEATURE_FLAGS, ...options.app?.context } });
  const config = options.config ?? resolveConfig((key) => app.node.tryGetContext(key));
  const stack = new CldStack(app, `Cld-${config.stage}`, {
    description: `cld (${config.stage}): event-sourced multi-agent system`,
    ...options.stack,
    config,
  });
  Validations.of(app).addPlugins(
    new AwsSolutionsChecks(app, { verbose: true }),
    new ServerlessChecks(app, { verbose: true }),
  );
  return { app, stack, config };
}
