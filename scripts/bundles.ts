import { spawn } from 'node:child_process';
import { cpSync, readdirSync, rmSync, statSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Metafile } from 'esbuild';
import {
  assetModuleBuildOptions,
  assetModulesOf,
  BUNDLE_FILE,
  copyPolicyBundle,
  EXTERNAL_MODULES,
  esbuildOptions,
  NODE_TARGET,
  PROJECT_ROOT,
  writeTokenizerRanks,
} from '../infra/lib/bundling.js';
import { FUNCTION_TABLE, type FunctionSpec } from '../infra/lib/functions.js';
import { buildSdkModule, SDK_MODULE_FILE } from '../infra/lib/sdk-module.js';
import { API_ROUTES } from '../shared/channels/routes.js';
import { s3ObjectCreatedEvent } from '../shared/events/envelope.js';
import { withMeta } from '../shared/resources/meta.js';
import { keyOf } from '../shared/urn.js';

/**
 * Building and measuring function bundles outside CDK, with the stack's esbuild options
 * (infra/lib/bundling.ts): used by `npm run bundle:report` and the bundle tests.
 *
 * Bundles are written under `node_modules/.cache/` of the project. The modules left external
 * (`@aws-sdk/*`, `@smithy/*`) resolve to the asset's own stub packages and `aws-sdk.cjs`
 * (infra/lib/sdk-module.ts), as in Lambda; anything else external resolves from the project's
 * `node_modules`, as it would from the runtime's.
 */

/** Default directory of report bundles. */
export const BUNDLE_CACHE_DIR = join(PROJECT_ROOT, 'node_modules', '.cache', 'cld-bundles');

/** One built bundle. */
export interface BuiltBundle {
  name: string;
  /** Directory holding `index.mjs`, its map and `policies/` (the asset as deployed). */
  dir: string;
  /** Absolute path of `index.mjs`. */
  file: string;
  /** Size of `index.mjs` in bytes (minified JS, without map and policy bundle). */
  bytes: number;
  /** Size of `index.mjs.map` in bytes. */
  mapBytes: number;
  /** Size of `policies/` in bytes. */
  policyBytes: number;
  /** Size of the tokenizer ranks file (`tokenizer/cl100k_base.json`) in bytes. */
  tokenizerBytes: number;
  /** Size of the asset's AWS SDK module (`aws-sdk.cjs`, infra/lib/sdk-module.ts) in bytes; 0 without one. */
  sdkBytes: number;
  /** The SDK packages the asset's stubs serve (infra/lib/sdk-module.ts), sorted; empty without one. */
  sdkPackages: string[];
  metafile: Metafile;
}

/**
 * Bundles one function as the stack does and copies its policy bundle and the tokenizer ranks
 * next to it (the asset's layout).
 * @param outRoot parent directory; the bundle goes to `<outRoot>/<name>/` (replaced)
 * @throws esbuild's build failure (with its messages) when the entry does not bundle
 */
export async function buildBundle(
  name: string,
  spec: Pick<FunctionSpec, 'entry' | 'mcpServers' | 'secrets'>,
  outRoot: string = BUNDLE_CACHE_DIR,
): Promise<BuiltBundle> {
  const dir = join(outRoot, name);
  rmSync(dir, { recursive: true, force: true });
  const result = await build({ ...esbuildOptions(name, spec.entry, dir), metafile: true });
  // The asset's modules of their own, as the stack's afterBundling hook writes them (not in `bytes`).
  for (const module of assetModulesOf(name, spec)) await build(assetModuleBuildOptions(module, dir));
  // Last, as the hook does: it reads the JavaScript files above (infra/lib/sdk-module.ts).
  const sdk = buildSdkModule(dir, { projectRoot: PROJECT_ROOT, target: NODE_TARGET });
  copyPolicyBundle(name, dir);
  const ranks = writeTokenizerRanks(dir);
  const file = join(dir, BUNDLE_FILE);
  return {
    name,
    dir,
    file,
    bytes: statSync(file).size,
    mapBytes: statSync(`${file}.map`).size,
    policyBytes: directoryBytes(join(dir, 'policies')),
    tokenizerBytes: statSync(ranks).size,
    sdkBytes: sdk.bytes,
    sdkPackages: Object.keys(sdk.packages).sort(),
    metafile: result.metafile,
  };
}

