import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import { type CldApp, type CldAppOptions, createCldApp } from '../../infra/lib/app.js';
import { PROJECT_ROOT } from '../../infra/lib/bundling.js';
import { sharedBuild } from '../helpers/run-cache.js';

/**
 * Helpers of the infra tests: synthesize the app as `npm run synth` does (cdk.json context),
 * read the template and cdk-nag's validation report, resolve the intrinsics IAM statements use,
 * and decide IAM requests with a small evaluator of the statement features the stack uses.
 */

/** The `context` of cdk.json, which the CDK CLI passes to the app. */
export function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as {
    context?: Record<string, unknown>;
  };
  return cdkJson.context ?? {};
}

/**
 * What a deployment adds to cdk.json's context for the HTTP API (as `-c` strings): a Cognito
 * user pool as JWT issuer, two app clients as audiences, one CORS origin.
 */
export const API_CONTEXT = {
  'cld:jwtIssuer': 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Ab12Cd34E',
  'cld:jwtAudience': '3n4b5urk1ft4fl3mg5e62d9ado,7kq1example0client',
  'cld:allowedOrigins': 'https://app.example.com',
} as const;

/** A synthesized app. */
export interface Synthesized extends CldApp {
  outdir: string;
  template: Template;
  json: TemplateJson;
  /** cdk-nag and other policy-validation findings (`validation-report.json`). */
  report: ValidationReport;
}

/** The parts of a CloudFormation template the tests read. */
export interface TemplateJson {
  Resources: Record<string, { Type: string; Properties?: Record<string, unknown>; [key: string]: unknown }>;
  Outputs?: Record<string, { Value: unknown; Description?: string }>;
}

/** CDK's policy-validation report (cdk-nag v3 writes its findings there). */
export interface ValidationReport {
  pluginReports: {
    pluginName: string;
    conclusion: string;
    violations: {
      ruleName: string;
      severity: string;
      violatingConstructs?: { constructPath: string }[];
    }[];
  }[];
}

/**
 * Synthesizes the app with cdk.json's context plus `context`. Bundling is skipped
 * (`aws:cdk:bundling-stacks: []`, CDK's own switch, as `cdk synth --exclusively` uses) unless
 * `bundle` is set: the template is the same apart from asset hashes.
 */
export function synthesize(
  options: { context?: Record<string, unknown>; bundle?: boolean; outdir?: string } & Omit<
    CldAppOptions,
    'app'
  > = {},
): Synthesized {
  const outdir = options.outdir ?? mkdtempSync(join(tmpdir(), 'cld-infra-'));
  const context = {
    ...cdkJsonContext(),
    ...(options.bundle ? {} : { 'aws:cdk:bundling-stacks': [] }),
    ...options.context,
  };
  const built = createCldApp({
    app: { outdir, context },
    ...(options.config ? { config: options.config } : {}),
    ...(options.stack ? { stack: options.stack } : {}),
  });
  const assembly = built.app.synth();
  const json = assembly.getStackArtifact(built.stack.artifactId).template as TemplateJson;
  const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as ValidationReport;
  return { ...built, outdir, template: Template.fromJSON(json), json, report };
}

/** The cloud assembly of a bundling synth: its directory and the stack's template. */
export interface BundledSynth {
  /** The cloud assembly directory (`asset.<hash>/` per function bundle). */
  outdir: string;
  json: TemplateJson;
}

/**
 * The app synthesized with cdk.json's context and every function bundled (real local esbuild
 * bundling, policy bundles, the console), once per test run and shared by the files that test the
 * built bundles (test/infra/bundles.test.ts, test/infra/template.test.ts): the synth is the
 * costliest step of either file (about 1 min on a quiet 2-core machine, over 4 at load 17), and
 * both synthesized the same app from the same tree. The assembly lies under `node_modules/.cache/`
 * (test/global-setup.ts), so that a module left out of the bundles and of each asset's
 * `aws-sdk.cjs` resolves from the project's node_modules, as from the Lambda runtime's.
 * Read-only for its users.
 */
export async function bundledSynth(): Promise<BundledSynth> {
  const dir = await sharedBuild('cdk-bundled', (into) => {
    const synth = synthesize({ bundle: true, outdir: join(into, 'cdk.out') });
    writeFileSync(join(into, 'template.json'), JSON.stringify(synth.json));
  });
  const json = JSON.parse(readFileSync(join(dir, 'template.json'), 'utf8')) as TemplateJson;
  return { outdir: join(dir, 'cdk.out'), json };
}

/** Logical ids of the resources of a type. */
export function resourcesOfType(json: TemplateJson, type: string): string[] {
  return Object.entries(json.Resources)
    .filter(([, resource]) => resource.Type === type)
    .map(([id]) => id);
}

/** The one resource of a type whose logical id starts with `prefix`. */
export function logicalId(json: TemplateJson, type: string, prefix: string): string {
  const ids = resourcesOfType(json, type).filter((id) => id.startsWith(prefix));
  if (ids.length !== 1)
    throw new Error(`expected one ${type} starting with ${prefix}, found ${ids.join(', ')}`);
  return ids[0] as string;
}

