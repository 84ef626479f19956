import { execFileSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleCommands, PROJECT_ROOT, sdkModuleCommands } from '../../infra/lib/bundling.js';
import { FUNCTION_TABLE } from '../../infra/lib/functions.js';
import { catalogObjects, DEFAULT_CATALOG_FILES } from '../../shared/catalog/catalog.js';
import type { TemplateJson } from './helpers.js';

/**
 * The package tried as a platform engineer would (issue 26): `npm run build:construct` (what
 * `prepack` runs), `npm pack`, then a separate CDK app in a temporary folder, plain Node.js ESM
 * (no tsx), with the tarball unpacked as npm installs it (`node_modules/cld`) and the
 * dependencies linked from this clone's `node_modules` (no network). Its stack has resources of
 * its own (an SNS topic for its alarms), a permissions boundary, and two `Cld` constructs,
 * `Agents` and `Agents2`; `node app.mjs` synthesizes it (bundling skipped with CDK's
 * `aws:cdk:bundling-stacks` switch, as the other infra tests do: NodejsFunction still requires
 * every entry file and the lock file under the package root, and the construct still finds the
 * package's policies, which the assertions below check).
 */

const ISSUER = 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Ab12Cd34E';

/** The catalog given to Agents2 as data: one assistant and the tool it uses. */
const CATALOG = {
  assistants: [
    {
      name: 'answerer',
      purpose: 'Answer a question from the documentation.',
      instructions: 'Search, then answer in one paragraph citing the chunks.',
      applicability: 'Any question about the documentation.',
      evaluation: 'The answer cites at least one chunk.',
      tools: ['search'],
    },
  ],
  tools: DEFAULT_CATALOG_FILES.tools.filter((tool) => (tool as { name: string }).name === 'search'),
};

/** The consumer's CDK app: its own topic and boundary, two Cld constructs (Agents2 with its own catalog). */
const APP = `
import { App, Stack } from 'aws-cdk-lib';
import { ManagedPolicy } from 'aws-cdk-lib/aws-iam';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { Cld } from 'cld/construct';

const app = new App({
  outdir: 'cdk.out',
  context: { 'aws:cdk:bundling-stacks': [], 'aws:cdk:enable-path-metadata': true },
});
const stack = new Stack(app, 'Platform');
const alarms = new Topic(stack, 'OpsAlarms', { displayName: 'platform alarms' });
const boundary = ManagedPolicy.fromManagedPolicyName(stack, 'Boundary', 'platform-boundary');
new Cld(stack, 'Agents', {
  stageName: 'qa',
  modelId: 'global.anthropic.claude-sonnet-4-5-20250929-v1:0',
  jwtIssuer: '${ISSUER}',
  jwtAudience: ['3n4b5urk1ft4fl3mg5e62d9ado'],
  alarmTopic: alarms,
  permissionsBoundary: boundary,
  tags: { team: 'platform' },
});
new Cld(stack, 'Agents2', {
  stageName: 'staging',
  catalog: ${JSON.stringify(CATALOG)},
  modelId: 'offline',
  jwtIssuer: '${ISSUER}',
  jwtAudience: ['7kq1example0client'],
  permissionsBoundary: boundary,
});
app.synth();
`;

/**
 * A TypeScript consumer type-checked against the shipped declarations: the `@ts-expect-error`
 * line fails the check if the types were missing (an `any` accepts anything).
 */
const TYPED = `
import { App, Stack } from 'aws-cdk-lib';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { Cld, type CldProps } from 'cld/construct';
import { createCldClient } from 'cld/client';

const api = createCldClient({ baseUrl: 'https://api.example.com', token: 'jwt' });
// @ts-expect-error not a route of the OpenAPI document
void api.GET('/no-such-route');
void api.GET('/conversations/{id}', { params: { path: { id: 'abc' } } });

const stack = new Stack(new App(), 'Platform');
const props: CldProps = { stageName: 'qa', modelId: 'offline', alarmTopic: new Topic(stack, 'Alarms') };
const cld = new Cld(stack, 'Agents', props);
const attributes: string[] = [cld.apiUrl, cld.bucket.bucketName, cld.table.tableName, cld.alarmTopic.topicArn, cld.dashboard.dashboardName];
const functions: string[] = [...cld.functions.keys()];
// @ts-expect-error stageName is required
new Cld(stack, 'NoStage', { modelId: 'offline' });
export { attributes, functions };
`;