/**
 * Builds scripts/search-probe.ts (a {@link SearchProbe}'s entry: the tool function's handler and
 * `firstSearch`) with the tool function's esbuild options into
 * `<outRoot>/search-probe/index.mjs`, with the AWS SDK module of the tool
 * bundle at `toolDir` beside it (`aws-sdk.cjs` and its stub packages), so the probe loads the S3
 * client as the tool function does.
 * @returns the built file
 */
export async function buildSearchProbe(toolDir: string, outRoot: string = BUNDLE_CACHE_DIR): Promise<string> {
  const dir = join(outRoot, 'search-probe');
  rmSync(dir, { recursive: true, force: true });
  await build(esbuildOptions('tool', 'scripts/search-probe.ts', dir));
  cpSync(join(toolDir, SDK_MODULE_FILE), join(dir, SDK_MODULE_FILE));
  cpSync(join(toolDir, 'node_modules'), join(dir, 'node_modules'), { recursive: true });
  return join(dir, BUNDLE_FILE);
}

function directoryBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    total += entry.isDirectory() ? directoryBytes(path) : statSync(path).size;
  }
  return total;
}

/** Inputs that must never be in a function bundle: the CDK app and its libraries, the AWS SDK. */
const FORBIDDEN_INPUTS = [
  /^infra\//,
  /(^|\/)node_modules\/(aws-cdk-lib|aws-cdk|constructs|cdk-nag|esbuild|@aws-sdk|@smithy)\//,
];

/** Metafile inputs of the bundle that come from the CDK app, CDK, cdk-nag, esbuild or the AWS SDK. */
export function forbiddenInputs(metafile: Metafile): string[] {
  return Object.keys(metafile.inputs).filter((input) =>
    FORBIDDEN_INPUTS.some((pattern) => pattern.test(input)),
  );
}

/** Module specifiers the bundle imports at run time (external), deduplicated and sorted. */
export function externalImports(metafile: Metafile): string[] {
  const imports = new Set<string>();
  for (const output of Object.values(metafile.outputs)) {
    for (const imported of output.imports) if (imported.external) imports.add(imported.path);
  }
  return [...imports].sort();
}

/**
 * The external modules the bundle imports with a static `import` statement, which Node loads
 * before the bundle's code runs (at every cold start), as opposed to those it `require`s or
 * `import()`s where it uses them (shared/aws/sdk.ts): what `bundle:report`'s split times apart.
 */
export function staticExternalImports(metafile: Metafile): string[] {
  const imports = new Set<string>();
  for (const output of Object.values(metafile.outputs)) {
    for (const imported of output.imports)
      if (imported.external && imported.kind === 'import-statement') imports.add(imported.path);
  }
  return [...imports].sort();
}

/** True for a run-time import the Lambda runtime satisfies: a Node.js built-in or an external module. */
export function isProvidedAtRuntime(specifier: string): boolean {
  if (isBuiltin(specifier)) return true;
  return EXTERNAL_MODULES.some((pattern) => specifier.startsWith(pattern.replace('*', '')));
}

/** Bytes in the output by source package (`node_modules/<pkg>`, or the project directory), largest first. */
export function contributors(metafile: Metafile): { source: string; bytes: number }[] {
  const totals = new Map<string, number>();
  for (const output of Object.values(metafile.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      const source = sourceOf(input);
      totals.set(source, (totals.get(source) ?? 0) + bytesInOutput);
    }
  }
  return [...totals].map(([source, bytes]) => ({ source, bytes })).sort((a, b) => b.bytes - a.bytes);
}

function sourceOf(input: string): string {
  const at = input.lastIndexOf('node_modules/');
  if (at < 0) return input.split('/').slice(0, 2).join('/');
  const parts = input.slice(at + 'node_modules/'.length).split('/');
  const pkg = parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? input);
  // Name the file for a package's big single files (js-tiktoken's ranks) so the report says what it is.
  return pkg === 'js-tiktoken' ? `js-tiktoken/${parts.slice(1).join('/')}` : pkg;
}