/** Pseudo parameters as the resolver renders them. */
const PSEUDO: Readonly<Record<string, string>> = {
  'AWS::Partition': 'aws',
  'AWS::Region': 'eu-west-1',
  'AWS::AccountId': '111122223333',
  'AWS::URLSuffix': 'amazonaws.com',
};

/**
 * Resolves the intrinsics of an IAM value to a string: `Fn::Join`, `Ref` (pseudo parameters
 * to the values above, resources to `<LogicalId>`), `Fn::GetAtt` (to `<LogicalId.Attr>`).
 * @throws Error for any other intrinsic (so a test cannot silently compare unresolved values)
 */
export function resolveValue(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    if ('Ref' in record) {
      const ref = String(record.Ref);
      return PSEUDO[ref] ?? `<${ref}>`;
    }
    if ('Fn::GetAtt' in record) {
      const [id, attribute] = record['Fn::GetAtt'] as [string, string];
      return `<${id}.${attribute}>`;
    }
    if ('Fn::Join' in record) {
      const [separator, parts] = record['Fn::Join'] as [string, unknown[]];
      return parts.map(resolveValue).join(separator);
    }
  }
  throw new Error(`cannot resolve ${JSON.stringify(value)}`);
}

/** One IAM policy statement as synthesized. */
export interface Statement {
  Sid?: string;
  Effect: 'Allow' | 'Deny';
  Action: string | string[];
  Resource: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}

/** Every statement of the policies attached to a role (inline `AWS::IAM::Policy` resources). */
export function roleStatements(json: TemplateJson, roleId: string): Statement[] {
  const statements: Statement[] = [];
  for (const resource of Object.values(json.Resources)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    const roles = (resource.Properties?.Roles as unknown[]) ?? [];
    if (!roles.some((role) => (role as { Ref?: string }).Ref === roleId)) continue;
    const document = resource.Properties?.PolicyDocument as { Statement: Statement[] };
    statements.push(...document.Statement);
  }
  return statements;
}

function asList<T>(value: T | T[]): T[] {
  return Array.isArray(value) ? value : [value];
}

/** IAM's `*`/`?` glob match (case-sensitive, as for resources and condition values). */
export function iamGlob(pattern: string, value: string): boolean {
  const source = pattern
    .split('')
    .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\/]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`, 's').test(value);
}

/** Condition operators the stack uses, with IAM semantics for a request context of single values. */
function conditionHolds(
  operator: string,
  key: string,
  expected: unknown,
  context: Record<string, string>,
): boolean {
  const actual = context[key];
  const values = asList(expected as unknown).map(resolveValue);
  switch (operator) {
    case 'Null':
      // Null: "true" holds when the key is absent, "false" when it is present.
      return values.every((v) => (v === 'true' ? actual === undefined : actual !== undefined));
    case 'StringEquals':
      return actual !== undefined && values.includes(actual);
    case 'StringLike':
      return actual !== undefined && values.some((v) => iamGlob(v, actual));
    case 'StringLikeIfExists':
      return actual === undefined || values.some((v) => iamGlob(v, actual));
    case 'ForAllValues:StringLike':
      // Every value of the (here single-valued) key must match; an absent key is the empty set,
      // for which ForAllValues holds.
      return actual === undefined || values.some((v) => iamGlob(v, actual));
    default:
      throw new Error(`condition operator ${operator} is not modelled by the test evaluator`);
  }
}

/**
 * Whether `statements` allow `action` on `resource` with the request `context` (condition
 * keys → values). Identity-policy evaluation: an explicit Deny wins, otherwise any matching
 * Allow allows, otherwise implicit deny.
 */
export function isAllowed(
  statements: readonly Statement[],
  action: string,
  resource: string,
  context: Record<string, string> = {},
): boolean {
  let allowed = false;
  for (const statement of statements) {
    const actionMatches = asList(statement.Action).some((a) =>
      iamGlob(a.toLowerCase(), action.toLowerCase()),
    );
    if (!actionMatches) continue;
    const resourceMatches = asList(statement.Resource).some((r) => iamGlob(resolveValue(r), resource));
    if (!resourceMatches) continue;
    const conditions = Object.entries(statement.Condition ?? {}).every(([operator, keys]) =>
      Object.entries(keys).every(([key, expected]) => conditionHolds(operator, key, expected, context)),
    );
    if (!conditions) continue;
    if (statement.Effect === 'Deny') return false;
    allowed = true;
  }
  return allowed;
}

/** Replaces every `needle` string inside `value` (deeply) with `replacement`. */
export function replaceDeep(value: unknown, needle: string, replacement: unknown): unknown {
  if (value === needle) return replacement;
  if (Array.isArray(value)) return value.map((item) => replaceDeep(item, needle, replacement));
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, replaceDeep(item, needle, replacement)]),
    );
  }
  return value;
}