/** Physical-name properties by resource type: names AWS requires unique per account and Region. */
const PHYSICAL_NAMES: Readonly<Record<string, string>> = {
  'AWS::CloudWatch::Dashboard': 'DashboardName',
  'AWS::ApiGatewayV2::Api': 'Name',
  'AWS::SNS::Topic': 'TopicName',
  'AWS::SQS::Queue': 'QueueName',
  'AWS::Lambda::Function': 'FunctionName',
  'AWS::IAM::Role': 'RoleName',
  'AWS::S3::Bucket': 'BucketName',
  'AWS::DynamoDB::GlobalTable': 'TableName',
  'AWS::Logs::LogGroup': 'LogGroupName',
  'AWS::SecretsManager::Secret': 'Name',
  'AWS::Events::Rule': 'Name',
  'AWS::CloudWatch::Alarm': 'AlarmName',
};

interface Resource {
  Type: string;
  Properties?: Record<string, unknown>;
  Metadata?: Record<string, unknown>;
}

let template: TemplateJson & { Resources: Record<string, Resource> };
let messages: { level: string; data: unknown; path: string }[];
/** How many construct paths carry metadata (so an empty `messages` is not a file read wrong). */
let paths: number;
/** The consumer app's folder, and the temporary folder holding it and the tarball. */
let consumer: string;
let work: string;

/** The construct path (`aws:cdk:path` metadata) of a resource. */
function pathOf(resource: Resource): string {
  return String(resource.Metadata?.['aws:cdk:path'] ?? '');
}

/** Resources of a type under a construct path prefix (`Platform/Agents/`). */
function under(type: string, prefix: string): [string, Resource][] {
  return Object.entries(template.Resources).filter(
    ([, resource]) => resource.Type === type && pathOf(resource).startsWith(prefix),
  );
}

/** Runs a command in `cwd`, its output on failure in the error. */
function run(command: string, args: string[], cwd: string): string {
  return execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * `node_modules` of the consumer: the unpacked tarball as `cld`, and a link to each package of
 * this clone's `node_modules` (one copy of aws-cdk-lib for the app and the construct).
 */
function install(tarball: string, app: string): void {
  const modules = join(app, 'node_modules');
  mkdirSync(modules);
  const source = realpathSync(join(PROJECT_ROOT, 'node_modules'));
  for (const entry of readdirSync(source)) {
    if (entry.startsWith('.') || entry === 'cld') continue;
    symlinkSync(join(source, entry), join(modules, entry));
  }
  run('tar', ['-xzf', tarball, '-C', app], app);
  renameSync(join(app, 'package'), join(modules, 'cld'));
}

beforeAll(() => {
  run(process.execPath, ['--import', 'tsx', 'scripts/build-construct.ts'], PROJECT_ROOT);
  work = mkdtempSync(join(tmpdir(), 'cld-consumer-'));
  const packed = JSON.parse(
    run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], PROJECT_ROOT),
  ) as { filename: string }[];
  const app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'platform', private: true, type: 'module' }),
  );
  install(join(work, packed[0]?.filename as string), app);
  writeFileSync(join(app, 'app.mjs'), APP);
  consumer = app;
  run(process.execPath, ['app.mjs'], app);
  template = JSON.parse(readFileSync(join(app, 'cdk.out', 'Platform.template.json'), 'utf8'));
  // The stack's construct metadata (annotations by construct path), beside its template.
  const metadata = JSON.parse(readFileSync(join(app, 'cdk.out', 'Platform.metadata.json'), 'utf8')) as Record<
    string,
    { type: string; data: unknown }[]
  >;
  paths = Object.keys(metadata).length;
  messages = Object.entries(metadata).flatMap(([path, entries]) =>
    entries
      .filter((entry) => entry.type === 'aws:cdk:error' || entry.type === 'aws:cdk:warning')
      .map((entry) => ({ level: entry.type, data: entry.data, path })),
  );
  // Build (declarations), pack and a two-construct synth on a loaded 2-core machine.
}, 900_000);