/**
 * Code a child `node` runs: `await import()` of the run-time external modules given in argv[1]
 * (JSON array; may be empty), then of the bundle at argv[2], each timed with performance.now()
 * inside the child; then, when argv[4] holds a {@link SearchProbe}, runs its first search, else
 * when argv[3] names an event file, calls the bundle's `handler` with that event twice (a
 * Lambda-shaped context), timing each call. Wall and CPU time both: CPU time depends less on
 * how loaded the machine is. Prints `PROBE <json>` as its last line
 * (the handler may log to stdout before).
 */
const IMPORT_PROBE = `
import { readFileSync } from 'node:fs';
const externals = JSON.parse(process.argv[1]);
const cpu = () => { const { user, system } = process.cpuUsage(); return (user + system) / 1000; };
const started = performance.now();
const cpuStarted = cpu();
for (const specifier of externals) await import(specifier);
const loaded = performance.now();
const module = await import(process.argv[2]);
const done = performance.now();
if (typeof module.handler !== 'function') throw new Error('the bundle exports no handler function');
const timing = { externalsMs: loaded - started, bundleMs: done - loaded, importCpuMs: cpu() - cpuStarted };
if (process.argv[4]) {
  const { entry, dataDir, query, mode } = JSON.parse(process.argv[4]);
  const before = performance.now();
  const cpuBefore = cpu();
  const probe = await import(entry);
  const hits = await probe.firstSearch(dataDir, query, mode);
  Object.assign(timing, { firstSearchMs: performance.now() - before, firstSearchCpuMs: cpu() - cpuBefore, hits });
} else if (process.argv[3]) {
  const event = JSON.parse(readFileSync(process.argv[3], 'utf8'));
  const context = {
    functionName: 'probe', functionVersion: '$LATEST', memoryLimitInMB: '1024',
    invokedFunctionArn: 'arn:aws:lambda:eu-west-1:111122223333:function:probe',
    awsRequestId: 'probe', logGroupName: '/aws/lambda/probe', logStreamName: 'probe',
    callbackWaitsForEmptyEventLoop: true, getRemainingTimeInMillis: () => 60000,
    done() {}, fail() {}, succeed() {},
  };
  const call = async () => {
    const before = performance.now();
    let outcome;
    try {
      const result = await module.handler(event, context);
      outcome = result && typeof result === 'object' && 'statusCode' in result ? 'status ' + result.statusCode : 'ok';
    } catch (error) {
      outcome = String(error?.name ?? 'Error');
    }
    return { ms: performance.now() - before, outcome };
  };
  const cpuBefore = cpu();
  const first = await call();
  const firstCallCpuMs = cpu() - cpuBefore;
  const warm = await call();
  Object.assign(timing, { firstCallMs: first.ms, firstCallCpuMs, warmCallMs: warm.ms, outcome: first.outcome });
}
process.stdout.write('\\nPROBE ' + JSON.stringify(timing) + '\\n');
`;

/** Timings of one child process, in ms. */
export interface ImportTiming {
  /** Importing the external modules first (0 when none were asked for). */
  externalsMs: number;
  /** Importing the bundle after them: everything when `externals` is empty, else the bundle's own code. */
  bundleMs: number;
  /**
   * With an invocation: the first handler call after the import — the cold start's init that
   * runs at the first invocation (composition: config, policy, adapters, catalog seeding, chunk
   * index) plus the call itself.
   */
  firstCallMs?: number;
  /** With an invocation: the same call again, warm (the call alone). */
  warmCallMs?: number;
  /** With an invocation: how the first call ended (`ok`, `status <code>` or the error's name). */
  outcome?: string;
  /** CPU time (user + system) of the process while importing the externals and the bundle. */
  importCpuMs: number;
  /** With an invocation: CPU time of the first handler call. */
  firstCallCpuMs?: number;
  /** With a {@link SearchProbe}: the cold open of the chunk index and its first search, after the import. */
  firstSearchMs?: number;
  /** With a {@link SearchProbe}: CPU time of that first search. */
  firstSearchCpuMs?: number;
  /** With a {@link SearchProbe}: how many hits the first search returned. */
  hits?: number;
}