// The links in node_modules are removed, not what they point to (rmSync does not follow links).
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('a CDK app of its own with two Cld from npm pack', () => {
  it('synthesizes both, each with every function of the table, with no synth error or policy warning', () => {
    const functions = Object.keys(FUNCTION_TABLE).length;
    for (const id of ['Agents', 'Agents2']) {
      const own = under('AWS::Lambda::Function', `Platform/${id}/`).filter(([, r]) =>
        pathOf(r).endsWith('/Function/Resource'),
      );
      expect(own).toHaveLength(functions);
    }
    expect(paths).toBeGreaterThan(100);
    // No error, and no "bundled without policies/dist/<name>.wasm" warning: the construct found
    // the package's own policies from inside node_modules/cld.
    expect(messages.filter((m) => m.level === 'aws:cdk:error')).toEqual([]);
    expect(messages.filter((m) => String(m.data).includes('cld:policyBundleWithoutWasm'))).toEqual([]);
  });

  it('sets the permissions boundary on every IAM role of the template', () => {
    const roles = Object.entries(template.Resources).filter(([, r]) => r.Type === 'AWS::IAM::Role');
    // Both constructs' functions and the stack-wide providers (bucket notifications, custom resources).
    expect(roles.length).toBeGreaterThan(2 * Object.keys(FUNCTION_TABLE).length);
    for (const [id, role] of roles) {
      expect({ id, boundary: JSON.stringify(role.Properties?.PermissionsBoundary) }).toEqual({
        id,
        boundary: expect.stringContaining(':policy/platform-boundary'),
      });
    }
  });

  it('has no physical name twice (the dashboards and APIs are named by construct path)', () => {
    const names = Object.values(template.Resources).flatMap((r) => {
      const property = PHYSICAL_NAMES[r.Type];
      const value = property ? r.Properties?.[property] : undefined;
      return value === undefined ? [] : [`${r.Type} ${JSON.stringify(value)}`];
    });
    expect(names.length).toBeGreaterThanOrEqual(4);
    expect(names.filter((name, i) => names.indexOf(name) !== i)).toEqual([]);
    expect(names).toEqual(
      expect.arrayContaining([
        'AWS::CloudWatch::Dashboard "Platform-Agents-conversations"',
        'AWS::CloudWatch::Dashboard "Platform-Agents2-conversations"',
        'AWS::ApiGatewayV2::Api "Platform-Agents-api"',
        'AWS::ApiGatewayV2::Api "Platform-Agents2-api"',
      ]),
    );
  });

  it('uses the stage given to each construct and no other', () => {
    const apis = Object.values(template.Resources).filter((r) => r.Type === 'AWS::ApiGatewayV2::Api');
    expect(apis.map((r) => r.Properties?.Description).sort()).toEqual([
      'cld (qa): conversations API and Slack/Teams webhooks',
      'cld (staging): conversations API and Slack/Teams webhooks',
    ]);
    const text = JSON.stringify(template);
    expect(text).not.toMatch(/\bdev\b|\bprod\b|Cld-/);
  });

  it("notifies the app's own topic from every alarm of Agents, and Agents2's own topic from its alarms", () => {
    const ops = Object.entries(template.Resources).find(
      ([, r]) => pathOf(r) === 'Platform/OpsAlarms/Resource',
    );
    expect(ops).toBeDefined();
    const opsRef = JSON.stringify([{ Ref: ops?.[0] }]);
    const agents = under('AWS::CloudWatch::Alarm', 'Platform/Agents/');
    expect(agents.length).toBeGreaterThan(10);
    for (const [, alarm] of agents) {
      expect(JSON.stringify(alarm.Properties?.AlarmActions)).toBe(opsRef);
      expect(JSON.stringify(alarm.Properties?.OKActions)).toBe(opsRef);
    }
    // Agents created no topic; Agents2 (no alarmTopic given) created one, which its alarms use.
    expect(under('AWS::SNS::Topic', 'Platform/Agents/')).toEqual([]);
    const [own] = under('AWS::SNS::Topic', 'Platform/Agents2/');
    expect(own).toBeDefined();
    for (const [, alarm] of under('AWS::CloudWatch::Alarm', 'Platform/Agents2/'))
      expect(JSON.stringify(alarm.Properties?.AlarmActions)).toBe(JSON.stringify([{ Ref: own?.[0] }]));
  });

  it('tags the resources of the construct given tags, and only those', () => {
    const tagged = (prefix: string) =>
      under('AWS::Lambda::Function', prefix).filter(([, r]) =>
        JSON.stringify(r.Properties?.Tags ?? []).includes('"Key":"team","Value":"platform"'),
      ).length;
    expect(tagged('Platform/Agents/')).toBe(Object.keys(FUNCTION_TABLE).length);
    expect(tagged('Platform/Agents2/')).toBe(0);
  });

  it('imports the typed client (cld/client) on plain Node.js, and requires the construct from CommonJS', () => {
    const client = run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "import { createCldClient } from 'cld/client'; const c = createCldClient({ baseUrl: 'http://127.0.0.1:9' }); console.log(typeof c.GET, typeof c.POST);",
      ],
      consumer,
    );
    expect(client.trim()).toBe('function function');
    // A CommonJS app (cdk init's ts-node output) requires the ES module (require(esm), Node ≥ 20.19).
    const required = run(
      process.execPath,
      ['--input-type=commonjs', '-e', "const { Cld } = require('cld/construct'); console.log(typeof Cld);"],
      consumer,
    );
    expect(required.trim()).toBe('function');
  }, 180_000);

  it("runs the asset hooks' scripts from the package as installed: the AWS SDK module and the console", () => {
    // What the afterBundling hook runs at a real synth (bundling is skipped above): the commands
    // of infra/lib/bundling.ts with the installed package as the input directory, so every file
    // they need must be in the package (package.json `files`).
    const asset = join(work, 'asset');
    mkdirSync(asset);
    writeFileSync(
      join(asset, 'index.mjs'),
      'const c=()=>require("@aws-sdk/client-s3");export const handler=async()=>new(c().S3Client)({region:"eu-west-1"});\n',
    );
    const installed = join(consumer, 'node_modules', 'cld');
    for (const command of [...sdkModuleCommands(installed, asset), ...consoleCommands(installed, asset)])
      run('bash', ['-c', command], consumer);

    const stub = join(asset, 'node_modules', '@aws-sdk', 'client-s3', 'index.cjs');
    const served = run(
      process.execPath,
      ['-e', `console.log(typeof require(${JSON.stringify(stub)}).S3Client)`],
      asset,
    );
    expect(served.trim()).toBe('function');
    expect(readdirSync(join(asset, 'console'))).toContain('index.html');
  }, 180_000);

  it('type-checks a TypeScript consumer against the declarations the package ships', () => {
    writeFileSync(join(consumer, 'typed.ts'), TYPED);
    writeFileSync(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2022',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: [],
        },
        files: ['typed.ts'],
      }),
    );
    const tsc = join(consumer, 'node_modules', 'typescript', 'bin', 'tsc');
    // Throws with tsc's diagnostics when the check fails.
    expect(run(process.execPath, [tsc, '-p', 'tsconfig.json'], consumer)).toBe('');
  }, 180_000);

  it('stores the default catalog for Agents and the catalog given as data for Agents2', () => {
    // Each custom resource's Create call (JSON text with the object key it puts).
    const keysOf = (prefix: string) =>
      under('Custom::CldCatalogObject', prefix).map(([, r]) => JSON.stringify(r.Properties?.Create));
    const agents = keysOf('Platform/Agents/');
    const agents2 = keysOf('Platform/Agents2/');
    expect(agents).toHaveLength(catalogObjects().length);
    expect(agents2).toHaveLength(2);
    for (const object of catalogObjects(CATALOG)) expect(agents2.join('\n')).toContain(object.key);
  });
});