/**
 * A first search for {@link importOnce}, instead of a handler call: after the bundle's import,
 * the child imports `entry` (a bundle of scripts/search-probe.ts, built with the function
 * bundles' options) and runs its `firstSearch(dataDir, query)`: the tool step's cold open of the
 * chunk index (shared/runtime/adapters/tools.ts `loadTools`) and its first query.
 */
export interface SearchProbe {
  entry: string;
  dataDir: string;
  query: string;
  /** `sharded` (the shard pack, default) or `whole` (the whole generation, as before issue 25). */
  mode?: 'sharded' | 'whole';
}

/** A handler call for {@link importOnce}: the event and the environment of the child process. */
export interface ProbeInvocation {
  /** JSON file of the event. */
  eventFile: string;
  /** The whole environment of the child (nothing is inherited but `PATH`). */
  env: Readonly<Record<string, string>>;
}

/**
 * Imports `file` once in a new plain `node` process (no tsx, no NODE_OPTIONS; working directory
 * the bundle's, so externals resolve as the bundle resolves them). With `externals`, those
 * modules are imported first and timed apart, which splits the bundle's import time into the
 * AWS SDK's share and its own. With `invocation`, the handler is then called twice with its event.
 * @throws Error with the child's stderr when an import fails or the bundle exports no `handler`
 */
export function importOnce(
  file: string,
  externals: readonly string[] = [],
  invocation?: ProbeInvocation,
  search?: SearchProbe,
): Promise<ImportTiming> {
  const env: NodeJS.ProcessEnv = invocation
    ? { PATH: process.env.PATH ?? '', ...invocation.env }
    : { ...process.env };
  delete env.NODE_OPTIONS;
  const args = [
    '--input-type=module',
    '-e',
    IMPORT_PROBE,
    JSON.stringify(externals),
    pathToFileURL(file).href,
    invocation ? invocation.eventFile : '',
    ...(search ? [JSON.stringify({ ...search, entry: pathToFileURL(search.entry).href })] : []),
  ];
  return probeChild(args, env, dirname(file), `importing ${file}`, 'PROBE ') as Promise<ImportTiming>;
}

/**
 * A real-shaped event that makes function `name`'s handler compose its Deps and return without
 * further work, for timing the first invocation: an S3 "Object Created" EventBridge event of a
 * user Message that is not stored (`eventbridge`: plan fails with NotFoundError, the other steps
 * ignore it); an API Gateway HTTP API (payload 2.0) request to the function's first route without
 * credentials or signature (`http-api`: 401 once composed); an empty SQS batch (`sqs`).
 * @returns undefined for a trigger it has no event for
 */
export function probeEvent(name: string, trigger: string, now: Date = new Date()): unknown {
  if (trigger === 'eventbridge' && FUNCTION_TABLE[name]?.schedule) {
    // A scheduled rule's event (the sweeper): with nothing open, one sweep that re-drives nothing.
    return {
      version: '0',
      id: 'probe',
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      account: '111122223333',
      time: now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
      region: 'eu-west-1',
      resources: ['arn:aws:events:eu-west-1:111122223333:rule/probe'],
      detail: {},
    };
  }
  if (trigger === 'eventbridge') {
    const conversation = withMeta({ type: 'common.Conversation', name: 'bundle-probe' });
    const message = withMeta({ type: 'common.Message', name: 'message-1', parent: conversation.id });
    return s3ObjectCreatedEvent('cld-resources-probe', keyOf(message.id), 412, now);
  }
  if (trigger === 'http-api') {
    const route = API_ROUTES.find((r) => r.function === name);
    if (!route) return undefined;
    const path = route.path.replace(/\{[^}]+\}/g, 'probe');
    const routeKey = `${route.method} ${route.path}`;
    return {
      version: '2.0',
      routeKey,
      rawPath: path,
      rawQueryString: '',
      headers: { 'content-type': 'application/json', host: 'probe.execute-api.eu-west-1.amazonaws.com' },
      requestContext: {
        accountId: '111122223333',
        apiId: 'probe',
        domainName: 'probe.execute-api.eu-west-1.amazonaws.com',
        domainPrefix: 'probe',
        http: {
          method: route.method,
          path,
          protocol: 'HTTP/1.1',
          sourceIp: '192.0.2.1',
          userAgent: 'bundle-probe',
        },
        requestId: 'probe',
        routeKey,
        stage: '$default',
        time: '01/Jan/2026:00:00:00 +0000',
        timeEpoch: now.getTime(),
      },
      ...(route.method === 'POST' ? { body: '{}' } : {}),
      isBase64Encoded: false,
    };
  }
  if (trigger === 'sqs') return { Records: [] };
  return undefined;
}

/**
 * The environment of a probe invocation of a built bundle: the embedded default adapters under
 * `dataDir` (no `CLD_BUCKET`), the function's name, its policy bundle from the bundle directory
 * (the tokenizer ranks the bundle finds itself, as in Lambda), silent logs, and placeholder
 * channel secrets and queue map so that a channel or dead-letter function reaches its composition.
 */
export function probeEnvironment(
  bundle: Pick<BuiltBundle, 'name' | 'dir'>,
  dataDir: string,
): Record<string, string> {
  return {
    CLD_DATA_DIR: dataDir,
    CLD_FUNCTION: bundle.name,
    CLD_POLICY_DIR: join(bundle.dir, 'policies'),
    POWERTOOLS_SERVICE_NAME: 'cld',
    POWERTOOLS_LOG_LEVEL: 'SILENT',
    CLD_SLACK_SIGNING_SECRET: 'bundle-probe-signing-secret',
    CLD_SLACK_BOT_TOKEN: 'xoxb-bundle-probe',
    CLD_TEAMS_SECRET: Buffer.from('bundle probe token').toString('base64'),
    CLD_TEAMS_WEBHOOK_URL: 'https://example.webhook.office.com/webhookb2/probe',
    CLD_DEAD_LETTER_QUEUES: JSON.stringify({ plan: 'arn:aws:sqs:eu-west-1:111122223333:probe' }),
  };
}

/** Median of a non-empty list. @throws RangeError for an empty list */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError('median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** Code a child `node` runs: `require` of the packages in argv[2] (JSON) from argv[1], timed. */
const SDK_LOAD_PROBE = `
const req = require('node:module').createRequire(process.argv[1]);
const cpu = () => { const { user, system } = process.cpuUsage(); return (user + system) / 1000; };
const started = performance.now();
const cpuStarted = cpu();
for (const name of JSON.parse(process.argv[2])) req(name);
process.stdout.write('\\nSDKLOAD ' + JSON.stringify({ ms: performance.now() - started, cpuMs: cpu() - cpuStarted }) + '\\n');
`;

/**
 * Loads `packages` with `require` once in a new plain `node` process, as a function's first
 * invocation does: resolved `from` a bundle's `index.mjs` (the asset's `aws-sdk.cjs`) or from the
 * project's package.json (the SDK's CommonJS build in node_modules, which is what the Lambda
 * runtime's copy is). Wall and CPU time, in ms.
 * @throws Error with the child's stderr when a package does not load
 */
export function sdkLoadOnce(
  from: string,
  packages: readonly string[],
): Promise<{ ms: number; cpuMs: number }> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.NODE_OPTIONS;
  return probeChild(
    ['-e', SDK_LOAD_PROBE, from, JSON.stringify(packages)],
    env,
    dirname(from),
    `loading ${packages.join(', ')} from ${from}`,
    'SDKLOAD ',
  ) as Promise<{ ms: number; cpuMs: number }>;
}

/**
 * Runs `node <args>` in `cwd` with `env` and resolves with the JSON of its last stdout line that
 * starts with `marker`.
 * @throws Error naming `what`, with the child's stderr, on a non-zero exit or without that line
 */
function probeChild(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
  what: string,
  marker: string,
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) {
        reject(new Error(`${what} failed (exit ${code}): ${stderr.trim().slice(0, 2000)}`));
        return;
      }
      const line = stdout.split('\n').findLast((l) => l.startsWith(marker));
      try {
        resolve(JSON.parse((line ?? '').slice(marker.length)));
      } catch (error) {
        reject(new Error(`unexpected output of ${what}: ${stdout.slice(-200)}`, { cause: error }));
      }
    });
  });
}
